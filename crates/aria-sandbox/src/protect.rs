//! What the running kernel can enforce, the Landlock ruleset for one child, and the report of
//! which protections were active.

use std::fmt;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::Serialize;

use crate::spec::SandboxError;

/// What the running kernel supports, probed once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelSupport {
    /// The Landlock ABI version, or `None` when Landlock is missing or disabled.
    pub landlock_abi: Option<u32>,
    /// Whether ARIA runs as root (root is exempt from the process-count limit).
    pub root: bool,
}

impl KernelSupport {
    /// Probes once (`landlock_create_ruleset` with the version flag) and caches the answer.
    pub fn detect() -> KernelSupport {
        static CACHE: OnceLock<KernelSupport> = OnceLock::new();
        *CACHE.get_or_init(|| KernelSupport { landlock_abi: landlock_abi(), root: is_root() })
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

impl Protections {
    /// What a run with these settings gets on this kernel (also what `aria doctor` shows).
    pub fn planned(kernel: KernelSupport, network: bool, limits_applied: &[String]) -> Self {
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
                detail: "empty environment plus an allowlist; fixed PATH, private TMPDIR".into(),
            },
            Protection {
                name: "process-group",
                active: true,
                detail: "own process group, killed with SIGKILL on timeout and at exit".into(),
            },
        ];
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
        let mut rl = limits_applied.join(", ");
        if rl.is_empty() {
            rl = "none configured".into();
        }
        if kernel.root && limits_applied.iter().any(|l| l.starts_with("processes")) {
            rl.push_str(" (the process limit is not enforced: the kernel exempts root)");
        }
        items.push(Protection { name: "rlimits", active: !limits_applied.is_empty(), detail: rl });
        items.push(match kernel.landlock_abi {
            Some(abi) => Protection {
                name: "filesystem",
                active: true,
                detail: format!(
                    "Landlock ABI {abi}: reads allowed everywhere, writes only under the roots and the private temp dir"
                ),
            },
            None => Protection {
                name: "filesystem",
                active: false,
                detail: "NOT ENFORCED: the kernel has no Landlock (or it is disabled at boot); \
                         the child can write wherever the user can"
                    .into(),
            },
        });
        items.push(network_protection(kernel, network));
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

fn network_protection(kernel: KernelSupport, network: bool) -> Protection {
    let seccomp = crate::seccomp::SUPPORTED;
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

/// Builds the ruleset for one child in the parent (allocation and path opening happen here,
/// not after fork). Returns the ruleset descriptor, or `None` without Landlock.
#[cfg(target_os = "linux")]
pub(crate) fn landlock_ruleset(
    kernel: KernelSupport,
    writable: &[PathBuf],
    network: bool,
) -> Result<Option<OwnedFd>, SandboxError> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
        path_beneath_rules,
    };
    if !kernel.filesystem() {
        return Ok(None);
    }
    let err = |e: landlock::RulesetError| SandboxError::Landlock { message: e.to_string() };
    let abi = ABI::V5;
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(abi)).map_err(err)?;
    if !network && kernel.tcp() {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(err)?;
    }
    if kernel.scoping() {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6)).map_err(err)?;
    }
    let created = ruleset
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_all(abi)))
        .map_err(err)?;
    let fd: Option<OwnedFd> = created.into();
    match fd {
        Some(fd) => Ok(Some(fd)),
        None => Err(SandboxError::Landlock {
            message: "the kernel reported Landlock but no ruleset was created".into(),
        }),
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn landlock_ruleset(
    _kernel: KernelSupport,
    _writable: &[PathBuf],
    _network: bool,
) -> Result<Option<OwnedFd>, SandboxError> {
    Ok(None)
}
