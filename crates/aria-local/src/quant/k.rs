//! The K-quant weight formats (Q4_K, Q5_K, Q6_K: 256 weights per block) and Q5_0 for
//! [`super::QMatrix`]: their GGUF block layouts, dequantisation, and portable dot products.
//!
//! Layouts and dequantisation follow ggml's `ggml-quants.c` (`block_q4_K`, `block_q5_K`,
//! `block_q6_K`, `block_q5_0`, `dequantize_row_*`) and candle-core 0.11.1's port of them
//! (`quantized/k_quants.rs`, MIT/Apache-2.0); the float operations of each dequantised weight
//! are candle's, in candle's order, so the results are bit-identical (the tests check).
//!
//! **One deliberate departure from ggml:** the dot products take the activations quantised in
//! blocks of 32 with one scale each ([`ActBlock`], ggml's Q8_0/Q8_1 layout) instead of ggml's
//! Q8_K (one scale per 256). Every K-quant sub-block is 32 weights wide (Q6_K's scales cover
//! 16, two per sub-block), so each sub-block meets exactly one activation block:
//! `Σ_j d_a[j] · sc_j · Σ q·q_a` per superblock, times the block's `d`, minus
//! `dmin · Σ_j m_j · s_a[j]` for the formats with minimums. Three reasons: a product of mixed
//! formats (Q4_K for Q and K, Q6_K for V, Q5_0 where rows are not a multiple of 256) shares one
//! quantised input, so the model quantises each activation once; a scale per 32 values rounds
//! activations more finely than one per 256 (activations have outliers); and the caller
//! (`llama.rs`) needs no second activation type. The cost is one float multiply-add per 32
//! weights where ggml has one integer add, measured in the bench. The minimum term uses the
//! activation block's `s = d·Σq` at f16 precision, as Q4_1 does (ggml's Q8_K has exact sums):
//! an error of at most 2⁻¹¹ of that term.

use half::f16;

use super::{ActBlock, QK};

#[cfg(target_arch = "x86_64")]
pub(crate) mod simd;

#[cfg(target_arch = "x86_64")]
mod gemm_q5_0;

/// Weights per K-quant block.
pub(crate) const QK_K: usize = 256;
/// 32-weight sub-blocks per K-quant block.
pub(crate) const SUBS: usize = QK_K / QK;
pub(crate) const Q4_K_BYTES: usize = 144;
pub(crate) const Q5_K_BYTES: usize = 176;
pub(crate) const Q6_K_BYTES: usize = 210;
pub(crate) const Q5_0_BYTES: usize = 22;

/// 256 weights `d·sc_j·q - dmin·m_j`, `q` in 0..16, with 6-bit `sc_j`, `m_j` per 32 weights
/// packed in `scales`. `qs[32g + l]` holds weight `64g + l` (low nibble) and `64g + 32 + l`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlockQ4K {
    pub(crate) d: f16,
    pub(crate) dmin: f16,
    pub(crate) scales: [u8; 12],
    pub(crate) qs: [u8; QK_K / 2],
}

/// Q4_K with a fifth bit: bit `j` of `qh[l]` is the high bit of weight `32j + l`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlockQ5K {
    pub(crate) d: f16,
    pub(crate) dmin: f16,
    pub(crate) scales: [u8; 12],
    pub(crate) qh: [u8; QK_K / 8],
    pub(crate) qs: [u8; QK_K / 2],
}

/// 256 weights `d·sc·(q - 32)`, `q` in 0..64 (4 bits in `ql`, 2 in `qh`), an i8 scale per 16.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlockQ6K {
    pub(crate) ql: [u8; QK_K / 2],
    pub(crate) qh: [u8; QK_K / 4],
    pub(crate) scales: [i8; QK_K / 16],
    pub(crate) d: f16,
}

/// 32 weights `d·(q - 16)`, `q` in 0..32: nibbles as Q4_1's, bit `j` of `qh` the high bit of
/// weight `j`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BlockQ5_0 {
    pub(crate) d: f16,
    pub(crate) qh: u32,
    pub(crate) qs: [u8; QK / 2],
}

fn h(b: &[u8], at: usize) -> f16 {
    f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]]))
}

