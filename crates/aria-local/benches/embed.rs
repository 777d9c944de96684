//! Embedding throughput of the embedded sentence embedder on documents of about 200 words (what
//! `aria memories import` and `reindex` do), for several batch sizes and worker counts, the
//! default plan marked. Prints figures; asserts nothing.
//!
//! Then one short query at a time (what a memory search embeds), p50/p95 milliseconds.
//!
//! `ARIA_BENCH_DOCS=N` documents (default 256); `ARIA_BENCH_CORPUS=FILE.jsonl` takes the texts
//! from a BEIR corpus (`title` + `text`) instead of the built-in generated ones;
//! `ARIA_BENCH_MODELS_DIR` as in the `local` bench.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)] // a bench binary reports on stdout

use std::path::{Path, PathBuf};
use std::time::Instant;

use aria_local::{EmbedPlan, LocalEmbedder, ModelCatalog, PullOptions};

fn models_dir() -> PathBuf {
    let dir = ["ARIA_BENCH_MODELS_DIR", "ARIA_TEST_MODELS_DIR"]
        .iter()
        .find_map(std::env::var_os)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp/aria-models")
        });
    let catalog = ModelCatalog::builtin();
    let entry = catalog.get(aria_local::DEFAULT_EMBEDDING_MODEL).expect("the default embedder");
    aria_local::pull(entry, &dir, &PullOptions::default(), &mut |_| {}).expect("pull the model");
    dir
}

/// Prose-like documents of 150–250 words from a fixed vocabulary and a fixed seed.
fn generated(n: usize) -> Vec<String> {
    const WORDS: &str = "the a of and to in is was for on with as by at from that this which \
        an be are were it its has have had not but or can will would may should must also \
        pressure flow boundary layer wing surface heat transfer velocity shock wave mach number \
        temperature laminar turbulent model theory experiment results measured data method \
        solution equation approximate exact linear stability buckling plate shell cylinder \
        load stress panel vibration frequency aircraft engine fuel cost schedule meeting \
        project customer order invoice report memory agent file commit branch server request \
        response error timeout cache database query index search user password network \
        garden recipe travel flight hotel doctor appointment birthday family friend music \
        book film weather morning evening week month year small large high low fast slow";
    let vocab: Vec<&str> = WORDS.split_whitespace().collect();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    (0..n)
        .map(|_| {
            let len = 150 + next() % 101;
            let mut doc = String::new();
            for i in 0..len {
                if i > 0 {
                    doc.push_str(if next() % 12 == 0 { ". " } else { " " });
                }
                doc.push_str(vocab[next() % vocab.len()]);
            }
            doc
        })
        .collect()
}

fn from_corpus(path: &Path, n: usize) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read ARIA_BENCH_CORPUS")
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| {
            format!("{} {}", v["title"].as_str().unwrap_or(""), v["text"].as_str().unwrap_or(""))
        })
        .filter(|t| !t.trim().is_empty())
        .take(n)
        .collect()
}

fn main() {
    let n: usize =
        std::env::var("ARIA_BENCH_DOCS").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    let docs = match std::env::var_os("ARIA_BENCH_CORPUS") {
        Some(path) => from_corpus(Path::new(&path), n),
        None => generated(n),
    };
    let words: usize = docs.iter().map(|d| d.split_whitespace().count()).sum();
    let dir = models_dir().join(aria_local::DEFAULT_EMBEDDING_MODEL);
    let embedder = LocalEmbedder::load(&dir).expect("load the embedder");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{} documents, {:.0} words each on average, {cores} cores",
        docs.len(),
        words as f64 / docs.len().max(1) as f64
    );
    embedder.embed(&docs[..docs.len().min(16)]).expect("warm up");
    let default = EmbedPlan::default();
    let mut plans = vec![
        EmbedPlan { batch: 32, workers: 1 },
        EmbedPlan { batch: 8, workers: 1 },
        EmbedPlan { batch: 32, workers: cores },
        EmbedPlan { batch: 16, workers: cores },
        EmbedPlan { batch: 8, workers: cores },
        EmbedPlan { batch: 4, workers: cores },
    ];
    if !plans.contains(&default) {
        plans.push(default);
    }
    for plan in plans {
        let t = Instant::now();
        let vectors = embedder.embed_with(&docs, plan).expect("embed");
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(vectors.len(), docs.len());
        println!(
            "batch {:>2}, {} worker(s): {:>6.1} documents/s{}",
            plan.batch,
            plan.workers,
            docs.len() as f64 / secs,
            if plan == default { "  (default)" } else { "" }
        );
    }
    one_query_at_a_time(&embedder);
}

/// What a memory search embeds: one query of a few words, alone, with idle time between
/// queries, as in a daemon between searches. Milliseconds per query, p50 and p95.
fn one_query_at_a_time(embedder: &LocalEmbedder) {
    const QUERIES: [&str; 5] = [
        "when is the dentist appointment",
        "wing boundary layer transition",
        "favourite editor",
        "what did I say about the project budget last week",
        "flight",
    ];
    let rounds = 100;
    let mut times = Vec::with_capacity(rounds);
    for i in 0..rounds {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let query = vec![QUERIES[i % QUERIES.len()].to_owned()];
        let t = Instant::now();
        embedder.embed(&query).expect("embed a query");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "one query (1-10 words) at a time, 20 ms apart: p50 {:.2} ms, p95 {:.2} ms",
        times[rounds / 2],
        times[rounds * 95 / 100 - 1]
    );
}
