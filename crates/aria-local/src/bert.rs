//! A BERT encoder forward pass for sentence embedders (all-MiniLM-L6-v2 and any model with the
//! same layout: absolute positions, exact erf GELU, post-layer-norm), written for throughput on
//! a few cores rather than generality.
//!
//! Three choices make it faster than a general tensor library's BERT:
//! - **No padding.** A batch's real tokens are packed into one `tokens × hidden` matrix for the
//!   linear layers, and attention runs per sequence over that sequence's own tokens. A softmax
//!   over real tokens only equals the masked softmax, so the result of a text does not depend on
//!   the texts batched with it (up to the order of float additions inside the matrix product).
//! - **One thread per forward pass.** Matrix products run on the calling thread with our own
//!   kernel ([`matmul`]: packed panels, a 6 × 16 AVX2/FMA tile through `pulp`'s safe
//!   intrinsics, a portable tile elsewhere); the caller runs several passes side by side (see
//!   `EmbedPlan`), so no thread waits on another. (The `gemm` crate candle uses would do the
//!   same work, but its only entry point is an `unsafe fn`, and the workspace forbids
//!   `unsafe`.)
//! - **Scratch reused.** Every intermediate lives in a [`Scratch`] the caller keeps across
//!   batches: no allocation, no freshly mapped pages per layer.
//! - **int8 weights stay int8.** A model that ships its linear weights as int8 codes with
//!   scales (a pack) keeps them so, a quarter of the memory, decoded a panel at a time into the
//!   floats they stand for (`bert/product.rs`): the same results, and a short text's pass reads
//!   a quarter of the bytes.
//!
//! Bias, GELU, residual and layer norm are fused into single passes over the rows; `exp` and
//! `erf` are branch-free polynomial versions (see [`exp_approx`], [`erf_approx`]) so those loops
//! vectorise.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::error::LocalError;
use crate::quant::Isa;

mod product;
use product::{Packed, PackedI8, Rhs, Work, matmul};

/// The `config.json` fields the forward pass needs.
#[derive(Debug, Clone, Deserialize)]
struct Config {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    hidden_act: String,
    max_position_embeddings: usize,
    type_vocab_size: usize,
    layer_norm_eps: f64,
    #[serde(default)]
    position_embedding_type: Option<String>,
}

/// A linear layer, its weight (`outputs × inputs` in the file) packed as the `inputs × outputs`
/// right operand of [`matmul`].
struct Linear {
    weight: Weight,
    bias: Vec<f32>,
}

/// A linear layer's weight: F32, or int8 codes with scales as the model ships them (a quarter of
/// the memory, and a quarter of the bytes a short text's pass reads; decoded panel by panel into
/// the same F32 values).
enum Weight {
    F32(Packed),
    Int8(PackedI8),
}

impl Weight {
    fn rhs(&self) -> Rhs<'_> {
        match self {
            Weight::F32(p) => Rhs::F32(p),
            Weight::Int8(p) => Rhs::Int8(p),
        }
    }
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value side by side: one product gives all three (`tokens × 3·hidden`).
    qkv: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

/// BERT encoder weights, loaded once and shared by every worker (read-only).
pub(crate) struct Bert {
    isa: Isa,
    hidden: usize,
    heads: usize,
    intermediate: usize,
    vocab: usize,
    types: usize,
    max_positions: usize,
    /// Position of a text's first token in the position table (RoBERTa-style models start at
    /// 2, after the padding index).
    position_offset: usize,
    eps: f32,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
}

/// A tensor by its BERT name and expected shape, as F32 values (see [`Bert::assemble`]).
pub(crate) type TensorSource<'a> = &'a dyn Fn(&str, &[usize]) -> Result<Vec<f32>, LocalError>;

/// A linear weight by its BERT name and expected shape (`outputs × inputs`) as the int8 codes
/// and scales it is stored as, or `None` when it is stored otherwise (see [`Bert::assemble`]).
pub(crate) type Int8Source<'a> =
    &'a dyn Fn(&str, &[usize]) -> Result<Option<Int8Matrix>, LocalError>;

/// A row-major `outputs × inputs` matrix of int8 codes with one scale per `group` consecutive
/// values of a row (value = code × scale): `scales[(row · inputs + col) / group]`.
pub(crate) struct Int8Matrix {
    pub codes: Vec<i8>,
    pub scales: Vec<f32>,
    pub group: usize,
}

/// The shape of a BERT-layout encoder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    pub vocab: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub types: usize,
    pub eps: f32,
    pub position_offset: usize,
}

