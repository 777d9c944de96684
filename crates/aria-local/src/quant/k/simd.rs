//! AVX2 versions of the dot products of [`super`] (Q4_K, Q5_K, Q6_K, Q5_0), chosen at run time.
//!
//! The shape is ggml's x86 kernels (`ggml_vec_dot_q4_K_q8_K` and siblings in ggml-quants.c /
//! ggml-cpu, and candle's `quantized/avx.rs` port): each 32-weight sub-block is unpacked into
//! 32 bytes (nibbles by mask and shift, high bits by mask and compare, Q5_0's by spreading its
//! 32-bit mask over the bytes), multiplied with the activation bytes by `vpmaddubsw` (unsigned
//! × signed, adjacent pairs summed into i16), and `vpmaddwd` against the sub-block's scales
//! widens to eight i32 lanes, so the integer work per sub-block is two instructions.
//! Signed weights (Q6_K's `q - 32`, Q5_0's `q - 16`) move their sign onto the activation first
//! (`|w| · sign(w)·a`), exact because activations lie in -127..=127. Pair sums stay within
//! i16: at most 2·31·127 (Q5_K) or 2·32·127 (Q6_K); times a scale of at most 63 (Q4_K/Q5_K)
//! or 128 (Q6_K) and summed in pairs they stay far inside i32.
//!
//! Where ggml adds those lanes as integers over the whole 256-weight block (its Q8_K
//! activations have one scale), ours are converted and multiply-added with the activation
//! block's scale (see the module comment of [`super`] for why), into two accumulators
//! (even and odd sub-blocks) that are scaled by the block's `d` once per block. The grouped
//! kernels take [`ROWS`] activation rows per weight row and unpack each sub-block once for all;
//! single rows run the same function with one row, so every row's arithmetic is the same
//! operation for operation and a prompt's results do not depend on how it is grouped. Q5_0
//! prompts (four rows or more) instead run the grouped kernel of `quant/k/gemm_q5_0.rs`, which
//! gives the portable kernel's bits.

use bytemuck::cast;
use pulp::x86::V3;
use std::arch::x86_64::{__m128i, __m256, __m256i};

use super::{ActBlock, BlockQ4K, BlockQ5_0, BlockQ5K, BlockQ6K, SUBS, scales_mins_packed};

/// A weight block format as the generic kernel sees it.
pub(crate) trait SimdBlock {
    /// Whether the unpacked weight bytes are signed.
    const SIGNED: bool;
    /// Whether the format has per-sub-block minimums (`- dmin·m_j`).
    const MINS: bool;
    fn d(&self) -> f32;
    /// The block's `dmin` (zero without [`Self::MINS`]).
    fn dmin(&self) -> f32;
    /// The eight sub-blocks' minimums `m_j` as i16 lanes (zero without [`Self::MINS`]).
    fn mins(&self, simd: V3) -> __m128i;
    /// Calls `f(j, weights, scales)` for each of the [`SUBS`] sub-blocks in order: `weights`
    /// as 32 bytes, `scales` as 16 i16 lanes for `vpmaddwd` (lane `k` scales weight bytes `2k`
    /// and `2k + 1`). Returns `dmin·m_j` for the eight sub-blocks (zero without [`Self::MINS`]).
    fn visit(&self, simd: V3, f: impl FnMut(usize, __m256i, __m256i)) -> __m256;
}

/// Q4_K/Q5_K scales (bytes 0..8 of `packed`) as i16 in both halves, for [`k4_scale`].
#[inline(always)]
fn k4_scales16(simd: V3, packed: __m128i) -> __m256i {
    simd.avx2._mm256_broadcastsi128_si256(simd.sse4_1._mm_cvtepu8_epi16(packed))
}

/// Sub-block `j`'s scale from [`k4_scales16`] in all 16 i16 lanes (one in-lane shuffle).
#[inline(always)]
fn k4_scale(simd: V3, scales16: __m256i, j: usize) -> __m256i {
    // In range: 2j + 1 < 16. One broadcast even where `j` is not a constant.
    let pick = simd.avx._mm256_set1_epi16(i16::from_le_bytes([2 * j as u8, 2 * j as u8 + 1]));
    simd.avx2._mm256_shuffle_epi8(scales16, pick)
}

