//! Products of the K-quant weights (Q4_K, Q5_K, Q6_K) with activations quantised as ggml's
//! Q8_K: one f32 scale per 256 values and the sum of each 32 values' bytes, so a whole
//! 256-weight block is one integer sum, scaled once.
//!
//! The kernels of `quant/k.rs` take 32-value activation blocks (that file says why) and pay a
//! conversion and a float multiply-add per 32 weights; here the sub-block sums (each already
//! multiplied by its 6- or 8-bit scale with `vpmaddwd`) are added as integers over the block,
//! and the minimums come from the activation sums, as in ggml's `ggml_vec_dot_q4_K_q8_K`:
//! `Σ_blocks d_a·(d·Σ_j sc_j·Σ q·q_a − dmin·Σ_j m_j·Σ q_a)`. The cost is coarser rounding of
//! the activations (one step per 256 values instead of per 32), the same as llama.cpp's. The
//! model uses these whenever every product of a fused call is a K-quant (`llama.rs`).
//! With AVX2, prompts go through the grouped kernel of `quant/q8k/gemm.rs` (eight weight rows
//! repacked and multiplied against four activation rows at a time) and give the portable
//! kernels' results to the bit; generation keeps a row-at-a-time kernel that rounds its float
//! sums in another order (within the tested bound) because it is faster.
//! Integer ranges: a sub-block's lanes hold at most 2·32·127·128 (Q6_K), eight sub-blocks add
//! to under 2²⁴; Σ q_a of 32 bytes is at most 32·127, inside i16.

use super::k::{BlockQ4K, BlockQ5K, BlockQ6K, QK_K, SUBS, scales_mins};
use super::{Blocks, Isa, QK, QMatrix};

/// 256 activations `d·q`, `q` in -127..=127, with `sums[j] = Σ q` of values `32j..32j + 32`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ActBlockK {
    pub(crate) d: f32,
    pub(crate) qs: [i8; QK_K],
    pub(crate) sums: [i16; SUBS],
}

impl Default for ActBlockK {
    fn default() -> Self {
        ActBlockK { d: 0.0, qs: [0; QK_K], sums: [0; SUBS] }
    }
}

impl ActBlockK {
    /// The 32 bytes of sub-block `j`.
    #[inline(always)]
    pub(crate) fn sub(&self, j: usize) -> &[i8; QK] {
        // Infallible: the slice is QK long.
        self.qs[QK * j..QK * (j + 1)].try_into().unwrap_or(&[0; QK])
    }
}

/// Quantises `m` rows of `cols` values (a multiple of 256) into `out`, resizing it.
pub(crate) fn quantize_rows_k(x: &[f32], out: &mut Vec<ActBlockK>) {
    out.resize(x.len() / QK_K, ActBlockK::default());
    super::par_chunks_mut(out, 16, |c, blocks| {
        let x = &x[c * 16 * QK_K..];
        blocks.iter_mut().zip(x.chunks_exact(QK_K)).for_each(|(o, x)| quantize_block(x, o));
    });
}

