//! The schema and its migrations.
//!
//! The schema version lives in `PRAGMA user_version`. [`MIGRATIONS`] is an ordered list; step
//! `n` takes a database from version `n - 1` to `n` and runs in its own `BEGIN IMMEDIATE`
//! transaction together with the `user_version` bump, so a crash mid-migration leaves the
//! database at the previous version, never half-way. Steps only ever add: a released step is
//! never edited, a change is a new step. A database whose version is newer than the last step
//! is refused (see [`StoreError::SchemaTooNew`]).

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{StoreError, sql};

/// One schema step.
#[derive(Debug)]
pub(crate) struct Migration {
    pub version: u32,
    pub description: &'static str,
    pub statements: &'static [&'static str],
}

/// The append-only guards of `audit_log`, by name. [`crate::Store::verify`] compares the stored
/// definitions with these to report `triggers_intact`.
pub(crate) const AUDIT_TRIGGERS: [(&str, &str); 3] = [
    ("audit_log_no_update", AUDIT_NO_UPDATE),
    ("audit_log_no_delete", AUDIT_NO_DELETE),
    ("audit_log_next_seq_only", AUDIT_NEXT_SEQ_ONLY),
];

const AUDIT_NO_UPDATE: &str = "CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log \
     BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END";

const AUDIT_NO_DELETE: &str = "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log \
     BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END";

/// `INSERT OR REPLACE` deletes the old row without firing delete triggers (unless the connection
/// enabled recursive triggers), and an insert with a chosen `seq` could fill a gap left by a
/// deleted row. Only "the next number" is accepted.
const AUDIT_NEXT_SEQ_ONLY: &str = "CREATE TRIGGER audit_log_next_seq_only BEFORE INSERT ON \
     audit_log WHEN NEW.seq IS NULL OR NEW.seq <> COALESCE((SELECT MAX(seq) FROM audit_log), 0) + 1 \
     BEGIN SELECT RAISE(ABORT, 'audit log is append-only: seq must be the next number'); END";

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "conversations, sessions and messages",
        statements: &[
            "CREATE TABLE conversations (
                id TEXT PRIMARY KEY NOT NULL,
                title TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            ) STRICT",
            "CREATE INDEX conversations_updated_at ON conversations(updated_at)",
            "CREATE TABLE sessions (
                id TEXT PRIMARY KEY NOT NULL,
                conversation_id TEXT NOT NULL REFERENCES conversations(id),
                task TEXT NOT NULL,
                provider TEXT NOT NULL,
                model TEXT NOT NULL,
                state TEXT NOT NULL,
                iterations INTEGER NOT NULL DEFAULT 0,
                input_tokens INTEGER NOT NULL DEFAULT 0,
                output_tokens INTEGER NOT NULL DEFAULT 0,
                cost_usd REAL NOT NULL DEFAULT 0,
                limits TEXT NOT NULL,
                error TEXT,
                answer TEXT,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            ) STRICT",
            "CREATE INDEX sessions_state ON sessions(state)",
            "CREATE INDEX sessions_conversation ON sessions(conversation_id)",
            "CREATE INDEX sessions_created_at ON sessions(created_at)",
            "CREATE TABLE messages (
                id INTEGER PRIMARY KEY,
                conversation_id TEXT NOT NULL REFERENCES conversations(id),
                session_id TEXT REFERENCES sessions(id),
                role TEXT NOT NULL,
                content TEXT NOT NULL,
                tool_calls TEXT,
                tool_call_id TEXT,
                model TEXT,
                input_tokens INTEGER,
                output_tokens INTEGER,
                created_at TEXT NOT NULL
            ) STRICT",
            "CREATE INDEX messages_conversation ON messages(conversation_id, id)",
        ],
    },
    Migration {
        version: 2,
        description: "traces and the hash-chained audit log",
        statements: &[
            "CREATE TABLE traces (
                id INTEGER PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id),
                kind TEXT NOT NULL,
                name TEXT NOT NULL,
                duration_ms INTEGER NOT NULL,
                input_tokens INTEGER NOT NULL,
                output_tokens INTEGER NOT NULL,
                cost_usd REAL NOT NULL,
                outcome TEXT NOT NULL,
                detail TEXT NOT NULL,
                created_at TEXT NOT NULL
            ) STRICT",
            "CREATE INDEX traces_session ON traces(session_id, id)",
            "CREATE TABLE audit_log (
                seq INTEGER PRIMARY KEY,
                time TEXT NOT NULL,
                session_id TEXT,
                actor TEXT NOT NULL,
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                prev_hash TEXT NOT NULL,
                session_prev_hash TEXT NOT NULL,
                hash TEXT NOT NULL
            ) STRICT",
            "CREATE INDEX audit_log_session ON audit_log(session_id, seq)",
            AUDIT_NO_UPDATE,
            AUDIT_NO_DELETE,
            AUDIT_NEXT_SEQ_ONLY,
        ],
    },
    Migration {
        version: 3,
        description: "conversation summaries (context compaction)",
        statements: &["CREATE TABLE conversation_summaries (
                conversation_id TEXT PRIMARY KEY NOT NULL REFERENCES conversations(id),
                text TEXT NOT NULL,
                covers INTEGER NOT NULL,
                model TEXT NOT NULL,
                updated_at TEXT NOT NULL
            ) STRICT"],
    },
    Migration {
        version: 4,
        description: "long-term memories, their full-text index and embeddings",
        statements: crate::memory_schema::STATEMENTS,
    },
    Migration {
        version: 5,
        description: "memory vectors in a rowid table (fast sequential loads)",
        statements: crate::memory_schema::ROWID_EMBEDDINGS,
    },
    Migration {
        version: 6,
        description: "private memories (never sent to a model off this machine)",
        statements: crate::memory_schema::PRIVATE_MEMORIES,
    },
    Migration {
        version: 7,
        description: "approval questions asked through the daemon",
        statements: crate::conversations::APPROVALS,
    },
    Migration {
        version: 8,
        description: "the channels' outbox, cursors and chats (Telegram)",
        statements: crate::outbox::OUTBOX,
    },
    Migration {
        version: 9,
        description: "scheduled jobs and their slot claims",
        statements: crate::jobs::JOBS,
    },
    Migration {
        version: 10,
        description: "notifications (what the user was told, pushed or not); manual job runs",
        statements: &[crate::notifications::NOTIFICATIONS, crate::jobs::MANUAL_RUNS],
    },
    Migration {
        version: 11,
        description: "the web search cache and log",
        statements: crate::search::SEARCH,
    },
    Migration {
        version: 12,
        description: "housekeeping: when each retention task last ran",
        statements: crate::retention::HOUSEKEEPING,
    },
    Migration {
        version: 13,
        description: "each job's latest scheduled slot on its row (faster scheduler ticks)",
        statements: crate::jobs::LAST_SCHEDULED_SLOT,
    },
    Migration {
        version: 14,
        description: "agent profiles made with aria agents add, the API or the web UI",
        statements: crate::agents::AGENTS,
    },
    Migration {
        version: 15,
        description: "memories: one vector per passage of a long text",
        statements: crate::memory_schema::PASSAGES,
    },
    Migration {
        version: 16,
        description: "scoped API tokens; who answered an approval; unconfirmed memories",
        statements: &[
            crate::tokens::API_TOKENS,
            crate::tokens::APPROVAL_ANSWERED_BY,
            crate::memory_schema::UNCONFIRMED,
            crate::memory_schema::DROP_BUMP_TRIGGER,
            crate::memory_schema::BUMP_TRIGGER_16,
            crate::memory_schema::BUMP_GENERATION,
        ],
    },
];

