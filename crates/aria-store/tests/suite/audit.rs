use std::sync::Arc;

use aria_api::{AuditEvent, AuditSink};
use aria_store::{
    AuditBundle, AuditRecordRow, BUNDLE_FORMAT, Store, StoreError, ZERO_HASH, render_text,
    verify_bundle,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::helpers::*;

#[test]
fn appended_records_chain_as_documented_and_verify() {
    let store = memory_store();
    let seqs = [
        store
            .audit_append(event(
                Some("s1"),
                "session.transition",
                json!({"from": "idle", "to": "planning"}),
            ))
            .unwrap(),
        store.audit_append(event(None, "system.start", json!({"version": "0.1.0"}))).unwrap(),
        store.audit_append(event(Some("s2"), "tool.start", json!({"tool": "fs.read"}))).unwrap(),
        store
            .audit_append(event(Some("s1"), "tool.end", json!({"ok": true, "bytes": 12})))
            .unwrap(),
    ];
    assert_eq!(seqs, [1, 2, 3, 4]);
    let rows = store.audit_list(None).unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0].prev_hash, ZERO_HASH);
    for w in rows.windows(2) {
        assert_eq!(w[1].prev_hash, w[0].hash);
    }
    for r in &rows {
        assert_eq!(r.hash, documented_hash(r), "seq {}", r.seq);
        assert_eq!(r.time.len(), 24, "{}", r.time);
    }
    // Session links: s1's second record points at s1's first; others start at zero.
    assert_eq!(rows[3].session_prev_hash, rows[0].hash);
    assert_eq!(
        [&rows[0], &rows[1], &rows[2]].map(|r| r.session_prev_hash.as_str()),
        [ZERO_HASH; 3]
    );

    let report = store.verify(None).unwrap();
    assert_eq!(
        (report.records, report.first_failure.clone(), report.triggers_intact),
        (4, None, true)
    );
    assert!(report.is_ok());
    let s1 = store.verify(Some("s1")).unwrap();
    assert_eq!((s1.records, s1.first_failure), (2, None));
    assert!(
        matches!(store.verify(Some("nope")), Err(StoreError::NoAuditRecords(id)) if id == "nope")
    );
}

#[test]
fn an_empty_log_verifies() {
    let report = memory_store().verify(None).unwrap();
    assert_eq!((report.records, report.first_failure), (0, None));
}

#[test]
fn the_sink_trait_appends_and_returns_seq() {
    let store = memory_store();
    let sink: &dyn AuditSink = &store;
    assert_eq!(sink.append(event(None, "a", json!(null))).unwrap(), 1);
    assert_eq!(sink.append(event(None, "b", json!([]))).unwrap(), 2);
    assert_eq!(store.audit_head().unwrap().map(|(seq, _)| seq), Some(2));
}

#[test]
fn secrets_are_redacted_before_they_are_stored_or_hashed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aria.db");
    let store = Store::open(&path, Arc::new(Hide("sk-live-1234"))).unwrap();
    let payload =
        json!({"argv": ["curl", "-H", "Authorization: Bearer sk-live-1234"], "sk-live-1234": 1});
    store.audit_append(AuditEvent::new(Some("s"), "tool:shell", "tool.start", payload)).unwrap();
    store.audit_append_batch(vec![event(None, "x", json!("again sk-live-1234"))]).unwrap();

    let rows = store.audit_list(None).unwrap();
    assert_eq!(
        rows[0].payload,
        json!({"argv": ["curl", "-H", "Authorization: Bearer [REDACTED]"], "[REDACTED]": 1})
    );
    assert_eq!(rows[1].payload, json!("again [REDACTED]"));
    drop(store);
    // Not in the table, not in the WAL, not in the main file.
    let raw = raw(&path);
    let hits: i64 = raw
        .query_row("SELECT count(*) FROM audit_log WHERE payload LIKE '%sk-live%'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(hits, 0);
    for name in ["aria.db", "aria.db-wal"] {
        if let Ok(bytes) = std::fs::read(dir.path().join(name)) {
            assert!(!bytes.windows(12).any(|w| w == b"sk-live-1234"), "{name} holds the secret");
        }
    }
    let store = Store::open(&path, Arc::new(Hide("sk-live-1234"))).unwrap();
    assert!(store.verify(None).unwrap().is_ok());
}

