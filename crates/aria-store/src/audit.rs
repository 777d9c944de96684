//! Appending to, reading and exporting the audit chain. Verification is in `verify.rs`; the hash
//! definition in `chain.rs`; the specification in the crate docs.

use std::collections::HashMap;

use aria_api::{AuditEvent, AuditSink, JournalError, redact_json};
use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::{canonical_json, write_json_string};
use crate::chain::{RecordFields, ZERO_HASH, record_hash_string};
use crate::error::{StoreError, sql, to_i64, to_u64};
use crate::store::{Store, now_rfc3339};

/// `format` of an [`AuditBundle`].
pub const BUNDLE_FORMAT: &str = "aria-audit-bundle/1";

/// `hash_algorithm` of an [`AuditBundle`]: how to recompute every hash without ARIA.
pub const HASH_ALGORITHM: &str = "hash = lowercase hex SHA-256 of the bytes prev_hash (64 hex \
    chars) followed by the canonical JSON of {\"actor\",\"kind\",\"payload\",\"seq\",\
    \"session_id\",\"session_prev_hash\",\"time\"}; canonical JSON = object keys sorted by UTF-8 \
    bytes, no whitespace, serde_json string escapes and number format; prev_hash = hash of record \
    seq-1; session_prev_hash = hash of the previous record of the same session; both are 64 '0' \
    when there is no such record (and session_prev_hash is 64 '0' when session_id is null)";

/// One stored audit record, as listed and exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecordRow {
    pub seq: u64,
    pub time: String,
    pub session_id: Option<String>,
    pub actor: String,
    pub kind: String,
    /// The redacted payload.
    pub payload: Value,
    pub prev_hash: String,
    pub session_prev_hash: String,
    pub hash: String,
}

/// One session's audit records, self-describing, verifiable offline with [`crate::verify_bundle`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditBundle {
    /// [`BUNDLE_FORMAT`].
    pub format: String,
    pub session_id: String,
    pub exported_at: String,
    /// [`HASH_ALGORITHM`].
    pub hash_algorithm: String,
    /// Ascending `seq`.
    pub records: Vec<AuditRecordRow>,
}

const SELECT_ROW: &str = "SELECT seq, time, session_id, actor, kind, payload, prev_hash, \
                          session_prev_hash, hash FROM audit_log";

impl Store {
    /// Appends one event (payload redacted first) and returns its `seq`. Durable against a
    /// process crash when it returns (see [`Store`] on `synchronous = NORMAL`).
    pub fn audit_append(&self, event: AuditEvent) -> Result<u64, StoreError> {
        let (first, _) = self.append_all(std::iter::once(event))?;
        Ok(first)
    }

    /// Appends many events in one transaction and returns their `seq`s, in order. All or none.
    pub fn audit_append_batch(
        &self,
        events: impl IntoIterator<Item = AuditEvent>,
    ) -> Result<Vec<u64>, StoreError> {
        let (first, count) = self.append_all(events)?;
        Ok((first..first + count).collect())
    }

