use std::sync::{Arc, Barrier};

use aria_api::NoRedact;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn store() -> Store {
    Store::open_in_memory(Arc::new(NoRedact)).unwrap()
}

fn new_job(name: &str) -> NewJob {
    NewJob {
        name: name.into(),
        cron: "0 9 * * *".into(),
        tz: "Europe/Berlin".into(),
        action: json!({"kind": "notify", "message": "stand up"}),
        enabled: true,
        created_by: "user".into(),
        roots: vec!["/work/repo".into()],
    }
}

fn audit_kinds(s: &Store) -> Vec<String> {
    s.audit_list(None).unwrap().into_iter().map(|r| r.kind).collect()
}

#[test]
fn jobs_are_created_listed_changed_and_deleted_with_an_audit_record_each() {
    let s = store();
    let job = s.job_create(&new_job("standup")).unwrap();
    assert_eq!(
        (job.name.as_str(), job.cron.as_str(), job.tz.as_str(), job.enabled, job.roots.clone()),
        ("standup", "0 9 * * *", "Europe/Berlin", true, vec!["/work/repo".to_owned()])
    );
    assert_eq!(job.action, json!({"kind": "notify", "message": "stand up"}));
    assert_eq!((job.last_completed_slot, job.last_claimed_slot), (None, None));
    assert!(matches!(
        s.job_create(&new_job("standup")),
        Err(StoreError::DuplicateJob(name)) if name == "standup"
    ));
    s.job_create(&new_job("another")).unwrap();
    let names: Vec<String> = s.jobs().unwrap().into_iter().map(|j| j.name).collect();
    assert_eq!(names, ["another", "standup"]);

    s.job_set_enabled("standup", false, "user").unwrap();
    assert!(!s.job("standup").unwrap().unwrap().enabled);
    let enabled: Vec<String> = s.job_schedules().unwrap().into_iter().map(|j| j.name).collect();
    assert_eq!(enabled, ["another"], "only enabled jobs are scheduled");
    s.job_set_enabled("standup", true, "user").unwrap();
    assert!(matches!(s.job_set_enabled("nope", true, "user"), Err(StoreError::UnknownJob(_))));
    s.job_update(
        "another",
        Some("@hourly"),
        None,
        Some(&json!({"kind": "notify", "message": "x"})),
        "user",
    )
    .unwrap();
    let edited = s.job("another").unwrap().unwrap();
    assert_eq!((edited.cron.as_str(), edited.tz.as_str()), ("@hourly", "Europe/Berlin"));
    assert_eq!(edited.action, json!({"kind": "notify", "message": "x"}));
    assert!(matches!(
        s.job_update("nope", None, None, None, "user"),
        Err(StoreError::UnknownJob(_))
    ));
    s.job_delete("another", "user").unwrap();
    assert!(s.job("another").unwrap().is_none());
    assert!(matches!(s.job_delete("another", "user"), Err(StoreError::UnknownJob(_))));
    assert_eq!(
        audit_kinds(&s),
        ["job.create", "job.create", "job.disable", "job.enable", "job.edit", "job.delete"]
    );
    let created = &s.audit_list(None).unwrap()[0];
    assert_eq!((created.actor.as_str(), &created.payload["cron"]), ("user", &json!("0 9 * * *")));
}

#[test]
fn a_slot_is_claimed_once_and_finishing_moves_the_last_completed_slot() {
    let s = store();
    let job = s.job_create(&new_job("j")).unwrap();
    let slot = "2026-03-29T07:00:00Z";
    let now = "2026-03-29T07:00:00.100Z";
    assert_eq!(s.job_claim_slot(job.id, slot, now, "a", 0).unwrap(), Claim::Claimed);
    assert_eq!(s.job_claim_slot(job.id, slot, now, "b", 0).unwrap(), Claim::Taken);
    assert_eq!(s.job("j").unwrap().unwrap().last_claimed_slot.as_deref(), Some(slot));
    assert!(s.job_finish_slot(job.id, slot, now, "ok", Some("done"), Some("sess-1")).unwrap());
    assert!(!s.job_finish_slot(job.id, slot, now, "failed", None, None).unwrap(), "finished once");
    assert_eq!(s.job_claim_slot(job.id, slot, now, "c", 0).unwrap(), Claim::Taken, "never rerun");
    let job = s.job("j").unwrap().unwrap();
    assert_eq!(job.last_completed_slot.as_deref(), Some(slot));
    let history = s.job_history(job.id, 10).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        (
            history[0].outcome.as_deref(),
            history[0].session_id.as_deref(),
            history[0].claimed_by.as_str()
        ),
        (Some("ok"), Some("sess-1"), "a")
    );
    // An older slot finishing later does not move it back.
    let older = "2026-03-28T07:00:00Z";
    assert_eq!(s.job_claim_slot(job.id, older, now, "a", 0).unwrap(), Claim::Claimed);
    s.job_finish_slot(job.id, older, now, "failed", Some("boom"), None).unwrap();
    assert_eq!(s.job("j").unwrap().unwrap().last_completed_slot.as_deref(), Some(slot));
    // A disabled or deleted job cannot be claimed.
    s.job_set_enabled("j", false, "user").unwrap();
    assert_eq!(
        s.job_claim_slot(job.id, "2026-03-30T07:00:00Z", now, "a", 0).unwrap(),
        Claim::NotRunnable
    );
    assert_eq!(s.job_claim_slot(999, slot, now, "a", 0).unwrap(), Claim::NotRunnable);
    assert_eq!(
        audit_kinds(&s),
        ["job.create", "job.claim", "job.finish", "job.claim", "job.finish", "job.disable"]
    );
}

