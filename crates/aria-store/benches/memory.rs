//! Hybrid memory search latency (goal: p95 ≤ 20 ms at 100,000 memories on 2 cores, so recall
//! adds nothing noticeable to a request).
//!
//! For N = 10,000 and 100,000 this builds a store file of N memories with synthetic text (12
//! words drawn from a Zipf-distributed 20,000-word vocabulary, so common words match many
//! memories as in real text) and synthetic 384-dimension vectors (the all-MiniLM-L6-v2 size),
//! then opens it twice, once per place the exact vectors can live (`Residence::Sqlite`,
//! `Residence::Ram`), and prints:
//! - the first search of each, which loads the vectors from SQLite, and the RSS after it;
//! - 300 searches of 4-word queries: hybrid (BM25 top-100 + vector top-100, fused), hybrid with
//!   a kind filter, and each retriever alone, on both handles, interleaved query by query,
//!   p50/p95/max; then the same for 300 queries made only of the 30 most common words;
//! - recall@10 of the vector search against an exact `f32` scan done here, over 100 queries.
//!
//! Also prints the insert rate (with vectors, without computing embeddings: the store's own
//! cost) and the machine's load average, since the figures are only comparable at equal load.
//!
//! `cargo bench -p aria-store --bench memory` (`ARIA_BENCH_SIZES=10000` to pick sizes).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::NoRedact;
use aria_store::{
    Embedding, MemoryFilter, MemoryKind, MemoryQuery, NewMemory, Residence, SearchMode, Store,
    Writer,
};

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
        word_of(self.0.partition_point(|&c| c < u))
    }
}

