//! Runs one program for ARIA inside a sandbox.
//!
//! This crate owns what happens between "this argv may run" and the child's exit: the child
//! gets its argv (never `sh -c`), an empty environment plus an allowlist (a fixed `PATH`, a
//! private `TMPDIR`), a working directory inside a root, rlimits (CPU time, address space,
//! processes, file size), its own process group (killed whole on timeout, and when the program
//! exits, so nothing it started outlives the call), and stdout/stderr read concurrently and
//! capped. On Linux a Landlock ruleset lets the child read broadly but write only under the
//! roots and its private temp dir, and blocks TCP bind/connect unless network is granted; a
//! small seccomp filter also refuses IP and packet sockets (UDP, raw) and io_uring then. A
//! network grant is the internet, never this machine: the granted child still has a network
//! namespace of its own, with only loopback, and its one way out is ARIA's egress proxy
//! (`egress`), which resolves, checks ([`classify_ip`]: public addresses only, not this
//! machine's) and pins every destination, limits it to the grant's hosts
//! ([`EgressPolicy`]) and records it ([`EgressRecord`], on the [`Outcome`]). Every process of
//! the sandbox dies with ARIA (`PR_SET_PDEATHSIG`), even when ARIA is killed outright.
//! ARIA makes itself non-dumpable so children cannot read its environment (API keys) through
//! `/proc`, and a root ARIA empties the child's capability bounding set. [`open_beneath`]
//! opens a file strictly beneath a root (`openat2(RESOLVE_BENEATH)`), closing the gap between
//! a path check and the open.
//!
//! It deliberately does not decide *whether* a command may run (the classifier and the path
//! guard in `aria-tools`, the policy broker in `aria-core`) nor parse shell syntax: callers hand
//! it argv and already-opened file descriptors for redirects and pipes.
//!
//! The design decision to know: **protections are reported, never assumed.** The running
//! kernel is probed (Landlock ABI version), and every [`Outcome`] carries a [`Protections`]
//! list saying which protection was active for that run and, when one was not, why. Nothing is
//! silently downgraded into a claim; callers audit the list and `aria doctor` prints it. This is
//! the only crate of the workspace allowed `unsafe` (`pre_exec`, `setrlimit`, `killpg`, the
//! Landlock syscalls); every unsafe block says why it is sound.

mod beneath;
mod child;
mod egress;
mod elf;
mod memory;
mod mounts;
mod probe;
mod protect;
mod run;
mod seccomp;
mod spawner;
mod spec;

pub use beneath::{BeneathDir, EntryStat, OpenMode, open_beneath};
pub use egress::{
    AddrClass, EGRESS_PORT, EgressHook, EgressPolicy, EgressRecord, NetworkGrant, classify_ip,
};
pub use memory::release_unused_memory;
pub use mounts::is_system_path;
pub use protect::{KernelSupport, Protection, Protections, RunFacts};
pub use run::{Captured, ExitInfo, Outcome, Running, Sandbox};
pub use spec::{
    DEFAULT_ENV_ALLOWLIST, DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, ExecPolicy, Input, Limits, Output,
    RootAccess, SAFE_PATH, SandboxError, SpawnSpec,
};
