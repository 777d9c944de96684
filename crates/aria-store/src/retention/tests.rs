use std::sync::Arc;

use aria_api::{Journal, Limits, NewSession, NoRedact, TraceKind, TraceRecord, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

const DAY: Duration = Duration::from_secs(86_400);

/// A store with one session, one audit record of it and two traces recorded now, one of which
/// is then dated `age` ago.
fn store_with_an_old_trace(age: Duration) -> (Store, String) {
    let store = Store::open_in_memory(Arc::new(NoRedact)).unwrap();
    let session = store
        .create_session(&NewSession {
            conversation_id: None,
            task: "t".into(),
            provider: "p".into(),
            model: "m".into(),
            limits: Limits::default(),
        })
        .unwrap();
    store
        .audit_append(AuditEvent::new(Some(&session.id), "agent", "tool.start", json!({"a": 1})))
        .unwrap();
    let trace = TraceRecord {
        session_id: session.id.clone(),
        kind: TraceKind::ToolCall,
        name: "file_read".into(),
        duration_ms: 3,
        usage: Usage::default(),
        cost_usd: 0.0,
        outcome: "ok".into(),
        detail: json!({}),
    };
    store.record_trace(&trace).unwrap();
    store.record_trace(&TraceRecord { name: "shell_execute".into(), ..trace }).unwrap();
    let old = crate::store::rfc3339_at(SystemTime::now() - age);
    store
        .conn()
        .execute("UPDATE traces SET created_at = ?1 WHERE name = 'file_read'", [old])
        .unwrap();
    (store, session.id)
}

fn names(store: &Store, session: &str) -> Vec<String> {
    store.traces_for_session(session).unwrap().into_iter().map(|t| t.trace.name).collect()
}

#[test]
fn traces_older_than_keep_days_go_the_session_and_its_audit_records_stay() {
    let (store, session) = store_with_an_old_trace(31 * DAY);
    assert_eq!(store.prune_traces(30, SystemTime::now()).unwrap(), 1);
    assert_eq!(names(&store, &session), ["shell_execute"]);
    assert!(store.session(&session).unwrap().is_some());
    // The audit log kept its record and gained one saying what was pruned; it still verifies.
    let kinds: Vec<String> = store.audit_list(None).unwrap().into_iter().map(|r| r.kind).collect();
    assert_eq!(kinds, ["tool.start", "traces.prune"]);
    let prune = store.audit_list(None).unwrap().pop().unwrap();
    assert_eq!(prune.payload["deleted"], json!(1));
    assert!(store.verify(None).unwrap().is_ok());
    // Nothing left to prune: no audit record for nothing.
    assert_eq!(store.prune_traces(30, SystemTime::now()).unwrap(), 0);
    assert_eq!(store.audit_list(None).unwrap().len(), 2);
}

#[test]
fn keep_days_0_keeps_everything_and_a_younger_trace_stays() {
    let (store, session) = store_with_an_old_trace(400 * DAY);
    assert_eq!(store.prune_traces(0, SystemTime::now()).unwrap(), 0);
    assert_eq!(store.prune_traces(500, SystemTime::now()).unwrap(), 0);
    assert_eq!(names(&store, &session), ["file_read", "shell_execute"]);
    assert!(store.housekeeping_last_run(PRUNE_TRACES).unwrap().is_some());
}

#[test]
fn if_due_prunes_at_most_once_per_period_and_a_clock_gone_back_does_not_block_it() {
    let (store, session) = store_with_an_old_trace(10 * DAY);
    assert_eq!(store.housekeeping_last_run(PRUNE_TRACES).unwrap(), None);
    let now = SystemTime::now();
    assert_eq!(store.prune_traces_if_due(30, now, DAY).unwrap(), Some(0), "first time: due");
    // An hour later, with a shorter retention: not due yet, nothing deleted.
    let hour = Duration::from_secs(3600);
    assert_eq!(store.prune_traces_if_due(7, now + hour, DAY).unwrap(), None);
    assert_eq!(names(&store, &session).len(), 2);
    // A day later it is.
    assert_eq!(store.prune_traces_if_due(7, now + DAY + hour, DAY).unwrap(), Some(1));
    assert_eq!(names(&store, &session), ["shell_execute"]);
    assert_eq!(
        store.housekeeping_last_run(PRUNE_TRACES).unwrap(),
        Some(crate::store::rfc3339_at(now + DAY + hour))
    );
    // The clock went back a week: due, rather than never again.
    assert_eq!(store.prune_traces_if_due(7, now - 7 * DAY, DAY).unwrap(), Some(0));
}
