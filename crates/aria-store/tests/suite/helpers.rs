use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aria_api::{AuditEvent, NoRedact, Redact};
use aria_store::Store;
use serde_json::Value;

/// Replaces one literal secret with `[REDACTED]`.
#[derive(Debug)]
pub struct Hide(pub &'static str);

impl Redact for Hide {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if text.contains(self.0) {
            Cow::Owned(text.replace(self.0, "[REDACTED]"))
        } else {
            Cow::Borrowed(text)
        }
    }
}

/// A store in a fresh temp dir; keep the dir alive as long as the store.
pub fn file_store() -> (tempfile::TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aria.db");
    let store = Store::open(&path, Arc::new(NoRedact)).unwrap();
    (dir, path, store)
}

pub fn memory_store() -> Store {
    Store::open_in_memory(Arc::new(NoRedact)).unwrap()
}

/// A second, raw connection to the same file: what someone with a `sqlite3` shell can do.
pub fn raw(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    conn
}

pub fn drop_triggers(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "DROP TRIGGER audit_log_no_update; DROP TRIGGER audit_log_no_delete; \
         DROP TRIGGER audit_log_next_seq_only;",
    )
    .unwrap();
}

pub fn event(session: Option<&str>, kind: &str, payload: Value) -> AuditEvent {
    AuditEvent::new(session, "agent", kind, payload)
}

/// Recomputes a record's hash from the documented recipe alone, with no help from the crate's
/// internals: an independent offline verifier (and a forger's tool).
pub fn documented_hash(r: &aria_store::AuditRecordRow) -> String {
    use sha2::{Digest, Sha256};
    let record = serde_json::json!({
        "actor": r.actor, "kind": r.kind, "payload": r.payload, "seq": r.seq,
        "session_id": r.session_id, "session_prev_hash": r.session_prev_hash, "time": r.time,
    });
    let text = format!("{}{}", r.prev_hash, aria_store::canonical_json(&record));
    hex::encode(Sha256::digest(text.as_bytes()))
}
