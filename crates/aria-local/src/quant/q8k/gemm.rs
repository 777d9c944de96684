//! The prompt kernel of the K-quant products: eight weight rows against four activation rows
//! at a time, on a copy of the eight rows that the task unpacks and interleaves first.
//!
//! Why: in the row-at-a-time kernel every 32 weights cost a byte multiply-add (`vpmaddubsw`),
//! a word multiply-add by the sub-block's scale (`vpmaddwd`) and an add, per activation row,
//! plus the unpacking of the weights. Here one 32-byte register holds four consecutive weights
//! of each of eight rows, multiplied against four activation bytes broadcast to all eight
//! (`vpmaddubsw` again); the i16 results of a whole scale unit (32 weights for Q4_K, 16 for
//! Q5_K and Q6_K, chosen so the i16 sums cannot overflow) are added as i16 before one
//! `vpmaddwd` by the eight rows' scales, and its eight i32 lanes are the eight rows' sums: no
//! horizontal sums, and the unpacking is paid once per task rather than per activation row.
//! This is the shape of llama.cpp's repacked `q4_K_8x8` GEMM; llama.cpp keeps a repacked copy
//! of the whole model, where ours repacks the task's 8 rows into a per-thread scratch buffer
//! (2.7 KB per block column) and the mapped weights stay the only copy. The repacking is
//! paid once per task for all its activation rows, so [`super::simd::fill_avx2`] takes this
//! path for prompts only (four rows or more); generation keeps the row-at-a-time kernel.
//!
//! The integer sums are exact, and the float part is the portable kernels' expression per
//! block in the same order (`d_a·(d·Σ − dmin·Σm)` or `d_a·d·Σ`, no fused multiply-add), so a
//! prompt's results equal the portable kernels' to the bit (the tests check), whichever rows
//! went through this kernel and however they were grouped.
//!
//! Integer ranges: a pair of byte products is at most 2·32·127; a unit adds 16 products of at
//! most 15·127 (Q4_K, 30,480), 31·127 (Q5_K, 31,496) or 32·127 (Q6_K, sign moved onto the
//! activation, 32,512) per i16 lane, inside 32,767.

use std::arch::x86_64::{__m256, __m256i};
use std::cell::RefCell;

use bytemuck::cast;
use pulp::x86::V3;

use super::super::k::simd::SimdBlock;
use super::super::k::{BlockQ4K, BlockQ5K, BlockQ6K, SUBS, scales_mins};
use super::super::{GROUP, GROUP_ACTS, act_word, put_grouped};
use super::ActBlockK;

/// Four-weight chunks per 256-weight block.
const CHUNKS: usize = 64;

/// One 256-weight block of [`GROUP`] rows, unpacked and interleaved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packed {
    /// Chunk `c`: weights `4c..4c + 4` of row `r` in word `r`, one byte each (0..16 for Q4_K,
    /// 0..32 for Q5_K, -32..32 for Q6_K).
    q: [[u32; GROUP]; CHUNKS],
    /// Unit `u`'s scale of row `r` in lanes `2r` and `2r + 1`.
    scales: [[i16; 2 * GROUP]; 16],
    /// Minimums `m_{2p}`, `m_{2p+1}` of row `r` in lanes `2r`, `2r + 1` of entry `p`.
    mins: [[i16; 2 * GROUP]; SUBS / 2],
    d: [f32; GROUP],
    dmin: [f32; GROUP],
}

impl Default for Packed {
    fn default() -> Self {
        Packed {
            q: [[0; GROUP]; CHUNKS],
            scales: [[0; 2 * GROUP]; 16],
            mins: [[0; 2 * GROUP]; SUBS / 2],
            d: [0.0; GROUP],
            dmin: [0.0; GROUP],
        }
    }
}

/// A K-quant format as the grouped kernel sees it.
pub(crate) trait Repack: SimdBlock {
    /// Scale units per block: the chunks of a unit share each row's scale and are summed as
    /// i16 before the scale is applied (8 units of 32 weights, or 16 of 16).
    const UNITS: usize;
    /// Each unit's scale (entries past [`Self::UNITS`] unused).
    fn unit_scales(&self) -> [i16; 16];
}

impl Repack for BlockQ4K {
    const UNITS: usize = 8;
    fn unit_scales(&self) -> [i16; 16] {
        let (sc, _) = scales_mins(&self.scales);
        std::array::from_fn(|u| i16::from(sc[u % SUBS]))
    }
}

impl Repack for BlockQ5K {
    // 16, not 8: eight chunks of 5-bit products could overflow an i16 lane.
    const UNITS: usize = 16;
    fn unit_scales(&self) -> [i16; 16] {
        let (sc, _) = scales_mins(&self.scales);
        std::array::from_fn(|u| i16::from(sc[u / 2]))
    }
}

impl Repack for BlockQ6K {
    const UNITS: usize = 16;
    fn unit_scales(&self) -> [i16; 16] {
        std::array::from_fn(|u| i16::from(self.scales[u]))
    }
}