/// One text's token ids and token type ids (equal lengths).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seq<'a> {
    pub ids: &'a [u32],
    pub type_ids: &'a [u32],
}

/// A worker's intermediate buffers; they grow to the largest batch seen and are then reused.
#[derive(Default)]
pub(crate) struct Scratch {
    /// Hidden states, `tokens × hidden`: the output of a pass.
    x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    sum: Vec<f32>,
    up: Vec<f32>,
    scores: Vec<f32>,
    work: Work,
    /// A head's keys (transposed) and values, packed as right operands.
    keys: Packed,
    values: Packed,
}

/// Resizes `v` to `n` without shrinking its allocation (contents are overwritten by the caller).
fn sized(v: &mut Vec<f32>, n: usize) -> &mut [f32] {
    v.resize(n, 0.0);
    &mut v[..n]
}

impl Bert {
    /// Reads the model from `config.json`'s bytes and `model.safetensors`' bytes; `dir` names
    /// the model in errors. Tensors may be stored as F32, F16 or BF16 (computed in F32), with or
    /// without a `bert.` prefix; a missing tensor or a shape that does not match the config is a
    /// [`LocalError::BadModel`].
    pub(crate) fn load(dir: &Path, config: &[u8], weights: &[u8]) -> Result<Self, LocalError> {
        let bad = |message: String| LocalError::BadModel { path: dir.to_owned(), message };
        let c: Config =
            serde_json::from_slice(config).map_err(|e| bad(format!("config.json: {e}")))?;
        if c.hidden_act != "gelu" {
            return Err(bad(format!(
                "hidden_act {:?} is not supported (only \"gelu\")",
                c.hidden_act
            )));
        }
        if c.position_embedding_type.as_deref().is_some_and(|p| p != "absolute") {
            return Err(bad(format!(
                "position_embedding_type {:?} is not supported (only \"absolute\")",
                c.position_embedding_type
            )));
        }
        let st = SafeTensors::deserialize(weights)
            .map_err(|e| bad(format!("model.safetensors: {e}")))?;
        let prefix = if st.tensor("embeddings.word_embeddings.weight").is_err()
            && st.tensor("bert.embeddings.word_embeddings.weight").is_ok()
        {
            "bert."
        } else {
            ""
        };
        let get = |name: &str, shape: &[usize]| -> Result<Vec<f32>, LocalError> {
            let full = format!("{prefix}{name}");
            let view = st.tensor(&full).map_err(|e| bad(format!("tensor {full}: {e}")))?;
            if view.shape() != shape {
                return Err(bad(format!(
                    "tensor {full} has shape {:?}, the config implies {shape:?}",
                    view.shape()
                )));
            }
            to_f32(view.dtype(), view.data()).ok_or_else(|| {
                bad(format!(
                    "tensor {full} has dtype {:?} (expected F32, F16 or BF16)",
                    view.dtype()
                ))
            })
        };
        let dims = Dims {
            vocab: c.vocab_size,
            hidden: c.hidden_size,
            layers: c.num_hidden_layers,
            heads: c.num_attention_heads,
            intermediate: c.intermediate_size,
            max_positions: c.max_position_embeddings,
            types: c.type_vocab_size,
            eps: c.layer_norm_eps as f32,
            position_offset: 0,
        };
        Self::assemble(dir, dims, &get, None)
    }

