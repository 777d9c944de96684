//! Quantized weight matrices and the matrix products the chat model spends its time in.
//!
//! Weights stay in their GGUF block formats (Q4_1: 32 weights as 4-bit offsets with an f16
//! scale and minimum; Q8_0: 32 signed bytes with an f16 scale), so memory holds exactly what the
//! file holds. Activations are quantised to 8 bits per block of 32 (ggml's Q8_1 / Q8_0: same
//! bytes, Q8_1 also carries scale × sum for Q4_1's minimum), and each block's dot product is
//! an integer sum scaled once, as in ggml's `vec_dot_q4_1_q8_1` / `vec_dot_q8_0_q8_0`.
//!
//! The K-quants (Q4_K, Q5_K, Q6_K: 256 weights per block with 6- or 8-bit sub-block scales)
//! and Q5_0 live in `quant/k.rs` (AVX2 in `quant/k/simd.rs`); they take the same 32-value
//! activation blocks, so one quantised input serves a fused product of mixed formats (that
//! file says why this departs from ggml's Q8_K).
//!
//! Each kernel exists twice. The portable one is plain safe Rust written so LLVM vectorises it
//! (fixed-size arrays, one integer reduction and one float multiply-add per block) and runs on
//! any CPU; on x86-64 CPUs with AVX2 and FMA, detected at run time ([`Isa::detect`]), the
//! products use the kernels of `quant/simd.rs` instead, ggml's byte multiply-add shape written
//! with `pulp`'s safe intrinsics (about 2x faster; the bench compares them). Candle 0.11 has no SIMD kernel for Q4_1
//! at all and falls back to a scalar loop, which made this model run at a third of llama.cpp's
//! speed.
//! Products run across the cores on candle's persistent spinning thread pool, so a product of
//! a few hundred rows (one generated token) costs no thread start-up.

use std::sync::{Mutex, PoisonError};

use candle_core::quantized::GgmlDType;
use half::f16;

#[cfg(target_arch = "x86_64")]
mod simd;

mod k;

pub(crate) mod q8k;
pub(crate) use q8k::ActBlockK;

/// Values per quantisation block (Q4_1, Q8_0 and the activation blocks alike).
pub(crate) const QK: usize = 32;
const Q4_1_BYTES: usize = 20;
const Q8_0_BYTES: usize = 34;
/// Weight rows per task handed to a core: enough to amortise the task, few enough to balance.
const ROWS_PER_TASK: usize = 16;

/// 32 weights `d * q + m`, `q` in 0..16; byte `j` holds weight `j` (low nibble) and `j + 16`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlockQ4_1 {
    d: f16,
    m: f16,
    qs: [u8; QK / 2],
}

/// 32 weights `d * q`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlockQ8_0 {
    d: f16,
    qs: [i8; QK],
}

/// 32 activations `d * q`, with `s = d * Σq` for Q4_1's minimum term. `d` and `s` are kept at
/// f16 precision, as ggml stores them, so results match ggml's to the last bit of the sums.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ActBlock {
    d: f32,
    s: f32,
    qs: [i8; QK],
}

impl Default for ActBlock {
    fn default() -> Self {
        ActBlock { d: 0.0, s: 0.0, qs: [0; QK] }
    }
}

#[derive(Debug, Clone)]
enum Blocks {
    Q4_1(Vec<BlockQ4_1>),
    Q8_0(Vec<BlockQ8_0>),
    Q4K(Vec<k::BlockQ4K>),
    Q5K(Vec<k::BlockQ5K>),
    Q6K(Vec<k::BlockQ6K>),
    Q5_0(Vec<k::BlockQ5_0>),
}

/// A `rows × cols` weight matrix in one of the block formats with a kernel here.
#[derive(Debug, Clone)]
pub(crate) struct QMatrix {
    rows: usize,
    cols: usize,
    blocks: Blocks,
}

/// The instruction set the products run with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Isa {
    /// The portable kernels (any CPU; vectorised as far as the build's target features allow).
    Portable,
    /// AVX2 + FMA (x86-64-v3), proven present by the token.
    #[cfg(target_arch = "x86_64")]
    Avx2(pulp::x86::V3),
}

impl Isa {
    /// The fastest kernels this CPU runs (the check is cached after the first call).
    pub(crate) fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            return Isa::Avx2(simd);
        }
        Isa::Portable
    }
}

