use std::sync::Arc;

use aria_api::NoRedact;
use aria_store::NewJob;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::sync::mpsc;

use super::*;

#[derive(Clone, Copy)]
enum Behaviour {
    Succeed,
    Fail,
    Hang,
    Skip,
    /// Waits for a permit of the gate, so a test decides when runs end.
    Gate,
}

struct TestRunner {
    behaviour: Behaviour,
    gate: Arc<Semaphore>,
    calls: Mutex<Vec<(String, String, u64)>>,
}

impl Runner for TestRunner {
    fn run(&self, run: JobRun) -> RunFuture {
        self.calls.lock().unwrap().push((run.job.name.clone(), rfc3339_utc(run.slot), run.missed));
        let (behaviour, gate) = (self.behaviour, self.gate.clone());
        Box::pin(async move {
            match behaviour {
                Behaviour::Succeed => Ok(RunOutput { text: "all good".into(), session_id: None }),
                Behaviour::Fail => Err("the repository is gone".into()),
                Behaviour::Skip => Err(RunError::Skipped("the daily cost cap is reached".into())),
                Behaviour::Hang => std::future::pending().await,
                Behaviour::Gate => {
                    gate.acquire().await.map_err(|e| e.to_string())?.forget();
                    Ok(RunOutput { text: "done".into(), session_id: Some("s1".into()) })
                }
            }
        })
    }
}

struct ChannelNotifier(mpsc::UnboundedSender<Notice>);

impl Notifier for ChannelNotifier {
    fn notify(&self, notice: Notice) {
        let _ = self.0.send(notice);
    }
}

struct Rig {
    store: Arc<Store>,
    clock: Arc<FakeClock>,
    runner: Arc<TestRunner>,
    scheduler: Scheduler,
    notices: mpsc::UnboundedReceiver<Notice>,
}

fn rig_on(store: Arc<Store>, behaviour: Behaviour, config: SchedulerConfig) -> Rig {
    let clock = Arc::new(FakeClock::new(Timestamp::now()));
    let runner = Arc::new(TestRunner {
        behaviour,
        gate: Arc::new(Semaphore::new(0)),
        calls: Mutex::default(),
    });
    let (tx, notices) = mpsc::unbounded_channel();
    let scheduler = Scheduler::new(
        store.clone(),
        clock.clone(),
        runner.clone(),
        Arc::new(ChannelNotifier(tx)),
        config,
    );
    Rig { store, clock, runner, scheduler, notices }
}

fn rig(behaviour: Behaviour) -> Rig {
    let store = Arc::new(Store::open_in_memory(Arc::new(NoRedact)).unwrap());
    rig_on(store, behaviour, SchedulerConfig { instance: "test".into(), ..Default::default() })
}

impl Rig {
    /// Creates an hourly job and sets the clock to its creation time.
    fn hourly(&self, name: &str) -> Job {
        let job = self
            .store
            .job_create(&NewJob {
                name: name.into(),
                cron: "0 * * * *".into(),
                tz: "Europe/Berlin".into(),
                action: json!({"kind": "notify", "message": "hi"}),
                enabled: true,
                created_by: "user".into(),
                roots: vec![],
            })
            .unwrap();
        self.clock.set(job.created_at.parse().unwrap());
        job
    }

    /// The first full hour after the job's creation.
    fn first_slot(job: &Job) -> Timestamp {
        let created: Timestamp = job.created_at.parse().unwrap();
        Schedule::parse("0 * * * *").unwrap().next_after(&zone("UTC").unwrap(), created).unwrap()
    }

    /// The next notice other than a run's start.
    async fn notice(&mut self) -> Notice {
        loop {
            let notice = self.notices.recv().await.unwrap();
            if notice.kind != NoticeKind::Started {
                return notice;
            }
        }
    }

    fn calls(&self) -> Vec<(String, String, u64)> {
        self.runner.calls.lock().unwrap().clone()
    }
}

fn hours(n: i64) -> SignedDuration {
    SignedDuration::from_hours(n)
}

