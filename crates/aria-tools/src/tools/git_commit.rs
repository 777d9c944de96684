//! `git_commit {path, message, files?}`: records a new commit on the current local branch of one
//! repository. The message must read `Type: summary` with a known type.
//!
//! Only forward: the new commit's parent is HEAD, nothing is pushed, amended, reset or
//! rebased, a detached HEAD is refused (local branches only), and a `snapshot/*` branch is never
//! committed to — those belong to the snapshot store. `files` stages just those paths (new,
//! changed or deleted); without it every change is staged, like `git add -A`, except sensitive
//! files, which are never staged and are named in the answer.

use std::path::Path;
use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use git2::{Index, IndexAddOption, Repository, Signature};
use serde_json::{Value, json};

use crate::guard::path::PathGuard;
use crate::tools::git_repo::{self, Repo};
use crate::tools::{blocking, roots_sentence};

/// The commit types a message may start with (each also capitalised: `Fix: …`).
pub const COMMIT_TYPES: &[&str] =
    &["feat", "fix", "docs", "refactor", "test", "chore", "style", "perf"];

/// The longest first line accepted.
pub const MAX_SUMMARY_CHARS: usize = 100;

/// Commits changes in one repository. Tier: recoverable write.
#[derive(Debug)]
pub struct GitCommit {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl GitCommit {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "git_commit";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: Self::NAME.to_owned(),
            description: format!(
                "Commit changes in one git repository on its current local branch. message must \
                 be \"Type: summary\" with Type one of {} (or capitalised, e.g. \"Fix: Resolve \
                 lint errors in auth.js\"). files: paths relative to the repository's top to \
                 commit; without it every change is committed (secrets files never are). No \
                 push, amend or history rewrite. Paths are inside {}.",
                COMMIT_TYPES.join("/"),
                roots_sentence(&guard)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A file or directory inside the repository."},
                    "message": {"type": "string", "description": "\"Type: summary\", e.g. \"Fix: Handle empty input\"."},
                    "files": {"type": "array", "items": {"type": "string"}, "description": "Files to commit, relative to the repository's top."}
                },
                "required": ["path", "message"],
                "additionalProperties": false
            }),
        };
        GitCommit { guard, spec }
    }
}

/// Checks a commit message: `Type: summary` on the first line, `Type` one of [`COMMIT_TYPES`]
/// in lower case or capitalised, a non-empty summary of at most [`MAX_SUMMARY_CHARS`], and a
/// blank line before any body. The error says what was wrong and the expected format.
pub fn check_commit_message(message: &str) -> Result<(), String> {
    let expected = format!(
        "the expected format is \"Type: summary\" with Type one of {} or capitalised (Fix, Feat, \
         ...), e.g. \"Fix: Resolve linting errors in auth.js\"",
        COMMIT_TYPES.join(", ")
    );
    let mut lines = message.lines();
    let first = lines.next().unwrap_or("");
    let Some((kind, summary)) = first.split_once(": ") else {
        return Err(format!("the message {first:?} has no \"Type: \" prefix; {expected}"));
    };
    let known = COMMIT_TYPES.iter().any(|t| kind == *t || kind == capitalised(t));
    if !known {
        return Err(format!("\"{kind}\" is not a commit type; {expected}"));
    }
    if summary.trim().is_empty() {
        return Err(format!("the summary after \"{kind}: \" is empty; {expected}"));
    }
    if first.chars().count() > MAX_SUMMARY_CHARS {
        return Err(format!(
            "the first line is {} characters long; keep it to {MAX_SUMMARY_CHARS} and put details in a body after a blank line",
            first.chars().count()
        ));
    }
    if let Some(second) = lines.next()
        && !second.trim().is_empty()
    {
        return Err("put a blank line between the summary and the body".to_owned());
    }
    Ok(())
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

struct Request {
    path: String,
    message: String,
    files: Option<Vec<String>>,
}

fn request(guard: &PathGuard, args: &Value) -> Result<Request, ToolError> {
    let tool = GitCommit::NAME;
    let usage = "git_commit takes \"path\", \"message\" (\"Type: summary\") and optionally \"files\" (list)";
    let map = git_repo::object(tool, args, &["path", "message", "files"], usage)?;
    let path = git_repo::req_str(tool, map, "path", usage)?;
    let message = git_repo::req_str(tool, map, "message", usage)?;
    check_commit_message(&message)
        .map_err(|why| ToolError::refused(format!("not committed: {why}")))?;
    let files = match git_repo::opt_list(tool, map, "files", usage)? {
        None => None,
        Some(list) if list.is_empty() => {
            return Err(ToolError::failed(format!(
                "{tool}: \"files\" is empty; leave it out to commit every change"
            )));
        }
        Some(list) => Some(
            list.iter()
                .map(|f| git_repo::repo_relative(guard, tool, f))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    Ok(Request { path, message, files })
}

impl Tool for GitCommit {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::RecoverableWrite
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let req = request(&self.guard, &args)?;
            let guard = Arc::clone(&self.guard);
            let dry_run = ctx.dry_run;
            blocking(Self::NAME, move || {
                let repo = git_repo::select_one(&guard, Self::NAME, &req.path)?;
                commit(&guard, &repo, &req.message, req.files.as_deref(), dry_run)
            })
            .await
        })
    }
}

