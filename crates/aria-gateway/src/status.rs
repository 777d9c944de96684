//! The status collector: a background task that, every `interval` (15 s by
//! default), looks at the process, the runs, the scheduler, the outbox, the models, the
//! database, the logs, the disk and the restore points, rolls its checks up into healthy /
//! degraded / unhealthy, and keeps the result in memory. `GET /status`, `GET /health`,
//! `GET /metrics`, `/ui/status` and Telegram's `/status` and `/health` read it; a failing
//! check is a finding, never a crash of the collector (its own failure domain: one tick's
//! error is logged and the next tick tries again).

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::Gateway;
use crate::metrics::{Counts, Families, Hour, Kind, number};

/// How a check, and the whole, stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    Healthy,
    Degraded,
    Unhealthy,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::Degraded => "degraded",
            Health::Unhealthy => "unhealthy",
        }
    }

    fn level(self) -> f64 {
        match self {
            Health::Healthy => 0.0,
            Health::Degraded => 1.0,
            Health::Unhealthy => 2.0,
        }
    }
}

/// One check's finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Health,
    pub detail: String,
}

/// The outbox channel of Telegram (`telegram::CHANNEL`, which exists only with the feature).
const TELEGRAM: &str = "telegram";

fn check(name: &'static str, status: Health, detail: impl Into<String>) -> Check {
    Check { name, status, detail: detail.into() }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Process {
    pub pid: u32,
    pub version: &'static str,
    pub cpu_percent: Option<f64>,
    pub cpu_seconds: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub open_fds: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NextJob {
    pub name: String,
    pub at: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SchedulerStatus {
    /// Whether a scheduler runs in this process.
    pub running: bool,
    pub last_tick: Option<String>,
    pub next_jobs: Vec<NextJob>,
    /// The enabled jobs the scheduler watches (0 without a scheduler).
    pub enabled_jobs: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OutboxStatus {
    pub waiting: u64,
    pub oldest_waiting_secs: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelStatus {
    pub model: String,
    pub backend: String,
    /// Outcomes of the last model calls, newest last.
    pub recent_outcomes: Vec<String>,
}

/// What the collector found at its last tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Status {
    pub status: Option<Health>,
    pub checks: Vec<Check>,
    pub collected_at: String,
    pub uptime_secs: u64,
    pub process: Process,
    pub runs_in_flight: usize,
    pub runs_by_state: Vec<(String, u64)>,
    pub scheduler: SchedulerStatus,
    pub notifications_enabled: bool,
    pub outbox: OutboxStatus,
    pub models: ModelStatus,
    pub database_bytes: Option<u64>,
    pub log_bytes: u64,
    pub disk_free_bytes: Option<u64>,
    pub snapshots: Option<usize>,
    pub event_loop_lag_ms: f64,
    pub job_runs_by_outcome: Vec<(String, u64)>,
    /// The last 24 hours, oldest first.
    pub history: Vec<HourRow>,
    /// Recent warnings and errors from the log (at most 10, newest last).
    pub recent_errors: Vec<String>,
    /// How long this collection took.
    pub collect_ms: f64,
}

/// One hour of the history: runs started, model calls, their p50/p95, spend, errors.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HourRow {
    pub runs: u64,
    #[serde(flatten)]
    pub calls: Hour,
}

/// Thresholds, with their defaults (`Default` below).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// A scheduler tick older than this is a missed tick (degraded).
    pub scheduler_lag: Duration,
    /// An outbox message waiting longer is stuck (degraded).
    pub outbox_stuck: Duration,
    /// Less free disk than this is degraded, a tenth of it unhealthy.
    pub disk_low: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            scheduler_lag: Duration::from_secs(150),
            outbox_stuck: Duration::from_secs(600),
            disk_low: 1 << 30,
        }
    }
}

