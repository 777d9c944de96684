use std::sync::Arc;

use aria_api::NoRedact;
use aria_store::{
    Embedding, MemoryQuery, MemoryStatus, MemoryUpdate, NewMemory, Passages, SearchMode, Store,
    Writer,
};

use super::helpers::*;

const MODEL: &str = "test:toy";

/// A vector that points at `n` (distinct memories get distinct directions).
fn vector(n: usize) -> Vec<f32> {
    (0..8).map(|i| if i == n % 8 { 1.0 } else { 0.01 * ((n / 8) % 50) as f32 }).collect()
}

/// Three handles on one file (as three processes would have) plus two threads sharing one
/// handle insert, update, forget and embed memories at once. Afterwards every write is there
/// exactly once, the full-text index agrees with the table, the audit chain verifies, and the
/// in-memory vector index of each handle agrees with SQLite.
#[test]
fn concurrent_writers_do_not_corrupt_the_store() {
    let (_dir, path, first) = file_store();
    let first = Arc::new(first);
    let second = Store::open(&path, Arc::new(NoRedact)).unwrap();
    let third = Store::open(&path, Arc::new(NoRedact)).unwrap();
    const EACH: usize = 40;
    let writers: Vec<(&str, &Store)> =
        vec![("a", &*first), ("b", &first), ("c", &second), ("d", &third)];
    std::thread::scope(|scope| {
        for (name, store) in writers {
            scope.spawn(move || {
                for i in 0..EACH {
                    let mut new = NewMemory::new(format!("writer {name} note {i} shared word"));
                    new.id = Some(format!("{name}-{i}"));
                    let v = [vector(i)];
                    let e = (i % 2 == 0).then_some(Passages { model: MODEL, vectors: &v });
                    store.memory_insert(&new, e, Writer::USER).unwrap();
                    if i % 5 == 1 {
                        let update = MemoryUpdate {
                            content: Some(format!("writer {name} note {i} edited word")),
                            ..MemoryUpdate::default()
                        };
                        store
                            .memory_update(&format!("{name}-{i}"), &update, None, Writer::USER)
                            .unwrap();
                    }
                    if i % 7 == 3 {
                        store.memory_forget(&format!("{name}-{i}"), Writer::USER).unwrap();
                    }
                    if i % 10 == 9 {
                        let todo = store.memory_missing_embeddings(MODEL, 3).unwrap();
                        let vectors: Vec<(String, Vec<Vec<f32>>)> =
                            todo.into_iter().map(|(id, _)| (id, vec![vector(i + 1)])).collect();
                        store.memory_put_embeddings(MODEL, &vectors, Writer::USER).unwrap();
                    }
                    // Searches interleave with the writes, loading and updating the index.
                    let q = vector(i);
                    let query = MemoryQuery::new(
                        "shared word",
                        Some(Embedding { model: MODEL, vector: &q }),
                        5,
                    );
                    store.memory_search(&query).unwrap();
                }
            });
        }
    });

    let forgotten = (0..EACH).filter(|i| i % 7 == 3).count() * 4;
    assert_eq!(
        second.memory_counts().unwrap(),
        ((4 * EACH - forgotten) as u64, 0, forgotten as u64)
    );
    let conn = raw(&path);
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    // The index's own structure is sound (rank 0: forgotten rows are in the content table but
    // deliberately not in the index, so a content comparison does not apply)…
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')", []).unwrap();
    // …it holds one document per live memory…
    let indexed: i64 =
        conn.query_row("SELECT count(*) FROM memories_fts_docsize", [], |r| r.get(0)).unwrap();
    assert_eq!(indexed as usize, 4 * EACH - forgotten, "forgotten memories left the text index");
    // …and those documents are the current texts: "edited" finds exactly the live edited ones.
    let mut query = MemoryQuery::new("edited", None, 1000);
    query.mode = SearchMode::Text;
    let mut edited: Vec<String> = fresh_ids(&second.memory_search(&query).unwrap());
    edited.sort();
    let mut want: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .flat_map(|n| {
            (0..EACH).filter(|i| i % 5 == 1 && i % 7 != 3).map(move |i| format!("{n}-{i}"))
        })
        .collect();
    want.sort();
    assert_eq!(edited, want);
    let report = third.verify(None).unwrap();
    assert_eq!(report.first_failure, None);
    let writes = 4 * (EACH + (0..EACH).filter(|i| i % 5 == 1 || i % 7 == 3).count());
    assert!(
        report.records as usize >= writes,
        "{} audit records < {writes} writes",
        report.records
    );

    // Every handle's vector search returns exactly what a fresh handle loading from SQLite does.
    let fresh = Store::open(&path, Arc::new(NoRedact)).unwrap();
    for i in 0..16 {
        let q = vector(i);
        let mut query = MemoryQuery::new("", Some(Embedding { model: MODEL, vector: &q }), 500);
        query.mode = SearchMode::Vector;
        let want: Vec<String> =
            fresh.memory_search(&query).unwrap().into_iter().map(|h| h.memory.id).collect();
        for store in [&*first, &second, &third] {
            let got: Vec<String> =
                store.memory_search(&query).unwrap().into_iter().map(|h| h.memory.id).collect();
            assert_eq!(got, want);
        }
        assert!(!want.is_empty());
        for id in &want {
            assert_eq!(fresh.memory_get(id).unwrap().unwrap().status, MemoryStatus::Active);
        }
    }
}

fn fresh_ids(hits: &[aria_store::MemoryHit]) -> Vec<String> {
    hits.iter().map(|h| h.memory.id.clone()).collect()
}

/// A database made by the previous schema version opens, gains the memory tables, and stores
/// and finds a memory.
#[test]
fn an_older_database_gains_the_memory_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        // Version 3's schema, as an older build left it.
        let store = Store::open(&path, Arc::new(NoRedact)).unwrap();
        drop(store);
        conn.execute_batch(
            "DROP TABLE api_tokens; DROP TABLE agents; ALTER TABLE conversations DROP COLUMN agent; \
             DROP TABLE housekeeping; DROP TABLE search_log; DROP TABLE search_cache; DROP TABLE notifications; DROP TABLE job_slots; DROP TABLE jobs; \
             DROP TABLE channel_chats; DROP TABLE channel_state; DROP TABLE outbox; \
             DROP TABLE memory_state; DROP TABLE memory_embeddings; DROP TABLE memories_fts; \
             DROP TABLE memories; DROP TABLE approvals; PRAGMA user_version = 3;",
        )
        .unwrap();
    }
    let store = Store::open(&path, Arc::new(NoRedact)).unwrap();
    assert_eq!(store.schema_version().unwrap(), Store::supported_schema_version());
    let m = store.memory_insert(&NewMemory::new("migrated fine"), None, Writer::USER).unwrap();
    let hits = store.memory_search(&MemoryQuery::new("migrated", None, 3)).unwrap();
    assert_eq!(hits[0].memory.id, m.id);
}
