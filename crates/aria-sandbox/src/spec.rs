//! What to run and under which limits: [`SpawnSpec`], [`Limits`], stdio wiring, errors.

use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::Duration;

use crate::egress::EgressPolicy;

/// The only `PATH` a sandboxed program sees (and where `argv[0]` is looked up).
pub const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Environment variables copied from ARIA's own environment when set. `PATH` and `TMPDIR` are
/// always set by the sandbox itself.
pub const DEFAULT_ENV_ALLOWLIST: &[&str] = &["HOME", "LANG", "LC_ALL", "TERM"];

/// stdout and stderr are each kept up to this many bytes (the rest is read and dropped).
pub const DEFAULT_OUTPUT_CAP: usize = 100 * 1024;

/// How long a program may run by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Resource limits applied in the child with `setrlimit` before exec. `None` leaves a limit as
/// inherited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_CPU`: CPU seconds before SIGXCPU/SIGKILL.
    pub cpu_secs: Option<u64>,
    /// `RLIMIT_AS`: bytes of address space.
    pub address_space_bytes: Option<u64>,
    /// `RLIMIT_NPROC`: processes of the user (the kernel counts all of the user's processes,
    /// and exempts root).
    pub max_processes: Option<u64>,
    /// `RLIMIT_FSIZE`: the largest file the child may write.
    pub max_file_bytes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpu_secs: Some(60),
            address_space_bytes: Some(4 * 1024 * 1024 * 1024),
            max_processes: Some(4096),
            max_file_bytes: Some(1024 * 1024 * 1024),
        }
    }
}

/// Where the child's stdin comes from.
#[derive(Debug, Default)]
pub enum Input {
    /// `/dev/null`.
    #[default]
    Null,
    /// These bytes, written by a helper thread, then end of file.
    Bytes(Vec<u8>),
    /// An open descriptor (a file the caller opened after its checks, or a pipe's read end).
    Fd(OwnedFd),
}

/// Where stdout or stderr goes.
#[derive(Debug, Default)]
pub enum Output {
    /// Read concurrently into the [`crate::Outcome`], capped at [`SpawnSpec::output_cap`].
    #[default]
    Capture,
    /// `/dev/null`.
    Null,
    /// An open descriptor (a redirect target file, or a pipe's write end).
    Fd(OwnedFd),
    /// Wherever the other stream goes (`2>&1` on stderr, `>&2` on stdout).
    Merge,
}

/// Whether the roots are writable inside the sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootAccess {
    /// Every root is mounted read-only (read tier, `read_only` mode, `--dry-run`).
    #[default]
    ReadOnly,
    /// The roots are mounted read-write (write tiers), except [`SpawnSpec::read_only`] paths.
    ReadWrite,
}

/// Which programs the child may execute, enforced by the kernel (Landlock `EXECUTE` rights,
/// `noexec` mounts and, with no helpers, a seccomp filter that allows exactly one `execve`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecPolicy {
    /// Only the named program, its ELF interpreter (or a `#!` script's interpreter), and these
    /// helper files or directories (e.g. `/usr/lib/git-core`). The roots, `/tmp`, `/dev` and
    /// the system's program directories are mounted `noexec`. With no helpers the program can
    /// execute nothing at all after it starts.
    Only { helpers: Vec<PathBuf> },
    /// Any program the sandbox shows (write tiers: builds, test binaries, approved commands).
    Any,
}

impl Default for ExecPolicy {
    fn default() -> Self {
        ExecPolicy::Only { helpers: Vec::new() }
    }
}

