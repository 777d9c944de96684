//! Trains the injection classifier (`src/guard/injection_model.rs`) and writes its weights to
//! `src/guard/injection_model.bin`, which the crate compiles in.
//!
//! ```text
//! cargo run -p aria-tools --release --example train_injection
//! ```
//!
//! Deterministic: a fixed seed, no threads, so the same `train.jsonl` gives the same file.
//!
//! - Every fifth training row (by a hash of its position) is set aside as a validation slice;
//!   the rest trains.
//! - A row is a document, labelled as a whole; the model scores sentences ([`windows`]). So
//!   training is multiple-instance: every window of a benign document is a negative; for an
//!   injection, the first round takes all its windows as positives, and later rounds only the
//!   window the model finds most suspicious (the injected sentence, not the email around it),
//!   and benign windows the previous round scored above `HARD` count three times.
//! - Logistic regression by SGD with class balancing and L2 decay.
//! - The threshold is the lowest probability at which at most 1.5 % of the validation slice's
//!   benign documents, and at most 3 % of any kind of them (kinds with 50 or more), would be flagged by the classifier.
//!
//! The held-out split (`tests/data/injection/heldout.jsonl`) is never read here.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::BTreeMap;

use aria_tools::guard::injection_model::{Features, Model, windows};

const SEED: u64 = 0x5eed_1a7e_2026;
const ROUNDS: usize = 4;
const EPOCHS: usize = 12;
const L2: f32 = 1e-6;
/// A benign window scoring above this is a hard negative in the next round.
const HARD: f32 = 0.3;

struct Doc {
    label: bool,
    kind: String,
    /// Feature indices of each window.
    windows: Vec<Vec<u32>>,
}

/// xorshift64*: a tiny deterministic generator for shuffling.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

fn load(path: &str) -> Vec<Doc> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut feats = Features::default();
    text.lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).expect("a JSON row");
            let t = row["text"].as_str().expect("text");
            let windows = windows(t)
                .map(|(s, e)| {
                    feats.extract(&t[s..e]);
                    feats.idx.clone()
                })
                .collect();
            Doc {
                label: row["label"] == "injection",
                kind: row["kind"].as_str().unwrap_or("?").to_owned(),
                windows,
            }
        })
        .collect()
}

fn score(m: &Model, idx: &[u32]) -> f32 {
    m.score_indices(idx)
}

fn doc_score(m: &Model, d: &Doc) -> f32 {
    d.windows.iter().map(|w| score(m, w)).fold(0.0, f32::max)
}

fn train(docs: &[&Doc], rng: &mut Rng) -> Model {
    let mut m = Model::zeros();
    for round in 0..ROUNDS {
        let mut examples: Vec<(&[u32], bool)> = Vec::new();
        for d in docs {
            if !d.label {
                for w in &d.windows {
                    // Hard negatives (benign sentences the last round found suspicious) count
                    // three times: one of them is enough to flag a whole long page.
                    let times = if round > 0 && score(&m, w) > HARD { 3 } else { 1 };
                    examples.extend(std::iter::repeat_n((w.as_slice(), false), times));
                }
            } else if round == 0 {
                examples.extend(d.windows.iter().map(|w| (w.as_slice(), true)));
            } else if let Some(best) =
                d.windows.iter().max_by(|a, b| score(&m, a).total_cmp(&score(&m, b)))
            {
                examples.push((best.as_slice(), true));
            }
        }
        let pos = examples.iter().filter(|e| e.1).count().max(1) as f32;
        let neg = examples.iter().filter(|e| !e.1).count().max(1) as f32;
        let (wpos, wneg) = (0.5 * (pos + neg) / pos, 0.5 * (pos + neg) / neg);
        m = Model::zeros();
        let mut step = 0usize;
        for epoch in 0..EPOCHS {
            rng.shuffle(&mut examples);
            let lr = 0.5 / (1.0 + epoch as f32);
            for &(idx, y) in &examples {
                step += 1;
                if idx.is_empty() {
                    continue;
                }
                let p = score(&m, idx);
                let target = if y { 1.0 } else { 0.0 };
                let g = (p - target) * if y { wpos } else { wneg };
                let scale = 1.0 / (idx.len() as f32).sqrt();
                for &i in idx {
                    let w = &mut m.weights[i as usize];
                    *w -= lr * (g * scale + L2 * *w);
                }
                m.bias -= lr * g * 0.1;
            }
        }
        println!("round {round}: {} examples ({pos} positive), {step} steps", examples.len());
    }
    m
}

fn pick_threshold(m: &Model, val: &[&Doc]) -> f32 {
    let benign: Vec<(&str, f32)> =
        val.iter().filter(|d| !d.label).map(|d| (d.kind.as_str(), doc_score(m, d))).collect();
    let mut candidates: Vec<f32> = benign.iter().map(|b| b.1).collect();
    candidates.push(0.5);
    candidates.sort_by(f32::total_cmp);
    for &c in &candidates {
        let t = (c + 1e-4).min(0.999);
        let mut per: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (k, s) in &benign {
            let e = per.entry(k).or_default();
            e.0 += usize::from(*s >= t);
            e.1 += 1;
        }
        let all: usize = per.values().map(|v| v.0).sum();
        let ok_all = all as f32 <= 0.015 * benign.len() as f32;
        let ok_each = per.values().all(|(f, n)| *n < 50 || *f as f32 <= 0.03 * *n as f32);
        if ok_all && ok_each && t >= 0.5 {
            return t;
        }
    }
    0.999
}

fn main() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/injection");
    let docs = load(&format!("{dir}/train.jsonl"));
    let mut rng = Rng(SEED);
    let (mut fit, mut val) = (Vec::new(), Vec::new());
    for (i, d) in docs.iter().enumerate() {
        let h = Rng(SEED ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)).next();
        if h.is_multiple_of(5) { val.push(d) } else { fit.push(d) }
    }
    println!("{} documents: {} to fit, {} to validate", docs.len(), fit.len(), val.len());
    let mut model = train(&fit, &mut rng);
    model.threshold = pick_threshold(&model, &val);
    let caught = val.iter().filter(|d| d.label && doc_score(&model, d) >= model.threshold).count();
    let pos = val.iter().filter(|d| d.label).count();
    let fa = val.iter().filter(|d| !d.label && doc_score(&model, d) >= model.threshold).count();
    println!(
        "threshold {:.4}; validation (classifier alone): {caught}/{pos} injections, {fa}/{} benign flagged",
        model.threshold,
        val.len() - pos
    );
    let out = concat!(env!("CARGO_MANIFEST_DIR"), "/src/guard/injection_model.bin");
    std::fs::write(out, model.to_bytes()).expect("write the weights");
    println!("wrote {out}");
}
