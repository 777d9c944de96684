//! [`LocalEmbedder`]: all-MiniLM-L6-v2 (or any BERT sentence-transformer with the same layout)
//! run in-process: WordPiece tokenizer from `tokenizer.json`, candle's BERT, mean pooling over
//! real tokens, L2 normalisation.

use std::path::Path;
use std::time::{Duration, Instant};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::error::LocalError;

/// Texts per forward pass.
pub const EMBED_BATCH: usize = 32;
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
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
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

    /// One unit-length vector per text, in order. Texts are batched by similar length, up to
    /// [`EMBED_BATCH`] per forward pass. Blocking and CPU-bound.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for batch in order.chunks(EMBED_BATCH) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
            for (slot, vector) in batch.iter().zip(self.embed_batch(&inputs)?) {
                out[*slot] = vector;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, LocalError> {
        let encodings =
            self.tokenizer.encode_batch(texts.to_vec(), true).map_err(LocalError::tokenizer)?;
        let rows = encodings.len();
        let cols = encodings.first().map_or(0, |e| e.get_ids().len());
        let flat = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings.iter().flat_map(|e| f(e).iter().copied()).collect()
        };
        let tensor = |data: Vec<u32>| Tensor::from_vec(data, (rows, cols), &self.device);
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = tensor(flat(&|e| e.get_ids()))?;
            let type_ids = tensor(flat(&|e| e.get_type_ids()))?;
            let mask = tensor(flat(&|e| e.get_attention_mask()))?;
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

/// Cosine similarity of two vectors (the embedder contract's own).
pub use aria_api::cosine;