/// Whether [`QMatrix`] has a kernel for `dtype`.
pub(crate) fn supported(dtype: GgmlDType) -> bool {
    matches!(
        dtype,
        GgmlDType::Q4_1
            | GgmlDType::Q8_0
            | GgmlDType::Q4K
            | GgmlDType::Q5K
            | GgmlDType::Q6K
            | GgmlDType::Q5_0
    )
}

/// Bytes a `rows × cols` matrix of `dtype` takes in the file.
pub(crate) fn byte_len(dtype: GgmlDType, rows: usize, cols: usize) -> usize {
    rows * cols / dtype.block_size() * dtype.type_size()
}

impl QMatrix {
    /// An empty matrix to be filled with [`QMatrix::push_bytes`]; `None` if there is no kernel
    /// for `dtype` or `cols` is not a whole number of blocks.
    pub(crate) fn with_capacity(dtype: GgmlDType, rows: usize, cols: usize) -> Option<Self> {
        if !supported(dtype) || cols == 0 || !cols.is_multiple_of(dtype.block_size()) {
            return None;
        }
        let n = rows * cols / dtype.block_size();
        let blocks = match dtype {
            GgmlDType::Q4_1 => Blocks::Q4_1(Vec::with_capacity(n)),
            GgmlDType::Q8_0 => Blocks::Q8_0(Vec::with_capacity(n)),
            GgmlDType::Q4K => Blocks::Q4K(Vec::with_capacity(n)),
            GgmlDType::Q5K => Blocks::Q5K(Vec::with_capacity(n)),
            GgmlDType::Q6K => Blocks::Q6K(Vec::with_capacity(n)),
            GgmlDType::Q5_0 => Blocks::Q5_0(Vec::with_capacity(n)),
            _ => return None,
        };
        Some(QMatrix { rows, cols, blocks })
    }

