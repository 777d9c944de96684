//! Snapshot and rollback time: a 10,000-file repository with 100 changed files, and the
//! rollback of a 1,000-file change (goal: ≤ 1 s, so undoing is never something to wait for).
//!
//! `cargo bench -p aria-tools --bench snapshot` (a plain binary: `harness = false`). Figures
//! are printed, never asserted. Each figure is the median of a few rounds.

// A bench binary reports on stdout; setup failures end it with a message.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_tools::{PathGuard, SensitivePatterns, SnapshotOptions, Snapshots};
use git2::{IndexAddOption, Repository, Signature};

const FILES: usize = 10_000;
const ROUNDS: usize = 5;

fn path_of(i: usize) -> String {
    format!("src/m{:02}/d{:02}/f{i:05}.rs", i % 50, (i / 50) % 20)
}

fn body(i: usize, version: usize) -> String {
    format!("// file {i}, version {version}\n{}\n", "fn f() -> u32 { 42 }\n".repeat(20))
}

/// A repository with `FILES` committed files (about 450 bytes each).
fn repo(root: &Path) -> Repository {
    let repo = Repository::init(root).unwrap();
    for i in 0..FILES {
        let p = root.join(path_of(i));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, body(i, 0)).unwrap();
    }
    let mut index = repo.index().unwrap();
    index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("Bench", "bench@example.com").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "Initial", &tree, &[]).unwrap();
    drop(tree);
    repo
}

/// Rewrites `count` files (spread over the tree) to `version`.
fn change(root: &Path, count: usize, version: usize) {
    let step = FILES / count;
    for k in 0..count {
        let i = k * step;
        fs::write(root.join(path_of(i)), body(i, version)).unwrap();
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let setup = Instant::now();
    let _repo = repo(&root);
    println!("setup: {FILES} committed files in {}", ms(setup.elapsed()));
    let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    let snapshots = Snapshots::new(Arc::new(guard), SnapshotOptions::default());

    let (mut snap_times, mut back_times) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        // 100 changed files in the working tree, then the snapshot before the next write.
        change(&root, 100, 2 * round + 1);
        let t = Instant::now();
        let s = snapshots.snapshot(&root, "bench", "bench").unwrap();
        snap_times.push(t.elapsed());
        assert_eq!(s.files_changed.len(), 100);
        // The write changes the same 100 files again; roll it back.
        change(&root, 100, 2 * round + 2);
        let t = Instant::now();
        let done = snapshots.rollback(&s.id.0, None, None, "bench").unwrap();
        back_times.push(t.elapsed());
        assert_eq!(done.restored.len(), 100);
    }
    println!(
        "snapshot, {FILES} files with 100 changed: median {} ({ROUNDS} rounds)",
        ms(median(snap_times))
    );
    println!(
        "rollback of 100 files in a {FILES}-file repository: median {} ({ROUNDS} rounds)",
        ms(median(back_times))
    );

    let mut big = Vec::new();
    for round in 0..ROUNDS {
        let s = snapshots.snapshot(&root, "bench", "bench").unwrap();
        change(&root, 1_000, 100 + round);
        let t = Instant::now();
        let done = snapshots.rollback(&s.id.0, None, None, "bench").unwrap();
        big.push(t.elapsed());
        assert_eq!(done.restored.len(), 1_000);
    }
    println!(
        "rollback of a 1,000-file change in a {FILES}-file repository: median {} (goal ≤ 1 s)",
        ms(median(big))
    );
}
