//! Retention: traces older than `[traces] keep_days` are deleted, and when each
//! housekeeping task last ran is kept so that several processes (the daemon, CLI runs) do it
//! at most once a day between them.
//!
//! Only `traces` rows are deleted. The audit log is append-only (triggers refuse UPDATE and
//! DELETE) and hash-chained, so it is never pruned; sessions stay too, since audit records
//! name them. A prune that deleted rows appends one `traces.prune` audit record saying how
//! many and before when, so a trace that is missing is explained.

use std::time::{Duration, SystemTime};

use aria_api::AuditEvent;
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::json;

use crate::StoreError;
use crate::error::sql;
use crate::store::{Store, rfc3339_at};

/// The statements of the schema step that adds the housekeeping table.
pub(crate) const HOUSEKEEPING: &[&str] = &["CREATE TABLE housekeeping (
        task TEXT PRIMARY KEY NOT NULL,
        last_run_at TEXT NOT NULL
    ) STRICT"];

/// The task name of the trace prune in `housekeeping`.
pub const PRUNE_TRACES: &str = "prune_traces";

impl Store {
    /// Deletes the traces recorded more than `keep_days` days before `now` and records the
    /// run; returns how many were deleted. `keep_days` 0 keeps everything (and deletes none).
    pub fn prune_traces(&self, keep_days: u32, now: SystemTime) -> Result<u64, StoreError> {
        self.housekeeping_tx(|tx| self.prune_traces_in(tx, keep_days, now))
    }

    /// Like [`Store::prune_traces`], unless any process did it less than `every` before `now`:
    /// then `None`. The check and the prune are one `BEGIN IMMEDIATE` transaction, so of two
    /// processes asking at once only one prunes.
    pub fn prune_traces_if_due(
        &self,
        keep_days: u32,
        now: SystemTime,
        every: Duration,
    ) -> Result<Option<u64>, StoreError> {
        self.housekeeping_tx(|tx| {
            let last: Option<String> = tx
                .query_row(
                    "SELECT last_run_at FROM housekeeping WHERE task = ?1",
                    [PRUNE_TRACES],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql("reading when traces were last pruned"))?;
            let due_after = rfc3339_at(now.checked_sub(every).unwrap_or(SystemTime::UNIX_EPOCH));
            let now_text = rfc3339_at(now);
            // A time after `now` means the clock went back: due, rather than never again.
            if let Some(last) = last
                && last > due_after
                && last <= now_text
            {
                return Ok(None);
            }
            self.prune_traces_in(tx, keep_days, now).map(Some)
        })
    }

    /// When a housekeeping task last ran (RFC 3339 UTC), if ever.
    pub fn housekeeping_last_run(&self, task: &str) -> Result<Option<String>, StoreError> {
        self.conn()
            .query_row("SELECT last_run_at FROM housekeeping WHERE task = ?1", [task], |r| r.get(0))
            .optional()
            .map_err(sql("reading the housekeeping table"))
    }

    fn housekeeping_tx<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("pruning traces"))?;
        let out = f(&tx)?;
        tx.commit().map_err(sql("pruning traces"))?;
        Ok(out)
    }

    fn prune_traces_in(
        &self,
        tx: &Transaction<'_>,
        keep_days: u32,
        now: SystemTime,
    ) -> Result<u64, StoreError> {
        let mut deleted = 0;
        if keep_days > 0 {
            let keep = Duration::from_secs(u64::from(keep_days) * 86_400);
            let before = rfc3339_at(now.checked_sub(keep).unwrap_or(SystemTime::UNIX_EPOCH));
            let n = tx
                .execute("DELETE FROM traces WHERE created_at < ?1", [&before])
                .map_err(sql("pruning traces"))?;
            deleted = u64::try_from(n).unwrap_or(u64::MAX);
            if deleted > 0 {
                let payload = json!({"before": before, "deleted": deleted, "keep_days": keep_days});
                self.append_events_in(
                    tx,
                    [AuditEvent::new(None, "aria", "traces.prune", payload)],
                )?;
            }
        }
        tx.execute(
            "INSERT INTO housekeeping (task, last_run_at) VALUES (?1, ?2) \
             ON CONFLICT (task) DO UPDATE SET last_run_at = excluded.last_run_at",
            params![PRUNE_TRACES, rfc3339_at(now)],
        )
        .map_err(sql("recording the trace prune"))?;
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests;
