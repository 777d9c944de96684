//! The llama forward pass on plain `f32` buffers, over the quantised kernels of [`crate::quant`].
//!
//! Adapted from candle-transformers 0.11.1 `models/quantized_llama.rs` (MIT OR Apache-2.0,
//! Copyright the candle authors), itself a port of llama.cpp's llama graph. What changed: the
//! weights and the per-layer key/value cache are plain vectors instead of candle tensors, the
//! matrix products are this crate's (candle has no SIMD kernel for Q4_1), the token embedding
//! stays quantised (rows are dequantised on lookup instead of holding a 113 MB f32 copy), and
//! the cache is appended in place (candle concatenates the whole cache on every token). Only
//! the llama architecture (interleaved RoPE, no mixture of experts) is supported, as before.
//! Weight formats without a kernel here run through candle's own `QMatMul`.

use std::io::{Read, Seek, SeekFrom};

use candle_core::quantized::{QMatMul, gguf_file};
use candle_core::{Device, Module, Tensor};

use crate::quant::{self, ActBlock, Product, QMatrix};

/// Longest sequence the RoPE table covers (as candle's `quantized_llama::MAX_SEQ_LEN`).
pub(crate) const MAX_SEQ_LEN: usize = 4096;

/// Bytes read from the file at a time while filling a quantised matrix.
const READ_CHUNK: usize = 1 << 20;

/// A weight matrix: one of ours, or candle's for formats without a kernel here.
#[derive(Debug)]
enum Linear {
    Quant(QMatrix),
    Candle { inner: QMatMul, rows: usize, cols: usize },
}

impl Linear {
    fn rows(&self) -> usize {
        match self {
            Linear::Quant(w) => w.rows(),
            Linear::Candle { rows, .. } => *rows,
        }
    }

    fn cols(&self) -> usize {
        match self {
            Linear::Quant(w) => w.cols(),
            Linear::Candle { cols, .. } => *cols,
        }
    }
}

#[derive(Debug)]
struct Layer {
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    gate: Linear,
    up: Linear,
    down: Linear,
    attn_norm: Vec<f32>,
    ffn_norm: Vec<f32>,
}

#[derive(Debug)]
enum Embedding {
    Quant(QMatrix),
    F32(Vec<f32>),
}

/// The model's weights; immutable once loaded, so one copy serves every conversation.
#[derive(Debug)]
pub(crate) struct Llama {
    embed: Embedding,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    output: Linear,
    n_embd: usize,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    eps: f32,
    /// `(cos, sin)` of position × frequency, `MAX_SEQ_LEN × head_dim / 2` each.
    rope: (Vec<f32>, Vec<f32>),
}

/// Keys and values of the positions seen so far, per layer, `[position][kv_head × head_dim]`.
#[derive(Debug, Clone, Default)]
pub(crate) struct KvCache {
    len: usize,
    layers: Vec<(Vec<f32>, Vec<f32>)>,
}

impl KvCache {
    /// Positions cached.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
        for (k, v) in &mut self.layers {
            k.clear();
            v.clear();
        }
    }
}

type LoadResult<T> = Result<T, String>;

struct Loader<'a, R> {
    content: &'a gguf_file::Content,
    reader: &'a mut R,
    buf: Vec<u8>,
}

