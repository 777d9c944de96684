use std::sync::Arc;

use aria_api::NoRedact;
use aria_store::{Store, StoreError};

use super::helpers::*;

#[test]
fn store_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
}

#[cfg(unix)]
#[test]
fn database_and_wal_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, path, store) = file_store();
    store.audit_append(event(None, "x", serde_json::json!(1))).unwrap();
    for name in ["aria.db", "aria.db-wal"] {
        let mode = std::fs::metadata(dir.path().join(name)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{name}: {mode:o}");
    }
    assert_eq!(store.path(), Some(path.as_path()));
}

#[test]
fn a_missing_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/aria.db");
    let err = Store::open(&path, Arc::new(NoRedact)).unwrap_err();
    assert!(matches!(err, StoreError::CreateFile { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("no/such/dir/aria.db") && msg.contains("directory exists"), "{msg}");
}

#[test]
fn a_file_that_is_not_sqlite_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aria.db");
    std::fs::write(&path, b"this is not a database, just some text that is long enough....")
        .unwrap();
    let err = Store::open(&path, Arc::new(NoRedact)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("not a database") || msg.contains("SQLite"), "{msg}");
}

#[test]
fn in_memory_store_has_no_path_and_the_latest_schema() {
    let store = memory_store();
    assert_eq!(store.path(), None);
    assert_eq!(store.schema_version().unwrap(), Store::supported_schema_version());
}
