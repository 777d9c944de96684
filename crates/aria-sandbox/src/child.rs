//! What runs after `fork`, in three processes:
//!
//! - **the keeper** (the process `std::process::Command` forks, ARIA's direct child): it enters
//!   new mount, PID, network, IPC and UTS namespaces (and a user namespace when ARIA is not
//!   root), with a network grant brings up loopback and hands ARIA the egress listener (see
//!   `egress::netns`), forks once more, closes every descriptor, and waits, then exits as the
//!   program did. Killing the keeper's process group (timeout, end of the call) kills the
//!   keeper, and the rest dies with it (`PR_SET_PDEATHSIG`, then the PID namespace).
//! - Each of the three dies with its parent (`PR_SET_PDEATHSIG(SIGKILL)`), checked right after
//!   for the race where the parent died first: so when ARIA itself is killed (`kill -9`), the
//!   keeper dies, then init, and the kernel empties the PID namespace. The death signal fires
//!   when the parent *thread* exits, so ARIA forks every keeper from one long-lived thread
//!   (see `run::spawn_on_keeper_thread`).
//! - **init**, PID 1 of the new PID namespace: it builds the filesystem view ([`MountPlan`]),
//!   enters it, forks the program, reaps whatever is orphaned to it, and hands the program's
//!   raw wait status to the keeper. When it exits, the kernel kills every process left in the
//!   namespace: nothing the program started (`setsid`, double forks) survives.
//! - **the program**, PID 2 (PID 1 ignores signals it has no handler for, so a program there
//!   would not die of SIGPIPE): Landlock rules, rlimits, capabilities dropped, signals reset,
//!   the seccomp filter, and its own `execve`.
//!
//! Only async-signal-safe system calls on data prepared in the parent: no allocation.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

use crate::mounts::MountPlan;
use crate::seccomp;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) type Resource = libc::c_int;

/// Steps reported through the report pipe when setup fails (mount ops use their index).
pub(crate) mod step {
    pub(crate) const UNSHARE: u32 = 1_000_000;
    pub(crate) const USER_MAP: u32 = 1_000_001;
    pub(crate) const FORK: u32 = 1_000_002;
    pub(crate) const PIVOT: u32 = 1_000_003;
    pub(crate) const LANDLOCK: u32 = 1_000_004;
    pub(crate) const RLIMIT: u32 = 1_000_005;
    pub(crate) const CAPABILITIES: u32 = 1_000_006;
    pub(crate) const SECCOMP: u32 = 1_000_007;
    pub(crate) const EXEC: u32 = 1_000_008;
    pub(crate) const PRIVATE: u32 = 1_000_009;
    pub(crate) const NETNS: u32 = 1_000_010;
    pub(crate) const EGRESS: u32 = 1_000_011;
}

/// The namespaces to enter.
#[derive(Debug)]
pub(crate) struct Namespaces {
    /// `CLONE_NEW*` flags for `unshare`.
    pub(crate) flags: libc::c_int,
    /// `(uid_map, gid_map)` lines when a user namespace is made (ARIA not root).
    pub(crate) user_maps: Option<(CString, CString)>,
    /// An existing empty network namespace to join instead of making one (faster).
    pub(crate) netns_fd: Option<RawFd>,
}

/// Landlock rules added in the child, after the pivot, on paths of the sandbox's view.
#[derive(Debug)]
pub(crate) struct LandlockRules {
    pub(crate) ruleset: RawFd,
    pub(crate) rules: Vec<(CString, u64)>,
    /// The rights that apply to a file (not a directory).
    pub(crate) file_rights: u64,
}

/// Everything the two processes need, prepared in the parent.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    pub(crate) rlimits: [Option<(Resource, u64)>; 4],
    pub(crate) namespaces: Namespaces,
    pub(crate) mounts: MountPlan,
    pub(crate) cwd: CString,
    pub(crate) landlock: Option<LandlockRules>,
    pub(crate) seccomp: Option<seccomp::Program>,
    pub(crate) drop_capabilities: bool,
    pub(crate) exe: CString,
    pub(crate) argv: Vec<CString>,
    pub(crate) envp: Vec<CString>,
    pub(crate) argv_ptrs: Vec<*const libc::c_char>,
    pub(crate) envp_ptrs: Vec<*const libc::c_char>,
    /// Write end of the report pipe (close-on-exec): `(step, errno)` on failure.
    pub(crate) report: RawFd,
    /// With a network grant: the keeper's end of the socket pair the egress listener is sent
    /// over.
    pub(crate) egress_channel: Option<RawFd>,
    /// ARIA's process id: the keeper's parent, checked after `PR_SET_PDEATHSIG`.
    pub(crate) parent_pid: libc::pid_t,
}