impl<R: Read + Seek> Loader<'_, R> {
    fn info(&self, name: &str) -> LoadResult<&gguf_file::TensorInfo> {
        self.content.tensor_infos.get(name).ok_or_else(|| format!("the tensor `{name}` is missing"))
    }

    fn has(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// A 2-D weight, `(rows, cols)` as candle orders GGUF dimensions.
    fn matrix(&mut self, name: &str) -> LoadResult<Linear> {
        let info = self.info(name)?;
        let (dtype, offset) = (info.ggml_dtype, info.offset);
        let (rows, cols) = match info.shape.dims() {
            [rows, cols] => (*rows, *cols),
            other => return Err(format!("`{name}` has shape {other:?}, expected a matrix")),
        };
        match QMatrix::with_capacity(dtype, rows, cols) {
            Some(mut w) if quant::supported(dtype) => {
                let total = quant::byte_len(dtype, rows, cols);
                let start = self.content.tensor_data_offset.saturating_add(offset);
                self.reader
                    .seek(SeekFrom::Start(start))
                    .map_err(|e| format!("reading `{name}`: {e}"))?;
                let chunk = READ_CHUNK / w.block_bytes() * w.block_bytes();
                let mut done = 0;
                while done < total {
                    let n = chunk.min(total - done);
                    self.buf.resize(n, 0);
                    self.reader
                        .read_exact(&mut self.buf)
                        .map_err(|e| format!("reading `{name}`: {e}"))?;
                    w.push_bytes(&self.buf);
                    done += n;
                }
                if !w.is_complete() {
                    return Err(format!("`{name}` is truncated"));
                }
                Ok(Linear::Quant(w))
            }
            _ => {
                let q = self
                    .content
                    .tensor(self.reader, name, &Device::Cpu)
                    .map_err(|e| format!("reading `{name}`: {e}"))?;
                let inner = QMatMul::from_qtensor(q).map_err(|e| e.to_string())?;
                Ok(Linear::Candle { inner, rows, cols })
            }
        }
    }

    fn vector(&mut self, name: &str) -> LoadResult<Vec<f32>> {
        self.content
            .tensor(self.reader, name, &Device::Cpu)
            .and_then(|q| q.dequantize(&Device::Cpu))
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| format!("reading `{name}`: {e}"))
    }
}

impl Llama {
    /// Loads a llama-architecture model from an opened GGUF file.
    pub(crate) fn load<R: Read + Seek>(
        content: &gguf_file::Content,
        reader: &mut R,
    ) -> LoadResult<Self> {
        let md = |key: &str| {
            content.metadata.get(key).ok_or_else(|| format!("the metadata `{key}` is missing"))
        };
        let md_u32 = |key: &str| -> LoadResult<usize> {
            md(key)?.to_u32().map(|v| v as usize).map_err(|e| format!("`{key}`: {e}"))
        };
        let n_head = md_u32("llama.attention.head_count")?;
        let n_kv_head = md_u32("llama.attention.head_count_kv")?;
        let n_layer = md_u32("llama.block_count")?;
        let n_embd = md_u32("llama.embedding_length")?;
        let rope_dim = md_u32("llama.rope.dimension_count")?;
        let eps = md("llama.attention.layer_norm_rms_epsilon")?
            .to_f32()
            .map_err(|e| format!("the RMS norm epsilon: {e}"))?;
        let freq_base =
            md("llama.rope.freq_base").and_then(|v| v.to_f32().map_err(|e| e.to_string()));
        let freq_base = freq_base.unwrap_or(10000.0);
        if n_head == 0 || n_kv_head == 0 || !n_head.is_multiple_of(n_kv_head) {
            return Err(format!(
                "{n_head} attention heads cannot share {n_kv_head} key/value heads"
            ));
        }
        if md_u32("llama.expert_count").unwrap_or(0) > 1 {
            return Err("mixture-of-experts models are not supported".into());
        }
        let head_dim = n_embd / n_head;
        if head_dim * n_head != n_embd || rope_dim != head_dim || !head_dim.is_multiple_of(2) {
            return Err(format!(
                "unsupported shape: {n_embd} wide, {n_head} heads, rotary dimension {rope_dim}"
            ));
        }

        let mut l = Loader { content, reader, buf: Vec::new() };
        let embed = match l.matrix("token_embd.weight")? {
            Linear::Quant(w) => Embedding::Quant(w),
            Linear::Candle { .. } => {
                let t = l.vector("token_embd.weight")?;
                Embedding::F32(t)
            }
        };
        let output = if l.has("output.weight") {
            l.matrix("output.weight")?
        } else {
            match &embed {
                Embedding::Quant(w) => Linear::Quant(w.clone()),
                Embedding::F32(_) => l.matrix("token_embd.weight")?,
            }
        };
        let norm = l.vector("output_norm.weight")?;
        let mut layers = Vec::with_capacity(n_layer);
        for i in 0..n_layer {
            let p = |s: &str| format!("blk.{i}.{s}.weight");
            layers.push(Layer {
                wq: l.matrix(&p("attn_q"))?,
                wk: l.matrix(&p("attn_k"))?,
                wv: l.matrix(&p("attn_v"))?,
                wo: l.matrix(&p("attn_output"))?,
                gate: l.matrix(&p("ffn_gate"))?,
                up: l.matrix(&p("ffn_up"))?,
                down: l.matrix(&p("ffn_down"))?,
                attn_norm: l.vector(&p("attn_norm"))?,
                ffn_norm: l.vector(&p("ffn_norm"))?,
            });
        }
        let kv = n_kv_head * head_dim;
        for (i, layer) in layers.iter().enumerate() {
            let shapes = [
                (&layer.wq, n_embd, n_embd),
                (&layer.wk, kv, n_embd),
                (&layer.wv, kv, n_embd),
                (&layer.wo, n_embd, n_embd),
                (&layer.gate, layer.gate.rows(), n_embd),
                (&layer.up, layer.gate.rows(), n_embd),
                (&layer.down, n_embd, layer.gate.rows()),
            ];
            for (w, rows, cols) in shapes {
                if w.rows() != rows || w.cols() != cols {
                    return Err(format!(
                        "layer {i} has a {}×{} weight where {rows}×{cols} belongs",
                        w.rows(),
                        w.cols()
                    ));
                }
            }
            if layer.attn_norm.len() != n_embd || layer.ffn_norm.len() != n_embd {
                return Err(format!("layer {i} has norms of the wrong size"));
            }
        }
        if output.cols() != n_embd || norm.len() != n_embd {
            return Err("the output layer does not match the model width".into());
        }
        Ok(Llama {
            embed,
            layers,
            norm,
            output,
            n_embd,
            n_head,
            n_kv_head,
            head_dim,
            eps,
            rope: rope_table(head_dim, freq_base),
        })
    }

