//! What someone with write access to the file can do, and what verification says about it.

use aria_store::Store;
use serde_json::json;

use super::helpers::*;

fn seeded() -> (tempfile::TempDir, std::path::PathBuf, Store) {
    let (dir, path, store) = file_store();
    for i in 1..=6 {
        let session = if i % 2 == 0 { "even" } else { "odd" };
        store.audit_append(event(Some(session), "step", json!({"i": i, "note": "fine"}))).unwrap();
    }
    assert!(store.verify(None).unwrap().is_ok());
    (dir, path, store)
}

#[test]
fn triggers_refuse_update_delete_replace_and_gaps() {
    let (_dir, path, store) = seeded();
    let conn = raw(&path);
    let attempts = [
        "UPDATE audit_log SET payload = '{}' WHERE seq = 3",
        "DELETE FROM audit_log WHERE seq = 3",
        "DELETE FROM audit_log",
        "INSERT OR REPLACE INTO audit_log SELECT * FROM audit_log WHERE seq = 3",
        "INSERT INTO audit_log (seq, time, actor, kind, payload, prev_hash, session_prev_hash, hash) \
         VALUES (100, 't', 'a', 'k', '{}', 'x', 'y', 'z')",
        "INSERT INTO audit_log (time, actor, kind, payload, prev_hash, session_prev_hash, hash) \
         VALUES ('t', 'a', 'k', '{}', 'x', 'y', 'z')",
    ];
    for attempt in attempts {
        let err = conn.execute(attempt, []).unwrap_err().to_string();
        assert!(err.contains("audit log is append-only"), "{attempt}: {err}");
    }
    let report = store.verify(None).unwrap();
    assert_eq!((report.records, report.first_failure, report.triggers_intact), (6, None, true));
}

#[test]
fn an_edited_payload_is_named_by_seq() {
    let (_dir, path, store) = seeded();
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute("UPDATE audit_log SET payload = '{\"i\":4,\"note\":\"evil\"}' WHERE seq = 4", [])
        .unwrap();
    let report = store.verify(None).unwrap();
    let failure = report.first_failure.unwrap();
    assert_eq!(failure.seq, 4);
    assert!(failure.reason.contains("altered"), "{}", failure.reason);
    assert!(!report.triggers_intact);
    assert_eq!(report.records, 6);
    // The session view sees it too; the other session is untouched.
    assert_eq!(store.verify(Some("even")).unwrap().first_failure.unwrap().seq, 4);
    assert!(store.verify(Some("odd")).unwrap().is_ok());
}

#[test]
fn an_edited_hash_or_link_is_named_by_seq() {
    for (column, seq) in
        [("hash", 2u64), ("prev_hash", 5), ("session_prev_hash", 3), ("time", 6), ("actor", 1)]
    {
        let (_dir, path, store) = seeded();
        let conn = raw(&path);
        drop_triggers(&conn);
        let sql = format!(
            "UPDATE audit_log SET {column} = replace({column}, substr({column}, 2, 1), 'Z') WHERE seq = ?1"
        );
        assert_eq!(conn.execute(&sql, [seq as i64]).unwrap(), 1);
        let failure = store.verify(None).unwrap().first_failure.unwrap();
        assert_eq!(failure.seq, seq, "{column}: {}", failure.reason);
    }
}

#[test]
fn a_deleted_middle_row_is_reported_as_a_gap() {
    let (_dir, path, store) = seeded();
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute("DELETE FROM audit_log WHERE seq = 3", []).unwrap();
    let report = store.verify(None).unwrap();
    assert_eq!(report.records, 5);
    let failure = report.first_failure.unwrap();
    assert_eq!(failure.seq, 4);
    assert!(failure.reason.contains("record 3 is missing"), "{}", failure.reason);
    // Session "even" (2, 4, 6) does not own record 3, but record 4's prev_hash needs it.
    let even = store.verify(Some("even")).unwrap().first_failure.unwrap();
    assert_eq!(even.seq, 4);
    assert!(even.reason.contains("record 3 is missing"), "{}", even.reason);
    // Session "odd" (1, 3, 5) lost its own record: its link from 5 to 1 is broken.
    assert_eq!(store.verify(Some("odd")).unwrap().first_failure.unwrap().seq, 5);
}

#[test]
fn a_deleted_first_row_is_detected() {
    let (_dir, path, store) = seeded();
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute("DELETE FROM audit_log WHERE seq = 1", []).unwrap();
    let failure = store.verify(None).unwrap().first_failure.unwrap();
    assert_eq!(failure.seq, 2);
}

#[test]
fn a_neutered_trigger_with_the_same_name_is_reported() {
    let (_dir, path, store) = seeded();
    let conn = raw(&path);
    conn.execute_batch(
        "DROP TRIGGER audit_log_no_update; \
         CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN SELECT 1; END;",
    )
    .unwrap();
    let report = store.verify(None).unwrap();
    assert!(report.is_ok(), "the records themselves are fine");
    assert!(!report.triggers_intact);
}

