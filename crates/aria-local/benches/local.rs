//! Speed and memory of the embedded models. Prints figures; asserts nothing.
//!
//! `cargo bench -p aria-local --bench local`. Models come from `$ARIA_BENCH_MODELS_DIR`, else
//! `$ARIA_TEST_MODELS_DIR`, else `target/tmp/aria-models` (pulled there if missing). Set
//! `LLAMA_BENCH=/path/to/llama-bench` to print llama.cpp's figures for the same GGUF and thread
//! count, and the ratio. The workspace builds with `target-cpu=native` (`.cargo/config.toml`).
//!
//! Besides the provider's figures it prints, in the same run and interleaved so machine load
//! hits both alike: the Q4_1 matrix-vector kernel against candle's, the run-time selected
//! kernels (AVX2 where the CPU has it) against the portable ones, and whole-model generation
//! against candle's `quantized_llama` (what the provider ran on before).
//! The K-quant and Q5_0 kernels are compared the same way, with candle's `QMatMul` as well.
//! `ARIA_BENCH_KERNELS_ONLY=1` prints only the kernel lines (quick, no model needed). `uptime`'s load is
//! printed with the figures: other builds on a small machine move them a lot.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)] // a bench binary reports on stdout

// The kernels, compiled into the bench directly (they are private to the crate, and making them
// public for a bench would widen the crate's API): the one `#[path]` in the workspace, naming the
// module's own file. `quant` is a `mod.rs` module so that its submodules resolve the same from
// here as from the crate.
#[allow(dead_code)]
#[path = "../src/quant/mod.rs"]
mod quant;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use aria_api::{ChatRequest, Message};
use aria_local::{LocalChatOptions, LocalChatProvider, LocalEmbedder, ModelCatalog, PullOptions};

fn models_dir() -> PathBuf {
    let dir = ["ARIA_BENCH_MODELS_DIR", "ARIA_TEST_MODELS_DIR"]
        .iter()
        .find_map(std::env::var_os)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp/aria-models")
        });
    let catalog = ModelCatalog::builtin();
    for entry in catalog.defaults() {
        aria_local::pull(entry, &dir, &PullOptions::default(), &mut |_| {})
            .expect("pull the models");
    }
    dir
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// One 1536×576 Q4_1 matrix (SmolLM2's feed-forward size) times one activation row: ours and
/// candle's, alternating, best of several rounds.
fn kernel_vs_candle() {
    use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
    use candle_core::{Device, Module, Tensor};
    let (rows, cols) = (1536, 576);
    let vals: Vec<f32> =
        (0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
    let w = Tensor::from_vec(vals, (rows, cols), &Device::Cpu).unwrap();
    let q = QTensor::quantize(&w, GgmlDType::Q4_1).unwrap();
    let mut ours = quant::QMatrix::with_capacity(GgmlDType::Q4_1, rows, cols).unwrap();
    ours.push_bytes(&q.data().unwrap());
    let candle = QMatMul::from_qtensor(q).unwrap();
    let x: Vec<f32> = (0..cols).map(|i| (i as f32 * 0.37).sin()).collect();
    let xt = Tensor::from_slice(&x, (1, cols), &Device::Cpu).unwrap();
    let mut acts = Vec::new();
    let mut out = vec![0f32; rows];
    let iters = 300;
    let (mut best_ours, mut best_candle) = (f64::MAX, f64::MAX);
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..iters {
            quant::quantize_rows(&x, cols, &mut acts);
            quant::matmul_t(vec![quant::Product { w: &ours, out_t: &mut out }], &acts);
        }
        best_ours = best_ours.min(t.elapsed().as_secs_f64() / iters as f64);
        let t = Instant::now();
        for _ in 0..iters {
            std::hint::black_box(candle.forward(&xt).unwrap());
        }
        best_candle = best_candle.min(t.elapsed().as_secs_f64() / iters as f64);
    }
    let gmacs = |s: f64| (rows * cols) as f64 / s / 1e9;
    println!(
        "Q4_1 1536x576 matvec:        {:>8.1} us ours ({:.1} GMAC/s), {:.1} us candle ({:.1} GMAC/s): {:.1}x",
        best_ours * 1e6,
        gmacs(best_ours),
        best_candle * 1e6,
        gmacs(best_candle),
        best_candle / best_ours
    );
}

