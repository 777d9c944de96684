//! Opening the database: the file, the pragmas, the migrations, the connection lock.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use aria_api::Redact;
use rusqlite::{Connection, OpenFlags};

use crate::error::{StoreError, sql};
use crate::memory_index::{Residence, VectorIndex};
use crate::schema;

/// How long a writer waits for another process's write lock before giving up with
/// [`StoreError::Busy`].
pub(crate) const BUSY_TIMEOUT_MS: u64 = 5_000;

/// The ARIA database: one SQLite file in WAL mode behind one connection.
///
/// Pragmas set on every connection:
/// - `journal_mode = WAL`: readers never block the writer, and several processes (the CLI, the
///   gateway, the scheduler) can share the file.
/// - `synchronous = NORMAL`: a commit is written to the WAL before the call returns, so it
///   survives the process crashing or being killed (`kill -9`). It is *not* fsynced on every
///   commit, only at checkpoints, so a power loss or kernel panic may roll back the last few
///   commits. The database is never corrupted by that, and the audit chain stays valid: it just
///   ends earlier. `FULL` would fsync every commit, at roughly one disk flush per audit event.
/// - `foreign_keys = ON`, `busy_timeout = 5000` ms.
///
/// `Store` is `Send + Sync`: the connection sits in a `Mutex`, so calls from many threads are
/// serialised. Calls block; async callers should use `spawn_blocking` for long ones
/// ([`Store::verify`] over a large log).
#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
    redactor: Arc<dyn Redact>,
    path: Option<PathBuf>,
    /// The vectors of the last embedding model searched (see `memory_index.rs`). Locked after
    /// `conn` when both are needed, never before.
    vectors: Mutex<Option<VectorIndex>>,
    /// Where the next loaded index keeps its exact vectors.
    residence: Mutex<Residence>,
    /// Bumped by every change to the jobs made through this store (see
    /// [`Store::jobs_fingerprint`]).
    pub(crate) jobs_generation: std::sync::atomic::AtomicU64,
}

impl Store {
    /// Opens (creating if needed, mode 0600 on unix) the database at `path` and migrates it to
    /// the schema of this build. The directory must exist. `redactor` scrubs audit payloads.
    pub fn open(path: &Path, redactor: Arc<dyn Redact>) -> Result<Store, StoreError> {
        create_private_file(path)?;
        let open_err = |source| StoreError::Open { path: path.to_owned(), source };
        let mut conn = Connection::open(path).map_err(open_err)?;
        configure(&conn, true)?;
        schema::migrate_to(&mut conn, schema::latest_version())?;
        Ok(Store {
            conn: Mutex::new(conn),
            redactor,
            path: Some(path.to_owned()),
            vectors: Mutex::new(None),
            residence: Mutex::new(Residence::default()),
            jobs_generation: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// A private database in memory, for tests and `--dry-run`.
    pub fn open_in_memory(redactor: Arc<dyn Redact>) -> Result<Store, StoreError> {
        let open_err = |source| StoreError::Open { path: PathBuf::from(":memory:"), source };
        let mut conn = Connection::open_in_memory().map_err(open_err)?;
        configure(&conn, false)?;
        schema::migrate_to(&mut conn, schema::latest_version())?;
        Ok(Store {
            conn: Mutex::new(conn),
            redactor,
            path: None,
            vectors: Mutex::new(None),
            residence: Mutex::new(Residence::default()),
            jobs_generation: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The database file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The schema version of the open database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        schema::user_version(&self.conn())
    }

    /// Refuses (`true`) or allows again every write through this store (SQLite's
    /// `query_only`): for maintenance, and to check what ARIA does when its database cannot
    /// be written (the health check reports it unhealthy).
    pub fn set_read_only(&self, read_only: bool) -> Result<(), StoreError> {
        self.conn()
            .pragma_update(None, "query_only", read_only)
            .map_err(crate::error::sql("switching the database to read-only"))
    }

    /// The latest schema version this build knows.
    pub fn supported_schema_version() -> u32 {
        schema::latest_version()
    }

    /// The connection. A panic while it was held cannot leave a transaction open (rusqlite
    /// rolls back on drop), so a poisoned lock is still a usable connection.
    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This process's vector index. Like `conn`, a poisoned lock is still usable: the index is
    /// only ever replaced whole or changed by infallible in-memory operations.
    pub(crate) fn vector_index(&self) -> MutexGuard<'_, Option<VectorIndex>> {
        self.vectors.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where the vector index keeps the exact vectors it rescores with (see
    /// [`Residence`]); takes effect at once (the index is reloaded on the next search).
    pub fn set_memory_vector_residence(&self, residence: Residence) {
        *self.residence.lock().unwrap_or_else(PoisonError::into_inner) = residence;
        let mut index = self.vector_index();
        if index.as_ref().is_some_and(|i| i.residence() != residence) {
            *index = None;
        }
    }

    pub(crate) fn memory_vector_residence(&self) -> Residence {
        *self.residence.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `text` with the secrets this store's redactor knows replaced (for what leaves the
    /// process live, like an error shown to a client, as it is when stored).
    pub fn redact_text(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    pub(crate) fn redactor(&self) -> &dyn Redact {
        &*self.redactor
    }

    /// Runs a long read on its own read-only connection when the store is a file, so appends
    /// by this process are not held up (WAL readers see a consistent snapshot). In memory there
    /// is only the one connection.
    pub(crate) fn with_reader<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match &self.path {
            Some(path) => {
                let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                let conn = Connection::open_with_flags(path, flags)
                    .map_err(|source| StoreError::Open { path: path.clone(), source })?;
                conn.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))
                    .map_err(sql("setting the busy timeout"))?;
                f(&conn)
            }
            None => f(&self.conn()),
        }
    }
}

fn configure(conn: &Connection, is_file: bool) -> Result<(), StoreError> {
    conn.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))
        .map_err(sql("setting the busy timeout"))?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(sql("switching to write-ahead logging"))?;
    if is_file && !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::WalUnavailable { mode });
    }
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(sql("setting synchronous"))?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(sql("enabling foreign keys"))?;
    Ok(())
}

/// Creates the file with mode 0600 before SQLite does, so the conversation history is private
/// from the first byte. SQLite gives the `-wal` and `-shm` files the same mode. An existing
/// file keeps its mode.
fn create_private_file(path: &Path) -> Result<(), StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(path)
        .map(drop)
        .map_err(|source| StoreError::CreateFile { path: path.to_owned(), source })
}

