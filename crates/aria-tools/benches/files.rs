//! Speed of the file tools through the `aria_api::Tool` contract, as the agent loop calls them:
//! `file_read` of a 1 MB file (goal: ≤ 5 ms, so reading is never what a turn waits for),
//! `file_write` of the same, and
//! `apply_patch` of a 100-hunk patch (parse, guard, read, apply, atomic write) and its parts.
//!
//! `cargo bench -p aria-tools --bench files` (a plain binary: `harness = false`). Figures are
//! printed, never asserted (CONVENTIONS.md, "Tests").

// A bench binary reports on stdout; unwrap is fine for its own setup.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{Tool, ToolContext};
use aria_tools::patch::{apply_file, parse, unified_diff};
use aria_tools::{ApplyPatch, FileRead, FileWrite, PathGuard, SensitivePatterns};
use serde_json::json;

/// Median, 95th percentile and mean of `rounds` timed runs of `f`.
fn measure<F: FnMut()>(rounds: usize, mut f: F) -> (Duration, Duration, Duration) {
    f(); // warm the page cache and the allocator
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    let mean = times.iter().sum::<Duration>() / rounds as u32;
    (times[rounds / 2], times[rounds * 95 / 100], mean)
}

fn report(what: &str, (median, p95, mean): (Duration, Duration, Duration)) {
    println!(
        "{what}: median {:.3} ms, p95 {:.3} ms, mean {:.3} ms",
        median.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3,
        mean.as_secs_f64() * 1e3
    );
}

/// About `bytes` of source-like text, one numbered line at a time.
fn text(bytes: usize, tag: &str) -> String {
    let mut s = String::with_capacity(bytes + 80);
    let mut n = 0;
    while s.len() < bytes {
        s.push_str(&format!(
            "    let value_{n} = compute({n}, \"{tag}\"); // line {n} of the file\n"
        ));
        n += 1;
    }
    s
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let guard = Arc::new(
        PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let ctx = ToolContext::default();

    let mb = text(1024 * 1024, "read");
    fs::write(root.join("big.rs"), &mb).unwrap();
    let read = FileRead::new(Arc::clone(&guard));
    let args = json!({"path": "big.rs"});
    let t = measure(200, || {
        let out = rt.block_on(read.call(args.clone(), &ctx)).unwrap();
        black_box(out.content.len());
    });
    report(&format!("file_read of a {} byte file through FileRead (goal <= 5 ms)", mb.len()), t);
    let resolved = guard.resolve_existing("big.rs").unwrap();
    let t = measure(200, || {
        black_box(guard.read_text(&resolved, 10 << 20).unwrap().len());
    });
    report("  of which PathGuard::read_text alone (no tool, no runtime)", t);

    let write = FileWrite::new(Arc::clone(&guard));
    let versions = [text(1024 * 1024, "one"), text(1024 * 1024, "two")];
    let mut i = 0;
    let t = measure(50, || {
        i += 1;
        let args = json!({"path": "written.rs", "content": versions[i % 2]});
        black_box(rt.block_on(write.call(args, &ctx)).unwrap());
    });
    report("file_write of 1 MB replacing 1 MB (diff counts, temp file, fsync, rename)", t);

    // 5,000 lines; every 50th changed: a diff with 100 hunks, applied forwards and back.
    let old: String = (0..5000).map(|n| format!("line {n}: some code here\n")).collect();
    let new: String = (0..5000)
        .map(|n| {
            if n % 50 == 25 {
                format!("line {n}: CHANGED\n")
            } else {
                format!("line {n}: some code here\n")
            }
        })
        .collect();
    let forward = unified_diff(Some(&old), Some(&new), "patched.txt");
    let back = unified_diff(Some(&new), Some(&old), "patched.txt");
    let hunks = parse(&forward).unwrap().files[0].hunks.len();
    fs::write(root.join("patched.txt"), &old).unwrap();
    let patch = ApplyPatch::new(Arc::clone(&guard));
    let mut flip = false;
    let t = measure(100, || {
        flip = !flip;
        let p = if flip { &forward } else { &back };
        black_box(rt.block_on(patch.call(json!({ "patch": p }), &ctx)).unwrap());
    });
    report(
        &format!(
            "apply_patch of a {hunks}-hunk patch ({} bytes) to a 5,000-line file",
            forward.len()
        ),
        t,
    );
    let dry = ToolContext { dry_run: true, ..ToolContext::default() };
    let current = fs::read_to_string(root.join("patched.txt")).unwrap();
    let p = if current == old { &forward } else { &back };
    let t = measure(100, || {
        black_box(rt.block_on(patch.call(json!({ "patch": p }), &dry)).unwrap());
    });
    report("  the same as a dry run (no write)", t);
    let t = measure(200, || {
        black_box(parse(black_box(&forward)).unwrap());
    });
    report("  parse alone", t);
    let parsed = parse(&forward).unwrap();
    let t = measure(200, || {
        black_box(apply_file(black_box(&old), &parsed.files[0]).unwrap());
    });
    report("  apply_file alone (in memory)", t);
}
