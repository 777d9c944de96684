//! Throughput of the shell parser and classifier over a mixed corpus of command lines.
//!
//! `cargo bench -p aria-tools --bench shell` (a plain binary: `harness = false`). The goal is
//! at least 100,000 commands per second, so judging a command never shows next to running it;
//! figures are printed, never asserted.

// A bench binary reports on stdout.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use aria_tools::shell::{classify, classify_reference, parse, parse_fast, parse_reference};

/// Reads, writes, irreversible and blocked commands, refusals and long pipelines, roughly in
/// the proportions an agent produces them (one command line per line; shared with the
/// fast-path differential test in `src/shell/fast_tests.rs`).
const CORPUS_TEXT: &str = include_str!("data/shell_corpus.txt");

fn main() {
    let corpus: Vec<&str> = CORPUS_TEXT.lines().filter(|l| !l.is_empty()).collect();
    let rounds = 4_000;
    // Warm up (thread-local parser, lookup table).
    for line in &corpus {
        black_box(classify(line));
        black_box(classify_reference(line));
    }
    let fast = corpus.iter().filter(|l| parse_fast(l).is_some()).count();

    // Ours and the tree-sitter-only reference, interleaved round by round so that load from
    // other processes hits both alike.
    let mut times = [std::time::Duration::ZERO; 4];
    let mut blocked = 0usize;
    for _ in 0..rounds {
        let start = Instant::now();
        for line in &corpus {
            black_box(parse(black_box(line)).is_ok());
        }
        times[0] += start.elapsed();
        let start = Instant::now();
        for line in &corpus {
            black_box(parse_reference(black_box(line)).is_ok());
        }
        times[1] += start.elapsed();
        let start = Instant::now();
        for line in &corpus {
            let c = classify(black_box(line));
            blocked += usize::from(c.tier == aria_api::Tier::Blocked);
        }
        times[2] += start.elapsed();
        let start = Instant::now();
        for line in &corpus {
            let c = classify_reference(black_box(line));
            blocked += usize::from(c.tier == aria_api::Tier::Blocked);
        }
        times[3] += start.elapsed();
    }
    black_box(blocked);
    let n = corpus.len() * rounds;

    // The slowest lines, to show where the time goes.
    let mut each: Vec<(f64, &str)> = corpus
        .iter()
        .map(|line| {
            let start = Instant::now();
            for _ in 0..500 {
                black_box(classify(black_box(line)));
            }
            (start.elapsed().as_secs_f64() * 1e6 / 500.0, *line)
        })
        .collect();
    each.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (us, line) in each.iter().take(6) {
        println!("  {us:>7.2} us  {line}");
    }

    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    println!(
        "shell corpus: {} command lines x {rounds} rounds = {n}; {fast} of {} take the fast path \
         (load {load})",
        corpus.len(),
        corpus.len()
    );
    let line = |name: &str, d: std::time::Duration, goal: &str| {
        println!(
            "{name:<24} {:>10.0} commands/s ({:.2} us each{goal})",
            n as f64 / d.as_secs_f64(),
            d.as_secs_f64() * 1e6 / n as f64
        );
    };
    line("parse:", times[0], "");
    line("parse (tree-sitter only):", times[1], "");
    line("classify:", times[2], "; goal >= 100,000/s");
    line("classify (tree-sitter only):", times[3], "");
}
