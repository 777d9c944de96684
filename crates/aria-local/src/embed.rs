//! [`LocalEmbedder`]: all-MiniLM-L6-v2 (or any BERT sentence-transformer with the same layout)
//! run in-process: WordPiece tokenizer from `tokenizer.json`, candle's BERT, mean pooling over
//! real tokens, L2 normalisation.

use std::path::Path;
use std::time::{Duration, Instant};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Tokenizer, TruncationParams};

use crate::error::LocalError;

/// Texts per forward pass. Small on purpose: a pass's largest tensor, the attention scores
/// (batch × 12 heads × 256² floats), stays at 25 MB, under the size above which the C allocator
/// maps fresh pages from the kernel for every tensor (and faults them in again) instead of
/// reusing freed memory; with two passes at once (see [`EmbedPlan`]) both cores stay busy.
pub const EMBED_BATCH: usize = 8;
/// Longest input in tokens (sentence-transformers' `max_seq_length` for this model); the rest
/// of a longer text is ignored.
pub const MAX_TOKENS: usize = 256;

/// A sentence embedder held in memory. Not `Clone`: share it in an `Arc`.
pub struct LocalEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    dimensions: usize,
    device: Device,
    load_time: Duration,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

impl LocalEmbedder {
    /// Loads `model.safetensors`, `tokenizer.json` and `config.json` from `dir` (the layout
    /// `aria model pull all-minilm-l6-v2` produces).
    pub fn load(dir: &Path) -> Result<Self, LocalError> {
        let start = Instant::now();
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path)
                .map_err(|e| LocalError::io("could not read the embedding model file", path, e))
        };
        let bad = |e: &dyn std::fmt::Display| LocalError::BadModel {
            path: dir.to_owned(),
            message: e.to_string(),
        };
        let config: Config = serde_json::from_slice(&read("config.json")?).map_err(|e| bad(&e))?;
        let mut tokenizer =
            Tokenizer::from_bytes(read("tokenizer.json")?).map_err(LocalError::tokenizer)?;
        // No padding here: `embed_with` pads each batch itself, after sorting by length.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(LocalError::tokenizer)?;
        let device = Device::Cpu;
        let vb =
            VarBuilder::from_buffered_safetensors(read("model.safetensors")?, DType::F32, &device)
                .map_err(|e| bad(&e))?;
        let model = BertModel::load(vb, &config).map_err(|e| bad(&e))?;
        Ok(LocalEmbedder {
            model,
            tokenizer,
            dimensions: config.hidden_size,
            device,
            load_time: start.elapsed(),
        })
    }

    /// Length of every vector (384 for all-MiniLM-L6-v2).
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    /// One unit-length vector per text, in order, with [`EmbedPlan::default`]. Blocking and
    /// CPU-bound.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalError> {
        self.embed_with(texts, EmbedPlan::default())
    }

    /// One unit-length vector per text, in order. Every text is tokenized once; texts are then
    /// sorted by token count and cut into batches of `plan.batch`, so a batch pads to a length
    /// close to each of its texts' (padding is wasted work: attention is quadratic in it), and
    /// `plan.workers` threads run those batches' forward passes side by side. Blocking.
    pub fn embed_with(
        &self,
        texts: &[String],
        plan: EmbedPlan,
    ) -> Result<Vec<Vec<f32>>, LocalError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(LocalError::tokenizer)?;
        let order = length_order(&encodings);
        let batches: Vec<&[usize]> = order.chunks(plan.batch.max(1)).collect();
        let mut out = vec![Vec::new(); texts.len()];
        let workers = plan.workers.clamp(1, batches.len().max(1));
        if workers == 1 {
            let mut buffers = Buffers::default();
            for batch in &batches {
                for (&slot, vector) in
                    batch.iter().zip(self.forward(&encodings, batch, &mut buffers)?)
                {
                    out[slot] = vector;
                }
            }
            return Ok(out);
        }
        // Workers take the next batch from a shared counter (long batches cost more, so a fixed
        // split would leave one thread idle at the end) and return (slot, vector) pairs.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<Result<Vec<Slotted>, LocalError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut buffers = Buffers::default();
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(batch) = batches.get(i) else { return Ok(done) };
                            let vectors = self.forward(&encodings, batch, &mut buffers)?;
                            done.extend(batch.iter().copied().zip(vectors));
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(LocalError::inference(candle_core::Error::Msg(
                            "an embedding worker panicked".into(),
                        )))
                    })
                })
                .collect()
        });
        for result in results {
            for (slot, vector) in result? {
                out[slot] = vector;
            }
        }
        Ok(out)
    }

    /// One forward pass over the texts `batch` indexes, padded to the longest of them.
    fn forward(
        &self,
        encodings: &[tokenizers::Encoding],
        batch: &[usize],
        buffers: &mut Buffers,
    ) -> Result<Vec<Vec<f32>>, LocalError> {
        let rows = batch.len();
        let cols = batch.iter().map(|&i| encodings[i].get_ids().len()).max().unwrap_or(0).max(1);
        buffers.fill(encodings, batch, cols);
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let tensor = |data: &[u32]| Tensor::from_slice(data, (rows, cols), &self.device);
            let ids = tensor(&buffers.ids)?;
            let type_ids = tensor(&buffers.type_ids)?;
            let mask = tensor(&buffers.mask)?;
            let hidden = self.model.forward(&ids, &type_ids, Some(&mask))?;
            // Mean over real tokens: sum(hidden * mask) / sum(mask).
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
            let mean = summed.broadcast_div(&counts)?;
            let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12f32, f32::MAX)?;
            mean.broadcast_div(&norms)?.to_vec2::<f32>()
        };
        run().map_err(LocalError::inference)
    }
}