    /// An empty cache for this model.
    pub(crate) fn new_cache(&self) -> KvCache {
        KvCache { len: 0, layers: vec![(Vec::new(), Vec::new()); self.layers.len()] }
    }

    /// Runs `tokens` (at positions `cache.len()..`) through the model, appends their keys and
    /// values to `cache`, and returns the logits after the last one.
    pub(crate) fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<f32>, String> {
        let m = tokens.len();
        let e = self.n_embd;
        let pos0 = cache.len;
        if m == 0 {
            return Err("no tokens to run".into());
        }
        if pos0 + m > MAX_SEQ_LEN {
            return Err(format!("position {} is past the model's {MAX_SEQ_LEN}", pos0 + m));
        }
        if cache.layers.len() != self.layers.len() {
            *cache = self.new_cache();
        }
        let mut x = vec![0f32; m * e];
        for (row, &t) in x.chunks_exact_mut(e).zip(tokens) {
            self.embed_row(t as usize, row)?;
        }
        let mut s = Scratch::default();
        for (layer, (k_cache, v_cache)) in self.layers.iter().zip(&mut cache.layers) {
            // Attention block.
            rms_norm_rows(&x, &layer.attn_norm, self.eps, &mut s.xn);
            let kv = self.n_kv_head * self.head_dim;
            self.project(
                &mut [(&layer.wq, &mut s.q), (&layer.wk, &mut s.k), (&layer.wv, &mut s.v)],
                &s.xn,
                m,
                &mut s.acts,
                &mut s.out_t,
            )?;
            self.apply_rope(&mut s.q, self.n_head, pos0);
            self.apply_rope(&mut s.k, self.n_kv_head, pos0);
            k_cache.truncate(pos0 * kv);
            v_cache.truncate(pos0 * kv);
            k_cache.extend_from_slice(&s.k);
            v_cache.extend_from_slice(&s.v);
            s.att.resize(m * e, 0.0);
            self.attention(&s.q, k_cache, v_cache, pos0, &mut s.att);
            self.project(&mut [(&layer.wo, &mut s.o)], &s.att, m, &mut s.acts, &mut s.out_t)?;
            add_into(&mut x, &s.o);

            // Feed-forward block.
            rms_norm_rows(&x, &layer.ffn_norm, self.eps, &mut s.xn);
            self.project(
                &mut [(&layer.gate, &mut s.g), (&layer.up, &mut s.u)],
                &s.xn,
                m,
                &mut s.acts,
                &mut s.out_t,
            )?;
            for (g, u) in s.g.iter_mut().zip(&s.u) {
                *g = silu(*g) * u;
            }
            self.project(&mut [(&layer.down, &mut s.o)], &s.g, m, &mut s.acts, &mut s.out_t)?;
            add_into(&mut x, &s.o);
        }
        cache.len = pos0 + m;
        let last = &x[(m - 1) * e..];
        rms_norm_rows(last, &self.norm, self.eps, &mut s.xn);
        let mut logits = vec![0f32; self.output.rows()];
        self.project(&mut [(&self.output, &mut logits)], &s.xn, 1, &mut s.acts, &mut s.out_t)?;
        Ok(logits)
    }

