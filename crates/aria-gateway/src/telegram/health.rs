//! `/health`, `/status resources` and `/logs`: whether each part the daemon depends on works
//! and what it uses of the machine — read from the status collector, like `GET /health` and
//! `GET /status` — and what it warned about lately (from its log files, already scrubbed of
//! secrets).

use crate::status::Health;

use super::Telegram;

fn mark(status: Health) -> &'static str {
    match status {
        Health::Healthy => "✅",
        Health::Degraded => "⚠️",
        Health::Unhealthy => "❌",
    }
}

/// The status collector's roll-up and each check (the same as `GET /health`), collected now so
/// the answer is current.
pub(super) async fn health(tg: &Telegram) -> String {
    let status = tg.gw.status.collect(&tg.gw).await;
    let overall = status.status.unwrap_or(Health::Healthy);
    let mut out = format!("{}\n", overall.as_str());
    for c in &status.checks {
        out.push_str(&format!("{} {}: {}\n", mark(c.status), c.name, c.detail));
    }
    out
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Resources as the status collector measured them (collected now).
pub(super) async fn resources(tg: &Telegram) -> String {
    let s = tg.gw.status.collect(&tg.gw).await;
    let p = &s.process;
    format!(
        "CPU: {} since start{}\nRSS: {}\ndatabase: {}\nlogs: {}\ndisk free: {}\nsnapshots: {}\n\
         event-loop lag: {:.1} ms",
        p.cpu_seconds.map_or("unknown".into(), |c| format!("{c:.1} s")),
        p.cpu_percent.map(|c| format!(" ({c:.1} % lately)")).unwrap_or_default(),
        p.rss_bytes.map_or("unknown".into(), mib),
        s.database_bytes.map_or("in memory".into(), mib),
        mib(s.log_bytes),
        s.disk_free_bytes.map_or("unknown".into(), mib),
        s.snapshots.map_or("none kept".to_owned(), |n| n.to_string()),
        s.event_loop_lag_ms,
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
