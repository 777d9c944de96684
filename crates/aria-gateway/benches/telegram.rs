//! The Telegram channel's own cost, against the fake Bot API on loopback (prints figures,
//! asserts nothing):
//! - latency: from an update arriving at the fake to the channel's first `sendMessage` for it,
//!   with a scripted model whose first token costs nothing (so the figure is the channel's and
//!   the agent loop's own time above the model's time to first token);
//! - outbox throughput: messages sent per second with Telegram answering at once.
//!
//! `cargo bench -p aria-gateway --bench telegram` (`ARIA_BENCH_RUNS=N`, default 200 updates).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use std::time::{Duration, Instant};

use aria_gateway::telegram::{BotToken, CHANNEL, Outbox, Telegram, TelegramConfig};
use aria_testkit::telegram_mock::FakeTelegram;

const TOKEN: &str = "1:bench";

fn config(tg: &FakeTelegram, chats: Vec<i64>) -> TelegramConfig {
    let mut config = TelegramConfig::new(BotToken::new(TOKEN), chats);
    config.api_base = tg.api_base();
    config.poll_timeout = Duration::from_secs(5);
    config
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn latency(runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let gw = common::gateway(dir.path(), "Hello there.");
    let tg = FakeTelegram::start(TOKEN);
    // A chat per 20 updates: 30 new messages per minute per chat is the outbox's limit.
    let chats: Vec<i64> = (1..=(runs as i64 / 20 + 1)).collect();
    let channel = Telegram::start(gw.clone(), config(&tg, chats)).unwrap();
    let mut times = Vec::with_capacity(runs);
    for i in 0..runs {
        let start = Instant::now();
        let chat = 1 + i as i64 / 20;
        tg.push_message(chat, chat, "hi");
        let arrived =
            tg.wait_until(Duration::from_secs(10), |t| t.calls("sendMessage").len() > i).await;
        assert!(arrived, "no answer to update {i}");
        times.push(start.elapsed());
        // The next update once this run ended and its last edit went out.
        while gw.runs.active() > 0 || gw.store.outbox_waiting(CHANNEL).unwrap() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    times.sort();
    println!(
        "update → first sendMessage, {runs} updates: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms \
         (the scripted model's first token: ~0 ms)",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3,
        times.last().unwrap().as_secs_f64() * 1e3,
    );
    channel.stop(Duration::from_secs(1)).await;
}

async fn throughput(messages: usize, chats: i64) {
    let dir = tempfile::tempdir().unwrap();
    let gw = common::gateway(dir.path(), "Hello there.");
    let tg = FakeTelegram::start(TOKEN);
    let outbox = Outbox::new(gw.store.clone());
    for i in 0..messages {
        let chat = 1 + (i as i64 % chats);
        outbox.send(chat, "a <b>message</b>", "a message", None).unwrap();
    }
    let start = Instant::now();
    let channel = Telegram::start(gw.clone(), config(&tg, (1..=chats).collect())).unwrap();
    while gw.store.outbox_waiting(CHANNEL).unwrap() > 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = start.elapsed();
    println!(
        "outbox: {messages} messages to {chats} chats sent in {:.2} s: {:.0} messages/s \
         (each written, sent, recorded)",
        elapsed.as_secs_f64(),
        messages as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(tg.calls("sendMessage").len(), messages);
    channel.stop(Duration::from_secs(1)).await;
}

fn main() {
    let runs = std::env::var("ARIA_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        latency(runs).await;
        // 30 new messages per minute per chat: 1,000 messages over 100 chats stay under it.
        throughput(1000, 100).await;
    });
}
