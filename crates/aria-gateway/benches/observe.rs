//! The cost of observing ARIA (prints figures, asserts nothing):
//! - recording one span (a trace row) in the store;
//! - `GET /metrics` rendering with 100,000 traces stored (after the start-up catch-up), with
//!   and without new traces to read since the last scrape;
//! - one status collection, and what it costs of one core at the default 15 s interval.
//!
//! `cargo bench -p aria-gateway --bench observe` (`ARIA_BENCH_TRACES=N`, default 100,000).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::time::{Duration, Instant};

use aria_api::{Journal, Limits, NewSession, TraceKind, TraceRecord, Usage};
use serde_json::json;

fn span(session: &str, i: usize) -> TraceRecord {
    let model = i.is_multiple_of(3);
    TraceRecord {
        session_id: session.to_owned(),
        kind: if model { TraceKind::ModelCall } else { TraceKind::ToolCall },
        name: if model { "gpt-4o".into() } else { ["file_read", "shell_execute"][i % 2].into() },
        duration_ms: (i % 900) as u64,
        usage: if model {
            Usage { input_tokens: 900, output_tokens: 80 }
        } else {
            Usage::default()
        },
        cost_usd: if model { 0.002 } else { 0.0 },
        outcome: if i.is_multiple_of(17) { "failed".into() } else { "ok".into() },
        detail: json!({"tier": "read", "call_id": format!("c{i}")}),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[(((sorted.len() - 1) as f64) * p).round() as usize]
}

fn main() {
    let traces: usize =
        std::env::var("ARIA_BENCH_TRACES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let gw = common::gateway(dir.path(), "ok");
    let store = gw.store.clone();
    let new_session = |task: &str| {
        store
            .create_session(&NewSession {
                conversation_id: None,
                task: task.into(),
                provider: "bench".into(),
                model: "gpt-4o".into(),
                limits: Limits::default(),
            })
            .unwrap()
            .id
    };

    // Recording spans: one insert each, as the loop does.
    let session = new_session("spans");
    let started = Instant::now();
    let mut per_span = Vec::with_capacity(traces);
    for i in 0..traces {
        let t = Instant::now();
        store.record_trace(&span(&session, i)).unwrap();
        per_span.push(t.elapsed());
        if i % 100 == 99 && i + 1 < traces {
            // New sessions now and then, as real runs come.
            let _ = new_session("more");
        }
    }
    let total = started.elapsed();
    per_span.sort();
    println!(
        "record one span: mean {:.1} µs, p50 {:.1} µs, p95 {:.1} µs ({traces} spans in {:.2} s)",
        total.as_secs_f64() * 1e6 / traces as f64,
        percentile(&per_span, 0.5).as_secs_f64() * 1e6,
        percentile(&per_span, 0.95).as_secs_f64() * 1e6,
        total.as_secs_f64()
    );

    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let t = Instant::now();
        gw.status.catch_up(&gw);
        println!(
            "start-up catch-up over {traces} traces: {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let t = Instant::now();
        gw.status.collect(&gw).await;
        let first = t.elapsed();
        let mut collections = Vec::new();
        for _ in 0..20 {
            let t = Instant::now();
            gw.status.collect(&gw).await;
            // The collection sleeps 10 ms to measure the event loop's lag; that is not work.
            collections.push(t.elapsed().saturating_sub(Duration::from_millis(10)));
        }
        collections.sort();
        let median = percentile(&collections, 0.5);
        println!(
            "status collection: first {:.1} ms, then median {:.2} ms of work (+10 ms timer); at \
             one per 15 s that is {:.3} % of one core",
            first.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() / 15.0 * 100.0
        );

        let mut idle = Vec::new();
        let mut fresh = Vec::new();
        let mut size = 0;
        for i in 0..200 {
            let t = Instant::now();
            size = gw.status.families(&gw).to_text().len();
            idle.push(t.elapsed());
            for k in 0..10 {
                store.record_trace(&span(&session, traces + i * 10 + k)).unwrap();
            }
            let t = Instant::now();
            gw.status.families(&gw).to_text();
            fresh.push(t.elapsed());
        }
        idle.sort();
        fresh.sort();
        println!(
            "GET /metrics render ({size} bytes): nothing new p50 {:.3} ms, p95 {:.3} ms; 10 new \
             traces p50 {:.3} ms, p95 {:.3} ms",
            percentile(&idle, 0.5).as_secs_f64() * 1e3,
            percentile(&idle, 0.95).as_secs_f64() * 1e3,
            percentile(&fresh, 0.5).as_secs_f64() * 1e3,
            percentile(&fresh, 0.95).as_secs_f64() * 1e3,
        );
    });
}