// SAFETY: the raw pointers point into the CStrings owned by the same plan, which are never
// mutated; the plan is only read, in the forked child.
unsafe impl Send for ChildPlan {}
// SAFETY: as above; shared references only read.
unsafe impl Sync for ChildPlan {}

impl ChildPlan {
    /// Builds the null-terminated pointer arrays once the strings are in place.
    pub(crate) fn seal(&mut self) {
        self.argv_ptrs = self.argv.iter().map(|s| s.as_ptr()).collect();
        self.argv_ptrs.push(std::ptr::null());
        self.envp_ptrs = self.envp.iter().map(|s| s.as_ptr()).collect();
        self.envp_ptrs.push(std::ptr::null());
    }

    /// Runs in the keeper (the process std forked). Returns only on failure; on success the
    /// keeper exits with the program's status and the program's process execs.
    pub(crate) fn run(&self) -> io::Result<()> {
        die_with_parent(self.parent_pid);
        if let Err((s, e)) = self.enter_namespaces() {
            self.report(s, &e);
            return Err(e);
        }
        // Entering a user namespace changes credentials, which clears the death signal: set it
        // again (and check again) once in.
        die_with_parent(self.parent_pid);
        if let Some(channel) = self.egress_channel
            && let Err(e) = crate::egress::netns::send_listener(channel)
        {
            self.report(step::EGRESS, &e);
            return Err(e);
        }
        let mut status_pipe = [0 as libc::c_int; 2];
        // SAFETY: a valid two-int array for the kernel to fill.
        if unsafe { libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            let e = io::Error::last_os_error();
            self.report(step::FORK, &e);
            return Err(e);
        }
        let [status_read, status_write] = status_pipe;
        let pid = self.fork()?;
        if pid == 0 {
            // SAFETY: closing our copy of the read end.
            unsafe { libc::close(status_read) };
            let e = match self.init(status_write) {
                Ok(never) => match never {},
                Err((s, e)) => {
                    self.report(s, &e);
                    e
                }
            };
            return Err(e);
        }
        keep(pid, status_read)
    }