/// The word of a frequency rank (0 = the most common).
fn word_of(rank: usize) -> String {
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

fn vector(rng: &mut Rng) -> Vec<f32> {
    (0..DIMS).map(|_| rng.unit() as f32 - 0.5).collect()
}

/// The seed of the vector stream, separate from the text's so the vectors can be generated
/// again for the exact reference without keeping 154 MB of them during the timings.
const VECTOR_SEED: u64 = 0x2545_f491_4f6c_dd1d;

fn build(n: usize, path: &std::path::Path) -> (Store, Duration) {
    let store = Store::open(path, Arc::new(NoRedact)).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut vectors_rng = Rng(VECTOR_SEED);
    let zipf = Zipf::new();
    let started = Instant::now();
    let batch = 2_000;
    for start in (0..n).step_by(batch) {
        let count = batch.min(n - start);
        let memories: Vec<NewMemory> = (0..count)
            .map(|i| {
                let words: Vec<String> = (0..12).map(|_| zipf.word(&mut rng)).collect();
                let mut m = NewMemory::new(words.join(" "));
                m.id = Some(format!("m{}", start + i));
                m
            })
            .collect();
        let vectors: Vec<Vec<f32>> = (0..count).map(|_| vector(&mut vectors_rng)).collect();
        store
            .memory_insert_batch(
                &memories,
                Some(MODEL),
                |i| Some(std::slice::from_ref(&vectors[i])),
                Writer::USER,
            )
            .unwrap();
    }
    (store, started.elapsed())
}

/// The stored vectors again, normalised, as one row-major matrix.
fn unit_vectors(n: usize) -> Vec<f32> {
    let mut rng = Rng(VECTOR_SEED);
    let mut all = Vec::with_capacity(n * DIMS);
    for _ in 0..n {
        let v = vector(&mut rng);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        all.extend(v.iter().map(|x| x / norm));
    }
    all
}

/// The exact top 10 by a plain `f32` scan, as memory ids.
fn exact_top10(all: &[f32], query: &[f32]) -> Vec<String> {
    let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
    let q: Vec<f32> = query.iter().map(|x| x / norm).collect();
    let mut scored: Vec<(f32, usize)> = all
        .chunks_exact(DIMS)
        .enumerate()
        .map(|(i, row)| (row.iter().zip(&q).map(|(a, b)| a * b).sum::<f32>(), i))
        .collect();
    scored.select_nth_unstable_by(9, |a, b| b.0.total_cmp(&a.0));
    scored.truncate(10);
    scored.into_iter().map(|(_, i)| format!("m{i}")).collect()
}

/// VmRSS and VmHWM of this process, in MB.
fn rss_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
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
            "\nN = {n}: inserted in {:.1} s ({:.0} memories/s with their vectors, audited, \
             embedding not included); load average {}",
            took.as_secs_f64(),
            n as f64 / took.as_secs_f64(),
            load_average()
        );
        let mut rng = Rng(42);
        let zipf = Zipf::new();
        let queries: Vec<(String, Vec<f32>)> = (0..300)
            .map(|_| {
                let words: Vec<String> = (0..4).map(|_| zipf.word(&mut rng)).collect();
                (words.join(" "), vector(&mut rng))
            })
            .collect();
        // Four of the 30 most frequent words: each matches thousands of memories.
        let common: Vec<(String, Vec<f32>)> = (0..300)
            .map(|_| {
                let words: Vec<String> =
                    (0..4).map(|_| word_of((rng.next() % 30) as usize)).collect();
                (words.join(" "), vector(&mut rng))
            })
            .collect();
        // Two handles on the file, one per residence, so the two are timed side by side.
        let ram = Store::open(&dir.path().join("bench.db"), Arc::new(NoRedact)).unwrap();
        store.set_memory_vector_residence(Residence::Sqlite);
        ram.set_memory_vector_residence(Residence::Ram);
        let stores = [(Residence::Sqlite, &store), (Residence::Ram, &ram)];
        for (residence, store) in stores {
            let (rss_before, _) = rss_mb();
            let first = Instant::now();
            let q = &queries[0];
            store
                .memory_search(&MemoryQuery::new(
                    &q.0,
                    Some(Embedding { model: MODEL, vector: &q.1 }),
                    10,
                ))
                .unwrap();
            let load = first.elapsed();
            let (rss, hwm) = rss_mb();
            println!(
                "  exact vectors in {residence:?}: first search (loads the vectors) {}; \
                 VmRSS {rss:.0} MB (+{:.0} MB), VmHWM {hwm:.0} MB; load average {}",
                ms(load),
                rss - rss_before,
                load_average()
            );
        }
        time_modes(&stores, &queries, "");
        time_modes(&stores, &common, ", common words");
        // The exact reference, computed after the RSS readings (it holds every vector).
        let all = unit_vectors(n);
        let references: Vec<Vec<String>> =
            queries.iter().take(100).map(|(_, v)| exact_top10(&all, v)).collect();
        drop(all);
        for (residence, store) in stores {
            let mut matched = 0usize;
            for ((_, v), exact) in queries.iter().zip(&references) {
                let mut query =
                    MemoryQuery::new("", Some(Embedding { model: MODEL, vector: v }), 10);
                query.mode = SearchMode::Vector;
                let hits = store.memory_search(&query).unwrap();
                matched += hits.iter().filter(|h| exact.contains(&h.memory.id)).count();
            }
            println!(
                "  recall@10 of the vector search ({residence:?}) vs an exact f32 scan: {:.4} \
                 ({} queries)",
                matched as f64 / (10 * references.len()) as f64,
                references.len()
            );
        }
        drop((store, ram));
        compare_layouts(&dir.path().join("bench.db"));
    }
}

