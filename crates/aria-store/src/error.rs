//! The one error type of the store. Every message says what failed, why, and what to do next.

use std::path::PathBuf;

/// Anything the store could not do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "could not create the ARIA database file {path}: {source}; check that the directory \
         exists and that you may write to it"
    )]
    CreateFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "could not open the ARIA database {path}: {source}; check that the file is a SQLite \
         database and that you may read and write it"
    )]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    #[error(
        "the ARIA database could not be switched to write-ahead logging (journal_mode is \
         `{mode}`); keep the database on a local filesystem (not a network share)"
    )]
    WalUnavailable { mode: String },

    #[error(
        "the ARIA database has schema version {found}, but this build of aria understands only \
         up to version {supported}; upgrade aria, or open a backup made by this version"
    )]
    SchemaTooNew { found: u32, supported: u32 },

    #[error(
        "could not migrate the ARIA database to schema version {version} ({description}): \
         {source}; the step was rolled back and the database is unchanged at version {at}; \
         free disk space or restore a backup, then retry"
    )]
    Migration {
        version: u32,
        description: &'static str,
        at: u32,
        #[source]
        source: rusqlite::Error,
    },

    #[error(
        "the ARIA database is locked by another process (waited {waited_ms} ms while \
         {context}); retry when the other aria process has finished"
    )]
    Busy { context: &'static str, waited_ms: u64 },

    #[error(
        "database error while {context}: {source}; check disk space and permissions, and run \
         `aria audit verify` if the file may have been edited"
    )]
    Sqlite {
        context: &'static str,
        #[source]
        source: rusqlite::Error,
    },

    #[error(
        "no conversation with id `{0}` (an id, or a unique prefix of at least 4 characters; \
         list them with `aria conversations list`)"
    )]
    UnknownConversation(String),

    #[error(
        "no session with id `{0}` (an id, or a unique prefix of at least 4 characters; list \
         them with `aria sessions list`)"
    )]
    UnknownSession(String),

    #[error("`{given}` is the start of several {noun} ids ({candidates}); give more characters")]
    AmbiguousId { noun: &'static str, given: String, candidates: String },

    #[error(
        "session `{session}` belongs to conversation `{actual}`, not `{given}`; this is a bug \
         in the caller, please report it"
    )]
    SessionConversationMismatch { session: String, actual: String, given: String },

    #[error(
        "no audit records for session `{0}`; check the id (list sessions with `aria sessions`)"
    )]
    NoAuditRecords(String),

    #[error("could not encode {what} as JSON: {source}; this is a bug, please report it")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },

    #[error(
        "the database holds a value this build cannot read: {what}; the file may have been \
         edited by hand, run `aria audit verify` and restore a backup if needed"
    )]
    Corrupt { what: String },

    #[error(
        "{field} = {value} is too large to store (the maximum is {max}); this is a bug in the \
         caller, please report it",
        max = i64::MAX
    )]
    NumberTooLarge { field: &'static str, value: u64 },

    #[error("no memory with id `{0}`; list memories with `aria memories list`")]
    UnknownMemory(String),

    #[error(
        "a memory with id `{0}` already exists; ids must be unique (edit it with \
         `aria memories edit {0}`, or give the new memory another id)"
    )]
    DuplicateMemoryId(String),

    #[error("the memory was not stored: {0}")]
    InvalidMemory(String),

    #[error("no scheduled job named `{0}`; list them with `aria schedule list`")]
    UnknownJob(String),

    #[error(
        "a scheduled job named `{0}` already exists; names are unique (delete it with \
         `aria schedule delete {0}`, or choose another name)"
    )]
    DuplicateJob(String),
}

impl StoreError {
    /// Whether trying again later may succeed (another process held the write lock).
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Busy { .. })
    }
}

impl From<StoreError> for aria_api::JournalError {
    fn from(err: StoreError) -> Self {
        aria_api::JournalError::new(err.to_string())
    }
}

/// Builds the mapper for a rusqlite error that happened while doing `context`.
pub(crate) fn sql(context: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |source| {
        if source.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) {
            StoreError::Busy { context, waited_ms: crate::store::BUSY_TIMEOUT_MS }
        } else {
            StoreError::Sqlite { context, source }
        }
    }
}

/// u64 → SQLite INTEGER, refusing values SQLite cannot hold.
pub(crate) fn to_i64(field: &'static str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::NumberTooLarge { field, value })
}

/// SQLite INTEGER → u64, refusing negative values (only a hand-edited file holds them).
pub(crate) fn to_u64(field: &'static str, value: i64) -> Result<u64, StoreError> {
    u64::try_from(value)
        .map_err(|_| StoreError::Corrupt { what: format!("{field} is negative ({value})") })
}