/// How [`LocalEmbedder::embed_with`] schedules its forward passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbedPlan {
    /// Texts per forward pass.
    pub batch: usize,
    /// Forward passes running at once, each on its own thread.
    pub workers: usize,
}

impl Default for EmbedPlan {
    /// [`EMBED_BATCH`] texts per pass, one worker per core: much of a forward pass (layer
    /// norms, GELU, softmax, the additions) runs on the calling thread alone, so one pass at a
    /// time leaves the other cores idle for that part.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        EmbedPlan { batch: EMBED_BATCH, workers: cores }
    }
}

/// A text's index and its vector.
type Slotted = (usize, Vec<f32>);

/// Text indices ordered by token count (stable: equal lengths keep their order).
fn length_order(encodings: &[tokenizers::Encoding]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..encodings.len()).collect();
    order.sort_by_key(|&i| encodings[i].get_ids().len());
    order
}

/// A worker's input buffers, refilled for every batch instead of allocated anew.
#[derive(Default)]
struct Buffers {
    ids: Vec<u32>,
    type_ids: Vec<u32>,
    mask: Vec<u32>,
}

impl Buffers {
    /// The batch's ids, type ids and attention mask, each row padded with zeros to `cols`.
    fn fill(&mut self, encodings: &[tokenizers::Encoding], batch: &[usize], cols: usize) {
        for v in [&mut self.ids, &mut self.type_ids, &mut self.mask] {
            v.clear();
        }
        for &i in batch {
            let e = &encodings[i];
            let pad = cols - e.get_ids().len();
            self.ids.extend(e.get_ids().iter().copied().chain(std::iter::repeat_n(0, pad)));
            self.type_ids
                .extend(e.get_type_ids().iter().copied().chain(std::iter::repeat_n(0, pad)));
            self.mask
                .extend(e.get_attention_mask().iter().copied().chain(std::iter::repeat_n(0, pad)));
        }
    }
}

/// Cosine similarity of two vectors (the embedder contract's own).
pub use aria_api::cosine;
