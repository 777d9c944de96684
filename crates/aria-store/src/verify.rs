//! Checking the audit chain: in the database ([`Store::verify`]) and offline in an exported
//! bundle ([`verify_bundle`]).
//!
//! Database verification streams rows through one prepared statement and hashes the stored
//! payload text verbatim (it was written canonical), reusing one buffer, so it never parses
//! JSON and allocates only once per distinct session.

use rusqlite::Connection;
use rusqlite::types::ValueRef;
use serde::{Deserialize, Serialize};

use crate::audit::{AuditBundle, BUNDLE_FORMAT};
use crate::canonical::canonical_json;
use crate::chain::{RecordFields, ZERO_HASH, record_hash, record_hash_string};
use crate::error::{StoreError, sql};
use crate::schema::AUDIT_TRIGGERS;
use crate::store::Store;

/// What a verification found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// Records examined. Verification does not stop at a failure, so this is all of them.
    pub records: u64,
    /// The earliest record that does not check out; `None` means the chain is intact.
    pub first_failure: Option<VerifyFailure>,
    /// Whether the append-only triggers are present and unchanged. `false` is a warning: the
    /// chain may still verify, but the database no longer refuses edits. Always `true` for
    /// [`verify_bundle`], which has no database to look at.
    pub triggers_intact: bool,
}

impl VerifyReport {
    /// True when no record failed (the triggers are reported separately).
    pub fn is_ok(&self) -> bool {
        self.first_failure.is_none()
    }

    fn fail(&mut self, seq: u64, reason: impl FnOnce() -> String) {
        if self.first_failure.is_none() {
            self.first_failure = Some(VerifyFailure { seq, reason: reason() });
        }
    }
}

/// The first record that failed, and why, in words for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyFailure {
    pub seq: u64,
    pub reason: String,
}

pub(crate) const ALTERED: &str = "its hash does not match its contents: the record was altered after it \
                       was written";

impl Store {
    /// Verifies the whole chain (`None`) or one session's records (`Some(exact id)`).
    ///
    /// Whole chain: `seq` runs 1, 2, 3… without gaps; every `prev_hash` is the previous row's
    /// `hash`; every `hash` recomputes; every `session_prev_hash` is the previous hash of the
    /// same session. One session: its records' hashes and session links, and each record's
    /// `prev_hash` against the row actually before it in the global chain. Deleting the very
    /// last records of the log cannot be told from a shorter log; compare with a head you
    /// noted earlier ([`Store::audit_head`]) to catch that.
    pub fn verify(&self, session_id: Option<&str>) -> Result<VerifyReport, StoreError> {
        self.with_reader(|conn| {
            // One read transaction: the triggers and the rows are seen at the same moment.
            let _snapshot = conn.unchecked_transaction().map_err(sql("starting to verify"))?;
            let triggers_intact = triggers_intact(conn)?;
            let mut report = match session_id {
                None => crate::verify_chain::verify_chain(conn)?,
                Some(id) => verify_session(conn, id)?,
            };
            report.triggers_intact = triggers_intact;
            Ok(report)
        })
    }
}

fn triggers_intact(conn: &Connection) -> Result<bool, StoreError> {
    let mut stmt = conn
        .prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?1")
        .map_err(sql("checking the audit triggers"))?;
    for (name, definition) in AUDIT_TRIGGERS {
        let mut rows = stmt.query([name]).map_err(sql("checking the audit triggers"))?;
        let row = rows.next().map_err(sql("checking the audit triggers"))?;
        let stored: Option<String> =
            row.map(|r| r.get(0)).transpose().map_err(sql("checking the audit triggers"))?;
        if stored.as_deref() != Some(definition) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The text columns of one row, as raw bytes; `None` for a column that is not text (NULL or a
/// number where text belongs: only a hand-edited database has those).
pub(crate) fn text<'a>(v: ValueRef<'a>) -> Option<&'a [u8]> {
    match v {
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(b),
        _ => None,
    }
}

/// One row as the verifier reads it.
pub(crate) struct Fields<'a> {
    pub seq: u64,
    pub time: &'a [u8],
    pub session_id: Option<&'a [u8]>,
    pub actor: &'a [u8],
    pub kind: &'a [u8],
    pub payload: &'a [u8],
    pub prev_hash: &'a [u8],
    pub session_prev_hash: &'a [u8],
    pub hash: &'a [u8],
}

impl<'a> Fields<'a> {
    /// Reads columns `seq, time, session_id, actor, kind, payload, prev_hash,
    /// session_prev_hash, hash` starting at index 0. Err names what is malformed.
    pub(crate) fn read(row: &'a rusqlite::Row<'_>) -> Result<Fields<'a>, (u64, String)> {
        let get = |i: usize| row.get_ref(i).ok();
        let seq = match get(0) {
            Some(ValueRef::Integer(n)) => {
                u64::try_from(n).map_err(|_| (0, format!("seq {n} is negative")))?
            }
            _ => return Err((0, "a record has no integer seq".to_owned())),
        };
        let col = |i: usize, name: &str| {
            get(i).and_then(text).ok_or_else(|| (seq, format!("column `{name}` holds no text")))
        };
        let session_id = match get(2) {
            Some(ValueRef::Null) => None,
            other => Some(other.and_then(text).ok_or_else(|| (seq, "bad session_id".to_owned()))?),
        };
        Ok(Fields {
            seq,
            time: col(1, "time")?,
            session_id,
            actor: col(3, "actor")?,
            kind: col(4, "kind")?,
            payload: col(5, "payload")?,
            prev_hash: col(6, "prev_hash")?,
            session_prev_hash: col(7, "session_prev_hash")?,
            hash: col(8, "hash")?,
        })
    }

    fn recomputes(&self, buf: &mut Vec<u8>) -> bool {
        let record = RecordFields {
            seq: self.seq,
            time: self.time,
            session_id: self.session_id,
            actor: self.actor,
            kind: self.kind,
            payload: self.payload,
            session_prev_hash: self.session_prev_hash,
        };
        record_hash(buf, self.prev_hash, &record).as_slice() == self.hash
    }
}

