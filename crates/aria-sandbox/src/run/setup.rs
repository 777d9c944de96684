//! What the sandbox works out before it spawns a program: the roots, working directory and
//! program resolved, the environment, the Landlock rules and resource limits, the sandbox
//! directory and empty network namespace shared by every run of the process, and the report
//! pipe through which a child names the setup step that failed.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::thread;

use crate::child::Resource;
use crate::egress::EGRESS_PORT;
use crate::mounts;
use crate::protect::{KernelSupport, fs_access};
use crate::spec::{Limits, SAFE_PATH, SandboxError, forbidden_env};

pub(super) fn rlimits(l: &Limits) -> [Option<(Resource, u64)>; 4] {
    [
        l.cpu_secs.map(|v| (libc::RLIMIT_CPU, v)),
        l.address_space_bytes.map(|v| (libc::RLIMIT_AS, v)),
        l.max_processes.map(|v| (libc::RLIMIT_NPROC, v)),
        l.max_file_bytes.map(|v| (libc::RLIMIT_FSIZE, v)),
    ]
}

pub(super) fn limit_names(l: &Limits) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(s) = l.cpu_secs {
        v.push(format!("cpu {s} s"));
    }
    if let Some(b) = l.address_space_bytes {
        v.push(format!("address space {} MiB", b / (1024 * 1024)));
    }
    if let Some(n) = l.max_processes {
        v.push(format!("processes {n}"));
    }
    if let Some(b) = l.max_file_bytes {
        v.push(format!("file size {b} bytes"));
    }
    v
}

pub(super) fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>, SandboxError> {
    if roots.is_empty() {
        return Err(SandboxError::NoRoots);
    }
    roots
        .iter()
        .map(|r| {
            let real = r
                .canonicalize()
                .map_err(SandboxError::io(format!("use the root {}", r.display())))?;
            if mounts::is_system_path(&real) {
                return Err(SandboxError::SystemRoot { root: real });
            }
            Ok(real)
        })
        .collect()
}

/// ARIA's sandbox directory, made once per process (and removed at exit): the new root's
/// mount point (each child mounts its own tmpfs there, in its own mount namespace, so
/// concurrent runs do not meet), and the empty file and directory bound over masked paths.
/// Nothing is created on disk per run: the child's `/tmp` is a tmpfs of its own.
#[derive(Debug)]
pub(super) struct BaseLayout {
    pub(super) new_root: PathBuf,
    pub(super) empty_file: PathBuf,
    pub(super) empty_dir: PathBuf,
}

impl BaseLayout {
    pub(super) fn shared() -> Result<&'static BaseLayout, SandboxError> {
        static BASE: OnceLock<Result<BaseLayout, String>> = OnceLock::new();
        BASE.get_or_init(|| BaseLayout::create().map_err(|e| e.to_string())).as_ref().map_err(|e| {
            SandboxError::Io {
                what: "prepare the sandbox directory".into(),
                source: io::Error::other(e.clone()),
            }
        })
    }

    fn create() -> io::Result<BaseLayout> {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::Builder::new().prefix("aria-sandbox-").tempdir()?.keep();
        let l = BaseLayout {
            new_root: base.join("root"),
            empty_file: base.join("empty"),
            empty_dir: base.join("empty.d"),
        };
        std::fs::create_dir(&l.new_root)?;
        std::fs::create_dir(&l.empty_dir)?;
        File::create(&l.empty_file)?;
        std::fs::set_permissions(&l.empty_file, std::fs::Permissions::from_mode(0o444))?;
        std::fs::set_permissions(&l.empty_dir, std::fs::Permissions::from_mode(0o555))?;
        remove_at_exit(&base);
        Ok(l)
    }
}

/// Removes the sandbox directory when ARIA exits normally (`atexit`).
fn remove_at_exit(base: &Path) {
    static PATHS: OnceLock<[std::ffi::CString; 4]> = OnceLock::new();
    let c = |p: PathBuf| std::ffi::CString::new(p.into_os_string().into_vec()).unwrap_or_default();
    let set = PATHS.set([
        c(base.join("root")),
        c(base.join("empty")),
        c(base.join("empty.d")),
        c(base.to_path_buf()),
    ]);
    extern "C" fn cleanup() {
        if let Some([root, empty, empty_dir, base]) = PATHS.get() {
            // SAFETY: NUL-terminated paths owned by a static; failures are ignored (another
            // ARIA thread may still be exiting a run, or the directory is already gone).
            unsafe {
                libc::rmdir(root.as_ptr());
                libc::unlink(empty.as_ptr());
                libc::rmdir(empty_dir.as_ptr());
                libc::rmdir(base.as_ptr());
            }
        }
    }
    if set.is_ok() {
        // SAFETY: registers a plain extern "C" function with no captured state.
        unsafe { libc::atexit(cleanup) };
    }
}