    fn embed_row(&self, token: usize, row: &mut [f32]) -> Result<(), String> {
        let e = self.n_embd;
        match &self.embed {
            Embedding::Quant(w) if token < w.rows() => w.dequantize_row(token, row),
            Embedding::F32(v) if (token + 1) * e <= v.len() => {
                row.copy_from_slice(&v[token * e..(token + 1) * e]);
            }
            _ => return Err(format!("token {token} is outside the vocabulary")),
        }
        Ok(())
    }

    /// `outs[j] = x · W_jᵀ` for `m` rows of `x`, the quantised ones fused into one parallel
    /// job; outputs row-major `[m][rows_j]`.
    fn project(
        &self,
        outs: &mut [(&Linear, &mut Vec<f32>)],
        x: &[f32],
        m: usize,
        acts: &mut Vec<ActBlock>,
        out_t: &mut Vec<f32>,
    ) -> Result<(), String> {
        let cols = outs.first().map_or(0, |(w, _)| w.cols());
        let quantised: Vec<&QMatrix> = outs
            .iter()
            .filter_map(|(w, _)| match w {
                Linear::Quant(q) => Some(q),
                Linear::Candle { .. } => None,
            })
            .collect();
        if !quantised.is_empty() {
            quant::quantize_rows(x, cols, acts);
            let total: usize = quantised.iter().map(|w| w.rows() * m).sum();
            out_t.resize(total, 0.0);
            let mut rest = out_t.as_mut_slice();
            let mut products = Vec::with_capacity(quantised.len());
            for w in &quantised {
                let (mine, tail) = rest.split_at_mut(w.rows() * m);
                products.push(Product { w, out_t: mine });
                rest = tail;
            }
            quant::matmul_t(products, acts);
        }
        let mut offset = 0;
        for (w, out) in outs.iter_mut() {
            out.resize(w.rows() * m, 0.0);
            match w {
                Linear::Quant(q) => {
                    let n = q.rows() * m;
                    quant::transpose_into(&out_t[offset..offset + n], q.rows(), m, out);
                    offset += n;
                }
                Linear::Candle { inner, rows, .. } => {
                    let y = Tensor::from_slice(x, (m, cols), &Device::Cpu)
                        .and_then(|t| inner.forward(&t))
                        .and_then(|t| t.flatten_all())
                        .and_then(|t| t.to_vec1::<f32>())
                        .map_err(|e| e.to_string())?;
                    if y.len() != rows * m {
                        return Err("a weight produced the wrong number of outputs".into());
                    }
                    out.copy_from_slice(&y);
                }
            }
        }
        Ok(())
    }

    /// Rotates each head of each row (interleaved pairs, llama's convention).
    fn apply_rope(&self, x: &mut [f32], heads: usize, pos0: usize) {
        let half = self.head_dim / 2;
        let (cos, sin) = &self.rope;
        for (i, row) in x.chunks_exact_mut(heads * self.head_dim).enumerate() {
            let at = (pos0 + i) * half;
            let (c, s) = (&cos[at..at + half], &sin[at..at + half]);
            for head in row.chunks_exact_mut(self.head_dim) {
                for (j, pair) in head.chunks_exact_mut(2).enumerate() {
                    let (x0, x1) = (pair[0], pair[1]);
                    pair[0] = x0 * c[j] - x1 * s[j];
                    pair[1] = x0 * s[j] + x1 * c[j];
                }
            }
        }
    }

