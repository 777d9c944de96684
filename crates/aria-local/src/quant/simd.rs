//! AVX2 versions of the block dot products of [`super`], chosen at run time.
//!
//! The shape is ggml's x86 kernels: a block's 32 weights and 32 activations are multiplied as
//! unsigned × signed bytes with `vpmaddubsw` (adjacent products summed into 16 i16 lanes),
//! `vpmaddwd` against ones widens adjacent pairs into eight i32 lanes, and those are converted
//! to floats and multiply-added with the block's scale into float accumulators. That is three
//! instructions for 32 multiply-adds where the portable loop's widening multiplies need about
//! twice as many. Q4_1's nibbles are unsigned already; for Q8_0 the sign of each weight moves
//! onto its activation (`|w| · sign(w)·a`), exact because activations lie in -127..=127 (see
//! [`super::quantize_row`]) and pairs of products of at most 128·127 fit an i16.
//!
//! The intrinsics come from `pulp`'s [`V3`] token (x86-64-v3: AVX2, FMA), which exists only
//! when the running CPU has the features, so these functions are safe Rust: no
//! `#[target_feature]` on our side, the token's `vectorize` compiles the loop with the features
//! on. A binary built for plain x86-64 still takes this path on a CPU with AVX2; other CPUs
//! run the portable kernels. The integer sums are exactly the portable kernels'; only the order
//! in which the scaled block sums are added differs (eight lanes, two accumulators).

use bytemuck::cast;
use pulp::x86::V3;
use std::arch::x86_64::{__m128i, __m256, __m256i};

use super::{ActBlock, BlockQ4_1, BlockQ8_0};

/// A Q4_1 block's 32 weights as unsigned bytes 0..16, in activation order.
#[inline(always)]
fn unpack_q4_1(simd: V3, w: &BlockQ4_1) -> __m256i {
    let packed: __m128i = cast(w.qs);
    let high = simd.sse2._mm_srli_epi16::<4>(packed);
    // Low nibbles are weights 0..16, high nibbles 16..32: the activation's two halves.
    let both = simd.avx._mm256_set_m128i(high, packed);
    simd.avx2._mm256_and_si256(both, simd.avx._mm256_set1_epi8(0x0F))
}

/// Eight i32 lanes summing to `Σ q_w·q_a` for unsigned weight bytes `q`.
#[inline(always)]
fn lanes_unsigned(simd: V3, q: __m256i, a: &ActBlock) -> __m256i {
    let pairs = simd.avx2._mm256_maddubs_epi16(q, cast::<[i8; 32], __m256i>(a.qs));
    simd.avx2._mm256_madd_epi16(pairs, simd.avx._mm256_set1_epi16(1))
}

/// Eight i32 lanes summing to `Σ q_w·q_a` of one Q4_1 block (weights as 0..16 nibbles).
#[inline(always)]
pub(super) fn lanes_q4_1(simd: V3, w: &BlockQ4_1, a: &ActBlock) -> __m256i {
    lanes_unsigned(simd, unpack_q4_1(simd, w), a)
}

/// Eight i32 lanes summing to `Σ q·q_a` for signed weight bytes `q` with `|q|` precomputed.
#[inline(always)]
fn lanes_signed(simd: V3, q: __m256i, magnitude: __m256i, a: &ActBlock) -> __m256i {
    let signed = simd.avx2._mm256_sign_epi8(cast::<[i8; 32], __m256i>(a.qs), q);
    let pairs = simd.avx2._mm256_maddubs_epi16(magnitude, signed);
    simd.avx2._mm256_madd_epi16(pairs, simd.avx._mm256_set1_epi16(1))
}

/// Eight i32 lanes summing to `Σ q_w·q_a` of one Q8_0 block.
#[inline(always)]
pub(super) fn lanes_q8_0(simd: V3, w: &BlockQ8_0, a: &ActBlock) -> __m256i {
    let q: __m256i = cast(w.qs);
    lanes_signed(simd, q, simd.avx2._mm256_abs_epi8(q), a)
}

/// `acc + scale · lanes` as floats.
#[inline(always)]
fn fma_lanes(simd: V3, acc: __m256, lanes: __m256i, scale: f32) -> __m256 {
    simd.fma._mm256_fmadd_ps(
        simd.avx._mm256_set1_ps(scale),
        simd.avx._mm256_cvtepi32_ps(lanes),
        acc,
    )
}