/// What a commit recorded (or, in a dry run, would record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The new commit's id (empty in a dry run).
    pub id: String,
    pub branch: String,
    /// Repository-relative paths the commit changes.
    pub files: Vec<String>,
    /// Lines added plus lines removed, per file (same order as `files`; 0 for binary files).
    pub lines: Vec<usize>,
    /// Sensitive files that had changes and were left out.
    pub skipped: Vec<String>,
}

/// Commits in the repository at `workdir` (which must be a repository's top directory inside
/// the guard's roots). Used by the tool and by the governed workflow in `aria-core`.
pub fn commit_in(
    guard: &PathGuard,
    workdir: &Path,
    message: &str,
    files: Option<&[String]>,
) -> Result<Committed, ToolError> {
    check_commit_message(message)
        .map_err(|why| ToolError::refused(format!("not committed: {why}")))?;
    let repo = git_repo::select_one(guard, GitCommit::NAME, &workdir.to_string_lossy())?;
    stage_and_commit(guard, &repo, message, files, false)
}

fn commit(
    guard: &PathGuard,
    r: &Repo,
    message: &str,
    files: Option<&[String]>,
    dry_run: bool,
) -> Result<ToolOutput, ToolError> {
    let done = stage_and_commit(guard, r, message, files, dry_run)?;
    let shown: Vec<&str> = done.files.iter().take(50).map(String::as_str).collect();
    let more = done.files.len().saturating_sub(shown.len());
    let mut text = if dry_run {
        format!(
            "dry run: would commit {} files on {} in {} with message {message:?}: {}",
            done.files.len(),
            done.branch,
            r.workdir.display(),
            shown.join(", ")
        )
    } else {
        format!(
            "committed {} on {} in {}: {} files ({})",
            &done.id[..done.id.len().min(10)],
            done.branch,
            r.workdir.display(),
            done.files.len(),
            shown.join(", ")
        )
    };
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    if !done.skipped.is_empty() {
        text.push_str(&format!("\nnot committed (sensitive files): {}", done.skipped.join(", ")));
    }
    let details = json!({
        "workdir": r.workdir.display().to_string(),
        "commit": done.id,
        "branch": done.branch,
        "files": done.files,
        "skipped": done.skipped,
        "dry_run": dry_run,
    });
    Ok(ToolOutput::text(text).with_details(details))
}

fn stage_and_commit(
    guard: &PathGuard,
    r: &Repo,
    message: &str,
    files: Option<&[String]>,
    dry_run: bool,
) -> Result<Committed, ToolError> {
    let repo = &r.repo;
    let Some(branch) = git_repo::branch(repo) else {
        return Err(ToolError::refused(
            "not committed: HEAD is detached; ARIA commits only on a local branch, so check one out first",
        ));
    };
    if branch.starts_with("snapshot/") {
        return Err(ToolError::refused(format!(
            "not committed: the current branch {branch} is a snapshot branch, which ARIA never \
             changes; check out your working branch first"
        )));
    }
    let what = |e: git2::Error| git_repo::git_error("stage the changes", &e);
    let mut index = repo.index().map_err(what)?;
    if index.has_conflicts() {
        return Err(ToolError::failed(
            "not committed: the index has unresolved merge conflicts; resolve them first",
        ));
    }
    let mut skipped = Vec::new();
    match files {
        Some(files) => stage_files(guard, r, &mut index, files)?,
        None => stage_all(guard, &mut index, &mut skipped).map_err(what)?,
    }
    let head = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let head_tree = head.as_ref().and_then(|c| c.tree().ok());
    let changed = changed_paths(repo, head_tree.as_ref(), &index).map_err(what)?;
    if changed.is_empty() {
        index.read(true).map_err(what)?;
        return Err(ToolError::failed(format!(
            "nothing to commit in {}: the selected files have no changes against HEAD",
            r.workdir.display()
        )));
    }
    if dry_run {
        // Drop the staging done above: a dry run changes nothing on disk.
        index.read(true).map_err(what)?;
        let (files, lines) = changed.into_iter().unzip();
        return Ok(Committed { id: String::new(), branch, files, lines, skipped });
    }
    index.write().map_err(what)?;
    let tree_id = index.write_tree().map_err(what)?;
    let write = |e: git2::Error| git_repo::git_error("write the commit", &e);
    let tree = repo.find_tree(tree_id).map_err(write)?;
    let sig = signature(repo).map_err(write)?;
    let parents: Vec<&git2::Commit<'_>> = head.iter().collect();
    let id = repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents).map_err(write)?;
    tracing::info!(tool = GitCommit::NAME, workdir = %r.workdir.display(), commit = %id, files = changed.len(), "committed");
    let (files, lines) = changed.into_iter().unzip();
    Ok(Committed { id: id.to_string(), branch, files, lines, skipped })
}

