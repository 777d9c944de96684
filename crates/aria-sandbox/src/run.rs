//! Spawning, waiting with a deadline, killing the process group, and capped capture.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::child::{ChildPlan, LandlockRules, Namespaces, Resource};
use crate::egress::proxy::Proxy;
use crate::egress::{EGRESS_PORT, EgressRecord, netns};
use crate::mounts::{self, MountPlan};
use crate::protect::{KernelSupport, Protections, RunFacts, fs_access, landlock_ruleset};
use crate::seccomp;
use crate::spec::{
    ExecPolicy, Input, Limits, Output, RootAccess, SAFE_PATH, SandboxError, SpawnSpec,
    forbidden_env,
};

/// How long to wait for the output readers after the process group is dead. A process that
/// left the group (`setsid`) could keep a pipe open; its output is then abandoned.
const READER_GRACE: Duration = Duration::from_secs(2);

/// The entry point: runs programs as described by a [`SpawnSpec`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Sandbox;

impl Sandbox {
    /// What the running kernel supports.
    pub fn kernel() -> KernelSupport {
        KernelSupport::detect()
    }

    /// What a read-tier run would get on this machine with the default limits (for
    /// `aria doctor`).
    pub fn planned_protections(network: bool) -> Protections {
        let facts = RunFacts {
            network,
            writable: false,
            exec_only: true,
            limits: limit_names(&Limits::default()),
        };
        Protections::planned(KernelSupport::detect(), &facts)
    }

    /// Starts the program and returns at once; [`Running::wait`] collects it. Use this to
    /// connect pipeline stages: start every stage, then wait for each.
    pub fn start(spec: SpawnSpec) -> Result<Running, SandboxError> {
        start(spec)
    }

