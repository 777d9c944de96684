//! Spawning, waiting with a deadline, killing the process group, and capped capture.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::child::{ChildSetup, Resource};
use crate::protect::{KernelSupport, Protections, landlock_ruleset};
use crate::spec::{Input, Limits, Output, SAFE_PATH, SandboxError, SpawnSpec, forbidden_env};

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

    /// What a run would get on this machine with the default limits (for `aria doctor`).
    pub fn planned_protections(network: bool) -> Protections {
        Protections::planned(KernelSupport::detect(), network, &limit_names(&Limits::default()))
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
    /// Set once [`Running::wait`] has reaped the child.
    reaped: bool,
    /// Removed when the run is collected.
    _tmp: tempfile::TempDir,
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
        write_roots,
        network,
        stdin,
        stdout,
        stderr,
    } = spec;
    let Some(program) = argv.first() else { return Err(SandboxError::EmptyArgv) };
    let roots = canonical_roots(&write_roots)?;
    let cwd = check_cwd(&cwd, &roots)?;
    let exe = find_program(program, &cwd)?;
    let tmp = tempfile::Builder::new()
        .prefix("aria-sandbox-")
        .tempdir()
        .map_err(SandboxError::io("create the private temp directory"))?;

    let mut cmd = Command::new(&exe);
    cmd.arg0(program).args(&argv[1..]).current_dir(&cwd).env_clear();
    cmd.env("PATH", SAFE_PATH).env("TMPDIR", tmp.path());
    for name in &env_allowlist {
        if forbidden_env(name) {
            return Err(SandboxError::EnvNotAllowed { name: name.clone() });
        }
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    for (name, value) in &env {
        if forbidden_env(name) {
            return Err(SandboxError::EnvNotAllowed { name: name.clone() });
        }
        cmd.env(name, value);
    }
    cmd.process_group(0);

    let kernel = KernelSupport::detect();
    crate::protect::shield_parent();
    let mut writable = roots.clone();
    writable.push(tmp.path().to_path_buf());
    let ruleset = landlock_ruleset(kernel, &writable, network)?;
    let setup = ChildSetup {
        rlimits: rlimits(&limits),
        ruleset: ruleset.as_ref().map(|fd| fd.as_raw_fd()),
        block_sockets: !network && crate::seccomp::SUPPORTED,
        drop_capabilities: kernel.root,
    };
    // SAFETY: the closure only calls async-signal-safe functions (setrlimit, prctl, syscall)
    // on data copied into it, and allocates nothing (see `ChildSetup::apply`).
    unsafe {
        cmd.pre_exec(move || setup.apply());
    }

    let (stdin_stdio, stdin_bytes) = match stdin {
        Input::Null => (Stdio::null(), None),
        Input::Bytes(b) => (Stdio::piped(), Some(b)),
        Input::Fd(fd) => (Stdio::from(fd), None),
    };
    cmd.stdin(stdin_stdio);
    let (out_fd, err_fd, out_reader, err_reader) = wire_outputs(stdout, stderr)?;
    cmd.stdout(Stdio::from(out_fd)).stderr(Stdio::from(err_fd));

    let mut child = cmd.spawn().map_err(SandboxError::io(format!("start {program}")))?;
    // The parent's copies of the child's stdio ends are inside `cmd`; drop them now so that
    // readers see end of file when the child's group is gone.
    drop(cmd);
    drop(ruleset);
    let started = Instant::now();
    let pid = child.id() as libc::pid_t;
    if let (Some(bytes), Some(mut w)) = (stdin_bytes, child.stdin.take()) {
        thread::spawn(move || {
            // A program that exits without reading its input is not an error.
            let _ = w.write_all(&bytes);
        });
    }
    let stdout = out_reader.map(|r| spawn_reader(r, output_cap));
    let stderr = err_reader.map(|r| spawn_reader(r, output_cap));
    let exited = spawn_exit_watch(pid);
    let limits_applied = limit_names(&limits);
    let protections = Protections::planned(kernel, network, &limits_applied);
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
        reaped: false,
        _tmp: tmp,
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
        Outcome { exit, timed_out, stdout, stderr, elapsed, protections }
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
            r.canonicalize().map_err(SandboxError::io(format!("use the root {}", r.display())))
        })
        .collect()
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
