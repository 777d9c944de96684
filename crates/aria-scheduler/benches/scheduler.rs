//! The scheduler's speed: `schedule preview` of 1,000 fire times (target ≤ 10 ms, an instant
//! answer) and one scheduler tick over 10,000 enabled jobs with nothing due (target ≤ 5 ms, so
//! ticking costs an idle daemon nothing measurable).
//! `cargo bench -p aria-scheduler --bench scheduler`; prints the median of several runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::NoRedact;
use aria_scheduler::cron::{Schedule, zone};
use aria_scheduler::scheduler::{
    FakeClock, JobRun, Notice, Notifier, RunFuture, RunOutput, Runner, Scheduler, SchedulerConfig,
};
use aria_store::{NewJob, Store};
use jiff::Timestamp;
use serde_json::json;

struct Nothing;
impl Runner for Nothing {
    fn run(&self, _: JobRun) -> RunFuture {
        Box::pin(async { Ok(RunOutput::default()) })
    }
}
impl Notifier for Nothing {
    fn notify(&self, _: Notice) {}
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let after: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    for (expr, tz) in [
        ("*/5 * * * *", "Europe/Berlin"),
        ("30 2 * * *", "America/New_York"),
        ("0 9 1,15 * MON", "UTC"),
    ] {
        let schedule = Schedule::parse(expr).unwrap();
        let tz = zone(tz).unwrap();
        let times: Vec<Duration> = (0..11)
            .map(|_| {
                let t = Instant::now();
                let fires = schedule.fires_after(&tz, after, 1000).unwrap();
                assert_eq!(fires.len(), 1000);
                t.elapsed()
            })
            .collect();
        println!(
            "preview 1000 fires of {expr:?}: {:.2} ms (median of 11)",
            median(times).as_secs_f64() * 1e3
        );
    }

    let store = Arc::new(Store::open_in_memory(Arc::new(NoRedact)).unwrap());
    for i in 0..10_000 {
        store
            .job_create(&NewJob {
                name: format!("job-{i}"),
                cron: ["0 9 * * *", "*/15 * * * *", "30 2 * * MON-FRI", "0 */2 * * *"][i % 4]
                    .into(),
                tz: ["Europe/Berlin", "America/New_York", "UTC", "Australia/Lord_Howe"][i % 4]
                    .into(),
                action: json!({"kind": "notify", "message": "hi"}),
                enabled: true,
                created_by: "user".into(),
                roots: vec![],
            })
            .unwrap();
    }
    // Just after creation: nothing is due yet.
    let created: Timestamp = store.job("job-0").unwrap().unwrap().created_at.parse().unwrap();
    let clock = Arc::new(FakeClock::new(created));
    let scheduler = Scheduler::new(
        store.clone(),
        clock,
        Arc::new(Nothing),
        Arc::new(Nothing),
        SchedulerConfig::default(),
    );
    let first = Instant::now();
    scheduler.tick().unwrap();
    println!(
        "first tick over 10,000 enabled jobs (computes every next fire): {:.1} ms",
        first.elapsed().as_secs_f64() * 1e3
    );
    let times: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let report = scheduler.tick().unwrap();
            assert!(report.started.is_empty());
            t.elapsed()
        })
        .collect();
    println!(
        "later ticks over 10,000 enabled jobs, none due: {:.1} ms (median of 5)",
        median(times).as_secs_f64() * 1e3
    );
    // One job edited between ticks: the next tick reads every schedule again.
    let changed: Vec<Duration> = (0..5)
        .map(|_| {
            store.job_set_enabled("job-0", true, "bench").unwrap();
            let t = Instant::now();
            scheduler.tick().unwrap();
            t.elapsed()
        })
        .collect();
    println!(
        "a tick after a job was changed (reads all 10,000 again): {:.1} ms (median of 5)",
        median(changed).as_secs_f64() * 1e3
    );
    let reads: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let _ = store.job_schedules().unwrap();
            t.elapsed()
        })
        .collect();
    println!(
        "  of which reading the 10,000 schedules: {:.1} ms (median of 5)",
        median(reads).as_secs_f64() * 1e3
    );
}
