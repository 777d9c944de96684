//! Files protected for writes: the ones that configure ARIA or git (issue 15, "Configuration is
//! the user's").
//!
//! A model that could write `.env` (with `ARIA_CONFIG=./evil.toml`), `aria.toml`, `AGENTS.md`,
//! a git hook or `.git/config` (`core.fsmonitor`, `core.pager`, clean filters) could switch off
//! ARIA's protections for later runs or have git run a program of its choosing. Every write the
//! path guard approves therefore passes [`protection`]; reads are unaffected (the model may read
//! the instructions it is given). Unlike the sensitive-file patterns this list is not
//! configurable: the configuration is one of the things it protects.
//!
//! Matching is by path component and case-insensitive (on a case-insensitive file system
//! `.GIT/CONFIG` is `.git/config`). Names count anywhere below the root; the `.git` rules also
//! look at the root's own path, so a root inside a `.git` directory is covered too.

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

/// The protection that applies to writing the real path `real` inside `root`, if any.
pub(crate) fn protection(real: &Path, root: &Path) -> Option<Protection> {
    let below = real.strip_prefix(root).unwrap_or(real);
    for comp in below.components() {
        if let Some(p) = name_protection(&comp.as_os_str().to_string_lossy()) {
            return Some(p);
        }
    }
    git_protection(real)
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

/// `.git/hooks/...` and `.git/config` anywhere on the path, including those of submodules
/// (`.git/modules/NAME/`) and worktrees (`config.worktree`).
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
        _ => None,
    }
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
        assert_eq!(rule(".git/HEAD"), None);
        assert_eq!(rule(".git"), None);
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
