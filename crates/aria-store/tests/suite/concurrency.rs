use std::sync::Arc;

use aria_api::{AuditSink, NoRedact};
use aria_store::Store;
use serde_json::json;

use super::helpers::*;

/// Two handles on one file (as two processes would have), appending at the same time from two
/// threads, singly and in batches: one chain, no fork, no lost record.
#[test]
fn two_handles_on_one_file_make_one_valid_chain() {
    let (_dir, path, first) = file_store();
    let second = Store::open(&path, Arc::new(NoRedact)).unwrap();
    const EACH: u64 = 300;
    std::thread::scope(|scope| {
        for (name, store) in [("a", &first), ("b", &second)] {
            scope.spawn(move || {
                for i in 0..EACH {
                    let session = format!("{name}-{}", i % 3);
                    if i % 50 == 0 {
                        store
                            .audit_append_batch(
                                (0..5).map(|j| event(Some(&session), "batch", json!([i, j]))),
                            )
                            .unwrap();
                    } else {
                        AuditSink::append(store, event(Some(&session), "single", json!({"i": i})))
                            .unwrap();
                    }
                }
            });
        }
    });
    let total = 2 * (EACH + 6 * 4);
    let report = second.verify(None).unwrap();
    assert_eq!((report.records, report.first_failure), (total, None));
    let seqs: Vec<u64> = first.audit_list(None).unwrap().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=total).collect::<Vec<_>>());
    for name in ["a", "b"] {
        for k in 0..3 {
            let session = format!("{name}-{k}");
            assert!(first.verify(Some(&session)).unwrap().is_ok(), "{session}");
        }
    }
}

/// A verify that runs while another handle keeps appending sees a consistent snapshot.
#[test]
fn verify_during_appends_sees_a_consistent_snapshot() {
    let (_dir, path, writer) = file_store();
    let reader = Store::open(&path, Arc::new(NoRedact)).unwrap();
    writer.audit_append_batch((0..200).map(|i| event(Some("s"), "k", json!(i)))).unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..200 {
                writer.audit_append(event(Some("s"), "k", json!(i))).unwrap();
            }
        });
        for _ in 0..20 {
            let report = reader.verify(None).unwrap();
            assert!(report.is_ok(), "{report:?}");
            assert!(report.records >= 200);
        }
    });
}