thread_local! {
    /// Each worker's interleaved copy of its current group of rows.
    static SCRATCH: RefCell<Vec<Packed>> = const { RefCell::new(Vec::new()) };
}

/// Unpacks and interleaves [`GROUP`] rows (`rows`, `nb` blocks each, back to back) into `out`.
#[inline(always)]
fn repack<B: Repack>(simd: V3, rows: &[B], nb: usize, out: &mut Vec<Packed>) {
    out.resize(nb, Packed::default());
    for (r, row) in rows.chunks_exact(nb).enumerate() {
        for (b, p) in row.iter().zip(out.iter_mut()) {
            b.visit(simd, |j, q, _| {
                let words: [u32; 8] = cast(q);
                for (k, w) in words.into_iter().enumerate() {
                    p.q[8 * j + k][r] = w;
                }
            });
            for (u, s) in b.unit_scales().into_iter().take(B::UNITS).enumerate() {
                p.scales[u][2 * r] = s;
                p.scales[u][2 * r + 1] = s;
            }
            if B::MINS {
                let m: [i16; SUBS] = cast(b.mins(simd));
                for (pair, m) in p.mins.iter_mut().zip(m.chunks_exact(2)) {
                    pair[2 * r] = m[0];
                    pair[2 * r + 1] = m[1];
                }
                p.dmin[r] = b.dmin();
            }
            p.d[r] = b.d();
        }
    }
}

/// The [`GROUP`] rows of `packed` against `R` activation rows held back to back in `a`:
/// lane `r` of result `i` is row `r` · activation row `i`.
#[inline(always)]
fn dots<B: Repack, const R: usize>(simd: V3, packed: &[Packed], a: &[ActBlockK]) -> [__m256; R] {
    let nb = packed.len();
    let (avx, avx2) = (simd.avx, simd.avx2);
    let mut acc = [avx._mm256_setzero_ps(); R];
    let chunks_per_unit = CHUNKS / B::UNITS;
    for (s, p) in packed.iter().enumerate() {
        let blocks: [&ActBlockK; R] = std::array::from_fn(|i| &a[i * nb + s]);
        let mut isum = [avx._mm256_setzero_si256(); R];
        for u in 0..B::UNITS {
            let mut units = [avx._mm256_setzero_si256(); R];
            for c in u * chunks_per_unit..(u + 1) * chunks_per_unit {
                let w: __m256i = cast(p.q[c]);
                let w_abs = if B::SIGNED { avx2._mm256_abs_epi8(w) } else { w };
                for (unit, ab) in units.iter_mut().zip(blocks) {
                    let x = avx._mm256_set1_epi32(act_word(&ab.qs, c));
                    let prod = if B::SIGNED {
                        avx2._mm256_maddubs_epi16(w_abs, avx2._mm256_sign_epi8(x, w))
                    } else {
                        avx2._mm256_maddubs_epi16(w, x)
                    };
                    *unit = avx2._mm256_add_epi16(*unit, prod);
                }
            }
            let scales: __m256i = cast(p.scales[u]);
            for (isum, unit) in isum.iter_mut().zip(units) {
                *isum = avx2._mm256_add_epi32(*isum, avx2._mm256_madd_epi16(unit, scales));
            }
        }
        let d: __m256 = cast(p.d);
        for ((acc, isum), ab) in acc.iter_mut().zip(isum).zip(blocks) {
            let da = avx._mm256_set1_ps(ab.d);
            let sumi = avx._mm256_cvtepi32_ps(isum);
            // The portable kernels' expression, operation for operation (see the module note).
            let t = if B::MINS {
                let sums: [i32; SUBS / 2] = cast(ab.sums);
                let mut summ = avx._mm256_setzero_si256();
                for (mins, s) in p.mins.iter().zip(sums) {
                    let prod = avx2._mm256_madd_epi16(cast(*mins), avx._mm256_set1_epi32(s));
                    summ = avx2._mm256_add_epi32(summ, prod);
                }
                let dmin: __m256 = cast(p.dmin);
                let body = avx._mm256_sub_ps(
                    avx._mm256_mul_ps(d, sumi),
                    avx._mm256_mul_ps(dmin, avx._mm256_cvtepi32_ps(summ)),
                );
                avx._mm256_mul_ps(da, body)
            } else {
                avx._mm256_mul_ps(avx._mm256_mul_ps(da, d), sumi)
            };
            *acc = avx._mm256_add_ps(*acc, t);
        }
    }
    acc
}

/// `out[r * m + i] = rows[r] · acts[i]` for [`GROUP`] weight rows (`nb` blocks each) and all
/// `m` activation rows, through the worker's scratch copy of the rows.
#[inline(always)]
pub(crate) fn fill_group<B: Repack>(
    simd: V3,
    rows: &[B],
    nb: usize,
    acts: &[ActBlockK],
    out: &mut [f32],
) {
    SCRATCH.with_borrow_mut(|packed| {
        repack(simd, rows, nb, packed);
        let dots4 = |group: &[_]| dots::<B, GROUP_ACTS>(simd, packed, group);
        put_grouped(acts, nb, out, dots4, |act| dots::<B, 1>(simd, packed, act));
    });
}
