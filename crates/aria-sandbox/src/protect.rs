//! What the running kernel can enforce, the Landlock ruleset for one child, and the report of
//! which protections were active.

use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use serde::Serialize;

use crate::spec::SandboxError;

/// What the running kernel supports, probed once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelSupport {
    /// The Landlock ABI version, or `None` when Landlock is missing or disabled.
    pub landlock_abi: Option<u32>,
    /// Whether ARIA runs as root (root is exempt from the process-count limit, and needs no
    /// user namespace to make the others).
    pub root: bool,
    /// Whether a child can get its own mount, PID, network, IPC and UTS namespaces (through a
    /// user namespace when ARIA is not root). Without them no program is run.
    pub namespaces: bool,
}

impl KernelSupport {
    /// Probes once (`landlock_create_ruleset` with the version flag; a forked child that
    /// makes the namespaces) and caches the answer.
    pub fn detect() -> KernelSupport {
        static CACHE: OnceLock<KernelSupport> = OnceLock::new();
        *CACHE.get_or_init(|| {
            let root = is_root();
            KernelSupport {
                landlock_abi: landlock_abi(),
                root,
                namespaces: crate::probe::namespace_problem(root).is_none(),
            }
        })
    }

    /// Why namespaces are unavailable, with the fix; `None` when they work.
    pub fn namespace_problem(&self) -> Option<String> {
        crate::probe::namespace_problem(self.root)
    }

    /// Landlock filesystem rules are available.
    pub fn filesystem(&self) -> bool {
        self.landlock_abi.is_some_and(|v| v >= 1)
    }

    /// Landlock TCP bind/connect rules are available (ABI 4, Linux 6.7).
    pub fn tcp(&self) -> bool {
        self.landlock_abi.is_some_and(|v| v >= 4)
    }

    /// Landlock signal and abstract-socket scoping is available (ABI 6, Linux 6.12).
    pub fn scoping(&self) -> bool {
        self.landlock_abi.is_some_and(|v| v >= 6)
    }

    /// The filesystem rights this kernel's Landlock handles (a rule may grant only these).
    pub(crate) fn handled_fs(&self) -> u64 {
        match self.landlock_abi {
            None | Some(0) => 0,
            Some(1) => (1 << 13) - 1,
            Some(2) => (1 << 14) - 1,
            Some(3 | 4) => (1 << 15) - 1,
            Some(_) => (1 << 16) - 1,
        }
    }
}

/// Landlock filesystem rights (the kernel's `LANDLOCK_ACCESS_FS_*`).
pub(crate) mod fs_access {
    pub(crate) const EXECUTE: u64 = 1 << 0;
    pub(crate) const WRITE_FILE: u64 = 1 << 1;
    pub(crate) const READ_FILE: u64 = 1 << 2;
    pub(crate) const READ_DIR: u64 = 1 << 3;
    pub(crate) const TRUNCATE: u64 = 1 << 14;
    pub(crate) const IOCTL_DEV: u64 = 1 << 15;
    /// The rights that apply to a file rather than a directory.
    pub(crate) const FILE: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
    pub(crate) const ALL: u64 = (1 << 16) - 1;
}

/// Makes ARIA's own process non-dumpable, once: a same-user process (such as a sandboxed
/// child) then cannot read ARIA's environment, memory or file descriptors through `/proc`.
/// Returns whether ARIA is non-dumpable.
pub(crate) fn shield_parent() -> bool {
    static DONE: OnceLock<bool> = OnceLock::new();
    *DONE.get_or_init(|| {
        // SAFETY: prctl(PR_SET_DUMPABLE, 0) takes integers only and changes a process flag.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 }
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(target_os = "linux")]
fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the syscall only
    // returns the ABI version (or -1 with errno); it reads and writes no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|v| *v > 0)
}

#[cfg(not(target_os = "linux"))]
fn landlock_abi() -> Option<u32> {
    None
}

/// One protection and whether it was active for a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Protection {
    /// Stable name: `argv`, `environment`, `process-group`, `parent-memory`, `capabilities`
    /// (only when ARIA runs as root), `rlimits`, `filesystem`, `network`, `scoping`.
    pub name: &'static str,
    pub active: bool,
    /// What exactly was enforced, or why not.
    pub detail: String,
}

/// Which protections were active for one run (or would be, from [`Protections::planned`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Protections {
    pub landlock_abi: Option<u32>,
    pub items: Vec<Protection>,
}

