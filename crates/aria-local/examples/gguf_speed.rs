//! Prompt and generation speed of one GGUF chat model, by path:
//! `cargo run --release -p aria-local --example gguf_speed -- MODEL.gguf [ROUNDS]`.
//! Prints tokens/s for a ~300-token prompt and for 128 greedy tokens, best of ROUNDS (default 3).
//! For comparing the embedded engine with llama.cpp on the same file; asserts nothing.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)] // a measuring tool

use aria_api::{ChatRequest, Message};
use aria_local::{LocalChatOptions, LocalChatProvider};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: gguf_speed MODEL.gguf [ROUNDS]");
    let rounds: usize = args.next().map_or(3, |r| r.parse().expect("ROUNDS is a number"));
    let options = LocalChatOptions {
        temperature: 0.0,
        repeat_penalty: 1.0,
        seed: Some(1),
        ..LocalChatOptions::default()
    };
    let model = LocalChatProvider::load(std::path::Path::new(&path), options).unwrap();
    println!("loaded {path} in {:.2} s", model.load_time().as_secs_f64());
    let filler = "The quick brown fox jumps over the lazy dog while the river keeps flowing. ";
    let long = ChatRequest {
        model: "local".into(),
        messages: vec![Message::user(format!("{} Summarise this text.", filler.repeat(18)))],
        tools: vec![],
        max_tokens: Some(1),
        temperature: Some(0.0),
    };
    let story = ChatRequest {
        model: "local".into(),
        messages: vec![Message::user("Write a long story about a robot who learns to paint.")],
        tools: vec![],
        max_tokens: Some(128),
        temperature: Some(0.0),
    };
    let (mut prompt_best, mut gen_best) = (0f64, 0f64);
    for round in 0..rounds {
        // A fresh provider state per round: no cached prefix to reuse.
        let fresh =
            LocalChatProvider::load(std::path::Path::new(&path), model.options().clone()).unwrap();
        let (_, p) = fresh.generate_blocking(&long).unwrap();
        let prompt_tps = p.prompt_tokens as f64 / p.prompt_secs;
        let (_, g) = fresh.generate_blocking(&story).unwrap();
        let gen_tps = g.generated_tokens as f64 / g.generation_secs;
        println!(
            "round {round}: prompt {} tokens {prompt_tps:.1} tokens/s; generation {} tokens {gen_tps:.1} tokens/s",
            p.prompt_tokens, g.generated_tokens
        );
        prompt_best = prompt_best.max(prompt_tps);
        gen_best = gen_best.max(gen_tps);
    }
    println!("best: prompt {prompt_best:.1} tokens/s, generation {gen_best:.1} tokens/s");
}
