//! Which sandbox a program gets: the bridge between a tool's tier and [`aria_sandbox`].
//!
//! The classifier decides *whether to ask*; this module turns the decision into what the
//! kernel allows:
//! - **read tier**: every root read-only, only the named program (and the helpers it
//!   legitimately needs, e.g. `/usr/lib/git-core` for git) may execute;
//! - **recoverable writes** (snapshotted, run without asking in governed mode): roots writable,
//!   but still only the named program may execute — `tar -x --to-command=sh` writes, yet must
//!   not run code unasked;
//! - **irreversible** runs the user approved (and `python_run`, profiles): roots writable, any
//!   program may run.
//!
//! Either way the child sees only the roots, with sensitive files masked (`.env*`, keys,
//! `.ssh/`, …: found by walking the roots, cached briefly), `$ARIA_HOME` and ARIA's config
//! directory masked when a root contains them, and `.git/` plus the files that configure ARIA
//! or the project's agents read-only. A write-tier program that *creates* such a file (the
//! kernel cannot forbid a name pattern) has it removed afterwards, and the removal reported.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aria_sandbox::{ExecPolicy, SAFE_PATH, SpawnSpec};

use crate::guard::path::PathGuard;

/// How long a walk of a root stays valid when nothing ARIA ran could have changed it.
const WALK_TTL: Duration = Duration::from_secs(2);

/// The most entries a root may have: past this the walk for sensitive files would be too slow
/// to repeat, so programs are refused rather than run unchecked.
const MAX_ENTRIES: usize = 1_000_000;

/// The access a program is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Roots read-only; only the named program and its helpers may execute.
    Read,
    /// Roots writable; only the named program and its helpers may execute.
    Write,
    /// Roots writable; any program may run (approved or by design: python, profiles).
    Execute,
}

impl Access {
    /// The access a shell command of this tier gets.
    pub fn for_tier(tier: aria_api::Tier) -> Access {
        match tier {
            aria_api::Tier::Read => Access::Read,
            aria_api::Tier::RecoverableWrite => Access::Write,
            _ => Access::Execute,
        }
    }

    /// Whether the roots are writable (the run may create configuration files to clean up).
    pub fn writes(self) -> bool {
        self != Access::Read
    }
}

/// What one walk of a root found.
#[derive(Debug, Clone, Default)]
struct Found {
    /// Sensitive files and directories (masked).
    sensitive: Vec<PathBuf>,
    /// `.git` directories (read-only).
    git: Vec<PathBuf>,
    /// Files that configure ARIA or agents: `aria.toml`, `AGENTS.md`, `ARIA.md`, `.env*`.
    config: Vec<PathBuf>,
}

static CACHE: Mutex<Option<HashMap<PathBuf, (Instant, Found)>>> = Mutex::new(None);

/// Forgets every cached walk (after a program that may have written ran).
pub(crate) fn invalidate() {
    if let Ok(mut cache) = CACHE.lock() {
        *cache = None;
    }
}

fn found(guard: &PathGuard, root: &Path) -> Result<Found, String> {
    if let Ok(cache) = CACHE.lock()
        && let Some((at, f)) = cache.as_ref().and_then(|c| c.get(root))
        && at.elapsed() < WALK_TTL
    {
        return Ok(f.clone());
    }
    let f = walk(guard, root)?;
    if let Ok(mut cache) = CACHE.lock() {
        cache
            .get_or_insert_with(HashMap::new)
            .insert(root.to_path_buf(), (Instant::now(), f.clone()));
    }
    Ok(f)
}

/// A file that configures ARIA or agents: the path guard's write-protected names.
fn is_config_name(name: &str) -> bool {
    crate::guard::protected::name_protection(name).is_some()
}

/// Walks `root` without following links, not descending into `.git` or masked directories.
fn walk(guard: &PathGuard, root: &Path) -> Result<Found, String> {
    let mut f = Found::default();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(format!(
                    "the root {} has more than {MAX_ENTRIES} entries, too many to check for \
                     sensitive files before each command; give a smaller root with --root",
                    root.display()
                ));
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if guard.sensitive().matching(&name).is_some() {
                f.sensitive.push(path);
                continue;
            }
            if name == ".git" {
                // A `.git` file names the git directory (`gitdir: ...`): that one is the
                // repository's history, wherever it lies in the roots.
                if !is_dir && let Some(gitdir) = gitdir_of(guard, &path) {
                    f.git.push(gitdir);
                }
                f.git.push(path);
                continue;
            }
            // A git directory by another name (a bare repository, a `--separate-git-dir`).
            if is_dir && crate::guard::protected::is_git_directory(&path) {
                f.git.push(path);
                continue;
            }
            if is_config_name(&name) {
                f.config.push(path.clone());
            }
            if is_dir {
                stack.push(path);
            }
        }
    }
    Ok(f)
}

/// The git directory a `.git` file points to (`gitdir: PATH`, relative to the file's
/// directory), if it is one and lies inside a root (the sandbox shows nothing else).
fn gitdir_of(guard: &PathGuard, dotgit: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dotgit).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let dir = dotgit.parent()?.join(target);
    let real = std::fs::canonicalize(dir).ok()?;
    (guard.root_of(&real).is_some() && crate::guard::protected::is_git_directory(&real))
        .then_some(real)
}

