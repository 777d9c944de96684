//! The egress listener's trip out of the child's network namespace: the keeper brings `lo` up
//! and listens on `127.0.0.1:EGRESS_PORT` inside the namespace, then sends the listening socket
//! to ARIA over a socket pair with `SCM_RIGHTS`. ARIA cannot enter the namespace itself
//! (`setns` needs privileges an unprivileged ARIA lacks in the child's user namespace), but a
//! socket keeps the namespace it was made in, wherever its descriptor goes.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use super::EGRESS_PORT;

/// The socket pair's ends: ARIA keeps the first, the keeper inherits the second.
pub(crate) fn channel() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid two-int array for the kernel to fill.
    let r = unsafe {
        libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr())
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socketpair just returned these two descriptors, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Space for one control message carrying one descriptor, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct ControlBuf([u8; 64]);

/// Runs in the keeper, after it entered the new network namespace: brings `lo` up, makes the
/// listener and sends it over `channel`. Async-signal-safe: system calls on stack data only.
pub(crate) fn send_listener(channel: RawFd) -> io::Result<()> {
    // SAFETY: every call below takes integers or pointers to stack data that outlives it; no
    // allocation. Descriptors made here are closed before returning.
    unsafe {
        let ctl = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if ctl < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (dst, src) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let mut r = libc::ioctl(ctl, libc::SIOCGIFFLAGS, &mut ifr);
        if r == 0 {
            ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            r = libc::ioctl(ctl, libc::SIOCSIFFLAGS, &ifr);
        }
        let err = io::Error::last_os_error();
        libc::close(ctl);
        if r != 0 {
            return Err(err);
        }

        let listener = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if listener < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut sin: libc::sockaddr_in = std::mem::zeroed();
        sin.sin_family = libc::AF_INET as libc::sa_family_t;
        sin.sin_port = EGRESS_PORT.to_be();
        sin.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let mut r = libc::bind(listener, (&sin as *const libc::sockaddr_in).cast(), len);
        if r == 0 {
            r = libc::listen(listener, 128);
        }
        if r == 0 {
            r = send_fd(channel, listener);
        }
        let err = io::Error::last_os_error();
        libc::close(listener);
        if r != 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// Sends `fd` over the unix socket `channel`: 0 on success, -1 with errno set.
///
/// # Safety
/// Async-signal-safe; `channel` and `fd` must be open descriptors.
unsafe fn send_fd(channel: RawFd, fd: RawFd) -> libc::c_int {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = ControlBuf([0; 64]);
    // SAFETY: msghdr is plain data; zeroed is a valid value. The pointers set below point to
    // stack data that outlives sendmsg. CMSG_SPACE/CMSG_LEN/CMSG_FIRSTHDR/CMSG_DATA are pointer
    // arithmetic on that buffer, which is large and aligned enough for one descriptor.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            *libc::__errno_location() = libc::EINVAL;
            return -1;
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(channel, &msg, libc::MSG_NOSIGNAL) == 1 { 0 } else { -1 }
    }
}

/// Receives the listener the keeper sent; the keeper sends it before `spawn` returns, so this
/// does not wait. An error when nothing arrived.
pub(crate) fn receive_listener(channel: &OwnedFd) -> io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = ControlBuf([0; 64]);
    // SAFETY: as in `send_fd`: stack buffers that outlive recvmsg, and CMSG_* arithmetic within
    // the control buffer the kernel filled (msg_controllen bounds it).
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = control.0.len() as _;
        let n = libc::recvmsg(
            channel.as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        );
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if n != 1
            || cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(io::Error::other("the sandbox sent no egress listener"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}