    /// Starts the program and waits for it (or its timeout).
    pub fn run(spec: SpawnSpec) -> Result<Outcome, SandboxError> {
        Ok(start(spec)?.wait())
    }
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExitInfo {
    /// The exit code, when it exited normally.
    pub code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
}

impl ExitInfo {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// One captured stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Captured {
    /// The first `output_cap` bytes.
    #[serde(skip)]
    pub bytes: Vec<u8>,
    /// How many bytes the program wrote in all.
    pub total: u64,
    /// More was written than kept.
    pub truncated: bool,
    /// Reading was abandoned because a process that left the group kept the pipe open.
    pub abandoned: bool,
}

impl Captured {
    /// The kept bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub exit: ExitInfo,
    /// The deadline passed and the process group was killed.
    pub timed_out: bool,
    pub stdout: Captured,
    pub stderr: Captured,
    pub elapsed: Duration,
    /// Which protections were active for this run.
    pub protections: Protections,
    /// With a network grant: every destination the program asked the egress proxy for, in
    /// the order the connections ended.
    pub egress: Vec<EgressRecord>,
}

/// A started program.
#[derive(Debug)]
pub struct Running {
    child: Child,
    pid: libc::pid_t,
    started: Instant,
    deadline: Instant,
    stdout: Option<mpsc::Receiver<Captured>>,
    stderr: Option<mpsc::Receiver<Captured>>,
    exited: mpsc::Receiver<()>,
    protections: Protections,
    /// The egress proxy of a granted run.
    proxy: Option<Proxy>,
    /// Set once [`Running::wait`] has reaped the child.
    reaped: bool,
}

impl Drop for Running {
    /// A run dropped without [`Running::wait`] is killed, group and all, and reaped.
    fn drop(&mut self) {
        if !self.reaped {
            kill_group(self.pid);
            let _ = self.child.wait();
        }
    }
}

fn start(spec: SpawnSpec) -> Result<Running, SandboxError> {
    let SpawnSpec {
        argv,
        cwd,
        env_allowlist,
        env,
        limits,
        timeout,
        output_cap,
        roots,
        root_access,
        exec,
        masked,
        read_only,
        extra_read,
        extra_write,
        network,
        egress,
        stdin,
        stdout,
        stderr,
    } = spec;
    let Some(program) = argv.first() else { return Err(SandboxError::EmptyArgv) };
    let roots = canonical_roots(&roots)?;
    let cwd = check_cwd(&cwd, &roots)?;
    let exe = find_program(program, &cwd)?;
    let kernel = KernelSupport::detect();
    if !kernel.namespaces {
        let problem = kernel.namespace_problem().unwrap_or_default();
        return Err(SandboxError::Unavailable(format!(
            "the sandbox cannot isolate programs on this machine, so none is run: {problem}"
        )));
    }
    let layout = BaseLayout::shared()?;

    let exec_only = match &exec {
        ExecPolicy::Any => None,
        ExecPolicy::Only { helpers } => Some(exec_allowlist(&exe, helpers)),
    };
    let existing = |paths: &[PathBuf]| -> Vec<PathBuf> {
        paths.iter().filter_map(|p| p.canonicalize().ok()).collect()
    };
    let masked: Vec<PathBuf> =
        masked.iter().filter(|p| p.symlink_metadata().is_ok()).cloned().collect();
    let read_only: Vec<PathBuf> =
        read_only.iter().filter(|p| p.symlink_metadata().is_ok()).cloned().collect();
    let (extra_read, extra_write) = (existing(&extra_read), existing(&extra_write));
    let writable = root_access == RootAccess::ReadWrite;
    let mounts = MountPlan::new(&mounts::Request {
        new_root: &layout.new_root,
        empty_file: &layout.empty_file,
        empty_dir: &layout.empty_dir,
        roots: &roots,
        roots_writable: writable,
        exec_only: exec_only.as_deref(),
        read_only: &read_only,
        masked: &masked,
        extra_read: &extra_read,
        extra_write: &extra_write,
        network,
    })
    .map_err(SandboxError::io("plan the sandbox's mounts"))?;

    let envp = environment(&env_allowlist, &env, network)?;
    crate::protect::shield_parent();
    let ruleset = landlock_ruleset(kernel, network)?;
    let landlock = ruleset.as_ref().map(|fd| LandlockRules {
        ruleset: fd.as_raw_fd(),
        rules: landlock_rules(kernel, &roots, writable, exec_only.as_deref(), &extra_write),
        file_rights: fs_access::FILE,
    });
    let (report_read, report_write) = report_pipe()?;
    // A granted child gets its own namespace too: only loopback, where the egress listener is.
    let shared_net = if network || !kernel.root { None } else { shared_netns() };
    let egress_channel = if network {
        Some(netns::channel().map_err(SandboxError::io("create the egress channel"))?)
    } else {
        None
    };
    let namespaces = Namespaces {
        flags: crate::probe::BASE_FLAGS
            | if shared_net.is_some() { 0 } else { libc::CLONE_NEWNET }
            | if kernel.root { 0 } else { libc::CLONE_NEWUSER },
        user_maps: (!kernel.root).then(crate::probe::user_maps),
        netns_fd: shared_net,
    };
    let mut plan = ChildPlan {
        rlimits: rlimits(&limits),
        namespaces,
        mounts,
        cwd: cstring(cwd.as_os_str().as_bytes())?,
        landlock,
        seccomp: None,
        drop_capabilities: kernel.root,
        exe: cstring(exe.as_os_str().as_bytes())?,
        argv: argv.iter().map(|a| cstring(a.as_bytes())).collect::<Result<_, _>>()?,
        envp,
        argv_ptrs: Vec::new(),
        envp_ptrs: Vec::new(),
        report: report_write.as_raw_fd(),
        egress_channel: egress_channel.as_ref().map(|(_, child)| child.as_raw_fd()),
        // SAFETY: getpid has no preconditions and cannot fail.
        parent_pid: unsafe { libc::getpid() },
    };
    plan.seal();
    let labels = plan.mounts.labels.clone();
    let rules = seccomp::Rules {
        block_sockets: !network,
        exec_once: match &exec {
            ExecPolicy::Only { helpers } if helpers.is_empty() => Some(plan.exe.as_ptr() as usize),
            _ => None,
        },
    };
    if crate::seccomp::SUPPORTED && rules.any() {
        plan.seccomp = Some(seccomp::build(rules));
    }

    let mut cmd = Command::new(&exe);
    cmd.arg0(program).args(&argv[1..]).env_clear();
    cmd.process_group(0);
    // SAFETY: the closure runs in the forked child and only makes system calls on data
    // prepared above (see `child`), allocating nothing.
    unsafe {
        cmd.pre_exec(move || plan.run());
    }

    let (stdin_stdio, stdin_bytes) = match stdin {
        Input::Null => (Stdio::null(), None),
        Input::Bytes(b) => (Stdio::piped(), Some(b)),
        Input::Fd(fd) => (Stdio::from(fd), None),
    };
    cmd.stdin(stdin_stdio);
    let (out_fd, err_fd, out_reader, err_reader) = wire_outputs(stdout, stderr)?;
    cmd.stdout(Stdio::from(out_fd)).stderr(Stdio::from(err_fd));

    // The parent's copies of the child's stdio ends are inside `cmd`, dropped once it has
    // spawned, so that readers see end of file when the child's group is gone.
    let spawned = crate::spawner::spawn(cmd);
    drop(report_write);
    drop(ruleset);
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return Err(setup_error(program, &report_read, e, &labels)),
    };
    let started = Instant::now();
    let pid = child.id() as libc::pid_t;
    let proxy = match egress_channel {
        None => None,
        Some((ours, theirs)) => {
            drop(theirs);
            let started = netns::receive_listener(&ours).and_then(|l| Proxy::start(l, egress));
            match started {
                Ok(p) => Some(p),
                Err(e) => {
                    kill_group(pid);
                    let _ = child.wait();
                    return Err(SandboxError::io("start the egress proxy for the network grant")(
                        e,
                    ));
                }
            }
        }
    };
    if let (Some(bytes), Some(mut w)) = (stdin_bytes, child.stdin.take()) {
        thread::spawn(move || {
            // A program that exits without reading its input is not an error.
            let _ = w.write_all(&bytes);
        });
    }
    let stdout = out_reader.map(|r| spawn_reader(r, output_cap));
    let stderr = err_reader.map(|r| spawn_reader(r, output_cap));
    let exited = spawn_exit_watch(pid);
    let facts = RunFacts {
        network,
        writable,
        exec_only: exec_only.is_some(),
        limits: limit_names(&limits),
    };
    let protections = Protections::planned(kernel, &facts);
    tracing::debug!(program, pid, "sandboxed program started");
    Ok(Running {
        child,
        pid,
        started,
        deadline: started + timeout,
        stdout,
        stderr,
        exited,
        protections,
        proxy,
        reaped: false,
    })
}