/// `dmin·m_j` from the minimums in bytes 8..16 of `packed`.
#[inline(always)]
fn k4_mins(simd: V3, packed: __m128i, dmin: f32) -> __m256 {
    let m = simd.avx2._mm256_cvtepu8_epi32(simd.sse2._mm_srli_si128::<8>(packed));
    simd.avx._mm256_mul_ps(simd.avx._mm256_cvtepi32_ps(m), simd.avx._mm256_set1_ps(dmin))
}

/// The minimums in bytes 8..16 of `packed` as eight i16 lanes.
#[inline(always)]
fn k4_mins_i16(simd: V3, packed: __m128i) -> __m128i {
    simd.sse4_1._mm_cvtepu8_epi16(simd.sse2._mm_srli_si128::<8>(packed))
}

#[inline(always)]
fn nibbles(simd: V3, packed: __m256i, high: bool) -> __m256i {
    let q = if high { simd.avx2._mm256_srli_epi16::<4>(packed) } else { packed };
    simd.avx2._mm256_and_si256(q, simd.avx._mm256_set1_epi8(0x0F))
}

/// 0x10 in each byte of `bits` that has the bit `mask` set.
#[inline(always)]
fn bit_to_16(simd: V3, bits: __m256i, mask: i8) -> __m256i {
    let m = simd.avx._mm256_set1_epi8(mask);
    let set = simd.avx2._mm256_cmpeq_epi8(simd.avx2._mm256_and_si256(bits, m), m);
    simd.avx2._mm256_and_si256(set, simd.avx._mm256_set1_epi8(0x10))
}

impl SimdBlock for BlockQ4K {
    const SIGNED: bool = false;
    const MINS: bool = true;
    fn d(&self) -> f32 {
        self.d.to_f32()
    }
    fn dmin(&self) -> f32 {
        self.dmin.to_f32()
    }
    #[inline(always)]
    fn mins(&self, simd: V3) -> __m128i {
        k4_mins_i16(simd, cast(scales_mins_packed(&self.scales)))
    }
    #[inline(always)]
    fn visit(&self, simd: V3, mut f: impl FnMut(usize, __m256i, __m256i)) -> __m256 {
        let sm: __m128i = cast(scales_mins_packed(&self.scales));
        let sc16 = k4_scales16(simd, sm);
        let qs: [[u8; 32]; 4] = cast(self.qs);
        for (g, packed) in qs.into_iter().enumerate() {
            let packed: __m256i = cast(packed);
            for (j, high) in [(2 * g, false), (2 * g + 1, true)] {
                f(j, nibbles(simd, packed, high), k4_scale(simd, sc16, j));
            }
        }
        k4_mins(simd, sm, self.dmin.to_f32())
    }
}

impl SimdBlock for BlockQ5K {
    const SIGNED: bool = false;
    const MINS: bool = true;
    fn d(&self) -> f32 {
        self.d.to_f32()
    }
    fn dmin(&self) -> f32 {
        self.dmin.to_f32()
    }
    #[inline(always)]
    fn mins(&self, simd: V3) -> __m128i {
        k4_mins_i16(simd, cast(scales_mins_packed(&self.scales)))
    }
    #[inline(always)]
    fn visit(&self, simd: V3, mut f: impl FnMut(usize, __m256i, __m256i)) -> __m256 {
        let sm: __m128i = cast(scales_mins_packed(&self.scales));
        let sc16 = k4_scales16(simd, sm);
        let qs: [[u8; 32]; 4] = cast(self.qs);
        let qh: __m256i = cast(self.qh);
        for (g, packed) in qs.into_iter().enumerate() {
            let packed: __m256i = cast(packed);
            for (j, high) in [(2 * g, false), (2 * g + 1, true)] {
                // Bit j as an i8 mask: 1 << 7 wraps to -128, the byte 0x80.
                let mask = (1u8 << j) as i8;
                let q = simd
                    .avx2
                    ._mm256_or_si256(nibbles(simd, packed, high), bit_to_16(simd, qh, mask));
                f(j, q, k4_scale(simd, sc16, j));
            }
        }
        k4_mins(simd, sm, self.dmin.to_f32())
    }
}