/// The collector's state, shared by the background task and the readers.
#[derive(Debug)]
pub struct Collector {
    started: Instant,
    last: RwLock<Option<Arc<Status>>>,
    counts: Mutex<Counts>,
    cpu: Mutex<Option<(Instant, f64)>>,
    limits: RwLock<Limits>,
}

impl Default for Collector {
    fn default() -> Self {
        Collector {
            started: Instant::now(),
            last: RwLock::default(),
            counts: Mutex::default(),
            cpu: Mutex::default(),
            limits: RwLock::default(),
        }
    }
}

/// Resident memory of this process (bytes).
pub fn rss_bytes() -> Option<u64> {
    aria_tools::tools::system_info::own_usage().map(|(_, rss)| rss)
}

/// CPU seconds this process used (user + system).
pub fn cpu_seconds() -> Option<f64> {
    aria_tools::tools::system_info::own_usage().map(|(cpu, _)| cpu)
}

fn open_fds() -> Option<u64> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as u64)
}

/// The bytes of a file, or of every file under a directory.
pub fn size_of(path: &Path) -> u64 {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::read_dir(path)
            .map(|d| d.filter_map(Result::ok).map(|e| size_of(&e.path())).sum())
            .unwrap_or(0),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// Free bytes for an unprivileged user on the file system of `path`.
fn disk_free(path: &Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(path).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

fn age_secs(rfc3339: &str) -> Option<u64> {
    let at: jiff::Timestamp = rfc3339.parse().ok()?;
    u64::try_from(at.duration_until(jiff::Timestamp::now()).as_secs()).ok()
}

impl Collector {
    /// The last status; collected now when there is none yet.
    pub async fn status(&self, gw: &Gateway) -> Arc<Status> {
        if let Some(status) = self.last.read().unwrap_or_else(PoisonError::into_inner).clone() {
            return status;
        }
        self.collect(gw).await
    }

    /// Changes the thresholds (tests shrink them to see a check turn).
    pub fn set_limits(&self, limits: Limits) {
        *self.limits.write().unwrap_or_else(PoisonError::into_inner) = limits;
    }

    fn limits(&self) -> Limits {
        self.limits.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The last status without collecting (`None` before the first tick).
    pub fn last(&self) -> Option<Arc<Status>> {
        self.last.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Reads the new traces into the counters.
    pub fn catch_up(&self, gw: &Gateway) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = counts.catch_up(&gw.store) {
            tracing::warn!(error = %e, "cannot read new traces for the metrics");
        }
    }

    fn cpu_percent(&self, now_seconds: Option<f64>) -> Option<f64> {
        let now = now_seconds?;
        let mut last = self.cpu.lock().unwrap_or_else(PoisonError::into_inner);
        let percent = last.map(|(at, before)| {
            let wall = at.elapsed().as_secs_f64();
            if wall > 0.0 { 100.0 * (now - before).max(0.0) / wall } else { 0.0 }
        });
        *last = Some((Instant::now(), now));
        percent
    }

    /// One collection: looks at everything, stores and returns the result.
    pub async fn collect(&self, gw: &Gateway) -> Arc<Status> {
        let began = Instant::now();
        // How late a 10 ms timer fires: the event loop's lag.
        let asked = Instant::now();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let lag = asked.elapsed().saturating_sub(Duration::from_millis(10));
        self.catch_up(gw);
        let limits = self.limits();
        let store = &gw.store;
        let mut checks = Vec::new();

        // The database: a real write, so a read-only or full database shows.
        let stamp = jiff::Timestamp::now().to_string();
        checks.push(match store.set_channel_state("status", "probe", &stamp) {
            Ok(()) => check(
                "database",
                Health::Healthy,
                format!("writable, schema {}", store.schema_version().unwrap_or(0)),
            ),
            Err(e) => check("database", Health::Unhealthy, format!("cannot write: {e}")),
        });

        let disk = disk_free(&gw.data_dir);
        checks.push(match disk {
            Some(free) if free < limits.disk_low / 10 => check(
                "disk",
                Health::Unhealthy,
                format!("{} MiB free under {}", free >> 20, gw.data_dir.display()),
            ),
            Some(free) if free < limits.disk_low => {
                check("disk", Health::Degraded, format!("only {} MiB free", free >> 20))
            }
            Some(free) => check("disk", Health::Healthy, format!("{} MiB free", free >> 20)),
            None => check("disk", Health::Degraded, "free space unknown"),
        });

        let scheduler = self.scheduler(gw, &limits, &mut checks);

        let waiting = store.outbox_waiting(TELEGRAM).unwrap_or(0);
        let oldest =
            store.outbox_oldest_waiting(TELEGRAM).ok().flatten().and_then(|t| age_secs(&t));
        checks.push(match oldest {
            Some(age) if age >= limits.outbox_stuck.as_secs() => check(
                "outbox",
                Health::Degraded,
                format!("{waiting} waiting; the oldest for {} min", age / 60),
            ),
            _ => check("outbox", Health::Healthy, format!("{waiting} waiting")),
        });

        let day_ago = jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_hours(24))
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
            .to_string();
        let jobs_day = store.job_outcomes_since(&day_ago).unwrap_or_default();
        let timeouts = jobs_day.iter().find(|(o, _)| o == "timeout").map_or(0, |(_, n)| *n);
        checks.push(if timeouts > 0 {
            check("jobs", Health::Degraded, format!("{timeouts} job run(s) timed out in 24 h"))
        } else {
            check("jobs", Health::Healthy, "no job timed out in 24 h")
        });

        let (recent, history) = {
            let counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
            (counts.recent_model_outcomes.clone(), counts.history())
        };
        let last_five: Vec<&String> = recent.iter().rev().take(5).collect();
        checks.push(if last_five.len() == 5 && last_five.iter().all(|o| *o != "ok") {
            check(
                "models",
                Health::Degraded,
                format!("the last 5 model calls failed (latest: {})", last_five[0]),
            )
        } else {
            check("models", Health::Healthy, format!("{} recent call(s)", recent.len()))
        });

        checks.push(if gw.shutdown.is_cancelled() {
            check("runs", Health::Degraded, "the daemon is stopping")
        } else {
            check("runs", Health::Healthy, format!("{} in flight", gw.runs.active()))
        });

        let snapshots = match gw.services.snapshots.clone() {
            Some(s) => tokio::task::spawn_blocking(move || s.list(None, None).map(|l| l.len()))
                .await
                .ok()
                .and_then(Result::ok),
            None => None,
        };
        let runs_per_hour = store.sessions_per_hour_since(&day_ago).unwrap_or_default();
        let history = history
            .into_iter()
            .map(|calls| HourRow {
                runs: runs_per_hour.iter().find(|(h, _)| *h == calls.hour).map_or(0, |(_, n)| *n),
                calls,
            })
            .collect();
        let config = gw.agent.config();
        let cpu = cpu_seconds();
        let status = Status {
            status: checks.iter().map(|c| c.status).max(),
            checks,
            collected_at: jiff::Timestamp::now().to_string(),
            uptime_secs: self.started.elapsed().as_secs(),
            process: Process {
                pid: std::process::id(),
                version: env!("CARGO_PKG_VERSION"),
                cpu_percent: self.cpu_percent(cpu),
                cpu_seconds: cpu,
                rss_bytes: rss_bytes(),
                open_fds: open_fds(),
            },
            runs_in_flight: gw.runs.active(),
            runs_by_state: store.session_state_counts().unwrap_or_default(),
            scheduler,
            notifications_enabled: gw.notifications.settings().enabled,
            outbox: OutboxStatus { waiting, oldest_waiting_secs: oldest },
            models: ModelStatus {
                model: config.model.clone(),
                backend: gw
                    .services
                    .provider
                    .as_ref()
                    .map(|(p, _)| p.name().to_owned())
                    .unwrap_or_default(),
                recent_outcomes: recent,
            },
            database_bytes: store.path().map(|p| size_of(p) + size_of(&p.with_extension("db-wal"))),
            log_bytes: size_of(&gw.data_dir.join("logs")),
            disk_free_bytes: disk,
            snapshots,
            event_loop_lag_ms: lag.as_secs_f64() * 1e3,
            job_runs_by_outcome: store.job_outcomes_since("").unwrap_or_default(),
            history,
            recent_errors: recent_log_errors(&gw.data_dir.join("logs").join("aria.jsonl")),
            collect_ms: began.elapsed().as_secs_f64() * 1e3,
        };
        let status = Arc::new(status);
        *self.last.write().unwrap_or_else(PoisonError::into_inner) = Some(status.clone());
        status
    }

    fn scheduler(&self, gw: &Gateway, limits: &Limits, checks: &mut Vec<Check>) -> SchedulerStatus {
        let scheduler = gw.notifications.scheduler();
        let last_tick = scheduler.as_ref().and_then(|s| s.last_tick());
        checks.push(match (&scheduler, last_tick) {
            (None, _) => check("scheduler", Health::Healthy, "no scheduler in this process"),
            (Some(_), None) => check("scheduler", Health::Healthy, "starting"),
            (Some(_), Some(at)) => {
                let late =
                    u64::try_from(at.duration_until(jiff::Timestamp::now()).as_secs()).unwrap_or(0);
                if late > limits.scheduler_lag.as_secs() {
                    check(
                        "scheduler",
                        Health::Degraded,
                        format!("missed its tick: the last was {late} s ago"),
                    )
                } else {
                    check("scheduler", Health::Healthy, format!("last tick {late} s ago"))
                }
            }
        });
        // What the scheduler already knows from its last tick: nothing is read or computed again.
        let next_jobs = scheduler.as_ref().map_or_else(Vec::new, |s| {
            s.upcoming(5)
                .into_iter()
                .map(|(name, at)| NextJob { name, at: at.to_string() })
                .collect()
        });
        SchedulerStatus {
            running: scheduler.is_some(),
            last_tick: last_tick.map(|t| t.to_string()),
            next_jobs,
            enabled_jobs: scheduler.as_ref().map_or(0, |s| s.watched()),
        }
    }

    /// Every metric: the counters from the traces (caught up now) and the gauges of the last
    /// collection.
    pub fn families(&self, gw: &Gateway) -> Families {
        self.catch_up(gw);
        let mut out = Families::default();
        out.push(
            "aria_build_info",
            Kind::Gauge,
            "The running version.",
            vec![number(&[("version", env!("CARGO_PKG_VERSION"))], 1.0)],
        );
        out.single(
            "aria_uptime_seconds",
            Kind::Gauge,
            "Seconds since the daemon started.",
            self.started.elapsed().as_secs_f64(),
        );
        out.single(
            "aria_runs_in_flight",
            Kind::Gauge,
            "Runs in progress.",
            gw.runs.active() as f64,
        );
        self.counts.lock().unwrap_or_else(PoisonError::into_inner).families(&mut out);
        let last = self.last();
        if let Some(s) = &last {
            let runs = s
                .runs_by_state
                .iter()
                .map(|(state, n)| number(&[("state", state)], *n as f64))
                .collect();
            out.push("aria_runs_total", Kind::Counter, "Runs, by their current state.", runs);
            let jobs = s
                .job_runs_by_outcome
                .iter()
                .map(|(o, n)| number(&[("outcome", o)], *n as f64))
                .collect();
            out.push(
                "aria_scheduler_job_runs_total",
                Kind::Counter,
                "Scheduled job runs, by outcome.",
                jobs,
            );
            if let Some(tick) =
                s.scheduler.last_tick.as_deref().and_then(|t| t.parse::<jiff::Timestamp>().ok())
            {
                out.single(
                    "aria_scheduler_last_tick_timestamp_seconds",
                    Kind::Gauge,
                    "When the scheduler last evaluated its jobs (Unix time).",
                    tick.as_millisecond() as f64 / 1e3,
                );
            }
            out.single(
                "aria_outbox_waiting",
                Kind::Gauge,
                "Outgoing messages not sent yet.",
                s.outbox.waiting as f64,
            );
            out.single(
                "aria_outbox_oldest_waiting_seconds",
                Kind::Gauge,
                "How long the oldest unsent message has waited.",
                s.outbox.oldest_waiting_secs.unwrap_or(0) as f64,
            );
            if let Some(db) = s.database_bytes {
                out.single(
                    "aria_database_bytes",
                    Kind::Gauge,
                    "Size of the database and its WAL.",
                    db as f64,
                );
            }
            out.single("aria_log_bytes", Kind::Gauge, "Size of the log files.", s.log_bytes as f64);
            if let Some(n) = s.snapshots {
                out.single("aria_snapshots", Kind::Gauge, "Restore points kept.", n as f64);
            }
            out.single(
                "aria_event_loop_lag_seconds",
                Kind::Gauge,
                "How late a 10 ms timer fired at the last collection.",
                s.event_loop_lag_ms / 1e3,
            );
            out.single(
                "aria_health_status",
                Kind::Gauge,
                "0 healthy, 1 degraded, 2 unhealthy.",
                s.status.unwrap_or(Health::Healthy).level(),
            );
            let checks =
                s.checks.iter().map(|c| number(&[("check", c.name)], c.status.level())).collect();
            out.push(
                "aria_health_check_status",
                Kind::Gauge,
                "Each check: 0 healthy, 1 degraded, 2 unhealthy.",
                checks,
            );
        }
        if let Some(cpu) = cpu_seconds() {
            out.single(
                "process_cpu_seconds_total",
                Kind::Counter,
                "Total user and system CPU time spent in seconds.",
                cpu,
            );
        }
        if let Some(rss) = rss_bytes() {
            out.single(
                "process_resident_memory_bytes",
                Kind::Gauge,
                "Resident memory size in bytes.",
                rss as f64,
            );
        }
        if let Some(fds) = open_fds() {
            out.single(
                "process_open_fds",
                Kind::Gauge,
                "Number of open file descriptors.",
                fds as f64,
            );
        }
        out
    }
}

/// The last warnings and errors of the log file (at most 10, newest last), as
/// `time level message`.
fn recent_log_errors(path: &Path) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else { return Vec::new() };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(len.saturating_sub(256 * 1024))).is_err()
        || file.read_to_end(&mut bytes).is_err()
    {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    // Only the end of the current file: this runs at every collection.
    let mut out: Vec<String> = text
        .lines()
        .filter_map(|line| crate::logs::Entry::parse(line).event)
        .filter(|e| e.level >= crate::logs::Level::Warn)
        .map(|e| format!("{} {} {}", e.time, e.level.as_str(), e.message))
        .collect();
    let skip = out.len().saturating_sub(10);
    out.drain(..skip);
    out
}

/// Collects every `interval` until `stop`. A collection that panics is logged and the next
/// one goes on: the collector is its own failure domain.
///
/// `when_idle` runs (on the blocking pool) after a collection that found no run in flight:
/// the daemon gives back there what the collection and earlier work left mapped
/// (`aria_sandbox::release_unused_memory`), so an idle daemon's memory does not creep up
/// between requests.
pub async fn run(gw: Arc<Gateway>, interval: Duration, stop: CancellationToken, when_idle: fn()) {
    loop {
        let task = tokio::spawn({
            let gw = gw.clone();
            async move {
                gw.status.collect(&gw).await;
            }
        });
        if let Err(e) = task.await {
            tracing::error!(error = %e, "the status collection failed; trying again next time");
        }
        if gw.runs.active() == 0 {
            let _ = tokio::task::spawn_blocking(when_idle).await;
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}