    fn fork(&self) -> io::Result<libc::pid_t> {
        // SAFETY: fork in a single-threaded child (a fresh fork of one thread).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            self.report(step::FORK, &e);
            return Err(e);
        }
        Ok(pid)
    }

    /// PID 1 of the new namespace: builds the filesystem view, then forks the program (PID 2:
    /// PID 1 ignores signals it has no handler for, so a program there would not die of
    /// SIGPIPE or SIGTERM) and waits for it, reaping orphans, and passes its raw wait status to
    /// the keeper. When PID 1 exits, the kernel kills whatever is left in the namespace.
    fn init(&self, status_write: RawFd) -> Result<std::convert::Infallible, (u32, io::Error)> {
        // SAFETY: integer arguments only. PID 1 dies with its keeper.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        // The keeper lives outside this PID namespace, so getppid() says 0 whether or not it
        // is alive. It holds the status pipe's read end until it exits: a pipe with no reader
        // polls as an error, so a keeper that died before the death signal was set is seen.
        let mut pfd = libc::pollfd { fd: status_write, events: libc::POLLOUT, revents: 0 };
        // SAFETY: one valid pollfd on the stack; zero timeout. `_exit` ends this process only.
        unsafe {
            if libc::poll(&mut pfd, 1, 0) < 0 || pfd.revents & libc::POLLERR != 0 {
                libc::_exit(125);
            }
        }
        self.mounts
            .apply()
            .map_err(|(i, e)| (if i == usize::MAX { step::PRIVATE } else { i as u32 }, e))?;
        self.mounts.pivot(&self.cwd).map_err(|e| (step::PIVOT, e))?;
        let pid = self.fork().map_err(|e| (step::FORK, e))?;
        if pid == 0 {
            // SAFETY: closing the program's copy of the status pipe.
            unsafe { libc::close(status_write) };
            return self.program();
        }
        // SAFETY: descriptor juggling, waiting and exiting with stack data only.
        unsafe {
            libc::dup2(status_write, 0);
            close_from(1);
            let mut status: libc::c_int = 0;
            loop {
                let r = libc::waitpid(-1, &mut status, 0);
                if r == pid {
                    let bytes = status.to_le_bytes();
                    libc::write(0, bytes.as_ptr().cast(), bytes.len());
                    libc::_exit(0);
                }
                if r < 0 && *libc::__errno_location() != libc::EINTR {
                    libc::_exit(125);
                }
            }
        }
    }

    fn enter_namespaces(&self) -> Result<(), (u32, io::Error)> {
        let ns = &self.namespaces;
        // SAFETY: integer arguments only.
        if unsafe { libc::unshare(ns.flags) } != 0 {
            return Err((step::UNSHARE, io::Error::last_os_error()));
        }
        if let Some((uid_map, gid_map)) = &ns.user_maps {
            // ARIA is non-dumpable (so children cannot read its memory), which makes this
            // process's /proc/self files root's: the id maps could not be written. Dumpable
            // just long enough to write them; nothing else runs in this process meanwhile, and
            // sandboxed programs cannot see it (they live in another PID namespace).
            // SAFETY: integer arguments only.
            unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) };
            let written = write_file(c"/proc/self/setgroups", c"deny")
                .and_then(|()| write_file(c"/proc/self/uid_map", uid_map))
                .and_then(|()| write_file(c"/proc/self/gid_map", gid_map));
            // SAFETY: integer arguments only.
            unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
            written.map_err(|e| (step::USER_MAP, e))?;
        }
        if let Some(fd) = ns.netns_fd {
            // SAFETY: `fd` is a namespace descriptor the parent keeps open; integers only.
            if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
                return Err((step::NETNS, io::Error::last_os_error()));
            }
        }
        Ok(())
    }

    /// The program's process (PID 2): Landlock, limits, capabilities, seccomp, exec.
    fn program(&self) -> Result<std::convert::Infallible, (u32, io::Error)> {
        // SAFETY: integer arguments only. The program dies with PID 1 anyway (namespace).
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        // SAFETY: getppid has no preconditions; `_exit` ends this process only. Init is PID 1
        // here: another parent means init is gone.
        if unsafe { libc::getppid() } != 1 {
            // SAFETY: as above.
            unsafe { libc::_exit(125) };
        }
        // SAFETY: integer arguments only; required before Landlock and seccomp for a process
        // without CAP_SYS_ADMIN, and keeps setuid programs from gaining privileges.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err((step::LANDLOCK, io::Error::last_os_error()));
        }
        if let Some(rules) = &self.landlock {
            apply_landlock(rules).map_err(|e| (step::LANDLOCK, e))?;
        }
        for (resource, value) in self.rlimits.iter().flatten() {
            let lim = libc::rlimit { rlim_cur: *value, rlim_max: *value };
            // SAFETY: `lim` is a valid rlimit on the stack.
            if unsafe { libc::setrlimit(*resource, &lim) } != 0 {
                return Err((step::RLIMIT, io::Error::last_os_error()));
            }
        }
        if self.drop_capabilities {
            drop_capabilities().map_err(|e| (step::CAPABILITIES, e))?;
        }
        if let Some(program) = &self.seccomp {
            seccomp::install(program).map_err(|e| (step::SECCOMP, e))?;
        }
        reset_signals();
        // SAFETY: `exe` and the pointer arrays are NUL-terminated and owned by the plan. The
        // seccomp filter allows exactly this pointer as execve's path when exec is limited.
        unsafe {
            libc::execve(self.exe.as_ptr(), self.argv_ptrs.as_ptr(), self.envp_ptrs.as_ptr())
        };
        Err((step::EXEC, io::Error::last_os_error()))
    }

    fn report(&self, step: u32, e: &io::Error) {
        let errno = e.raw_os_error().unwrap_or(0);
        let mut buf = [0u8; 8];
        buf[..4].copy_from_slice(&step.to_le_bytes());
        buf[4..].copy_from_slice(&errno.to_le_bytes());
        // SAFETY: writing 8 bytes from a stack buffer to a pipe descriptor.
        let _ = unsafe { libc::write(self.report, buf.as_ptr().cast(), buf.len()) };
    }
}