fn array<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// Blocks from GGUF bytes (`chunks_exact` of the block size; a short tail is ignored, the
/// caller checks completeness).
pub(crate) fn parse_q4k(bytes: &[u8]) -> impl Iterator<Item = BlockQ4K> + '_ {
    bytes.chunks_exact(Q4_K_BYTES).map(|b| BlockQ4K {
        d: h(b, 0),
        dmin: h(b, 2),
        scales: array(&b[4..]),
        qs: array(&b[16..]),
    })
}

pub(crate) fn parse_q5k(bytes: &[u8]) -> impl Iterator<Item = BlockQ5K> + '_ {
    bytes.chunks_exact(Q5_K_BYTES).map(|b| BlockQ5K {
        d: h(b, 0),
        dmin: h(b, 2),
        scales: array(&b[4..]),
        qh: array(&b[16..]),
        qs: array(&b[48..]),
    })
}

pub(crate) fn parse_q6k(bytes: &[u8]) -> impl Iterator<Item = BlockQ6K> + '_ {
    bytes.chunks_exact(Q6_K_BYTES).map(|b| BlockQ6K {
        ql: array(b),
        qh: array(&b[128..]),
        scales: array::<16>(&b[192..]).map(|v| i8::from_ne_bytes([v])),
        d: h(b, 208),
    })
}

pub(crate) fn parse_q5_0(bytes: &[u8]) -> impl Iterator<Item = BlockQ5_0> + '_ {
    bytes.chunks_exact(Q5_0_BYTES).map(|b| BlockQ5_0 {
        d: h(b, 0),
        qh: u32::from_le_bytes(array(&b[2..])),
        qs: array(&b[6..]),
    })
}

/// The eight 6-bit scales (bytes 0..8) and minimums (8..16) of a Q4_K/Q5_K block, unpacked
/// with ggml's 32-bit mask arithmetic (`kmask1..3` in `ggml_vec_dot_q4_K_q8_K`).
#[inline(always)]
pub(crate) fn scales_mins_packed(q: &[u8; 12]) -> [u8; 16] {
    const KMASK1: u32 = 0x3f3f_3f3f;
    const KMASK2: u32 = 0x0f0f_0f0f;
    const KMASK3: u32 = 0x0303_0303;
    let word = |i: usize| u32::from_le_bytes([q[4 * i], q[4 * i + 1], q[4 * i + 2], q[4 * i + 3]]);
    let (u0, u1, u2) = (word(0), word(1), word(2));
    let out = [
        u0 & KMASK1,
        (u2 & KMASK2) | (((u0 >> 6) & KMASK3) << 4),
        u1 & KMASK1,
        ((u2 >> 4) & KMASK2) | (((u1 >> 6) & KMASK3) << 4),
    ];
    let mut bytes = [0u8; 16];
    for (b, w) in bytes.chunks_exact_mut(4).zip(out) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    bytes
}

/// [`scales_mins_packed`] as `(scales, minimums)` (ggml's `get_scale_min_k4` for j in 0..8).
#[inline(always)]
pub(crate) fn scales_mins(q: &[u8; 12]) -> ([u8; SUBS], [u8; SUBS]) {
    let p = scales_mins_packed(q);
    (std::array::from_fn(|j| p[j]), std::array::from_fn(|j| p[SUBS + j]))
}

impl BlockQ4K {
    /// Sub-block `j`'s 32 weights as 0..16.
    #[inline(always)]
    pub(crate) fn sub(&self, j: usize) -> [u8; QK] {
        let q = &self.qs[QK * (j / 2)..QK * (j / 2 + 1)];
        let shift = 4 * (j % 2);
        std::array::from_fn(|l| (q[l] >> shift) & 0x0F)
    }
}

impl BlockQ5K {
    /// Sub-block `j`'s 32 weights as 0..32.
    #[inline(always)]
    pub(crate) fn sub(&self, j: usize) -> [u8; QK] {
        let q = &self.qs[QK * (j / 2)..QK * (j / 2 + 1)];
        let shift = 4 * (j % 2);
        std::array::from_fn(|l| ((q[l] >> shift) & 0x0F) | (((self.qh[l] >> j) & 1) << 4))
    }
}

