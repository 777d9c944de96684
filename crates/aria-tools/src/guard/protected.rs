//! Files protected for writes: the ones that configure ARIA, and everything in a git directory
//! (the configuration is the user's, never the model's).
//!
//! A model that could write `.env` (with `ARIA_CONFIG=./evil.toml`), `aria.toml`, `AGENTS.md`,
//! a git hook or `.git/config` (`core.fsmonitor`, `core.pager`, clean filters) could switch off
//! ARIA's protections for later runs or have git run a program of its choosing. Any other file
//! of a git directory (`HEAD`, the index, refs, packs, `info/exclude`) holds the repository's
//! history, and a git snapshot cannot capture the git directory itself: a write there would run
//! unasked as "recoverable" and could not be undone. Every write the path guard approves
//! therefore passes [`protection`]; reads are unaffected (the model may read the instructions it
//! is given, and `git log` reads `.git`). Unlike the sensitive-file patterns this list is not
//! configurable: the configuration is one of the things it protects.
//!
//! Matching is by path component and case-insensitive (on a case-insensitive file system
//! `.GIT/CONFIG` is `.git/config`). Names count anywhere below the root; the `.git` rules also
//! look at the root's own path, so a root inside a `.git` directory is covered too. A git
//! directory not named `.git` (a bare repository, or the one a `.git` *file* points to with
//! `gitdir: ...`, as `--separate-git-dir`, worktrees and submodules make) is recognised the way
//! git recognises one: a directory holding `HEAD`, `objects/` and `refs/`.

use std::path::Path;

/// Which rule protects a path, and why it exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Protection {
    /// The rule as shown to the user (`.env*`, `.git/hooks/`, ...).
    pub(crate) rule: &'static str,
    /// What the file does that makes writing it dangerous.
    pub(crate) why: &'static str,
}

const ENV: Protection = Protection {
    rule: ".env*",
    why: "`.env` files set environment variables for ARIA and the project's tools (API keys, ARIA_CONFIG)",
};
const ARIA_TOML: Protection = Protection {
    rule: "aria.toml",
    why: "aria.toml configures ARIA (roots, sensitive files, network access)",
};
const AGENTS: Protection = Protection {
    rule: "AGENTS.md / ARIA.md",
    why: "it holds the instructions agents follow in this project",
};
const GIT_HOOKS: Protection = Protection {
    rule: ".git/hooks/",
    why: "git runs the programs in .git/hooks/ on commit, checkout, merge and push",
};
const GIT_CONFIG: Protection = Protection {
    rule: ".git/config",
    why: "git's config can name programs git runs (core.fsmonitor, core.pager, clean and smudge filters)",
};
const GIT_DIR: Protection = Protection {
    rule: ".git/ (the git directory)",
    why: "the git directory holds the repository's history (HEAD, the index, refs, objects), which a snapshot cannot capture, so a write there could not be undone",
};

/// The protection that applies to writing the real path `real` inside `root`, if any.
pub(crate) fn protection(real: &Path, root: &Path) -> Option<Protection> {
    let below = real.strip_prefix(root).unwrap_or(real);
    for comp in below.components() {
        if let Some(p) = name_protection(&comp.as_os_str().to_string_lossy()) {
            return Some(p);
        }
    }
    git_protection(real).or_else(|| git_directory_protection(real, root))
}

/// The protection a single file name carries wherever it stands (`.env*`, `aria.toml`,
/// `AGENTS.md`, `ARIA.md`; case-insensitive).
pub(crate) fn name_protection(name: &str) -> Option<Protection> {
    let name = name.to_lowercase();
    if name.starts_with(".env") {
        return Some(ENV);
    }
    match name.as_str() {
        "aria.toml" => Some(ARIA_TOML),
        "agents.md" | "aria.md" => Some(AGENTS),
        _ => None,
    }
}

