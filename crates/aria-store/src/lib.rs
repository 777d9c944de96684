//! The durable state of ARIA: one SQLite file.
//!
//! This crate owns the schema and its migrations, conversations, messages, sessions, traces,
//! and the hash-chained audit log: appending to it, verifying it in place, exporting one
//! session as a bundle and verifying that bundle offline. It implements the two persistence
//! ports of `aria-api`, [`aria_api::Journal`] and [`aria_api::AuditSink`], on [`Store`].
//!
//! It deliberately does not decide *what* is recorded (the agent loop does), does not know
//! what a secret looks like (it calls the [`aria_api::Redact`] it was opened with on every
//! audit payload), and is synchronous: async callers use `spawn_blocking` for long calls.
//! Long-term memories (`memory*.rs`): FTS5 BM25 and exact vector search, fused by their
//! standardised scores (z-scores) after one round of pseudo-relevance feedback, or by reciprocal
//! rank when a list is too short to standardise (`memory_fusion.rs`); the vectors of the model
//! being searched are held in memory as int8 codes (loaded from SQLite), scanned first, and the
//! best candidates rescored with the exact `f32` vectors (in memory, or read back from SQLite:
//! [`Residence`]) under an error bound that makes the answer the exact top-k. The outbox of the
//! chat channels (`outbox.rs`): written first, sent after, never sent twice after a recorded
//! success. Scheduled jobs and their per-slot claims (`jobs.rs`): a slot is claimed in one
//! `BEGIN IMMEDIATE` transaction before it runs. The web search cache and log (`search.rs`):
//! results by normalised query until they expire, one row per search. Retention (`retention.rs`):
//! traces older than a number of days are deleted, at most once a day across processes; the audit
//! log never is.
//!
//! The key design decision: **the audit chain is defined on bytes, not on a serde data
//! model.** A record's hash covers a canonical JSON text that this crate writes itself
//! ([`canonical_json`]), the payload is stored as that canonical text, and verification
//! rebuilds each record's bytes by concatenation from the stored columns, without parsing any
//! JSON. That makes verification fast (hundreds of thousands of records per second) and
//! independent of `serde_json` features, and lets anyone re-check a log with a SHA-256 tool.
//!
//! # The audit chain
//!
//! Table `audit_log`, one row per event:
//! `seq` (1, 2, 3, … with no gaps), `time` (RFC 3339 UTC with milliseconds,
//! `2026-11-22T04:21:28.123Z`), `session_id` (text or NULL), `actor`, `kind`, `payload`
//! (canonical JSON text of the payload *after* redaction), `prev_hash`, `session_prev_hash`,
//! `hash` (each 64 lowercase hex characters).
//!
//! ```text
//! prev_hash         = hash of record seq-1;                     64 × "0" for seq 1
//! session_prev_hash = hash of the latest earlier record with the same session_id;
//!                     64 × "0" for a session's first record and for records with no session
//! hash              = lowercase_hex( SHA-256( prev_hash ‖ C ) )
//! C                 = canonical JSON of the object
//!                     {"actor","kind","payload","seq","session_id","session_prev_hash","time"}
//!                     (session_id is null when absent; payload is the JSON value itself)
//! ```
//!
//! `prev_hash` enters as its 64 ASCII characters. Canonical JSON (see [`canonical_json`]):
//! object keys sorted by their UTF-8 bytes, no whitespace, strings escaped as `serde_json`
//! does (only `"`, `\` and control characters; `\b \t \n \f \r`, others `\u00xx` lowercase),
//! numbers as `serde_json` prints them. For example, with a session and `seq` 7:
//!
//! ```text
//! <prev_hash>{"actor":"tool:fs.read","kind":"tool.start","payload":{"path":"a.txt"},"seq":7,
//! "session_id":"0193…","session_prev_hash":"<hash of that session's previous record>",
//! "time":"2026-11-22T04:21:28.123Z"}
//! ```
//! (one line, no newline). Appends read the head and insert inside one `BEGIN IMMEDIATE`
//! transaction, so processes sharing the file queue up and never fork the chain. Triggers
//! refuse `UPDATE`, `DELETE` and out-of-order inserts (including `INSERT OR REPLACE`); they
//! make the log append-only for honest code, and the hashes make any other change evident.
//! The chain is tamper-*evident*, not tamper-proof: someone who can write the file can
//! rewrite the whole chain consistently, which only a head hash noted elsewhere
//! ([`Store::audit_head`]) exposes.

mod agents;
mod audit;
mod canonical;
mod chain;
mod conversations;
mod error;
mod ids;
mod jobs;
mod journal;
mod memory;
mod memory_fusion;
mod memory_index;
mod memory_schema;
mod memory_search;
mod memory_text;
mod notifications;
mod outbox;
mod retention;
pub mod runlock;
mod schema;
mod search;
mod spend;
mod store;
mod summaries;
mod tokens;
mod verify;
mod verify_chain;

pub use agents::{AgentWrite, StoredAgent};
pub use audit::{AuditBundle, AuditRecordRow, BUNDLE_FORMAT, HASH_ALGORITHM, render_text};
pub use canonical::{canonical_json, write_canonical_json};
pub use chain::ZERO_HASH;
pub use conversations::{ConversationPage, StoredApproval};
pub use error::StoreError;
pub use ids::{IdKind, MIN_PREFIX};
pub use jobs::{Claim, Job, JobSchedule, NewJob, SlotRun};
pub use journal::{ConversationSummary, StoredMessage, StoredTrace};
pub use memory::{
    Embedding, Memory, MemoryKind, MemoryStatus, MemoryUpdate, NewMemory, Passages, Provenance,
    Writer, normalize_text,
};
pub use memory_fusion::rank_relevance;
pub use memory_index::Residence;
pub use memory_search::{
    CANDIDATES, Duplicate, MemoryFilter, MemoryHit, MemoryQuery, RRF_K, SearchMode, TextCandidates,
    fts_query,
};
pub use notifications::StoredNotification;
pub use outbox::{ChannelChat, OutboxItem, OutboxKind, OutboxState};
pub use retention::PRUNE_TRACES;
pub use search::{SearchCacheStats, SearchVolume};
pub use spend::{SpendGroup, SpendRow, day_start_utc, day_start_utc_days_ago, month_start_utc};
pub use store::{Store, rfc3339_at};
pub use tokens::{StoredToken, token_digest};
pub use verify::{VerifyFailure, VerifyReport, verify_bundle};
