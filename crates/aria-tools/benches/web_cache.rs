//! `web_search` answered from its cache (goal: a cache hit answers in ≤ 1 ms, against the
//! network round trip it saves).
//!
//! `cargo bench -p aria-tools --bench web_cache` (a plain binary: `harness = false`). Figures are
//! printed, never asserted (CONVENTIONS.md, "Tests").
//!
//! The whole call as the agent loop makes it: the query through the secret filter, the cache
//! key, the lookup in ARIA's SQLite store (the same table and query as the binary's ledger, with
//! 10,000 other cached searches in it), the search logged, and the results rendered. The
//! provider is never reached: every call is a hit (a miss would fail, its URL is closed).
//! `ARIA_BENCH_RUNS=N` sets the number of calls (default 2,000).

// A bench binary reports on stdout; unwrap is fine for its own setup.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use aria_api::{NoRedact, Tool, ToolContext};
use aria_store::Store;
use aria_tools::tools::web_search::{SearchLedger, SearchProvider, WebSearch, normalise};
use serde_json::{Value, json};

const FAR_FUTURE: &str = "9999-12-31T00:00:00.000Z";

/// The store-backed cache, as the binary keeps it.
#[derive(Debug)]
struct Ledger(Arc<Store>);

impl SearchLedger for Ledger {
    fn cached(&self, key: &str) -> Option<Value> {
        self.0.search_cache_get(key, &aria_store::day_start_utc()).ok().flatten()
    }
    fn keep(&self, key: &str, provider: &str, query: &str, results: &Value) {
        self.0.search_cache_put(key, provider, query, results, FAR_FUTURE).unwrap();
    }
    fn record(&self, provider: &str, cached: bool) {
        self.0.search_log_add(provider, cached, 0.0).unwrap();
    }
}

fn results(n: usize) -> Value {
    (0..5)
        .map(|i| {
            json!({"title": format!("Result {i} for query {n}"),
                   "url": format!("https://example.org/{n}/{i}"),
                   "snippet": "A snippet of about two hundred characters describing the page, \
                               as search engines return them, with a few words in bold and an \
                               ellipsis at the end of it …"})
        })
        .collect()
}

/// `n` in letters (a number could read as a year, and a dated query bypasses the cache).
fn word(mut n: usize) -> String {
    let mut w = String::new();
    loop {
        w.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
        if n == 0 {
            return w;
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((p / 100.0) * (sorted.len() - 1) as f64).round() as usize]
}

fn main() {
    let runs: usize =
        std::env::var("ARIA_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000);
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("aria.db"), Arc::new(NoRedact)).unwrap());
    let ledger = Arc::new(Ledger(store.clone()));
    for n in 0..10_000 {
        let query = format!("rust borrow checker question {}", word(n));
        let key = format!("searxng||5|{}", normalise(&query));
        ledger.keep(&key, "searxng", &query, &results(n));
    }
    let tool = WebSearch::new(
        SearchProvider::Searxng { url: "http://127.0.0.1:9/search".into() },
        ledger,
        Vec::new(),
    );
    let ctx = ToolContext { session_id: "bench".into(), dry_run: false };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut times = Vec::with_capacity(runs);
    rt.block_on(async {
        for i in 0..runs {
            let query =
                format!("Rust  borrow checker QUESTION {}", word(i % 10_000).to_uppercase());
            let args = json!({ "query": query });
            let started = Instant::now();
            let out = tool.call(args, &ctx).await.unwrap();
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            assert!(out.content.contains("(from the cache)"), "{}", out.content);
        }
    });
    times.sort_by(f64::total_cmp);
    println!(
        "web_search cache hit (10,000 cached searches, {runs} calls): p50 {:.3} ms, p95 {:.3} ms, \
         p99 {:.3} ms (goal: <= 1 ms)",
        percentile(&times, 50.0),
        percentile(&times, 95.0),
        percentile(&times, 99.0)
    );
}
