//! Property tests: any sequence of events verifies, and any single-byte change to a stored
//! payload or hash is caught at that record.

use aria_api::AuditEvent;
use proptest::prelude::*;
use serde_json::Value;

use super::helpers::*;

fn arb_json() -> impl Strategy<Value = Value> {
    let text = || prop::collection::vec(any::<char>(), 0..8).prop_map(String::from_iter);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

fn arb_event() -> impl Strategy<Value = AuditEvent> {
    let session = prop_oneof![Just(None), Just(Some("s1")), Just(Some("s2")), Just(Some("a\"b\n"))];
    let word = prop::collection::vec(any::<char>(), 0..6).prop_map(String::from_iter);
    (session, word.clone(), word, arb_json()).prop_map(|(session, actor, kind, payload)| {
        AuditEvent::new(session, &actor, &kind, payload)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_event_sequences_verify_in_the_database_and_as_bundles(
        events in prop::collection::vec((arb_event(), any::<bool>()), 1..24)
    ) {
        let store = memory_store();
        let mut batch = Vec::new();
        for (event, batched) in events {
            if batched {
                batch.push(event);
            } else {
                store.audit_append_batch(std::mem::take(&mut batch)).unwrap();
                store.audit_append(event).unwrap();
            }
        }
        store.audit_append_batch(batch).unwrap();
        let report = store.verify(None).unwrap();
        prop_assert_eq!(report.first_failure, None);
        for session in ["s1", "s2", "a\"b\n"] {
            if store.audit_for_session(session).unwrap().is_empty() {
                continue;
            }
            prop_assert!(store.verify(Some(session)).unwrap().is_ok());
            let bundle = store.export_session(session).unwrap();
            let text = serde_json::to_string(&bundle).unwrap();
            let back: aria_store::AuditBundle = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(aria_store::verify_bundle(&back).first_failure, None);
        }
    }

    #[test]
    fn flipping_any_byte_of_a_payload_or_hash_is_caught_at_that_record(
        events in prop::collection::vec(arb_event(), 1..12),
        pick in any::<prop::sample::Index>(),
        column in prop::sample::select(vec!["payload", "hash", "prev_hash", "session_prev_hash"]),
        byte in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let (_dir, path, store) = file_store();
        store.audit_append_batch(events.clone()).unwrap();
        let seq = pick.index(events.len()) as i64 + 1;
        let conn = raw(&path);
        drop_triggers(&conn);
        let mut value: Vec<u8> = conn
            .query_row(&format!("SELECT CAST({column} AS BLOB) FROM audit_log WHERE seq = ?1"), [seq], |r| r.get(0))
            .unwrap();
        let at = byte.index(value.len());
        value[at] ^= flip;
        conn.execute(&format!("UPDATE audit_log SET {column} = CAST(?1 AS TEXT) WHERE seq = ?2"), rusqlite::params![value, seq]).unwrap();
        let failure = store.verify(None).unwrap().first_failure;
        prop_assert_eq!(failure.map(|f| f.seq), Some(seq as u64));
    }
}
