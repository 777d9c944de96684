//! `git_status` on a 100,000-file repository against `git status` (seed 004 NFR-002: under
//! 500 ms for repositories up to 100K files).
//!
//! `cargo bench -p aria-tools --bench git` (a plain binary: `harness = false`). Builds the
//! repository once in a temporary directory (100,000 committed files in 1,000 directories, then
//! 20 modified, 5 staged, 10 untracked), runs each side a few times warm, and prints the
//! median and the best. `ARIA_BENCH_GIT_FILES` changes the file count. Figures are printed,
//! never asserted (CONVENTIONS.md, "Tests").

// A bench binary reports on stdout; unwrap is fine for its own setup.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{Tool, ToolContext};
use aria_tools::{GitStatus, PathGuard, SensitivePatterns};
use git2::{IndexAddOption, Repository, Signature};

const RUNS: usize = 7;

fn build(root: &Path, files: usize) -> Duration {
    let start = Instant::now();
    let dir = root.join("big");
    let repo = Repository::init(&dir).unwrap();
    for i in 0..files {
        let sub = dir.join(format!("d{:03}", i % 1000));
        if i < 1000 {
            fs::create_dir_all(&sub).unwrap();
        }
        fs::write(sub.join(format!("f{i:06}.txt")), format!("file {i}\n")).unwrap();
    }
    let mut index = repo.index().unwrap();
    index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("Bench", "bench@example.invalid").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "Chore: many files", &tree, &[]).unwrap();
    for i in 0..20 {
        fs::write(dir.join(format!("d{:03}/f{i:06}.txt", i % 1000)), "modified\n").unwrap();
    }
    for i in 20..25 {
        let rel = format!("d{:03}/f{i:06}.txt", i % 1000);
        fs::write(dir.join(&rel), "staged\n").unwrap();
        index.add_path(Path::new(&rel)).unwrap();
    }
    index.write().unwrap();
    for i in 0..10 {
        fs::write(dir.join(format!("new{i}.txt")), "untracked\n").unwrap();
    }
    start.elapsed()
}

fn stats(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[0])
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let files: usize =
        std::env::var("ARIA_BENCH_GIT_FILES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let setup = build(&root, files);
    println!("git bench: {files} committed files, 20 modified, 5 staged, 10 untracked");
    println!("  setup (write, add, commit): {}", ms(setup));

    let guard = Arc::new(
        PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap(),
    );
    let tool = GitStatus::new(guard);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let ctx = ToolContext::default();
    let mut ours = Vec::new();
    let mut shown = String::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let out = rt.block_on(tool.call(serde_json::json!({"path": "big"}), &ctx)).unwrap();
        ours.push(start.elapsed());
        shown = out.content;
    }
    assert!(shown.contains("not staged (20)"), "unexpected status: {shown}");
    let (median, best) = stats(ours);
    let verdict = if median < Duration::from_millis(500) { "meets" } else { "MISSES" };
    println!(
        "  git_status (git2):     median {} best {} — {verdict} NFR-002 (< 500 ms)",
        ms(median),
        ms(best)
    );

    let git = Command::new("git").arg("--version").output();
    if git.map(|o| o.status.success()).unwrap_or(false) {
        let mut theirs = Vec::new();
        for _ in 0..RUNS {
            let start = Instant::now();
            let out = Command::new("git")
                .args(["status", "--porcelain=v1"])
                .current_dir(root.join("big"))
                .output()
                .unwrap();
            theirs.push(start.elapsed());
            assert!(out.status.success());
        }
        let (median_git, best_git) = stats(theirs);
        println!("  git status --porcelain: median {} best {}", ms(median_git), ms(best_git));
        println!(
            "  ratio git_status / git status (median): {:.2}",
            median.as_secs_f64() / median_git.as_secs_f64()
        );
    } else {
        println!("  git status: skipped, the git program is not installed");
    }
}
