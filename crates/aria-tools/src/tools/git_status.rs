//! `git_status {path}`: branch, HEAD, staged, unstaged, untracked and conflicted files of the
//! repository `path` is in, or of every repository beneath `path`.

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use git2::{BranchType, Repository, RepositoryOpenFlags, Status, StatusOptions};
use serde_json::{Value, json};

use crate::guard::path::PathGuard;
use crate::tools::git_repo::{self, MAX_REPOS, Repo, Selection};
use crate::tools::{blocking, roots_sentence};

mod stat_cache;

/// Entries listed per section; the counts are always complete.
pub const MAX_STATUS_ENTRIES: usize = 200;

/// Reports the state of one or several repositories. Tier: read.
#[derive(Debug)]
pub struct GitStatus {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl GitStatus {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "git_status";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: Self::NAME.to_owned(),
            description: format!(
                "Show git status: branch, last commit, staged, modified, untracked and conflicted \
                 files. A path inside a repository shows that repository; a directory holding \
                 several repositories (such as a root) shows each of them. Paths are inside {}.",
                roots_sentence(&guard)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "A file or directory inside a repository, or a directory holding repositories."
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        };
        GitStatus { guard, spec }
    }
}

impl Tool for GitStatus {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let usage = "git_status takes \"path\": a directory or file inside the roots";
            let map = git_repo::object(Self::NAME, &args, &["path"], usage)?;
            let input = git_repo::req_str(Self::NAME, map, "path", usage)?;
            let guard = Arc::clone(&self.guard);
            blocking(Self::NAME, move || status_of(&guard, &input)).await
        })
    }
}

/// The status text and details for what `input` selects. Public to the crate for the bench.
pub(crate) fn status_of(guard: &PathGuard, input: &str) -> Result<ToolOutput, ToolError> {
    match git_repo::select(guard, input)? {
        Selection::Inside(repo) => {
            let report = RepoStatus::read(&repo)?;
            let text = report.render();
            Ok(ToolOutput::text(text).with_details(json!({"repositories": [report.details()]})))
        }
        Selection::Beneath { dir, repos, more } => {
            if repos.is_empty() {
                return Err(ToolError::failed(format!(
                    "{} is not inside a git repository and holds none (looked {} levels deep); \
                     give a path inside a repository",
                    dir.display(),
                    git_repo::MAX_REPO_DEPTH
                )));
            }
            let mut text = format!("{} git repositories under {}", repos.len(), dir.display());
            if more {
                text.push_str(&format!(" (only the first {MAX_REPOS} are shown)"));
            }
            text.push_str("\n\n");
            let mut details = Vec::new();
            for repo in &repos {
                match RepoStatus::read(repo) {
                    Ok(report) => {
                        text.push_str(&report.render());
                        details.push(report.details());
                    }
                    Err(e) => text.push_str(&format!("{}: {e}\n", repo.workdir.display())),
                }
                text.push('\n');
            }
            Ok(ToolOutput::text(text).with_details(json!({"repositories": details})))
        }
    }
}

/// One repository's status.
#[derive(Debug, Default)]
pub(crate) struct RepoStatus {
    pub(crate) workdir: String,
    pub(crate) branch: Option<String>,
    pub(crate) head: Option<String>,
    pub(crate) upstream: Option<(String, usize, usize)>,
    pub(crate) staged: Vec<(char, String)>,
    pub(crate) unstaged: Vec<(char, String)>,
    pub(crate) untracked: Vec<String>,
    pub(crate) conflicted: Vec<String>,
    pub(crate) snapshots: usize,
}

impl RepoStatus {
    /// The status of `r`, read against ARIA's private stat cache of the index
    /// ([`stat_cache`]) when it can be used, so files whose stat data changed but not their
    /// content are hashed once, not on every call; the user's index is never written.
    pub(crate) fn read(r: &Repo) -> Result<RepoStatus, ToolError> {
        let repo = &r.repo;
        let statuses = match stat_cache::attach(repo) {
            Some(_cache) => match statuses(repo, true) {
                Ok(found) => found,
                // The cache could not be refreshed (another process holds its lock, a full
                // disk): read the status against the user's index as it is.
                Err(_) => statuses(&reopen(r)?, false)?,
            },
            None => statuses(repo, false)?,
        };
        let mut out = RepoStatus {
            workdir: r.workdir.display().to_string(),
            branch: git_repo::branch(repo),
            head: head_line(repo),
            upstream: upstream(repo),
            snapshots: snapshot_branches(repo),
            ..RepoStatus::default()
        };
        for (s, path) in statuses {
            if s.is_conflicted() {
                out.conflicted.push(path);
                continue;
            }
            if s.is_wt_new() {
                out.untracked.push(path);
                continue;
            }
            if let Some(c) = index_code(s) {
                out.staged.push((c, path.clone()));
            }
            if let Some(c) = worktree_code(s) {
                out.unstaged.push((c, path));
            }
        }
        Ok(out)
    }

