//! `aria memories search` at 100,000 memories through a running `aria serve` (goal: p95 ≤
//! 20 ms including embedding the query, as quick as a search inside the daemon), next to the
//! same search done by the command alone (`--direct`: it loads the embedder and the vectors
//! itself).
//!
//! Builds `$ARIA_HOME/aria.db` with N memories (12 words each from a skewed 5,000-word
//! vocabulary) and random 384-dimension vectors stored under the embedded embedder's id, starts
//! the release `aria serve` on loopback with that embedder (`ARIA_BENCH_EMBEDDER`, default the
//! default granite-embedding-30m-english, or all-minilm-l6-v2; from `ARIA_MODELS_DIR`, default
//! `target/tmp/aria-models`; the bench says so and stops when it is not there), then times,
//! interleaved:
//! - `aria memories search QUERY --json` (a new process each time: what a script sees);
//! - the daemon's `GET /api/v1/memories/search` alone (one HTTP request);
//! - `aria memories search QUERY --json --direct` (fewer rounds: each loads the model).
//!
//! `cargo bench -p aria-cli --bench memory_daemon` (`ARIA_BENCH_MEMORIES=N`, `ARIA_BENCH_RUNS=N`,
//! `ARIA_BENCH_EMBEDDER=NAME`).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::NoRedact;
use aria_store::{NewMemory, Store, Writer};

const DIMS: usize = 384;
/// The embedded embedder benched unless `ARIA_BENCH_EMBEDDER` names another (384 dimensions).
const EMBEDDER: &str = "granite-embedding-30m-english";

const WORDS: &[&str] = &[
    "time",
    "person",
    "year",
    "way",
    "day",
    "thing",
    "man",
    "world",
    "life",
    "hand",
    "part",
    "child",
    "eye",
    "woman",
    "place",
    "work",
    "week",
    "case",
    "point",
    "government",
    "company",
    "number",
    "group",
    "problem",
    "fact",
    "meeting",
    "doctor",
    "dentist",
    "appointment",
    "birthday",
    "project",
    "deadline",
    "report",
    "invoice",
    "password",
    "server",
    "garden",
    "kitchen",
    "recipe",
    "coffee",
    "tea",
    "train",
    "flight",
    "hotel",
    "passport",
    "car",
    "insurance",
    "bank",
    "account",
    "email",
    "phone",
    "address",
    "school",
    "teacher",
    "book",
    "music",
    "guitar",
    "piano",
    "concert",
    "movie",
    "holiday",
    "beach",
    "mountain",
    "river",
    "city",
    "street",
    "house",
    "rent",
    "landlord",
    "friend",
    "family",
    "mother",
    "father",
    "sister",
    "brother",
    "daughter",
    "son",
    "wedding",
    "gift",
    "shop",
    "market",
    "price",
    "budget",
    "salary",
    "tax",
    "loan",
    "plan",
    "idea",
    "note",
    "list",
    "task",
    "goal",
    "habit",
    "sleep",
    "morning",
    "evening",
    "night",
    "weekend",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "march",
    "june",
    "september",
    "december",
    "blue",
    "green",
    "red",
    "favorite",
    "allergic",
    "vegetarian",
    "running",
    "cycling",
    "swimming",
    "football",
    "tennis",
    "language",
    "spanish",
    "french",
    "german",
    "python",
    "rust",
    "database",
    "backup",
    "laptop",
    "printer",
    "router",
    "cloud",
    "license",
    "contract",
    "lawyer",
    "medicine",
    "pharmacy",
    "hospital",
    "vaccine",
    "dog",
    "cat",
    "vet",
    "plant",
    "water",
    "electricity",
    "bill",
    "repair",
    "plumber",
    "painter",
    "office",
    "manager",
    "colleague",
    "client",
    "customer",
    "review",
    "release",
    "version",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A word of the vocabulary below, the first ones far more often (roughly Zipf), so
    /// memories and queries are English words (a query of 4 words is about 6 tokens, as a
    /// person's would be).
    fn word(&mut self) -> &'static str {
        let spread = self.next() as usize % WORDS.len() + 1;
        WORDS[self.next() as usize % spread]
    }
}