impl BlockQ6K {
    /// Sub-block `j`'s 32 weights as -32..32; its scales are `scales[2j]` for the first 16 and
    /// `scales[2j + 1]` for the rest.
    #[inline(always)]
    pub(crate) fn sub(&self, j: usize) -> [i8; QK] {
        let (half, k) = (j / 4, j % 4);
        let ql = &self.ql[64 * half + QK * (k % 2)..][..QK];
        let qh = &self.qh[QK * half..][..QK];
        let shift = 4 * (k / 2);
        std::array::from_fn(|l| {
            let q = ((ql[l] >> shift) & 0x0F) | (((qh[l] >> (2 * k)) & 3) << 4);
            // In range: q < 64.
            q as i8 - 32
        })
    }
}

impl BlockQ5_0 {
    /// The 32 weights as -16..16.
    #[inline(always)]
    pub(crate) fn weights(&self) -> [i8; QK] {
        std::array::from_fn(|l| {
            let nibble = (self.qs[l % 16] >> (4 * (l / 16))) & 0x0F;
            let high = ((self.qh >> l) & 1) as u8;
            // In range: the value is below 32.
            (nibble | (high << 4)) as i8 - 16
        })
    }
}

/// Dequantises blocks into `out` (`QK_K` values per block), with candle's float operations.
pub(crate) fn dequantize_q4k(blocks: &[BlockQ4K], out: &mut [f32]) {
    for (b, out) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let (d, dmin) = (b.d.to_f32(), b.dmin.to_f32());
        let (sc, m) = scales_mins(&b.scales);
        for (j, out) in out.chunks_exact_mut(QK).enumerate() {
            let (d1, m1) = (d * f32::from(sc[j]), dmin * f32::from(m[j]));
            for (o, q) in out.iter_mut().zip(b.sub(j)) {
                *o = d1 * f32::from(q) - m1;
            }
        }
    }
}

pub(crate) fn dequantize_q5k(blocks: &[BlockQ5K], out: &mut [f32]) {
    for (b, out) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let (d, dmin) = (b.d.to_f32(), b.dmin.to_f32());
        let (sc, m) = scales_mins(&b.scales);
        for (j, out) in out.chunks_exact_mut(QK).enumerate() {
            let (d1, m1) = (d * f32::from(sc[j]), dmin * f32::from(m[j]));
            for (o, q) in out.iter_mut().zip(b.sub(j)) {
                *o = d1 * f32::from(q) - m1;
            }
        }
    }
}

pub(crate) fn dequantize_q6k(blocks: &[BlockQ6K], out: &mut [f32]) {
    for (b, out) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = b.d.to_f32();
        for (j, out) in out.chunks_exact_mut(QK).enumerate() {
            let (lo, hi) = (d * f32::from(b.scales[2 * j]), d * f32::from(b.scales[2 * j + 1]));
            for (l, (o, q)) in out.iter_mut().zip(b.sub(j)).enumerate() {
                *o = if l < 16 { lo } else { hi } * f32::from(q);
            }
        }
    }
}

pub(crate) fn dequantize_q5_0(blocks: &[BlockQ5_0], out: &mut [f32]) {
    for (b, out) in blocks.iter().zip(out.chunks_exact_mut(QK)) {
        let d = b.d.to_f32();
        for (o, q) in out.iter_mut().zip(b.weights()) {
            *o = f32::from(q) * d;
        }
    }
}

#[inline(always)]
fn dot_u8(q: &[u8; QK], a: &[i8; QK]) -> i32 {
    q.iter().zip(a).map(|(&q, &a)| i32::from(q) * i32::from(a)).sum()
}

#[inline(always)]
fn dot_i8(q: &[i8], a: &[i8]) -> i32 {
    q.iter().zip(a).map(|(&q, &a)| i32::from(q) * i32::from(a)).sum()
}

/// `Σ_j sc_j·Σ q·q_a` of sub-block `j` of a Q4_K/Q5_K/Q6_K block against its activation block
/// (the integer part of the products; public to the tests, which hold the SIMD lanes to it).
#[inline(always)]
pub(crate) fn sumi_q4k(b: &BlockQ4K, sc: &[u8; SUBS], j: usize, a: &ActBlock) -> i32 {
    i32::from(sc[j]) * dot_u8(&b.sub(j), &a.qs)
}

