//! Prompt and generation speed of one GGUF chat model, by path, optionally side by side with
//! llama.cpp on the same file:
//! `cargo run --release -p aria-local --example gguf_speed -- MODEL.gguf [ROUNDS]`
//! (or `ARIA_BENCH_GGUF=MODEL.gguf`). Prints tokens/s for a ~300-token prompt and for 128 greedy
//! tokens, best of ROUNDS (default 3), with the load average of the moment.
//!
//! With `LLAMA_CPP_PY=DIR` (a directory holding the `xllamacpp` package: the PyPI wheel
//! extracted, e.g. `unzip xllamacpp-*.whl -d DIR`), each round also runs llama.cpp through a
//! Python child on the same GGUF, the same prompts and the same thread count, interleaved with
//! ours so machine load hits both alike, and prints the ratios. llama.cpp ignores EOS and
//! generates exactly 128 tokens; ours stops at EOS, so generation is compared as tokens per
//! second over the tokens each produced. llama.cpp is only ever run from here, as a yardstick;
//! it is not a dependency of ARIA. Asserts nothing.
//!
//! Generating a token reads every weight once (the tied output layer included), so it also
//! prints the weight bytes each engine read per second and, for scale, how fast this machine
//! reads memory at all (every thread summing a 1 GiB buffer): an engine near that figure is
//! bound by memory, not by its kernels.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)] // a measuring tool

use std::process::{Command, Stdio};

use aria_api::{ChatRequest, Message};
use aria_local::{LocalChatOptions, LocalChatProvider};

const FILLER: &str = "The quick brown fox jumps over the lazy dog while the river keeps flowing. ";
const STORY: &str = "Write a long story about a robot who learns to paint.";
/// Tokens generated per round.
const GENERATE: usize = 128;

/// llama.cpp's side, one round: prints `prompt_tps gen_tps prompt_n gen_n`.
/// The prompts are ours rendered by the same chat template (system prompt included), so both
/// engines see the same tokens (the token counts are printed to check it).
const LLAMA_PY: &str = r#"
import sys
import xllamacpp as xlc
model, threads, n_gen, filler, story = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
p = xlc.CommonParams()
p.model.path = model
p.n_ctx = 2048
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.n_parallel = 1
server = xlc.Server(p)
sysp = "<|im_start|>system\nYou are ARIA, a helpful AI assistant.<|im_end|>\n<|im_start|>user\n"
long = sysp + filler + " Summarise this text.<|im_end|>\n<|im_start|>assistant\n"
gen = sysp + story + "<|im_end|>\n<|im_start|>assistant\n"
if True:
    import os
    a = server.handle_completions({"prompt": long, "n_predict": 1, "temperature": 0.0, "cache_prompt": False})["timings"]
    b = server.handle_completions({"prompt": gen, "n_predict": n_gen, "temperature": 0.0, "top_k": 1,
                                   "samplers": ["top_k"], "ignore_eos": True, "cache_prompt": False})["timings"]
    print(a["prompt_per_second"], b["predicted_per_second"], a["prompt_n"], b["predicted_n"], flush=True)
    os._exit(0)
"#;

