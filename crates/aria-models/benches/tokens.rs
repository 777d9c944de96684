//! Token counting before a call: the one-time cost of loading each OpenAI encoding, and
//! counting throughput (MB/s) of the exact BPE path against the documented formula.
//!
//! Run: `cargo bench -p aria-models --bench tokens`. Texts are synthetic English prose, Rust
//! code and mixed non-ASCII text, built in memory; a whole request (system prompt, 40 turns of
//! history, 8 tool schemas) is counted as the router and the context planner count it.
#![allow(clippy::print_stdout)] // printing figures is what a bench binary is for

use std::hint::black_box;
use std::time::{Duration, Instant};

use aria_api::{ChatRequest, Message, ToolSpec};
use aria_models::tokens::{count_input, count_text, estimate_text};

const PROSE: &str = "The router retries a failed call with exponential backoff, honours Retry-After, \
and moves on to the next route when a circuit breaker is open. Spend is checked against the caps \
before any request is made. ";
const CODE: &str = "fn main() -> Result<(), Box<dyn std::error::Error>> {\n    let x: Vec<u64> = \
(0..10).map(|i| i * 2).collect();\n    println!(\"{x:?}\");\n    Ok(())\n}\n";
const MIXED: &str = "Grüße aus Köln — 日本語のテキスト、emoji 🦀🚀, and ASCII. ";

fn text(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len() + 1)
}

fn throughput(name: &str, bytes: usize, mut run: impl FnMut() -> u64) {
    let mut best = Duration::MAX;
    let mut tokens = 0;
    for _ in 0..5 {
        let started = Instant::now();
        tokens = black_box(run());
        best = best.min(started.elapsed());
    }
    let mb_s = bytes as f64 / 1e6 / best.as_secs_f64();
    println!("{name:<44} {mb_s:>8.1} MB/s ({tokens} tokens in {bytes} bytes, best of 5)");
}

fn main() {
    for model in ["gpt-4", "gpt-4o"] {
        let started = Instant::now();
        let n = count_text(model, "hello world");
        println!(
            "first use for {model:<7} (loads its encoding): {:>8.1} ms ({n} tokens)",
            started.elapsed().as_secs_f64() * 1e3
        );
        let started = Instant::now();
        let n = count_text(model, "hello world");
        println!(
            "second use for {model:<6}                      : {:>8.1} µs ({n} tokens)",
            started.elapsed().as_secs_f64() * 1e6
        );
    }
    let size = 4 * 1024 * 1024;
    for (kind, unit) in [("prose", PROSE), ("code", CODE), ("mixed", MIXED)] {
        let t = text(unit, size);
        throughput(&format!("o200k_base (gpt-4o), {kind}"), t.len(), || count_text("gpt-4o", &t));
        throughput(&format!("cl100k_base (gpt-4), {kind}"), t.len(), || count_text("gpt-4", &t));
        throughput(&format!("formula (other models), {kind}"), t.len(), || estimate_text(&t));
    }
    let history: Vec<Message> = (0..40)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("{PROSE}{i}"))
            } else {
                Message::assistant(format!("{CODE}{PROSE}{i}"), vec![])
            }
        })
        .collect();
    let mut messages = vec![Message::system(PROSE.repeat(8))];
    messages.extend(history);
    let tools = (0..8)
        .map(|i| ToolSpec {
            name: format!("tool_{i}"),
            description: PROSE.into(),
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        })
        .collect();
    let mut request = ChatRequest {
        model: "gpt-4o".into(),
        messages,
        tools,
        max_tokens: None,
        temperature: None,
    };
    let bytes: usize = request.messages.iter().map(|m| m.content.len()).sum();
    for model in ["gpt-4o", "llama3.2:3b"] {
        request.model = model.into();
        let rounds = 200;
        let started = Instant::now();
        let mut n = 0;
        for _ in 0..rounds {
            n = black_box(count_input(&request));
        }
        println!(
            "count_input, {model:<11} ({} messages, {bytes} bytes, 8 tools): {:>7.1} µs per request ({n} tokens)",
            request.messages.len(),
            started.elapsed().as_secs_f64() * 1e6 / rounds as f64
        );
    }
}
