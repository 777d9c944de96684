//! The commit messages that make listing cheap: everything `aria snapshots list` shows is in
//! the message of the branch tip, so listing reads one commit per snapshot and diffs nothing.
//!
//! ```text
//! ARIA snapshot: file_write
//!
//! Operation: file_write
//! Session: 0193...
//! Time: 2026-02-25T14:30:00Z
//! Unix-Time: 1772029800
//! Target: src/auth.js
//! Changed: M README.md
//! ```
//!
//! A rollback's branch tip is a `Revert: <operation> (<id>)` commit; its restore point is its
//! parent, the snapshot of the state before the rollback (operation `rollback`).

use std::path::Path;

use git2::{BranchType, Commit, Repository};

use super::{BRANCH_PREFIX, Snapshot, SnapshotError, SnapshotId, hex, time};

pub(crate) const SNAPSHOT_SUBJECT: &str = "ARIA snapshot: ";
pub(crate) const REVERT_SUBJECT: &str = "Revert: ";

/// The fields of a snapshot commit message.
pub(crate) struct Fields<'a> {
    pub(crate) operation: &'a str,
    pub(crate) session: &'a str,
    pub(crate) time: i64,
    pub(crate) targets: &'a [String],
    pub(crate) changed: &'a [String],
}

pub(crate) fn snapshot_message(f: &Fields<'_>) -> String {
    let mut m = format!(
        "{SNAPSHOT_SUBJECT}{op}\n\nOperation: {op}\nSession: {session}\nTime: {t}\nUnix-Time: {secs}\n",
        op = f.operation,
        session = one_line(f.session),
        t = time::rfc3339(f.time),
        secs = f.time,
    );
    for t in f.targets {
        m.push_str(&format!("Target: {}\n", one_line(t)));
    }
    for c in f.changed {
        m.push_str(&format!("Changed: {}\n", one_line(c)));
    }
    m
}

pub(crate) fn revert_message(
    operation: &str,
    id: &SnapshotId,
    session: &str,
    secs: i64,
    restored: &[String],
) -> String {
    let mut m = format!(
        "{REVERT_SUBJECT}{operation} ({id})\n\nSession: {session}\nTime: {t}\nUnix-Time: {secs}\n",
        session = one_line(session),
        t = time::rfc3339(secs),
    );
    for r in restored {
        m.push_str(&format!("Restored: {}\n", one_line(r)));
    }
    m
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Parses a snapshot commit; `None` for any other commit (a user branch under `snapshot/`).
pub(crate) fn parse(id: &str, commit: &Commit<'_>, repository: &Path) -> Option<Snapshot> {
    let text = String::from_utf8_lossy(commit.message_bytes());
    let operation = text.lines().next()?.strip_prefix(SNAPSHOT_SUBJECT)?.to_owned();
    let mut s = Snapshot {
        id: SnapshotId(id.to_owned()),
        commit: hex(commit.id()),
        repository: repository.to_path_buf(),
        operation,
        session: String::new(),
        time: commit.time().seconds(),
        files_changed: Vec::new(),
        targets: Vec::new(),
    };
    for line in text.lines().skip(1) {
        if let Some(v) = line.strip_prefix("Session: ") {
            s.session = v.to_owned();
        } else if let Some(v) = line.strip_prefix("Unix-Time: ") {
            s.time = v.parse().unwrap_or(s.time);
        } else if let Some(v) = line.strip_prefix("Target: ") {
            s.targets.push(v.to_owned());
        } else if let Some(v) = line.strip_prefix("Changed: ") {
            s.files_changed.push(v.to_owned());
        }
    }
    Some(s)
}

/// Every restore point on a snapshot branch of `repo`, in branch order.
pub(crate) fn read_all(repo: &Repository, workdir: &Path) -> Result<Vec<Snapshot>, SnapshotError> {
    let branches = repo
        .branches(Some(BranchType::Local))
        .map_err(|e| SnapshotError::git("list branches", workdir, e))?;
    let mut out = Vec::new();
    for branch in branches {
        let (branch, _) = branch.map_err(|e| SnapshotError::git("list branches", workdir, e))?;
        let Ok(Some(name)) = branch.name() else { continue };
        if !name.starts_with(BRANCH_PREFIX) {
            continue;
        }
        let name = name.to_owned();
        let Ok(tip) = branch.get().peel_to_commit() else { continue };
        let point = if tip.summary_bytes().is_some_and(|s| s.starts_with(REVERT_SUBJECT.as_bytes()))
        {
            match tip.parent(0) {
                Ok(parent) => parent,
                Err(_) => continue,
            }
        } else {
            tip
        };
        if let Some(s) = parse(&name, &point, workdir) {
            out.push(s);
        }
    }
    Ok(out)
}