/// The version this build writes.
pub(crate) fn latest_version() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

pub(crate) fn user_version(conn: &Connection) -> Result<u32, StoreError> {
    let v: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sql("reading the schema version"))?;
    u32::try_from(v)
        .map_err(|_| StoreError::Corrupt { what: format!("schema version (user_version) is {v}") })
}

/// Brings the schema up to `target` (normally [`latest_version`]), one transaction per step.
/// Returns the version the database is at afterwards.
pub(crate) fn migrate_to(conn: &mut Connection, target: u32) -> Result<u32, StoreError> {
    let supported = latest_version();
    let found = user_version(conn)?;
    if found > supported {
        return Err(StoreError::SchemaTooNew { found, supported });
    }
    for step in MIGRATIONS.iter().filter(|m| m.version > found && m.version <= target) {
        let fail = |at: u32| {
            move |source| StoreError::Migration {
                version: step.version,
                description: step.description,
                at,
                source,
            }
        };
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(fail(found))?;
        // Another process may have migrated while we waited for the write lock.
        let at = user_version(&tx)?;
        if at >= step.version {
            continue;
        }
        for statement in step.statements {
            tx.execute_batch(statement).map_err(fail(at))?;
        }
        tx.pragma_update(None, "user_version", step.version).map_err(fail(at))?;
        tx.commit().map_err(fail(at))?;
    }
    user_version(conn)
}

#[cfg(test)]
mod tests;
