//! Notifications: what ARIA told, or would have told, the user — a scheduled job
//! completed, failed, was skipped, timed out or was interrupted, a heartbeat. Every notification
//! is recorded here whether or not it was pushed (`/notify off` stops pushes, never records), so
//! the web UI's list and `/api/v1/notifications` show them all. Kept bounded: the oldest beyond
//! [`KEEP`] are dropped when a new one is written.

use rusqlite::params;
use serde::Serialize;

use crate::StoreError;
use crate::error::sql;
use crate::store::{Store, now_rfc3339};

/// The table of the schema step that adds notifications.
pub(crate) const NOTIFICATIONS: &str = "CREATE TABLE notifications (
        id INTEGER PRIMARY KEY,
        time TEXT NOT NULL,
        kind TEXT NOT NULL,
        job TEXT,
        slot TEXT,
        text TEXT NOT NULL,
        pushed TEXT NOT NULL
    ) STRICT";

/// How many notifications are kept.
pub const KEEP: i64 = 10_000;

/// One recorded notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredNotification {
    pub id: i64,
    /// RFC 3339 UTC.
    pub time: String,
    /// `started`, `completed`, `failed`, `skipped`, `timeout`, `interrupted`, `heartbeat`, …
    pub kind: String,
    pub job: Option<String>,
    pub slot: Option<String>,
    pub text: String,
    /// Where it was pushed (`telegram`, `desktop`, `web`), empty when pushes were off.
    pub pushed: Vec<String>,
}

impl Store {
    /// Records a notification and returns it with its id and time.
    pub fn notification_add(
        &self,
        kind: &str,
        job: Option<&str>,
        slot: Option<&str>,
        text: &str,
        pushed: &[String],
    ) -> Result<StoredNotification, StoreError> {
        let time = now_rfc3339();
        let text = self.redact_text(text);
        let pushed_text = pushed.join(",");
        let conn = self.conn();
        conn.execute(
            "INSERT INTO notifications (time, kind, job, slot, text, pushed) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![time, kind, job, slot, text, pushed_text],
        )
        .map_err(sql("recording a notification"))?;
        let id = conn.last_insert_rowid();
        conn.execute("DELETE FROM notifications WHERE id <= ?1", [id - KEEP])
            .map_err(sql("recording a notification"))?;
        Ok(StoredNotification {
            id,
            time,
            kind: kind.to_owned(),
            job: job.map(str::to_owned),
            slot: slot.map(str::to_owned),
            text,
            pushed: pushed.to_vec(),
        })
    }

    /// The newest `limit` notifications with an id below `before` (all when `None`), newest
    /// first.
    pub fn notifications(
        &self,
        limit: usize,
        before: Option<i64>,
    ) -> Result<Vec<StoredNotification>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT id, time, kind, job, slot, text, pushed FROM notifications \
                 WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(sql("reading notifications"))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        stmt.query_map(params![before.unwrap_or(i64::MAX), limit], |r| {
            let pushed: String = r.get(6)?;
            Ok(StoredNotification {
                id: r.get(0)?,
                time: r.get(1)?,
                kind: r.get(2)?,
                job: r.get(3)?,
                slot: r.get(4)?,
                text: r.get(5)?,
                pushed: pushed.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect(),
            })
        })
        .map_err(sql("reading notifications"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql("reading notifications"))
    }

    /// How many notifications of `kind` were recorded at or after `since` (RFC 3339 UTC).
    pub fn notifications_since(&self, kind: &str, since: &str) -> Result<u64, StoreError> {
        crate::store::count(
            &self.conn(),
            "SELECT COUNT(*) FROM notifications WHERE kind = ?1 AND time >= ?2",
            params![kind, since],
            "counting notifications",
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use aria_api::NoRedact;

    use super::*;

    #[test]
    fn records_lists_newest_first_and_pages() {
        let store = Store::open_in_memory(Arc::new(NoRedact)).unwrap();
        let pushed = vec!["telegram".to_owned()];
        let a = store.notification_add("completed", Some("j"), Some("s"), "one", &pushed).unwrap();
        let b = store.notification_add("skipped", None, None, "two", &[]).unwrap();
        let all = store.notifications(10, None).unwrap();
        assert_eq!(all, vec![b.clone(), a.clone()]);
        assert_eq!(all[1].pushed, pushed);
        assert!(all[0].pushed.is_empty());
        assert_eq!(store.notifications(10, Some(b.id)).unwrap(), vec![a]);
        assert_eq!(store.notifications_since("skipped", "2000-01-01T00:00:00Z").unwrap(), 1);
        assert_eq!(store.notifications_since("skipped", "2999-01-01T00:00:00Z").unwrap(), 0);
    }
}
