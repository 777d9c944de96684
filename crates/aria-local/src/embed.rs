//! [`LocalEmbedder`]: a BERT-layout sentence embedder run in-process: the tokenizer from its
//! `tokenizer.json`, our own BERT forward pass ([`crate::bert`]), pooling (the mean over real
//! tokens, or the first token's state), L2 normalisation. Two layouts on disk:
//! - a sentence-transformers directory (`model.safetensors`, `tokenizer.json`, `config.json`;
//!   all-MiniLM-L6-v2), mean pooling;
//! - an embedding model pack (`*.hmsemb`, [`crate::pack`]; granite-embedding-30m-english),
//!   which says how it pools.

use std::ops::Range;
use std::path::Path;
use std::time::{Duration, Instant};

use tokenizers::{Encoding, Tokenizer};

use crate::bert::{Bert, Scratch, Seq};
use crate::error::LocalError;
use crate::pack::{self, Pooling};

/// Texts per forward pass. A batch's tokens are packed without padding, so the size only trades
/// the matrix products' efficiency (more rows) against cache footprint; each worker keeps its
/// own scratch buffers, sized by the largest batch it has run.
pub const EMBED_BATCH: usize = 8;
/// Longest input in tokens; the rest of a longer text is ignored. all-MiniLM-L6-v2's
/// `max_seq_length`, and the cap on a pack's own length: granite-embedding-30m-english takes 512,
/// but on Cranfield (`bench/retrieval`) 256 gave the same hybrid nDCG@10 (0.4345 against 0.4337)
/// and imported 24.9 documents/s against 18.9–22.8.
pub const MAX_TOKENS: usize = 256;
/// Tokens two neighbouring passages of a long text share at least ([`LocalEmbedder::passages`]),
/// so a sentence cut at a border is whole in one of them: a quarter of a 256-token window.
pub const PASSAGE_STRIDE: usize = 64;

/// A sentence embedder held in memory. Not `Clone`: share it in an `Arc`.
pub struct LocalEmbedder {
    model: Bert,
    /// Without truncation: [`LocalEmbedder::passages`] needs every token of a long text, and
    /// [`cut`] keeps the first `max_tokens` of a text to embed.
    tokenizer: Tokenizer,
    max_tokens: usize,
    pooling: Pooling,
    dimensions: usize,
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
    /// Loads the model in `dir`: `model.safetensors`, `tokenizer.json` and `config.json` (the
    /// layout `aria model pull all-minilm-l6-v2` produces), else the one `*.hmsemb` pack there
    /// (`aria model pull granite-embedding-30m-english`).
    pub fn load(dir: &Path) -> Result<Self, LocalError> {
        let start = Instant::now();
        let read = |path: &Path| {
            std::fs::read(path).map_err(|e| {
                LocalError::io("could not read the embedding model file", path.to_owned(), e)
            })
        };
        let (model, tokenizer_json, pooling, max_tokens) = match find_pack(dir)? {
            Some(path) => {
                let pack = pack::read(&path, &read(&path)?)?;
                (pack.model, pack.tokenizer_json, pack.pooling, pack.max_tokens)
            }
            None => {
                let model = Bert::load(
                    dir,
                    &read(&dir.join("config.json"))?,
                    &read(&dir.join("model.safetensors"))?,
                )?;
                (model, read(&dir.join("tokenizer.json"))?, Pooling::Mean, MAX_TOKENS)
            }
        };
        let mut tokenizer = Tokenizer::from_bytes(tokenizer_json).map_err(LocalError::tokenizer)?;
        // No padding here: `embed_with` pads each batch itself, after sorting by length.
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(LocalError::tokenizer)?;
        Ok(LocalEmbedder {
            dimensions: model.hidden_size(),
            model,
            tokenizer,
            max_tokens,
            pooling,
            load_time: start.elapsed(),
        })
    }

