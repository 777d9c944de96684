//! The loaded GGUF chat model: weights, tokenizer, and the KV cache of the last conversation.
//!
//! The KV cache is reused across turns and steps: the tokens whose keys and values are cached
//! are remembered, and a new prompt keeps the longest cached run it starts with (the cache is
//! cut back to it) and only runs the rest through the model. Keys and values of a position
//! depend only on the tokens up to it, so this is exact; another conversation starts from the
//! snapshot taken after the system turn, or from nothing.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file;

use crate::error::LocalError;
use crate::gguf_tokenizer::GgufVocab;
use crate::hparams::Hparams;
use crate::llama::{KvCache, Llama};
use crate::prompt::PromptStyle;
use crate::prompt_cache::PromptCache;

/// Prompt tokens run through the model per forward pass (bounds the attention matrix).
const PROMPT_CHUNK: usize = 256;

/// A chat model in memory.
#[derive(Debug)]
pub struct ChatModel {
    weights: Llama,
    cache: KvCache,
    pub(crate) vocab: GgufVocab,
    /// How prompts for this model are worded.
    pub(crate) style: PromptStyle,
    /// Each token's text when it is whole UTF-8 and not a control token (for constrained
    /// decoding, which works on characters).
    pub(crate) texts: Vec<Option<Box<str>>>,
    /// Tokens whose keys/values are in the cache, in order.
    cached: Vec<u32>,
    context: usize,
    pub(crate) load_time: Duration,
    /// Prompt tokens the last `prepare` could skip thanks to the cache.
    pub(crate) last_reused: usize,
    /// The model state right after the last system turn (the system prompt and tool list are the
    /// same across conversations, so a new conversation starts from here).
    snapshot: Option<(Vec<u32>, KvCache)>,
    /// Where the snapshot is kept between processes, if anywhere; read at most once.
    disk: Option<PromptCache>,
    disk_read: bool,
    /// The model file.
    path: std::path::PathBuf,
}

impl ChatModel {
    /// Loads a GGUF chat model (architecture `llama` or `qwen2`).
    pub fn load(path: &Path) -> Result<Self, LocalError> {
        let start = Instant::now();
        // The first line only: with RUST_BACKTRACE set, candle's errors carry a backtrace
        // on the lines after it.
        let bad = |e: &dyn std::fmt::Display| LocalError::BadModel {
            path: path.to_owned(),
            message: e.to_string().lines().next().unwrap_or_default().to_owned(),
        };
        let file =
            File::open(path).map_err(|e| LocalError::io("could not open the model", path, e))?;
        let mut file = BufReader::with_capacity(1 << 16, file);
        let content = gguf_file::Content::read(&mut file).map_err(|e| bad(&e))?;
        // The shape is checked before the tokenizer is built, so an unsupported architecture
        // is reported as such.
        let arch = Hparams::from_metadata(&content.metadata).map_err(|e| bad(&e))?.arch;
        let template =
            content.metadata.get("tokenizer.chat_template").and_then(|v| v.to_string().ok());
        let style = PromptStyle::detect(arch.prefix(), template.map(String::as_str));
        let vocab = GgufVocab::from_gguf(&content)?;
        let weights = Llama::load(&content, &mut file).map_err(|e| bad(&e))?;
        let context = weights.hparams().context;
        drop(content);
        let cache = weights.new_cache();
        let texts = vocab
            .pieces
            .iter()
            .zip(&vocab.special)
            .map(|(bytes, special)| {
                if *special || bytes.is_empty() {
                    None
                } else {
                    std::str::from_utf8(bytes).ok().map(Box::from)
                }
            })
            .collect();
        Ok(ChatModel {
            weights,
            cache,
            vocab,
            style,
            texts,
            cached: Vec::new(),
            context,
            load_time: start.elapsed(),
            last_reused: 0,
            snapshot: None,
            disk: None,
            disk_read: false,
            path: path.to_owned(),
        })
    }