#[inline(always)]
pub(crate) fn sumi_q5k(b: &BlockQ5K, sc: &[u8; SUBS], j: usize, a: &ActBlock) -> i32 {
    i32::from(sc[j]) * dot_u8(&b.sub(j), &a.qs)
}

#[inline(always)]
pub(crate) fn sumi_q6k(b: &BlockQ6K, j: usize, a: &ActBlock) -> i32 {
    let q = b.sub(j);
    i32::from(b.scales[2 * j]) * dot_i8(&q[..16], &a.qs[..16])
        + i32::from(b.scales[2 * j + 1]) * dot_i8(&q[16..], &a.qs[16..])
}

#[inline(always)]
pub(crate) fn sumi_q5_0(b: &BlockQ5_0, a: &ActBlock) -> i32 {
    dot_i8(&b.weights(), &a.qs)
}

/// One Q4_K weight row (`w`) · one activation row (`a`, [`SUBS`] blocks per weight block):
/// `Σ_blocks d·Σ_j d_a[j]·sumi_j - dmin·Σ_j m_j·s_a[j]` (ggml's `vec_dot_q4_K_q8_K` with
/// 32-value activation blocks, see the module comment).
#[inline]
pub(crate) fn dot_q4k(w: &[BlockQ4K], a: &[ActBlock]) -> f32 {
    let mut sum = 0f32;
    for (b, a) in w.iter().zip(a.chunks_exact(SUBS)) {
        let (sc, m) = scales_mins(&b.scales);
        let (mut sumf, mut summ) = (0f32, 0f32);
        for j in 0..SUBS {
            sumf += sumi_q4k(b, &sc, j, &a[j]) as f32 * a[j].d;
            summ += f32::from(m[j]) * a[j].s;
        }
        sum += b.d.to_f32() * sumf - b.dmin.to_f32() * summ;
    }
    sum
}

/// [`dot_q4k`] for Q5_K.
#[inline]
pub(crate) fn dot_q5k(w: &[BlockQ5K], a: &[ActBlock]) -> f32 {
    let mut sum = 0f32;
    for (b, a) in w.iter().zip(a.chunks_exact(SUBS)) {
        let (sc, m) = scales_mins(&b.scales);
        let (mut sumf, mut summ) = (0f32, 0f32);
        for j in 0..SUBS {
            sumf += sumi_q5k(b, &sc, j, &a[j]) as f32 * a[j].d;
            summ += f32::from(m[j]) * a[j].s;
        }
        sum += b.d.to_f32() * sumf - b.dmin.to_f32() * summ;
    }
    sum
}

/// `Σ_blocks d·Σ_j d_a[j]·sumi_j` for Q6_K (no minimums: the weights are signed).
#[inline]
pub(crate) fn dot_q6k(w: &[BlockQ6K], a: &[ActBlock]) -> f32 {
    let mut sum = 0f32;
    for (b, a) in w.iter().zip(a.chunks_exact(SUBS)) {
        let mut sumf = 0f32;
        for (j, a) in a.iter().enumerate() {
            sumf += sumi_q6k(b, j, a) as f32 * a.d;
        }
        sum += b.d.to_f32() * sumf;
    }
    sum
}

/// `Σ_blocks d_w·d_a·Σ q·q_a` for Q5_0 (ggml's `vec_dot_q5_0_q8_0`).
#[inline]
pub(crate) fn dot_q5_0(w: &[BlockQ5_0], a: &[ActBlock]) -> f32 {
    let mut sum = 0f32;
    for (b, a) in w.iter().zip(a) {
        sum += sumi_q5_0(b, a) as f32 * b.d.to_f32() * a.d;
    }
    sum
}

/// Activation rows the grouped (prompt) kernels take at once.
pub(crate) const ROWS: usize = 4;

