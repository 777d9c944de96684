//! The snapshot hook: before a recoverable write runs, everything it may change is snapshotted,
//! so governed mode can let it run without asking (what can be undone need not be asked
//! about). The loop only knows
//! this trait; the git implementation lives in `aria-tools` (adapted below) and is wired in
//! `aria-cli`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

/// A restore point taken before a call: its id (what `aria rollback` takes) and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestorePoint {
    pub id: String,
    pub repository: String,
}

/// A restore point a write would get (dry runs): nothing was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedPoint {
    pub repository: String,
    /// The root is not a git repository yet and would be initialised first.
    pub initialise: bool,
    /// The branch it would get, the time left as a pattern (`snapshot/file_write-<…>`).
    pub branch: String,
}

/// The snapshot could not be taken, so the call must not run; the message says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SnapshotFailed(pub String);

/// Takes restore points before writes. Blocking: the loop calls it off the async runtime.
pub trait Snapshotter: Send + Sync + std::fmt::Debug {
    /// Snapshots everything the call `tool(args)` may write and returns the restore points.
    fn before_write(
        &self,
        tool: &str,
        args: &Value,
        session_id: &str,
    ) -> Result<Vec<RestorePoint>, SnapshotFailed>;

    /// What [`Snapshotter::before_write`] would take for `tool(args)`, changing nothing (for
    /// `--dry-run`). The default says it cannot tell, so a dry run never claims a restore
    /// point that would not exist.
    fn plan(&self, tool: &str, args: &Value) -> Result<Vec<PlannedPoint>, SnapshotFailed> {
        let _ = args;
        Err(SnapshotFailed(format!(
            "this snapshotter cannot say what it would snapshot before `{tool}`"
        )))
    }

    /// The files of `point.repository` that differ now from `point` (absolute paths): what
    /// changed since it was taken. The default says it cannot tell, so the caller assumes
    /// anything may have changed.
    fn changed_since(&self, point: &RestorePoint) -> Result<Vec<PathBuf>, SnapshotFailed> {
        Err(SnapshotFailed(format!("this snapshotter cannot list what changed since {}", point.id)))
    }

    /// Removes a restore point that guards nothing (the call changed no file since it). The
    /// default keeps it.
    fn discard(&self, point: &RestorePoint) -> Result<(), SnapshotFailed> {
        let _ = point;
        Ok(())
    }
}

/// Git snapshots of the repositories under the roots.
impl Snapshotter for aria_tools::Snapshots {
    fn before_write(
        &self,
        tool: &str,
        args: &Value,
        session_id: &str,
    ) -> Result<Vec<RestorePoint>, SnapshotFailed> {
        let taken = aria_tools::Snapshots::before_write(self, tool, args, session_id)
            .map_err(|e| SnapshotFailed(e.to_string()))?;
        Ok(taken
            .into_iter()
            .map(|s| RestorePoint { id: s.id.0, repository: s.repository.display().to_string() })
            .collect())
    }

    fn discard(&self, point: &RestorePoint) -> Result<(), SnapshotFailed> {
        aria_tools::Snapshots::discard(self, &point.id, Path::new(&point.repository))
            .map_err(|e| SnapshotFailed(e.to_string()))
    }

    fn changed_since(&self, point: &RestorePoint) -> Result<Vec<PathBuf>, SnapshotFailed> {
        aria_tools::Snapshots::changed_since(self, &point.id, Path::new(&point.repository))
            .map_err(|e| SnapshotFailed(e.to_string()))
    }

    fn plan(&self, tool: &str, args: &Value) -> Result<Vec<PlannedPoint>, SnapshotFailed> {
        let planned = self.plan_write(tool, args).map_err(|e| SnapshotFailed(e.to_string()))?;
        Ok(planned
            .into_iter()
            .map(|p| PlannedPoint {
                repository: p.repository.display().to_string(),
                initialise: p.initialise,
                branch: p.branch,
            })
            .collect())
    }
}

/// Runs [`Snapshotter::before_write`] on the blocking pool.
pub(crate) async fn take(
    snapshotter: &Arc<dyn Snapshotter>,
    tool: &str,
    args: &Value,
    session_id: &str,
) -> Result<Vec<RestorePoint>, SnapshotFailed> {
    let (s, tool, args, session) =
        (Arc::clone(snapshotter), tool.to_owned(), args.clone(), session_id.to_owned());
    tokio::task::spawn_blocking(move || s.before_write(&tool, &args, &session))
        .await
        .unwrap_or_else(|e| Err(SnapshotFailed(format!("the snapshot stopped unexpectedly ({e})"))))
}

/// Runs [`Snapshotter::plan`] on the blocking pool.
pub(crate) async fn plan(
    snapshotter: &Arc<dyn Snapshotter>,
    tool: &str,
    args: &Value,
) -> Result<Vec<PlannedPoint>, SnapshotFailed> {
    let (s, tool, args) = (Arc::clone(snapshotter), tool.to_owned(), args.clone());
    tokio::task::spawn_blocking(move || s.plan(&tool, &args)).await.unwrap_or_else(|e| {
        Err(SnapshotFailed(format!("the snapshot plan stopped unexpectedly ({e})")))
    })
}

/// Runs [`Snapshotter::discard`] on the blocking pool.
pub(crate) async fn discard(
    snapshotter: &Arc<dyn Snapshotter>,
    point: &RestorePoint,
) -> Result<(), SnapshotFailed> {
    let (s, point) = (Arc::clone(snapshotter), point.clone());
    tokio::task::spawn_blocking(move || s.discard(&point)).await.unwrap_or_else(|e| {
        Err(SnapshotFailed(format!("discarding a snapshot stopped unexpectedly ({e})")))
    })
}

/// Runs [`Snapshotter::changed_since`] on the blocking pool.
pub(crate) async fn changed_since(
    snapshotter: &Arc<dyn Snapshotter>,
    point: &RestorePoint,
) -> Result<Vec<PathBuf>, SnapshotFailed> {
    let (s, point) = (Arc::clone(snapshotter), point.clone());
    tokio::task::spawn_blocking(move || s.changed_since(&point)).await.unwrap_or_else(|e| {
        Err(SnapshotFailed(format!("listing the changes stopped unexpectedly ({e})")))
    })
}

/// Whether a tool above the read tier may change files under the roots and so needs a restore
/// point first: all but the memory store (it changes only ARIA's database) and a rollback (it
/// records its own revert commit, and rolling back to that undoes it).
pub(crate) fn writes_files(tool: &str) -> bool {
    tool != crate::memory_tools::MEMORY_STORE
        && tool != aria_tools::tools::snapshot_tools::SnapshotRollback::NAME
}

/// The line added to a write's result so the model and the user can name its restore point.
pub(crate) fn result_note(points: &[RestorePoint]) -> String {
    points
        .iter()
        .map(|p| format!("snapshot: {} (undo with: aria rollback {})", p.id, p.id))
        .collect::<Vec<_>>()
        .join("\n")
}