    /// Length of every vector (384 for all-MiniLM-L6-v2 and granite-embedding-30m-english).
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    /// Where `text` is cut into passages of at most the model's input length
    /// ([`aria_api::Embedder::passages`]): as few equal windows of its tokens as cover it
    /// ([`aria_api::even_windows`]), neighbours sharing at least [`PASSAGE_STRIDE`] tokens,
    /// as byte ranges narrowed to whole words, the first [`aria_api::MAX_PASSAGES`] of them.
    /// A text that fits is one passage, `0..text.len()`.
    #[expect(clippy::single_range_in_vec_init, reason = "one passage: the whole text")]
    pub fn passages(&self, text: &str) -> Result<Vec<Range<usize>>, LocalError> {
        let encoding = self.tokenizer.encode(text, true).map_err(LocalError::tokenizer)?;
        let offsets = encoding.get_offsets();
        let mask = encoding.get_special_tokens_mask();
        let words: Vec<(usize, usize)> = (0..offsets.len())
            .filter(|&i| mask[i] == 0 && offsets[i].1 > offsets[i].0)
            .map(|i| offsets[i])
            .collect();
        let room = self.max_tokens.saturating_sub(offsets.len() - words.len()).max(1);
        if encoding.get_ids().len() <= self.max_tokens || words.len() <= room {
            return Ok(vec![0..text.len()]);
        }
        // A few tokens short of the room: a passage tokenized on its own can take a token or
        // two more than inside the text (its first word loses the space before it).
        let width = room.saturating_sub(4).max(1);
        let overlap = PASSAGE_STRIDE.min(width / 4);
        Ok(aria_api::even_windows(words.len(), width, overlap)
            .into_iter()
            .take(aria_api::MAX_PASSAGES)
            .map(|(first, last)| {
                let start = if first == 0 { 0 } else { words[first].0 };
                let end = if last + 1 == words.len() { text.len() } else { words[last].1 };
                whole_words(text, start, end)
            })
            .collect())
    }

    /// One unit-length vector per text, in order, with [`EmbedPlan::default`]. Blocking and
    /// CPU-bound.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalError> {
        self.embed_with(texts, EmbedPlan::default())
    }

    /// One unit-length vector per text, in order. Every text is tokenized once; texts are then
    /// sorted by token count and cut into batches of `plan.batch` (similar lengths per batch
    /// keep the workers' loads even), and `plan.workers` threads run those batches' forward
    /// passes side by side, each on its own thread with its own scratch buffers. A text's
    /// vector does not depend on the plan. Blocking.
    pub fn embed_with(
        &self,
        texts: &[String],
        plan: EmbedPlan,
    ) -> Result<Vec<Vec<f32>>, LocalError> {
        let encodings: Vec<Tokens> = self
            .tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(LocalError::tokenizer)?
            .iter()
            .map(|e| cut(e, self.max_tokens))
            .collect();
        let order = length_order(&encodings);
        let batches: Vec<&[usize]> = order.chunks(plan.batch.max(1)).collect();
        let mut out = vec![Vec::new(); texts.len()];
        let workers = plan.workers.clamp(1, batches.len().max(1));
        if workers == 1 {
            let mut buffers = Scratch::default();
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
                        let mut buffers = Scratch::default();
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
                        Err(LocalError::inference("an embedding worker panicked"))
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

    /// One forward pass over the texts `batch` indexes, then each text's pooled state (the mean
    /// over its tokens, or its first token's), L2-normalised.
    fn forward(
        &self,
        encodings: &[Tokens],
        batch: &[usize],
        scratch: &mut Scratch,
    ) -> Result<Vec<Vec<f32>>, LocalError> {
        let seqs: Vec<Seq<'_>> = batch
            .iter()
            .map(|&i| Seq { ids: &encodings[i].ids, type_ids: &encodings[i].type_ids })
            .collect();
        let hidden = self.model.forward(&seqs, scratch)?;
        let h = self.dimensions;
        let mut rows = hidden.chunks_exact(h);
        let mut out = Vec::with_capacity(seqs.len());
        for seq in &seqs {
            let mut pooled = vec![0.0f32; h];
            let mut states = rows.by_ref().take(seq.ids.len());
            match self.pooling {
                Pooling::Mean => {
                    for row in states {
                        for (m, &v) in pooled.iter_mut().zip(row) {
                            *m += v;
                        }
                    }
                    let count = (seq.ids.len() as f32).max(1e-9);
                    pooled.iter_mut().for_each(|m| *m /= count);
                }
                Pooling::Cls => {
                    if let Some(first) = states.next() {
                        pooled.copy_from_slice(first);
                    }
                    // The text's other rows are passed over all the same.
                    states.for_each(drop);
                }
            }
            let norm = pooled.iter().map(|m| m * m).sum::<f32>().sqrt().max(1e-12);
            pooled.iter_mut().for_each(|m| *m /= norm);
            out.push(pooled);
        }
        Ok(out)
    }
}

/// The vector length of the embedding model in `dir`, read from its `config.json` or its pack's
/// header without loading the weights.
pub fn embedding_dims(dir: &Path) -> Result<usize, LocalError> {
    let dims = match find_pack(dir)? {
        Some(path) => pack::read_dims(&path)?,
        None => {
            #[derive(serde::Deserialize)]
            struct Config {
                hidden_size: usize,
            }
            let path = dir.join("config.json");
            let bytes = std::fs::read(&path).map_err(|e| {
                LocalError::io("could not read the embedding model file", path.clone(), e)
            })?;
            let config: Config = serde_json::from_slice(&bytes)
                .map_err(|e| LocalError::BadModel { path: path.clone(), message: e.to_string() })?;
            config.hidden_size
        }
    };
    if dims == 0 {
        return Err(LocalError::BadModel {
            path: dir.to_owned(),
            message: "the model's vectors have 0 dimensions".into(),
        });
    }
    Ok(dims)
}

/// The one `*.hmsemb` pack in `dir`, when there is no `model.safetensors` beside it; two packs
/// are an error (which one is meant is unclear).
fn find_pack(dir: &Path) -> Result<Option<std::path::PathBuf>, LocalError> {
    if dir.join("model.safetensors").exists() {
        return Ok(None);
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        // Missing directory: the safetensors path reports which file is missing.
        Err(_) => return Ok(None),
    };
    let mut packs: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "hmsemb"))
        .collect();
    match packs.len() {
        0 | 1 => Ok(packs.pop()),
        _ => Err(LocalError::BadModel {
            path: dir.to_owned(),
            message: format!(
                "{} model packs (*.hmsemb) in one directory; keep the one the model is",
                packs.len()
            ),
        }),
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
    /// [`EMBED_BATCH`] texts per pass, one worker per core: a forward pass runs on its
    /// worker's thread alone, so the cores work on different batches and never wait on each
    /// other.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        EmbedPlan { batch: EMBED_BATCH, workers: cores }
    }
}