    /// Returns (first seq, count). Reading the head of the chain and inserting happen in one
    /// `BEGIN IMMEDIATE` transaction: it takes the database's write lock before the read, so two
    /// processes appending to the same file queue up instead of both extending the same head.
    fn append_all(
        &self,
        events: impl IntoIterator<Item = AuditEvent>,
    ) -> Result<(u64, u64), StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("starting an audit append"))?;
        let appended = self.append_events_in(&tx, events)?;
        tx.commit().map_err(sql("committing audit records"))?;
        Ok(appended)
    }

    /// Appends events inside the caller's write transaction (one that began with
    /// `BEGIN IMMEDIATE`), so a change and its audit records commit or roll back together.
    /// Returns (first seq, count).
    pub(crate) fn append_events_in(
        &self,
        tx: &rusqlite::Transaction<'_>,
        events: impl IntoIterator<Item = AuditEvent>,
    ) -> Result<(u64, u64), StoreError> {
        let (mut seq, mut prev) = head(tx)?.unwrap_or_else(|| (0, ZERO_HASH.to_owned()));
        let first = seq + 1;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO audit_log (seq, time, session_id, actor, kind, payload, \
                     prev_hash, session_prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .map_err(sql("preparing the audit insert"))?;
            let mut session_head = tx
                .prepare_cached(
                    "SELECT hash FROM audit_log WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1",
                )
                .map_err(sql("preparing the audit session lookup"))?;
            let mut heads: HashMap<String, String> = HashMap::new();
            let mut buf = Vec::with_capacity(512);
            for mut event in events {
                redact_json(self.redactor(), &mut event.payload);
                let payload = canonical_json(&event.payload);
                seq += 1;
                let time = now_rfc3339();
                let session_prev = match &event.session_id {
                    None => ZERO_HASH.to_owned(),
                    Some(id) => match heads.get(id) {
                        Some(hash) => hash.clone(),
                        None => session_head
                            .query_row([id], |row| row.get::<_, String>(0))
                            .optional()
                            .map_err(sql("reading the session's last audit record"))?
                            .unwrap_or_else(|| ZERO_HASH.to_owned()),
                    },
                };
                let fields = RecordFields {
                    seq,
                    time: time.as_bytes(),
                    session_id: event.session_id.as_deref().map(str::as_bytes),
                    actor: event.actor.as_bytes(),
                    kind: event.kind.as_bytes(),
                    payload: payload.as_bytes(),
                    session_prev_hash: session_prev.as_bytes(),
                };
                let hash = record_hash_string(&mut buf, prev.as_bytes(), &fields);
                insert
                    .execute(params![
                        to_i64("audit seq", seq)?,
                        time,
                        event.session_id,
                        event.actor,
                        event.kind,
                        payload,
                        prev,
                        session_prev,
                        hash,
                    ])
                    .map_err(sql("inserting an audit record"))?;
                if let Some(id) = event.session_id {
                    heads.insert(id, hash.clone());
                }
                prev = hash;
            }
        }
        Ok((first, seq + 1 - first))
    }

    /// The last record's `seq` and `hash`: the value to write down somewhere else (a paper,
    /// another machine) if you want to detect a rewrite of the whole log later.
    pub fn audit_head(&self) -> Result<Option<(u64, String)>, StoreError> {
        head(&self.conn())
    }

    /// The hash of record `seq`, or `None` when there is no such record.
    pub fn audit_hash_at(&self, seq: u64) -> Result<Option<String>, StoreError> {
        let conn = self.conn();
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        let mut stmt = conn
            .prepare_cached("SELECT hash FROM audit_log WHERE seq = ?1")
            .map_err(sql("reading an audit hash"))?;
        let mut rows = stmt.query([seq]).map_err(sql("reading an audit hash"))?;
        match rows.next().map_err(sql("reading an audit hash"))? {
            Some(row) => Ok(Some(row.get(0).map_err(sql("reading an audit hash"))?)),
            None => Ok(None),
        }
    }

    /// How many audit records of each kind were written at or after `since` (RFC 3339 UTC),
    /// by kind (the heartbeat's "operations since the last one").
    pub fn audit_kind_counts_since(&self, since: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT kind, COUNT(*) FROM audit_log WHERE time >= ?1 GROUP BY kind ORDER BY kind",
            )
            .map_err(sql("counting audit records"))?;
        stmt.query_map([since], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0).unsigned_abs())))
            .map_err(sql("counting audit records"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql("counting audit records"))
    }

    /// The last `last` records (all when `None`), ascending `seq`.
    pub fn audit_list(&self, last: Option<usize>) -> Result<Vec<AuditRecordRow>, StoreError> {
        let limit = last.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let conn = self.conn();
        let query = format!("SELECT * FROM ({SELECT_ROW} ORDER BY seq DESC LIMIT ?1) ORDER BY seq");
        let mut stmt = conn.prepare_cached(&query).map_err(sql("listing audit records"))?;
        let rows = stmt.query_map([limit], read_row).map_err(sql("listing audit records"))?;
        collect_rows(rows)
    }

    /// The repositories ARIA has taken restore points in, as its audit log records them
    /// (`tool.snapshot` and `snapshot.rollback`), oldest first, each once. The CLI lists and
    /// rolls back snapshots there even when the run that took them used another `--root`.
    pub fn snapshot_repositories(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT payload FROM audit_log WHERE kind IN ('tool.snapshot', 'snapshot.rollback') ORDER BY seq",
            )
            .map_err(sql("finding snapshot repositories"))?;
        let payloads = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(sql("finding snapshot repositories"))?;
        let mut out: Vec<String> = Vec::new();
        for payload in payloads {
            let payload = payload.map_err(sql("finding snapshot repositories"))?;
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&payload) else { continue };
            let points = value["snapshots"].as_array().cloned().unwrap_or_default();
            let found = points
                .iter()
                .filter_map(|p| p["repository"].as_str())
                .chain(value["repository"].as_str())
                .map(str::to_owned);
            for repo in found {
                if !out.contains(&repo) {
                    out.push(repo);
                }
            }
        }
        Ok(out)
    }

    /// Every record of one session (exact id), ascending `seq`.
    pub fn audit_for_session(&self, session_id: &str) -> Result<Vec<AuditRecordRow>, StoreError> {
        let conn = self.conn();
        let query = format!("{SELECT_ROW} WHERE session_id = ?1 ORDER BY seq");
        let mut stmt = conn.prepare_cached(&query).map_err(sql("reading a session's audit"))?;
        let rows =
            stmt.query_map([session_id], read_row).map_err(sql("reading a session's audit"))?;
        collect_rows(rows)
    }

    /// One session's records as a self-contained bundle for [`crate::verify_bundle`].
    pub fn export_session(&self, session_id: &str) -> Result<AuditBundle, StoreError> {
        let records = self.audit_for_session(session_id)?;
        if records.is_empty() {
            return Err(StoreError::NoAuditRecords(session_id.to_owned()));
        }
        Ok(AuditBundle {
            format: BUNDLE_FORMAT.to_owned(),
            session_id: session_id.to_owned(),
            exported_at: now_rfc3339(),
            hash_algorithm: HASH_ALGORITHM.to_owned(),
            records,
        })
    }
}