pub(crate) fn session_link_broken(session: &[u8]) -> String {
    format!(
        "session_prev_hash does not match the hash of the previous record of session `{}`",
        String::from_utf8_lossy(session)
    )
}

fn verify_session(conn: &Connection, session_id: &str) -> Result<VerifyReport, StoreError> {
    let mut report = VerifyReport { records: 0, first_failure: None, triggers_intact: true };
    let mut stmt = conn
        .prepare(
            "SELECT a.seq, a.time, a.session_id, a.actor, a.kind, a.payload, a.prev_hash, \
             a.session_prev_hash, a.hash, (SELECT p.hash FROM audit_log p WHERE p.seq = a.seq - 1) \
             FROM audit_log a WHERE a.session_id = ?1 ORDER BY a.seq",
        )
        .map_err(sql("reading the session's audit records"))?;
    let mut rows = stmt.query([session_id]).map_err(sql("reading the session's audit records"))?;
    let mut buf = Vec::with_capacity(1024);
    let mut last: Vec<u8> = ZERO_HASH.as_bytes().to_vec();
    while let Some(row) = rows.next().map_err(sql("reading the session's audit records"))? {
        report.records += 1;
        let f = match Fields::read(row) {
            Ok(f) => f,
            Err((seq, reason)) => {
                report.fail(seq, || reason);
                continue;
            }
        };
        let seq = f.seq;
        let before = row.get_ref(9).ok().and_then(text);
        match (seq, before) {
            (1, _) if f.prev_hash != ZERO_HASH.as_bytes() => {
                report.fail(seq, || "the first record's prev_hash is not all zeros".to_owned());
            }
            (1, _) => {}
            (_, None) => report.fail(seq, || format!("record {} is missing (deleted)", seq - 1)),
            (_, Some(h)) if h != f.prev_hash => report.fail(seq, || {
                format!(
                    "prev_hash does not match the hash of the record before it (seq {})",
                    seq - 1
                )
            }),
            _ => {}
        }
        if !f.recomputes(&mut buf) {
            report.fail(seq, || ALTERED.to_owned());
        }
        if f.session_prev_hash != last.as_slice() {
            report.fail(seq, || session_link_broken(session_id.as_bytes()));
        }
        last.clear();
        last.extend_from_slice(f.hash);
    }
    if report.records == 0 {
        return Err(StoreError::NoAuditRecords(session_id.to_owned()));
    }
    Ok(report)
}

/// Verifies an exported bundle with no database: every hash recomputes (the payload is
/// re-canonicalised), every record belongs to the bundle's session, `seq` increases, the
/// session links run unbroken from a first record whose `session_prev_hash` is all zeros, and
/// where two records are adjacent in the global chain (`seq` n and n+1) the second's `prev_hash`
/// is the first's `hash`. Records of other sessions are not in a bundle, so the global links in
/// between cannot be checked here.
pub fn verify_bundle(bundle: &AuditBundle) -> VerifyReport {
    let records = u64::try_from(bundle.records.len()).unwrap_or(u64::MAX);
    let mut report = VerifyReport { records, first_failure: None, triggers_intact: true };
    if bundle.format != BUNDLE_FORMAT {
        report.fail(0, || {
            format!("unknown bundle format `{}` (expected `{BUNDLE_FORMAT}`)", bundle.format)
        });
        return report;
    }
    if bundle.records.is_empty() {
        report.fail(0, || "the bundle holds no records".to_owned());
        return report;
    }
    let mut buf = Vec::with_capacity(1024);
    let mut prev: Option<&crate::audit::AuditRecordRow> = None;
    for r in &bundle.records {
        let seq = r.seq;
        if r.session_id.as_deref() != Some(bundle.session_id.as_str()) {
            report.fail(seq, || {
                format!("record belongs to session {:?}, not `{}`", r.session_id, bundle.session_id)
            });
        }
        match prev {
            Some(p) if seq <= p.seq => {
                report.fail(seq, || format!("seq does not increase (after {})", p.seq))
            }
            Some(p) if seq == p.seq + 1 && r.prev_hash != p.hash => report.fail(seq, || {
                format!("prev_hash does not match the hash of the record before it (seq {})", p.seq)
            }),
            None if seq == 1 && r.prev_hash != ZERO_HASH => {
                report.fail(seq, || "the first record's prev_hash is not all zeros".to_owned());
            }
            _ => {}
        }
        let payload = canonical_json(&r.payload);
        let fields = RecordFields {
            seq,
            time: r.time.as_bytes(),
            session_id: r.session_id.as_deref().map(str::as_bytes),
            actor: r.actor.as_bytes(),
            kind: r.kind.as_bytes(),
            payload: payload.as_bytes(),
            session_prev_hash: r.session_prev_hash.as_bytes(),
        };
        if record_hash_string(&mut buf, r.prev_hash.as_bytes(), &fields) != r.hash {
            report.fail(seq, || ALTERED.to_owned());
        }
        let expected = prev.map_or(ZERO_HASH, |p| p.hash.as_str());
        if r.session_prev_hash != expected {
            report.fail(seq, || match prev {
                None => "the session's first record has a non-zero session_prev_hash: earlier \
                         records of the session are missing"
                    .to_owned(),
                Some(_) => session_link_broken(bundle.session_id.as_bytes()),
            });
        }
        prev = Some(r);
    }
    report
}