/// One block of [`quantize_rows_k`].
fn quantize_block(x: &[f32], o: &mut ActBlockK) {
    let amax = x.iter().fold(0f32, |a, v| a.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    for (q, v) in o.qs.iter_mut().zip(x) {
        // In range: |v * id| <= 127 by construction of `id`.
        *q = (v * id).round() as i8;
    }
    for (s, q) in o.sums.iter_mut().zip(o.qs.chunks_exact(QK)) {
        // In range: |Σ| <= 32 * 127.
        *s = q.iter().map(|&q| i32::from(q)).sum::<i32>() as i16;
    }
    o.d = d;
}

#[inline(always)]
fn dot_bytes<T: Copy + Into<i32>>(q: &[T], a: &[i8]) -> i32 {
    q.iter().zip(a).map(|(&q, &a)| q.into() * i32::from(a)).sum()
}

/// `(Σ_j sc_j·Σ q·q_a, Σ_j m_j·Σ q_a)` of a Q4_K/Q5_K block (`sub(j)` its weights as bytes).
#[inline(always)]
fn sums_with_mins(scales: &[u8; 12], sub: impl Fn(usize) -> [u8; QK], a: &ActBlockK) -> (i32, i32) {
    let (sc, m) = scales_mins(scales);
    let (mut sumi, mut summ) = (0i32, 0i32);
    for j in 0..SUBS {
        sumi += i32::from(sc[j]) * dot_bytes(&sub(j), a.sub(j));
        summ += i32::from(m[j]) * i32::from(a.sums[j]);
    }
    (sumi, summ)
}

/// One Q4_K weight row · one Q8_K activation row (portable).
pub(crate) fn dot_q4k(w: &[BlockQ4K], a: &[ActBlockK]) -> f32 {
    let mut sum = 0f32;
    for (b, a) in w.iter().zip(a) {
        let (sumi, summ) = sums_with_mins(&b.scales, |j| b.sub(j), a);
        sum += a.d * (b.d.to_f32() * sumi as f32 - b.dmin.to_f32() * summ as f32);
    }
    sum
}

/// One Q5_K weight row · one Q8_K activation row (portable).
pub(crate) fn dot_q5k(w: &[BlockQ5K], a: &[ActBlockK]) -> f32 {
    let mut sum = 0f32;
    for (b, a) in w.iter().zip(a) {
        let (sumi, summ) = sums_with_mins(&b.scales, |j| b.sub(j), a);
        sum += a.d * (b.d.to_f32() * sumi as f32 - b.dmin.to_f32() * summ as f32);
    }
    sum
}

/// One Q6_K weight row · one Q8_K activation row (portable; an i8 scale per 16 weights).
pub(crate) fn dot_q6k(w: &[BlockQ6K], a: &[ActBlockK]) -> f32 {
    let mut sum = 0f32;
    for (b, a) in w.iter().zip(a) {
        let mut sumi = 0i32;
        for j in 0..SUBS {
            let (q, qa) = (b.sub(j), a.sub(j));
            sumi += i32::from(b.scales[2 * j]) * dot_bytes(&q[..16], &qa[..16])
                + i32::from(b.scales[2 * j + 1]) * dot_bytes(&q[16..], &qa[16..]);
        }
        sum += a.d * b.d.to_f32() * sumi as f32;
    }
    sum
}

/// Activation rows the grouped (prompt) kernels take at once.
pub(crate) const ROWS: usize = 4;

/// `out[r * m + i] = W[row0 + r] · acts[i]` for the task's `out.len() / m` weight rows, `nb`
/// blocks per row: `dots` for groups of [`ROWS`] activation rows, `dot` for the rest.
#[inline(always)]
fn fill<B>(
    blocks: &[B],
    nb: usize,
    row0: usize,
    acts: &[ActBlockK],
    out: &mut [f32],
    dot: impl Fn(&[B], &[ActBlockK]) -> f32,
    dots: impl Fn(&[B], &[ActBlockK]) -> [f32; ROWS],
) {
    let m = acts.len() / nb;
    let rows = &blocks[row0 * nb..(row0 + out.len() / m) * nb];
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

/// [`fill`] with a one-row kernel `dot` (grouped rows one at a time).
#[inline(always)]
fn fill_rows<B>(
    blocks: &[B],
    nb: usize,
    row0: usize,
    acts: &[ActBlockK],
    out: &mut [f32],
    dot: impl Fn(&[B], &[ActBlockK]) -> f32 + Copy,
) {
    let dots = |w: &[B], a: &[ActBlockK]| std::array::from_fn(|i| dot(w, &a[i * nb..][..nb]));
    fill(blocks, nb, row0, acts, out, dot, dots);
}

impl QMatrix {
    /// Whether this matrix multiplies Q8_K activations ([`ActBlockK`]).
    pub(crate) fn takes_q8k(&self) -> bool {
        matches!(self.blocks, Blocks::Q4K(_) | Blocks::Q5K(_) | Blocks::Q6K(_))
    }

    /// `out[r * m + i] = W[row0 + r] · acts[i]` for one task; formats without
    /// [`QMatrix::takes_q8k`] leave `out` untouched (the caller checks).
    pub(crate) fn task_dots_q8k(&self, isa: Isa, row0: usize, acts: &[ActBlockK], out: &mut [f32]) {
        let nb = self.cols / QK_K;
        match (isa, &self.blocks) {
            (Isa::Portable, Blocks::Q4K(v)) => fill_rows(v, nb, row0, acts, out, dot_q4k),
            (Isa::Portable, Blocks::Q5K(v)) => fill_rows(v, nb, row0, acts, out, dot_q5k),
            (Isa::Portable, Blocks::Q6K(v)) => fill_rows(v, nb, row0, acts, out, dot_q6k),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2(s), Blocks::Q4K(v)) => simd::fill_avx2(s, v, nb, row0, acts, out, dot_q4k),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2(s), Blocks::Q5K(v)) => simd::fill_avx2(s, v, nb, row0, acts, out, dot_q5k),
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2(s), Blocks::Q6K(v)) => simd::fill_avx2(s, v, nb, row0, acts, out, dot_q6k),
            _ => {}
        }
    }
}