/// The user's configured identity, else "ARIA <aria@localhost>".
fn signature(repo: &Repository) -> Result<Signature<'static>, git2::Error> {
    match repo.signature() {
        Ok(sig) => Ok(sig.to_owned()),
        Err(_) => Signature::now("ARIA", "aria@localhost"),
    }
}

fn stage_files(
    guard: &PathGuard,
    r: &Repo,
    index: &mut Index,
    files: &[String],
) -> Result<(), ToolError> {
    let what = |e: git2::Error| git_repo::git_error("stage the files", &e);
    for rel in files {
        let full = r.workdir.join(rel);
        if full.symlink_metadata().is_ok() {
            // Through the guard: no symlink out of the root, no sensitive name on the way.
            let resolved = guard
                .resolve_existing(&full.to_string_lossy())
                .map_err(|e| crate::tools::path_error(e, "Commit files inside the repository."))?;
            if !resolved.path().starts_with(&r.workdir) {
                return Err(ToolError::refused(format!(
                    "not committed: {rel} leads outside the repository {}",
                    r.workdir.display()
                )));
            }
            if full.is_dir() && !full.is_symlink() {
                index.add_all([rel.as_str()], IndexAddOption::DEFAULT, None).map_err(what)?;
            } else {
                index.add_path(Path::new(rel)).map_err(what)?;
            }
        } else if index.get_path(Path::new(rel), 0).is_some() {
            index.remove_path(Path::new(rel)).map_err(what)?;
        } else {
            let prefix = format!("{rel}/");
            let tracked_below =
                index.iter().any(|e| String::from_utf8_lossy(&e.path).starts_with(&prefix));
            if !tracked_below {
                return Err(ToolError::failed(format!(
                    "{rel} does not exist in {} and is not tracked; check the name with git_status",
                    r.workdir.display()
                )));
            }
            index.remove_dir(Path::new(rel), 0).map_err(what)?;
        }
    }
    Ok(())
}

/// `git add -A` without sensitive files: new and changed files are added, deleted ones removed.
fn stage_all(
    guard: &PathGuard,
    index: &mut Index,
    skipped: &mut Vec<String>,
) -> Result<(), git2::Error> {
    let mut skip = |path: &Path, _spec: &[u8]| -> i32 {
        let p = path.to_string_lossy();
        if git_repo::sensitive(guard, &p) {
            if !skipped.iter().any(|s| s == &p) {
                skipped.push(p.into_owned());
            }
            1
        } else {
            0
        }
    };
    index.add_all(["*"], IndexAddOption::DEFAULT, Some(&mut skip))?;
    index.update_all(["*"], Some(&mut skip))?;
    Ok(())
}

fn changed_paths(
    repo: &Repository,
    head: Option<&git2::Tree<'_>>,
    index: &Index,
) -> Result<Vec<(String, usize)>, git2::Error> {
    let diff = repo.diff_tree_to_index(head, Some(index), None)?;
    let mut out = Vec::new();
    for (i, d) in diff.deltas().enumerate() {
        let Some(path) = d.new_file().path().or_else(|| d.old_file().path()) else { continue };
        let lines = match git2::Patch::from_diff(&diff, i)? {
            Some(patch) => {
                let (_, added, removed) = patch.line_stats()?;
                added + removed
            }
            None => 0,
        };
        out.push((path.to_string_lossy().into_owned(), lines));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_follow_type_colon_summary() {
        for ok in ["Fix: Resolve linting errors in auth.js", "feat: add x", "Perf: faster\n\nbody"]
        {
            assert_eq!(check_commit_message(ok), Ok(()), "{ok}");
        }
        for (bad, says) in [
            ("fixed the bug", "no \"Type: \" prefix"),
            ("Bugfix: x", "not a commit type"),
            ("FIX: x", "not a commit type"),
            ("Fix:    ", "is empty"),
            ("Fix: a\nbody right away", "blank line"),
        ] {
            let err = check_commit_message(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(err.contains("blank line") || err.contains("Type: summary"), "{err}");
        }
        let long = format!("Fix: {}", "x".repeat(200));
        assert!(check_commit_message(&long).unwrap_err().contains("keep it to 100"));
    }
}
