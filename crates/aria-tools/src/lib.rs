//! Guards and built-in tools of ARIA.
//!
//! This crate owns the checks that stand between what a model asks for and what happens on the
//! machine, and the built-in tools that rely on them:
//!
//! - [`PathGuard`] confines file paths to the configured roots and refuses sensitive files
//!   (`.env*`, keys, `.ssh/`, ...). It resolves a path one component at a time in user space,
//!   judging every symlink by where it really lands, and hands tools a canonical path to open.
//!   [`PathGuard::read_text`] then re-checks the opened file's identity to narrow the gap
//!   between check and use. Writes never reach the files that configure ARIA or git (`.env*`,
//!   `aria.toml`, `AGENTS.md`, anything in a git directory), and ARIA's own directories are
//!   off limits even inside a root.
//! - [`SecretRedactor`] implements [`aria_api::Redact`]: known secret values and well-known token
//!   formats, `.env`-style assignments, credentials in URLs and high-entropy tokens become
//!   `[REDACTED:kind]` in logs, audit payloads and model input.
//! - [`InjectionFilter`] finds instructions aimed at the model inside tool output (ignore
//!   previous instructions, role play, forged role markers, hidden text, exfiltration requests)
//!   and neutralises them in place with a visible marker.
//! - [`SsrfPolicy`] decides which URLs and addresses `web_fetch` may reach: public addresses
//!   only unless the user allows their own hosts, odd IP spellings judged as the address they
//!   mean, and every DNS answer checked inside the resolver the HTTP client connects through.
//! - The tools (`file_read`, `file_list`, `shell_execute`) implement [`aria_api::Tool`];
//!   [`builtin_tools`] in `registry.rs` is the one list of what the model can call.
//!   `shell_execute` runs what [`shell`] parsed and classified through `aria-sandbox`, and
//!   `python_run` runs `python3 -I -B` there with an empty environment and no network.
//!   `file_write` and `apply_patch` (unified diffs parsed and applied in memory by [`patch`])
//!   write atomically: a temp file in the target's directory, opened beneath the root without
//!   following links (`aria_sandbox::BeneathDir`), renamed over the target; a multi-file patch
//!   lands whole or is put back.
//! - [`Snapshots`] (`snapshot/`) records the whole working tree of a git repository as a commit
//!   on a `snapshot/<operation>-<time>` branch before a write — in a private index, never
//!   touching the user's HEAD, index or files — and rolls back to any of them.
//!
//! It deliberately does not decide *whether* a call may run (that is the policy broker in
//! `aria-core`), spawn processes (`aria-sandbox`), or cap and wrap tool output for the model
//! (the agent loop, which calls the filters here). Unix only for now: file identity is device + inode.
//!
//! The one design decision to know: **paths are resolved, then the resolved path is used.** The
//! text the model wrote is never handed to the operating system. Everything the guard approves
//! is a real, symlink-free path inside a root, or the guard says which rule refused it and what
//! to do instead — every refusal reason is written to be shown to the model and the user as is.
//! The remaining race (a directory swapped between check and use) is closed by opening beneath
//! the root's directory handle without following links (`openat2(RESOLVE_BENEATH)` for reads,
//! `openat(O_NOFOLLOW)` per component for writes) in `aria-sandbox`, the only crate allowed
//! `unsafe`.
//!
//! Why the guards and the shell's parser and classifier live here and not in a crate of their
//! own (decided 2026-11-24): the decisions are already separable where it
//! matters — `shell::parse`/`shell::classify`, the secret and injection filters and the patch
//! parser are pure functions over text, fuzzed alone (`fuzz/`: `shell_classify`,
//! `path_guard`, `patch_parse`) and reachable alone through `aria check command|path|secrets|
//! injection`. The path guard is not pure and should not be: its safety is that it resolves
//! paths on the real filesystem, one component at a time, and hands tools the resolved path
//! and directory handles, which ties it to the tools that open files. A crate boundary would
//! split the guard from the only code allowed to use what it resolved, and add a public API
//! surface between them that an attacker's path could cross. Revisit when a second consumer
//! (the MCP server, the daemon's HTTP checks) needs the pure parts without the tools.

pub mod confine;
pub mod guard;
pub mod patch;
pub mod plugins;
pub mod profiles;
pub mod registry;
pub mod shell;
pub mod snapshot;
pub mod tools;

pub use guard::described::{
    Described, MAX_TOOL_DESCRIPTION_CHARS, describe_outside, describe_schema_outside,
};
pub use guard::entropy::{ENTROPY_MIN_LEN, ENTROPY_THRESHOLD, shannon_entropy};
pub use guard::injection::{
    InjectionFilter, InjectionFinding, InjectionKind, Neutralised, Scan as InjectionScan,
};
pub use guard::path::{AriaDir, FileKind, GuardError, PathError, PathGuard, PathRefusal, Resolved};
pub use guard::read::{BINARY_SNIFF_BYTES, DEFAULT_MAX_READ_BYTES, ReadError};
pub use guard::secrets::{MIN_KNOWN_SECRET_LEN, Redacted, SecretRedactor};
pub use guard::sensitive::SensitivePatterns;
pub use guard::ssrf::{AddrClass, AllowedHostError, SsrfPolicy, SsrfRefusal, classify_ip};
pub use profiles::{
    Chosen, ProfileBudget, ProfileConfig, ProfileError, ProfileRun, ProfileSpec, Profiles,
    run_profile,
};
pub use registry::{
    ToolSettings, builtin_tool_names, builtin_tools, builtin_tools_with, tools_with_profiles,
};
pub use snapshot::{Rollback, Snapshot, SnapshotError, SnapshotId, SnapshotOptions, Snapshots};
pub use tools::apply_patch::ApplyPatch;
pub use tools::file_edit::FileEdit;
pub use tools::file_insert::FileInsert;
pub use tools::file_list::{FileList, MAX_LIST_ENTRIES};
pub use tools::file_read::FileRead;
pub use tools::file_search::{
    DEFAULT_SEARCH_BUDGET, DEFAULT_SEARCH_RESULTS, FileSearch, MAX_LINE_CHARS,
    MAX_SEARCH_OUTPUT_BYTES, MAX_SEARCH_RESULTS,
};
pub use tools::file_write::{FileWrite, MAX_WRITE_BYTES};
pub use tools::git_commit::{COMMIT_TYPES, Committed, GitCommit, check_commit_message, commit_in};
pub use tools::git_diff::{GitDiff, MAX_DIFF_BYTES};
pub use tools::git_log::{GitLog, MAX_LOG_LIMIT};
pub use tools::git_status::{GitStatus, MAX_STATUS_ENTRIES};
pub use tools::python_run::{
    DEFAULT_PYTHON_TIMEOUT, MAX_INLINE_CODE_BYTES, MAX_SCRIPT_BYTES, PYTHON_ENV_ALLOWLIST,
    PythonRun, find_python3,
};
pub use tools::run_profile::RunProfile;
pub use tools::shell_execute::{DEFAULT_SHELL_TIMEOUT, ShellExecute, command_verdict};
pub use tools::system_info::{SystemInfo, TOP_PROCESSES};
pub use tools::web_fetch::ensure_crypto_provider;
pub use tools::web_fetch::{
    DEFAULT_FETCH_TIMEOUT, GuardedResolver, MAX_BODY_BYTES, MAX_FETCH_CHARS, MAX_REDIRECTS,
    WebFetch,
};
