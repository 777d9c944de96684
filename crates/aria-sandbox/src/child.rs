//! What runs in the child between `fork` and `exec`: only async-signal-safe system calls
//! (`setrlimit`, `prctl`, `landlock_restrict_self`), no allocation.

use std::io;
use std::os::fd::RawFd;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) type Resource = libc::c_int;

/// Prepared in the parent; copied into the `pre_exec` closure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChildSetup {
    /// `(resource, limit)` pairs; unused slots are `None`.
    pub(crate) rlimits: [Option<(Resource, u64)>; 4],
    /// The Landlock ruleset descriptor to enforce, inherited across fork.
    pub(crate) ruleset: Option<RawFd>,
    /// Install the seccomp filter that blocks IP and packet sockets.
    pub(crate) block_sockets: bool,
    /// Empty the capability bounding set (when ARIA runs as root), so the program gets no
    /// capabilities after exec even as uid 0.
    pub(crate) drop_capabilities: bool,
}

impl ChildSetup {
    /// Runs in the forked child. Any error aborts the spawn (the parent sees it from `spawn`),
    /// so a program never runs with fewer protections than reported.
    pub(crate) fn apply(&self) -> io::Result<()> {
        for (resource, value) in self.rlimits.iter().flatten() {
            let lim = libc::rlimit { rlim_cur: *value, rlim_max: *value };
            // SAFETY: `lim` is a valid rlimit on the stack; setrlimit is async-signal-safe.
            if unsafe { libc::setrlimit(*resource, &lim) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if self.drop_capabilities {
            drop_capabilities()?;
        }
        if self.ruleset.is_some() || self.block_sockets {
            // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) takes integer arguments only; required
            // before landlock_restrict_self and seccomp for an unprivileged process.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(fd) = self.ruleset {
            restrict_self(fd)?;
        }
        if self.block_sockets {
            crate::seccomp::install()?;
        }
        Ok(())
    }
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

#[cfg(target_os = "linux")]
fn restrict_self(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is the ruleset descriptor the parent created and keeps open until the spawn
    // returns, so it is valid in the child; the syscall takes only integers.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn restrict_self(_fd: RawFd) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}
