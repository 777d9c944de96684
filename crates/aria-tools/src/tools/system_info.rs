//! `system_info {}`: CPU, memory, disk space of each root, and the processes using the most
//! memory, read from `/proc` and `statvfs` (nothing is spawned).
//!
//! Only a process's short name (`comm`) is shown, never its command line or environment, which
//! can carry secrets. Linux only; elsewhere the tool says so.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::guard::path::PathGuard;
use crate::tools::blocking;

/// Processes listed, by resident memory.
pub const TOP_PROCESSES: usize = 10;

/// Facts about the machine. Tier: read.
#[derive(Debug)]
pub struct SystemInfo {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl SystemInfo {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "system_info";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: SystemInfo::NAME.to_owned(),
            description: format!(
                "Facts about this computer: CPU model and cores, load, memory, free disk space \
                 under each allowed root, uptime, and the {TOP_PROCESSES} processes using the \
                 most memory (name, pid, memory, CPU time). Takes no arguments."
            ),
            parameters: json!({
                "type": "object",
                "properties": {},
                "required": [],
                "additionalProperties": false
            }),
        };
        SystemInfo { guard, spec }
    }
}

impl Tool for SystemInfo {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            if let Some(key) = args.as_object().and_then(|m| m.keys().next()) {
                return Err(ToolError::failed(format!(
                    "system_info takes no arguments (got \"{key}\"); call it with {{}}"
                )));
            }
            let guard = Arc::clone(&self.guard);
            blocking(SystemInfo::NAME, move || report(&guard)).await
        })
    }
}

fn report(guard: &PathGuard) -> Result<ToolOutput, ToolError> {
    if !Path::new("/proc/meminfo").exists() {
        return Err(ToolError::failed(
            "system_info reads /proc, which this operating system does not have; use \
             shell_execute with the system's own tools instead",
        ));
    }
    let mut lines = Vec::new();
    let kernel = read_trim("/proc/sys/kernel/osrelease");
    let host = read_trim("/proc/sys/kernel/hostname");
    let uptime = read_trim("/proc/uptime")
        .split_whitespace()
        .next()
        .and_then(|s| s.parse::<f64>().ok())
        .map_or_else(|| "?".to_owned(), |s| duration(s as u64));
    lines.push(format!("host: {host} · Linux {kernel} · up {uptime}"));

    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = field(&cpuinfo, "model name").unwrap_or("unknown CPU");
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let load: Vec<String> =
        read_trim("/proc/loadavg").split_whitespace().take(3).map(str::to_owned).collect();
    lines.push(format!("cpu: {model} · {cores} cores · load {} (1, 5, 15 min)", load.join(" ")));

    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = |name: &str| meminfo_kib(&meminfo, name);
    let (total, available) = (kib("MemTotal"), kib("MemAvailable"));
    let (swap_total, swap_free) = (kib("SwapTotal"), kib("SwapFree"));
    lines.push(format!(
        "memory: {} used of {} ({} available) · swap {} used of {}",
        bytes(total.saturating_sub(available) * 1024),
        bytes(total * 1024),
        bytes(available * 1024),
        bytes(swap_total.saturating_sub(swap_free) * 1024),
        bytes(swap_total * 1024),
    ));

    let mut disks = Vec::new();
    lines.push("disk space under each root:".to_owned());
    for root in guard.roots() {
        match rustix::fs::statvfs(root) {
            Ok(v) => {
                let size = v.f_blocks * v.f_frsize;
                let free = v.f_bavail * v.f_frsize;
                lines.push(format!(
                    "  {}: {} free of {}",
                    root.display(),
                    bytes(free),
                    bytes(size)
                ));
                disks.push(json!({"root": root, "free_bytes": free, "size_bytes": size}));
            }
            Err(e) => lines.push(format!("  {}: unknown ({e})", root.display())),
        }
    }

    let procs = top_processes(TOP_PROCESSES);
    lines.push(format!("top {} processes by memory (pid, name, memory, CPU time):", procs.len()));
    for p in &procs {
        lines.push(format!(
            "  {:>7}  {:<16} {:>10}  {}",
            p.pid,
            p.name,
            bytes(p.rss_bytes),
            duration(p.cpu_secs)
        ));
    }
    let details = json!({
        "memory_total_bytes": total * 1024,
        "memory_available_bytes": available * 1024,
        "disks": disks,
        "processes": procs.len(),
    });
    Ok(ToolOutput::text(lines.join("\n")).with_details(details))
}