#[tokio::test(start_paused = true)]
async fn a_due_slot_runs_once_and_is_recorded() {
    let mut rig = rig(Behaviour::Succeed);
    let job = rig.hourly("j");
    assert_eq!(rig.scheduler.tick().unwrap().started, [], "nothing due at creation");
    let slot = Rig::first_slot(&job);
    rig.clock.set(slot);
    let report = rig.scheduler.tick().unwrap();
    assert_eq!(report.started, [("j".to_owned(), rfc3339_utc(slot), 0)]);
    let notice = rig.notice().await;
    assert_eq!((notice.kind, notice.missed), (NoticeKind::Completed, 0));
    assert!(notice.text.contains("all good"), "{}", notice.text);
    rig.clock.advance(SignedDuration::from_secs(30));
    assert_eq!(rig.scheduler.tick().unwrap().started, [], "a slot runs once");
    assert_eq!(rig.calls().len(), 1);
    let job = rig.store.job("j").unwrap().unwrap();
    assert_eq!(job.last_completed_slot, Some(rfc3339_utc(slot)));
    let history = rig.store.job_history(job.id, 5).unwrap();
    assert_eq!(history[0].outcome.as_deref(), Some("ok"));
}

#[tokio::test(start_paused = true)]
async fn downtime_across_several_slots_runs_only_the_latest_once_with_the_missed_count() {
    let mut rig = rig(Behaviour::Succeed);
    let job = rig.hourly("j");
    let first = Rig::first_slot(&job);
    // Down from creation until 30 minutes after the fifth slot.
    rig.clock.set(
        first.checked_add(hours(4)).unwrap().checked_add(SignedDuration::from_mins(30)).unwrap(),
    );
    let report = rig.scheduler.tick().unwrap();
    let latest = rfc3339_utc(first.checked_add(hours(4)).unwrap());
    assert_eq!(report.started, [("j".to_owned(), latest.clone(), 4)]);
    let notice = rig.notice().await;
    assert_eq!(notice.missed, 4);
    assert!(notice.text.contains("4 earlier slots were missed"), "{}", notice.text);
    assert_eq!(rig.scheduler.tick().unwrap().started, [], "no backlog replay");
    assert_eq!(rig.calls(), [("j".to_owned(), latest, 4)]);
    assert_eq!(rig.store.job_history(job.id, 10).unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_claim_left_by_a_crash_is_never_rerun_and_is_reported_interrupted() {
    let mut rig = rig(Behaviour::Succeed);
    let job = rig.hourly("j");
    let slot = Rig::first_slot(&job);
    // Another process claimed the slot and died before finishing it.
    rig.clock.set(slot);
    let claimed =
        rig.store.job_claim_slot(job.id, &rfc3339_utc(slot), &stamp(slot), "crashed", 0).unwrap();
    assert_eq!(claimed, Claim::Claimed);
    let report = rig.scheduler.tick().unwrap();
    assert_eq!((report.started.len(), report.interrupted.len()), (0, 0), "still possibly running");
    // Past the timeout and its grace minute: certainly dead.
    rig.clock.advance(SignedDuration::from_secs(600 + 61));
    let report = rig.scheduler.tick().unwrap();
    assert_eq!(report.interrupted.len(), 1);
    assert_eq!(report.started, [], "the interrupted slot is not run");
    let notice = rig.notice().await;
    assert_eq!(
        (notice.kind, notice.slot.as_str()),
        (NoticeKind::Interrupted, rfc3339_utc(slot).as_str())
    );
    assert_eq!(rig.scheduler.tick().unwrap().interrupted, [], "reported once");
    assert_eq!(rig.calls(), []);
    // The job goes on at its next slot.
    rig.clock.set(slot.checked_add(hours(1)).unwrap());
    assert_eq!(rig.scheduler.tick().unwrap().started.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn slots_while_disabled_or_under_an_old_expression_are_not_caught_up() {
    let mut rig = rig(Behaviour::Succeed);
    let job = rig.hourly("j");
    rig.store.job_set_enabled("j", false, "user").unwrap();
    // Enabled again (the store stamps it in real time): the slots before that are not missed
    // ones, so nothing is due until the first full hour after enabling, whenever in the hour
    // this runs.
    rig.store.job_set_enabled("j", true, "user").unwrap();
    let enabled: Timestamp = rig.store.job("j").unwrap().unwrap().updated_at.parse().unwrap();
    let next =
        Schedule::parse("0 * * * *").unwrap().next_after(&zone("UTC").unwrap(), enabled).unwrap();
    assert!(next > enabled && next >= Rig::first_slot(&job));
    rig.clock.set(enabled);
    assert_eq!(rig.scheduler.tick().unwrap().started, [], "nothing due when enabled");
    rig.clock.set(next.checked_sub(SignedDuration::from_millis(1)).unwrap().max(enabled));
    assert_eq!(rig.scheduler.tick().unwrap().started, [], "nothing due before the next slot");
    rig.clock.set(next);
    assert_eq!(rig.scheduler.tick().unwrap().started, [("j".to_owned(), rfc3339_utc(next), 0)]);
    let _ = rig.notice().await;
}

#[tokio::test(start_paused = true)]
async fn recovery_at_start_reports_every_unfinished_claim_at_once() {
    let mut rig = rig(Behaviour::Succeed);
    let job = rig.hourly("j");
    let slot = Rig::first_slot(&job);
    rig.clock.set(slot);
    rig.store.job_claim_slot(job.id, &rfc3339_utc(slot), &stamp(slot), "crashed", 0).unwrap();
    rig.clock.advance(SignedDuration::from_secs(5));
    let recovered = rig.scheduler.recover().unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(rig.notice().await.kind, NoticeKind::Interrupted);
    assert_eq!(rig.scheduler.tick().unwrap().started, [], "never rerun");
    assert!(rig.scheduler.recover().unwrap().is_empty());
    assert_eq!(rig.calls(), []);
}

#[tokio::test(start_paused = true)]
async fn at_most_three_jobs_run_at_once_and_the_others_wait_unclaimed() {
    let mut rig = rig(Behaviour::Gate);
    let jobs: Vec<Job> = ["a", "b", "c", "d", "e"].iter().map(|n| rig.hourly(n)).collect();
    let slot = jobs.iter().map(Rig::first_slot).max().unwrap();
    rig.clock.set(slot);
    let report = rig.scheduler.tick().unwrap();
    assert_eq!(report.started.len(), 3);
    assert_eq!(report.waiting.len(), 2);
    assert_eq!(rig.scheduler.running(), 3);
    let waiting = rig.store.job(&report.waiting[0]).unwrap().unwrap();
    assert_eq!(waiting.last_claimed_slot, None, "a waiting job is not claimed");
    // Still three at once on the next tick.
    let again = rig.scheduler.tick().unwrap();
    assert_eq!((again.started.len(), again.waiting.len()), (0, 2));
    // One run ends: one more starts.
    rig.runner.gate.add_permits(1);
    let _ = rig.notice().await;
    let next = rig.scheduler.tick().unwrap();
    assert_eq!((next.started.len(), next.waiting.len()), (1, 1));
    rig.runner.gate.add_permits(10);
    for _ in 0..3 {
        let _ = rig.notice().await;
    }
    assert_eq!(rig.scheduler.tick().unwrap().started.len(), 1);
    let _ = rig.notice().await;
    assert_eq!(rig.calls().len(), 5, "every job ran once");
}

#[tokio::test(start_paused = true)]
async fn a_run_past_its_timeout_is_cancelled_recorded_and_reported() {
    let store = Arc::new(Store::open_in_memory(Arc::new(NoRedact)).unwrap());
    let config = SchedulerConfig {
        timeout: Duration::from_secs(5),
        instance: "t".into(),
        ..Default::default()
    };
    let mut rig = rig_on(store, Behaviour::Hang, config);
    let job = rig.hourly("slow");
    rig.clock.set(Rig::first_slot(&job));
    assert_eq!(rig.scheduler.tick().unwrap().started.len(), 1);
    let notice = rig.notice().await;
    assert_eq!(notice.kind, NoticeKind::Timeout);
    assert!(notice.text.contains("timed out"), "{}", notice.text);
    assert_eq!(rig.scheduler.running(), 0, "its permit is back");
    let history = rig.store.job_history(job.id, 5).unwrap();
    assert_eq!(history[0].outcome.as_deref(), Some("timeout"));
}

#[tokio::test(start_paused = true)]
async fn a_failing_job_is_retried_at_its_next_slot_not_in_a_loop() {
    let mut rig = rig(Behaviour::Fail);
    let job = rig.hourly("flaky");
    let slot = Rig::first_slot(&job);
    rig.clock.set(slot);
    assert_eq!(rig.scheduler.tick().unwrap().started.len(), 1);
    let notice = rig.notice().await;
    assert_eq!(notice.kind, NoticeKind::Failed);
    assert!(notice.text.contains("the repository is gone"), "{}", notice.text);
    for _ in 0..5 {
        rig.clock.advance(SignedDuration::from_mins(5));
        assert_eq!(rig.scheduler.tick().unwrap().started, [], "not retried before the next slot");
    }
    rig.clock.set(slot.checked_add(hours(1)).unwrap());
    assert_eq!(rig.scheduler.tick().unwrap().started.len(), 1);
    let _ = rig.notice().await;
    assert_eq!(rig.calls().len(), 2);
    let outcomes: Vec<Option<String>> =
        rig.store.job_history(job.id, 5).unwrap().into_iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [Some("failed".to_owned()), Some("failed".to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn two_schedulers_on_one_database_run_each_slot_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aria.db");
    let open = || Arc::new(Store::open(&path, Arc::new(NoRedact)).unwrap());
    let config = |who: &str| SchedulerConfig { instance: who.into(), ..Default::default() };
    let mut a = rig_on(open(), Behaviour::Succeed, config("a"));
    let mut b = rig_on(open(), Behaviour::Succeed, config("b"));
    let job = a.hourly("shared");
    let first = Rig::first_slot(&job);
    for hour in 0..4 {
        let at = first.checked_add(hours(hour)).unwrap();
        a.clock.set(at);
        b.clock.set(at);
        let (ra, rb) = (a.scheduler.tick().unwrap(), b.scheduler.tick().unwrap());
        assert_eq!(ra.started.len() + rb.started.len(), 1, "hour {hour}");
        if ra.started.is_empty() {
            b.notice().await
        } else {
            a.notice().await
        };
    }
    assert_eq!(a.calls().len() + b.calls().len(), 4);
}

#[test]
fn a_broken_expression_is_reported_not_run() {
    let job = aria_store::JobSchedule {
        id: 1,
        name: "bad".into(),
        cron: "61 * * * *".into(),
        tz: "UTC".into(),
        last_claimed_slot: None,
        updated_at: "2026-01-01T00:00:00.000Z".into(),
    };
    assert!(Scheduler::due_slot(&job, "2026-01-02T00:00:00Z".parse().unwrap()).is_err());
    let ok = aria_store::JobSchedule { cron: "0 * * * *".into(), ..job };
    assert_eq!(
        Scheduler::due_slot(&ok, "2026-01-01T05:30:00Z".parse().unwrap()).unwrap(),
        (
            Some(("2026-01-01T05:00:00Z".parse().unwrap(), 4)),
            "2026-01-01T06:00:00Z".parse().unwrap()
        )
    );
    // Enabled (or edited) at 05:10 after being off since 04:00: 05:00 is not caught up.
    let reenabled = aria_store::JobSchedule {
        last_claimed_slot: Some("2026-01-01T03:00:00Z".into()),
        updated_at: "2026-01-01T05:10:00.000Z".into(),
        ..ok.clone()
    };
    assert_eq!(
        Scheduler::due_slot(&reenabled, "2026-01-01T05:30:00Z".parse().unwrap()).unwrap(),
        (None, "2026-01-01T06:00:00Z".parse().unwrap())
    );
    // Slots after the last claimed one count, not those since creation.
    let claimed =
        aria_store::JobSchedule { last_claimed_slot: Some("2026-01-01T04:00:00Z".into()), ..ok };
    assert_eq!(
        Scheduler::due_slot(&claimed, "2026-01-01T05:30:00Z".parse().unwrap()).unwrap().0,
        Some(("2026-01-01T05:00:00Z".parse().unwrap(), 0))
    );
}

#[test]
fn stamps_are_fixed_width_utc_with_milliseconds() {
    assert_eq!(stamp("2026-01-01T00:00:00Z".parse().unwrap()), "2026-01-01T00:00:00.000Z");
}

/// A clock that follows tokio's (paused) time, so `run`'s sleeps move it.
struct TokioClock {
    base: Timestamp,
    start: tokio::time::Instant,
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        let elapsed = SignedDuration::try_from(self.start.elapsed()).unwrap();
        self.base.checked_add(elapsed).unwrap()
    }
}

#[tokio::test(start_paused = true)]
async fn the_loop_wakes_at_the_slot_and_starts_the_job_within_two_seconds() {
    let store = Arc::new(Store::open_in_memory(Arc::new(NoRedact)).unwrap());
    let job = store
        .job_create(&NewJob {
            name: "daily".into(),
            cron: "0 9 * * *".into(),
            tz: "UTC".into(),
            action: json!({"kind": "notify", "message": "hi"}),
            enabled: true,
            created_by: "user".into(),
            roots: vec![],
        })
        .unwrap();
    let created: Timestamp = job.created_at.parse().unwrap();
    let clock = Arc::new(TokioClock { base: created, start: tokio::time::Instant::now() });
    let runner = Arc::new(TestRunner {
        behaviour: Behaviour::Succeed,
        gate: Arc::new(Semaphore::new(0)),
        calls: Mutex::default(),
    });
    let (tx, mut notices) = mpsc::unbounded_channel();
    let scheduler = Arc::new(Scheduler::new(
        store,
        clock.clone(),
        runner.clone(),
        Arc::new(ChannelNotifier(tx)),
        SchedulerConfig::default(),
    ));
    let cancel = CancellationToken::new();
    let task = tokio::spawn(scheduler.run(cancel.clone()));
    let notice = notices.recv().await.unwrap();
    let slot: Timestamp = notice.slot.parse().unwrap();
    let started_late = clock.now().duration_since(slot);
    assert!(
        started_late >= SignedDuration::ZERO && started_late < SignedDuration::from_secs(2),
        "{started_late:?}"
    );
    assert_eq!(runner.calls.lock().unwrap().len(), 1);
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_skipped_run_is_recorded_and_told_and_the_job_goes_on_at_its_next_slot() {
    let mut rig = rig(Behaviour::Skip);
    let job = rig.hourly("capped");
    let slot = Rig::first_slot(&job);
    rig.clock.set(slot);
    assert_eq!(rig.scheduler.tick().unwrap().started.len(), 1);
    let started = rig.notices.recv().await.unwrap();
    assert_eq!((started.kind, started.job.as_str()), (NoticeKind::Started, "capped"));
    let notice = rig.notice().await;
    assert_eq!(notice.kind, NoticeKind::Skipped);
    assert!(notice.text.contains("daily cost cap"), "{}", notice.text);
    let history = rig.store.job_history(job.id, 5).unwrap();
    assert_eq!(history[0].outcome.as_deref(), Some("skipped"));
    rig.clock.set(slot.checked_add(hours(1)).unwrap());
    assert_eq!(rig.scheduler.tick().unwrap().started.len(), 1, "the next slot is tried");
}

#[tokio::test(start_paused = true)]
async fn a_heartbeat_job_reports_as_a_heartbeat() {
    let mut rig = rig(Behaviour::Succeed);
    let job = rig
        .store
        .job_create(&NewJob {
            name: "heartbeat".into(),
            cron: "0 * * * *".into(),
            tz: "UTC".into(),
            action: json!({"kind": "heartbeat"}),
            enabled: true,
            created_by: "system".into(),
            roots: vec![],
        })
        .unwrap();
    rig.clock.set(Rig::first_slot(&job));
    assert_eq!(rig.scheduler.tick().unwrap().started.len(), 1);
    assert_eq!(rig.notice().await.kind, NoticeKind::Heartbeat);
}

#[tokio::test(start_paused = true)]
async fn run_now_runs_once_is_recorded_and_leaves_the_schedule_alone() {
    let mut rig = rig(Behaviour::Succeed);
    let job = rig.hourly("manual");
    rig.clock.advance(SignedDuration::from_mins(1));
    let notice = rig.scheduler.run_now("manual").await.unwrap();
    assert_eq!(notice.kind, NoticeKind::Completed);
    assert!(notice.text.contains("all good"), "{}", notice.text);
    assert_eq!(rig.notice().await, notice, "told like a scheduled run");
    assert!(matches!(rig.scheduler.run_now("manual").await, Err(RunNowError::Busy(_))));
    assert!(matches!(rig.scheduler.run_now("nope").await, Err(RunNowError::Unknown(_))));
    let history = rig.store.job_history(job.id, 5).unwrap();
    assert_eq!((history.len(), history[0].outcome.as_deref()), (1, Some("ok")));
    rig.clock.set(Rig::first_slot(&job));
    assert_eq!(rig.scheduler.tick().unwrap().started.len(), 1, "the hourly slot still runs");
}
