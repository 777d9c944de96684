//! The scheduler loop: which slots are due, claiming them, running them, recording them.
//!
//! One [`Scheduler::tick`] does everything for one instant of the [`Clock`]:
//! 1. claims made long enough ago that their run must be over (the job timeout plus a minute)
//!    and still unfinished are marked `interrupted` and reported; they are never run again;
//! 2. for each enabled job, the slots since its last claimed slot (or its last change:
//!    creation, edit, enable) that are due now are counted; only the most recent runs, once,
//!    and carries how many earlier ones were missed (catch-up without a backlog replay); a job
//!    whose next fire is known to be later is skipped without recomputing it;
//! 3. that slot is claimed in the store (one transaction; a slot another scheduler claimed is
//!    left alone) only when one of the [`SchedulerConfig::max_concurrent`] run permits is free —
//!    a job that must wait stays unclaimed and is picked up by a later tick;
//! 4. the run goes to the [`Runner`] under the job timeout; its outcome is recorded and
//!    reported to the [`Notifier`]. A failed slot is finished like any other: the job is tried
//!    again at its next slot, never in a loop.
//!
//! [`Scheduler::run`] calls `tick` at least every 60 s and wakes exactly at the next due slot.
//! [`Scheduler::recover`], for a scheduler that knows it is alone on the database (the daemon
//! lock), reports every claim left open by a dead process at once instead of after the timeout.
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aria_store::{Claim, Job, JobSchedule, SlotRun, Store, StoreError};
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::cron::{CronError, Schedule, rfc3339_utc, zone};

/// Where the scheduler reads the time. Tests drive a [`FakeClock`].
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The machine's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that only moves when told to.
#[derive(Debug)]
pub struct FakeClock(Mutex<Timestamp>);

impl FakeClock {
    pub fn new(at: Timestamp) -> Self {
        FakeClock(Mutex::new(at))
    }
    pub fn set(&self, at: Timestamp) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = at;
    }
    pub fn advance(&self, by: SignedDuration) {
        let mut now = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *now = now.saturating_add(by).unwrap_or(*now);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One run of one slot, handed to the [`Runner`].
#[derive(Debug, Clone)]
pub struct JobRun {
    pub job: Job,
    /// The scheduled instant.
    pub slot: Timestamp,
    /// Earlier slots missed while the scheduler was down (0 normally).
    pub missed: u64,
}

/// What a finished run reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunOutput {
    /// The notification text (the agent's answer, the reminder, …).
    pub text: String,
    /// The session the run was, if it was an agent run.
    pub session_id: Option<String>,
}

/// Why a run did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// It ran and failed; the text is what the user is told.
    Failed(String),
    /// It did not run at all (a cost cap would be exceeded, …); the text says why. The slot is
    /// finished as `skipped` and the job runs again at its next slot.
    Skipped(String),
}

impl From<String> for RunError {
    fn from(why: String) -> Self {
        RunError::Failed(why)
    }
}

impl From<&str> for RunError {
    fn from(why: &str) -> Self {
        RunError::Failed(why.to_owned())
    }
}

/// A future a [`Runner`] returns.
pub type RunFuture = Pin<Box<dyn Future<Output = Result<RunOutput, RunError>> + Send>>;

/// Runs a job's action. Supplied by the composition root (`aria serve`).
pub trait Runner: Send + Sync + 'static {
    /// Runs one slot.
    fn run(&self, run: JobRun) -> RunFuture;
}

/// What the user is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// A run began (pushed only when the user asked for it: `[notify] job_started`).
    Started,
    Completed,
    Failed,
    /// A run that did not start (a cost cap); the job runs again at its next slot.
    Skipped,
    Timeout,
    Interrupted,
    /// A completed run of a heartbeat job.
    Heartbeat,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Started => "started",
            NoticeKind::Completed => "completed",
            NoticeKind::Failed => "failed",
            NoticeKind::Skipped => "skipped",
            NoticeKind::Timeout => "timeout",
            NoticeKind::Interrupted => "interrupted",
            NoticeKind::Heartbeat => "heartbeat",
        }
    }
}

