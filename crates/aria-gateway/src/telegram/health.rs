//! `/health`, `/status resources` and `/logs`: what the daemon is doing to the machine, what it
//! warned about lately (from its log file, already scrubbed of secrets), and whether each
//! part it depends on works — healthy, degraded (works, but something needs a look: a message
//! stuck in the outbox for 10 minutes) or unhealthy (the database cannot be read).

use std::path::Path;
use std::time::{Duration, Instant};

use super::Telegram;
use super::outbox::CHANNEL;

/// One check: its name, whether it passed (`None`: degraded) and what it found.
struct Check {
    name: &'static str,
    ok: Option<bool>,
    detail: String,
}

pub(super) fn health(tg: &Telegram) -> String {
    let store = &tg.gw.store;
    let mut checks = Vec::new();
    checks.push(match store.schema_version() {
        Ok(v) => Check { name: "database", ok: Some(true), detail: format!("schema {v}") },
        Err(e) => Check { name: "database", ok: Some(false), detail: e.to_string() },
    });
    let oldest = store.outbox_oldest_waiting(CHANNEL);
    checks.push(match oldest {
        Err(e) => Check { name: "outbox", ok: Some(false), detail: e.to_string() },
        Ok(oldest) => {
            let age = oldest
                .and_then(|t| {
                    time::OffsetDateTime::parse(&t, &time::format_description::well_known::Rfc3339)
                        .ok()
                })
                .map(|t| time::OffsetDateTime::now_utc() - t);
            let waiting = store.outbox_waiting(CHANNEL).unwrap_or(0);
            match age {
                Some(age) if age.whole_minutes() >= 10 => Check {
                    name: "outbox",
                    ok: None,
                    detail: format!(
                        "{waiting} waiting; the oldest for {} min",
                        age.whole_minutes()
                    ),
                },
                _ => Check { name: "outbox", ok: Some(true), detail: format!("{waiting} waiting") },
            }
        }
    });
    checks.push(Check {
        name: "runs",
        ok: Some(!tg.gw.shutdown.is_cancelled()),
        detail: if tg.gw.shutdown.is_cancelled() {
            "the daemon is stopping".into()
        } else {
            format!("{} in flight", tg.gw.runs.active())
        },
    });
    let verdict = if checks.iter().any(|c| c.ok == Some(false)) {
        "unhealthy"
    } else if checks.iter().any(|c| c.ok.is_none()) {
        "degraded"
    } else {
        "healthy"
    };
    let mut out = format!("{verdict}\n");
    for c in checks {
        let mark = match c.ok {
            Some(true) => "✅",
            None => "⚠️",
            Some(false) => "❌",
        };
        out.push_str(&format!("{mark} {}: {}\n", c.name, c.detail));
    }
    out
}

/// `VmRSS` of this process, from `/proc/self/status` (Linux).
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU seconds this process used (user + system), from `/proc/self/stat` (Linux, 100 ticks/s).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn size_of(path: &Path) -> u64 {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => std::fs::read_dir(path)
            .map(|d| d.filter_map(Result::ok).map(|e| size_of(&e.path())).sum())
            .unwrap_or(0),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

pub(super) async fn resources(tg: &Telegram) -> String {
    // How late a timer of 10 ms fires: the event loop's lag.
    let asked = Instant::now();
    tokio::time::sleep(Duration::from_millis(10)).await;
    let lag = asked.elapsed().saturating_sub(Duration::from_millis(10));
    let database = tg.gw.store.path().map(|p| {
        let wal = p.with_extension("db-wal");
        size_of(p) + size_of(&wal)
    });
    let logs = size_of(&tg.gw.data_dir.join("logs"));
    let snapshots = match tg.gw.services.snapshots.clone() {
        Some(s) => tokio::task::spawn_blocking(move || s.list(None, None).map(|l| l.len()))
            .await
            .ok()
            .and_then(Result::ok)
            .map_or("unknown".to_owned(), |n| n.to_string()),
        None => "none kept".into(),
    };
    format!(
        "CPU: {} since start\nRSS: {}\ndatabase: {}\nlogs: {}\nsnapshots: {snapshots}\nevent-loop lag: {:.1} ms",
        cpu_seconds().map_or("unknown".into(), |s| format!("{s:.1} s")),
        rss_kib().map_or("unknown".into(), |k| mib(k * 1024)),
        database.map_or("in memory".into(), mib),
        mib(logs),
        lag.as_secs_f64() * 1e3,
    )
}

/// The warnings and errors of the last `hours` from `$ARIA_HOME/logs` (the current file and the
/// rotated ones), newest last, at most 20.
pub(super) fn logs(tg: &Telegram, hours: &str) -> Result<String, String> {
    use crate::logs::{Filter, Level};
    let hours: i64 = match hours.trim() {
        "" => 1,
        h => h
            .parse()
            .ok()
            .filter(|h| (1..=720).contains(h))
            .ok_or_else(|| format!("`{h}` is not a number of hours (1–720): /logs 6"))?,
    };
    let filter = Filter {
        min_level: Some(Level::Warn),
        since: Some(jiff::Timestamp::now() - jiff::SignedDuration::from_hours(hours)),
        unparsed: false,
    };
    let tail = match crate::logs::tail(&tg.gw.data_dir.join("logs"), &filter, 20) {
        Ok(Some(tail)) => tail,
        Ok(None) => return Ok("There is no log file (logging to a file is off).".into()),
        Err(e) => return Err(format!("cannot read the log: {e}")),
    };
    let lines: Vec<String> = tail
        .entries
        .iter()
        .filter_map(|entry| entry.event.as_ref())
        .map(|event| {
            let time = event.time.strftime("%H:%M:%S");
            let message: String = event.message.chars().take(300).collect();
            format!("{time} {} {message}", event.level.as_str())
        })
        .collect();
    if lines.is_empty() {
        return Ok(format!("No warnings or errors in the last {hours} h."));
    }
    let total = tail.matched;
    Ok(format!(
        "Warnings and errors in the last {hours} h ({total}{}):\n{}",
        if total > 20 { ", the last 20" } else { "" },
        lines.join("\n")
    ))
}