impl SimdBlock for BlockQ6K {
    const SIGNED: bool = true;
    const MINS: bool = false;
    fn d(&self) -> f32 {
        self.d.to_f32()
    }
    fn dmin(&self) -> f32 {
        0.0
    }
    #[inline(always)]
    fn mins(&self, simd: V3) -> __m128i {
        simd.sse2._mm_setzero_si128()
    }
    #[inline(always)]
    fn visit(&self, simd: V3, mut f: impl FnMut(usize, __m256i, __m256i)) -> __m256 {
        let scales: __m128i = cast(self.scales);
        let ql: [[u8; 32]; 4] = cast(self.ql);
        let qh: [[u8; 32]; 2] = cast(self.qh);
        let (low4, m32) = (simd.avx._mm256_set1_epi8(0x0F), simd.avx._mm256_set1_epi8(32));
        for half in 0..2 {
            let (ql0, ql1): (__m256i, __m256i) = (cast(ql[2 * half]), cast(ql[2 * half + 1]));
            let qh: __m256i = cast(qh[half]);
            let and =
                |v: __m256i, m: i8| simd.avx2._mm256_and_si256(v, simd.avx._mm256_set1_epi8(m));
            // Bits 0-1, 2-3, 4-5, 6-7 of `qh` moved to 4-5 (masked first: no bits cross bytes).
            let highs = [
                simd.avx2._mm256_slli_epi16::<4>(and(qh, 0x03)),
                simd.avx2._mm256_slli_epi16::<2>(and(qh, 0x0C)),
                and(qh, 0x30),
                simd.avx2._mm256_srli_epi16::<2>(and(qh, (0xC0u8) as i8)),
            ];
            let lows = [
                simd.avx2._mm256_and_si256(ql0, low4),
                simd.avx2._mm256_and_si256(ql1, low4),
                simd.avx2._mm256_and_si256(simd.avx2._mm256_srli_epi16::<4>(ql0), low4),
                simd.avx2._mm256_and_si256(simd.avx2._mm256_srli_epi16::<4>(ql1), low4),
            ];
            for k in 0..4 {
                let j = 4 * half + k;
                let q =
                    simd.avx2._mm256_sub_epi8(simd.avx2._mm256_or_si256(lows[k], highs[k]), m32);
                // Bytes 2j (eight times) and 2j + 1, sign-extended to i16.
                // In range: 2j + 1 < 16.
                let (lo, hi) = ((2 * j) as i8, (2 * j + 1) as i8);
                let pick = simd
                    .sse2
                    ._mm_set_epi8(hi, hi, hi, hi, hi, hi, hi, hi, lo, lo, lo, lo, lo, lo, lo, lo);
                let scale = simd.ssse3._mm_shuffle_epi8(scales, pick);
                f(j, q, simd.avx2._mm256_cvtepi8_epi16(scale));
            }
        }
        simd.avx._mm256_setzero_ps()
    }
}

/// Q5_0's 32 weights as signed bytes -16..16: each bit of `qh` spread over its byte (ggml's
/// `bytes_from_bits_32`), and 0xF0 or-ed into the bytes whose bit is clear (`q - 16` for a
/// nibble `q` below 16).
#[inline(always)]
pub(crate) fn unpack_q5_0(simd: V3, b: &BlockQ5_0) -> __m256i {
    let packed: __m128i = cast(b.qs);
    let nib = simd.avx._mm256_set_m128i(simd.sse2._mm_srli_epi16::<4>(packed), packed);
    let nib = simd.avx2._mm256_and_si256(nib, simd.avx._mm256_set1_epi8(0x0F));
    // Byte k of the 32-bit mask to bytes 8k..8k+8, then one bit tested per byte.
    let bytes = simd.avx._mm256_set1_epi32(i32::from_ne_bytes(b.qh.to_le_bytes()));
    let spread: __m256i = cast([
        0u8, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3,
        3, 3,
    ]);
    let bytes = simd.avx2._mm256_shuffle_epi8(bytes, spread);
    let bit: __m256i = cast([
        1u8, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128, 1,
        2, 4, 8, 16, 32, 64, 128,
    ]);
    let set = simd.avx2._mm256_cmpeq_epi8(simd.avx2._mm256_and_si256(bytes, bit), bit);
    let clear_high = simd.avx2._mm256_andnot_si256(set, simd.avx._mm256_set1_epi8((0xF0u8) as i8));
    simd.avx2._mm256_or_si256(nib, clear_high)
}

/// i16 pair sums of `q · a.qs`, `q_abs` being `|q|` for signed formats.
#[inline(always)]
fn pairs(simd: V3, signed: bool, q: __m256i, q_abs: __m256i, a: &ActBlock) -> __m256i {
    let qa: __m256i = cast(a.qs);
    if signed {
        simd.avx2._mm256_maddubs_epi16(q_abs, simd.avx2._mm256_sign_epi8(qa, q))
    } else {
        simd.avx2._mm256_maddubs_epi16(q, qa)
    }
}