/// The one non-negative number a `SELECT COUNT(*) …`-style query answers.
pub(crate) fn count(
    conn: &Connection,
    query: &str,
    params: impl rusqlite::Params,
    what: &'static str,
) -> Result<u64, StoreError> {
    let n: i64 = conn.query_row(query, params, |r| r.get(0)).map_err(sql(what))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Now, as RFC 3339 UTC with milliseconds: `2026-11-22T04:21:28.123Z`. Fixed width, so text
/// order is time order.
pub(crate) fn now_rfc3339() -> String {
    rfc3339_at(std::time::SystemTime::now())
}

/// `at` as RFC 3339 UTC with milliseconds, in the form every time in the database has (what
/// to compare stored times with; text order is time order).
pub fn rfc3339_at(at: std::time::SystemTime) -> String {
    let t = time::OffsetDateTime::from(at).to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use aria_api::NoRedact;

    fn pragma(store: &Store, name: &str) -> String {
        store
            .conn()
            .pragma_query_value(None, name, |r| r.get::<_, rusqlite::types::Value>(0))
            .map(|v| match v {
                rusqlite::types::Value::Integer(n) => n.to_string(),
                rusqlite::types::Value::Text(s) => s,
                other => format!("{other:?}"),
            })
            .unwrap()
    }

    #[test]
    fn file_connection_has_the_documented_pragmas() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("a.db"), Arc::new(NoRedact)).unwrap();
        assert_eq!(pragma(&store, "journal_mode"), "wal");
        assert_eq!(pragma(&store, "synchronous"), "1", "NORMAL");
        assert_eq!(pragma(&store, "foreign_keys"), "1");
        assert_eq!(pragma(&store, "busy_timeout"), "5000");
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T' && t.as_bytes()[19] == b'.', "{t}");
        let parsed =
            time::OffsetDateTime::parse(&t, &time::format_description::well_known::Rfc3339)
                .unwrap();
        assert_eq!(parsed.offset(), time::UtcOffset::UTC);
    }
}
