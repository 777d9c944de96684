//! SSE parsing throughput: a large synthetic OpenAI stream, parsed in memory (no network).
//!
//! Run: `cargo bench -p aria-models --bench stream`. Prints MB/s for the event splitter alone
//! and for the whole parse path (events → JSON chunks → chat events), at two read sizes.
#![allow(clippy::print_stdout)] // printing figures is what a bench binary is for

use std::hint::black_box;
use std::time::{Duration, Instant};

use aria_models::{ChunkAssembler, SseParser};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// About `target` bytes of realistic chunks: text deltas, then interleaved tool-call fragments.
fn synthetic_stream(target: usize) -> Vec<u8> {
    let mut out = String::with_capacity(target + 4096);
    let prefix = r#"{"id":"chatcmpl-9xYz","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":"#;
    out.push_str("data: ");
    out.push_str(prefix);
    out.push_str(r#"{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#);
    out.push_str("\n\n");
    let words = [
        "The",
        " quick",
        " brown",
        " fox",
        " — jumps",
        " über",
        " the",
        " lazy",
        " dog",
        " 🦀",
        "\\n",
    ];
    let mut i = 0usize;
    while out.len() < target * 9 / 10 {
        let w = words[i % words.len()];
        out.push_str("data: ");
        out.push_str(prefix);
        out.push_str(&format!(r#"{{"content":"{w}"}},"logprobs":null,"finish_reason":null}}]}}"#));
        out.push_str("\n\n");
        i += 1;
    }
    for (n, idx) in [0, 1].iter().enumerate() {
        out.push_str(&format!(
            "data: {prefix}{{\"tool_calls\":[{{\"index\":{idx},\"id\":\"call_{n}\",\"type\":\"function\",\"function\":{{\"name\":\"shell\",\"arguments\":\"\"}}}}]}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    while out.len() < target {
        let idx = i % 2;
        out.push_str(&format!(
            "data: {prefix}{{\"tool_calls\":[{{\"index\":{idx},\"function\":{{\"arguments\":\"ab\\\"c\"}}}}]}},\"finish_reason\":null}}]}}\n\n"
        ));
        i += 1;
    }
    out.push_str(&format!("data: {prefix}{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\n"));
    out.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":20,\"total_tokens\":30}}\n\n");
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

fn split_only(stream: &[u8], read: usize) -> Result<usize> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut count = 0;
    for piece in stream.chunks(read) {
        parser.push(piece, &mut events)?;
        count += events.len();
        events.clear();
    }
    parser.finish(&mut events)?;
    Ok(count + events.len())
}

fn full_parse(stream: &[u8], read: usize) -> Result<usize> {
    let mut parser = SseParser::new();
    let mut assembler = ChunkAssembler::new();
    let mut events = Vec::new();
    let mut out = Vec::new();
    let mut count = 0;
    for piece in stream.chunks(read) {
        parser.push(piece, &mut events)?;
        for event in events.drain(..) {
            assembler.push(&event.data, &mut out)?;
        }
        count += out.len();
        out.clear();
    }
    parser.finish(&mut events)?;
    for event in events.drain(..) {
        assembler.push(&event.data, &mut out)?;
    }
    assembler.finish(&mut out)?;
    Ok(count + out.len())
}

fn measure(name: &str, stream: &[u8], run: impl Fn(&[u8]) -> Result<usize>) -> Result<()> {
    let mut best = Duration::MAX;
    let mut items = 0;
    for _ in 0..5 {
        let started = Instant::now();
        items = black_box(run(black_box(stream))?);
        best = best.min(started.elapsed());
    }
    let mb = stream.len() as f64 / 1e6;
    println!(
        "{name:<44} {:>8.1} MB/s  ({mb:.0} MB in {:.1} ms, {items} items, best of 5)",
        mb / best.as_secs_f64(),
        best.as_secs_f64() * 1e3
    );
    Ok(())
}

fn main() -> Result<()> {
    let stream = synthetic_stream(64 * 1024 * 1024);
    let events = split_only(&stream, 16 * 1024)?;
    println!("synthetic stream: {} bytes, {events} SSE events", stream.len());
    measure("SseParser, 16 KiB reads", &stream, |s| split_only(s, 16 * 1024))?;
    measure("SseParser, 61-byte reads", &stream, |s| split_only(s, 61))?;
    measure("SseParser + ChunkAssembler, 16 KiB reads", &stream, |s| full_parse(s, 16 * 1024))?;
    measure("SseParser + ChunkAssembler, 61-byte reads", &stream, |s| full_parse(s, 61))?;
    Ok(())
}