#[test]
fn invalid_utf8_written_into_a_column_is_a_failure_not_a_crash() {
    let (_dir, path, store) = seeded();
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute("UPDATE audit_log SET payload = CAST(x'7bff7d' AS TEXT) WHERE seq = 2", [])
        .unwrap();
    assert_eq!(store.verify(None).unwrap().first_failure.unwrap().seq, 2);
    assert!(store.audit_list(None).is_err(), "listing refuses a payload it cannot read");
}

#[test]
fn a_rewritten_tail_is_only_caught_against_a_noted_head() {
    let (_dir, path, store) = seeded();
    let (seq, head) = store.audit_head().unwrap().unwrap();
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute("DELETE FROM audit_log WHERE seq = 6", []).unwrap();
    // Truncation at the end leaves a shorter, valid chain: documented limitation.
    assert!(store.verify(None).unwrap().is_ok());
    assert_ne!(store.audit_head().unwrap(), Some((seq, head)));
}

/// A forger who recomputes the hash of the record they edit (here: detaching the last record
/// from its session's history) keeps the global chain valid; the session links still catch it,
/// in the database and in an exported bundle.
#[test]
fn a_forged_record_with_a_recomputed_hash_breaks_the_session_links() {
    let (_dir, path, store) = seeded();
    let mut last = store.audit_list(Some(1)).unwrap().remove(0);
    assert_eq!((last.seq, last.session_id.as_deref()), (6, Some("even")));
    last.session_prev_hash = aria_store::ZERO_HASH.to_owned();
    last.hash = documented_hash(&last);
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute(
        "UPDATE audit_log SET session_prev_hash = ?1, hash = ?2 WHERE seq = 6",
        [&last.session_prev_hash, &last.hash],
    )
    .unwrap();
    let failure = store.verify(None).unwrap().first_failure.unwrap();
    assert_eq!(failure.seq, 6);
    assert!(failure.reason.contains("session `even`"), "{}", failure.reason);
    assert_eq!(store.verify(Some("even")).unwrap().first_failure.unwrap().seq, 6);
    let bundle = store.export_session("even").unwrap();
    assert_eq!(aria_store::verify_bundle(&bundle).first_failure.unwrap().seq, 6);
}

/// The link checks and the hash checks run on different threads; the report still names the
/// earliest record, whichever check caught it.
#[test]
fn the_earliest_failure_wins_whichever_check_finds_it() {
    // A hash failure (seq 2) before a gap (seq 5).
    let (_dir, path, store) = seeded();
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute("UPDATE audit_log SET payload = '{}' WHERE seq = 2", []).unwrap();
    conn.execute("DELETE FROM audit_log WHERE seq = 4", []).unwrap();
    let failure = store.verify(None).unwrap().first_failure.unwrap();
    assert_eq!(failure.seq, 2, "{}", failure.reason);
    assert!(failure.reason.contains("altered"));

    // A gap (seq 3) before a hash failure (seq 5).
    let (_dir, path, store) = seeded();
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute("DELETE FROM audit_log WHERE seq = 2", []).unwrap();
    conn.execute("UPDATE audit_log SET payload = '{}' WHERE seq = 5", []).unwrap();
    let failure = store.verify(None).unwrap().first_failure.unwrap();
    assert_eq!(failure.seq, 3, "{}", failure.reason);
    assert!(failure.reason.contains("record 2 is missing"));

    // Same record: prev_hash edited, which also breaks its hash; the link is named first.
    let (_dir, path, store) = seeded();
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute("UPDATE audit_log SET prev_hash = ?1 WHERE seq = 3", [aria_store::ZERO_HASH])
        .unwrap();
    let failure = store.verify(None).unwrap().first_failure.unwrap();
    assert_eq!(failure.seq, 3);
    assert!(failure.reason.contains("prev_hash"), "{}", failure.reason);
}

/// More records than one pipeline batch, with the damage far from the start.
#[test]
fn damage_deep_in_a_long_chain_is_found() {
    let (_dir, path, store) = file_store();
    store
        .audit_append_batch((0..10_000).map(|i| event(Some(&format!("s{}", i % 7)), "k", json!(i))))
        .unwrap();
    assert_eq!(store.verify(None).unwrap().records, 10_000);
    let conn = raw(&path);
    drop_triggers(&conn);
    conn.execute("UPDATE audit_log SET payload = '9999' WHERE seq = 9001", []).unwrap();
    let report = store.verify(None).unwrap();
    assert_eq!(report.records, 10_000);
    assert_eq!(report.first_failure.unwrap().seq, 9_001);
}