#[inline(always)]
fn sum_lanes(simd: V3, a: __m256, b: __m256) -> f32 {
    let v: [f32; 8] = cast(simd.avx._mm256_add_ps(a, b));
    ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]))
}

/// [`super::dot_q4_1`] with AVX2: even and odd blocks go to two accumulators so consecutive
/// multiply-adds do not wait on each other.
#[inline(always)]
pub(super) fn dot_q4_1(simd: V3, w: &[BlockQ4_1], a: &[ActBlock]) -> f32 {
    let (mut even, mut odd) = (simd.avx._mm256_setzero_ps(), simd.avx._mm256_setzero_ps());
    let mut mins = 0f32;
    let (w_pairs, a_pairs) = (w.chunks_exact(2), a.chunks_exact(2));
    let tail = (w_pairs.remainder(), a_pairs.remainder());
    for (w2, a2) in w_pairs.zip(a_pairs) {
        even = fma_lanes(simd, even, lanes_q4_1(simd, &w2[0], &a2[0]), w2[0].d.to_f32() * a2[0].d);
        odd = fma_lanes(simd, odd, lanes_q4_1(simd, &w2[1], &a2[1]), w2[1].d.to_f32() * a2[1].d);
        mins += w2[0].m.to_f32() * a2[0].s + w2[1].m.to_f32() * a2[1].s;
    }
    if let ([wb], [ab]) = tail {
        even = fma_lanes(simd, even, lanes_q4_1(simd, wb, ab), wb.d.to_f32() * ab.d);
        mins += wb.m.to_f32() * ab.s;
    }
    sum_lanes(simd, even, odd) + mins
}

/// [`super::dot_q8_0`] with AVX2, shaped as [`dot_q4_1`].
#[inline(always)]
pub(super) fn dot_q8_0(simd: V3, w: &[BlockQ8_0], a: &[ActBlock]) -> f32 {
    let (mut even, mut odd) = (simd.avx._mm256_setzero_ps(), simd.avx._mm256_setzero_ps());
    let (w_pairs, a_pairs) = (w.chunks_exact(2), a.chunks_exact(2));
    let tail = (w_pairs.remainder(), a_pairs.remainder());
    for (w2, a2) in w_pairs.zip(a_pairs) {
        even = fma_lanes(simd, even, lanes_q8_0(simd, &w2[0], &a2[0]), w2[0].d.to_f32() * a2[0].d);
        odd = fma_lanes(simd, odd, lanes_q8_0(simd, &w2[1], &a2[1]), w2[1].d.to_f32() * a2[1].d);
    }
    if let ([wb], [ab]) = tail {
        even = fma_lanes(simd, even, lanes_q8_0(simd, wb, ab), wb.d.to_f32() * ab.d);
    }
    sum_lanes(simd, even, odd)
}

/// [`dot_q4_1`] of one weight row against [`ROWS`] activation rows (`a` holds them back to
/// back, `w.len()` blocks each): each weight block is unpacked once for all of them. Prompts
/// run through this. Every row's arithmetic is [`dot_q4_1`]'s, operation for operation, so the
/// results are bit-identical to it: a prompt gives the same logits however it is grouped.
#[inline(always)]
pub(super) fn dots_q4_1(simd: V3, w: &[BlockQ4_1], a: &[ActBlock]) -> [f32; ROWS] {
    let nb = w.len();
    let zero = simd.avx._mm256_setzero_ps();
    let (mut even, mut odd, mut mins) = ([zero; ROWS], [zero; ROWS], [0f32; ROWS]);
    let pairs = w.chunks_exact(2);
    let tail = pairs.remainder();
    for (p, w2) in pairs.enumerate() {
        let (q0, q1) = (unpack_q4_1(simd, &w2[0]), unpack_q4_1(simd, &w2[1]));
        let (d0, d1) = (w2[0].d.to_f32(), w2[1].d.to_f32());
        let (m0, m1) = (w2[0].m.to_f32(), w2[1].m.to_f32());
        for i in 0..ROWS {
            let (a0, a1) = (&a[i * nb + 2 * p], &a[i * nb + 2 * p + 1]);
            even[i] = fma_lanes(simd, even[i], lanes_unsigned(simd, q0, a0), d0 * a0.d);
            odd[i] = fma_lanes(simd, odd[i], lanes_unsigned(simd, q1, a1), d1 * a1.d);
            mins[i] += m0 * a0.s + m1 * a1.s;
        }
    }
    if let [wb] = tail {
        let q = unpack_q4_1(simd, wb);
        for i in 0..ROWS {
            let ab = &a[i * nb + nb - 1];
            even[i] = fma_lanes(simd, even[i], lanes_unsigned(simd, q, ab), wb.d.to_f32() * ab.d);
            mins[i] += wb.m.to_f32() * ab.s;
        }
    }
    std::array::from_fn(|i| sum_lanes(simd, even[i], odd[i]) + mins[i])
}