impl AuditSink for Store {
    fn append(&self, event: AuditEvent) -> Result<u64, JournalError> {
        Ok(self.audit_append(event)?)
    }
}

fn head(conn: &rusqlite::Connection) -> Result<Option<(u64, String)>, StoreError> {
    let row = conn
        .prepare_cached("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1")
        .and_then(|mut stmt| {
            stmt.query_row([], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)))
                .optional()
        })
        .map_err(sql("reading the last audit record"))?;
    row.map(|(seq, hash)| Ok((to_u64("audit seq", seq)?, hash))).transpose()
}

/// A row with its payload still as text; parsed in [`collect_rows`] so a bad payload becomes a
/// [`StoreError::Corrupt`] naming the seq rather than a generic SQLite error.
struct RawRow {
    seq: i64,
    time: String,
    session_id: Option<String>,
    actor: String,
    kind: String,
    payload: String,
    prev_hash: String,
    session_prev_hash: String,
    hash: String,
}

fn read_row(row: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        seq: row.get(0)?,
        time: row.get(1)?,
        session_id: row.get(2)?,
        actor: row.get(3)?,
        kind: row.get(4)?,
        payload: row.get(5)?,
        prev_hash: row.get(6)?,
        session_prev_hash: row.get(7)?,
        hash: row.get(8)?,
    })
}

fn collect_rows(
    rows: impl Iterator<Item = rusqlite::Result<RawRow>>,
) -> Result<Vec<AuditRecordRow>, StoreError> {
    rows.map(|raw| {
        let raw = raw.map_err(sql("reading an audit record"))?;
        let payload = serde_json::from_str(&raw.payload).map_err(|e| StoreError::Corrupt {
            what: format!("the payload of audit record {} is not JSON ({e})", raw.seq),
        })?;
        Ok(AuditRecordRow {
            seq: to_u64("audit seq", raw.seq)?,
            time: raw.time,
            session_id: raw.session_id,
            actor: raw.actor,
            kind: raw.kind,
            payload,
            prev_hash: raw.prev_hash,
            session_prev_hash: raw.session_prev_hash,
            hash: raw.hash,
        })
    })
    .collect()
}

/// One line per record: `seq time session actor kind payload`, the session `-` when there is
/// none, the payload as canonical JSON. A field that is empty or holds whitespace or control
/// characters is written as a JSON string, so every record stays on one line and the columns
/// stay unambiguous.
pub fn render_text(records: &[AuditRecordRow]) -> String {
    let mut out = String::new();
    for r in records {
        let session = r.session_id.as_deref().map_or_else(|| "-".to_owned(), token);
        out.push_str(&format!(
            "{} {} {} {} {} {}\n",
            r.seq,
            token(&r.time),
            session,
            token(&r.actor),
            token(&r.kind),
            canonical_json(&r.payload)
        ));
    }
    out
}

fn token(s: &str) -> String {
    if !s.is_empty()
        && s != "-"
        && !s.chars().any(|c| c.is_whitespace() || c.is_control() || c == '"')
    {
        return s.to_owned();
    }
    let mut buf = Vec::with_capacity(s.len() + 2);
    write_json_string(&mut buf, s.as_bytes());
    String::from_utf8_lossy(&buf).into_owned()
}

impl Store {
    /// Closes the tool calls of `session_id` that started and never ended (the process that ran
    /// them died: a crash, `kill -9`): one `tool.interrupted` record each, by `system`, so the
    /// log says how every call ended. Calls closed before are left alone. Returns the names of
    /// the calls closed now.
    pub fn audit_close_interrupted_calls(
        &self,
        session_id: &str,
    ) -> Result<Vec<String>, StoreError> {
        let records = self.audit_for_session(session_id)?;
        let mut open: Vec<(String, String)> = Vec::new();
        for r in &records {
            let call = r.payload["call_id"].as_str().unwrap_or_default().to_owned();
            match r.kind.as_str() {
                "tool.start" if !call.is_empty() => {
                    let name = r.payload["name"].as_str().unwrap_or_default().to_owned();
                    open.push((call, name));
                }
                "tool.end" | "tool.interrupted" => open.retain(|(c, _)| *c != call),
                _ => {}
            }
        }
        let events = open.iter().map(|(call, name)| {
            AuditEvent::new(
                Some(session_id),
                "system",
                "tool.interrupted",
                serde_json::json!({
                    "call_id": call, "name": name,
                    "reason": "ARIA stopped while the call ran (it was killed or crashed); the \
                               sandbox ends a program together with the process that started it",
                }),
            )
        });
        let events: Vec<AuditEvent> = events.collect();
        if !events.is_empty() {
            self.audit_append_batch(events)?;
        }
        Ok(open.into_iter().map(|(_, name)| name).collect())
    }
}
