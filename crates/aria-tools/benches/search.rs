//! `file_search` against `rg` on the same 100,000-file tree (goal: ≤ 1.2× rg, the tool a user
//! would otherwise run).
//!
//! `cargo bench -p aria-tools --bench search` (a plain binary: `harness = false`). Figures are
//! printed, never asserted (CONVENTIONS.md, "Tests").
//!
//! Like for like: the same tree (deterministic text, a `.gitignore` that hides a tenth of it),
//! the same pattern, the same thread count (`rg -j N`, `FileSearch::with_threads(N)`), the same
//! ignore rules (`rg --no-require-git --no-ignore-parent --no-ignore-global`: file_search honours
//! ignore files without a git repository and reads none outside its root), and output going to
//! a sink (rg's stdout is a pipe this program drains, not /dev/null, which rg 13+ treats as "stop
//! at the first match"). Each figure is the median of several runs after one warm-up run each.
//!
//! `rg` is taken from `$RG`, else from `PATH`; without it, file_search is still timed and a note
//! says how to install rg (`apt-get install ripgrep` or `cargo install ripgrep --locked`).

// A bench binary reports on stdout; unwrap is fine for its own setup.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{Tool, ToolContext};
use aria_tools::{FileSearch, PathGuard, SensitivePatterns};
use serde_json::json;

const FILES: usize = 100_000;
const PER_DIR: usize = 100;
const RUNS: usize = 7;

/// Deterministic pseudo-random numbers (a 64-bit LCG), so every run builds the same tree.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

const WORDS: &[&str] = &[
    "let", "value", "config", "return", "match", "self", "result", "error", "buffer", "index",
    "parse", "token", "stream", "handle", "request", "response", "client", "server", "path",
    "string", "number", "vector", "option", "some", "none", "async", "await", "impl", "struct",
    "fn", "pub", "use", "mod", "trait", "where", "loop", "break", "continue", "write", "read",
];

/// One file's text: ~25 lines of code-like words; every 97th file has a `needle_` call, every
/// 1009th a second one further down.
fn file_text(rng: &mut Lcg, n: usize) -> String {
    let mut text = String::with_capacity(1200);
    let lines = 18 + (rng.next() % 15) as usize;
    for l in 0..lines {
        let words = 3 + (rng.next() % 8) as usize;
        for w in 0..words {
            if w > 0 {
                text.push(' ');
            }
            text.push_str(WORDS[(rng.next() as usize) % WORDS.len()]);
        }
        if (n.is_multiple_of(97) && l == 3) || (n.is_multiple_of(1009) && l == lines - 2) {
            text.push_str(&format!(" needle_call({n});"));
        }
        text.push('\n');
    }
    text
}

/// 100,000 files in 1,000 directories of 100: a tenth under `generated/` (ignored by the root
/// `.gitignore`), and every 50th file a `.log` (ignored too).
fn build_tree(root: &Path) -> (usize, usize) {
    let mut rng = Lcg(0x5eed);
    fs::write(root.join(".gitignore"), "generated/\n*.log\n").unwrap();
    let mut bytes = 0;
    for n in 0..FILES {
        let dir_no = n / PER_DIR;
        let dir = if dir_no % 10 == 9 {
            root.join(format!("generated/g{:03}", dir_no / 10))
        } else {
            root.join(format!("src/m{:02}/d{dir_no:04}", dir_no / 40))
        };
        if n.is_multiple_of(PER_DIR) {
            fs::create_dir_all(&dir).unwrap();
        }
        let ext = if n % 50 == 7 { "log" } else { "rs" };
        let text = file_text(&mut rng, n);
        bytes += text.len();
        fs::write(dir.join(format!("f{n:06}.{ext}")), text).unwrap();
    }
    (FILES, bytes)
}

/// CPU seconds (user + system) of this process and of its waited-for children, from
/// `/proc/self/stat` (fields 14-17, in clock ticks of 1/100 s on Linux).
fn cpu_seconds() -> (f64, f64) {
    let stat = fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name (field 2) may contain spaces; fields after it start past the ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    let at = |i: usize| f.get(i - 3).copied().unwrap_or(0.0) / 100.0;
    (at(14) + at(15), at(16) + at(17))
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn find_rg() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RG") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("rg")).find(|p| p.is_file())
}