/// `out[r * m + i] = W[row0 + r] · acts[i]` for the `out.len() / m` weight rows of one task,
/// `nbw` weight blocks and `nba` activation blocks per row: `dots` for groups of [`ROWS`]
/// activation rows (prompts), `dot` for the rest (both are also told the index of their first
/// activation row).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one loop shared by every format and instruction set
pub(crate) fn fill<B>(
    blocks: &[B],
    nbw: usize,
    nba: usize,
    row0: usize,
    acts: &[ActBlock],
    out: &mut [f32],
    dot: impl Fn(&[B], &[ActBlock], usize) -> f32,
    dots: impl Fn(&[B], &[ActBlock], usize) -> [f32; ROWS],
) {
    let m = acts.len() / nba;
    let rows = &blocks[row0 * nbw..(row0 + out.len() / m) * nbw];
    // Groups of activation rows outside, the task's weight rows inside: both stay in cache.
    let groups = acts.chunks_exact(ROWS * nba);
    let rest = groups.remainder();
    for (g, group) in groups.enumerate() {
        for (r, w) in rows.chunks_exact(nbw).enumerate() {
            let at = r * m + g * ROWS;
            out[at..at + ROWS].copy_from_slice(&dots(w, group, g * ROWS));
        }
    }
    let done = m - rest.len() / nba;
    for (i, act) in rest.chunks_exact(nba).enumerate() {
        for (r, w) in rows.chunks_exact(nbw).enumerate() {
            out[r * m + done + i] = dot(w, act, done + i);
        }
    }
}

/// [`fill`] with the portable kernel `dot` (grouped rows one at a time).
pub(crate) fn fill_portable<B>(
    blocks: &[B],
    nbw: usize,
    nba: usize,
    row0: usize,
    acts: &[ActBlock],
    out: &mut [f32],
    dot: impl Fn(&[B], &[ActBlock]) -> f32 + Copy,
) {
    let dots =
        |w: &[B], a: &[ActBlock], _| std::array::from_fn(|i| dot(w, &a[i * nba..(i + 1) * nba]));
    fill(blocks, nbw, nba, row0, acts, out, |w, a, _| dot(w, a), dots);
}

/// [`fill`] with the AVX2 kernels of a K-quant format.
#[cfg(target_arch = "x86_64")]
pub(crate) fn fill_avx2<B: simd::SimdBlock>(
    s: pulp::x86::V3,
    blocks: &[B],
    nbw: usize,
    nba: usize,
    row0: usize,
    acts: &[ActBlock],
    out: &mut [f32],
) {
    // The activation blocks' `s` side by side, so a block's eight load as one vector.
    let sums: Vec<f32> = if B::MINS { acts.iter().map(|a| a.s).collect() } else { Vec::new() };
    let sums_of =
        |i: usize, n: usize| if B::MINS { &sums[i * nba..(i + n) * nba] } else { &[][..] };
    s.vectorize(|| {
        let dot = |w: &[B], a: &[ActBlock], i| simd::dots_k::<B, 1>(s, w, a, sums_of(i, 1), nba)[0];
        let dots =
            |w: &[B], a: &[ActBlock], i| simd::dots_k::<B, ROWS>(s, w, a, sums_of(i, ROWS), nba);
        fill(blocks, nbw, nba, row0, acts, out, dot, dots);
    });
}

/// [`fill`] with the AVX2 kernels of Q5_0. A prompt (four activation rows or more) runs
/// groups of eight weight rows through the repacking kernel of `quant/k/gemm_q5_0.rs` and the
/// rows past a multiple of eight through the portable [`dot_q5_0`]: the portable kernel's bits
/// however the rows are grouped. Generation runs the row-at-a-time AVX2 kernel.
#[cfg(target_arch = "x86_64")]
pub(crate) fn fill_avx2_q5_0(
    s: pulp::x86::V3,
    blocks: &[BlockQ5_0],
    nba: usize,
    row0: usize,
    acts: &[ActBlock],
    out: &mut [f32],
) {
    if acts.len() / nba >= ROWS {
        s.vectorize(|| {
            let group = |rows: &[BlockQ5_0], out: &mut [f32]| {
                gemm_q5_0::fill_group(s, rows, nba, acts, out);
            };
            super::fill_grouped(blocks, nba, row0, acts, out, group, dot_q5_0);
        });
        return;
    }
    s.vectorize(|| {
        let dot = |w: &[BlockQ5_0], a: &[ActBlock], _| simd::dots_q5_0::<1>(s, w, a, nba)[0];
        let dots = |w: &[BlockQ5_0], a: &[ActBlock], _| simd::dots_q5_0::<ROWS>(s, w, a, nba);
        fill(blocks, nba, nba, row0, acts, out, dot, dots);
    });
}