/// Asks for SIGKILL when the parent (thread) exits, then checks that the parent is still
/// `parent`: if it died first, this process was re-parented and exits at once.
fn die_with_parent(parent: libc::pid_t) {
    // SAFETY: integer arguments only; `_exit` ends this process only.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != parent {
            libc::_exit(125);
        }
    }
}

/// Gives the program the signal state a shell would: default dispositions for the signals
/// Rust and the runtime change (SIGPIPE is ignored in Rust programs, so `yes | head` would
/// see EPIPE instead of dying quietly), and nothing blocked. std does this just before its own
/// exec, which the sandbox replaces with its own.
fn reset_signals() {
    // SAFETY: signal() and sigprocmask() with stack data are async-signal-safe.
    unsafe {
        for sig in [libc::SIGPIPE, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGCHLD] {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
}

/// Closes every descriptor from `first` up.
///
/// # Safety
/// Async-signal-safe; the caller must hold no descriptor it still needs at or above `first`.
unsafe fn close_from(first: u32) {
    // SAFETY: integer arguments only.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32) != 0 {
            for fd in first as i32..1024 {
                libc::close(fd);
            }
        }
    }
}

/// The keeper: close everything, wait for PID 1, exit as the program did (its raw status
/// arrives through the status pipe; without it, as PID 1 did).
fn keep(pid: libc::pid_t, status_read: RawFd) -> ! {
    // SAFETY: descriptor juggling and waiting take integers and stack data; `_exit` and
    // `kill` end or signal this process only.
    unsafe {
        libc::dup2(status_read, 0);
        close_from(1);
        let mut status: libc::c_int = 0;
        loop {
            let r = libc::waitpid(pid, &mut status, 0);
            if r == pid {
                break;
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(125);
            }
        }
        let mut bytes = [0u8; 4];
        if libc::read(0, bytes.as_mut_ptr().cast(), 4) == 4 {
            status = libc::c_int::from_le_bytes(bytes);
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(125)
    }
}

fn write_file(path: &std::ffi::CStr, text: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: NUL-terminated paths and a buffer of the given length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let bytes = text.to_bytes();
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if n != bytes.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}

/// The kernel's `struct landlock_path_beneath_attr` (packed).
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

fn apply_landlock(rules: &LandlockRules) -> io::Result<()> {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    for (path, access) in &rules.rules {
        // SAFETY: a NUL-terminated path; O_PATH opens nothing for reading.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a zeroed stat is valid for the kernel to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open; `st` is writable.
        let is_dir =
            unsafe { libc::fstat(fd, &mut st) } == 0 && st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        let allowed = if is_dir { *access } else { *access & rules.file_rights };
        let attr = PathBeneath { allowed_access: allowed, parent_fd: fd };
        // SAFETY: `attr` is a valid packed landlock_path_beneath_attr on the stack.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                rules.ruleset,
                LANDLOCK_RULE_PATH_BENEATH,
                &attr as *const PathBeneath,
                0u32,
            )
        };
        let err = io::Error::last_os_error();
        // SAFETY: closing the descriptor opened above.
        unsafe { libc::close(fd) };
        if r != 0 {
            return Err(err);
        }
    }
    // SAFETY: the ruleset descriptor is inherited from the parent, which keeps it open until
    // the spawn returns; integers only.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, rules.ruleset, 0u32) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Drops every capability from the bounding set and clears the ambient set.
fn drop_capabilities() -> io::Result<()> {
    for cap in 0..64 {
        // SAFETY: prctl(PR_CAPBSET_DROP, cap) takes integers only; async-signal-safe.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) {
                break; // past the kernel's last capability
            }
            return Err(err);
        }
    }
    // SAFETY: integer arguments only. Kernels before 4.3 lack ambient capabilities (EINVAL),
    // in which case there is nothing to clear.
    let _ = unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    Ok(())
}
