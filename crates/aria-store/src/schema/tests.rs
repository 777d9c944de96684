use std::sync::Arc;

use aria_api::{Journal, NoRedact};
use rusqlite::{Connection, params};

use super::*;
use crate::{Passages, Store};

fn schema_of(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare("SELECT type || ' ' || name || ': ' || sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")
        .unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn versions_are_contiguous_from_one() {
    for (i, m) in MIGRATIONS.iter().enumerate() {
        assert_eq!(m.version as usize, i + 1, "{}", m.description);
    }
    assert_eq!(latest_version() as usize, MIGRATIONS.len());
}

/// A database made by a build that stopped at version 1, with data in it, is migrated by
/// `Store::open` without losing a row, and ends up with the same schema as a fresh database.
#[test]
fn migrating_a_version_1_database_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        assert_eq!(migrate_to(&mut conn, 1).unwrap(), 1);
        conn.execute(
            "INSERT INTO conversations VALUES ('c1', 'old chat', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO sessions (id, conversation_id, task, provider, model, state, iterations, \
             input_tokens, output_tokens, cost_usd, limits, error, answer, created_at, updated_at) \
             VALUES ('s1', 'c1', 'old task', 'ollama', 'qwen', 'done', 3, 10, 20, 0.5, ?1, NULL, '42', \
             '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:01.000Z')",
            [serde_json::to_string(&aria_api::Limits::default()).unwrap()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO messages (conversation_id, session_id, role, content, created_at) \
             VALUES ('c1', 's1', 'user', 'hello from v1', '2025-01-01T00:00:00.000Z')",
            params![],
        )
        .unwrap();
    }

    let store = Store::open(&path, Arc::new(NoRedact)).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest_version());
    let (summary, messages) = store.get_conversation("c1").unwrap().unwrap();
    assert_eq!(summary.title, "old chat");
    assert_eq!(summary.message_count, 1);
    assert_eq!(messages[0].message.content, "hello from v1");
    let session = store.load_session("s1").unwrap().unwrap();
    assert_eq!((session.iterations, session.answer.as_deref()), (3, Some("42")));
    assert_eq!(session.usage.output_tokens, 20);
    // The tables of the later steps work.
    store
        .audit_append(aria_api::AuditEvent::new(
            Some("s1"),
            "system",
            "migrated",
            serde_json::json!({}),
        ))
        .unwrap();
    assert!(store.verify(None).unwrap().is_ok());
    drop(store);

    let fresh = Connection::open_in_memory().unwrap();
    let mut fresh = fresh;
    migrate_to(&mut fresh, latest_version()).unwrap();
    let migrated = Connection::open(&path).unwrap();
    assert_eq!(schema_of(&migrated), schema_of(&fresh));
}

#[test]
fn a_database_newer_than_the_code_is_refused_with_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Store::open(&path, Arc::new(NoRedact)).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaTooNew { found: 99, supported } if supported == latest_version())
    );
    let msg = err.to_string();
    assert!(msg.contains("version 99") && msg.contains("upgrade aria"), "{msg}");
    // Nothing was changed.
    let conn = Connection::open(&path).unwrap();
    assert_eq!(user_version(&conn).unwrap(), 99);
}

#[test]
fn reopening_does_not_rerun_steps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let store = Store::open(&path, Arc::new(NoRedact)).unwrap();
    store
        .audit_append(aria_api::AuditEvent::new(None, "system", "start", serde_json::json!(1)))
        .unwrap();
    drop(store);
    let store = Store::open(&path, Arc::new(NoRedact)).unwrap();
    assert_eq!(store.audit_list(None).unwrap().len(), 1);
    assert_eq!(store.schema_version().unwrap(), latest_version());
}

#[test]
fn a_failing_step_rolls_back_and_names_the_version() {
    let mut conn = Connection::open_in_memory().unwrap();
    migrate_to(&mut conn, 1).unwrap();
    // Sabotage step 2: a table it creates already exists.
    conn.execute_batch("CREATE TABLE traces (x)").unwrap();
    let err = migrate_to(&mut conn, latest_version()).unwrap_err();
    assert!(matches!(err, StoreError::Migration { version: 2, at: 1, .. }), "{err}");
    assert_eq!(user_version(&conn).unwrap(), 1);
    let audit: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'audit_log'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(audit, 0, "step 2 must be all or nothing");
}

