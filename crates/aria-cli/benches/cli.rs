//! Prints: cold start of `aria --version` and `aria tools list`, and the agent loop's own
//! overhead per iteration (wall time minus traced model and tool time) against a loopback mock
//! model server, with the real OpenAI-compatible client, SQLite store and audit chain.
//!
//! Then what choosing an agent profile adds to `aria run`: the same one-answer run
//! with no agent, a built-in one and one of 50 stored in the database, interleaved.
//!
//! Run: `cargo bench -p aria-cli --bench cli`. `ARIA_BENCH_RUNS` sets the repetitions (50).

// A bench binary: it prints its figures and may abort on a broken setup.
#![allow(clippy::print_stdout, clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{NoRedact, TraceKind};
use aria_core::{Agent, AgentConfig, ToolRegistry};
use aria_models::{OpenAiConfig, OpenAiProvider};
use aria_store::Store;
use aria_testkit::openai_mock::{MockOpenAi, MockTurn, ScriptEnd};
use tokio_util::sync::CancellationToken;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn time_command(dir: &std::path::Path, args: &[&str], runs: usize) -> Vec<Duration> {
    let exe = env!("CARGO_BIN_EXE_aria");
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let status = Command::new(exe)
            .args(args)
            .env_clear()
            .env("HOME", dir)
            .env("ARIA_HOME", dir.join("home"))
            .env("ARIA_ROOTS", dir)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("aria runs");
        times.push(start.elapsed());
        assert!(status.success(), "aria {args:?} failed");
    }
    times.sort();
    times
}

fn report(name: &str, times: &[Duration]) {
    println!(
        "{name:<28} p50 {:>7.2} ms   p95 {:>7.2} ms   min {:>7.2} ms   (n={})",
        percentile(times, 0.5).as_secs_f64() * 1e3,
        percentile(times, 0.95).as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times.len()
    );
}

