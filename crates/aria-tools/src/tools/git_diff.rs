//! `git_diff {path, staged?, from?, to?, paths?}`: a unified diff of one repository: the
//! working tree against the index (default), the index against HEAD (`staged`),
//! a commit against the working tree (`from`), or two commits (`from` and `to`).
//!
//! Sensitive files (`.env`, keys, ...) are named but their lines are never shown — in the working
//! tree and in history alike (a `.env` committed long ago is as secret as one on disk) — and
//! the text is capped at [`MAX_DIFF_BYTES`] with a note saying how to narrow it.

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use git2::{Diff, DiffFormat, DiffOptions, Repository, Tree};
use serde_json::{Value, json};

use crate::guard::path::PathGuard;
use crate::tools::git_repo::{self, Repo};
use crate::tools::{blocking, roots_sentence};

/// The most diff text returned; the statistics always cover the whole diff.
pub const MAX_DIFF_BYTES: usize = 60 * 1024;

/// Shows changes in one repository. Tier: read.
#[derive(Debug)]
pub struct GitDiff {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl GitDiff {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "git_diff";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: Self::NAME.to_owned(),
            description: format!(
                "Show a unified diff of one git repository. Default: unstaged changes (working \
                 tree against the index). staged=true: staged changes (index against HEAD). \
                 from: a commit/branch/tag against the working tree; from and to: between two \
                 commits. paths limits it to files relative to the repository's top directory. \
                 Long diffs are cut at {} KB. Paths are inside {}.",
                MAX_DIFF_BYTES / 1024,
                roots_sentence(&guard)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A file or directory inside the repository."},
                    "staged": {"type": "boolean", "description": "Show staged changes (index against HEAD)."},
                    "from": {"type": "string", "description": "Revision to diff from (e.g. HEAD~1, main, a commit id)."},
                    "to": {"type": "string", "description": "Revision to diff to; needs from."},
                    "paths": {"type": "array", "items": {"type": "string"}, "description": "Only these files or directories, relative to the repository's top."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        };
        GitDiff { guard, spec }
    }
}

/// Which two sides are compared.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sides {
    Unstaged,
    Staged,
    FromToWorktree(String),
    Commits(String, String),
}

struct Request {
    path: String,
    sides: Sides,
    paths: Vec<String>,
}

fn request(guard: &PathGuard, args: &Value) -> Result<Request, ToolError> {
    let tool = GitDiff::NAME;
    let usage = "git_diff takes \"path\" and optionally \"staged\" (boolean), \"from\", \"to\" (revisions) and \"paths\" (list)";
    let map = git_repo::object(tool, args, &["path", "staged", "from", "to", "paths"], usage)?;
    let path = git_repo::req_str(tool, map, "path", usage)?;
    let staged = match map.get("staged") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(ToolError::failed(format!(
                "{tool}: \"staged\" must be true or false; {usage}"
            )));
        }
    };
    let from = git_repo::opt_str(tool, map, "from", usage)?;
    let to = git_repo::opt_str(tool, map, "to", usage)?;
    let sides = match (staged, from, to) {
        (false, None, None) => Sides::Unstaged,
        (true, None, None) => Sides::Staged,
        (false, Some(f), None) => Sides::FromToWorktree(revision(&f)?),
        (false, Some(f), Some(t)) => Sides::Commits(revision(&f)?, revision(&t)?),
        (_, None, Some(_)) => {
            return Err(ToolError::failed(format!("{tool}: \"to\" needs \"from\"; {usage}")));
        }
        (true, Some(_), _) => {
            return Err(ToolError::failed(format!(
                "{tool}: \"staged\" compares the index with HEAD and cannot be combined with \"from\"/\"to\""
            )));
        }
    };
    let paths = git_repo::opt_list(tool, map, "paths", usage)?
        .unwrap_or_default()
        .iter()
        .map(|p| git_repo::repo_relative(guard, tool, p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Request { path, sides, paths })
}

/// A revision the model wrote: refused when it could be read as an option or holds odd bytes.
fn revision(text: &str) -> Result<String, ToolError> {
    if text.is_empty() || text.starts_with('-') || text.chars().any(|c| c.is_control() || c == ' ')
    {
        return Err(ToolError::failed(format!(
            "git_diff: {text:?} is not a revision; give a commit id, branch, tag or HEAD~N"
        )));
    }
    Ok(text.to_owned())
}

impl Tool for GitDiff {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let req = request(&self.guard, &args)?;
            let guard = Arc::clone(&self.guard);
            blocking(Self::NAME, move || {
                let repo = git_repo::select_one(&guard, Self::NAME, &req.path)?;
                diff(&guard, &repo, &req.sides, &req.paths)
            })
            .await
        })
    }
}