/// The run-time selected kernels against the portable ones, interleaved, for the shapes and
/// formats the chat model multiplies by: Q4_1 1536x576 (feed-forward) and Q8_0 4096x576 (a
/// slice of the tied 49152x576 output head), one activation row (generation) and eight (a
/// prompt chunk).
fn kernel_vs_portable() {
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};
    let isa = quant::Isa::detect();
    for (dtype, rows, cols, m) in [
        (GgmlDType::Q4_1, 1536, 576, 1),
        (GgmlDType::Q8_0, 4096, 576, 1),
        (GgmlDType::Q4_1, 1536, 576, 8),
    ] {
        let vals: Vec<f32> =
            (0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
        let w = Tensor::from_vec(vals, (rows, cols), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&w, dtype).unwrap();
        let mut ours = quant::QMatrix::with_capacity(dtype, rows, cols).unwrap();
        ours.push_bytes(&q.data().unwrap());
        let x: Vec<f32> = (0..cols * m).map(|i| (i as f32 * 0.37).sin()).collect();
        let mut acts = Vec::new();
        let mut out = vec![0f32; rows * m];
        let iters = 2_000_000 / (rows * m);
        let (mut best_isa, mut best_portable) = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            for (kernels, best) in
                [(isa, &mut best_isa), (quant::Isa::Portable, &mut best_portable)]
            {
                let t = Instant::now();
                for _ in 0..iters {
                    quant::quantize_rows(&x, cols, &mut acts);
                    let product = quant::Product { w: &ours, out_t: &mut out };
                    quant::matmul_t_with(kernels, vec![product], &acts);
                }
                *best = best.min(t.elapsed().as_secs_f64() / iters as f64);
            }
        }
        let gmacs = |s: f64| (rows * cols * m) as f64 / s / 1e9;
        let kind = if matches!(isa, quant::Isa::Portable) { "portable" } else { "AVX2" };
        println!(
            "{dtype:?} {rows}x{cols} x{m} rows: {:>8.1} us {kind} ({:.1} GMAC/s), {:.1} us portable ({:.1} GMAC/s): {:.2}x",
            best_isa * 1e6,
            gmacs(best_isa),
            best_portable * 1e6,
            gmacs(best_portable),
            best_portable / best_isa
        );
    }
}