impl Running {
    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Waits until the program exits or the deadline passes (then the whole process group is
    /// killed), kills whatever is left in the group, and collects the capped output.
    pub fn wait(mut self) -> Outcome {
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        let timed_out = match self.exited.recv_timeout(remaining) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => false,
            Err(mpsc::RecvTimeoutError::Timeout) => true,
        };
        // The group leader has not been reaped yet (the watcher waits with WNOWAIT), so the
        // group id still names our group: killing it cannot hit an unrelated process.
        kill_group(self.pid);
        let status = self.child.wait();
        self.reaped = true;
        let elapsed = self.started.elapsed();
        let exit = match status {
            Ok(s) => ExitInfo { code: s.code(), signal: s.signal() },
            Err(_) => ExitInfo { code: None, signal: None },
        };
        let grace = Instant::now() + READER_GRACE;
        let stdout = collect(self.stdout.take(), grace);
        let stderr = collect(self.stderr.take(), grace);
        let protections = self.protections.clone();
        let egress = self.proxy.take().map(Proxy::finish).unwrap_or_default();
        Outcome { exit, timed_out, stdout, stderr, elapsed, protections, egress }
    }
}

fn collect(rx: Option<mpsc::Receiver<Captured>>, grace: Instant) -> Captured {
    let Some(rx) = rx else { return Captured::default() };
    match rx.recv_timeout(grace.saturating_duration_since(Instant::now())) {
        Ok(c) => c,
        Err(_) => Captured { abandoned: true, ..Captured::default() },
    }
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: killpg takes integers; `pid` is the unreaped leader of the group we created
    // with process_group(0), so the id cannot name another group.
    let _ = unsafe { libc::killpg(pid, libc::SIGKILL) };
}

