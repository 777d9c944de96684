//! Stream parsing throughput: large synthetic OpenAI (SSE), Anthropic (SSE) and Ollama (NDJSON)
//! streams, parsed in memory (no network).
//!
//! Run: `cargo bench -p aria-models --bench stream`. Prints MB/s for the event splitter alone
//! and for the whole parse path (events → JSON → chat events), at two read sizes.
#![allow(clippy::print_stdout)] // printing figures is what a bench binary is for

use std::hint::black_box;
use std::time::{Duration, Instant};

use aria_models::{Assembler, ChunkAssembler, LineAssembler, MessageAssembler, SseParser};

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

/// About `target` bytes of Anthropic events: text deltas, then a tool_use with input fragments.
fn anthropic_stream(target: usize) -> Vec<u8> {
    let mut out = String::with_capacity(target + 4096);
    out.push_str("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n");
    out.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
    let words =
        ["The", " quick", " brown", " fox", " — jumps", " über", " the", " lazy", " dog", " 🦀"];
    let mut i = 0usize;
    while out.len() < target * 9 / 10 {
        let w = words[i % words.len()];
        out.push_str(&format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{w}\"}}}}\n\n"));
        i += 1;
    }
    out.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    out.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"shell\",\"input\":{}}}\n\n");
    out.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\\\"\"}}\n\n");
    while out.len() < target {
        out.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"abc\"}}\n\n");
    }
    out.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"}\"}}\n\n");
    out.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    );
    out.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9000}}\n\n");
    out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out.into_bytes()
}

/// About `target` bytes of Ollama `/api/chat` lines.
fn ollama_stream(target: usize) -> Vec<u8> {
    let mut out = String::with_capacity(target + 4096);
    let words =
        ["The", " quick", " brown", " fox", " — jumps", " über", " the", " lazy", " dog", " 🦀"];
    let mut i = 0usize;
    while out.len() < target {
        let w = words[i % words.len()];
        out.push_str(&format!("{{\"model\":\"qwen2.5:7b\",\"created_at\":\"2025-01-01T00:00:00.000000000Z\",\"message\":{{\"role\":\"assistant\",\"content\":\"{w}\"}},\"done\":false}}\n"));
        i += 1;
    }
    out.push_str("{\"model\":\"qwen2.5:7b\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":26,\"eval_count\":290}\n");
    out.into_bytes()
}

fn anthropic_parse(stream: &[u8], read: usize) -> Result<usize> {
    let mut parser = SseParser::new();
    let mut assembler = MessageAssembler::new();
    let mut events = Vec::new();
    let mut out = Vec::new();
    let mut count = 0;
    for piece in stream.chunks(read) {
        parser.push(piece, &mut events)?;
        for event in events.drain(..) {
            assembler.push(event.event.as_deref(), &event.data, &mut out)?;
        }
        count += out.len();
        out.clear();
    }
    parser.finish(&mut events)?;
    for event in events.drain(..) {
        assembler.push(event.event.as_deref(), &event.data, &mut out)?;
    }
    Assembler::finish(&mut assembler, &mut out)?;
    Ok(count + out.len())
}

/// NDJSON: split on newlines (carrying a partial line across reads), one JSON object each.
fn ollama_parse(stream: &[u8], read: usize) -> Result<usize> {
    let mut assembler = LineAssembler::new();
    let mut line = Vec::new();
    let mut out = Vec::new();
    let mut count = 0;
    for piece in stream.chunks(read) {
        let mut rest = piece;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&rest[..pos]);
            assembler.push(None, std::str::from_utf8(&line)?, &mut out)?;
            line.clear();
            rest = &rest[pos + 1..];
        }
        line.extend_from_slice(rest);
        count += out.len();
        out.clear();
    }
    Assembler::finish(&mut assembler, &mut out)?;
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
        "{name:<50} {:>8.1} MB/s  ({mb:.0} MB in {:.1} ms, {items} items, best of 5)",
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
    let anthropic = anthropic_stream(64 * 1024 * 1024);
    measure("Anthropic: SseParser + MessageAssembler, 16 KiB", &anthropic, |s| {
        anthropic_parse(s, 16 * 1024)
    })?;
    measure("Anthropic: SseParser + MessageAssembler, 61 B", &anthropic, |s| {
        anthropic_parse(s, 61)
    })?;
    let ollama = ollama_stream(64 * 1024 * 1024);
    measure("Ollama: NDJSON lines + LineAssembler, 16 KiB", &ollama, |s| {
        ollama_parse(s, 16 * 1024)
    })?;
    measure("Ollama: NDJSON lines + LineAssembler, 61 B", &ollama, |s| ollama_parse(s, 61))?;
    Ok(())
}