/// A database at version 4 (vectors in a `WITHOUT ROWID` table) with memories in it: after
/// `Store::open` migrates it, every vector is still there and found by search, the table is a
/// rowid table, writes of vectors work, and the schema equals a fresh database's.
#[test]
fn migrating_a_version_4_database_keeps_its_memories_and_vectors() {
    use crate::{Embedding, MemoryQuery, NewMemory, SearchMode, Writer};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.db");
    let blob = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    {
        let mut conn = Connection::open(&path).unwrap();
        assert_eq!(migrate_to(&mut conn, 4).unwrap(), 4);
        let at = "2025-06-01T00:00:00.000Z";
        for (rid, id, content, status) in [
            (1, "blue", "my favourite colour is blue", "active"),
            (2, "tea", "prefers green tea in the morning", "active"),
            (3, "gone", "an old address", "deleted"),
        ] {
            conn.execute(
                "INSERT INTO memories (rid, id, content, normalized, kind, importance, confidence, \
                 status, created_at, updated_at) VALUES (?1, ?2, ?3, ?3, 'fact', 0.5, 1, ?4, ?5, ?5)",
                params![rid, id, content, status, at],
            )
            .unwrap();
        }
        for (rid, model, v) in [
            (1, "m", vec![1.0f32, 0.0, 0.0]),
            (2, "m", vec![0.0, 1.0, 0.0]),
            (2, "other", vec![0.5, 0.5]),
        ] {
            conn.execute(
                "INSERT INTO memory_embeddings (rid, model, dims, vector, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![rid, model, v.len() as i64, blob(&v), at],
            )
            .unwrap();
        }
    }

    let store = Store::open(&path, Arc::new(NoRedact)).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest_version());
    let conn = Connection::open(&path).unwrap();
    let table: String = conn
        .query_row("SELECT sql FROM sqlite_master WHERE name = 'memory_embeddings'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(!table.contains("WITHOUT ROWID"), "{table}");
    let rows: Vec<(i64, String, Vec<u8>)> = conn
        .prepare("SELECT rid, model, vector FROM memory_embeddings ORDER BY rid, model")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows,
        vec![
            (1, "m".to_owned(), blob(&[1.0, 0.0, 0.0])),
            (2, "m".to_owned(), blob(&[0.0, 1.0, 0.0])),
            (2, "other".to_owned(), blob(&[0.5, 0.5])),
        ]
    );

    // Step 15: each vector became its memory's first (and only) passage.
    let later_passages: i64 = conn
        .query_row("SELECT count(*) FROM memory_embeddings WHERE passage <> 0", [], |r| r.get(0))
        .unwrap();
    assert_eq!(later_passages, 0);

    // Found by vectors (in both residences), by text, and compared by similarity.
    let search = |vector: &[f32], mode: SearchMode, text: &str| {
        let mut query = MemoryQuery::new(text, Some(Embedding { model: "m", vector }), 5);
        query.mode = mode;
        store.memory_search(&query).unwrap().into_iter().map(|h| h.memory.id).collect::<Vec<_>>()
    };
    for residence in [crate::Residence::Ram, crate::Residence::Sqlite] {
        store.set_memory_vector_residence(residence);
        assert_eq!(search(&[0.1, 0.9, 0.0], SearchMode::Vector, ""), ["tea", "blue"]);
    }
    assert_eq!(search(&[1.0, 0.0, 0.0], SearchMode::Text, "favourite colour"), ["blue"]);
    assert_eq!(store.memory_similarity("blue", "tea", "m").unwrap(), Some(0.0));
    // Writing vectors works on the new table, replacing by (rid, model) as before.
    let new = store
        .memory_insert(
            &NewMemory::new("likes the sea"),
            Some(Passages { model: "m", vectors: &[vec![0.0, 0.0, 2.0]] }),
            Writer::USER,
        )
        .unwrap();
    assert_eq!(search(&[0.0, 0.1, 1.0], SearchMode::Vector, "")[0], new.id);
    let tea = vec![("tea".to_owned(), vec![vec![0.0f32, 0.0, 1.0]])];
    assert_eq!(store.memory_put_embeddings("m", &tea, Writer::USER).unwrap(), 1);
    let vectors_of_tea: i64 = conn
        .query_row(
            "SELECT count(*) FROM memory_embeddings WHERE rid = 2 AND model = 'm'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(vectors_of_tea, 1);
    assert_eq!(store.memory_similarity(&new.id, "tea", "m").unwrap(), Some(1.0));
    drop(store);

    let mut fresh = Connection::open_in_memory().unwrap();
    migrate_to(&mut fresh, latest_version()).unwrap();
    assert_eq!(schema_of(&conn), schema_of(&fresh));
}