fn loop_overhead(dir: &std::path::Path, runs: usize) {
    let mock = MockOpenAi::new(vec![MockTurn::tool_call("file_list", r#"{"path":"."}"#)])
        .on_script_end(ScriptEnd::Repeat)
        .serve();
    let store = Arc::new(Store::open(&dir.join("bench.db"), Arc::new(NoRedact)).expect("store"));
    let guard = Arc::new(
        aria_tools::PathGuard::new(&[dir.to_path_buf()], aria_tools::SensitivePatterns::default())
            .expect("guard"),
    );
    let registry = Arc::new(ToolRegistry::new(aria_tools::builtin_tools(guard)).expect("tools"));
    let provider = Arc::new(
        OpenAiProvider::new(OpenAiConfig { base_url: mock.base_url(), ..OpenAiConfig::default() })
            .expect("provider"),
    );
    let mut config = AgentConfig::new("mock-model", "bench");
    config.limits.max_iterations = 15;
    let agent =
        Agent::new(provider, registry, store.clone(), store.clone(), Arc::new(NoRedact), config);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    let mut per_iteration = Vec::new();
    for _ in 0..runs.min(20) {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let start = Instant::now();
        let session =
            rt.block_on(agent.run("bench", None, &tx, CancellationToken::new())).expect("run");
        let wall = start.elapsed();
        let traced: u64 = store
            .traces_for_session(&session.id)
            .expect("traces")
            .iter()
            .filter(|t| matches!(t.trace.kind, TraceKind::ModelCall | TraceKind::ToolCall))
            .map(|t| t.trace.duration_ms)
            .sum();
        let overhead = wall.saturating_sub(Duration::from_millis(traced));
        per_iteration.push(overhead / session.iterations.max(1));
    }
    per_iteration.sort();
    report("loop overhead / iteration", &per_iteration);
    println!(
        "  (upper bound: wall time minus traced model and tool time, which traces keep in whole ms;\n   includes the HTTP client, store writes and audit hashing)"
    );
}

/// A tool that does nothing, so a run's time is the loop's own.
#[derive(Debug)]
struct Noop(aria_api::ToolSpec);

impl aria_api::Tool for Noop {
    fn spec(&self) -> &aria_api::ToolSpec {
        &self.0
    }
    fn tier(&self, _args: &serde_json::Value) -> aria_api::Tier {
        aria_api::Tier::Read
    }
    fn call<'a>(
        &'a self,
        _args: serde_json::Value,
        _ctx: &'a aria_api::ToolContext,
    ) -> aria_api::ToolFuture<'a> {
        Box::pin(async { Ok(aria_api::ToolOutput::text("ok")) })
    }
}

/// The loop alone: a scripted in-process model and a no-op tool, with the real SQLite store,
/// audit chain, schema validation and redaction. Wall time / iterations.
fn loop_overhead_in_process(dir: &std::path::Path, runs: usize) {
    use aria_testkit::scripted::{End, ScriptedProvider, Turn};
    let store =
        Arc::new(Store::open(&dir.join("bench-inproc.db"), Arc::new(NoRedact)).expect("store"));
    let noop = Noop(aria_api::ToolSpec {
        name: "noop".into(),
        description: "does nothing".into(),
        parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    });
    let registry = Arc::new(ToolRegistry::new(vec![Arc::new(noop)]).expect("tools"));
    let provider = Arc::new(ScriptedProvider::new(
        vec![Turn::tool("noop", serde_json::json!({"path": "."}))],
        End::RepeatLast,
    ));
    let redactor = Arc::new(aria_tools::SecretRedactor::new(vec!["sk-bench-0123456789".into()]));
    let agent = Agent::new(
        provider,
        registry,
        store.clone(),
        store,
        redactor,
        AgentConfig::new("scripted", "bench"),
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    let mut per_iteration = Vec::new();
    for _ in 0..runs {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let start = Instant::now();
        let session =
            rt.block_on(agent.run("bench", None, &tx, CancellationToken::new())).expect("run");
        per_iteration.push(start.elapsed() / session.iterations.max(1));
    }
    per_iteration.sort();
    report("loop / iteration (in-process)", &per_iteration);
    println!("  (scripted model, no-op tool; real store, audit chain, validation, redaction)");
}

/// `aria run` of a one-answer task against a loopback mock, with and without `--agent`, the
/// variants interleaved so drift in the machine's load hits them alike.
fn agent_resolution(dir: &std::path::Path, runs: usize) {
    let mock = MockOpenAi::new(vec![MockTurn::text("ok")]).on_script_end(ScriptEnd::Repeat).serve();
    let home = dir.join("agents-home");
    let config = dir.join("agents-config/aria");
    std::fs::create_dir_all(&config).expect("config dir");
    let mut toml = String::from("[memory]\nembedder = \"none\"\nextract = false\n");
    for i in 0..10 {
        toml.push_str(&format!("\n[agents.conf{i}]\ntools = [\"read\"]\n"));
    }
    std::fs::write(config.join("aria.toml"), toml).expect("aria.toml");
    let aria = |args: &[&str]| {
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_aria"))
            .args(args)
            .env_clear()
            .env("HOME", dir)
            .env("XDG_CONFIG_HOME", dir.join("agents-config"))
            .env("ARIA_HOME", &home)
            .env("ARIA_ROOTS", dir)
            .env("OPENAI_BASE_URL", mock.base_url())
            .env("OPENAI_API_KEY", "sk-bench")
            .env("ARIA_MODEL", "mock-model")
            .output()
            .expect("aria runs");
        assert!(out.status.success(), "aria {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        start.elapsed()
    };
    for i in 0..50 {
        aria(&[
            "agents",
            "add",
            &format!("stored{i}"),
            "--tools",
            "read,files",
            "--mode",
            "supervised",
        ]);
    }
    let variants: [(&str, &[&str]); 3] = [
        ("aria run (no agent)", &["run", "--task", "hi", "--json"]),
        (
            "aria run --agent researcher",
            &["run", "--agent", "researcher", "--task", "hi", "--json"],
        ),
        ("aria run --agent stored25", &["run", "--agent", "stored25", "--task", "hi", "--json"]),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    aria(variants[0].1);
    for _ in 0..runs.min(30) {
        for (i, (_, args)) in variants.iter().enumerate() {
            times[i].push(aria(args));
        }
    }
    let base = {
        let mut t = times[0].clone();
        t.sort();
        percentile(&t, 0.5)
    };
    for ((name, _), mut t) in variants.iter().zip(times) {
        t.sort();
        report(name, &t);
        let delta = percentile(&t, 0.5).as_secs_f64() - base.as_secs_f64();
        println!("  p50 − no agent: {:+.2} ms", delta * 1e3);
    }
    println!("  (50 agents stored in the database and 10 in aria.toml; one model call each run)");
}

fn main() {
    let runs: usize =
        std::env::var("ARIA_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let dir = tempfile::tempdir().expect("tempdir");
    // Warm the page cache once.
    time_command(dir.path(), &["--version"], 3);
    report("aria --version", &time_command(dir.path(), &["--version"], runs));
    report("aria tools list", &time_command(dir.path(), &["tools", "list"], runs));
    loop_overhead_in_process(dir.path(), runs);
    loop_overhead(dir.path(), runs);
    agent_resolution(dir.path(), runs);
}
