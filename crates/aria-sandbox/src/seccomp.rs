//! A tiny seccomp filter that completes the network block Landlock leaves open: without the
//! network grant, creating IPv4, IPv6 or packet sockets (so UDP and raw sockets too, which
//! Landlock does not cover) and setting up io_uring (which can create sockets without the
//! `socket` syscall) fail with `EACCES`. Unix sockets and everything else are untouched.
//!
//! The filter is a static BPF program, so installing it in the child allocates nothing.

/// Whether this build has a filter for the running architecture.
pub(crate) const SUPPORTED: bool =
    cfg!(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")));

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod filter {
    use libc::sock_filter;

    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
    /// x32 system calls on x86_64 carry this bit; they are denied outright.
    const X32_BIT: u32 = 0x4000_0000;

    const LD_ABS_W: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K

    // Offsets in struct seccomp_data: nr, arch, then args[0] (its low 32 bits on a
    // little-endian machine).
    const NR: u32 = 0;
    const ARCH_OFF: u32 = 4;
    const ARG0: u32 = 16;

    const fn op(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
        sock_filter { code, jt, jf, k }
    }

    const DENY: u32 = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;

    /// Jump offsets are relative to the next instruction; ALLOW is at 10, DENY at 11.
    pub(super) static PROGRAM: [sock_filter; 12] = [
        op(LD_ABS_W, 0, 0, ARCH_OFF),                     // 0
        op(JEQ_K, 0, 9, ARCH),                            // 1: foreign arch -> DENY
        op(LD_ABS_W, 0, 0, NR),                           // 2
        op(JGE_K, 7, 0, X32_BIT),                         // 3: x32 -> DENY
        op(JEQ_K, 0, 4, libc::SYS_socket as u32),         // 4: not socket -> 9
        op(LD_ABS_W, 0, 0, ARG0),                         // 5: domain
        op(JEQ_K, 4, 0, libc::AF_INET as u32),            // 6 -> DENY
        op(JEQ_K, 3, 0, libc::AF_INET6 as u32),           // 7 -> DENY
        op(JEQ_K, 2, 1, libc::AF_PACKET as u32),          // 8 -> DENY / ALLOW
        op(JEQ_K, 1, 0, libc::SYS_io_uring_setup as u32), // 9 -> DENY
        op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),         // 10: ALLOW
        op(RET_K, 0, 0, DENY),                            // 11: DENY
    ];
}

/// Installs the filter on the calling (child) thread. `no_new_privs` must already be set.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn install() -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: filter::PROGRAM.len() as libc::c_ushort,
        // The kernel only reads the program; the pointer is to an immutable static.
        filter: filter::PROGRAM.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points to a valid, 'static BPF program of `len` instructions; prctl
    // copies it into the kernel and does not keep the pointer. Async-signal-safe.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &prog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
pub(crate) fn install() -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}
