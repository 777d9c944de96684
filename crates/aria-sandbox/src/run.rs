//! Spawning, waiting with a deadline, killing the process group, and capped capture. What is
//! worked out before the spawn (paths, environment, rules, limits) is in `setup`.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::child::{ChildPlan, LandlockRules, Namespaces};
use crate::egress::proxy::Proxy;
use crate::egress::{EgressRecord, netns};
use crate::mounts::{self, MountPlan};
use crate::protect::{KernelSupport, Protections, RunFacts, fs_access, landlock_ruleset};
use crate::seccomp;
use crate::spec::{ExecPolicy, Input, Limits, Output, RootAccess, SandboxError, SpawnSpec};

mod setup;
use setup::{
    BaseLayout, canonical_roots, check_cwd, cstring, environment, exec_allowlist, find_program,
    landlock_rules, limit_names, report_pipe, rlimits, setup_error, shared_netns,
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