/// A text's index and its vector.
type Slotted = (usize, Vec<f32>);

/// `start..end` narrowed to the whole words in it (a word cut at either end is left to the
/// neighbouring passage, which overlaps this one), on character boundaries and within `text`;
/// as it is when that leaves nothing (one very long word).
fn whole_words(text: &str, start: usize, end: usize) -> Range<usize> {
    let bytes = text.as_bytes();
    let (start, end) = (start.min(text.len()), end.min(text.len()));
    let is_space = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_whitespace);
    let mut a = start;
    if a > 0 && !is_space(a - 1) {
        while a < end && !is_space(a) {
            a += 1;
        }
    }
    let mut b = end;
    if b < text.len() && !is_space(b) {
        while b > a && !is_space(b - 1) {
            b -= 1;
        }
    }
    if a < b {
        return a..b;
    }
    let (mut a, mut b) = (start, end);
    while !text.is_char_boundary(a) {
        a -= 1;
    }
    while !text.is_char_boundary(b) {
        b += 1;
    }
    a..b
}

/// A text's token ids and type ids, as the model reads them.
struct Tokens {
    ids: Vec<u32>,
    type_ids: Vec<u32>,
}

/// The first `max` tokens of an encoding, its closing special tokens kept: what truncating a
/// text's words to fit, then adding the special tokens, gives (`[CLS] words… [SEP]` for BERT,
/// `<s> words… </s>` for RoBERTa).
fn cut(encoding: &Encoding, max: usize) -> Tokens {
    let (ids, type_ids) = (encoding.get_ids(), encoding.get_type_ids());
    if ids.len() <= max {
        return Tokens { ids: ids.to_vec(), type_ids: type_ids.to_vec() };
    }
    let closing =
        encoding.get_special_tokens_mask().iter().rev().take_while(|&&m| m == 1).count().min(max);
    let keep = max - closing;
    let tail = ids.len() - closing;
    Tokens {
        ids: [&ids[..keep], &ids[tail..]].concat(),
        type_ids: [&type_ids[..keep], &type_ids[tail..]].concat(),
    }
}

/// Text indices ordered by token count (stable: equal lengths keep their order).
fn length_order(encodings: &[Tokens]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..encodings.len()).collect();
    order.sort_by_key(|&i| encodings[i].ids.len());
    order
}

/// Cosine similarity of two vectors (the embedder contract's own).
pub use aria_api::cosine;

#[cfg(test)]
mod tests {
    #[test]
    fn a_window_keeps_only_the_whole_words_in_it() {
        let text = "alpha beta gamma délta";
        let cut = |a: usize, b: usize| &text[super::whole_words(text, a, b)];
        assert_eq!(cut(0, text.len()), text);
        assert_eq!(cut(2, 14), " beta ", "alpha and gamma are cut");
        assert_eq!(cut(2, 16), " beta gamma", "gamma ends there: whole");
        assert_eq!(cut(6, 10), "beta");
        assert_eq!(cut(5, 11), " beta ", "spaces at the ends stay");
        assert_eq!(cut(11, 23), "gamma délta", "to the end of the text");
        assert_eq!(cut(18, 20), "é", "inside one word: as it is");
        assert_eq!(cut(19, 21), "él", "on character boundaries");
        assert_eq!(cut(30, 40), "", "beyond the text: nothing");
    }
}