/// Eight i32 lanes summing to the scaled integer sum of one sub-block (the tests compare them
/// with the portable `sumi_*`).
#[cfg(test)]
pub(crate) fn lanes(simd: V3, signed: bool, q: __m256i, scales: __m256i, a: &ActBlock) -> __m256i {
    let q_abs = if signed { simd.avx2._mm256_abs_epi8(q) } else { q };
    simd.avx2._mm256_madd_epi16(pairs(simd, signed, q, q_abs, a), scales)
}

#[inline(always)]
fn hsum(v: __m256) -> f32 {
    let v: [f32; 8] = cast(v);
    ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]))
}

/// One K-quant weight row (`w`) against `R` activation rows held back to back in `a`, `nba`
/// blocks each, with their blocks' `s` in `sums` (empty without [`SimdBlock::MINS`]).
/// `R = 1` is generation, `R = ROWS` a group of prompt rows.
#[inline(always)]
pub(crate) fn dots_k<B: SimdBlock, const R: usize>(
    simd: V3,
    w: &[B],
    a: &[ActBlock],
    sums: &[f32],
    nba: usize,
) -> [f32; R] {
    let zero = simd.avx._mm256_setzero_ps();
    let (mut acc, mut mins) = ([zero; R], [zero; R]);
    for (s, wb) in w.iter().enumerate() {
        let (mut even, mut odd) = ([zero; R], [zero; R]);
        let dm = wb.visit(simd, |j, q, scales| {
            let q_abs = if B::SIGNED { simd.avx2._mm256_abs_epi8(q) } else { q };
            for i in 0..R {
                let ab = &a[i * nba + s * SUBS + j];
                let p = pairs(simd, B::SIGNED, q, q_abs, ab);
                let l = simd.avx._mm256_cvtepi32_ps(simd.avx2._mm256_madd_epi16(p, scales));
                let da = simd.avx._mm256_set1_ps(ab.d);
                if j % 2 == 0 {
                    even[i] = simd.fma._mm256_fmadd_ps(l, da, even[i]);
                } else {
                    odd[i] = simd.fma._mm256_fmadd_ps(l, da, odd[i]);
                }
            }
        });
        let d = simd.avx._mm256_set1_ps(wb.d());
        for i in 0..R {
            acc[i] = simd.fma._mm256_fmadd_ps(simd.avx._mm256_add_ps(even[i], odd[i]), d, acc[i]);
            if B::MINS {
                let at = i * nba + s * SUBS;
                let sv: [f32; SUBS] = std::array::from_fn(|j| sums[at + j]);
                mins[i] = simd.fma._mm256_fmadd_ps(dm, cast(sv), mins[i]);
            }
        }
    }
    std::array::from_fn(|i| hsum(acc[i]) - hsum(mins[i]))
}

/// Q5_0 weight row against `R` activation rows: [`dots_k`]'s shape with a scale per 32
/// weights (`d_w·d_a` per block, even and odd blocks in two accumulators).
#[inline(always)]
pub(crate) fn dots_q5_0<const R: usize>(
    simd: V3,
    w: &[BlockQ5_0],
    a: &[ActBlock],
    nba: usize,
) -> [f32; R] {
    let zero = simd.avx._mm256_setzero_ps();
    let (mut even, mut odd) = ([zero; R], [zero; R]);
    let ones = simd.avx._mm256_set1_epi16(1);
    for (b, wb) in w.iter().enumerate() {
        let q = unpack_q5_0(simd, wb);
        let q_abs = simd.avx2._mm256_abs_epi8(q);
        let d = wb.d.to_f32();
        for i in 0..R {
            let ab = &a[i * nba + b];
            let p = pairs(simd, true, q, q_abs, ab);
            let l = simd.avx._mm256_cvtepi32_ps(simd.avx2._mm256_madd_epi16(p, ones));
            let scale = simd.avx._mm256_set1_ps(d * ab.d);
            if b % 2 == 0 {
                even[i] = simd.fma._mm256_fmadd_ps(l, scale, even[i]);
            } else {
                odd[i] = simd.fma._mm256_fmadd_ps(l, scale, odd[i]);
            }
        }
    }
    std::array::from_fn(|i| hsum(simd.avx._mm256_add_ps(even[i], odd[i])))
}

/// The exact integer sum of one sub-block's lanes, for the tests.
#[cfg(test)]
pub(crate) fn lane_sum(lanes: __m256i) -> i32 {
    cast::<__m256i, [i32; 8]>(lanes).iter().sum()
}
