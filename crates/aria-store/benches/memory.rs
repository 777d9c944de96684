//! Hybrid memory search latency (issue #6: p95 ≤ 20 ms at 100,000 memories on 2 cores).
//!
//! For N = 10,000 and 100,000 this builds a store file of N memories with synthetic text (12
//! words drawn from a Zipf-distributed 20,000-word vocabulary, so common words match many
//! memories as in real text) and synthetic 384-dimension vectors (the all-MiniLM-L6-v2 size),
//! then times 300 searches of 4-word queries: hybrid (BM25 top-100 + vector top-100, RRF), and
//! each retriever alone. The first search, which loads the vectors from SQLite, is reported
//! separately. Also prints the insert rate (without embedding: the store's own cost).
//!
//! `cargo bench -p aria-store --bench memory` (`ARIA_BENCH_SIZES=10000` to pick sizes).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::NoRedact;
use aria_store::{Embedding, MemoryQuery, NewMemory, SearchMode, Store, Writer};

const DIMS: usize = 384;
const VOCAB: usize = 20_000;
const MODEL: &str = "bench:synthetic-384";

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Zipf(s = 1) sampler over `VOCAB` ranks by inverse CDF on precomputed cumulative weights.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new() -> Zipf {
        let mut acc = 0.0;
        let cdf = (1..=VOCAB)
            .map(|r| {
                acc += 1.0 / r as f64;
                acc
            })
            .collect::<Vec<_>>();
        let total = acc;
        Zipf(cdf.into_iter().map(|c| c / total).collect())
    }
    fn word(&self, rng: &mut Rng) -> String {
        let u = rng.unit();
        let rank = self.0.partition_point(|&c| c < u);
        // Pronounceable, distinct, and untouched by the porter stemmer's suffix rules.
        let mut n = rank;
        let mut w = String::from("w");
        loop {
            w.push(b"bcdfghjkmnpqrstvz"[n % 17] as char);
            w.push(b"aeiou"[(n / 17) % 5] as char);
            n /= 85;
            if n == 0 {
                break;
            }
        }
        w
    }
}

fn vector(rng: &mut Rng) -> Vec<f32> {
    (0..DIMS).map(|_| rng.unit() as f32 - 0.5).collect()
}

fn build(n: usize, path: &std::path::Path) -> (Store, Duration) {
    let store = Store::open(path, Arc::new(NoRedact)).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let zipf = Zipf::new();
    let started = Instant::now();
    let batch = 2_000;
    for start in (0..n).step_by(batch) {
        let count = batch.min(n - start);
        let memories: Vec<NewMemory> = (0..count)
            .map(|_| {
                let words: Vec<String> = (0..12).map(|_| zipf.word(&mut rng)).collect();
                NewMemory::new(words.join(" "))
            })
            .collect();
        let vectors: Vec<Vec<f32>> = (0..count).map(|_| vector(&mut rng)).collect();
        store
            .memory_insert_batch(
                &memories,
                Some(MODEL),
                |i| Some(vectors[i].as_slice()),
                Writer::USER,
            )
            .unwrap();
    }
    (store, started.elapsed())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let sizes: Vec<usize> = std::env::var("ARIA_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("memory search latency: {DIMS}-dim synthetic vectors, Zipf text, {cores} core(s)");
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        let (store, took) = build(n, &dir.path().join("bench.db"));
        println!(
            "\nN = {n}: inserted in {:.1} s ({:.0} memories/s, audited, without embedding)",
            took.as_secs_f64(),
            n as f64 / took.as_secs_f64()
        );
        let mut rng = Rng(42);
        let zipf = Zipf::new();
        let queries: Vec<(String, Vec<f32>)> = (0..300)
            .map(|_| {
                let words: Vec<String> = (0..4).map(|_| zipf.word(&mut rng)).collect();
                (words.join(" "), vector(&mut rng))
            })
            .collect();
        let first = Instant::now();
        let q = &queries[0];
        store
            .memory_search(&MemoryQuery::new(
                &q.0,
                Some(Embedding { model: MODEL, vector: &q.1 }),
                10,
            ))
            .unwrap();
        println!("  first search (loads the vectors from SQLite): {}", ms(first.elapsed()));
        for (label, mode) in [
            ("hybrid", SearchMode::Hybrid),
            ("bm25 only", SearchMode::Text),
            ("vector only", SearchMode::Vector),
        ] {
            let mut times: Vec<Duration> = Vec::with_capacity(queries.len());
            let mut found = 0usize;
            for (text, v) in &queries {
                let mut query =
                    MemoryQuery::new(text, Some(Embedding { model: MODEL, vector: v }), 10);
                query.mode = mode;
                let t = Instant::now();
                found += store.memory_search(&query).unwrap().len();
                times.push(t.elapsed());
            }
            times.sort();
            println!(
                "  {label:<12} p50 {:>9}  p95 {:>9}  max {:>9}  ({} queries, {:.1} hits/query)",
                ms(percentile(&times, 0.50)),
                ms(percentile(&times, 0.95)),
                ms(*times.last().unwrap()),
                times.len(),
                found as f64 / times.len() as f64
            );
        }
    }
}