#[test]
fn batches_are_contiguous_and_link_sessions_with_earlier_appends() {
    let store = memory_store();
    store.audit_append(event(Some("a"), "one", json!(1))).unwrap();
    let seqs = store
        .audit_append_batch(
            (0..50).map(|i| event(Some(if i % 2 == 0 { "a" } else { "b" }), "k", json!(i))),
        )
        .unwrap();
    assert_eq!(seqs, (2..=51).collect::<Vec<u64>>());
    assert_eq!(store.audit_append_batch(Vec::new()).unwrap(), Vec::<u64>::new());
    store.audit_append(event(Some("b"), "last", json!(null))).unwrap();
    let a = store.audit_for_session("a").unwrap();
    assert_eq!(a.len(), 26);
    assert_eq!(a[1].session_prev_hash, a[0].hash);
    let b = store.audit_for_session("b").unwrap();
    assert_eq!(b.last().unwrap().session_prev_hash, b[b.len() - 2].hash);
    assert!(store.verify(None).unwrap().is_ok());
    assert!(store.verify(Some("a")).unwrap().is_ok());
    assert!(store.verify(Some("b")).unwrap().is_ok());
}

#[test]
fn audit_list_returns_the_last_n_ascending() {
    let store = memory_store();
    store.audit_append_batch((0..10).map(|i| event(None, "k", json!(i)))).unwrap();
    let seqs: Vec<u64> = store.audit_list(Some(3)).unwrap().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [8, 9, 10]);
    assert_eq!(store.audit_list(Some(0)).unwrap().len(), 0);
    assert_eq!(store.audit_list(Some(100)).unwrap().len(), 10);
}

fn bundle_store() -> (Store, AuditBundle) {
    let store = memory_store();
    store
        .audit_append(event(Some("s"), "session.transition", json!({"to": "planning", "f": 0.1})))
        .unwrap();
    store.audit_append(event(Some("other"), "tool.start", json!({}))).unwrap();
    store
        .audit_append(event(Some("s"), "tool.start", json!({"tool": "fs.read", "n": [1, 2.5e-8]})))
        .unwrap();
    store.audit_append(event(Some("s"), "tool.end", json!({"ok": true}))).unwrap();
    let bundle = store.export_session("s").unwrap();
    (store, bundle)
}

#[test]
fn an_exported_bundle_verifies_offline_after_a_json_round_trip() {
    let (_store, bundle) = bundle_store();
    assert_eq!(bundle.format, BUNDLE_FORMAT);
    assert_eq!(bundle.records.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 3, 4]);
    assert!(bundle.hash_algorithm.contains("SHA-256"));
    let text = serde_json::to_string_pretty(&bundle).unwrap();
    let back: AuditBundle = serde_json::from_str(&text).unwrap();
    assert_eq!(back, bundle);
    let report = verify_bundle(&back);
    assert_eq!((report.records, report.first_failure), (3, None));
}