/// [`dot_q8_0`] of one weight row against [`ROWS`] activation rows, as [`dots_q4_1`] (and as
/// bit-identical to [`dot_q8_0`]).
#[inline(always)]
pub(super) fn dots_q8_0(simd: V3, w: &[BlockQ8_0], a: &[ActBlock]) -> [f32; ROWS] {
    let nb = w.len();
    let zero = simd.avx._mm256_setzero_ps();
    let (mut even, mut odd) = ([zero; ROWS], [zero; ROWS]);
    let pairs = w.chunks_exact(2);
    let tail = pairs.remainder();
    for (p, w2) in pairs.enumerate() {
        let (q0, q1): (__m256i, __m256i) = (cast(w2[0].qs), cast(w2[1].qs));
        let (abs0, abs1) = (simd.avx2._mm256_abs_epi8(q0), simd.avx2._mm256_abs_epi8(q1));
        let (d0, d1) = (w2[0].d.to_f32(), w2[1].d.to_f32());
        for i in 0..ROWS {
            let (a0, a1) = (&a[i * nb + 2 * p], &a[i * nb + 2 * p + 1]);
            even[i] = fma_lanes(simd, even[i], lanes_signed(simd, q0, abs0, a0), d0 * a0.d);
            odd[i] = fma_lanes(simd, odd[i], lanes_signed(simd, q1, abs1, a1), d1 * a1.d);
        }
    }
    if let [wb] = tail {
        let q: __m256i = cast(wb.qs);
        let magnitude = simd.avx2._mm256_abs_epi8(q);
        for i in 0..ROWS {
            let ab = &a[i * nb + nb - 1];
            let lanes = lanes_signed(simd, q, magnitude, ab);
            even[i] = fma_lanes(simd, even[i], lanes, wb.d.to_f32() * ab.d);
        }
    }
    std::array::from_fn(|i| sum_lanes(simd, even[i], odd[i]))
}

/// Activation rows [`dots_q4_1`] and [`dots_q8_0`] take at once.
pub(super) const ROWS: usize = 4;

/// `out[r * m + i] = W[row0 + r] · acts[i]` as [`super::fill`] computes it, with `dot` for
/// single activation rows and `dots` for groups of [`ROWS`] (`m` ≥ [`ROWS`], prompts).
#[inline(always)]
pub(super) fn fill_grouped<B>(
    blocks: &[B],
    nb: usize,
    row0: usize,
    acts: &[ActBlock],
    out: &mut [f32],
    dot: impl Fn(&[B], &[ActBlock]) -> f32,
    dots: impl Fn(&[B], &[ActBlock]) -> [f32; ROWS],
) {
    let m = acts.len() / nb;
    let rows = &blocks[row0 * nb..(row0 + out.len() / m) * nb];
    // Groups of activation rows outside, the task's weight rows inside: both stay in L1.
    let groups = acts.chunks_exact(ROWS * nb);
    let rest = groups.remainder();
    for (g, group) in groups.enumerate() {
        for (r, w) in rows.chunks_exact(nb).enumerate() {
            let at = r * m + g * ROWS;
            out[at..at + ROWS].copy_from_slice(&dots(w, group));
        }
    }
    let done = m - rest.len() / nb;
    for (i, act) in rest.chunks_exact(nb).enumerate() {
        for (r, w) in rows.chunks_exact(nb).enumerate() {
            out[r * m + done + i] = dot(w, act);
        }
    }
}

/// The exact integer sum of one block's lanes, for the tests.
#[cfg(test)]
pub(super) fn lane_sum(lanes: __m256i) -> i32 {
    cast::<__m256i, [i32; 8]>(lanes).iter().sum()
}