    /// Builds the model from `get`, which returns a tensor by its BERT name
    /// (`embeddings.word_embeddings.weight`, `encoder.layer.0.attention.self.query.weight`, …)
    /// as F32 values of the given shape (PyTorch layout: a linear weight is `outputs × inputs`),
    /// or the error that says why it cannot. `dir` names the model in errors. A linear weight
    /// that `int8` has as codes and scales (a group that divides a row) is kept that way.
    pub(crate) fn assemble(
        dir: &Path,
        dims: Dims,
        get: TensorSource<'_>,
        int8: Option<Int8Source<'_>>,
    ) -> Result<Self, LocalError> {
        if dims.heads == 0 || !dims.hidden.is_multiple_of(dims.heads) {
            return Err(LocalError::BadModel {
                path: dir.to_owned(),
                message: format!(
                    "hidden_size {} is not a multiple of num_attention_heads {}",
                    dims.hidden, dims.heads
                ),
            });
        }
        if dims.position_offset >= dims.max_positions {
            return Err(LocalError::BadModel {
                path: dir.to_owned(),
                message: format!(
                    "the position offset {} leaves none of the {} positions",
                    dims.position_offset, dims.max_positions
                ),
            });
        }
        let (h, i) = (dims.hidden, dims.intermediate);
        let norm = |name: &str| -> Result<Norm, LocalError> {
            Ok(Norm {
                weight: get(&format!("{name}.weight"), &[h])?,
                bias: get(&format!("{name}.bias"), &[h])?,
            })
        };
        let linear =
            |names: &[&str], inputs: usize, outputs: usize| -> Result<Linear, LocalError> {
                // Stored as outputs × inputs (PyTorch); the parts' outputs side by side.
                let mut bias = Vec::with_capacity(outputs * names.len());
                for name in names {
                    bias.extend(get(&format!("{name}.bias"), &[outputs])?);
                }
                let shape = [outputs, inputs];
                let mut coded = Vec::with_capacity(names.len());
                if let Some(int8) = int8 {
                    for name in names {
                        match int8(&format!("{name}.weight"), &shape)? {
                            Some(m) if m.group > 0 && inputs.is_multiple_of(m.group) => {
                                coded.push(m);
                            }
                            _ => break,
                        }
                    }
                }
                let columns = outputs * names.len();
                let weight = if coded.len() == names.len()
                    && coded.iter().all(|m| m.group == coded[0].group)
                {
                    Weight::Int8(PackedI8::new(inputs, columns, coded[0].group, |k, o| {
                        let (m, at) = (&coded[o / outputs], (o % outputs) * inputs + k);
                        (m.codes[at], m.scales[at / m.group])
                    }))
                } else {
                    let mut parts = Vec::with_capacity(names.len());
                    for name in names {
                        parts.push(get(&format!("{name}.weight"), &shape)?);
                    }
                    Weight::F32(Packed::new(inputs, columns, |k, o| {
                        parts[o / outputs][(o % outputs) * inputs + k]
                    }))
                };
                Ok(Linear { weight, bias })
            };
        let layers = (0..dims.layers)
            .map(|l| {
                let p = format!("encoder.layer.{l}");
                let a = format!("{p}.attention");
                Ok(Layer {
                    qkv: linear(
                        &[
                            &format!("{a}.self.query"),
                            &format!("{a}.self.key"),
                            &format!("{a}.self.value"),
                        ],
                        h,
                        h,
                    )?,
                    attn_out: linear(&[&format!("{a}.output.dense")], h, h)?,
                    attn_norm: norm(&format!("{a}.output.LayerNorm"))?,
                    up: linear(&[&format!("{p}.intermediate.dense")], h, i)?,
                    down: linear(&[&format!("{p}.output.dense")], i, h)?,
                    out_norm: norm(&format!("{p}.output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>, LocalError>>()?;
        Ok(Bert {
            isa: Isa::detect(),
            hidden: h,
            heads: dims.heads,
            intermediate: i,
            vocab: dims.vocab,
            types: dims.types,
            max_positions: dims.max_positions,
            position_offset: dims.position_offset,
            eps: dims.eps,
            word: get("embeddings.word_embeddings.weight", &[dims.vocab, h])?,
            position: get("embeddings.position_embeddings.weight", &[dims.max_positions, h])?,
            token_type: get("embeddings.token_type_embeddings.weight", &[dims.types, h])?,
            emb_norm: norm("embeddings.LayerNorm")?,
            layers,
        })
    }

    /// How many linear layers keep their weights as int8 codes.
    #[cfg(test)]
    pub(crate) fn int8_linears(&self) -> usize {
        let layers = self.layers.iter();
        layers
            .flat_map(|l| [&l.qkv, &l.attn_out, &l.up, &l.down])
            .filter(|l| matches!(l.weight, Weight::Int8(_)))
            .count()
    }

    /// Width of a hidden state.
    pub(crate) fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// The last layer's hidden states of every token of `seqs`, packed in order
    /// (`Σ len × hidden`, row-major), computed in `scratch`. An id outside the vocabulary or a
    /// sequence longer than the position table is an error.
    pub(crate) fn forward<'s>(
        &self,
        seqs: &[Seq<'_>],
        scratch: &'s mut Scratch,
    ) -> Result<&'s [f32], LocalError> {
        let h = self.hidden;
        let tokens: usize = seqs.iter().map(|s| s.ids.len()).sum();
        self.embed_tokens(seqs, sized(&mut scratch.x, tokens * h))?;
        for layer in &self.layers {
            self.layer(layer, seqs, tokens, scratch);
        }
        Ok(&scratch.x[..tokens * h])
    }

    /// Word + token type + position embeddings, layer-normed, into `x`.
    fn embed_tokens(&self, seqs: &[Seq<'_>], x: &mut [f32]) -> Result<(), LocalError> {
        let h = self.hidden;
        let mut rows = x.chunks_exact_mut(h);
        for seq in seqs {
            let positions = self.max_positions.saturating_sub(self.position_offset);
            if seq.ids.len() > positions || seq.type_ids.len() != seq.ids.len() {
                return Err(LocalError::inference(format!(
                    "a text of {} tokens does not fit the model's {positions} positions",
                    seq.ids.len(),
                )));
            }
            for (pos, (&id, &ty)) in seq.ids.iter().zip(seq.type_ids).enumerate() {
                let (id, ty) = (id as usize, ty as usize);
                if id >= self.vocab || ty >= self.types {
                    return Err(LocalError::inference(format!(
                        "token id {id} (type {ty}) is outside the model's vocabulary"
                    )));
                }
                let Some(row) = rows.next() else { break };
                let word = &self.word[id * h..(id + 1) * h];
                let ty = &self.token_type[ty * h..(ty + 1) * h];
                let pos = pos + self.position_offset;
                let position = &self.position[pos * h..(pos + 1) * h];
                for (((r, &w), &t), &p) in row.iter_mut().zip(word).zip(ty).zip(position) {
                    *r = (w + t) + p;
                }
                layer_norm(row, &self.emb_norm, self.eps);
            }
        }
        Ok(())
    }

    /// One encoder layer, `scratch.x` in and out.
    fn layer(&self, layer: &Layer, seqs: &[Seq<'_>], tokens: usize, scratch: &mut Scratch) {
        let (h, i) = (self.hidden, self.intermediate);
        let x = &mut scratch.x[..tokens * h];
        let qkv = sized(&mut scratch.qkv, tokens * 3 * h);
        self.linear(x, &layer.qkv, qkv, false, &mut scratch.work);
        add_bias(qkv, &layer.qkv.bias);
        let ctx = sized(&mut scratch.ctx, tokens * h);
        let mut start = 0;
        for seq in seqs {
            let len = seq.ids.len();
            let rows = &qkv[start * 3 * h..];
            self.attention(
                rows,
                len,
                &mut ctx[start * h..],
                AttentionScratch {
                    scores: &mut scratch.scores,
                    work: &mut scratch.work,
                    keys: &mut scratch.keys,
                    values: &mut scratch.values,
                },
            );
            start += len;
        }
        // sum = x + bias + ctx·W, then x = norm(sum): bias and residual in the same pass.
        let sum = sized(&mut scratch.sum, tokens * h);
        residual_with_bias(sum, x, &layer.attn_out.bias);
        self.linear(ctx, &layer.attn_out, sum, true, &mut scratch.work);
        for (out, row) in x.chunks_exact_mut(h).zip(sum.chunks_exact(h)) {
            out.copy_from_slice(row);
            layer_norm(out, &layer.attn_norm, self.eps);
        }
        let up = sized(&mut scratch.up, tokens * i);
        self.linear(x, &layer.up, up, false, &mut scratch.work);
        for row in up.chunks_exact_mut(i) {
            for (v, &b) in row.iter_mut().zip(&layer.up.bias) {
                *v = gelu(*v + b);
            }
        }
        residual_with_bias(sum, x, &layer.down.bias);
        self.linear(up, &layer.down, sum, true, &mut scratch.work);
        for (out, row) in x.chunks_exact_mut(h).zip(sum.chunks_exact(h)) {
            out.copy_from_slice(row);
            layer_norm(out, &layer.out_norm, self.eps);
        }
    }

    /// Self-attention of one sequence of `len` tokens whose rows start `qkv` (`3·hidden` wide:
    /// queries, keys, values), every head, into the first `len` rows of `ctx` (`hidden` wide).
    fn attention(&self, qkv: &[f32], len: usize, ctx: &mut [f32], s: AttentionScratch<'_>) {
        if len == 0 {
            return;
        }
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let scores = sized(s.scores, len * len);
        for head in 0..self.heads {
            let (q, k, v) = (head * d, h + head * d, 2 * h + head * d);
            // scores = q·kᵀ / √d (keys transposed: d × len), softmax per row, then · values.
            s.keys.pack(d, len, |i, t| qkv[t * 3 * h + k + i]);
            s.values.pack(len, d, |t, i| qkv[t * 3 * h + v + i]);
            let keys = Rhs::F32(s.keys);
            matmul(self.isa, scores, len, len, &qkv[q..], 3 * h, keys, false, scale, s.work);
            for row in scores.chunks_exact_mut(len) {
                softmax(row);
            }
            let out = &mut ctx[head * d..];
            let values = Rhs::F32(s.values);
            matmul(self.isa, out, h, len, scores, len, values, false, 1.0, s.work);
        }
    }

    /// `out (+)= x·W` for the rows of `x`.
    fn linear(&self, x: &[f32], w: &Linear, out: &mut [f32], accumulate: bool, work: &mut Work) {
        let rhs = w.weight.rhs();
        let rows = x.len() / rhs.k();
        matmul(self.isa, out, rhs.n(), rows, x, rhs.k(), rhs, accumulate, 1.0, work);
    }
}

/// The parts of [`Scratch`] attention uses (the rest is borrowed by the layer meanwhile).
struct AttentionScratch<'a> {
    scores: &'a mut Vec<f32>,
    work: &'a mut Work,
    keys: &'a mut Packed,
    values: &'a mut Packed,
}

/// Decodes little-endian F32, F16 or BF16 tensor bytes to F32.
fn to_f32(dtype: Dtype, data: &[u8]) -> Option<Vec<f32>> {
    match dtype {
        Dtype::F32 => Some(
            data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
        ),
        Dtype::F16 => Some(
            data.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()).collect(),
        ),
        Dtype::BF16 => Some(
            data.chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
        ),
        _ => None,
    }
}

fn add_bias(rows: &mut [f32], bias: &[f32]) {
    for row in rows.chunks_exact_mut(bias.len()) {
        for (v, &b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
}

/// `sum = x + bias` row by row.
fn residual_with_bias(sum: &mut [f32], x: &[f32], bias: &[f32]) {
    for (s, xr) in sum.chunks_exact_mut(bias.len()).zip(x.chunks_exact(bias.len())) {
        for ((s, &x), &b) in s.iter_mut().zip(xr).zip(bias) {
            *s = x + b;
        }
    }
}

/// In-place layer norm of one row: `(x − mean) / √(var + eps) · weight + bias`.
fn layer_norm(row: &mut [f32], norm: &Norm, eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, &w), &b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
        *v = (*v - mean) * inv * w + b;
    }
}

/// In-place softmax of one row, shifted by its maximum so `exp` never overflows.
fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = exp_approx(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// Exact (erf) GELU: `x/2 · (1 + erf(x/√2))`.
#[inline(always)]
pub(crate) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf_approx(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// `erf(x)` for f32 as a rational function of `x` (the approximation Eigen and XLA use for
/// single precision), evaluated in f64: absolute error under 1e-7 over the whole line (in f32
/// arithmetic it reaches 4.5e-7 near |x| = 4), no branches, so loops over it vectorise. Beyond
/// ±4, erf is ±1 in f32.
#[inline(always)]
pub(crate) fn erf_approx(x: f32) -> f32 {
    let x = f64::from(x).clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2.mul_add(-2.726_142_258_013_06e-10, 2.770_681_424_959_02e-8);
    p = x2.mul_add(p, -2.101_024_020_825_08e-6);
    p = x2.mul_add(p, -5.692_506_394_623_46e-5);
    p = x2.mul_add(p, -7.349_906_303_268_55e-4);
    p = x2.mul_add(p, -2.954_599_808_540_25e-3);
    p = x2.mul_add(p, -1.609_603_332_624_15e-2);
    let mut q = x2.mul_add(-1.456_607_184_649_96e-5, -2.133_740_552_789_05e-4);
    q = x2.mul_add(q, -1.682_826_974_382_03e-3);
    q = x2.mul_add(q, -7.373_329_167_204_68e-3);
    q = x2.mul_add(q, -1.426_473_905_141_89e-2);
    (x * p / q) as f32
}

/// `exp(x)` for f32 in the softmax's range (`x ≤ 0`; anything below −87 gives 0): Cephes'
/// range reduction `x = n·ln2 + r` with a degree-6 polynomial for `e^r`, scaled by `2^n`
/// through the exponent bits. Relative error about 2e-7, no branches.
#[inline(always)]
pub(crate) fn exp_approx(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E).round();
    // ln 2 split in two so `x − n·ln2` stays exact for |n| up to 128.
    let r = n.mul_add(-0.693_359_4, x);
    let r = n.mul_add(2.121_944_4e-4, r);
    let mut p = r.mul_add(1.987_569_1e-4, 1.398_199_9e-3);
    p = r.mul_add(p, 8.333_452e-3);
    p = r.mul_add(p, 4.166_579_6e-2);
    p = r.mul_add(p, 1.666_666_5e-1);
    p = r.mul_add(p, 0.5);
    let e = (r * r).mul_add(p, r) + 1.0;
    // 2^n for n in -126..=127 as exponent bits.
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    e * scale
}

#[cfg(test)]
mod tests;
