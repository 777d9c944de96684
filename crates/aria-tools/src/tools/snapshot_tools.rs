//! `snapshot_list {path?}` and `snapshot_rollback {id, path?}`: the restore points ARIA took
//! before its writes, and putting one back, as tools (what `aria snapshots list` and
//! `aria rollback` do). Offered to other agents over MCP (`aria mcp serve`).
//!
//! A rollback is itself undoable: it records a revert commit on a branch of its own, and
//! rolling back to that branch undoes it. Its tier is therefore `recoverable_write`, and it is
//! not snapshotted again before it runs.

use std::path::PathBuf;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::snapshot::Snapshots;
use crate::tools::{blocking, git_repo};

/// Restore points listed at most.
pub const MAX_LISTED: usize = 100;

/// Lists restore points. Tier: read.
#[derive(Debug)]
pub struct SnapshotList {
    snapshots: Snapshots,
    spec: ToolSpec,
}

impl SnapshotList {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "snapshot_list";

    pub fn new(snapshots: Snapshots) -> Self {
        let spec = ToolSpec {
            name: Self::NAME.to_owned(),
            description: "List the restore points ARIA took before it changed files, newest \
                          first: id, time, the operation, the files it covers. With \"path\", \
                          only those that concern that file or directory."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Only restore points that concern this file or directory."}
                },
                "additionalProperties": false
            }),
        };
        SnapshotList { snapshots, spec }
    }
}

impl Tool for SnapshotList {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let usage = "snapshot_list takes an optional \"path\" inside the roots";
            let map = git_repo::object(Self::NAME, &args, &["path"], usage)?;
            let path = git_repo::opt_str(Self::NAME, map, "path", usage)?;
            let snapshots = self.snapshots.clone();
            blocking(Self::NAME, move || {
                let path = checked(&snapshots, path)?;
                let all = snapshots
                    .list(None, path.as_deref())
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                let rows: Vec<Value> = all
                    .iter()
                    .take(MAX_LISTED)
                    .map(|s| {
                        json!({"id": s.id.0, "time": s.time_rfc3339(), "operation": s.operation,
                               "repository": s.repository, "files_changed": s.files_changed,
                               "targets": s.targets})
                    })
                    .collect();
                let mut text = if all.is_empty() {
                    "no restore points".to_owned()
                } else {
                    all.iter()
                        .take(MAX_LISTED)
                        .map(|s| {
                            format!(
                                "{}  {}  {}  {}",
                                s.id.0,
                                s.time_rfc3339(),
                                s.operation,
                                s.repository.display()
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                if all.len() > MAX_LISTED {
                    text.push_str(&format!(
                        "\n({} older restore points not shown; give a path to narrow)",
                        all.len() - MAX_LISTED
                    ));
                }
                Ok(ToolOutput::text(text)
                    .with_details(json!({"snapshots": rows, "total": all.len()})))
            })
            .await
        })
    }
}

/// Puts a restore point's files back. Tier: recoverable write (the rollback records its own
/// revert commit).
#[derive(Debug)]
pub struct SnapshotRollback {
    snapshots: Snapshots,
    spec: ToolSpec,
}

impl SnapshotRollback {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "snapshot_rollback";

    pub fn new(snapshots: Snapshots) -> Self {
        let spec = ToolSpec {
            name: Self::NAME.to_owned(),
            description: "Put the files of a restore point back (all of them, or only \"path\"). \
                          The rollback is recorded as a revert commit on a branch of its own, so \
                          it can be undone by rolling back to that branch."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The restore point's id, from snapshot_list."},
                    "path": {"type": "string", "description": "Only this file or directory."}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        };
        SnapshotRollback { snapshots, spec }
    }
}

impl Tool for SnapshotRollback {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::RecoverableWrite
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let usage =
                "snapshot_rollback takes \"id\" (from snapshot_list) and an optional \"path\"";
            let map = git_repo::object(Self::NAME, &args, &["id", "path"], usage)?;
            let id = git_repo::req_str(Self::NAME, map, "id", usage)?;
            let path = git_repo::opt_str(Self::NAME, map, "path", usage)?;
            let snapshots = self.snapshots.clone();
            let session = ctx.session_id.clone();
            blocking(Self::NAME, move || {
                let path = checked(&snapshots, path)?;
                let done = snapshots
                    .rollback(&id, None, path.as_deref(), &session)
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                let text = if done.restored.is_empty() {
                    format!("nothing to restore: the files already match {}", done.snapshot)
                } else {
                    let files: Vec<String> = done.restored.iter().map(|r| r.path.clone()).collect();
                    let undo = done
                        .branch
                        .as_ref()
                        .map(|b| format!("; undo it with snapshot_rollback {{\"id\": \"{b}\"}}"))
                        .unwrap_or_default();
                    format!(
                        "rolled back to {} in {}: {}{undo}",
                        done.snapshot,
                        done.repository.display(),
                        files.join(", ")
                    )
                };
                let details = serde_json::to_value(&done).unwrap_or(Value::Null);
                Ok(ToolOutput::text(text).with_details(details))
            })
            .await
        })
    }
}

/// `path` resolved by the path guard (it may name a file that no longer exists).
fn checked(snapshots: &Snapshots, path: Option<String>) -> Result<Option<PathBuf>, ToolError> {
    path.map(|p| {
        snapshots
            .guard()
            .resolve_for_create(&p)
            .map(|r| r.path().to_path_buf())
            .map_err(|e| crate::tools::path_error(e, "give a path inside the roots"))
    })
    .transpose()
}