    /// Appends whole blocks in GGUF byte layout (`bytes` must hold a whole number of them).
    pub(crate) fn push_bytes(&mut self, bytes: &[u8]) {
        let h = |b: &[u8], at: usize| f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]]));
        match &mut self.blocks {
            Blocks::Q4_1(v) => v.extend(bytes.chunks_exact(Q4_1_BYTES).map(|b| {
                let mut qs = [0u8; QK / 2];
                qs.copy_from_slice(&b[4..]);
                BlockQ4_1 { d: h(b, 0), m: h(b, 2), qs }
            })),
            Blocks::Q8_0(v) => v.extend(bytes.chunks_exact(Q8_0_BYTES).map(|b| {
                let mut qs = [0i8; QK];
                for (q, &byte) in qs.iter_mut().zip(&b[2..]) {
                    *q = i8::from_ne_bytes([byte]);
                }
                BlockQ8_0 { d: h(b, 0), qs }
            })),
            Blocks::Q4K(v) => v.extend(k::parse_q4k(bytes)),
            Blocks::Q5K(v) => v.extend(k::parse_q5k(bytes)),
            Blocks::Q6K(v) => v.extend(k::parse_q6k(bytes)),
            Blocks::Q5_0(v) => v.extend(k::parse_q5_0(bytes)),
        }
    }

    /// Bytes of one block in the file format.
    pub(crate) fn block_bytes(&self) -> usize {
        match self.blocks {
            Blocks::Q4_1(_) => Q4_1_BYTES,
            Blocks::Q8_0(_) => Q8_0_BYTES,
            Blocks::Q4K(_) => k::Q4_K_BYTES,
            Blocks::Q5K(_) => k::Q5_K_BYTES,
            Blocks::Q6K(_) => k::Q6_K_BYTES,
            Blocks::Q5_0(_) => k::Q5_0_BYTES,
        }
    }

    /// Weights per block.
    fn block_weights(&self) -> usize {
        match self.blocks {
            Blocks::Q4_1(_) | Blocks::Q8_0(_) | Blocks::Q5_0(_) => QK,
            Blocks::Q4K(_) | Blocks::Q5K(_) | Blocks::Q6K(_) => k::QK_K,
        }
    }

    /// Whether every block has been pushed.
    pub(crate) fn is_complete(&self) -> bool {
        let have = match &self.blocks {
            Blocks::Q4_1(v) => v.len(),
            Blocks::Q8_0(v) => v.len(),
            Blocks::Q4K(v) => v.len(),
            Blocks::Q5K(v) => v.len(),
            Blocks::Q6K(v) => v.len(),
            Blocks::Q5_0(v) => v.len(),
        };
        have == self.rows * self.cols / self.block_weights()
    }

    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    /// Writes row `r`, dequantised, into `out` (`cols` long). Used for embedding lookups.
    pub(crate) fn dequantize_row(&self, r: usize, out: &mut [f32]) {
        let nb = self.cols / self.block_weights();
        let row = r * nb..(r + 1) * nb;
        match &self.blocks {
            Blocks::Q4_1(v) => {
                for (b, out) in v[r * nb..(r + 1) * nb].iter().zip(out.chunks_exact_mut(QK)) {
                    let (d, m) = (b.d.to_f32(), b.m.to_f32());
                    for (j, &q) in b.qs.iter().enumerate() {
                        out[j] = f32::from(q & 0x0F) * d + m;
                        out[j + QK / 2] = f32::from(q >> 4) * d + m;
                    }
                }
            }
            Blocks::Q8_0(v) => {
                for (b, out) in v[r * nb..(r + 1) * nb].iter().zip(out.chunks_exact_mut(QK)) {
                    let d = b.d.to_f32();
                    for (o, &q) in out.iter_mut().zip(&b.qs) {
                        *o = f32::from(q) * d;
                    }
                }
            }
            Blocks::Q4K(v) => k::dequantize_q4k(&v[row], out),
            Blocks::Q5K(v) => k::dequantize_q5k(&v[row], out),
            Blocks::Q6K(v) => k::dequantize_q6k(&v[row], out),
            Blocks::Q5_0(v) => k::dequantize_q5_0(&v[row], out),
        }
    }

    /// `out[r * m + i] = W[row0 + r] · acts[i]` for the `out.len() / m` rows of one task.
    fn task_dots(&self, isa: Isa, row0: usize, acts: &[ActBlock], out: &mut [f32]) {
        let nb = self.cols / QK;
        match (isa, &self.blocks) {
            (Isa::Portable, Blocks::Q4_1(v)) => fill(v, nb, row0, acts, out, dot_q4_1),
            (Isa::Portable, Blocks::Q8_0(v)) => fill(v, nb, row0, acts, out, dot_q8_0),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2(s), Blocks::Q4_1(v)) => s.vectorize(|| {
                let dot = |w: &[BlockQ4_1], a: &[ActBlock]| simd::dot_q4_1(s, w, a);
                let dots = |w: &[BlockQ4_1], a: &[ActBlock]| simd::dots_q4_1(s, w, a);
                simd::fill_grouped(v, nb, row0, acts, out, dot, dots);
            }),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2(s), Blocks::Q8_0(v)) => s.vectorize(|| {
                let dot = |w: &[BlockQ8_0], a: &[ActBlock]| simd::dot_q8_0(s, w, a);
                let dots = |w: &[BlockQ8_0], a: &[ActBlock]| simd::dots_q8_0(s, w, a);
                simd::fill_grouped(v, nb, row0, acts, out, dot, dots);
            }),
            _ => self.task_dots_k(isa, row0, acts, out),
        }
    }

    /// [`QMatrix::task_dots`] for the formats of `quant/k.rs`.
    fn task_dots_k(&self, isa: Isa, row0: usize, acts: &[ActBlock], out: &mut [f32]) {
        let nba = self.cols / QK;
        let nbw = self.cols / self.block_weights();
        match (isa, &self.blocks) {
            (_, Blocks::Q4_1(_) | Blocks::Q8_0(_)) => self.task_dots(isa, row0, acts, out),
            (Isa::Portable, Blocks::Q4K(v)) => {
                k::fill_portable(v, nbw, nba, row0, acts, out, k::dot_q4k)
            }
            (Isa::Portable, Blocks::Q5K(v)) => {
                k::fill_portable(v, nbw, nba, row0, acts, out, k::dot_q5k)
            }
            (Isa::Portable, Blocks::Q6K(v)) => {
                k::fill_portable(v, nbw, nba, row0, acts, out, k::dot_q6k)
            }
            (Isa::Portable, Blocks::Q5_0(v)) => {
                k::fill_portable(v, nbw, nba, row0, acts, out, k::dot_q5_0)
            }
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2(s), Blocks::Q4K(v)) => k::fill_avx2(s, v, nbw, nba, row0, acts, out),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2(s), Blocks::Q5K(v)) => k::fill_avx2(s, v, nbw, nba, row0, acts, out),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2(s), Blocks::Q6K(v)) => k::fill_avx2(s, v, nbw, nba, row0, acts, out),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2(s), Blocks::Q5_0(v)) => k::fill_avx2_q5_0(s, v, nba, row0, acts, out),
        }
    }
}