/// One process, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Proc {
    pid: u32,
    name: String,
    rss_bytes: u64,
    cpu_secs: u64,
}

fn top_processes(n: usize) -> Vec<Proc> {
    let page = rustix::param::page_size() as u64;
    let ticks = rustix::param::clock_ticks_per_second().max(1);
    let mut all: Vec<Proc> = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
            parse_stat(pid, &stat, page, ticks)
        })
        .collect();
    all.sort_by(|a, b| b.rss_bytes.cmp(&a.rss_bytes).then(a.pid.cmp(&b.pid)));
    all.truncate(n);
    all
}

/// Parses `/proc/<pid>/stat`. The name sits in parentheses and may itself contain spaces and
/// parentheses, so the fields after it are found from the *last* `)`.
fn parse_stat(pid: u32, stat: &str, page: u64, ticks: u64) -> Option<Proc> {
    let (name, cpu_ticks, rss_pages) = stat_fields(stat)?;
    Some(Proc { pid, name, rss_bytes: rss_pages * page, cpu_secs: cpu_ticks / ticks })
}

/// The name, CPU time (user + system, in clock ticks) and resident pages of a `stat` line.
fn stat_fields(stat: &str) -> Option<(String, u64, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After the name: state(0) ... utime(11) stime(12) ... rss(21), per proc(5).
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    let rss_pages: u64 = rest.get(21)?.parse().ok()?;
    Some((name, utime + stime, rss_pages))
}

/// This process's CPU time so far (seconds, user + system) and resident memory (bytes), from
/// `/proc/self/stat` (Linux).
pub fn own_usage() -> Option<(f64, u64)> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    let (_, cpu_ticks, rss_pages) = stat_fields(&stat)?;
    let ticks = rustix::param::clock_ticks_per_second().max(1) as f64;
    Some((cpu_ticks as f64 / ticks, rss_pages * rustix::param::page_size() as u64))
}

fn read_trim(path: &str) -> String {
    fs::read_to_string(path).map(|s| s.trim().to_owned()).unwrap_or_else(|_| "?".to_owned())
}

fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim())
}

fn meminfo_kib(text: &str, name: &str) -> u64 {
    field(text, name).and_then(|v| v.trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s} s"),
        (0, 0, _) => format!("{m} min {s} s"),
        (0, _, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse_from_the_last_parenthesis() {
        let stat = "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 \
                    1 0 1000 123456789 300 18446744073709551615";
        let p = parse_stat(4242, stat, 4096, 100).unwrap();
        assert_eq!(
            p,
            Proc { pid: 4242, name: "my (odd) prog".into(), rss_bytes: 300 * 4096, cpu_secs: 4 }
        );
        assert_eq!(parse_stat(1, "1 (x) S 1 2", 4096, 100), None, "a truncated line is skipped");
    }

    #[test]
    fn sizes_and_durations_read_like_a_person_would_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024 / 2), "1.5 GiB");
        assert_eq!(duration(59), "59 s");
        assert_eq!(duration(3 * 3600 + 12 * 60 + 5), "3 h 12 min");
        assert_eq!(duration(2 * 86_400 + 3600), "2 d 1 h");
    }

    #[test]
    fn meminfo_fields_are_read_in_kib() {
        let text = "MemTotal:       24576000 kB\nMemAvailable:   20480000 kB\n";
        assert_eq!(meminfo_kib(text, "MemTotal"), 24_576_000);
        assert_eq!(meminfo_kib(text, "MemAvailable"), 20_480_000);
        assert_eq!(meminfo_kib(text, "SwapTotal"), 0);
    }
}
