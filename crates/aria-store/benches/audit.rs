//! Audit chain throughput: appends (single and batched) and verification, on a temp file.
//!
//! `cargo bench -p aria-store --bench audit`; `ARIA_BENCH_RECORDS=200000` for a shorter run
//! (default 1,000,000 records).

use std::error::Error;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{AuditEvent, NoRedact};
use aria_store::{Store, verify_bundle};
use serde_json::json;

const SINGLE: u64 = 20_000;
const BATCH: u64 = 1_000;

fn event(i: u64) -> AuditEvent {
    let session = format!("0193a1b2-0000-7000-8000-{:012}", i / 50);
    let (kind, payload) = match i % 3 {
        0 => (
            "tool.start",
            json!({"tool": "fs.read", "args": {"path": format!("/home/user/project/src/file_{i}.rs")}}),
        ),
        1 => ("tool.end", json!({"tool": "fs.read", "ok": true, "bytes": i * 7, "ms": 1.25})),
        _ => (
            "session.transition",
            json!({"from": "executing", "to": "filtering", "iteration": i % 15}),
        ),
    };
    AuditEvent::new(Some(&session), "agent", kind, payload)
}

/// User + system CPU seconds of this process so far (Linux `/proc`, 100 Hz ticks), to tell
/// this bench's own cost from time lost to other processes on a shared machine.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn rate(n: u64, d: Duration) -> String {
    let per_sec = n as f64 / d.as_secs_f64();
    format!("{n:>9} records in {:>8.3} s = {:>10.0} records/s", d.as_secs_f64(), per_sec)
}

fn main() -> Result<(), Box<dyn Error>> {
    let total: u64 = match std::env::var("ARIA_BENCH_RECORDS") {
        Ok(v) => v.parse()?,
        Err(_) => 1_000_000,
    };
    let mut out = std::io::stdout().lock();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.db");
    let store = Store::open(&path, Arc::new(NoRedact))?;
    writeln!(out, "aria-store audit bench: {total} records in {}", path.display())?;

    let single = SINGLE.min(total);
    let start = Instant::now();
    for i in 0..single {
        store.audit_append(event(i))?;
    }
    writeln!(out, "append, one transaction each:      {}", rate(single, start.elapsed()))?;

    let mut i = single;
    let start = Instant::now();
    while i < total {
        let end = (i + BATCH).min(total);
        store.audit_append_batch((i..end).map(event))?;
        i = end;
    }
    writeln!(
        out,
        "append, batches of {BATCH}:          {}",
        rate(total - single, start.elapsed())
    )?;
    let size = std::fs::metadata(&path)?.len()
        + std::fs::metadata(dir.path().join("bench.db-wal")).map_or(0, |m| m.len());
    writeln!(out, "database + WAL size: {:.1} MiB", size as f64 / (1024.0 * 1024.0))?;

    for run in 1..=3 {
        let cpu = cpu_seconds();
        let start = Instant::now();
        let report = store.verify(None)?;
        let elapsed = start.elapsed();
        if !report.is_ok() || report.records != total {
            return Err(format!("verification failed: {report:?}").into());
        }
        let cpu = match (cpu, cpu_seconds()) {
            (Some(a), Some(b)) => format!(" ({:.2} CPU s over 2 threads)", b - a),
            _ => String::new(),
        };
        writeln!(
            out,
            "verify whole chain (run {run}):       {}{cpu}",
            rate(report.records, elapsed)
        )?;
    }

    let session = "0193a1b2-0000-7000-8000-000000000100";
    let start = Instant::now();
    let report = store.verify(Some(session))?;
    writeln!(out, "verify one session:                {}", rate(report.records, start.elapsed()))?;
    let bundle = store.export_session(session)?;
    let start = Instant::now();
    let report = verify_bundle(&bundle);
    if !report.is_ok() {
        return Err(format!("bundle verification failed: {report:?}").into());
    }
    writeln!(out, "verify_bundle (offline):           {}", rate(report.records, start.elapsed()))?;
    Ok(())
}