/// The loop of [`QMatrix::task_dots`] around one block kernel `dot(weight row, activation row)`
/// (inlined, so it compiles with the features of the caller's `vectorize`).
#[inline(always)]
fn fill<B>(
    blocks: &[B],
    nb: usize,
    row0: usize,
    acts: &[ActBlock],
    out: &mut [f32],
    dot: impl Fn(&[B], &[ActBlock]) -> f32,
) {
    let m = acts.len() / nb;
    let rows = &blocks[row0 * nb..(row0 + out.len() / m) * nb];
    for (i, act) in acts.chunks_exact(nb).enumerate() {
        for (r, w) in rows.chunks_exact(nb).enumerate() {
            out[r * m + i] = dot(w, act);
        }
    }
}

/// Quantises `x` (a whole number of blocks) into `out` as ggml's `quantize_row_q8_1` does.
pub(crate) fn quantize_row(x: &[f32], out: &mut [ActBlock]) {
    for (x, o) in x.chunks_exact(QK).zip(out.iter_mut()) {
        let amax = x.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut sum = 0i32;
        for (q, v) in o.qs.iter_mut().zip(x) {
            // In range: |v * id| <= 127 by construction of `id`.
            *q = (v * id).round() as i8;
            sum += i32::from(*q);
        }
        o.d = f16::from_f32(d).to_f32();
        o.s = f16::from_f32(sum as f32 * d).to_f32();
    }
}

/// Quantises `m` rows of `cols` values each (row-major) into `out`, resizing it.
pub(crate) fn quantize_rows(x: &[f32], cols: usize, out: &mut Vec<ActBlock>) {
    out.resize(x.len() / QK, ActBlock::default());
    par_chunks_mut(out, cols / QK, |i, o| quantize_row(&x[i * cols..(i + 1) * cols], o));
}

/// Σ over blocks of `d_w·d_a·Σ q_w q_a + m_w·s_a` (ggml's `vec_dot_q4_1_q8_1`). Written as
/// one integer reduction per block, the shape LLVM vectorises best here (measured: eight-lane
/// float accumulators with per-lane integer sums ran 2.4x slower).
#[inline]
fn dot_q4_1(w: &[BlockQ4_1], a: &[ActBlock]) -> f32 {
    let mut sum = 0f32;
    for (wb, ab) in w.iter().zip(a) {
        sum += sumi_q4_1(wb, ab) as f32 * wb.d.to_f32() * ab.d + wb.m.to_f32() * ab.s;
    }
    sum
}

/// `Σ q_w q_a` of one Q4_1 block (weights as their 0..16 nibbles).
#[inline(always)]
fn sumi_q4_1(wb: &BlockQ4_1, ab: &ActBlock) -> i32 {
    let mut sumi = 0i32;
    for j in 0..QK / 2 {
        let v0 = i32::from(wb.qs[j] & 0x0F);
        let v1 = i32::from(wb.qs[j] >> 4);
        sumi += v0 * i32::from(ab.qs[j]) + v1 * i32::from(ab.qs[j + QK / 2]);
    }
    sumi
}

/// Σ over blocks of `d_w·d_a·Σ q_w q_a` (ggml's `vec_dot_q8_0_q8_0`), shaped as [`dot_q4_1`].
#[inline]
fn dot_q8_0(w: &[BlockQ8_0], a: &[ActBlock]) -> f32 {
    let mut sum = 0f32;
    for (wb, ab) in w.iter().zip(a) {
        sum += sumi_q8_0(wb, ab) as f32 * wb.d.to_f32() * ab.d;
    }
    sum
}

/// `Σ q_w q_a` of one Q8_0 block.
#[inline(always)]
fn sumi_q8_0(wb: &BlockQ8_0, ab: &ActBlock) -> i32 {
    let mut sumi = 0i32;
    for j in 0..QK {
        sumi += i32::from(wb.qs[j]) * i32::from(ab.qs[j]);
    }
    sumi
}

/// One product of a fused call: `out_t[r * m + i] = W[r] · x[i]` (the output is transposed:
/// one weight row's results for all `m` inputs are contiguous, so tasks own disjoint slices).
pub(crate) struct Product<'a> {
    pub(crate) w: &'a QMatrix,
    pub(crate) out_t: &'a mut [f32],
}

