//! The llama forward pass on plain `f32` buffers, over the quantised kernels of [`crate::quant`].
//!
//! Adapted from candle-transformers 0.11.1 `models/quantized_llama.rs` (MIT OR Apache-2.0,
//! Copyright the candle authors), itself a port of llama.cpp's llama graph. What changed: the
//! weights and the per-layer key/value cache are plain vectors instead of candle tensors, the
//! matrix products are this crate's (candle has no SIMD kernel for Q4_1), the token embedding
//! stays quantised (rows are dequantised on lookup instead of holding a 113 MB f32 copy), and
//! the cache is appended in place (candle concatenates the whole cache on every token), so it
//! holds the positions actually used and nothing more.
//! Two architectures run through it ([`crate::hparams`]): `llama` (interleaved RoPE) and `qwen2`
//! (NeoX RoPE, biases on the query/key/value projections, usually a tied output layer); no
//! mixture of experts. Weight formats without a kernel here run through candle's own `QMatMul`.

use std::io::{Read, Seek, SeekFrom};

use candle_core::quantized::{QMatMul, gguf_file};
use candle_core::{Device, Module, Tensor};

use crate::hparams::{Hparams, MAX_CONTEXT};
use crate::quant::{self, ActBlock, ActBlockK, Product, QMatrix};
use crate::rope::{Angles, Rope};

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
    /// Biases added after the query, key and value projections (qwen2).
    bq: Option<Vec<f32>>,
    bk: Option<Vec<f32>>,
    bv: Option<Vec<f32>>,
}

/// The token embedding: rows are dequantised as tokens are looked up.
#[derive(Debug)]
enum Embedding {
    Quant(QMatrix),
    /// A format without a kernel here (see `quant::supported`): candle looks rows up in place.
    Candle {
        inner: QMatMul,
        rows: usize,
        cols: usize,
    },
}

/// The model's weights; immutable once loaded, so one copy serves every conversation.
#[derive(Debug)]
pub(crate) struct Llama {
    embed: Embedding,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    output: Linear,
    hp: Hparams,
    n_embd: usize,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    eps: f32,
    rope: Rope,
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

    /// Forgets every position from `len` on (the buffers are cut when the next tokens run).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The cached keys and values per layer, `len` positions of `width` values each.
    pub(crate) fn layers(&self, width: usize) -> impl Iterator<Item = (&[f32], &[f32])> {
        let n = self.len * width;
        self.layers.iter().map(move |(k, v)| (&k[..n], &v[..n]))
    }