    pub(crate) fn is_clean(&self) -> bool {
        self.staged.is_empty()
            && self.unstaged.is_empty()
            && self.untracked.is_empty()
            && self.conflicted.is_empty()
    }

    pub(crate) fn render(&self) -> String {
        let mut text = format!("repository {}\n", self.workdir);
        match &self.branch {
            Some(b) => text.push_str(&format!("branch: {b}")),
            None => text.push_str("branch: (detached HEAD)"),
        }
        if let Some((up, ahead, behind)) = &self.upstream {
            text.push_str(&format!(" (tracking {up}: {ahead} ahead, {behind} behind)"));
        }
        text.push('\n');
        match &self.head {
            Some(h) => text.push_str(&format!("last commit: {h}\n")),
            None => text.push_str("last commit: none yet\n"),
        }
        if self.snapshots > 0 {
            text.push_str(&format!("snapshot branches: {}\n", self.snapshots));
        }
        if self.is_clean() {
            text.push_str("working tree clean\n");
            return text;
        }
        section(&mut text, "staged", self.staged.iter().map(|(c, p)| format!("{} {p}", word(*c))));
        section(
            &mut text,
            "not staged",
            self.unstaged.iter().map(|(c, p)| format!("{} {p}", word(*c))),
        );
        section(&mut text, "untracked", self.untracked.iter().cloned());
        section(&mut text, "conflicted", self.conflicted.iter().cloned());
        text
    }

    pub(crate) fn details(&self) -> Value {
        json!({
            "workdir": self.workdir,
            "branch": self.branch,
            "staged": self.staged.len(),
            "unstaged": self.unstaged.len(),
            "untracked": self.untracked.len(),
            "conflicted": self.conflicted.len(),
        })
    }
}

fn section(text: &mut String, title: &str, items: impl ExactSizeIterator<Item = String>) {
    let total = items.len();
    if total == 0 {
        return;
    }
    text.push_str(&format!("{title} ({total}):\n"));
    for item in items.take(MAX_STATUS_ENTRIES) {
        text.push_str(&format!("  {item}\n"));
    }
    if total > MAX_STATUS_ENTRIES {
        text.push_str(&format!("  … and {} more\n", total - MAX_STATUS_ENTRIES));
    }
}

fn word(code: char) -> &'static str {
    match code {
        'A' => "new:",
        'D' => "deleted:",
        'R' => "renamed:",
        'T' => "typechange:",
        _ => "modified:",
    }
}

fn index_code(s: Status) -> Option<char> {
    if s.is_index_new() {
        Some('A')
    } else if s.is_index_modified() {
        Some('M')
    } else if s.is_index_deleted() {
        Some('D')
    } else if s.is_index_renamed() {
        Some('R')
    } else if s.is_index_typechange() {
        Some('T')
    } else {
        None
    }
}

fn worktree_code(s: Status) -> Option<char> {
    if s.is_wt_modified() {
        Some('M')
    } else if s.is_wt_deleted() {
        Some('D')
    } else if s.is_wt_renamed() {
        Some('R')
    } else if s.is_wt_typechange() {
        Some('T')
    } else {
        None
    }
}

/// The status with untracked files (untracked directories not recursed into), without
/// ignored files and submodules, in path order. `refresh`: write refreshed stat data into the
/// repository's index — only ever set when that index is ARIA's private copy.
fn statuses(repo: &Repository, refresh: bool) -> Result<Vec<(Status, String)>, ToolError> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false)
        .exclude_submodules(true)
        .update_index(refresh);
    let statuses =
        repo.statuses(Some(&mut opts)).map_err(|e| git_repo::git_error("read the status", &e))?;
    Ok(statuses
        .iter()
        .map(|e| (e.status(), String::from_utf8_lossy(e.path_bytes()).into_owned()))
        .collect())
}

/// A fresh handle on the repository, with the user's own index.
fn reopen(r: &Repo) -> Result<Repository, ToolError> {
    Repository::open_ext(&r.workdir, RepositoryOpenFlags::NO_SEARCH, &[] as &[&std::path::Path])
        .map_err(|e| git_repo::git_error("open the repository", &e))
}

fn head_line(repo: &Repository) -> Option<String> {
    let commit = repo.head().ok()?.peel_to_commit().ok()?;
    let id = commit.id().to_string();
    let summary = commit.summary().ok().flatten().unwrap_or("").to_owned();
    Some(format!("{} {summary}", &id[..id.len().min(10)]))
}

fn upstream(repo: &Repository) -> Option<(String, usize, usize)> {
    let head = repo.head().ok()?;
    let name = head.shorthand().ok()?;
    let branch = repo.find_branch(name, BranchType::Local).ok()?;
    let up = branch.upstream().ok()?;
    let up_name = up.name().ok()??.to_owned();
    let (ahead, behind) = repo.graph_ahead_behind(head.target()?, up.get().target()?).ok()?;
    Some((up_name, ahead, behind))
}

fn snapshot_branches(repo: &Repository) -> usize {
    repo.references_glob("refs/heads/snapshot/*").map(|refs| refs.count()).unwrap_or(0)
}