#[test]
fn an_unfinished_claim_is_marked_interrupted_once_and_never_claimed_again() {
    let s = store();
    let job = s.job_create(&new_job("j")).unwrap();
    let slot = "2026-03-29T07:00:00Z";
    s.job_claim_slot(job.id, slot, "2026-03-29T07:00:01.000Z", "a", 3).unwrap();
    assert!(s.job_mark_interrupted("2026-03-29T07:00:00.000Z", "x").unwrap().is_empty(), "too new");
    let marked =
        s.job_mark_interrupted("2026-03-29T07:20:00.000Z", "2026-03-29T07:20:00.000Z").unwrap();
    assert_eq!(marked.len(), 1);
    assert_eq!((marked[0].outcome.as_deref(), marked[0].missed), (Some("interrupted"), 3));
    assert!(s.job_mark_interrupted("2026-03-29T08:00:00.000Z", "y").unwrap().is_empty(), "once");
    assert!(!s.job_finish_slot(job.id, slot, "z", "ok", None, None).unwrap(), "the record stands");
    assert_eq!(s.job_claim_slot(job.id, slot, "z", "b", 0).unwrap(), Claim::Taken);
    assert!(audit_kinds(&s).contains(&"job.interrupted".to_owned()));
}

/// Two schedulers (two connections to one file, on two threads) race for the same 40 slots:
/// every slot is claimed exactly once.
#[test]
fn two_threads_racing_on_one_database_claim_each_slot_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aria.db");
    let job_id =
        Store::open(&path, Arc::new(NoRedact)).unwrap().job_create(&new_job("race")).unwrap().id;
    let slots: Vec<String> =
        (0..40).map(|i| format!("2026-01-01T{:02}:{:02}:00Z", i / 60, i % 60)).collect();
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|who| {
            let (path, slots, barrier) = (path.clone(), slots.clone(), barrier.clone());
            std::thread::spawn(move || {
                let s = Store::open(&path, Arc::new(NoRedact)).unwrap();
                barrier.wait();
                slots
                    .iter()
                    .filter(|slot| {
                        s.job_claim_slot(job_id, slot, "2026-01-01T00:00:00.000Z", who, 0).unwrap()
                            == Claim::Claimed
                    })
                    .count()
            })
        })
        .collect();
    let won: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(won.iter().sum::<usize>(), slots.len(), "each slot claimed exactly once: {won:?}");
    let s = Store::open(&path, Arc::new(NoRedact)).unwrap();
    assert_eq!(s.job_history(job_id, 100).unwrap().len(), slots.len());
    assert_eq!(
        s.audit_list(None).unwrap().iter().filter(|r| r.kind == "job.claim").count(),
        slots.len()
    );
}

#[test]
fn outcomes_since_count_finished_and_running_slots() {
    let store = store();
    let job = store
        .job_create(&NewJob {
            name: "count".into(),
            cron: "0 * * * *".into(),
            tz: "UTC".into(),
            action: json!({"kind": "notify", "message": "m"}),
            enabled: true,
            created_by: "user".into(),
            roots: vec![],
        })
        .unwrap();
    let at = "2026-01-01T00:00:00.000Z";
    for slot in ["2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"] {
        store.job_claim_slot(job.id, slot, at, "t", 0).unwrap();
    }
    store.job_finish_slot(job.id, "2026-01-01T01:00:00Z", at, "ok", None, None).unwrap();
    store.job_finish_slot(job.id, "2026-01-01T02:00:00Z", at, "skipped", None, None).unwrap();
    assert_eq!(
        store.job_outcomes_since("2025-12-31T00:00:00Z").unwrap(),
        [("ok".to_owned(), 1), ("running".to_owned(), 1), ("skipped".to_owned(), 1)]
    );
    assert_eq!(store.job_outcomes_since("2026-02-01T00:00:00Z").unwrap(), []);
    let kinds = store.audit_kind_counts_since("2000-01-01T00:00:00Z").unwrap();
    assert!(kinds.contains(&("job.claim".to_owned(), 3)), "{kinds:?}");
    assert_eq!(store.sessions_in_state_since("failed", "2000-01-01T00:00:00Z").unwrap(), 0);
}

#[test]
fn a_manual_claim_runs_a_disabled_job_once_and_does_not_move_the_schedule() {
    let store = store();
    let job = store
        .job_create(&NewJob {
            name: "by-hand".into(),
            cron: "0 * * * *".into(),
            tz: "UTC".into(),
            action: json!({"kind": "notify", "message": "m"}),
            enabled: false,
            created_by: "user".into(),
            roots: vec![],
        })
        .unwrap();
    let (slot, at) = ("2026-01-01T01:30:00Z", "2026-01-01T01:30:00.000Z");
    assert_eq!(store.job_claim_manual(job.id, slot, at, "manual").unwrap(), Claim::Claimed);
    assert_eq!(store.job_claim_manual(job.id, slot, at, "manual").unwrap(), Claim::Taken);
    assert_eq!(store.job("by-hand").unwrap().unwrap().last_claimed_slot, None);
    store.job_set_enabled("by-hand", true, "user").unwrap();
    assert!(store.job_schedules().unwrap()[0].last_claimed_slot.is_none());
    assert_eq!(store.job_history(job.id, 5).unwrap()[0].slot, slot);
}
