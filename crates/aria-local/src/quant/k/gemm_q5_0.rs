//! The prompt kernel of the Q5_0 products (the 0.5B model's 896-wide projections): eight
//! weight rows against four activation rows at a time, on a per-task copy of the eight rows
//! unpacked to signed bytes and interleaved — the shape of `quant/q8k/gemm.rs` (which says why)
//! for Q5_0's 32-weight blocks and the 32-value activation blocks.
//!
//! One 32-byte register holds four consecutive weights of each of the eight rows; the four
//! activation bytes are broadcast, the weights' signs moved onto them (`|w| · sign(w)·a`), and
//! a block's eight byte products are added as i16 (each lane at most 16 products of
//! 16·127 = 32,512) before one `vpmaddwd` by ones gives the eight rows' exact sums. The float
//! part is the portable kernel's expression per block (`Σ as f32 · d_w · d_a`, in that order),
//! so a prompt's results equal [`super::dot_q5_0`]'s to the bit however its rows are grouped.

use std::arch::x86_64::{__m256, __m256i};
use std::cell::RefCell;

use bytemuck::cast;
use pulp::x86::V3;

use super::super::{GROUP, GROUP_ACTS, act_word, put_grouped};
use super::simd::unpack_q5_0;
use super::{ActBlock, BlockQ5_0, QK};

/// Four-weight chunks per block.
const CHUNKS: usize = QK / 4;

/// One 32-weight block of [`GROUP`] rows: chunk `c` holds weights `4c..4c + 4` of row `r`
/// (signed bytes) in word `r`, and `d[r]` the row's scale.
#[derive(Debug, Clone, Copy, Default)]
struct Packed {
    q: [[u32; GROUP]; CHUNKS],
    d: [f32; GROUP],
}

thread_local! {
    /// Each worker's interleaved copy of its current group of rows.
    static SCRATCH: RefCell<Vec<Packed>> = const { RefCell::new(Vec::new()) };
}

#[inline(always)]
fn repack(simd: V3, rows: &[BlockQ5_0], nb: usize, out: &mut Vec<Packed>) {
    out.resize(nb, Packed::default());
    for (r, row) in rows.chunks_exact(nb).enumerate() {
        for (b, p) in row.iter().zip(out.iter_mut()) {
            let words: [u32; CHUNKS] = cast(unpack_q5_0(simd, b));
            for (c, w) in words.into_iter().enumerate() {
                p.q[c][r] = w;
            }
            p.d[r] = b.d.to_f32();
        }
    }
}

/// The [`GROUP`] rows of `packed` against `R` activation rows held back to back in `a`:
/// lane `r` of result `i` is row `r` · activation row `i`.
#[inline(always)]
fn dots<const R: usize>(simd: V3, packed: &[Packed], a: &[ActBlock]) -> [__m256; R] {
    let nb = packed.len();
    let (avx, avx2) = (simd.avx, simd.avx2);
    let ones = avx._mm256_set1_epi16(1);
    let mut acc = [avx._mm256_setzero_ps(); R];
    for (s, p) in packed.iter().enumerate() {
        let blocks: [&ActBlock; R] = std::array::from_fn(|i| &a[i * nb + s]);
        let mut sums = [avx._mm256_setzero_si256(); R];
        for (c, w) in p.q.iter().enumerate() {
            let w: __m256i = cast(*w);
            let w_abs = avx2._mm256_abs_epi8(w);
            for (sum, ab) in sums.iter_mut().zip(blocks) {
                let x = avx2._mm256_sign_epi8(avx._mm256_set1_epi32(act_word(&ab.qs, c)), w);
                *sum = avx2._mm256_add_epi16(*sum, avx2._mm256_maddubs_epi16(w_abs, x));
            }
        }
        let d: __m256 = cast(p.d);
        for ((acc, sum), ab) in acc.iter_mut().zip(sums).zip(blocks) {
            let sumi = avx._mm256_cvtepi32_ps(avx2._mm256_madd_epi16(sum, ones));
            // The portable kernel's expression, operation for operation.
            let t = avx._mm256_mul_ps(avx._mm256_mul_ps(sumi, d), avx._mm256_set1_ps(ab.d));
            *acc = avx._mm256_add_ps(*acc, t);
        }
    }
    acc
}

/// `out[r * m + i] = rows[r] · acts[i]` for [`GROUP`] weight rows (`nb` blocks each) and all
/// `m` activation rows, through the worker's scratch copy of the rows.
#[inline(always)]
pub(crate) fn fill_group(
    simd: V3,
    rows: &[BlockQ5_0],
    nb: usize,
    acts: &[ActBlock],
    out: &mut [f32],
) {
    SCRATCH.with_borrow_mut(|packed| {
        repack(simd, rows, nb, packed);
        let dots4 = |group: &[_]| dots::<GROUP_ACTS>(simd, packed, group);
        put_grouped(acts, nb, out, dots4, |act| dots::<1>(simd, packed, act));
    });
}