/// Signals when the child has exited, without reaping it (so its pid and group id stay ours
/// until `Child::wait`).
fn spawn_exit_watch(pid: libc::pid_t) -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        loop {
            // SAFETY: an all-zero siginfo_t is a valid value to pass for the kernel to fill.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: `info` is a valid, writable siginfo_t; WNOWAIT leaves the child
            // waitable so `Child::wait` reaps it later.
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if r == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break;
            }
        }
        let _ = tx.send(());
    });
    rx
}

fn spawn_reader(mut r: io::PipeReader, cap: usize) -> mpsc::Receiver<Captured> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut total: u64 = 0;
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    total += n as u64;
                    let room = cap.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let truncated = total > kept.len() as u64;
        let _ = tx.send(Captured { bytes: kept, total, truncated, abandoned: false });
    });
    rx
}

type Wired = (OwnedFd, OwnedFd, Option<io::PipeReader>, Option<io::PipeReader>);

/// Turns the two output choices into the child's stdout/stderr descriptors, plus the read
/// ends to capture.
fn wire_outputs(stdout: Output, stderr: Output) -> Result<Wired, SandboxError> {
    fn sink(o: Output) -> Result<(OwnedFd, Option<io::PipeReader>), SandboxError> {
        match o {
            Output::Capture => {
                let (r, w) = io::pipe().map_err(SandboxError::io("create an output pipe"))?;
                Ok((OwnedFd::from(w), Some(r)))
            }
            Output::Null => {
                let f = OpenOptions::new()
                    .write(true)
                    .open("/dev/null")
                    .map_err(SandboxError::io("open /dev/null"))?;
                Ok((OwnedFd::from(f), None))
            }
            Output::Fd(fd) => Ok((fd, None)),
            Output::Merge => Err(SandboxError::MergeLoop),
        }
    }
    let dup = |fd: &OwnedFd| fd.try_clone().map_err(SandboxError::io("duplicate an output"));
    match (stdout, stderr) {
        (Output::Merge, Output::Merge) => Err(SandboxError::MergeLoop),
        (Output::Merge, e) => {
            let (efd, er) = sink(e)?;
            Ok((dup(&efd)?, efd, None, er))
        }
        (o, Output::Merge) => {
            let (ofd, or) = sink(o)?;
            let efd = dup(&ofd)?;
            Ok((ofd, efd, or, None))
        }
        (o, e) => {
            let (ofd, or) = sink(o)?;
            let (efd, er) = sink(e)?;
            Ok((ofd, efd, or, er))
        }
    }
}

fn rlimits(l: &Limits) -> [Option<(Resource, u64)>; 4] {
    [
        l.cpu_secs.map(|v| (libc::RLIMIT_CPU, v)),
        l.address_space_bytes.map(|v| (libc::RLIMIT_AS, v)),
        l.max_processes.map(|v| (libc::RLIMIT_NPROC, v)),
        l.max_file_bytes.map(|v| (libc::RLIMIT_FSIZE, v)),
    ]
}

fn limit_names(l: &Limits) -> Vec<String> {
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

fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>, SandboxError> {
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
struct BaseLayout {
    new_root: PathBuf,
    empty_file: PathBuf,
    empty_dir: PathBuf,
}

impl BaseLayout {
    fn shared() -> Result<&'static BaseLayout, SandboxError> {
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
fn exec_allowlist(exe: &Path, helpers: &[PathBuf]) -> Vec<PathBuf> {
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
fn landlock_rules(
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
fn environment(
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

fn cstring(bytes: &[u8]) -> Result<std::ffi::CString, SandboxError> {
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
fn shared_netns() -> Option<std::os::fd::RawFd> {
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
fn setup_error(
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

fn report_pipe() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid two-int array for the kernel to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SandboxError::io("create the report pipe")(io::Error::last_os_error()));
    }
    // SAFETY: pipe2 just returned these two descriptors, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn check_cwd(cwd: &Path, roots: &[PathBuf]) -> Result<PathBuf, SandboxError> {
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
fn find_program(program: &str, cwd: &Path) -> Result<PathBuf, SandboxError> {
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