/// Reads every vector (the load's SQL) from the rowid table of schema 5 and from a copy in the
/// `WITHOUT ROWID` layout of schema 4, alternately, each timed three times on a new connection.
/// The copy is written in one go, so its pages are contiguous: this is the layout's best case.
/// The schema-4 table as this bench's inserts build it (pages interleaved with the memories,
/// the full-text index and the audit log) read in 2.5–3.2 s at 100,000 (measured with the
/// schema-4 build), which is what the first search used to cost.
fn compare_layouts(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE old_embeddings (rid INTEGER NOT NULL, model TEXT NOT NULL, \
         dims INTEGER NOT NULL, vector BLOB NOT NULL, created_at TEXT NOT NULL, \
         PRIMARY KEY (rid, model)) STRICT, WITHOUT ROWID; \
         INSERT INTO old_embeddings SELECT rid, model, dims, vector, created_at \
         FROM memory_embeddings ORDER BY rid, model;",
    )
    .unwrap();
    drop(conn);
    let read_all = |table: &str, order: &str| {
        let conn = rusqlite::Connection::open(path).unwrap();
        let started = Instant::now();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT e.rid, e.dims, e.vector, m.status, m.kind, m.categories \
                 FROM {table} e NOT INDEXED JOIN memories m ON m.rid = e.rid \
                 WHERE e.model = ?1 AND m.status <> 'deleted' {order}"
            ))
            .unwrap();
        let mut rows = stmt.query([MODEL]).unwrap();
        let mut bytes = 0usize;
        while let Some(row) = rows.next().unwrap() {
            bytes += row.get_ref(2).unwrap().as_blob().unwrap().len();
        }
        (started.elapsed(), bytes)
    };
    let mut new = Vec::new();
    let mut old = Vec::new();
    let mut old_ordered = Vec::new();
    for _ in 0..3 {
        new.push(read_all("memory_embeddings", ""));
        old.push(read_all("old_embeddings", ""));
        old_ordered.push(read_all("old_embeddings", "ORDER BY e.rid"));
    }
    let best = |v: &[(Duration, usize)]| v.iter().map(|x| x.0).min().unwrap();
    assert_eq!(new[0].1, old[0].1);
    println!(
        "  reading every vector ({} MB): rowid table (schema 5) {}, fresh contiguous copy in the \
         WITHOUT ROWID layout (schema 4) {}, the same with the old load's ORDER BY rid {} \
         (best of 3 each, alternating)",
        new[0].1 / 1_000_000,
        ms(best(&new)),
        ms(best(&old)),
        ms(best(&old_ordered))
    );
}

/// Times every query in each mode and residence, interleaved query by query (so changes of
/// the machine's load hit them alike), and prints p50/p95/max of each.
fn time_modes(stores: &[(Residence, &Store)], queries: &[(String, Vec<f32>)], label: &str) {
    let filtered = MemoryFilter {
        kinds: vec![MemoryKind::Fact, MemoryKind::Preference],
        ..MemoryFilter::default()
    };
    let modes: [(&str, SearchMode, Option<&MemoryFilter>); 4] = [
        ("hybrid", SearchMode::Hybrid, None),
        ("hybrid+kinds", SearchMode::Hybrid, Some(&filtered)),
        ("bm25 only", SearchMode::Text, None),
        ("vector only", SearchMode::Vector, None),
    ];
    let runs: Vec<(usize, usize)> =
        (0..stores.len()).flat_map(|s| (0..modes.len()).map(move |m| (s, m))).collect();
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(queries.len()); runs.len()];
    let mut found = vec![0usize; runs.len()];
    for (i, (text, v)) in queries.iter().enumerate() {
        for j in 0..runs.len() {
            let at = (i + j) % runs.len();
            let (s, m) = runs[at];
            let (_, mode, filter) = modes[m];
            let mut query = MemoryQuery::new(text, Some(Embedding { model: MODEL, vector: v }), 10);
            query.mode = mode;
            if let Some(f) = filter {
                query.filter = f.clone();
            }
            let t = Instant::now();
            found[at] += stores[s].1.memory_search(&query).unwrap().len();
            times[at].push(t.elapsed());
        }
    }
    for (at, &(s, m)) in runs.iter().enumerate() {
        if stores[s].0 == Residence::Sqlite && modes[m].1 == SearchMode::Text {
            continue; // The same as with the other residence: BM25 reads no vectors.
        }
        let times = &mut times[at];
        times.sort();
        println!(
            "    {:<38} p50 {:>9}  p95 {:>9}  max {:>9}  ({} queries, {:.1} hits/query)",
            format!("{}{label} ({:?})", modes[m].0, stores[s].0),
            ms(percentile(times, 0.50)),
            ms(percentile(times, 0.95)),
            ms(*times.last().unwrap()),
            times.len(),
            found[at] as f64 / times.len() as f64
        );
    }
}