/// Runs several products against the same quantised input rows (`m = acts.len() / blocks
/// per row`) as one parallel job: one pool wake-up for, say, the Q, K and V projections.
pub(crate) fn matmul_t(products: Vec<Product<'_>>, acts: &[ActBlock]) {
    matmul_t_with(Isa::detect(), products, acts);
}

/// [`matmul_t`] with the kernels of `isa` (the tests and the bench compare them).
pub(crate) fn matmul_t_with(isa: Isa, products: Vec<Product<'_>>, acts: &[ActBlock]) {
    let nb = products.first().map_or(0, |p| p.w.cols / QK);
    if nb == 0 {
        return;
    }
    run_tasks(products, acts.len() / nb, |w, row0, out| w.task_dots(isa, row0, acts, out));
}

/// [`matmul_t`] for K-quant weights ([`QMatrix::takes_q8k`]) against activations quantised as
/// Q8_K ([`q8k::quantize_rows_k`]): one integer sum per 256 weights. Does nothing unless every
/// product takes Q8_K activations.
pub(crate) fn matmul_t_k(products: Vec<Product<'_>>, acts: &[ActBlockK]) {
    matmul_t_k_with(Isa::detect(), products, acts);
}

/// [`matmul_t_k`] with the kernels of `isa`.
pub(crate) fn matmul_t_k_with(isa: Isa, products: Vec<Product<'_>>, acts: &[ActBlockK]) {
    let nb = products.first().map_or(0, |p| p.w.cols / k::QK_K);
    if nb == 0 || products.iter().any(|p| !p.w.takes_q8k()) {
        return;
    }
    run_tasks(products, acts.len() / nb, |w, row0, out| w.task_dots_q8k(isa, row0, acts, out));
}

/// Splits the products into tasks of [`ROWS_PER_TASK`] weight rows and runs `dots(w, row0,
/// out)` for each across the cores (on the calling thread if the work is small).
fn run_tasks(
    products: Vec<Product<'_>>,
    m: usize,
    dots: impl Fn(&QMatrix, usize, &mut [f32]) + Sync,
) {
    struct Task<'a> {
        w: &'a QMatrix,
        row0: usize,
        out: Mutex<&'a mut [f32]>,
    }
    let mut tasks: Vec<Task<'_>> = Vec::new();
    let mut work = 0usize;
    let cols = products.first().map_or(0, |p| p.w.cols);
    for p in products {
        work += p.w.rows * p.w.cols * m;
        debug_assert_eq!(p.w.cols, cols, "fused products share their input");
        debug_assert_eq!(p.out_t.len(), p.w.rows * m);
        for (t, out) in p.out_t.chunks_mut(ROWS_PER_TASK * m).enumerate() {
            tasks.push(Task { w: p.w, row0: t * ROWS_PER_TASK, out: Mutex::new(out) });
        }
    }
    let run = |task: &Task<'_>| {
        // A task is run once, by one thread: the lock is never contended.
        let mut out = task.out.lock().unwrap_or_else(PoisonError::into_inner);
        dots(task.w, task.row0, &mut out);
    };
    if tasks.len() == 1 || work < SERIAL_WORK {
        tasks.iter().for_each(run);
        return;
    }
    candle_core::utils::barrier_pool().execute_chunked(tasks.len(), |range| {
        for task in &tasks[range] {
            run(task);
        }
    });
}

/// Below this many multiply-adds a product runs on the calling
/// thread: waking the other cores costs more than it saves.
const SERIAL_WORK: usize = 16 * 1024;

/// `out[i * rows + r]` from `out_t[r * m + i]`, across the cores for prompts.
pub(crate) fn transpose_into(out_t: &[f32], rows: usize, m: usize, out: &mut [f32]) {
    if m == 1 {
        out[..rows].copy_from_slice(&out_t[..rows]);
        return;
    }
    // Eight output rows per chunk: the reads of a weight row's results stay sequential.
    const BAND: usize = 8;
    par_chunks_mut(&mut out[..rows * m], rows * BAND, |c, band| {
        let i0 = c * BAND;
        let n = band.len() / rows;
        for (r, col) in out_t.chunks_exact(m).enumerate() {
            for (k, v) in col[i0..i0 + n].iter().enumerate() {
                band[k * rows + r] = *v;
            }
        }
    });
}