#[test]
fn an_edited_bundle_names_the_edited_record() {
    let (_store, bundle) = bundle_store();
    let mut edited = bundle.clone();
    edited.records[1].payload = json!({"tool": "shell.exec", "n": [1, 2.5e-8]});
    let failure = verify_bundle(&edited).first_failure.unwrap();
    assert_eq!(failure.seq, 3);
    assert!(failure.reason.contains("altered"), "{}", failure.reason);

    let mut edited = bundle.clone();
    edited.records[2].time = "2030-01-01T00:00:00.000Z".into();
    assert_eq!(verify_bundle(&edited).first_failure.unwrap().seq, 4);

    // Dropping the session's first record breaks the zero start of the session links.
    let mut truncated = bundle.clone();
    truncated.records.remove(0);
    let failure = verify_bundle(&truncated).first_failure.unwrap();
    assert_eq!(failure.seq, 3);
    assert!(failure.reason.contains("missing"), "{}", failure.reason);

    // Dropping a middle record breaks the session link of the next one.
    let mut gap = bundle.clone();
    gap.records.remove(1);
    assert_eq!(verify_bundle(&gap).first_failure.unwrap().seq, 4);

    // Reordering.
    let mut swapped = bundle.clone();
    swapped.records.swap(1, 2);
    assert_eq!(verify_bundle(&swapped).first_failure.unwrap().seq, 4);

    // Claiming another session.
    let mut renamed = bundle.clone();
    renamed.session_id = "other".into();
    assert_eq!(verify_bundle(&renamed).first_failure.unwrap().seq, 1);

    let mut empty = bundle.clone();
    empty.records.clear();
    assert!(verify_bundle(&empty).first_failure.is_some());
    let mut wrong_format = bundle;
    wrong_format.format = "aria-audit-bundle/9".into();
    assert!(verify_bundle(&wrong_format).first_failure.unwrap().reason.contains("format"));
}

#[test]
fn exporting_an_unknown_session_is_an_error_naming_it() {
    let err = memory_store().export_session("who").unwrap_err();
    assert!(err.to_string().contains("`who`"), "{err}");
}

#[test]
fn render_text_is_one_line_per_record() {
    let row = |seq, session: Option<&str>, actor: &str, payload| AuditRecordRow {
        seq,
        time: "2026-11-22T04:21:28.123Z".into(),
        session_id: session.map(str::to_owned),
        actor: actor.into(),
        kind: "tool.start".into(),
        payload,
        prev_hash: ZERO_HASH.into(),
        session_prev_hash: ZERO_HASH.into(),
        hash: ZERO_HASH.into(),
    };
    let text = render_text(&[
        row(1, Some("s1"), "agent", json!({"b": 1, "a": "x\ny"})),
        row(2, None, "tool:evil\nfake 3 line", json!(null)),
    ]);
    assert_eq!(
        text,
        "1 2026-11-22T04:21:28.123Z s1 agent tool.start {\"a\":\"x\\ny\",\"b\":1}\n\
         2 2026-11-22T04:21:28.123Z - \"tool:evil\\nfake 3 line\" tool.start null\n"
    );
}

/// A call that started and never ended (the daemon was killed) is closed once, as interrupted.
#[test]
fn a_call_left_open_by_a_killed_process_is_closed_once() {
    let store = Store::open_in_memory(std::sync::Arc::new(aria_api::NoRedact)).unwrap();
    let start = |id: &str, name: &str| {
        aria_api::AuditEvent::new(
            Some("s1"),
            "agent",
            "tool.start",
            serde_json::json!({"call_id": id, "name": name}),
        )
    };
    store.audit_append(start("c1", "file_read")).unwrap();
    store
        .audit_append(aria_api::AuditEvent::new(
            Some("s1"),
            "agent",
            "tool.end",
            serde_json::json!({"call_id": "c1", "name": "file_read"}),
        ))
        .unwrap();
    store.audit_append(start("c2", "shell_execute")).unwrap();
    assert_eq!(store.audit_close_interrupted_calls("s1").unwrap(), ["shell_execute"]);
    assert!(store.audit_close_interrupted_calls("s1").unwrap().is_empty(), "closed once");
    let last = store.audit_for_session("s1").unwrap().pop().unwrap();
    assert_eq!(last.kind, "tool.interrupted");
    assert_eq!(last.payload["call_id"], "c2");
    assert_eq!(last.actor, "system");
    assert!(store.verify(None).unwrap().first_failure.is_none(), "the chain stays whole");
}