/// One notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    pub kind: NoticeKind,
    pub job: String,
    /// The slot, RFC 3339 UTC.
    pub slot: String,
    pub missed: u64,
    /// The message for a person.
    pub text: String,
}

/// Fans notifications out to the channels (Telegram outbox, web stream, …).
pub trait Notifier: Send + Sync + 'static {
    fn notify(&self, notice: Notice);
}

/// Knobs, with their defaults in parentheses (`[schedule]` in `aria.toml` changes the first two).
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// Jobs running at once (3).
    pub max_concurrent: usize,
    /// A run is cancelled after this (600 s).
    pub timeout: Duration,
    /// The longest sleep between two ticks (60 s).
    pub max_sleep: Duration,
    /// Who claims: recorded with each claim (host and process).
    pub instance: String,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            max_concurrent: 3,
            timeout: Duration::from_secs(600),
            max_sleep: Duration::from_secs(60),
            instance: format!("pid {}", std::process::id()),
        }
    }
}

/// Why [`Scheduler::run_now`] did not run a job.
#[derive(Debug, thiserror::Error)]
pub enum RunNowError {
    #[error("there is no job named {0}; `aria schedule list` shows them")]
    Unknown(String),
    #[error("job {0} already ran in this second; try again")]
    Busy(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What could stop a tick.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one tick did (for tests, logs and `/status`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// (job, slot, missed) of the runs started.
    pub started: Vec<(String, String, u64)>,
    /// Claims found unfinished and marked interrupted.
    pub interrupted: Vec<SlotRun>,
    /// Jobs due but left for a later tick because every run permit was taken.
    pub waiting: Vec<String>,
    /// Jobs whose expression or zone no longer parses (they never run; fix or delete them).
    pub broken: Vec<(String, String)>,
}

/// The scheduler. Cheap to share: `Arc` it.
pub struct Scheduler {
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    runner: Arc<dyn Runner>,
    notifier: Arc<dyn Notifier>,
    config: SchedulerConfig,
    permits: Arc<Semaphore>,
    /// Runs in flight, by (job id, slot): a tick never starts one twice.
    running: Arc<Mutex<HashSet<(i64, String)>>>,
    /// Woken when a run ends, so a waiting job need not wait for the next slot.
    finished: Arc<Notify>,
    /// For each job with nothing due at the last tick: when it is due next, and what that was
    /// computed from. A tick skips such a job until then (10,000 jobs in a few milliseconds).
    next_fires: Mutex<HashMap<i64, NextFire>>,
    /// When the last tick ran (for `/status`).
    last_tick: Mutex<Option<Timestamp>>,
    /// The jobs' fingerprint at the last tick that left nothing waiting: while it is unchanged
    /// and no job is due, a tick reads nothing (10,000 jobs cost nothing between their slots).
    settled: Mutex<Option<(u64, i64)>>,
}

/// When a job is due next, valid while its expression, zone and last slot are unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NextFire {
    name: String,
    cron: String,
    tz: String,
    /// The last claimed slot and the last change as stored: compared as text, not parsed.
    last_claimed: Option<String>,
    updated_at: String,
    at: Timestamp,
}

impl NextFire {
    /// Whether this was computed from `job` as it is now.
    fn still_for(&self, job: &JobSchedule) -> bool {
        self.cron == job.cron
            && self.tz == job.tz
            && self.updated_at == job.updated_at
            && self.last_claimed == job.last_claimed_slot
    }
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").field("config", &self.config).finish_non_exhaustive()
    }
}

fn parse_time(text: &str) -> Option<Timestamp> {
    text.parse().ok()
}

impl Scheduler {
    pub fn new(
        store: Arc<Store>,
        clock: Arc<dyn Clock>,
        runner: Arc<dyn Runner>,
        notifier: Arc<dyn Notifier>,
        config: SchedulerConfig,
    ) -> Self {
        let permits = Arc::new(Semaphore::new(config.max_concurrent.max(1)));
        Scheduler {
            store,
            clock,
            runner,
            notifier,
            config,
            permits,
            running: Arc::default(),
            finished: Arc::default(),
            next_fires: Mutex::default(),
            last_tick: Mutex::default(),
            settled: Mutex::default(),
        }
    }

