//! What the router adds to the latency of the first token, over a raw provider, on loopback.
//!
//! Run: `cargo bench -p aria-models --bench router`. A loopback OpenAI-compatible mock streams a
//! short answer; the same provider is called directly and through a one-route [`Router`]
//! (retry, breaker, context planner with a known window), interleaved, and the time from
//! `stream()` to the first text event is compared. Goal: the router adds at most 1 ms.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{ChatEvent, ChatRequest, Message, Provider};
use aria_models::{
    BreakerPolicy, OpenAiConfig, OpenAiProvider, RetryPolicy, Route, Router, SystemClock, Window,
};
use aria_testkit::mock::{Mock, MockTurn, ScriptEnd};
use futures::StreamExt;

const ROUNDS: usize = 400;

async fn first_token(provider: &dyn Provider, request: ChatRequest) -> Duration {
    let started = Instant::now();
    let mut stream = provider.stream(request);
    let mut first = None;
    while let Some(item) = stream.next().await {
        if first.is_none() && matches!(item, Ok(ChatEvent::TextDelta { .. })) {
            first = Some(started.elapsed());
        }
    }
    first.expect("the mock answers with text")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let server = Mock::new(vec![MockTurn::text("Hello from the loopback mock.")])
        .on_script_end(ScriptEnd::Repeat)
        .serve();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let raw = Arc::new(OpenAiProvider::new(OpenAiConfig::new(server.base_url())).unwrap());
    let router = Router::new(
        vec![Route::new(raw.clone()).window(Window::Tokens(128_000))],
        RetryPolicy::default(),
        BreakerPolicy::default(),
        Arc::new(SystemClock::default()),
    );
    let history: Vec<Message> = (0..20)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("question {i} ").repeat(20))
            } else {
                Message::assistant(format!("answer {i} ").repeat(30), vec![])
            }
        })
        .collect();
    let request = ChatRequest {
        model: "gpt-4o-mini".into(),
        messages: history,
        tools: vec![],
        max_tokens: Some(256),
        temperature: None,
    };
    let (mut direct, mut routed) = (Vec::new(), Vec::new());
    rt.block_on(async {
        for _ in 0..20 {
            first_token(raw.as_ref(), request.clone()).await; // warm up the connection pool
            first_token(&router, request.clone()).await;
        }
        for _ in 0..ROUNDS {
            direct.push(first_token(raw.as_ref(), request.clone()).await);
            routed.push(first_token(&router, request.clone()).await);
        }
    });
    direct.sort();
    routed.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (name, list) in [("raw provider", &direct), ("through the router", &routed)] {
        println!(
            "{name:<20} first token: median {:>7.1} µs, p90 {:>7.1} µs, p99 {:>7.1} µs ({ROUNDS} calls)",
            us(percentile(list, 0.5)),
            us(percentile(list, 0.9)),
            us(percentile(list, 0.99))
        );
    }
    println!(
        "router added latency: median {:+.1} µs, p90 {:+.1} µs (goal ≤ 1000 µs)",
        us(percentile(&routed, 0.5)) - us(percentile(&direct, 0.5)),
        us(percentile(&routed, 0.9)) - us(percentile(&direct, 0.9))
    );
}