/// The facts about one run that decide its protections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFacts {
    pub network: bool,
    pub writable: bool,
    /// Only the named program (and its helpers) may execute.
    pub exec_only: bool,
    pub limits: Vec<String>,
}

impl Protections {
    /// What a run with these settings gets on this kernel (also what `aria doctor` shows).
    pub fn planned(kernel: KernelSupport, facts: &RunFacts) -> Self {
        let mut items = vec![
            Protection {
                name: "argv",
                active: true,
                detail: "the program is executed directly with its argv, never through a shell"
                    .into(),
            },
            Protection {
                name: "environment",
                active: true,
                detail: "empty environment plus an allowlist; fixed PATH, private TMPDIR and HOME"
                    .into(),
            },
        ];
        let ns_detail = match kernel.namespace_problem() {
            None if kernel.root => "own mount, PID, network, IPC and UTS namespaces".to_owned(),
            None => "own user, mount, PID, network, IPC and UTS namespaces".to_owned(),
            Some(problem) => format!("NOT AVAILABLE, so no program is run: {problem}"),
        };
        items.push(Protection { name: "namespaces", active: kernel.namespaces, detail: ns_detail });
        let access = if facts.writable { "read-write" } else { "read-only" };
        items.push(Protection {
            name: "mounts",
            active: kernel.namespaces,
            detail: format!(
                "sees only the roots ({access}; .git and ARIA's configuration files read-only, \
                 sensitive files masked), the system's runtime directories read-only, a \
                 private /tmp, a minimal /dev and its own /proc"
            ),
        });
        items.push(Protection {
            name: "orphans",
            active: kernel.namespaces,
            detail: "the program runs under its own init in a new PID namespace: when it exits \
                     or is killed, every process it started dies with it (setsid and double \
                     forks included), and the whole sandbox dies with ARIA (parent-death signal)"
                .into(),
        });
        items.push(Protection {
            name: "parent-memory",
            active: shield_parent(),
            detail:
                "ARIA is non-dumpable: children cannot read its environment or memory via /proc"
                    .into(),
        });
        if kernel.root {
            items.push(Protection {
                name: "capabilities",
                active: true,
                detail: "ARIA runs as root: the child's capability bounding set is emptied, so it \
                         runs as uid 0 without capabilities"
                    .into(),
            });
        }
        let mut rl = facts.limits.join(", ");
        if rl.is_empty() {
            rl = "none configured".into();
        }
        if kernel.root && facts.limits.iter().any(|l| l.starts_with("processes")) {
            rl.push_str(" (the process limit is not enforced: the kernel exempts root)");
        }
        items.push(Protection { name: "rlimits", active: !facts.limits.is_empty(), detail: rl });
        items.push(match kernel.landlock_abi {
            Some(abi) => Protection {
                name: "filesystem",
                active: true,
                detail: format!(
                    "Landlock ABI {abi}: reads only what the sandbox shows, writes only {}",
                    if facts.writable {
                        "under the roots, /tmp and /dev"
                    } else {
                        "to /tmp and /dev"
                    }
                ),
            },
            None => Protection {
                name: "filesystem",
                active: false,
                detail: "NOT ENFORCED: the kernel has no Landlock (or it is disabled at boot); \
                         the read-only mounts still apply"
                    .into(),
            },
        });
        // A write tier may run any program it sees: the item is listed only where exec is
        // limited, so a write tier's report does not show a protection it never asked for.
        if facts.exec_only {
            items.push(exec_protection(kernel));
        }
        items.push(network_protection(kernel, facts.network));
        items.push(Protection {
            name: "scoping",
            active: kernel.scoping(),
            detail: if kernel.scoping() {
                "Landlock scoping: no signals to processes outside the sandbox, no abstract unix sockets outside it".into()
            } else {
                "NOT ENFORCED: signal and abstract-socket scoping needs Landlock ABI 6 (Linux 6.12)".into()
            },
        });
        Protections { landlock_abi: kernel.landlock_abi, items }
    }

    /// The protection with this name, if listed.
    pub fn get(&self, name: &str) -> Option<&Protection> {
        self.items.iter().find(|p| p.name == name)
    }

    /// Whether the named protection was active.
    pub fn is_active(&self, name: &str) -> bool {
        self.get(name).is_some_and(|p| p.active)
    }
}