    /// When the last tick ran; `None` before the first.
    pub fn last_tick(&self) -> Option<Timestamp> {
        *self.last_tick.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs in flight now.
    pub fn running(&self) -> usize {
        self.running.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Slots after this one count: the last claimed slot, or the job's last change (creation,
    /// edit, enable) when that is later — a disabled stretch or an old expression's slots are
    /// not caught up.
    fn since(job: &JobSchedule, now: Timestamp) -> Timestamp {
        let claimed = job.last_claimed_slot.as_deref().and_then(parse_time);
        let changed = parse_time(&job.updated_at);
        claimed.max(changed).unwrap_or(now)
    }

    /// The most recent due slot of `job` at `now` and how many slots that leaves missed, if
    /// one is due, and the job's first slot after `now`. Slots after the last claimed one (or
    /// after the job's creation) count.
    #[allow(clippy::type_complexity)]
    pub fn due_slot(
        job: &JobSchedule,
        now: Timestamp,
    ) -> Result<(Option<(Timestamp, u64)>, Timestamp), CronError> {
        let schedule = Schedule::parse(&job.cron)?;
        let tz = zone(&job.tz)?;
        let (last, count, next) = schedule.fires_between(&tz, Self::since(job, now), now)?;
        Ok((last.map(|slot| (slot, count.saturating_sub(1))), next))
    }

    /// The next instant at which some job is due, as the last tick left it (`None` before the
    /// first tick or when no job has a future slot).
    pub fn next_due(&self) -> Option<Timestamp> {
        self.next_fires.lock().unwrap_or_else(PoisonError::into_inner).values().map(|n| n.at).min()
    }

    /// The `n` jobs due soonest as the last tick left them (name, instant), soonest first; a
    /// job due now or broken is not among them.
    pub fn upcoming(&self, n: usize) -> Vec<(String, Timestamp)> {
        let fires = self.next_fires.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next: Vec<(String, Timestamp)> =
            fires.values().map(|f| (f.name.clone(), f.at)).collect();
        next.sort_by_key(|(_, at)| *at);
        next.truncate(n);
        next
    }

    /// How many enabled jobs the last tick looked at.
    pub fn watched(&self) -> usize {
        self.next_fires.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether the last tick found `job` not due before a later instant than `now`.
    fn known_not_due(&self, job: &JobSchedule, now: Timestamp) -> bool {
        let fires = self.next_fires.lock().unwrap_or_else(PoisonError::into_inner);
        fires.get(&job.id).is_some_and(|n| now < n.at && n.still_for(job))
    }

    /// At start, when this process is the only scheduler on the database (the daemon lock is
    /// held): every claim still unfinished was left by a process that died, so it is marked
    /// interrupted and reported now rather than after the timeout. Never rerun.
    pub fn recover(&self) -> Result<Vec<SlotRun>, SchedulerError> {
        let now = self.clock.now();
        let cutoff = now.checked_add(SignedDuration::from_millis(1)).unwrap_or(now);
        let interrupted = self.store.job_mark_interrupted(&stamp(cutoff), &stamp(now))?;
        self.report_interrupted(&interrupted);
        Ok(interrupted)
    }

    fn report_interrupted(&self, runs: &[SlotRun]) {
        for run in runs {
            let job = self.job_name(run.job_id);
            self.notifier.notify(Notice {
                kind: NoticeKind::Interrupted,
                job: job.clone(),
                slot: run.slot.clone(),
                missed: run.missed,
                text: format!(
                    "The run of job {job} for {} was interrupted (aria stopped during it); it is \
                     not run again automatically.",
                    run.slot
                ),
            });
        }
    }

    /// One evaluation at the clock's now (see the module documentation).
    pub fn tick(&self) -> Result<TickReport, SchedulerError> {
        let now = self.clock.now();
        *self.last_tick.lock().unwrap_or_else(PoisonError::into_inner) = Some(now);
        let mut report = TickReport::default();
        let grace = self.config.timeout + Duration::from_secs(60);
        let cutoff = now
            .checked_sub(SignedDuration::try_from(grace).unwrap_or(SignedDuration::MAX))
            .unwrap_or(Timestamp::MIN);
        report.interrupted = self.store.job_mark_interrupted(&stamp(cutoff), &stamp(now))?;
        self.report_interrupted(&report.interrupted);
        // Read before the jobs, so a change committed after it is seen at the next tick.
        let fingerprint = self.store.jobs_fingerprint()?;
        let settled = *self.settled.lock().unwrap_or_else(PoisonError::into_inner);
        if settled == Some(fingerprint) && self.next_due().is_none_or(|at| now < at) {
            return Ok(report);
        }
        let jobs = self.store.job_schedules()?;
        let ids: HashSet<i64> = jobs.iter().map(|j| j.id).collect();
        self.next_fires
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|id, _| ids.contains(id));
        for job in jobs {
            if self.known_not_due(&job, now) {
                continue;
            }
            let (slot, missed) = match Self::due_slot(&job, now) {
                Ok((Some(due), _)) => due,
                Ok((None, at)) => {
                    let next = NextFire {
                        cron: job.cron.clone(),
                        tz: job.tz.clone(),
                        name: job.name.clone(),
                        last_claimed: job.last_claimed_slot.clone(),
                        updated_at: job.updated_at.clone(),
                        at,
                    };
                    self.next_fires
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(job.id, next);
                    continue;
                }
                Err(e) => {
                    report.broken.push((job.name.clone(), e.to_string()));
                    continue;
                }
            };
            let slot_text = rfc3339_utc(slot);
            if self.is_running(job.id, &slot_text) {
                continue;
            }
            let Ok(permit) = self.permits.clone().try_acquire_owned() else {
                report.waiting.push(job.name.clone());
                continue;
            };
            // The whole job (action, roots) only for one that runs; gone meanwhile: skip.
            let Some(job) = self.store.job(&job.name)?.filter(|j| j.enabled && j.id == job.id)
            else {
                continue;
            };
            let claim = self.store.job_claim_slot(
                job.id,
                &slot_text,
                &stamp(now),
                &self.config.instance,
                missed,
            )?;
            if claim != Claim::Claimed {
                continue;
            }
            report.started.push((job.name.clone(), slot_text.clone(), missed));
            self.running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert((job.id, slot_text.clone()));
            self.spawn_run(JobRun { job, slot, missed }, slot_text, permit);
        }
        *self.settled.lock().unwrap_or_else(PoisonError::into_inner) =
            report.waiting.is_empty().then_some(fingerprint);
        Ok(report)
    }

    fn is_running(&self, job_id: i64, slot: &str) -> bool {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&(job_id, slot.to_owned()))
    }

    fn job_name(&self, id: i64) -> String {
        self.store
            .jobs()
            .ok()
            .and_then(|jobs| jobs.into_iter().find(|j| j.id == id).map(|j| j.name))
            .unwrap_or_else(|| format!("#{id}"))
    }

    fn spawn_run(&self, run: JobRun, slot_text: String, permit: tokio::sync::OwnedSemaphorePermit) {
        let (running, finished) = (self.running.clone(), self.finished.clone());
        let span = tracing::info_span!("scheduled_job", job = %run.job.name, slot = %slot_text);
        let execute = self.execute(run.clone(), slot_text.clone());
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                execute.await;
                running
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&(run.job.id, slot_text));
                drop(permit);
                finished.notify_one();
            },
            span,
        ));
    }

    /// Runs a claimed slot under the job timeout, records its outcome and tells the user.
    fn execute(&self, run: JobRun, slot_text: String) -> impl Future<Output = Notice> + use<> {
        let (store, clock, notifier) =
            (self.store.clone(), self.clock.clone(), self.notifier.clone());
        let timeout = self.config.timeout;
        self.notifier.notify(notice(NoticeKind::Started, &run, &slot_text, ""));
        let future = self.runner.run(run.clone());
        async move {
            let result = tokio::time::timeout(timeout, future).await;
            let heartbeat = run.job.action["kind"] == "heartbeat";
            let (kind, outcome, text, session) = match result {
                Ok(Ok(out)) if heartbeat => (NoticeKind::Heartbeat, "ok", out.text, out.session_id),
                Ok(Ok(out)) => (NoticeKind::Completed, "ok", out.text, out.session_id),
                Ok(Err(RunError::Failed(why))) => (NoticeKind::Failed, "failed", why, None),
                Ok(Err(RunError::Skipped(why))) => (NoticeKind::Skipped, "skipped", why, None),
                Err(_) => (
                    NoticeKind::Timeout,
                    "timeout",
                    format!("cancelled after {} s", timeout.as_secs()),
                    None,
                ),
            };
            let now = stamp(clock.now());
            if let Err(e) = store.job_finish_slot(
                run.job.id,
                &slot_text,
                &now,
                outcome,
                Some(&text),
                session.as_deref(),
            ) {
                tracing::error!(error = %e, "could not record a scheduled run's outcome");
            }
            let notice = notice(kind, &run, &slot_text, &text);
            notifier.notify(notice.clone());
            notice
        }
    }

    /// Runs job `name` now, once, whatever its schedule (`aria schedule run`, the API's and
    /// Telegram's "run now"). The run is a slot like any other — the current second, claimed
    /// first, recorded in the job's history, told to the user — and its slot does not move the
    /// schedule: the job's next slot runs as planned. A disabled job runs too (asked by name).
    pub async fn run_now(&self, name: &str) -> Result<Notice, RunNowError> {
        let job = self.store.job(name)?.ok_or_else(|| RunNowError::Unknown(name.to_owned()))?;
        let now = self.clock.now();
        let slot = now.round(jiff::Unit::Second).unwrap_or(now);
        let slot_text = rfc3339_utc(slot);
        let claim = self.store.job_claim_manual(
            job.id,
            &slot_text,
            &stamp(now),
            &format!("manual ({})", self.config.instance),
        )?;
        if claim != Claim::Claimed {
            return Err(RunNowError::Busy(name.to_owned()));
        }
        let _permit = self.permits.clone().acquire_owned().await;
        Ok(self.execute(JobRun { job, slot, missed: 0 }, slot_text).await)
    }

    /// Ticks until `cancel`: at least every [`SchedulerConfig::max_sleep`], at the next due
    /// slot, and when a run ends (a job that waited for a permit goes then).
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        loop {
            if let Err(e) = self.tick() {
                tracing::error!(error = %e, "scheduler tick failed");
            }
            let now = self.clock.now();
            let mut sleep = self.config.max_sleep;
            if let Some(next) = self.next_due() {
                let until = now.duration_until(next).unsigned_abs();
                sleep = sleep.min(until);
            }
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(sleep) => {}
                () = self.finished.notified() => {}
            }
        }
    }
}