/// Weight rows the grouped prompt kernels (`quant/q8k/gemm.rs`, `quant/k/gemm_q5_0.rs`) repack
/// and multiply together.
#[cfg(target_arch = "x86_64")]
pub(crate) const GROUP: usize = 8;

/// Activation rows the grouped prompt kernels take at once.
#[cfg(target_arch = "x86_64")]
pub(crate) const GROUP_ACTS: usize = 4;

/// `out[r * m + i] = W[row0 + r] · acts[i]` for one task of a prompt (`nb` blocks per row):
/// each [`GROUP`] of its weight rows through `group(rows, out)` (a grouped prompt kernel), the
/// rows past a multiple of [`GROUP`] one at a time through `dot`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn fill_grouped<B, A>(
    blocks: &[B],
    nb: usize,
    row0: usize,
    acts: &[A],
    out: &mut [f32],
    group: impl Fn(&[B], &mut [f32]),
    dot: impl Fn(&[B], &[A]) -> f32,
) {
    let m = acts.len() / nb;
    let n = out.len() / m;
    let rows = &blocks[row0 * nb..(row0 + n) * nb];
    let grouped = n / GROUP * GROUP;
    for (g, out) in out[..grouped * m].chunks_exact_mut(GROUP * m).enumerate() {
        group(&rows[g * GROUP * nb..(g + 1) * GROUP * nb], out);
    }
    for r in grouped..n {
        let w = &rows[r * nb..(r + 1) * nb];
        for (o, act) in out[r * m..(r + 1) * m].iter_mut().zip(acts.chunks_exact(nb)) {
            *o = dot(w, act);
        }
    }
}

/// The four activation bytes `qs[4c..4c + 4]` as one i32, for the grouped kernels to broadcast.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn act_word(qs: &[i8], c: usize) -> i32 {
    let q = &qs[4 * c..4 * c + 4];
    i32::from_le_bytes([q[0] as u8, q[1] as u8, q[2] as u8, q[3] as u8])
}

/// `out[r * m + i]` for the [`GROUP`] weight rows of a grouped prompt kernel and the `m` activation
/// rows in `acts` (`nb` blocks each): `dots4` for each [`GROUP_ACTS`] of them, `dots1` for the
/// rest; lane `r` of each result is weight row `r`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn put_grouped<A>(
    acts: &[A],
    nb: usize,
    out: &mut [f32],
    dots4: impl Fn(&[A]) -> [std::arch::x86_64::__m256; GROUP_ACTS],
    dots1: impl Fn(&[A]) -> [std::arch::x86_64::__m256; 1],
) {
    let m = acts.len() / nb;
    let mut put = |i0: usize, sums: &[std::arch::x86_64::__m256]| {
        for (k, v) in sums.iter().enumerate() {
            let lanes: [f32; GROUP] = bytemuck::cast(*v);
            for (r, x) in lanes.into_iter().enumerate() {
                out[r * m + i0 + k] = x;
            }
        }
    };
    let groups = acts.chunks_exact(GROUP_ACTS * nb);
    let rest = groups.remainder();
    for (g, group) in groups.enumerate() {
        put(g * GROUP_ACTS, &dots4(group));
    }
    let done = m - rest.len() / nb;
    for (i, act) in rest.chunks_exact(nb).enumerate() {
        put(done + i, &dots1(act));
    }
}

/// Runs `f(index, chunk)` for the `chunk`-long pieces of `data` across the cores (on the
/// calling thread when `data` is short: waking the other cores would cost more).
pub(crate) fn par_chunks_mut<T: Send>(
    data: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    if std::mem::size_of_val(data) < PARALLEL_BYTES || data.len() <= chunk {
        for (c, piece) in data.chunks_mut(chunk.max(1)).enumerate() {
            f(c, piece);
        }
        return;
    }
    let pieces: Vec<Mutex<&mut [T]>> = data.chunks_mut(chunk.max(1)).map(Mutex::new).collect();
    candle_core::utils::barrier_pool().execute_chunked(pieces.len(), |range| {
        for c in range {
            // Each piece is taken by one thread: the lock is never contended.
            let mut piece = pieces[c].lock().unwrap_or_else(PoisonError::into_inner);
            f(c, &mut piece);
        }
    });
}

/// Below this many bytes of data [`par_chunks_mut`] runs on the calling thread.
const PARALLEL_BYTES: usize = 128 * 1024;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod k_tests;

#[cfg(test)]
mod q8k_tests;