fn fill(home: &Path, n: usize, model: &str) -> Duration {
    let store = Store::open(&home.join("aria.db"), Arc::new(NoRedact)).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    for start in (0..n).step_by(2_000) {
        let count = 2_000.min(n - start);
        let memories: Vec<NewMemory> = (0..count)
            .map(|_| NewMemory::new((0..12).map(|_| rng.word()).collect::<Vec<_>>().join(" ")))
            .collect();
        let vectors: Vec<Vec<f32>> = (0..count)
            .map(|_| (0..DIMS).map(|_| (rng.next() % 2_000) as f32 / 1_000.0 - 1.0).collect())
            .collect();
        store
            .memory_insert_batch(
                &memories,
                Some(model),
                |i| Some(std::slice::from_ref(&vectors[i])),
                Writer::USER,
            )
            .unwrap();
    }
    started.elapsed()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{name:<44} p50 {:>8.2} ms   p95 {:>8.2} ms   max {:>8.2} ms   (n={})",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
        times.len()
    );
}

fn http_get(address: &str, path: &str) -> Duration {
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{}", &answer[..answer.len().min(300)]);
    started.elapsed()
}

fn main() {
    let n: usize =
        std::env::var("ARIA_BENCH_MEMORIES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let runs: usize =
        std::env::var("ARIA_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let models = std::env::var("ARIA_MODELS_DIR").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/tmp/aria-models").to_owned()
    });
    let embedder = std::env::var("ARIA_BENCH_EMBEDDER").unwrap_or_else(|_| EMBEDDER.to_owned());
    let pulled =
        std::fs::read_dir(Path::new(&models).join(&embedder)).is_ok_and(|mut d| d.next().is_some());
    if !pulled {
        println!(
            "skipped: {embedder} is not in {models} (pull it with `ARIA_MODELS_DIR={models} \
             aria model pull {embedder}`)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let config = dir.path().join("config/aria");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("aria.toml"),
        // No rate limit: the bench asks faster than the default 600 requests a minute allow.
        format!(
            "[memory]\nembedder = \"local\"\nembedding_model = \"{embedder}\"\n\n\
             [server]\nrate_limit_per_minute = 0\n"
        ),
    )
    .unwrap();
    let took = fill(&home, n, &format!("local:{embedder}"));
    println!("{n} memories with vectors written in {:.1} s", took.as_secs_f64());
    let exe = env!("CARGO_BIN_EXE_aria");
    let aria = |args: &[&str]| {
        let mut cmd = Command::new(exe);
        cmd.args(args)
            .env_clear()
            .env("HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("ARIA_HOME", &home)
            .env("ARIA_ROOTS", dir.path())
            .env("ARIA_MODELS_DIR", &models)
            // The chat model is never asked: a server that is not there keeps the embedded
            // chat model from loading.
            .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
            .env("OPENAI_API_KEY", "sk-bench")
            .env("ARIA_MODEL", "none");
        cmd
    };
    let mut daemon = aria(&["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(daemon.stderr.take().unwrap()).lines();
    let address = loop {
        let line = lines.next().expect("the daemon says where it serves").unwrap();
        if let Some(rest) = line.split("serving on http://").nth(1) {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let mut rng = Rng(42);
    let query = |rng: &mut Rng| (0..4).map(|_| rng.word()).collect::<Vec<_>>().join(" ");
    let search = |q: &str, direct: bool| {
        let mut args = vec!["memories", "search", q, "--json", "--limit", "10"];
        if direct {
            args.push("--direct");
        }
        let started = Instant::now();
        let out = aria(&args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        started.elapsed()
    };
    // Warm: the daemon's first search loads the embedder and the vectors.
    let first = http_get(&address, "/api/v1/memories/search?q=w1+w2&limit=10");
    println!(
        "first search through the daemon (loads the embedder and vectors): {:.0} ms",
        first.as_secs_f64() * 1e3
    );
    let (mut cli, mut http, mut direct) = (Vec::new(), Vec::new(), Vec::new());
    let (mut bm25, mut vector) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let q = query(&mut rng);
        cli.push(search(&q, false));
        let path = format!("/api/v1/memories/search?q={}&limit=10", q.replace(' ', "+"));
        http.push(http_get(&address, &path));
        bm25.push(http_get(&address, &format!("{path}&retriever=bm25")));
        vector.push(http_get(&address, &format!("{path}&retriever=vector")));
        if i % 10 == 0 {
            direct.push(search(&q, true));
        }
    }
    report("aria memories search (through the daemon)", cli);
    report("GET /api/v1/memories/search (daemon alone)", http);
    report("  the same, retriever=bm25 (no embedding)", bm25);
    report("  the same, retriever=vector", vector);
    report("aria memories search --direct", direct);
    println!("  (each includes embedding the 4-word query with {embedder}; hybrid, top 10)");
    let _ = daemon.kill();
    let _ = daemon.wait();
}
