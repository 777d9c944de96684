//! `shell_execute` end to end: parse, classify, confine (walk the root for sensitive files,
//! cached), spawn in the sandbox, collect and render. Goal: `ls` at most 10 ms p50, so the
//! sandbox adds nothing a person notices.
//!
//! `cargo bench -p aria-tools --bench shell_exec` prints the median and p90 over 200 calls each
//! for a read-tier `ls`, a two-stage pipeline, and a write-tier `touch`.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{Tool, ToolContext};
use aria_tools::{PathGuard, SensitivePatterns, ShellExecute};
use serde_json::json;

const RUNS: usize = 200;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for i in 0..50 {
        std::fs::write(root.join(format!("file{i}.txt")), "hello\n").unwrap();
    }
    std::fs::write(root.join(".env"), "KEY=value\n").unwrap();
    let guard = Arc::new(
        PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap(),
    );
    let tool = ShellExecute::new(guard);
    let ctx = ToolContext { session_id: "bench".into(), dry_run: false };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let figures = |label: &str, command: &str| {
        let call = || {
            let out = rt.block_on(tool.call(json!({ "command": command }), &ctx)).unwrap();
            assert!(out.content.starts_with("exit status: 0"), "{}", out.content);
        };
        for _ in 0..5 {
            call();
        }
        let mut samples: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                call();
                t.elapsed()
            })
            .collect();
        samples.sort();
        println!("  {label:<28} p50 {:?}, p90 {:?}", samples[RUNS / 2], samples[RUNS * 9 / 10]);
    };
    println!("shell_execute end to end, x{RUNS} each (root with 51 files):");
    figures("ls (read tier)", "ls");
    figures("grep -c | wc -l (pipeline)", "grep -c hello file1.txt | wc -l");
    figures("touch (write tier)", "touch new.txt");
}
