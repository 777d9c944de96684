//! The matrix product of the BERT pass ([`matmul`]): right operands packed in panels (floats,
//! or int8 codes decoded a panel at a time), the left operand packed per block, and a 6 × 16
//! AVX2/FMA kernel tile through `pulp`'s safe intrinsics, a portable tile elsewhere.

use crate::quant::Isa;

/// Columns per packed panel of a right operand, and rows per kernel tile: a 6 × 16 tile is 12
/// AVX2 accumulators, two loads of the right operand and six broadcasts per step of the inner
/// dimension (the shape of BLIS's Haswell kernel).
const NR: usize = 16;
const MR: usize = 6;
/// Rows of the left operand packed at a time (216 KB, kept in L2 while every panel passes by; an
/// int8 panel is decoded once per this many rows: 72 cost a long batch 5 %), and the block of
/// the inner dimension (a panel's block, `KC × NR` floats, stays in L1).
const MC: usize = 144;
const KC: usize = 384;

/// A right operand (`k × n`) packed for [`matmul`]: its columns in panels of [`NR`], each panel
/// `k × NR` row-major and contiguous, zero past column `n`.
#[derive(Default)]
pub(super) struct Packed {
    data: Vec<f32>,
    k: usize,
    n: usize,
}

impl Packed {
    /// Packs the matrix whose element `(row, col)` is `at(row, col)`, reusing the allocation.
    pub(super) fn pack(&mut self, k: usize, n: usize, at: impl Fn(usize, usize) -> f32) {
        let panels = n.div_ceil(NR);
        self.data.clear();
        self.data.resize(panels * k * NR, 0.0);
        for p in 0..panels {
            let cols = NR.min(n - p * NR);
            for (kk, row) in
                self.data[p * k * NR..(p + 1) * k * NR].chunks_exact_mut(NR).enumerate()
            {
                for (c, v) in row[..cols].iter_mut().enumerate() {
                    *v = at(kk, p * NR + c);
                }
            }
        }
        self.k = k;
        self.n = n;
    }

    pub(super) fn new(k: usize, n: usize, at: impl Fn(usize, usize) -> f32) -> Self {
        let mut packed = Packed::default();
        packed.pack(k, n, at);
        packed
    }

    /// Rows `k0..k1` of panel `p`.
    fn panel(&self, p: usize, k0: usize, k1: usize) -> &[[f32; NR]] {
        self.data[(p * self.k + k0) * NR..(p * self.k + k1) * NR].as_chunks::<NR>().0
    }
}

/// A right operand (`k × n`) of int8 codes packed as [`Packed`] packs floats, with one scale per
/// `group` consecutive rows of each column (`k` a multiple of `group`): panel `p`'s scales are
/// `k / group` rows of [`NR`], zero past column `n`.
pub(super) struct PackedI8 {
    codes: Vec<i8>,
    scales: Vec<f32>,
    group: usize,
    k: usize,
    n: usize,
}

impl PackedI8 {
    /// Packs the matrix whose element `(row, col)` is `at(row, col)` = (code, its scale).
    pub(super) fn new(
        k: usize,
        n: usize,
        group: usize,
        at: impl Fn(usize, usize) -> (i8, f32),
    ) -> Self {
        let (panels, groups) = (n.div_ceil(NR), k / group);
        let mut codes = vec![0i8; panels * k * NR];
        let mut scales = vec![0.0f32; panels * groups * NR];
        for col in 0..n {
            let (p, c) = (col / NR, col % NR);
            for row in 0..k {
                let (code, scale) = at(row, col);
                codes[(p * k + row) * NR + c] = code;
                scales[(p * groups + row / group) * NR + c] = scale;
            }
        }
        PackedI8 { codes, scales, group, k, n }
    }

    /// Rows `k0..k1` of panel `p` decoded to F32 into `buf`, a run of rows that share their
    /// scales at a time by `decode`.
    #[inline(always)]
    fn decode<'b>(
        &self,
        p: usize,
        k0: usize,
        k1: usize,
        buf: &'b mut Vec<[f32; NR]>,
        decode: &impl Fn(&[[i8; NR]], &[f32; NR], &mut [[f32; NR]]),
    ) -> &'b [[f32; NR]] {
        // Every row is written below: grown, never cleared.
        if buf.len() < k1 - k0 {
            buf.resize(k1 - k0, [0.0; NR]);
        }
        let codes = self.codes[(p * self.k + k0) * NR..(p * self.k + k1) * NR].as_chunks::<NR>().0;
        let scales = self.scales[p * (self.k / self.group) * NR..].as_chunks::<NR>().0;
        let mut k = k0;
        while k < k1 {
            let end = ((k / self.group + 1) * self.group).min(k1);
            decode(&codes[k - k0..end - k0], &scales[k / self.group], &mut buf[k - k0..end - k0]);
            k = end;
        }
        &buf[..k1 - k0]
    }
}