/// The files the program may execute: itself, its loader (or script interpreter), and the
/// helpers with theirs.
pub(super) fn exec_allowlist(exe: &Path, helpers: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut add = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for path in std::iter::once(exe).chain(helpers.iter().map(PathBuf::as_path)) {
        let Ok(real) = path.canonicalize() else { continue };
        if real.is_file()
            && let Some(interp) = crate::elf::interpreter(&real)
        {
            add(interp);
        }
        add(real);
    }
    out
}

/// The Landlock rules, on paths of the sandbox's view: read what it shows; write under the
/// writable roots, `/tmp`, `/dev` and extra writable directories; execute everything, or only
/// the allowlist.
pub(super) fn landlock_rules(
    kernel: KernelSupport,
    roots: &[PathBuf],
    writable: bool,
    exec_only: Option<&[PathBuf]>,
    extra_write: &[PathBuf],
) -> Vec<(std::ffi::CString, u64)> {
    use fs_access::{ALL, EXECUTE, READ_DIR, READ_FILE};
    let handled = kernel.handled_fs();
    let exec = if exec_only.is_some() { 0 } else { EXECUTE };
    let write = (ALL & !EXECUTE) | exec;
    let mut rules: Vec<(PathBuf, u64)> = vec![(PathBuf::from("/"), READ_FILE | READ_DIR | exec)];
    if writable {
        rules.extend(roots.iter().map(|r| (r.clone(), write)));
    }
    rules.push((PathBuf::from("/tmp"), write));
    rules.push((PathBuf::from("/dev"), write));
    rules.extend(extra_write.iter().map(|d| (d.clone(), write)));
    for path in exec_only.unwrap_or_default() {
        rules.push((path.clone(), EXECUTE | READ_FILE | READ_DIR));
    }
    rules
        .into_iter()
        .filter_map(|(p, access)| {
            let access = access & handled;
            let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
            (access != 0).then_some((c, access))
        })
        .collect()
}

/// The child's environment: `PATH`, `TMPDIR` and `HOME` set by the sandbox (the private
/// `/tmp`), the allowlisted variables present in ARIA's environment, then explicit ones; with
/// a network grant, last, the proxy variables that point clients at the egress proxy.
pub(super) fn environment(
    allowlist: &[String],
    explicit: &[(String, String)],
    network: bool,
) -> Result<Vec<std::ffi::CString>, SandboxError> {
    let mut vars: Vec<(String, Vec<u8>)> = vec![
        ("PATH".into(), SAFE_PATH.as_bytes().to_vec()),
        ("TMPDIR".into(), b"/tmp".to_vec()),
        ("HOME".into(), b"/tmp".to_vec()),
    ];
    let mut set = |name: &str, value: Vec<u8>| match vars.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = value,
        None => vars.push((name.to_owned(), value)),
    };
    for name in allowlist {
        if forbidden_env(name) {
            return Err(SandboxError::EnvNotAllowed { name: name.clone() });
        }
        if name == "HOME" {
            continue;
        }
        if let Some(value) = std::env::var_os(name) {
            set(name, value.as_bytes().to_vec());
        }
    }
    for (name, value) in explicit {
        if forbidden_env(name) {
            return Err(SandboxError::EnvNotAllowed { name: name.clone() });
        }
        set(name, value.as_bytes().to_vec());
    }
    if network {
        let url = format!("http://127.0.0.1:{EGRESS_PORT}");
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"] {
            set(name, url.clone().into_bytes());
        }
        set("all_proxy", url.into_bytes());
        set("NO_PROXY", Vec::new());
        set("no_proxy", Vec::new());
    }
    vars.into_iter()
        .map(|(n, v)| {
            let mut bytes = n.into_bytes();
            bytes.push(b'=');
            bytes.extend(v);
            cstring(&bytes)
        })
        .collect()
}

pub(super) fn cstring(bytes: &[u8]) -> Result<std::ffi::CString, SandboxError> {
    std::ffi::CString::new(bytes).map_err(|_| SandboxError::Io {
        what: "pass an argument or variable to the program".into(),
        source: io::Error::new(io::ErrorKind::InvalidInput, "it contains a NUL byte"),
    })
}

