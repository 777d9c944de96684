//! `git_status` on a 100,000-file repository against `git status` (goal: under 500 ms for
//! repositories up to 100K files, so a status never stalls a conversation).
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
use git2::{IndexAddOption, Repository, Signature, StatusOptions, StatusShow};

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

    breakdown(&root.join("big"));

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
        touched(&rt, &tool, &root.join("big"), files);
    } else {
        println!("  git status: skipped, the git program is not installed");
    }
}

/// Every file's mtime moved, no content changed (a `touch`, a tool that rewrites identical
/// files): the index's stat cache no longer matches, so both sides must read and hash every
/// file once. `git status` then writes the refreshed stat data into the index; `git_status`
/// into its private copy (`tools/git_status/stat_cache.rs`), never the user's index. The plain
/// libgit2 status (the tool before the cache) is measured first, as it pays on every call.
fn touched(rt: &tokio::runtime::Runtime, tool: &GitStatus, dir: &Path, files: usize) {
    let later = std::time::SystemTime::now() + Duration::from_secs(5);
    for i in 0..files {
        let p = dir.join(format!("d{:03}/f{i:06}.txt", i % 1000));
        fs::File::options().write(true).open(&p).unwrap().set_modified(later).unwrap();
    }
    let ctx = ToolContext::default();
    let mut plain = Vec::new();
    for _ in 0..2 {
        let repo = Repository::open(dir).unwrap();
        let mut o = StatusOptions::new();
        o.include_untracked(true).recurse_untracked_dirs(false).exclude_submodules(true);
        let start = Instant::now();
        repo.statuses(Some(&mut o)).unwrap();
        plain.push(start.elapsed());
    }
    let mut ours = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        rt.block_on(tool.call(serde_json::json!({"path": "big"}), &ctx)).unwrap();
        ours.push(start.elapsed());
    }
    let mut theirs = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let out = Command::new("git")
            .args(["status", "--porcelain=v1"])
            .current_dir(dir)
            .output()
            .unwrap();
        theirs.push(start.elapsed());
        assert!(out.status.success());
    }
    let show = |t: &[Duration]| t.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", ");
    println!("  after touching every file (mtime only), runs in order:");
    println!("    libgit2 status, user's index (before): {}", show(&plain));
    println!("    git_status (git2, private stat cache): {}", show(&ours));
    println!("    git status --porcelain:                {} (rewrites the index)", show(&theirs));
}

/// Where the time goes: libgit2's status with the tool's options against the user's index
/// (what `git_status` did before its private stat cache), each half of it, and variants, measured interleaved (one round of every variant, then the next round) so a load
/// change on a shared machine hits them alike.
fn breakdown(dir: &Path) {
    let base = || {
        let mut o = StatusOptions::new();
        o.include_untracked(true)
            .recurse_untracked_dirs(false)
            .include_ignored(false)
            .exclude_submodules(true);
        o
    };
    type Variant = (&'static str, Box<dyn Fn() -> usize>);
    let status = move |tweak: fn(&mut StatusOptions)| {
        let dir = dir.to_path_buf();
        move || {
            let repo = Repository::open(&dir).unwrap();
            let mut o = base();
            tweak(&mut o);
            repo.statuses(Some(&mut o)).unwrap().len()
        }
    };
    let variants: Vec<Variant> = vec![
        ("the user's index as is (before)", Box::new(status(|_| {}))),
        (
            "  HEAD↔index only",
            Box::new(status(|o| {
                o.show(StatusShow::Index);
            })),
        ),
        (
            "  index↔working tree only",
            Box::new(status(|o| {
                o.show(StatusShow::Workdir);
            })),
        ),
        (
            "  without untracked files",
            Box::new(status(|o| {
                o.include_untracked(false);
            })),
        ),
        (
            "  no index reload (no_refresh)",
            Box::new(status(|o| {
                o.no_refresh(true);
            })),
        ),
    ];
    let mut times: Vec<Vec<Duration>> = variants.iter().map(|_| Vec::new()).collect();
    let mut counts = vec![0; variants.len()];
    for _ in 0..RUNS {
        for (i, (_, run)) in variants.iter().enumerate() {
            let start = Instant::now();
            counts[i] = run();
            times[i].push(start.elapsed());
        }
    }
    println!("  breakdown (libgit2 statuses, interleaved):");
    for ((name, _), (t, n)) in variants.iter().zip(times.into_iter().zip(counts)) {
        let (median, best) = stats(t);
        println!("    {name:<34} median {} best {} ({n} entries)", ms(median), ms(best));
    }
}
