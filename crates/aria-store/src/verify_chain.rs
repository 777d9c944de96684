//! Whole-chain verification as a two-stage pipeline over two threads.
//!
//! The calling thread steps SQLite through `audit_log` in `seq` order, does every link check
//! (gaps, `prev_hash`, `session_prev_hash`: comparisons of stored values) and copies each row's
//! columns into a batch. A second thread rebuilds each record's hash input from the batch and
//! hashes it. The two halves cost about the same, so on two cores verification runs nearly
//! twice as fast as one thread doing both. Batches go back to the reader for reuse, so the
//! steady state allocates nothing but one map entry per distinct session.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};

use rusqlite::{Connection, Rows};

use crate::chain::{RecordFields, ZERO_HASH, record_hash};
use crate::error::{StoreError, sql};
use crate::verify::{ALTERED, Fields, VerifyFailure, VerifyReport, session_link_broken};

/// Rows per batch handed to the hashing thread.
const BATCH_ROWS: usize = 4096;

/// A start..end range into [`Batch::bytes`].
type Span = (usize, usize);

/// One row's columns inside a batch: time, actor, kind, payload, prev_hash, session_prev_hash,
/// hash.
struct RowSpans {
    seq: u64,
    session_id: Option<Span>,
    cols: [Span; 7],
}

/// Rows copied out of SQLite: column bytes back to back, and where each one is.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    rows: Vec<RowSpans>,
}

impl Batch {
    fn push(&mut self, f: &Fields<'_>) {
        let bytes = &mut self.bytes;
        let mut put = |b: &[u8]| {
            let start = bytes.len();
            bytes.extend_from_slice(b);
            (start, bytes.len())
        };
        let session_id = f.session_id.map(&mut put);
        let cols = [f.time, f.actor, f.kind, f.payload, f.prev_hash, f.session_prev_hash, f.hash]
            .map(&mut put);
        self.rows.push(RowSpans { seq: f.seq, session_id, cols });
    }

    fn get(&self, span: Span) -> &[u8] {
        self.bytes.get(span.0..span.1).unwrap_or_default()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.rows.clear();
    }
}

/// The earliest failure one stage saw, ranked within a record in the order the checks are
/// documented: malformed/gap (0), prev_hash (1), hash (2), session link (3).
type Earliest = Option<(u64, u8, String)>;

fn offer(earliest: &mut Earliest, seq: u64, rank: u8, reason: impl FnOnce() -> String) {
    if earliest.is_none() {
        *earliest = Some((seq, rank, reason()));
    }
}