/// The sandbox for `argv` run in `cwd` with `access`, confined to `guard`'s roots.
pub fn spawn_spec(
    guard: &PathGuard,
    argv: Vec<String>,
    cwd: PathBuf,
    access: Access,
) -> Result<SpawnSpec, String> {
    let roots = guard.roots().to_vec();
    let only = || {
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        ExecPolicy::Only { helpers: helpers_of(&words) }
    };
    let (writable, exec) = match access {
        Access::Read => (false, only()),
        Access::Write => (true, only()),
        Access::Execute => (true, ExecPolicy::Any),
    };
    let mut spec = SpawnSpec::new(argv, cwd, roots.clone());
    if writable {
        spec = spec.writable();
    }
    spec.exec = exec;
    for root in &roots {
        let f = found(guard, root)?;
        spec.masked.extend(f.sensitive);
        spec.read_only.extend(f.git);
        spec.read_only.extend(f.config);
        spec.masked.extend(guard.aria_dirs_within(root));
    }
    Ok(spec)
}

/// The configuration files present under the roots now (fresh walk), to compare after a run.
pub(crate) fn config_files(guard: &PathGuard) -> Vec<PathBuf> {
    invalidate();
    let mut out = Vec::new();
    for root in guard.roots() {
        if let Ok(f) = found(guard, root) {
            out.extend(f.config);
            out.extend(
                f.sensitive.into_iter().filter(|p| {
                    p.file_name().is_some_and(|n| is_config_name(&n.to_string_lossy()))
                }),
            );
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Removes configuration files a program created (not in `before`) and says which.
pub(crate) fn remove_created_config(guard: &PathGuard, before: &[PathBuf]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for path in config_files(guard) {
        if before.binary_search(&path).is_ok() {
            continue;
        }
        let gone = if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if gone.is_ok() {
            removed.push(path);
        }
    }
    invalidate();
    removed
}

/// What a read-tier program may execute besides itself: programs it legitimately runs (git's
/// own helpers, tar's decompressors) and the program a wrapper (`xargs`, `env`, `timeout`,
/// `nice`, `nohup`, `stdbuf`) starts.
pub fn helpers_of(argv: &[&str]) -> Vec<PathBuf> {
    let Some(program) = argv.first() else { return Vec::new() };
    let name = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned());
    let mut out = Vec::new();
    match name.as_deref() {
        Some("git") => {
            for dir in [
                "/usr/lib/git-core",
                "/usr/libexec/git-core",
                "/usr/local/libexec/git-core",
                "/usr/local/lib/git-core",
            ] {
                if Path::new(dir).is_dir() {
                    out.push(PathBuf::from(dir));
                }
            }
        }
        Some("tar") => {
            for tool in ["gzip", "bzip2", "xz", "zstd", "lzip", "lzma", "lzop", "compress"] {
                out.extend(in_safe_path(tool));
            }
        }
        Some("xargs" | "env" | "timeout" | "nice" | "nohup" | "stdbuf") => {
            match wrapped(argv) {
                Some(inner) => {
                    out.extend(in_safe_path(inner[0]));
                    out.extend(helpers_of(inner));
                }
                // xargs with no command runs echo.
                None if name.as_deref() == Some("xargs") => out.extend(in_safe_path("echo")),
                None => {}
            }
        }
        _ => {}
    }
    out
}

/// The command a wrapper runs: after its options (and, for `env`, assignments; for `timeout`,
/// the duration; for `xargs`, options with values).
fn wrapped<'a, 'b>(argv: &'b [&'a str]) -> Option<&'b [&'a str]> {
    let name = Path::new(argv[0]).file_name()?.to_string_lossy().into_owned();
    let takes_value: &[&str] = match name.as_str() {
        "xargs" => &["-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s"],
        "timeout" => &["-k", "-s"],
        "nice" => &["-n"],
        "stdbuf" => &["-i", "-o", "-e"],
        "env" => &["-u", "-C", "-S"],
        _ => &[],
    };
    let mut i = 1;
    while i < argv.len() {
        let w = argv[i];
        if w == "--" {
            i += 1;
            break;
        }
        if w.starts_with('-') && w.len() > 1 {
            i += if takes_value.contains(&w) { 2 } else { 1 };
            continue;
        }
        if name == "env" && w.contains('=') {
            i += 1;
            continue;
        }
        break;
    }
    if name == "timeout" {
        i += 1; // the duration
    }
    argv.get(i..).filter(|rest| !rest.is_empty())
}

fn in_safe_path(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    SAFE_PATH.split(':').map(|d| Path::new(d).join(program)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_name_the_program_they_run() {
        assert_eq!(wrapped(&["xargs", "-n", "1", "cat"]), Some(&["cat"][..]));
        assert_eq!(wrapped(&["env", "A=b", "grep", "x"]), Some(&["grep", "x"][..]));
        assert_eq!(wrapped(&["timeout", "-s", "KILL", "5", "ls"]), Some(&["ls"][..]));
        assert_eq!(wrapped(&["xargs"]), None);
        let helpers = helpers_of(&["xargs", "-0", "cat"]);
        assert!(helpers.iter().any(|p| p.ends_with("cat")), "{helpers:?}");
        assert!(helpers_of(&["cat", "x"]).is_empty());
    }
}