/// One program to run.
#[derive(Debug)]
pub struct SpawnSpec {
    /// The program and its arguments. A program without `/` is looked up in [`SAFE_PATH`].
    pub argv: Vec<String>,
    /// Working directory; must be inside one of `write_roots`.
    pub cwd: PathBuf,
    /// Variables copied from ARIA's environment when set (see [`DEFAULT_ENV_ALLOWLIST`]).
    pub env_allowlist: Vec<String>,
    /// Variables set explicitly (`LANG=C sort`). `PATH`, `TMPDIR` and `LD_*` are refused.
    pub env: Vec<(String, String)>,
    pub limits: Limits,
    pub timeout: Duration,
    /// Bytes kept of each captured stream.
    pub output_cap: usize,
    /// The directories the child sees (at their own paths); `cwd` is inside one of them.
    /// Nothing else of the user's files is visible: only the system's runtime directories
    /// (read-only), a private `/tmp`, a minimal `/dev` and its own `/proc`.
    pub roots: Vec<PathBuf>,
    /// Whether [`SpawnSpec::roots`] are writable. Default: read-only.
    pub root_access: RootAccess,
    /// Which programs may run. Default: only the named one, which may execute nothing.
    pub exec: ExecPolicy,
    /// Files and directories hidden from the child (sensitive files, `$ARIA_HOME` inside a
    /// root): a file reads as empty, a directory as empty, and neither can be written.
    pub masked: Vec<PathBuf>,
    /// Paths inside the roots that stay read-only even in writable roots (`.git`, files that
    /// configure ARIA or the project's agents).
    pub read_only: Vec<PathBuf>,
    /// Further host directories shown read-only (a toolchain outside the system directories).
    pub extra_read: Vec<PathBuf>,
    /// Further host directories shown writable (a build tool's own cache).
    pub extra_write: Vec<PathBuf>,
    /// Whether the child may reach the network: through the egress proxy only, to public
    /// addresses only (see [`crate::EgressPolicy`]).
    pub network: bool,
    /// Which hosts a granted child may reach, and where its egress records go.
    pub egress: EgressPolicy,
    pub stdin: Input,
    pub stdout: Output,
    pub stderr: Output,
}

impl SpawnSpec {
    /// A spec with the defaults: allowlisted environment, default limits, 30 s, 100 KB,
    /// roots read-only, only the named program may execute, no network, stdin from
    /// `/dev/null`, both outputs captured.
    pub fn new(argv: Vec<String>, cwd: PathBuf, roots: Vec<PathBuf>) -> Self {
        SpawnSpec {
            argv,
            cwd,
            env_allowlist: DEFAULT_ENV_ALLOWLIST.iter().map(|s| (*s).to_owned()).collect(),
            env: Vec::new(),
            limits: Limits::default(),
            timeout: DEFAULT_TIMEOUT,
            output_cap: DEFAULT_OUTPUT_CAP,
            roots,
            root_access: RootAccess::ReadOnly,
            exec: ExecPolicy::default(),
            masked: Vec::new(),
            read_only: Vec::new(),
            extra_read: Vec::new(),
            extra_write: Vec::new(),
            network: false,
            egress: EgressPolicy::default(),
            stdin: Input::Null,
            stdout: Output::Capture,
            stderr: Output::Capture,
        }
    }

    /// Roots writable and any program executable: what a write tier gets.
    pub fn writable(mut self) -> Self {
        self.root_access = RootAccess::ReadWrite;
        self.exec = ExecPolicy::Any;
        self
    }
}

/// Why a program was not started.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("nothing to run: the argument list is empty")]
    EmptyArgv,
    #[error("no roots were given; the sandbox needs at least one directory to work in")]
    NoRoots,
    #[error(
        "the root {} is a system directory; give a project directory instead (ARIA never shows `/`, `/usr`, `/etc` or `/proc` to a program as a root)",
        root.display()
    )]
    SystemRoot { root: PathBuf },
    #[error("{0}")]
    Unavailable(String),
    #[error("the sandbox could not be set up ({step}: {source}); {hint}")]
    Setup {
        step: String,
        #[source]
        source: io::Error,
        hint: &'static str,
    },
    #[error(
        "the working directory {} is outside the allowed roots ({}); run inside a root",
        cwd.display(), roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    CwdOutsideRoots { cwd: PathBuf, roots: Vec<PathBuf> },
    #[error("the program {program:?} was not found in {SAFE_PATH}; check its name")]
    ProgramNotFound { program: String },
    #[error(
        "the environment variable {name} cannot be set for a sandboxed program (it would change which code runs or where temporary files go)"
    )]
    EnvNotAllowed { name: String },
    #[error("stdout and stderr cannot both be merged into each other")]
    MergeLoop,
    #[error("the Landlock ruleset could not be prepared: {message}")]
    Landlock { message: String },
    #[error("could not {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
}

impl SandboxError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> SandboxError {
        let what = what.into();
        move |source| SandboxError::Io { what, source }
    }
}

/// Names a caller may never set or allowlist.
pub(crate) fn forbidden_env(name: &str) -> bool {
    name == "PATH" || name == "TMPDIR" || name.starts_with("LD_") || name.starts_with("DYLD_")
}