fn notice(kind: NoticeKind, run: &JobRun, slot: &str, text: &str) -> Notice {
    let name = &run.job.name;
    let missed = match run.missed {
        0 => String::new(),
        1 => " (1 earlier slot was missed while aria was not running; only this one ran)".into(),
        n => format!(
            " ({n} earlier slots were missed while aria was not running; only this one ran)"
        ),
    };
    let text = match kind {
        NoticeKind::Started => format!("Job {name} ({slot}) started{missed}"),
        NoticeKind::Completed | NoticeKind::Heartbeat => {
            format!("Job {name} ({slot}){missed}: {text}")
        }
        NoticeKind::Skipped => {
            format!(
                "Job {name} ({slot}) was skipped{missed}: {text}; it runs again at its next slot"
            )
        }
        NoticeKind::Failed => {
            format!("Job {name} ({slot}) failed{missed}: {text}; it runs again at its next slot")
        }
        NoticeKind::Timeout => format!("Job {name} ({slot}) timed out{missed}: {text}"),
        NoticeKind::Interrupted => format!("Job {name} ({slot}) was interrupted{missed}"),
    };
    Notice { kind, job: name.clone(), slot: slot.to_owned(), missed: run.missed, text }
}

/// RFC 3339 UTC with milliseconds, as the store writes its own times.
fn stamp(at: Timestamp) -> String {
    aria_store::rfc3339_at(at.into())
}

#[cfg(test)]
mod tests;
