//! `git_log {path, limit?}`: the latest commits reachable from HEAD of one repository, newest
//! first: short id, date (UTC), author and summary.

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use git2::Sort;
use serde_json::{Value, json};

use crate::guard::path::PathGuard;
use crate::tools::git_repo::{self, Repo};
use crate::tools::{blocking, roots_sentence};

/// Commits shown when `limit` is not given.
pub const DEFAULT_LOG_LIMIT: usize = 20;
/// The most commits one call shows.
pub const MAX_LOG_LIMIT: usize = 200;

/// Lists recent commits. Tier: read.
#[derive(Debug)]
pub struct GitLog {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl GitLog {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "git_log";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: Self::NAME.to_owned(),
            description: format!(
                "List the latest commits of one git repository (newest first): id, date, author, \
                 summary. limit: how many (default {DEFAULT_LOG_LIMIT}, at most {MAX_LOG_LIMIT}). \
                 Paths are inside {}.",
                roots_sentence(&guard)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A file or directory inside the repository."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LOG_LIMIT, "description": "How many commits to show."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        };
        GitLog { guard, spec }
    }
}

impl Tool for GitLog {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let tool = Self::NAME;
            let usage = "git_log takes \"path\" and optionally \"limit\" (1 to 200)";
            let map = git_repo::object(tool, &args, &["path", "limit"], usage)?;
            let path = git_repo::req_str(tool, map, "path", usage)?;
            let limit = match map.get("limit") {
                None | Some(Value::Null) => DEFAULT_LOG_LIMIT,
                Some(v) => match v.as_u64() {
                    Some(n) if (1..=MAX_LOG_LIMIT as u64).contains(&n) => n as usize,
                    _ => {
                        return Err(ToolError::failed(format!(
                            "{tool}: \"limit\" must be a whole number from 1 to {MAX_LOG_LIMIT}"
                        )));
                    }
                },
            };
            let guard = Arc::clone(&self.guard);
            blocking(tool, move || {
                let repo = git_repo::select_one(&guard, tool, &path)?;
                log(&repo, limit)
            })
            .await
        })
    }
}

fn log(r: &Repo, limit: usize) -> Result<ToolOutput, ToolError> {
    let repo = &r.repo;
    let branch = git_repo::branch(repo).unwrap_or_else(|| "(detached HEAD)".to_owned());
    if repo.head().is_err() {
        return Ok(ToolOutput::text(format!(
            "repository {} (branch {branch}) has no commits yet",
            r.workdir.display()
        ))
        .with_details(json!({"workdir": r.workdir.display().to_string(), "commits": 0})));
    }
    let lines =
        commit_lines(repo, limit, None).map_err(|e| git_repo::git_error("walk the history", &e))?;
    let text = format!(
        "repository {} (branch {branch}), {} latest commits:\n{}\n",
        r.workdir.display(),
        lines.len(),
        lines.join("\n")
    );
    Ok(ToolOutput::text(text)
        .with_details(json!({"workdir": r.workdir.display().to_string(), "commits": lines.len()})))
}

/// The newest `limit` commits reachable from HEAD (made at or after `since`, Unix seconds,
/// when given), one line each: short id, date, author, summary.
fn commit_lines(
    repo: &git2::Repository,
    limit: usize,
    since: Option<i64>,
) -> Result<Vec<String>, git2::Error> {
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    walk.push_head()?;
    let mut lines = Vec::new();
    for oid in walk {
        if lines.len() >= limit {
            break;
        }
        let oid = oid?;
        let commit = repo.find_commit(oid)?;
        if since.is_some_and(|s| commit.time().seconds() < s) {
            continue;
        }
        let id = oid.to_string();
        lines.push(format!(
            "{} {} {} {}",
            &id[..10],
            utc_date(commit.time().seconds()),
            commit.author().name().unwrap_or("?"),
            commit.summary().ok().flatten().unwrap_or("")
        ));
    }
    Ok(lines)
}

/// The commits of the repository at `dir` made at or after `since` (Unix seconds), newest
/// first, at most `limit` (libgit2: no hooks, pager or configured programs run). An empty
/// history is no commits.
pub fn commits_since(
    dir: &std::path::Path,
    since: i64,
    limit: usize,
) -> Result<Vec<String>, String> {
    let repo = git2::Repository::open(dir).map_err(|e| e.message().to_owned())?;
    if repo.head().is_err() {
        return Ok(Vec::new());
    }
    commit_lines(&repo, limit, Some(since)).map_err(|e| e.message().to_owned())
}

/// `YYYY-MM-DD HH:MM` in UTC from Unix seconds (civil-from-days, Howard Hinnant's algorithm).
pub(crate) fn utc_date(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}", rem / 3600, rem % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc_date(0), "1970-01-01 00:00");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc_date(1_772_000_000), "2026-02-25 06:13");
    }

    #[test]
    fn commits_since_keeps_the_newer_ones() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        assert_eq!(commits_since(dir.path(), 0, 20).unwrap(), Vec::<String>::new(), "no history");
        let sig =
            git2::Signature::new("T", "t@example.invalid", &git2::Time::new(1_000, 0)).unwrap();
        let tree = repo.find_tree(repo.index().unwrap().write_tree().unwrap()).unwrap();
        let old = repo.commit(Some("HEAD"), &sig, &sig, "old one", &tree, &[]).unwrap();
        let parent = repo.find_commit(old).unwrap();
        let sig =
            git2::Signature::new("T", "t@example.invalid", &git2::Time::new(5_000, 0)).unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "new one", &tree, &[&parent]).unwrap();
        let lines = commits_since(dir.path(), 2_000, 20).unwrap();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].ends_with("T new one"), "{lines:?}");
        assert_eq!(commits_since(dir.path(), 0, 20).unwrap().len(), 2);
        assert!(commits_since(&dir.path().join("nope"), 0, 20).is_err());
    }
}