/// One rg run with its stdout drained into a sink; returns the time and the matching lines.
fn run_rg(rg: &Path, threads: usize, pattern: &str, root: &Path) -> (Duration, usize) {
    let start = Instant::now();
    let mut child = Command::new(rg)
        .args(["-j", &threads.to_string()])
        .args(["--no-require-git", "--no-ignore-parent", "--no-ignore-global", "--no-config"])
        .args(["-n", "--no-heading", "--color", "never", "-e", pattern])
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("rg starts");
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    child.wait().unwrap();
    let elapsed = start.elapsed();
    (elapsed, out.iter().filter(|b| **b == b'\n').count())
}

fn run_ours(
    rt: &tokio::runtime::Runtime,
    tool: &FileSearch,
    pattern: &str,
) -> (Duration, u64, usize) {
    let start = Instant::now();
    let out = rt
        .block_on(tool.call(json!({"pattern": pattern}), &ToolContext::default()))
        .expect("file_search succeeds");
    let elapsed = start.elapsed();
    let lines = out.details["matched_lines"].as_u64().unwrap();
    (elapsed, lines, out.content.len())
}

fn main() {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("tree");
    fs::create_dir_all(&root).unwrap();
    let t = Instant::now();
    let (files, bytes) = build_tree(&root);
    println!(
        "search: built {files} files ({:.1} MB, a tenth ignored by .gitignore) in {:.1?}",
        bytes as f64 / 1e6,
        t.elapsed()
    );

    let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    let tool = FileSearch::new(Arc::new(guard)).with_threads(threads);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
    let rg = find_rg();
    match &rg {
        Some(rg) => {
            let version = Command::new(rg).arg("--version").output().ok();
            let version = version
                .map(|o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").to_owned())
                .unwrap_or_default();
            println!("search: comparing with {} ({version}), {threads} threads each", rg.display());
        }
        None => println!(
            "search: NOTE rg not found (set RG=/path/to/rg, or install it: apt-get install \
             ripgrep, or cargo install ripgrep --locked); timing file_search alone"
        ),
    }

    for pattern in ["needle_call", r"needle_\w+\(\d+\)", "fn[ ]+impl"] {
        // Warm-up (page cache, allocator) for both, not counted.
        let (_, our_lines, out_len) = run_ours(&rt, &tool, pattern);
        let rg_lines = rg.as_ref().map(|rg| run_rg(rg, threads, pattern, &root).1);
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let (mut our_cpu, mut their_cpu) = (0.0, 0.0);
        for _ in 0..RUNS {
            let (me, _) = cpu_seconds();
            ours.push(run_ours(&rt, &tool, pattern).0);
            let (me2, children) = cpu_seconds();
            our_cpu += me2 - me;
            if let Some(rg) = &rg {
                theirs.push(run_rg(rg, threads, pattern, &root).0);
                their_cpu += cpu_seconds().1 - children;
            }
        }
        let ours = median(ours);
        print!(
            "search: /{pattern}/: file_search {:.1} ms median of {RUNS}, {:.2} s CPU per run \
             ({our_lines} matching lines, {out_len} bytes returned)",
            ours.as_secs_f64() * 1e3,
            our_cpu / RUNS as f64
        );
        match rg_lines {
            Some(rg_lines) => {
                let theirs = median(theirs);
                println!(
                    "; rg {:.1} ms, {:.2} s CPU ({rg_lines} lines); ratio {:.2}x (goal <= 1.2x){}",
                    theirs.as_secs_f64() * 1e3,
                    their_cpu / RUNS as f64,
                    ours.as_secs_f64() / theirs.as_secs_f64(),
                    if rg_lines as u64 == our_lines { "" } else { " MISMATCH in line counts" }
                );
            }
            None => println!(),
        }
    }
}