/// `.git` itself and everything in it, anywhere on the path, including submodules
/// (`.git/modules/NAME/`) and worktrees (`.git/worktrees/NAME/`); hooks and the config get
/// their own rule, which says what git would run.
fn git_protection(real: &Path) -> Option<Protection> {
    let names: Vec<String> =
        real.components().map(|c| c.as_os_str().to_string_lossy().to_lowercase()).collect();
    let git = names.iter().position(|n| n == ".git")?;
    let after = &names[git + 1..];
    if after.iter().any(|n| n == "hooks") {
        return Some(GIT_HOOKS);
    }
    match after.last().map(String::as_str) {
        Some("config" | "config.worktree") => Some(GIT_CONFIG),
        _ => Some(GIT_DIR),
    }
}

/// A git directory by another name on the way from `root` (included) to `real`: one a `.git`
/// file points to, or a bare repository. Only directories that exist are looked at.
fn git_directory_protection(real: &Path, root: &Path) -> Option<Protection> {
    let mut dir = real;
    loop {
        if is_git_directory(dir) {
            return Some(if real.strip_prefix(dir).is_ok_and(|r| r.starts_with("hooks")) {
                GIT_HOOKS
            } else if real.strip_prefix(dir).is_ok_and(|r| r == Path::new("config")) {
                GIT_CONFIG
            } else {
                GIT_DIR
            });
        }
        if dir == root || !dir.starts_with(root) {
            return None;
        }
        dir = dir.parent()?;
    }
}

/// What git itself checks (`is_git_directory`): `HEAD` naming a ref or a commit, `objects/`
/// and `refs/`.
pub(crate) fn is_git_directory(dir: &Path) -> bool {
    if !dir.join("objects").is_dir() || !dir.join("refs").is_dir() {
        return false;
    }
    let Ok(head) = std::fs::read(dir.join("HEAD")) else { return false };
    let head = String::from_utf8_lossy(&head[..head.len().min(512)]);
    let head = head.trim_end();
    head.starts_with("ref: refs/")
        || (head.len() >= 40 && head.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(rel: &str) -> Option<&'static str> {
        let root = Path::new("/r");
        protection(&root.join(rel), root).map(|p| p.rule)
    }

    #[test]
    fn names_and_git_files_are_recognised() {
        assert_eq!(rule(".env"), Some(".env*"));
        assert_eq!(rule("a/.ENV.local"), Some(".env*"));
        assert_eq!(rule("x/aria.toml"), Some("aria.toml"));
        assert_eq!(rule("Agents.MD"), Some("AGENTS.md / ARIA.md"));
        assert_eq!(rule(".git/hooks"), Some(".git/hooks/"));
        assert_eq!(rule(".git/modules/m/hooks/pre-push"), Some(".git/hooks/"));
        assert_eq!(rule(".git/config"), Some(".git/config"));
        assert_eq!(rule(".git/worktrees/w/config.worktree"), Some(".git/config"));
        assert_eq!(rule("src/config"), None);
        // Everything else in a git directory is protected too: writing `.git/HEAD`, the index,
        // refs or packs can destroy the history, and snapshots cannot capture `.git` to undo
        // it (this once asserted that `.git/HEAD` was writable).
        assert_eq!(rule(".git/HEAD"), Some(".git/ (the git directory)"));
        assert_eq!(rule(".git/objects/pack/pack-1.pack"), Some(".git/ (the git directory)"));
        assert_eq!(rule(".GIT/index"), Some(".git/ (the git directory)"));
        assert_eq!(rule(".git"), Some(".git/ (the git directory)"));
        assert_eq!(rule(".gitignore"), None);
        assert_eq!(rule(".github/workflows/ci.yml"), None);
        assert_eq!(rule("aria.toml.example"), None);
        assert_eq!(rule("my.env"), None);
    }

    #[test]
    fn names_in_the_root_itself_do_not_count_but_git_directories_do() {
        assert_eq!(protection(Path::new("/p/.env-stuff/x"), Path::new("/p/.env-stuff")), None);
        let git = Path::new("/p/.git");
        assert_eq!(protection(&git.join("config"), git).map(|p| p.rule), Some(".git/config"));
    }
}
