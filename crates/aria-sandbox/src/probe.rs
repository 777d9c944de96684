//! Whether this machine lets a child make the sandbox's namespaces, probed once by forking a
//! child that tries (`unshare`, the user namespace's id maps when not root, and a first mount
//! call, which is what AppArmor's user-namespace restriction refuses on Ubuntu 23.10+).

use std::ffi::CString;
use std::sync::OnceLock;

/// The `CLONE_NEW*` flags every sandboxed child gets (plus `CLONE_NEWNET` without network,
/// and `CLONE_NEWUSER` when ARIA is not root).
pub(crate) const BASE_FLAGS: libc::c_int =
    libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;

/// The id-map lines that map the current user to itself inside a new user namespace.
pub(crate) fn user_maps() -> (CString, CString) {
    // SAFETY: getuid/getgid have no preconditions and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // Neither string can contain a NUL byte: they are made of digits and spaces.
    let uid_map = CString::new(format!("{uid} {uid} 1\n")).unwrap_or_default();
    let gid_map = CString::new(format!("{gid} {gid} 1\n")).unwrap_or_default();
    (uid_map, gid_map)
}

/// Why namespaces cannot be made here, with the fix; `None` when they can.
pub(crate) fn namespace_problem(root: bool) -> Option<String> {
    static CACHE: OnceLock<Option<String>> = OnceLock::new();
    CACHE.get_or_init(|| probe(root)).clone()
}

#[cfg(target_os = "linux")]
fn probe(root: bool) -> Option<String> {
    let flags = BASE_FLAGS | libc::CLONE_NEWNET | if root { 0 } else { libc::CLONE_NEWUSER };
    let maps = (!root).then(user_maps);
    // Stage codes the child exits with: 0 ok, 10+errno unshare, 40+errno maps, 70+errno mount.
    // SAFETY: the child calls only async-signal-safe functions on data prepared before the
    // fork, then `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Some(format!(
            "could not fork to probe namespaces: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        // SAFETY: see above; every call below is async-signal-safe.
        unsafe {
            let code = |base: i32| base + (*libc::__errno_location()).min(29);
            if libc::unshare(flags) != 0 {
                libc::_exit(code(10));
            }
            if let Some((uid_map, gid_map)) = &maps {
                for (path, text) in [
                    (c"/proc/self/setgroups", c"deny"),
                    (c"/proc/self/uid_map", uid_map.as_c_str()),
                    (c"/proc/self/gid_map", gid_map.as_c_str()),
                ] {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    let len = text.to_bytes().len();
                    if fd < 0 || libc::write(fd, text.as_ptr().cast(), len) != len as isize {
                        libc::_exit(code(40));
                    }
                    libc::close(fd);
                }
            }
            let null = std::ptr::null::<libc::c_char>();
            if libc::mount(null, c"/".as_ptr(), null, libc::MS_REC | libc::MS_PRIVATE, null.cast())
                != 0
            {
                libc::_exit(code(70));
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for the child forked above; `status` is a valid out pointer.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Some("could not wait for the namespace probe".into());
        }
    }
    if !libc::WIFEXITED(status) {
        return Some("the namespace probe was killed".into());
    }
    let code = libc::WEXITSTATUS(status);
    if code == 0 {
        return None;
    }
    let (what, errno) = match code {
        10..=39 => ("making namespaces (unshare)", code - 10),
        40..=69 => ("mapping the user into its namespace", code - 40),
        _ => ("mounting inside the namespace", code - 70),
    };
    let cause = std::io::Error::from_raw_os_error(errno);
    Some(format!("{what} failed: {cause}. {}", fix(root)))
}

#[cfg(not(target_os = "linux"))]
fn probe(_root: bool) -> Option<String> {
    Some("the sandbox needs Linux namespaces; this system has none".into())
}

/// What the user can do about it.
fn fix(root: bool) -> &'static str {
    if root {
        "Run ARIA where the kernel allows namespaces (inside a container, start it with \
         --privileged or a seccomp profile that allows unshare and mount)"
    } else {
        "Allow unprivileged user namespaces: on Ubuntu 23.10 and later install ARIA's AppArmor \
         profile (`sudo install -m 644 contrib/apparmor/aria /etc/apparmor.d/aria && sudo \
         apparmor_parser -r /etc/apparmor.d/aria`); elsewhere set `sysctl \
         kernel.unprivileged_userns_clone=1` or `user.max_user_namespaces` above 0"
    }
}