pub(crate) fn verify_chain(conn: &Connection) -> Result<VerifyReport, StoreError> {
    let mut stmt = conn
        .prepare(
            "SELECT seq, time, session_id, actor, kind, payload, prev_hash, session_prev_hash, \
             hash FROM audit_log ORDER BY seq",
        )
        .map_err(sql("reading the audit log"))?;
    let mut rows = stmt.query([]).map_err(sql("reading the audit log"))?;
    let (to_hasher, batches) = sync_channel::<Batch>(2);
    let (recycle, recycled) = channel::<Batch>();
    let (read, hashed) = std::thread::scope(|scope| {
        let hasher = scope.spawn(move || hash_stage(&batches, |b| drop(recycle.send(b))));
        let read = read_stage(&mut rows, &to_hasher, &recycled);
        drop(to_hasher);
        match hasher.join() {
            Ok(hashed) => (read, hashed),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    });
    let (records, linked) = read?;
    let hashed = hashed.map(|seq| (seq, 2, ALTERED.to_owned()));
    let first = match (linked, hashed) {
        (Some(a), Some(b)) => Some(if (b.0, b.1) < (a.0, a.1) { b } else { a }),
        (a, b) => a.or(b),
    };
    Ok(VerifyReport {
        records,
        first_failure: first.map(|(seq, _, reason)| VerifyFailure { seq, reason }),
        triggers_intact: true,
    })
}

/// Steps the rows, checks the links, feeds the hasher. Returns (records, earliest failure).
fn read_stage(
    rows: &mut Rows<'_>,
    to_hasher: &SyncSender<Batch>,
    recycled: &Receiver<Batch>,
) -> Result<(u64, Earliest), StoreError> {
    let mut earliest: Earliest = None;
    let mut records = 0u64;
    let mut prev: Vec<u8> = ZERO_HASH.as_bytes().to_vec();
    let mut expected_seq: u64 = 1;
    let mut heads: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    let mut batch = Batch::default();
    while let Some(row) = rows.next().map_err(sql("reading the audit log"))? {
        records += 1;
        let f = match Fields::read(row) {
            Ok(f) => f,
            Err((seq, reason)) => {
                offer(&mut earliest, seq, 0, || reason);
                continue;
            }
        };
        let seq = f.seq;
        if seq != expected_seq {
            let e = expected_seq;
            offer(&mut earliest, seq, 0, || match seq.checked_sub(e) {
                Some(1) => format!("record {e} is missing (deleted)"),
                Some(_) => format!("records {e} to {} are missing (deleted)", seq - 1),
                None => format!("seq {seq} is out of order (expected {e})"),
            });
        }
        if f.prev_hash != prev.as_slice() {
            offer(&mut earliest, seq, 1, || {
                format!(
                    "prev_hash does not match the hash of the record before it (seq {})",
                    seq.saturating_sub(1)
                )
            });
        }
        batch.push(&f);
        check_session_link(&mut earliest, &mut heads, &f);
        prev.clear();
        prev.extend_from_slice(f.hash);
        expected_seq = seq.saturating_add(1);
        if batch.rows.len() >= BATCH_ROWS {
            let full = std::mem::replace(&mut batch, recycled.try_recv().unwrap_or_default());
            if to_hasher.send(full).is_err() {
                break; // The hasher is gone (it panicked); the join reports it.
            }
        }
    }
    if !batch.rows.is_empty() {
        // An error means the hasher panicked; the join reports it.
        let _ = to_hasher.send(batch);
    }
    Ok((records, earliest))
}

fn check_session_link(
    earliest: &mut Earliest,
    heads: &mut HashMap<Vec<u8>, Vec<u8>>,
    f: &Fields<'_>,
) {
    let seq = f.seq;
    match f.session_id {
        None => {
            if f.session_prev_hash != ZERO_HASH.as_bytes() {
                offer(earliest, seq, 3, || "record has no session but a session_prev_hash".into());
            }
        }
        Some(session) => match heads.get_mut(session) {
            Some(last) => {
                if f.session_prev_hash != last.as_slice() {
                    offer(earliest, seq, 3, || session_link_broken(session));
                }
                last.clear();
                last.extend_from_slice(f.hash);
            }
            None => {
                if f.session_prev_hash != ZERO_HASH.as_bytes() {
                    offer(earliest, seq, 3, || session_link_broken(session));
                }
                heads.insert(session.to_vec(), f.hash.to_vec());
            }
        },
    }
}

/// Recomputes every hash in every batch; returns the first seq whose stored hash differs.
fn hash_stage(batches: &Receiver<Batch>, recycle: impl Fn(Batch)) -> Option<u64> {
    let mut buf = Vec::with_capacity(1024);
    let mut first = None;
    for mut batch in batches {
        if first.is_none() {
            first = batch.rows.iter().find_map(|r| {
                let [time, actor, kind, payload, prev_hash, session_prev_hash, hash] = r.cols;
                let record = RecordFields {
                    seq: r.seq,
                    time: batch.get(time),
                    session_id: r.session_id.map(|s| batch.get(s)),
                    actor: batch.get(actor),
                    kind: batch.get(kind),
                    payload: batch.get(payload),
                    session_prev_hash: batch.get(session_prev_hash),
                };
                let computed = record_hash(&mut buf, batch.get(prev_hash), &record);
                (computed.as_slice() != batch.get(hash)).then_some(r.seq)
            });
        }
        batch.clear();
        recycle(batch);
    }
    first
}