/// One empty network namespace (no interfaces up) that every child without the network grant
/// joins, made once per process: making a network namespace costs more CPU than everything
/// else in a spawn (sysctl tables, loopback device). Only when ARIA is root, since joining a
/// namespace owned by the initial user namespace needs `CAP_SYS_ADMIN` there; otherwise each
/// child makes its own. Children cannot meet in it: its loopback is down, IP sockets are
/// refused by seccomp and Landlock scopes abstract unix sockets to each child.
pub(super) fn shared_netns() -> Option<std::os::fd::RawFd> {
    static NS: OnceLock<Option<OwnedFd>> = OnceLock::new();
    NS.get_or_init(|| {
        thread::spawn(|| {
            // SAFETY: integer arguments only; this thread alone moves into the new namespace
            // and exits right after taking a handle on it.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return None;
            }
            File::open("/proc/thread-self/ns/net").ok().map(OwnedFd::from)
        })
        .join()
        .ok()
        .flatten()
    })
    .as_ref()
    .map(|fd| fd.as_raw_fd())
}

/// Turns a failed spawn into an error that names the step that failed, from the report pipe.
pub(super) fn setup_error(
    program: &str,
    report: &OwnedFd,
    spawn: io::Error,
    labels: &[String],
) -> SandboxError {
    use crate::child::step;
    let mut buf = [0u8; 8];
    // SAFETY: reading at most 8 bytes into a stack buffer; every write end is closed, so the
    // read does not block.
    let n = unsafe { libc::read(report.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n != 8 {
        return SandboxError::io(format!("start {program}"))(spawn);
    }
    let which = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let errno = i32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let source = io::Error::from_raw_os_error(errno);
    const KERNEL: &str = "run `aria doctor` to see which protections this machine supports";
    let (what, hint): (String, &'static str) = match which {
        step::UNSHARE => ("make namespaces".into(), KERNEL),
        step::USER_MAP => ("map the user into its namespace".into(), KERNEL),
        step::NETNS => ("join the empty network namespace".into(), KERNEL),
        step::EGRESS => ("bring up loopback and the egress listener".into(), KERNEL),
        step::FORK => {
            ("fork the program's process".into(), "try again; the machine may be out of processes")
        }
        step::PRIVATE => ("make mounts private".into(), KERNEL),
        step::PIVOT => ("enter the sandbox's filesystem".into(), KERNEL),
        step::LANDLOCK => ("apply the Landlock rules".into(), KERNEL),
        step::RLIMIT => ("set resource limits".into(), "lower the limits in [limits]"),
        step::CAPABILITIES => ("drop capabilities".into(), KERNEL),
        step::SECCOMP => ("install the seccomp filter".into(), KERNEL),
        step::EXEC => (
            format!("execute {program} inside the sandbox"),
            "the program must be visible in the sandbox: system programs are; programs under \
             $HOME are not unless the profile names their toolchain",
        ),
        i => (
            labels.get(i as usize).cloned().unwrap_or_else(|| "set up mounts".into()),
            "a root or path given to the sandbox may have changed; check that it exists",
        ),
    };
    SandboxError::Setup { step: what, source, hint }
}

pub(super) fn report_pipe() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid two-int array for the kernel to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SandboxError::io("create the report pipe")(io::Error::last_os_error()));
    }
    // SAFETY: pipe2 just returned these two descriptors, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub(super) fn check_cwd(cwd: &Path, roots: &[PathBuf]) -> Result<PathBuf, SandboxError> {
    let real = cwd
        .canonicalize()
        .map_err(SandboxError::io(format!("use the working directory {}", cwd.display())))?;
    if roots.iter().any(|r| real.starts_with(r)) {
        Ok(real)
    } else {
        Err(SandboxError::CwdOutsideRoots { cwd: real, roots: roots.to_vec() })
    }
}

/// A program with a `/` is taken relative to `cwd`; otherwise it is looked up in [`SAFE_PATH`].
pub(super) fn find_program(program: &str, cwd: &Path) -> Result<PathBuf, SandboxError> {
    let not_found = || SandboxError::ProgramNotFound { program: program.to_owned() };
    if program.is_empty() {
        return Err(not_found());
    }
    if program.contains('/') {
        let p = cwd.join(program);
        return if p.is_file() { Ok(p) } else { Err(not_found()) };
    }
    SAFE_PATH
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|p| is_executable(p))
        .ok_or_else(not_found)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    File::open(p)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