fn tree<'r>(repo: &'r Repository, rev: &str) -> Result<Tree<'r>, ToolError> {
    repo.revparse_single(rev).and_then(|o| o.peel_to_tree()).map_err(|e| {
        ToolError::failed(format!(
            "git_diff: the revision \"{rev}\" was not found ({}); see git_log for commit ids",
            e.message()
        ))
    })
}

/// HEAD's tree, or `None` in a repository without commits.
fn head_tree(repo: &Repository) -> Option<Tree<'_>> {
    repo.head().ok()?.peel_to_tree().ok()
}

fn diff(
    guard: &PathGuard,
    r: &Repo,
    sides: &Sides,
    paths: &[String],
) -> Result<ToolOutput, ToolError> {
    let repo = &r.repo;
    let mut opts = DiffOptions::new();
    opts.disable_pathspec_match(true);
    for p in paths {
        opts.pathspec(p);
    }
    let what = |e: git2::Error| git_repo::git_error("compute the diff", &e);
    let diff: Diff<'_> = match sides {
        Sides::Unstaged => repo.diff_index_to_workdir(None, Some(&mut opts)).map_err(what)?,
        Sides::Staged => {
            let head = head_tree(repo);
            repo.diff_tree_to_index(head.as_ref(), None, Some(&mut opts)).map_err(what)?
        }
        Sides::FromToWorktree(from) => {
            let from = tree(repo, from)?;
            repo.diff_tree_to_workdir_with_index(Some(&from), Some(&mut opts)).map_err(what)?
        }
        Sides::Commits(from, to) => {
            let (from, to) = (tree(repo, from)?, tree(repo, to)?);
            repo.diff_tree_to_tree(Some(&from), Some(&to), Some(&mut opts)).map_err(what)?
        }
    };
    render(guard, r, sides, &diff)
}

fn render(
    guard: &PathGuard,
    r: &Repo,
    sides: &Sides,
    diff: &Diff<'_>,
) -> Result<ToolOutput, ToolError> {
    let stats = diff.stats().map_err(|e| git_repo::git_error("count the diff", &e))?;
    let mut body = String::new();
    let mut hidden: Vec<String> = Vec::new();
    let mut total_bytes = 0usize;
    let printed = diff.print(DiffFormat::Patch, |delta, _hunk, line| {
        let name = |f: git2::DiffFile<'_>| f.path().map(|p| p.to_string_lossy().into_owned());
        let (new, old) = (name(delta.new_file()), name(delta.old_file()));
        let file = new.clone().or_else(|| old.clone()).unwrap_or_default();
        // Either side: a sensitive file renamed or copied to a plain name (or the other way
        // round) still has a sensitive file's lines.
        if [new, old].iter().flatten().any(|f| git_repo::sensitive(guard, f)) {
            if !hidden.contains(&file) {
                hidden.push(file);
            }
            return true;
        }
        let content = String::from_utf8_lossy(line.content());
        let piece = match line.origin() {
            '+' | '-' | ' ' => format!("{}{content}", line.origin()),
            _ => content.into_owned(),
        };
        total_bytes += piece.len();
        if body.len() < MAX_DIFF_BYTES {
            body.push_str(&piece);
        }
        true
    });
    printed.map_err(|e| git_repo::git_error("print the diff", &e))?;
    let cut = super::cut(&mut body, MAX_DIFF_BYTES);
    let label = match sides {
        Sides::Unstaged => "unstaged changes (working tree vs index)".to_owned(),
        Sides::Staged => "staged changes (index vs HEAD)".to_owned(),
        Sides::FromToWorktree(f) => format!("{f} vs working tree"),
        Sides::Commits(f, t) => format!("{f} vs {t}"),
    };
    let mut text = format!(
        "{label} in {}: {} files changed, {} insertions(+), {} deletions(-)\n",
        r.workdir.display(),
        stats.files_changed(),
        stats.insertions(),
        stats.deletions()
    );
    if stats.files_changed() == 0 {
        text.push_str("no differences\n");
    }
    text.push_str(&body);
    if cut || total_bytes > body.len() {
        text.push_str(&format!(
            "\n[diff truncated: showing {} of {} bytes; narrow it with \"paths\"]\n",
            body.len(),
            total_bytes
        ));
    }
    for file in &hidden {
        text.push_str(&format!(
            "[{file} changed; it is a sensitive file, so its lines are not shown]\n"
        ));
    }
    let details = json!({
        "workdir": r.workdir.display().to_string(),
        "sides": label,
        "files_changed": stats.files_changed(),
        "insertions": stats.insertions(),
        "deletions": stats.deletions(),
        "truncated": cut || total_bytes > body.len(),
        "hidden": hidden,
    });
    Ok(ToolOutput::text(text).with_details(details))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_that_look_like_options_are_refused() {
        assert!(revision("HEAD~1").is_ok());
        assert!(revision("--output=/tmp/x").is_err());
        assert!(revision("a b").is_err());
        assert!(revision("").is_err());
    }
}
