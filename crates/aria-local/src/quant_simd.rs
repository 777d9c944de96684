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

/// Eight i32 lanes summing to `Σ q_w·q_a` of one Q4_1 block (weights as 0..16 nibbles).
#[inline(always)]
pub(super) fn lanes_q4_1(simd: V3, w: &BlockQ4_1, a: &ActBlock) -> __m256i {
    let packed: __m128i = cast(w.qs);
    let high = simd.sse2._mm_srli_epi16::<4>(packed);
    // Low nibbles are weights 0..16, high nibbles 16..32: the activation's two halves.
    let both = simd.avx._mm256_set_m128i(high, packed);
    let q = simd.avx2._mm256_and_si256(both, simd.avx._mm256_set1_epi8(0x0F));
    let pairs = simd.avx2._mm256_maddubs_epi16(q, cast::<[i8; 32], __m256i>(a.qs));
    simd.avx2._mm256_madd_epi16(pairs, simd.avx._mm256_set1_epi16(1))
}

/// Eight i32 lanes summing to `Σ q_w·q_a` of one Q8_0 block.
#[inline(always)]
pub(super) fn lanes_q8_0(simd: V3, w: &BlockQ8_0, a: &ActBlock) -> __m256i {
    let q: __m256i = cast(w.qs);
    let magnitude = simd.avx2._mm256_abs_epi8(q);
    let signed = simd.avx2._mm256_sign_epi8(cast::<[i8; 32], __m256i>(a.qs), q);
    let pairs = simd.avx2._mm256_maddubs_epi16(magnitude, signed);
    simd.avx2._mm256_madd_epi16(pairs, simd.avx._mm256_set1_epi16(1))
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

/// The exact integer sum of one block's lanes, for the tests.
#[cfg(test)]
pub(super) fn lane_sum(lanes: __m256i) -> i32 {
    cast::<__m256i, [i32; 8]>(lanes).iter().sum()
}