    /// A cache of `len` positions from keys and values per layer (each `len × width` long).
    pub(crate) fn from_layers(len: usize, layers: Vec<(Vec<f32>, Vec<f32>)>) -> Self {
        KvCache { len, layers }
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
    /// Loads a `llama` or `qwen2` model from an opened GGUF file.
    pub(crate) fn load<R: Read + Seek>(
        content: &gguf_file::Content,
        reader: &mut R,
    ) -> LoadResult<Self> {
        let hp = Hparams::from_metadata(&content.metadata)?;
        let (n_embd, head_dim) = (hp.n_embd, hp.head_dim);
        let mut l = Loader { content, reader, buf: Vec::new() };
        let embed = match l.matrix("token_embd.weight")? {
            Linear::Quant(w) => Embedding::Quant(w),
            Linear::Candle { inner, rows, cols } => Embedding::Candle { inner, rows, cols },
        };
        // No `output.weight`: the output layer is the token embedding (tied), shared, not copied.
        let output = if l.has("output.weight") {
            l.matrix("output.weight")?
        } else {
            match &embed {
                Embedding::Quant(w) => Linear::Quant(w.clone()),
                Embedding::Candle { inner, rows, cols } => {
                    Linear::Candle { inner: inner.clone(), rows: *rows, cols: *cols }
                }
            }
        };
        let norm = l.vector("output_norm.weight")?;
        let mut layers = Vec::with_capacity(hp.n_layer);
        for i in 0..hp.n_layer {
            let p = |s: &str| format!("blk.{i}.{s}.weight");
            let mut bias = |s: &str| -> LoadResult<Option<Vec<f32>>> {
                let name = format!("blk.{i}.{s}.bias");
                if l.has(&name) {
                    l.vector(&name).map(Some)
                } else if hp.arch.requires_qkv_bias() {
                    Err(format!("the tensor `{name}` is missing"))
                } else {
                    Ok(None)
                }
            };
            let (bq, bk, bv) = (bias("attn_q")?, bias("attn_k")?, bias("attn_v")?);
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
                bq,
                bk,
                bv,
            });
        }
        let kv = hp.n_kv_head * head_dim;
        for (i, layer) in layers.iter().enumerate() {
            check_layer(i, layer, n_embd, kv)?;
        }
        let vocab = match &embed {
            Embedding::Quant(w) => (w.rows(), w.cols()),
            Embedding::Candle { rows, cols, .. } => (*rows, *cols),
        };
        if output.cols() != n_embd || norm.len() != n_embd || vocab.1 != n_embd {
            return Err("the output layer does not match the model width".into());
        }
        Ok(Llama {
            embed,
            layers,
            norm,
            output,
            n_embd,
            n_head: hp.n_head,
            n_kv_head: hp.n_kv_head,
            head_dim,
            eps: hp.eps,
            rope: Rope::new(hp.arch.rope_style(), head_dim, hp.freq_base),
            hp,
        })
    }

    /// The shape the model was loaded with.
    pub(crate) fn hparams(&self) -> &Hparams {
        &self.hp
    }

    /// Keys (or values) per position of one layer: `n_kv_head × head_dim`.
    pub(crate) fn kv_width(&self) -> usize {
        self.n_kv_head * self.head_dim
    }

    /// Layers, each with its own keys and values.
    pub(crate) fn layer_count(&self) -> usize {
        self.layers.len()
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
        if pos0 + m > MAX_CONTEXT {
            return Err(format!("position {} is past the engine's {MAX_CONTEXT}", pos0 + m));
        }
        if cache.layers.len() != self.layers.len() {
            *cache = self.new_cache();
        }
        let mut x = vec![0f32; m * e];
        self.embed_rows(tokens, &mut x)?;
        let mut s = Scratch::default();
        self.rope.angles(pos0, m, &mut s.angles);
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
            for (out, bias) in [(&mut s.q, &layer.bq), (&mut s.k, &layer.bk), (&mut s.v, &layer.bv)]
            {
                if let Some(bias) = bias {
                    add_bias_rows(out, bias);
                }
            }
            self.rope.apply(&mut s.q, self.n_head, &s.angles);
            self.rope.apply(&mut s.k, self.n_kv_head, &s.angles);
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
            let ff = layer.gate.rows();
            quant::par_chunks_mut(&mut s.g, ff, |i, g| {
                for (g, u) in g.iter_mut().zip(&s.u[i * ff..(i + 1) * ff]) {
                    *g = silu(*g) * u;
                }
            });
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

    /// The embedding rows of `tokens`, into `x` (`[token][n_embd]`).
    fn embed_rows(&self, tokens: &[u32], x: &mut [f32]) -> Result<(), String> {
        let vocab = match &self.embed {
            Embedding::Quant(w) => w.rows(),
            Embedding::Candle { rows, .. } => *rows,
        };
        if let Some(t) = tokens.iter().find(|t| **t as usize >= vocab) {
            return Err(format!("token {t} is outside the vocabulary"));
        }
        match &self.embed {
            Embedding::Quant(w) => {
                for (row, &t) in x.chunks_exact_mut(self.n_embd).zip(tokens) {
                    w.dequantize_row(t as usize, row);
                }
            }
            Embedding::Candle { inner, .. } => {
                let rows = Tensor::from_slice(tokens, tokens.len(), &Device::Cpu)
                    .and_then(|ids| inner.embedding(&ids))
                    .and_then(|t| t.flatten_all())
                    .and_then(|t| t.to_vec1::<f32>())
                    .map_err(|e| format!("looking up token embeddings: {e}"))?;
                if rows.len() != x.len() {
                    return Err("the token embedding has the wrong width".into());
                }
                x.copy_from_slice(&rows);
            }
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
        acts: &mut Acts,
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
            // K-quants alone take Q8_K activations (one integer sum per 256 weights); a call
            // with other formats quantises in 32-value blocks, which every kernel takes.
            let q8k = quantised.iter().all(|w| w.takes_q8k());
            if q8k {
                quant::q8k::quantize_rows_k(x, &mut acts.k);
            } else {
                quant::quantize_rows(x, cols, &mut acts.q8);
            }
            let total: usize = quantised.iter().map(|w| w.rows() * m).sum();
            out_t.resize(total, 0.0);
            let mut rest = out_t.as_mut_slice();
            let mut products = Vec::with_capacity(quantised.len());
            for w in &quantised {
                let (mine, tail) = rest.split_at_mut(w.rows() * m);
                products.push(Product { w, out_t: mine });
                rest = tail;
            }
            if q8k {
                quant::matmul_t_k(products, &acts.k);
            } else {
                quant::matmul_t(products, &acts.q8);
            }
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
    acts: Acts,
    out_t: Vec<f32>,
    angles: Angles,
}

/// Quantised activations of one product's input, in the layout its weights take.
#[derive(Default)]
struct Acts {
    q8: Vec<ActBlock>,
    k: Vec<ActBlockK>,
}

/// Checks one layer's weights against the model's shape.
fn check_layer(i: usize, layer: &Layer, n_embd: usize, kv: usize) -> LoadResult<()> {
    let ff = layer.gate.rows();
    let shapes = [
        (&layer.wq, n_embd, n_embd),
        (&layer.wk, kv, n_embd),
        (&layer.wv, kv, n_embd),
        (&layer.wo, n_embd, n_embd),
        (&layer.gate, ff, n_embd),
        (&layer.up, ff, n_embd),
        (&layer.down, n_embd, ff),
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
    let biases = [(&layer.bq, n_embd), (&layer.bk, kv), (&layer.bv, kv)];
    if biases.iter().any(|(b, len)| b.as_ref().is_some_and(|b| b.len() != *len)) {
        return Err(format!("layer {i} has query/key/value biases of the wrong size"));
    }
    Ok(())
}

/// Adds `bias` to every row of `x`.
fn add_bias_rows(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        add_into(row, bias);
    }
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
mod tests;
