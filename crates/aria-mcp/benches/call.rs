//! The cost of calling an MCP tool through ARIA (prints figures, asserts nothing): a warm stdio
//! server (the test server of `tests/fake_server.py`) answering `echo` at once, called through
//! [`aria_mcp::Server::call`] (rmcp, the sandboxed process, JSON handling), next to the same
//! server answering the same JSON-RPC request written straight to its pipe: the difference is
//! ARIA's overhead over the server's own time.
//!
//! `cargo bench -p aria-mcp --bench call` (`ARIA_BENCH_RUNS=N`, default 500).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::Tier;
use aria_mcp::{Server, ServerConfig};
use aria_tools::{PathGuard, SensitivePatterns};
use serde_json::json;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[(((sorted.len() - 1) as f64) * p).round() as usize]
}

fn main() {
    let runs: usize =
        std::env::var("ARIA_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py");

    // The server alone: JSON-RPC lines on its pipes, no SDK, no sandbox.
    let mut child = Command::new("python3")
        .args(["-u", script.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut ask = |request: serde_json::Value| {
        writeln!(stdin, "{request}").unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
    };
    ask(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}),
    );
    let mut raw = Vec::with_capacity(runs);
    for i in 0..runs {
        let t = Instant::now();
        ask(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}),
        );
        raw.push(t.elapsed());
    }
    let _ = child.kill();
    let _ = child.wait();
    raw.sort();

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let guard = Arc::new(
        PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap(),
    );
    let config = ServerConfig {
        url: None,
        headers: Vec::new(),
        name: "bench".into(),
        command: "python3".into(),
        args: vec!["-u".into(), script.display().to_string()],
        env: vec![],
        timeout: Duration::from_secs(30),
        tools: None,
        tier: Tier::Read,
        tool_tiers: BTreeMap::new(),
        read_paths: vec![script.parent().unwrap().to_path_buf()],
        network: false,
        network_hosts: None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut through = Vec::with_capacity(runs);
    let start = rt.block_on(async {
        let server = Server::new(config, guard);
        let t = Instant::now();
        server.list_tools().await.unwrap();
        let start = t.elapsed();
        for _ in 0..runs {
            let t = Instant::now();
            server.call("echo", json!({"text": "hi"})).await.unwrap();
            through.push(t.elapsed());
        }
        server.stop().await;
        start
    });
    through.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("start in the sandbox + handshake + tools/list: {:.1} ms", ms(start));
    println!(
        "echo, server alone: p50 {:.3} ms, p95 {:.3} ms; through aria-mcp: p50 {:.3} ms, p95 {:.3} ms; overhead p50 {:.3} ms ({runs} calls)",
        ms(percentile(&raw, 0.5)),
        ms(percentile(&raw, 0.95)),
        ms(percentile(&through, 0.5)),
        ms(percentile(&through, 0.95)),
        ms(percentile(&through, 0.5).saturating_sub(percentile(&raw, 0.5)))
    );
}