    /// Keeps the state after the system turn in `dir` too, for the next process that loads
    /// the same model file to start from (see the `prompt_cache` module).
    pub fn keep_prompt_state_in(&mut self, dir: &Path) {
        self.disk = PromptCache::new(dir, &self.path);
        self.disk_read = false;
    }

    /// Tokens the model can attend to.
    pub fn context(&self) -> usize {
        self.context
    }

    /// Runs `prompt` through the model, reusing the cache where it matches, and returns the
    /// logits for the next token. `stable_prefix` tokens (the system turn) are snapshotted so
    /// the next conversation with the same system prompt starts after them.
    pub fn prepare(
        &mut self,
        prompt: &[u32],
        stable_prefix: usize,
    ) -> Result<Vec<f32>, LocalError> {
        if prompt.is_empty() {
            return Err(LocalError::inference("the prompt is empty"));
        }
        if prompt.len() >= self.context {
            return Err(LocalError::ContextFull { tokens: prompt.len(), limit: self.context });
        }
        // Keep the longest cached run of tokens the prompt starts with (at least one prompt
        // token must still run, for the logits): the conversation so far, up to where the
        // re-rendered history first differs from what was generated, or the snapshot after the
        // system turn, whichever is longer.
        let last = prompt.len() - 1;
        let shared = common_prefix(&self.cached, prompt).min(last);
        if self.snapshot.is_none() && !self.disk_read {
            self.disk_read = true;
            let (layers, width) = (self.weights.layer_count(), self.weights.kv_width());
            self.snapshot = self.disk.as_ref().and_then(|d| d.load(layers, width));
        }
        let from_snapshot =
            self.snapshot.as_ref().map_or(0, |(tokens, _)| common_prefix(tokens, prompt).min(last));
        if from_snapshot > shared
            && let Some((tokens, cache)) = &self.snapshot
        {
            self.cache.clone_from(cache);
            self.cached.clone_from(tokens);
            self.cached.truncate(from_snapshot);
            self.cache.truncate(from_snapshot);
        } else if shared == 0 {
            self.reset();
        } else {
            self.cached.truncate(shared);
            self.cache.truncate(shared);
        }
        self.last_reused = self.cached.len();
        let mut logits = Vec::new();
        let stable = stable_prefix.min(prompt.len() - 1);
        if self.cached.len() < stable {
            for chunk in prompt[self.cached.len()..stable].chunks(PROMPT_CHUNK) {
                logits = self.forward(chunk)?;
            }
            if let Some(disk) = &self.disk {
                let (layers, width) = (self.weights.layer_count(), self.weights.kv_width());
                disk.save(&self.cached, &self.cache, layers, width);
            }
            self.snapshot = Some((self.cached.clone(), self.cache.clone()));
        }
        let start = self.cached.len();
        for chunk in prompt[start..].chunks(PROMPT_CHUNK) {
            logits = self.forward(chunk)?;
        }
        Ok(logits)
    }

    /// Runs one generated token through the model; returns the next logits.
    pub fn step(&mut self, token: u32) -> Result<Vec<f32>, LocalError> {
        if self.cached.len() + 1 >= self.context {
            return Err(LocalError::ContextFull {
                tokens: self.cached.len() + 1,
                limit: self.context,
            });
        }
        self.forward(&[token])
    }

    /// Forgets the cached conversation.
    pub fn reset(&mut self) {
        self.cache.clear();
        self.cached.clear();
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>, LocalError> {
        debug_assert_eq!(self.cache.len(), self.cached.len());
        match self.weights.forward(tokens, &mut self.cache) {
            Ok(logits) => {
                self.cached.extend_from_slice(tokens);
                Ok(logits)
            }
            Err(e) => {
                // The cache may hold a half-applied chunk: drop it.
                self.reset();
                Err(LocalError::inference(e))
            }
        }
    }
}

/// How many tokens `a` and `b` share from their start.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
