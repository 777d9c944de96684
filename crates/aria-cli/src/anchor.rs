//! The audit anchor: the last record's seq and hash, kept in a file beside the database after
//! every run. A hash chain proves that nothing in it was altered, but deleting its newest
//! records leaves a shorter chain that still verifies; the anchor catches that. It raises the
//! bar rather than closing it: whoever can rewrite both files can still forge a history, which
//! is why exported bundles (kept elsewhere) are the stronger proof.

use std::path::{Path, PathBuf};

use aria_store::Store;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    pub seq: u64,
    pub hash: String,
}

fn path(data_dir: &Path) -> PathBuf {
    data_dir.join("audit-head.json")
}

/// Records the current head. Called after each run; best effort (a failure is logged).
pub fn record(data_dir: &Path, store: &Store) {
    let result = (|| -> Result<(), String> {
        let Some((seq, hash)) = store.audit_head().map_err(|e| e.to_string())? else {
            return Ok(());
        };
        let text = serde_json::to_string(&Anchor { seq, hash }).map_err(|e| e.to_string())?;
        let tmp = data_dir.join("audit-head.json.tmp");
        std::fs::write(&tmp, text).map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, path(data_dir)).map_err(|e| e.to_string())
    })();
    if let Err(e) = result {
        tracing::warn!("could not record the audit anchor in {}: {e}", data_dir.display());
    }
}

/// Checks the anchor against the log: `Err` describes the first problem.
pub fn check(data_dir: &Path, store: &Store) -> Result<Option<Anchor>, String> {
    let Ok(text) = std::fs::read_to_string(path(data_dir)) else { return Ok(None) };
    let anchor: Anchor = serde_json::from_str(&text).map_err(|e| {
        format!("the audit anchor {} is unreadable ({e})", path(data_dir).display())
    })?;
    match store.audit_hash_at(anchor.seq).map_err(|e| e.to_string())? {
        Some(hash) if hash == anchor.hash => Ok(Some(anchor)),
        Some(_) => Err(format!(
            "record {} does not match the hash recorded in the audit anchor: the log was rewritten",
            anchor.seq
        )),
        None => Err(format!(
            "record {} existed (the audit anchor recorded it) but is gone: records were deleted from the end of the log",
            anchor.seq
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use aria_api::{AuditEvent, NoRedact};

    use super::*;

    #[test]
    fn truncation_and_rewrites_are_caught() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("aria.db");
        let store = Store::open(&db, Arc::new(NoRedact)).unwrap();
        assert_eq!(check(dir.path(), &store), Ok(None), "no anchor yet");
        for i in 0..3 {
            store.audit_append(AuditEvent::new(None, "system", "x", serde_json::json!(i))).unwrap();
        }
        record(dir.path(), &store);
        assert_eq!(check(dir.path(), &store).unwrap().unwrap().seq, 3);

        let raw = rusqlite_like_truncate(&db);
        assert!(raw.contains("deleted"), "{raw}");
    }

    /// Deletes the last record the way an attacker with the sqlite3 shell would.
    fn rusqlite_like_truncate(db: &Path) -> String {
        let sql = "DROP TRIGGER audit_log_no_delete; DELETE FROM audit_log WHERE seq = 3;";
        let out = std::process::Command::new("sqlite3").arg(db).arg(sql).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let store = Store::open(db, Arc::new(NoRedact)).unwrap();
        assert!(store.verify(None).unwrap().is_ok(), "the shorter chain still verifies on its own");
        check(db.parent().unwrap(), &store).unwrap_err()
    }
}