/// `out[r][c] = codes[r][c] · scale[c]` with AVX2: eight codes widened to i32 and converted at a
/// time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn decode_avx2(s: pulp::x86::V3, codes: &[[i8; NR]], scale: &[f32; NR], out: &mut [[f32; NR]]) {
    let scale: [pulp::f32x8; 2] = bytemuck::cast(*scale);
    for (out, codes) in out.iter_mut().zip(codes) {
        let [lo, hi]: [u64; 2] = bytemuck::cast(*codes);
        let widen = |half: u64| {
            let bytes: pulp::i8x16 = bytemuck::cast([half, 0]);
            s.convert_i32x8_to_f32x8(s.convert_i8x16_to_i32x8(bytes))
        };
        let values = [s.mul_f32x8(widen(lo), scale[0]), s.mul_f32x8(widen(hi), scale[1])];
        *out = bytemuck::cast(values);
    }
}

/// [`decode_avx2`] for any CPU.
fn decode_portable(codes: &[[i8; NR]], scale: &[f32; NR], out: &mut [[f32; NR]]) {
    for (out, codes) in out.iter_mut().zip(codes) {
        for ((o, &c), &s) in out.iter_mut().zip(codes).zip(scale) {
            *o = f32::from(c) * s;
        }
    }
}

/// The right operand of a [`matmul`].
#[derive(Clone, Copy)]
pub(super) enum Rhs<'a> {
    F32(&'a Packed),
    Int8(&'a PackedI8),
}

impl<'a> Rhs<'a> {
    pub(super) fn k(self) -> usize {
        match self {
            Rhs::F32(p) => p.k,
            Rhs::Int8(p) => p.k,
        }
    }

    pub(super) fn n(self) -> usize {
        match self {
            Rhs::F32(p) => p.n,
            Rhs::Int8(p) => p.n,
        }
    }

    /// Rows `k0..k1` of panel `p` as F32: the packed floats, or int8 codes decoded into `buf`.
    #[inline(always)]
    fn panel<'b>(
        self,
        p: usize,
        k0: usize,
        k1: usize,
        buf: &'b mut Vec<[f32; NR]>,
        decode: &impl Fn(&[[i8; NR]], &[f32; NR], &mut [[f32; NR]]),
    ) -> &'b [[f32; NR]]
    where
        'a: 'b,
    {
        match self {
            Rhs::F32(packed) => packed.panel(p, k0, k1),
            Rhs::Int8(packed) => packed.decode(p, k0, k1, buf, decode),
        }
    }
}

/// Buffers a [`matmul`] reuses: the packed left operand, and a decoded int8 panel.
#[derive(Default)]
pub(crate) struct Work {
    apack: Vec<f32>,
    panel: Vec<[f32; NR]>,
}

/// A kernel tile's result: `MR` rows of `NR` columns.
type Tile = [[f32; NR]; MR];

/// `dst = scale · lhs·rhs`, or `dst += scale · lhs·rhs` when `accumulate`, on this thread:
/// `rows` rows, `rhs.n` columns, row `r` of `dst` at `dst[r·dst_stride..]` and of `lhs` (with
/// `rhs.k` columns) at `lhs[r·lhs_stride..]`. `work` holds the buffers it reuses.
#[allow(clippy::too_many_arguments)] // one product's shape; a struct would only rename them
pub(super) fn matmul(
    isa: Isa,
    dst: &mut [f32],
    dst_stride: usize,
    rows: usize,
    lhs: &[f32],
    lhs_stride: usize,
    rhs: Rhs<'_>,
    accumulate: bool,
    scale: f32,
    work: &mut Work,
) {
    let p = Product { dst_stride, rows, lhs, lhs_stride, rhs, accumulate, scale };
    match isa {
        // The whole product, kernel inlined, compiles with AVX2 and FMA on.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2(s) => s.vectorize(|| {
            let decode = |c: &[[i8; NR]], sc: &[f32; NR], o: &mut [[f32; NR]]| {
                decode_avx2(s, c, sc, o);
            };
            p.run(dst, work, |a, b, r| tile_avx2(s, a, b, r), decode);
        }),
        Isa::Portable => p.run(dst, work, tile_portable, decode_portable),
    }
}