/// The AVX2 kernels: the sub-block unpacking of `quant/k/simd.rs`, integer accumulation here.
#[cfg(target_arch = "x86_64")]
pub(crate) mod simd {
    use std::arch::x86_64::{__m128i, __m256, __m256i};

    use bytemuck::cast;
    use pulp::x86::V3;

    use super::super::fill_grouped;
    use super::gemm::{Repack, fill_group};
    use super::{ActBlockK, fill_rows};

    /// Activation rows from which a task's weight rows are repacked for the grouped kernel
    /// (`quant/q8k/gemm.rs`), which pays the repacking once for all of them.
    const GROUPED_FROM: usize = 4;

    /// Sub-block `j`'s weights `q` · its activations, times its `scales`, as eight i32 lanes.
    #[inline(always)]
    fn sub_sums<B: Repack>(
        simd: V3,
        q: __m256i,
        scales: __m256i,
        ab: &ActBlockK,
        j: usize,
    ) -> __m256i {
        let qa: __m256i = cast(*ab.sub(j));
        let p = if B::SIGNED {
            let q_abs = simd.avx2._mm256_abs_epi8(q);
            simd.avx2._mm256_maddubs_epi16(q_abs, simd.avx2._mm256_sign_epi8(qa, q))
        } else {
            simd.avx2._mm256_maddubs_epi16(q, qa)
        };
        simd.avx2._mm256_madd_epi16(p, scales)
    }

    #[inline(always)]
    fn hsum(v: __m256) -> f32 {
        let v: [f32; 8] = cast(v);
        ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]))
    }

    /// One weight row · one activation row for generation: the block sums' eight lanes are
    /// scaled and accumulated as floats (one horizontal sum per row, not per block). It rounds
    /// differently from the portable kernels and the grouped kernel (within the same bound);
    /// a version exact per block, as they are, generated about 5 % slower.
    #[inline(always)]
    fn dot_lanes<B: Repack>(simd: V3, w: &[B], a: &[ActBlockK]) -> f32 {
        let (avx, avx2) = (simd.avx, simd.avx2);
        let mut acc = avx._mm256_setzero_ps();
        for (wb, ab) in w.iter().zip(a) {
            let mut isum = avx._mm256_setzero_si256();
            let dm = wb.visit(simd, |j, q, scales| {
                isum = avx2._mm256_add_epi32(isum, sub_sums::<B>(simd, q, scales, ab, j));
            });
            let scale = avx._mm256_set1_ps(wb.d() * ab.d);
            acc = simd.fma._mm256_fmadd_ps(avx._mm256_cvtepi32_ps(isum), scale, acc);
            if B::MINS {
                let sums: __m128i = cast(ab.sums);
                let sums = avx._mm256_cvtepi32_ps(avx2._mm256_cvtepi16_epi32(sums));
                let dm = avx._mm256_mul_ps(dm, avx._mm256_set1_ps(ab.d));
                acc = simd.fma._mm256_fnmadd_ps(dm, sums, acc);
            }
        }
        hsum(acc)
    }

    /// `out[r * m + i] = W[row0 + r] · acts[i]` for one task. A prompt ([`GROUPED_FROM`]
    /// activation rows or more) runs groups of eight weight rows through the repacking kernel
    /// and the rows past a multiple of eight through the portable kernel `portable`: the
    /// portable kernels' bits, however the rows are grouped. Generation runs [`dot_lanes`].
    pub(crate) fn fill_avx2<B: Repack>(
        s: V3,
        blocks: &[B],
        nb: usize,
        row0: usize,
        acts: &[ActBlockK],
        out: &mut [f32],
        portable: fn(&[B], &[ActBlockK]) -> f32,
    ) {
        s.vectorize(|| {
            if acts.len() / nb >= GROUPED_FROM {
                let group = |rows: &[B], out: &mut [f32]| fill_group(s, rows, nb, acts, out);
                fill_grouped(blocks, nb, row0, acts, out, group, portable);
            } else {
                fill_rows(blocks, nb, row0, acts, out, |w, a| dot_lanes(s, w, a));
            }
        });
    }
}

#[cfg(target_arch = "x86_64")]
mod gemm;