/// Runs one llama.cpp round in a fresh Python child (its server thread keeps a core busy
/// while idle, so none may outlive its round): (prompt tokens/s, generation tokens/s, prompt
/// tokens, generated tokens).
fn llama_round(dir: &str, model: &str, threads: usize) -> (f64, f64, usize, usize) {
    let out = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
        .env("PYTHONPATH", dir)
        .args(["-c", LLAMA_PY, model, &threads.to_string(), &GENERATE.to_string()])
        .args([FILLER.repeat(18).as_str(), STORY])
        .stderr(Stdio::null())
        .output()
        .expect("start python3 with xllamacpp");
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Vec<f64> = text.split_whitespace().map(|v| v.parse().unwrap()).collect();
    assert_eq!(f.len(), 4, "llama.cpp said {text:?} (is LLAMA_CPP_PY right?)");
    (f[0], f[1], f[2] as usize, f[3] as usize)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn request(text: String, max_tokens: usize) -> ChatRequest {
    ChatRequest {
        model: "local".into(),
        messages: vec![Message::user(text)],
        tools: vec![],
        max_tokens: Some(max_tokens as u32),
        temperature: Some(0.0),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .or_else(|| std::env::var("ARIA_BENCH_GGUF").ok())
        .expect("usage: gguf_speed MODEL.gguf [ROUNDS] (or ARIA_BENCH_GGUF=MODEL.gguf)");
    let rounds: usize = args.next().map_or(3, |r| r.parse().expect("ROUNDS is a number"));
    let threads = candle_core::utils::get_num_threads();
    let options = LocalChatOptions {
        temperature: 0.0,
        repeat_penalty: 1.0,
        seed: Some(1),
        ..LocalChatOptions::default()
    };
    let model = LocalChatProvider::load(std::path::Path::new(&path), options).unwrap();
    println!("loaded {path} in {:.2} s; {threads} threads", model.load_time().as_secs_f64());
    let llama = std::env::var("LLAMA_CPP_PY").ok();
    let long = request(format!("{} Summarise this text.", FILLER.repeat(18)), 1);
    let story = request(STORY.into(), GENERATE);
    let (mut ours_best, mut theirs_best) = ((0f64, 0f64), (0f64, 0f64));
    let mut ratios = Vec::new();
    for round in 0..rounds {
        // A fresh provider state per round: no cached prefix to reuse.
        let fresh =
            LocalChatProvider::load(std::path::Path::new(&path), model.options().clone()).unwrap();
        let (_, p) = fresh.generate_blocking(&long).unwrap();
        let prompt_tps = p.prompt_tokens as f64 / p.prompt_secs;
        let (_, g) = fresh.generate_blocking(&story).unwrap();
        let gen_tps = g.generated_tokens as f64 / g.generation_secs;
        println!(
            "round {round} ours:      prompt {} tokens {prompt_tps:6.1} tokens/s; generation {} tokens {gen_tps:5.1} tokens/s (load {})",
            p.prompt_tokens,
            g.generated_tokens,
            load_average()
        );
        ours_best = (ours_best.0.max(prompt_tps), ours_best.1.max(gen_tps));
        if let Some(dir) = &llama {
            let (pt, gt, pn, gn) = llama_round(dir, &path, threads);
            println!(
                "round {round} llama.cpp: prompt {pn} tokens {pt:6.1} tokens/s; generation {gn} tokens {gt:5.1} tokens/s (load {})",
                load_average()
            );
            theirs_best = (theirs_best.0.max(pt), theirs_best.1.max(gt));
            ratios.push(gen_tps / gt);
        }
    }
    println!(
        "best of {rounds}, ours:      prompt {:6.1} tokens/s, generation {:5.1} tokens/s",
        ours_best.0, ours_best.1
    );
    if llama.is_some() {
        println!(
            "best of {rounds}, llama.cpp: prompt {:6.1} tokens/s, generation {:5.1} tokens/s",
            theirs_best.0, theirs_best.1
        );
        println!(
            "ours / llama.cpp: prompt {:.2}x, generation {:.2}x (load {})",
            ours_best.0 / theirs_best.0,
            ours_best.1 / theirs_best.1,
            load_average()
        );
        let mean = ratios.iter().sum::<f64>() / ratios.len().max(1) as f64;
        let (lo, hi) = ratios.iter().fold((f64::MAX, 0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        println!("generation ours / llama.cpp per round: mean {mean:.3}x, {lo:.3}x to {hi:.3}x");
    }
    let bytes = weight_bytes_per_token(&path) as f64;
    let machine = read_bandwidth(threads);
    println!(
        "weights read per generated token: {:.0} MB; at the best generation speed ours read {:.1} GB/s{}; this machine reads memory at {machine:.1} GB/s ({threads} threads)",
        bytes / 1e6,
        bytes * ours_best.1 / 1e9,
        if llama.is_some() {
            format!(", llama.cpp {:.1} GB/s", bytes * theirs_best.1 / 1e9)
        } else {
            String::new()
        }
    );
}

/// Bytes of weights one generated token reads: every tensor but the token embedding, which
/// counts in full when it is also the output layer (tied) and else for one row only.
fn weight_bytes_per_token(path: &str) -> u64 {
    let mut file = std::fs::File::open(path).unwrap();
    let content = candle_core::quantized::gguf_file::Content::read(&mut file).unwrap();
    let size = |info: &candle_core::quantized::gguf_file::TensorInfo| {
        let n = info.shape.elem_count();
        (n / info.ggml_dtype.block_size() * info.ggml_dtype.type_size()) as u64
    };
    let tied = !content.tensor_infos.contains_key("output.weight");
    content
        .tensor_infos
        .iter()
        .filter(|(name, _)| tied || name.as_str() != "token_embd.weight")
        .map(|(_, info)| size(info))
        .sum()
}

/// The best of five passes of `threads` threads summing a 1 GiB buffer, in GB/s.
fn read_bandwidth(threads: usize) -> f64 {
    let data: Vec<u64> = (0..1u64 << 27).collect();
    let mut best = 0f64;
    for _ in 0..5 {
        let start = std::time::Instant::now();
        let total: u64 = std::thread::scope(|s| {
            let part = data.len().div_ceil(threads);
            let sums: Vec<_> = data
                .chunks(part)
                .map(|c| s.spawn(move || c.iter().fold(0u64, |a, v| a.wrapping_add(*v))))
                .collect();
            sums.into_iter().map(|h| h.join().unwrap()).fold(0, u64::wrapping_add)
        });
        std::hint::black_box(total);
        best = best.max((data.len() * 8) as f64 / start.elapsed().as_secs_f64() / 1e9);
    }
    best
}
