//! The snapshot hook: before a recoverable write runs, everything it may change is snapshotted,
//! so governed mode can let it run without asking (DESIGN.md principle 2). The loop only knows
//! this trait; the git implementation lives in `aria-tools` (adapted below) and is wired in
//! `aria-cli`.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

/// A restore point taken before a call: its id (what `aria rollback` takes) and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestorePoint {
    pub id: String,
    pub repository: String,
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