/// The operands of one [`matmul`].
struct Product<'a> {
    dst_stride: usize,
    rows: usize,
    lhs: &'a [f32],
    lhs_stride: usize,
    rhs: Rhs<'a>,
    accumulate: bool,
    scale: f32,
}

impl Product<'_> {
    #[inline(always)]
    fn run(
        &self,
        dst: &mut [f32],
        work: &mut Work,
        tile: impl Fn(&[[f32; MR]], &[[f32; NR]], usize) -> Tile,
        decode: impl Fn(&[[i8; NR]], &[f32; NR], &mut [[f32; NR]]),
    ) {
        let (k, n, rows) = (self.rhs.k(), self.rhs.n(), self.rows);
        let Work { apack, panel: decoded } = work;
        for k0 in (0..k.max(1)).step_by(KC) {
            let k1 = (k0 + KC).min(k);
            let kc = k1 - k0;
            let add = self.accumulate || k0 > 0;
            for i0 in (0..rows).step_by(MC) {
                let mc = MC.min(rows - i0);
                let blocks = mc.div_ceil(MR);
                // Left operand rows i0.., columns k0..k1, as [block][k][MR] (zero-padded rows).
                apack.clear();
                apack.resize(blocks * kc * MR, 0.0);
                for r in 0..mc {
                    let src = &self.lhs[(i0 + r) * self.lhs_stride + k0..][..kc];
                    let (block, lane) = (r / MR, r % MR);
                    for (kk, &v) in src.iter().enumerate() {
                        apack[(block * kc + kk) * MR + lane] = v;
                    }
                }
                for p in 0..n.div_ceil(NR) {
                    let panel = self.rhs.panel(p, k0, k1, decoded, &decode);
                    let cols = NR.min(n - p * NR);
                    for block in 0..blocks {
                        let a = apack[block * kc * MR..(block + 1) * kc * MR].as_chunks::<MR>().0;
                        let r0 = i0 + block * MR;
                        let live = MR.min(rows - r0);
                        let t = tile(a, panel, live);
                        for (r, t) in t.iter().enumerate().take(live) {
                            let out = &mut dst[(r0 + r) * self.dst_stride + p * NR..][..cols];
                            for (o, &v) in out.iter_mut().zip(t) {
                                *o = if add { self.scale.mul_add(v, *o) } else { self.scale * v };
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One tile of up to 6 × 16: `Σ_k a[k][r] · b[k][c]` for the first `live` rows (the rest are
/// zero), with AVX2 FMAs in two accumulators per row. A short text's last rows are not
/// computed: a query of three tokens costs half a full tile.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tile_avx2(s: pulp::x86::V3, a: &[[f32; MR]], b: &[[f32; NR]], live: usize) -> Tile {
    match live {
        1 => tile_avx2_rows::<1>(s, a, b),
        2 => tile_avx2_rows::<2>(s, a, b),
        3 => tile_avx2_rows::<3>(s, a, b),
        4 => tile_avx2_rows::<4>(s, a, b),
        5 => tile_avx2_rows::<5>(s, a, b),
        _ => tile_avx2_rows::<MR>(s, a, b),
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tile_avx2_rows<const R: usize>(s: pulp::x86::V3, a: &[[f32; MR]], b: &[[f32; NR]]) -> Tile {
    let zero = s.splat_f32x8(0.0);
    let mut acc = [[zero; 2]; R];
    for (a, b) in a.iter().zip(b) {
        let b: [pulp::f32x8; 2] = bytemuck::cast(*b);
        for (acc, &a) in acc.iter_mut().zip(a) {
            let a = s.splat_f32x8(a);
            acc[0] = s.mul_add_f32x8(a, b[0], acc[0]);
            acc[1] = s.mul_add_f32x8(a, b[1], acc[1]);
        }
    }
    let mut tile = [[0.0; NR]; MR];
    for (t, acc) in tile.iter_mut().zip(acc) {
        *t = bytemuck::cast(acc);
    }
    tile
}

/// [`tile_avx2`] for any CPU.
fn tile_portable(a: &[[f32; MR]], b: &[[f32; NR]], live: usize) -> Tile {
    let mut acc = [[0.0f32; NR]; MR];
    for (a, b) in a.iter().zip(b) {
        for (acc, &a) in acc.iter_mut().zip(a).take(live) {
            for (acc, &b) in acc.iter_mut().zip(b) {
                *acc += a * b;
            }
        }
    }
    acc
}