impl fmt::Display for Protections {
    /// One line per protection: `[on ] name: detail` / `[off] name: detail`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.items {
            let mark = if p.active { "on " } else { "off" };
            writeln!(f, "[{mark}] {}: {}", p.name, p.detail)?;
        }
        Ok(())
    }
}

fn exec_protection(kernel: KernelSupport) -> Protection {
    let landlock = if kernel.filesystem() { "Landlock EXECUTE rights, " } else { "" };
    let seccomp =
        if crate::seccomp::SUPPORTED { ", and a seccomp filter allowing one execve" } else { "" };
    Protection {
        name: "exec",
        active: kernel.namespaces,
        detail: format!(
            "only the named program, its loader and its helpers may execute: {landlock}noexec \
             roots, /tmp and program directories{seccomp}"
        ),
    }
}

fn network_protection(kernel: KernelSupport, network: bool) -> Protection {
    let seccomp = crate::seccomp::SUPPORTED;
    if !network && kernel.namespaces {
        return Protection {
            name: "network",
            active: true,
            detail: format!(
                "own empty network namespace (no interfaces){}{}",
                if seccomp {
                    "; seccomp refuses IPv4/IPv6/packet sockets and io_uring"
                } else {
                    ""
                },
                if kernel.tcp() { "; Landlock blocks TCP bind and connect" } else { "" }
            ),
        };
    }
    if network && kernel.namespaces {
        return Protection {
            name: "network",
            active: true,
            detail: "granted through the egress proxy: public addresses only (own network \
                     namespace with only loopback; ARIA resolves, checks and pins every \
                     destination, and refuses loopback, private, link-local and this machine's \
                     addresses)"
                .into(),
        };
    }
    let (active, detail) = match (network, kernel.tcp(), seccomp) {
        (true, _, _) => (false, "network granted to this program".to_owned()),
        (false, true, true) => (
            true,
            "Landlock blocks TCP bind and connect; seccomp refuses IPv4/IPv6/packet sockets \
             (UDP, raw) and io_uring; unix sockets remain"
                .to_owned(),
        ),
        (false, false, true) => (
            true,
            "seccomp refuses IPv4/IPv6/packet sockets and io_uring (the kernel's Landlock has \
             no TCP rules, so this filter is the only layer)"
                .to_owned(),
        ),
        (false, true, false) => (
            false,
            "PARTIAL: Landlock blocks TCP bind and connect, but UDP and raw sockets are not \
             restricted (no seccomp filter for this architecture)"
                .to_owned(),
        ),
        (false, false, false) => (
            false,
            "NOT ENFORCED: no Landlock network rules (needs ABI 4, Linux 6.7) and no seccomp \
             filter for this architecture"
                .to_owned(),
        ),
    };
    Protection { name: "network", active, detail }
}

/// Creates the Landlock ruleset for one child in the parent: every filesystem right this
/// kernel knows is handled (the child adds the rules that grant some back), TCP bind and
/// connect are handled with no rule (so refused) unless network is granted, and signals and
/// abstract unix sockets are scoped to the sandbox. `None` without Landlock.
#[cfg(target_os = "linux")]
pub(crate) fn landlock_ruleset(
    kernel: KernelSupport,
    network: bool,
) -> Result<Option<OwnedFd>, SandboxError> {
    use std::os::fd::FromRawFd;
    let Some(abi) = kernel.landlock_abi.filter(|v| *v >= 1) else { return Ok(None) };
    #[repr(C)]
    struct RulesetAttr {
        handled_access_fs: u64,
        handled_access_net: u64,
        scoped: u64,
    }
    let attr = RulesetAttr {
        handled_access_fs: kernel.handled_fs(),
        handled_access_net: if !network && kernel.tcp() { 0b11 } else { 0 },
        scoped: if kernel.scoping() { 0b11 } else { 0 },
    };
    let size: usize = match abi {
        1..=3 => 8,
        4 | 5 => 16,
        _ => 24,
    };
    // SAFETY: `attr` is a valid landlock_ruleset_attr whose first `size` bytes the kernel
    // reads; the syscall returns a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, &attr as *const RulesetAttr, size, 0u32)
    };
    if fd < 0 {
        return Err(SandboxError::Landlock { message: io_error().to_string() });
    }
    // SAFETY: the kernel just returned this descriptor, owned by nobody else.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
}

fn io_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn landlock_ruleset(
    _kernel: KernelSupport,
    _network: bool,
) -> Result<Option<OwnedFd>, SandboxError> {
    Ok(None)
}
