//! A small seccomp filter, built per run in the parent and installed in the child just before
//! `execve`. It can:
//! - complete the network block Landlock and the network namespace leave open: creating IPv4,
//!   IPv6 or packet sockets and setting up io_uring (which can create sockets without the
//!   `socket` syscall) fail with `EACCES`;
//! - allow exactly one `execve`: the one whose path pointer is the sandbox's own (the program
//!   it starts). After that exec the address space is new, so the program cannot execute
//!   anything — not `/bin/sh`, not the dynamic loader with a program as argument. `execveat`
//!   is refused.
//!
//! Everything else is allowed. The program is a fixed-size array, so installing it in the
//! child allocates nothing.

/// Whether this build has a filter for the running architecture.
pub(crate) const SUPPORTED: bool =
    cfg!(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")));

/// What the filter refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    /// Refuse IP and packet sockets and io_uring.
    pub(crate) block_sockets: bool,
    /// Allow `execve` only with this path pointer (the sandbox's own exec); refuse `execveat`.
    pub(crate) exec_once: Option<usize>,
}

impl Rules {
    pub(crate) fn any(&self) -> bool {
        self.block_sockets || self.exec_once.is_some()
    }
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod filter {
    use libc::sock_filter;

    use super::Rules;

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

    // Offsets in struct seccomp_data: nr, arch, then args[0] (low and high 32 bits on a
    // little-endian machine).
    const NR: u32 = 0;
    const ARCH_OFF: u32 = 4;
    const ARG0_LO: u32 = 16;
    const ARG0_HI: u32 = 20;

    const DENY: u32 = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;

    /// Most instructions a filter has (arch, x32, sockets, io_uring, execve, execveat, returns).
    pub(crate) const MAX: usize = 24;

    /// Where a jump goes.
    #[derive(Clone, Copy)]
    enum To {
        Next,
        Allow,
        Deny,
        /// Past the current group (the instruction after the group's last one).
        EndOfGroup,
    }

    /// A fixed-capacity program, filled in the parent.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Program {
        pub(crate) ops: [sock_filter; MAX],
        pub(crate) len: usize,
    }

    struct Builder {
        ops: Vec<(u16, To, To, u32)>,
        group_ends: Vec<usize>,
    }

    impl Builder {
        fn op(&mut self, code: u16, jt: To, jf: To, k: u32) {
            self.ops.push((code, jt, jf, k));
        }
        /// Starts a group of instructions; `EndOfGroup` jumps inside it land after it.
        fn group(&mut self, body: impl FnOnce(&mut Builder)) {
            let start = self.ops.len();
            body(self);
            let end = self.ops.len();
            self.group_ends.resize(end, end);
            for e in &mut self.group_ends[start..end] {
                *e = end;
            }
        }
    }

    pub(crate) fn build(rules: Rules) -> Program {
        let mut b = Builder { ops: Vec::new(), group_ends: Vec::new() };
        b.group(|b| {
            b.op(LD_ABS_W, To::Next, To::Next, ARCH_OFF);
            b.op(JEQ_K, To::Next, To::Deny, ARCH);
            b.op(LD_ABS_W, To::Next, To::Next, NR);
            b.op(JGE_K, To::Deny, To::Next, X32_BIT);
        });
        if rules.block_sockets {
            b.group(|b| {
                b.op(JEQ_K, To::Next, To::EndOfGroup, libc::SYS_socket as u32);
                b.op(LD_ABS_W, To::Next, To::Next, ARG0_LO);
                b.op(JEQ_K, To::Deny, To::Next, libc::AF_INET as u32);
                b.op(JEQ_K, To::Deny, To::Next, libc::AF_INET6 as u32);
                b.op(JEQ_K, To::Deny, To::Allow, libc::AF_PACKET as u32);
            });
            b.group(|b| b.op(JEQ_K, To::Deny, To::Next, libc::SYS_io_uring_setup as u32));
        }
        if let Some(ptr) = rules.exec_once {
            let ptr = ptr as u64;
            b.group(|b| {
                b.op(JEQ_K, To::Next, To::EndOfGroup, libc::SYS_execve as u32);
                b.op(LD_ABS_W, To::Next, To::Next, ARG0_LO);
                b.op(JEQ_K, To::Next, To::Deny, ptr as u32);
                b.op(LD_ABS_W, To::Next, To::Next, ARG0_HI);
                b.op(JEQ_K, To::Allow, To::Deny, (ptr >> 32) as u32);
            });
            b.group(|b| b.op(JEQ_K, To::Deny, To::Next, libc::SYS_execveat as u32));
        }
        let allow = b.ops.len();
        let deny = allow + 1;
        let mut ops = [sock_filter { code: 0, jt: 0, jf: 0, k: 0 }; MAX];
        for (i, (code, jt, jf, k)) in b.ops.iter().enumerate() {
            let target = |to: To| -> u8 {
                let dest = match to {
                    To::Next => i + 1,
                    To::Allow => allow,
                    To::Deny => deny,
                    To::EndOfGroup => b.group_ends[i],
                };
                // Every jump is forward and the program is far shorter than 255 instructions.
                u8::try_from(dest - i - 1).unwrap_or(u8::MAX)
            };
            ops[i] = sock_filter { code: *code, jt: target(*jt), jf: target(*jf), k: *k };
        }
        ops[allow] = sock_filter { code: RET_K, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW };
        ops[deny] = sock_filter { code: RET_K, jt: 0, jf: 0, k: DENY };
        Program { ops, len: deny + 1 }
    }
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) use filter::{Program, build};

/// Installs `program` on the calling (child) thread. `no_new_privs` must already be set.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn install(program: &Program) -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: program.len as libc::c_ushort,
        // The kernel only reads the program.
        filter: program.ops.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points to a valid BPF program of `len` instructions that outlives the
    // call; prctl copies it into the kernel and does not keep the pointer. Async-signal-safe.
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
#[derive(Debug, Clone, Copy)]
pub(crate) struct Program;

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
pub(crate) fn build(_rules: Rules) -> Program {
    Program
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
pub(crate) fn install(_program: &Program) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}