    /// Causal attention of the `m` new queries over all cached positions; writes `[m][e]`.
    fn attention(&self, q: &[f32], k: &[f32], v: &[f32], pos0: usize, out: &mut [f32]) {
        let e = self.n_embd;
        let m = q.len() / e;
        let work = m * (pos0 + m) * e;
        let one = |i: usize, out: &mut [f32]| {
            let mut scores = Vec::with_capacity(pos0 + i + 1);
            self.attend(&q[i * e..(i + 1) * e], k, v, pos0 + i + 1, &mut scores, out);
        };
        if m == 1 || work < 1 << 20 {
            for (i, row) in out.chunks_exact_mut(e).enumerate() {
                one(i, row);
            }
            return;
        }
        let rows: Vec<std::sync::Mutex<&mut [f32]>> =
            out.chunks_exact_mut(e).map(std::sync::Mutex::new).collect();
        candle_core::utils::barrier_pool().execute_chunked(m, |range| {
            for i in range {
                let mut row = rows[i].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                one(i, &mut row);
            }
        });
    }

    /// One query row (all heads) over the first `n` cached positions.
    fn attend(
        &self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        n: usize,
        scores: &mut Vec<f32>,
        out: &mut [f32],
    ) {
        let d = self.head_dim;
        let kv = self.n_kv_head * d;
        let group = self.n_head / self.n_kv_head;
        let scale = 1.0 / (d as f32).sqrt();
        for (h, (qh, oh)) in q.chunks_exact(d).zip(out.chunks_exact_mut(d)).enumerate() {
            let off = (h / group) * d;
            scores.clear();
            scores.extend(k.chunks_exact(kv).take(n).map(|kr| dot(qh, &kr[off..off + d]) * scale));
            let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0f32;
            for s in scores.iter_mut() {
                *s = (*s - max).exp();
                sum += *s;
            }
            oh.fill(0.0);
            for (w, vr) in scores.iter().zip(v.chunks_exact(kv)) {
                let w = w / sum;
                for (o, x) in oh.iter_mut().zip(&vr[off..off + d]) {
                    *o += w * x;
                }
            }
        }
    }
}

/// Working buffers of one forward pass, reused across layers.
#[derive(Default)]
struct Scratch {
    xn: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    att: Vec<f32>,
    o: Vec<f32>,
    g: Vec<f32>,
    u: Vec<f32>,
    acts: Vec<ActBlock>,
    out_t: Vec<f32>,
}

fn rope_table(head_dim: usize, freq_base: f32) -> (Vec<f32>, Vec<f32>) {
    let theta: Vec<f32> = (0..head_dim)
        .step_by(2)
        .map(|i| 1f32 / freq_base.powf(i as f32 / head_dim as f32))
        .collect();
    let mut cos = Vec::with_capacity(MAX_SEQ_LEN * theta.len());
    let mut sin = Vec::with_capacity(MAX_SEQ_LEN * theta.len());
    for pos in 0..MAX_SEQ_LEN {
        for t in &theta {
            let a = pos as f32 * t;
            cos.push(a.cos());
            sin.push(a.sin());
        }
    }
    (cos, sin)
}

/// `out[row] = x[row] / rms(x[row]) * w` for each row of `x`, rounded as ggml's `rms_norm`
/// (the sum of squares in f64, then one scale factor).
fn rms_norm_rows(x: &[f32], w: &[f32], eps: f32, out: &mut Vec<f32>) {
    out.resize(x.len(), 0.0);
    let n = w.len();
    for (xr, or) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        let sum2: f32 = xr.iter().map(|v| v * v).sum();
        let rms = (sum2 / n as f32 + eps).sqrt();
        for ((o, v), w) in or.iter_mut().zip(xr).zip(w) {
            *o = v / rms * w;
        }
    }
}

fn add_into(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for l in 0..8 {
            acc[l] = x[l].mul_add(y[l], acc[l]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
#[path = "llama_tests.rs"]
mod tests;
