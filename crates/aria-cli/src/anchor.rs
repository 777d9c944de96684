//! The audit anchor: the last record's seq and hash, kept in a file beside the database after
//! every run. A hash chain proves that nothing in it was altered, but deleting its newest
//! records leaves a shorter chain that still verifies; the anchor catches that. It raises the
//! bar rather than closing it: whoever can rewrite both files can still forge a history.
//!
//! The stronger proof is a head kept *off* the machine: `aria audit head` prints it as
//! `SEQ:HASH` ([`Anchor`]'s `Display`), and `aria audit verify --expect-head SEQ:HASH` fails
//! ([`check_expected`]) when that record is gone (the log was cut short) or different (it was
//! rewritten), whatever `audit-head.json` says. Records appended since are fine. An unkeyed
//! chain can prove no more than that: everything after the last head kept elsewhere can still
//! be cut or rewritten unseen, so keep heads often (the daily heartbeat will send one).

use std::path::{Path, PathBuf};

use aria_store::Store;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    pub seq: u64,
    pub hash: String,
}

/// `SEQ:HASH`, the one line `aria audit head` prints.
impl std::fmt::Display for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.seq, self.hash)
    }
}

impl std::str::FromStr for Anchor {
    type Err = String;

    /// Parses `SEQ:HASH` as `aria audit head` prints it: a record number from 1, a colon and
    /// the record's 64 hex digit hash (either case; surrounding whitespace is ignored).
    fn from_str(text: &str) -> Result<Anchor, String> {
        let text = text.trim();
        let Some((seq, hash)) = text.split_once(':') else {
            return Err(format!(
                "`{text}` is not SEQ:HASH; give the line `aria audit head` printed, such as 42:9f86d081884c7d65…"
            ));
        };
        let seq = match seq.parse::<u64>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(format!(
                    "`{seq}` is not a record number (SEQ counts from 1); give the line `aria audit head` printed"
                ));
            }
        };
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "the HASH after `{seq}:` must be 64 hexadecimal characters (got {} characters: `{hash}`); give the line `aria audit head` printed",
                hash.chars().count()
            ));
        }
        Ok(Anchor { seq, hash: hash.to_ascii_lowercase() })
    }
}

/// The head of the log, if it has any records.
pub fn head(store: &Store) -> Result<Option<Anchor>, String> {
    let head = store.audit_head().map_err(|e| e.to_string())?;
    Ok(head.map(|(seq, hash)| Anchor { seq, hash }))
}

/// Checks a head kept elsewhere against the log: `Err` says how the log differs from it.
pub fn check_expected(store: &Store, expected: &Anchor) -> Result<(), String> {
    match store.audit_hash_at(expected.seq).map_err(|e| e.to_string())? {
        Some(hash) if hash == expected.hash => Ok(()),
        Some(_) => Err(format!(
            "record {} is not the one in the expected head {expected}: the log was rewritten",
            expected.seq
        )),
        None => {
            let now = match head(store)? {
                Some(h) => format!("it now ends at record {}", h.seq),
                None => "it is now empty".to_owned(),
            };
            Err(format!(
                "record {} of the expected head is missing ({now}): the log was cut short",
                expected.seq
            ))
        }
    }
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

    #[test]
    fn a_head_prints_and_parses_as_seq_colon_hash() {
        let hash = "ab".repeat(32);
        let anchor = Anchor { seq: 42, hash: hash.clone() };
        assert_eq!(anchor.to_string(), format!("42:{hash}"));
        assert_eq!(format!("42:{hash}").parse::<Anchor>(), Ok(anchor.clone()));
        assert_eq!(format!(" 42:{}\n", hash.to_uppercase()).parse::<Anchor>(), Ok(anchor));
        for (bad, needle) in [
            ("42".to_owned(), "not SEQ:HASH"),
            (format!(":{hash}"), "record number"),
            (format!("0:{hash}"), "record number"),
            (format!("-1:{hash}"), "record number"),
            ("42:abc".to_owned(), "got 3 characters"),
            (format!("42:{hash}0"), "64 hexadecimal"),
            (format!("42:{}", "z".repeat(64)), "64 hexadecimal"),
        ] {
            let err = bad.parse::<Anchor>().unwrap_err();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn an_expected_head_catches_cuts_and_rewrites_but_not_growth() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("aria.db"), Arc::new(NoRedact)).unwrap();
        let any = Anchor { seq: 1, hash: "0".repeat(64) };
        let err = check_expected(&store, &any).unwrap_err();
        assert!(err.contains("missing") && err.contains("empty"), "{err}");
        for i in 0..3 {
            store.audit_append(AuditEvent::new(None, "system", "x", serde_json::json!(i))).unwrap();
        }
        let kept = head(&store).unwrap().unwrap();
        assert_eq!(kept.seq, 3);
        assert_eq!(check_expected(&store, &kept), Ok(()));
        store.audit_append(AuditEvent::new(None, "system", "x", serde_json::json!(3))).unwrap();
        assert_eq!(check_expected(&store, &kept), Ok(()), "records appended since are fine");

        let err = check_expected(&store, &Anchor { seq: 9, ..kept.clone() }).unwrap_err();
        assert!(err.contains("record 9") && err.contains("ends at record 4"), "{err}");
        assert!(err.contains("cut short"), "{err}");
        let forged = Anchor { seq: 3, hash: "f".repeat(64) };
        let err = check_expected(&store, &forged).unwrap_err();
        assert!(err.contains("record 3") && err.contains("rewritten"), "{err}");
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