/// The K-quant and Q5_0 kernels at Qwen2.5-Coder's shapes (1.5B: Q4_K gate/up 8960x1536,
/// Q6_K down 1536x8960, Q5_K 1536x1536; 0.5B: Q5_0 gate/up 4864x896): the run-time selected
/// kernels (AVX2 where the CPU has it), the portable ones and candle's `QMatMul` on the same
/// matrix, interleaved, best of three rounds; one activation row (generation) and 32 (a prompt
/// chunk). GB/s is weight bytes read per second (the bound for generation), GMAC/s
/// multiply-adds per second. Ours includes quantising the activations, as in the model.
fn k_kernels() {
    use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
    use candle_core::{Device, Module, Tensor};
    let isa = quant::Isa::detect();
    let kind = if matches!(isa, quant::Isa::Portable) { "portable" } else { "AVX2" };
    for (dtype, rows, cols) in [
        (GgmlDType::Q4K, 8960, 1536),
        (GgmlDType::Q5K, 1536, 1536),
        (GgmlDType::Q6K, 1536, 8960),
        (GgmlDType::Q5_0, 4864, 896),
    ] {
        let vals: Vec<f32> =
            (0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
        let w = Tensor::from_vec(vals, (rows, cols), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&w, dtype).unwrap();
        let bytes = q.data().unwrap().len();
        let mut ours = quant::QMatrix::with_capacity(dtype, rows, cols).unwrap();
        ours.push_bytes(&q.data().unwrap());
        let candle = QMatMul::from_qtensor(q).unwrap();
        for m in [1, 32] {
            let x: Vec<f32> = (0..cols * m).map(|i| (i as f32 * 0.37).sin()).collect();
            let xt = Tensor::from_slice(&x, (m, cols), &Device::Cpu).unwrap();
            let mut acts = Vec::new();
            let mut out = vec![0f32; rows * m];
            let iters = (200_000_000 / (rows * cols * m)).max(2);
            let mut best = [f64::MAX; 3];
            for _ in 0..3 {
                for (k, kernels) in [isa, quant::Isa::Portable].into_iter().enumerate() {
                    let t = Instant::now();
                    for _ in 0..iters {
                        quant::quantize_rows(&x, cols, &mut acts);
                        let product = quant::Product { w: &ours, out_t: &mut out };
                        quant::matmul_t_with(kernels, vec![product], &acts);
                    }
                    best[k] = best[k].min(t.elapsed().as_secs_f64() / iters as f64);
                }
                let t = Instant::now();
                for _ in 0..iters {
                    std::hint::black_box(candle.forward(&xt).unwrap());
                }
                best[2] = best[2].min(t.elapsed().as_secs_f64() / iters as f64);
            }
            let gbs = |s: f64| bytes as f64 / s / 1e9;
            let gmacs = |s: f64| (rows * cols * m) as f64 / s / 1e9;
            println!(
                "{dtype:?} {rows}x{cols} x{m:<2}: {kind} {:>8.1} us ({:.1} GB/s, {:.1} GMAC/s), portable {:.1} us ({:.1} GMAC/s), candle {:.1} us ({:.1} GMAC/s): {:.2}x candle, {:.2}x portable",
                best[0] * 1e6,
                gbs(best[0]),
                gmacs(best[0]),
                best[1] * 1e6,
                gmacs(best[1]),
                best[2] * 1e6,
                gmacs(best[2]),
                best[2] / best[0],
                best[1] / best[0]
            );
        }
    }
}

/// candle's `quantized_llama` generating greedily on the same file, alternated with ours.
fn candle_generation(gguf: &Path, chat: &LocalChatProvider, ours: &mut Vec<f64>) {
    use candle_core::quantized::gguf_file;
    use candle_core::{Device, Tensor};
    use candle_transformers::models::quantized_llama::ModelWeights;
    let mut file = std::fs::File::open(gguf).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    let mut model = ModelWeights::from_gguf(content, &mut file, &Device::Cpu).unwrap();
    let prompt = chat
        .render_prompt(&request("You are ARIA.", "Write a long story about a robot.", 128))
        .unwrap()
        .tokens;
    let mut candle_rate = Vec::new();
    for i in 0..3 {
        model.clear_kv_cache();
        let input = Tensor::new(prompt.as_slice(), &Device::Cpu).unwrap().unsqueeze(0).unwrap();
        let mut logits = model.forward(&input, 0).unwrap();
        let t = Instant::now();
        let n = 128;
        for step in 0..n {
            let next = logits.squeeze(0).unwrap().argmax(0).unwrap().to_scalar::<u32>().unwrap();
            let input = Tensor::new(&[next], &Device::Cpu).unwrap().unsqueeze(0).unwrap();
            logits = model.forward(&input, prompt.len() + step).unwrap();
        }
        candle_rate.push(n as f64 / t.elapsed().as_secs_f64());
        let (_, stats) = chat
            .generate_blocking(&request(
                &format!("You are ARIA, again {i}."),
                "Write a long story about a robot who learns to paint.",
                128,
            ))
            .unwrap();
        ours.push(stats.generated_tokens as f64 / stats.generation_secs);
    }
    let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    println!(
        "generation, interleaved:     {:>8.1} tokens/s ours, {:.1} candle quantized_llama: {:.2}x",
        best(ours),
        best(&candle_rate),
        best(ours) / best(&candle_rate)
    );
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn request(system: &str, user: &str, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        model: "local".into(),
        messages: vec![Message::system(system), Message::user(user)],
        tools: vec![],
        max_tokens: Some(max_tokens),
        temperature: Some(0.0),
    }
}

fn main() {
    if std::env::var_os("ARIA_BENCH_KERNELS_ONLY").is_some() {
        println!("load average: {}", load_average());
        kernel_vs_candle();
        kernel_vs_portable();
        k_kernels();
        return;
    }
    let dir = models_dir();
    let gguf =
        ModelCatalog::builtin().resolve_chat_model(aria_local::DEFAULT_CHAT_MODEL, &dir).unwrap();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("aria-local bench: {} ({threads} threads)", gguf.display());
    println!("load average: {}", load_average());
    kernel_vs_candle();
    kernel_vs_portable();
    k_kernels();

    let t = Instant::now();
    let chat = LocalChatProvider::load(
        &gguf,
        LocalChatOptions { repeat_penalty: 1.0, ..LocalChatOptions::default() },
    )
    .unwrap();
    println!(
        "chat model load time:        {:>8.3} s (GGUF read + tokenizer: {:.3} s)",
        t.elapsed().as_secs_f64(),
        chat.load_time().as_secs_f64()
    );
    println!("peak RSS after load:         {:>8.1} MB", peak_rss_mb());

    // Warm up (first matmuls allocate and repack).
    chat.generate_blocking(&request("Warm up.", "Hi", 4)).unwrap();

    let long_user = "Summarise the following notes in one sentence. ".repeat(20);
    let mut prompt_rate = Vec::new();
    let mut gen_rate = Vec::new();
    for i in 0..3 {
        // A different system prompt each time, so no cached prefix is reused.
        let system = format!("You are ARIA, run {i}. Answer briefly.");
        let (_, stats) = chat.generate_blocking(&request(&system, &long_user, 1)).unwrap();
        prompt_rate.push((stats.prompt_tokens - stats.reused_tokens) as f64 / stats.prompt_secs);
        let (_, stats) = chat
            .generate_blocking(&request(
                &format!("{system}!"),
                "Write a long story about a robot who learns to paint.",
                128,
            ))
            .unwrap();
        gen_rate.push(stats.generated_tokens as f64 / stats.generation_secs);
    }
    let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let prompt_tps = best(&prompt_rate);
    let gen_tps = best(&gen_rate);
    println!(
        "prompt processing:           {prompt_tps:>8.1} tokens/s (best of 3, ~{} tokens)",
        chat.tokenize(&long_user).unwrap().len()
    );
    println!(
        "generation:                  {gen_tps:>8.1} tokens/s (best of 3, 128 tokens, greedy)"
    );
    println!("peak RSS with chat model:    {:>8.1} MB", peak_rss_mb());
    candle_generation(&gguf, &chat, &mut gen_rate);
    println!("load average: {}", load_average());
    if let Some(bench) = std::env::var_os("LLAMA_BENCH") {
        llama_cpp_interleaved(&PathBuf::from(bench), &gguf, threads, &chat);
    }

    let t = Instant::now();
    let embedder = LocalEmbedder::load(&dir.join(aria_local::DEFAULT_EMBEDDING_MODEL)).unwrap();
    println!("embedder load time:          {:>8.3} s", t.elapsed().as_secs_f64());
    let sentences: Vec<String> = (0..256)
        .map(|i| format!("Sentence number {i} talks about topic {} in a few more words.", i % 17))
        .collect();
    embedder.embed(&sentences[..32]).unwrap();
    let t = Instant::now();
    embedder.embed(&sentences).unwrap();
    let eps = sentences.len() as f64 / t.elapsed().as_secs_f64();
    println!("embedding (batch 32):        {eps:>8.1} sentences/s");
    println!("peak RSS at the end:         {:>8.1} MB", peak_rss_mb());

    if let Some(bench) = std::env::var_os("LLAMA_BENCH") {
        llama_cpp(&PathBuf::from(bench), &gguf, threads, prompt_tps, gen_tps);
    }
}

/// Runs llama.cpp's `llama-bench` on the same file and thread count and prints the ratios.
fn llama_cpp(bench: &Path, gguf: &Path, threads: usize, prompt_tps: f64, gen_tps: f64) {
    let Some(rows) = llama_bench(bench, gguf, threads, 200, 128) else {
        return;
    };
    for (n_prompt, n_gen, ts) in rows {
        if n_prompt != 0 {
            println!(
                "llama.cpp prompt processing: {ts:>8.1} tokens/s -> aria/llama.cpp = {:.2}",
                prompt_tps / ts
            );
        } else if n_gen != 0 {
            println!(
                "llama.cpp generation:        {ts:>8.1} tokens/s -> aria/llama.cpp = {:.2}",
                gen_tps / ts
            );
        }
    }
}

/// Generation only, ours and llama.cpp's alternating three times, best of each: a ratio that
/// machine load (other builds on a 2-core machine) moves much less than separate runs.
fn llama_cpp_interleaved(bench: &Path, gguf: &Path, threads: usize, chat: &LocalChatProvider) {
    let (mut ours, mut theirs) = (0f64, 0f64);
    for i in 0..3 {
        let (_, stats) = chat
            .generate_blocking(&request(
                &format!("You are ARIA, round {i}."),
                "Write a long story about a robot who learns to paint.",
                128,
            ))
            .unwrap();
        ours = ours.max(stats.generated_tokens as f64 / stats.generation_secs);
        let Some(rows) = llama_bench(bench, gguf, threads, 0, 128) else {
            return;
        };
        for (_, _, ts) in rows {
            theirs = theirs.max(ts);
        }
    }
    println!(
        "generation vs llama.cpp, interleaved: {ours:.1} tokens/s ours, {theirs:.1} llama.cpp -> aria/llama.cpp = {:.2} (load {})",
        ours / theirs,
        load_average()
    );
}

/// `(n_prompt, n_gen, tokens/s)` rows of one `llama-bench` run, or `None` (said why).
fn llama_bench(
    bench: &Path,
    gguf: &Path,
    threads: usize,
    n_prompt: usize,
    n_gen: usize,
) -> Option<Vec<(usize, usize, f64)>> {
    let out = Command::new(bench)
        .args(["-m", &gguf.display().to_string(), "-t", &threads.to_string()])
        .args(["-p", &n_prompt.to_string(), "-n", &n_gen.to_string(), "-o", "csv"])
        .output();
    let Ok(out) = out else {
        println!("llama-bench could not run");
        return None;
    };
    let csv = String::from_utf8_lossy(&out.stdout);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |name: &str| header.iter().position(|h| h.trim_matches('"') == name);
    let (Some(p), Some(g), Some(avg)) = (col("n_prompt"), col("n_gen"), col("avg_ts")) else {
        println!("llama-bench printed no CSV: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    };
    let rows = lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').map(|c| c.trim_matches('"')).collect();
            let count = |i: usize| cells.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
            let ts = cells.get(avg).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
            (count(p), count(g), ts)
        })
        .collect();
    Some(rows)
}
