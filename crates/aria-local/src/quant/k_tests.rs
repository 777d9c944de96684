//! The K-quant and Q5_0 kernels of `quant/k.rs` against candle's dequantisation (bit for bit),
//! against the f64 product of the dequantised weights and activations, against candle's
//! `QMatMul` (which quantises activations as ggml does), and AVX2 against portable.

use candle_core::Device;
use candle_core::quantized::ggml_file::qtensor_from_ggml;
use candle_core::quantized::{GgmlDType, QTensor};
use half::f16;

use super::k::{SUBS, scales_mins};
use super::tests::both;
use super::*;

const FORMATS: [GgmlDType; 4] = [GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K, GgmlDType::Q5_0];

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A uniform value in [-a, a).
    fn uniform(&mut self, a: f32) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * a
    }
}

/// Where a format keeps its f16 scales, its 6-bit/i8 sub-block scales, and its quants.
fn layout(dtype: GgmlDType) -> (&'static [usize], std::ops::Range<usize>, std::ops::Range<usize>) {
    match dtype {
        GgmlDType::Q4K => (&[0, 2], 4..16, 16..144),
        GgmlDType::Q5K => (&[0, 2], 4..16, 16..176),
        GgmlDType::Q6K => (&[208], 192..208, 0..192),
        GgmlDType::Q5_0 => (&[0], 2..2, 2..22),
        other => panic!("{other:?} has no kernel here"),
    }
}

/// GGUF bytes of `n` blocks cycling through: random; all quants 0 (every weight at its
/// minimum) with the smallest subnormal f16 scales; all quants 0xFF (at its maximum); every byte 0xFF with `d = dmin = f16::MAX`
/// (largest sub-block scales and minimums); `d = -f16::MAX` and the smallest subnormal
/// `dmin`; `d = dmin = 0`. With `extreme_scales` false the last three keep ordinary f16 scales.
pub(super) fn raw_blocks(dtype: GgmlDType, n: usize, seed: u64, extreme_scales: bool) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let (halves, scales, quants) = layout(dtype);
    let mut bytes = Vec::new();
    for i in 0..n {
        let mut b: Vec<u8> = (0..dtype.type_size()).map(|_| rng.next() as u8).collect();
        let case = i % 6;
        match case {
            1 => b[quants.clone()].fill(0),
            2 => b[quants.clone()].fill(0xFF),
            3 => {
                b[quants.clone()].fill(0xFF);
                b[scales.clone()].fill(0xFF);
            }
            _ => {}
        }
        for (k, &at) in halves.iter().enumerate() {
            let v = match (case, k, extreme_scales) {
                (3, _, true) => f16::MAX,
                (4, 0, true) => -f16::MAX,
                (4, _, true) | (1, _, true) => f16::from_bits(1),
                (5, _, true) => f16::ZERO,
                _ => f16::from_f32(rng.uniform(0.05)),
            };
            b[at..at + 2].copy_from_slice(&v.to_bits().to_le_bytes());
        }
        bytes.extend(b);
    }
    bytes
}

pub(super) fn from_raw(
    dtype: GgmlDType,
    rows: usize,
    cols: usize,
    bytes: &[u8],
) -> (QTensor, QMatrix) {
    let q = qtensor_from_ggml(dtype, bytes, vec![rows, cols], &Device::Cpu).unwrap();
    let mut ours = QMatrix::with_capacity(dtype, rows, cols).unwrap();
    ours.push_bytes(bytes);
    assert!(ours.is_complete());
    (q, ours)
}

fn dequantized(q: &QTensor) -> Vec<f32> {
    q.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

#[test]
fn dequantisation_is_bit_identical_to_candles_for_random_and_extreme_blocks() {
    for dtype in FORMATS {
        let bs = dtype.block_size();
        let (rows, cols) = (6, 6 * bs);
        let mut cases = vec![from_raw(dtype, rows, cols, &raw_blocks(dtype, 36, 1, true))];
        cases.push(both(dtype, rows, cols, 2));
        for (q, ours) in cases {
            let reference = dequantized(&q);
            let mut row = vec![f32::NAN; cols];
            for r in 0..rows {
                ours.dequantize_row(r, &mut row);
                for (k, (a, b)) in row.iter().zip(&reference[r * cols..]).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "{dtype:?} row {r} weight {k}: {a} {b}");
                }
            }
        }
        // The extreme blocks really are extreme: huge, tiny and zero weights all occur.
        let (q, _) = from_raw(dtype, rows, cols, &raw_blocks(dtype, 36, 1, true));
        let w = dequantized(&q);
        let big = w.iter().filter(|v| v.abs() > 1e5).count();
        let tiny = w.iter().filter(|v| **v != 0.0 && v.abs() < 1e-5).count();
        assert!(big >= bs / 2 && tiny > 0 && w.contains(&0.0), "{dtype:?}: {big} {tiny}");
    }
}

#[test]
fn k_formats_are_supported_and_need_whole_blocks() {
    for dtype in FORMATS {
        assert!(supported(dtype), "{dtype:?}");
        let bs = dtype.block_size();
        assert!(QMatrix::with_capacity(dtype, 3, bs * 2).is_some());
        assert!(QMatrix::with_capacity(dtype, 3, bs + 32 * usize::from(bs == 32)).is_some());
        assert!(QMatrix::with_capacity(dtype, 3, bs / 2).is_none(), "{dtype:?}");
    }
    // Qwen2.5-0.5B's 896-wide rows are 3.5 K-quant blocks.
    assert!(QMatrix::with_capacity(GgmlDType::Q4K, 1, 896).is_none());
    assert!(QMatrix::with_capacity(GgmlDType::Q5_0, 1, 896).is_some());
}

/// For weight row `r` against one activation row: `(Σ |terms| of the float sum, Σ |dmin·m_j·s_j|)`.
/// The first is what rounding errors scale with (each sub-block's `|d·d_a|·Σ|sc·q·q_a|` and
/// its minimum term); the second what the f16 rounding of `s` scales with.
fn magnitudes(w: &QMatrix, r: usize, act: &[ActBlock]) -> (f64, f64) {
    fn abs_dot(q: impl IntoIterator<Item = i32>, a: &ActBlock) -> f64 {
        q.into_iter().zip(a.qs).map(|(q, a)| f64::from((q * i32::from(a)).abs())).sum()
    }
    let nbw = w.cols / w.block_weights();
    let (mut terms, mut mins) = (0f64, 0f64);
    let row = r * nbw..(r + 1) * nbw;
    let mut with_mins =
        |d: f16, dmin: f16, sc: [u8; 8], m: [u8; 8], subs: [[u8; 32]; 8], a: &[ActBlock]| {
            for j in 0..SUBS {
                let q = subs[j].iter().map(|&q| i32::from(q) * i32::from(sc[j]));
                terms += f64::from(d.to_f32() * a[j].d).abs() * abs_dot(q, &a[j]);
                let min = f64::from(dmin.to_f32() * f32::from(m[j]) * a[j].s).abs();
                terms += min;
                mins += min;
            }
        };
    match &w.blocks {
        Blocks::Q4K(v) => {
            for (b, a) in v[row].iter().zip(act.chunks_exact(SUBS)) {
                let (sc, m) = scales_mins(&b.scales);
                with_mins(b.d, b.dmin, sc, m, std::array::from_fn(|j| b.sub(j)), a);
            }
        }
        Blocks::Q5K(v) => {
            for (b, a) in v[row].iter().zip(act.chunks_exact(SUBS)) {
                let (sc, m) = scales_mins(&b.scales);
                with_mins(b.d, b.dmin, sc, m, std::array::from_fn(|j| b.sub(j)), a);
            }
        }
        Blocks::Q6K(v) => {
            for (b, a) in v[row].iter().zip(act.chunks_exact(SUBS)) {
                for (j, a) in a.iter().enumerate() {
                    let q = b.sub(j).into_iter().enumerate();
                    let q = q.map(|(l, q)| i32::from(q) * i32::from(b.scales[2 * j + l / 16]));
                    terms += f64::from(b.d.to_f32() * a.d).abs() * abs_dot(q, a);
                }
            }
        }
        Blocks::Q5_0(v) => {
            for (b, a) in v[row].iter().zip(act) {
                let q = b.weights().map(i32::from);
                terms += f64::from(b.d.to_f32() * a.d).abs() * abs_dot(q, a);
            }
        }
        Blocks::Q4_1(_) | Blocks::Q8_0(_) => panic!("not a format of quant/k.rs"),
    }
    (terms, mins)
}

/// Worst-case error of two f32 summations of the same `terms` in different orders
/// (`≤ (number of additions)·ε·Σ|terms|` each), with room for the per-block products.
fn rounding_bound(w: &QMatrix, terms: f64) -> f64 {
    let subs = (w.cols / QK) as f64;
    2.0 * (subs + 16.0) * f64::from(f32::EPSILON) * terms
}

/// Matrices to multiply: quantised from float values by candle, and raw blocks with the
/// extreme quant patterns (ordinary f16 scales). Shapes are Qwen2.5-Coder's (0.5B: 896 wide
/// Q5_0 rows, 4864 wide feed-forward down; 1.5B: 1536, 8960) with fewer, odd row counts;
/// more than 16 rows spread a product over several tasks.
fn matrices() -> Vec<(GgmlDType, QMatrix, &'static str)> {
    let mut out = Vec::new();
    for (seed, (dtype, rows, cols)) in (10..).zip([
        (GgmlDType::Q4K, 37, 1536),
        (GgmlDType::Q5K, 21, 512),
        (GgmlDType::Q6K, 19, 4864),
        (GgmlDType::Q5_0, 35, 896),
        (GgmlDType::Q4K, 3, 8960),
    ]) {
        out.push((dtype, both(dtype, rows, cols, seed).1, "quantised"));
    }
    for (seed, dtype) in (20..).zip(FORMATS) {
        let (rows, cols) = (17, 4 * dtype.block_size());
        let bytes = raw_blocks(dtype, rows * cols / dtype.block_size(), seed, false);
        out.push((dtype, from_raw(dtype, rows, cols, &bytes).1, "raw"));
    }
    out
}

fn product_with(isa: Isa, w: &QMatrix, acts: &[ActBlock], m: usize) -> Vec<f32> {
    let mut out_t = vec![f32::NAN; w.rows * m];
    matmul_t_with(isa, vec![Product { w, out_t: &mut out_t }], acts);
    out_t
}

/// The f64 product of the dequantised weights and the dequantised activations: the exact
/// value of what the kernels compute.
fn reference(w: &QMatrix, acts: &[ActBlock], m: usize) -> Vec<f64> {
    let nba = w.cols / QK;
    let mut row = vec![0f32; w.cols];
    let mut out = vec![0f64; w.rows * m];
    for r in 0..w.rows {
        w.dequantize_row(r, &mut row);
        for i in 0..m {
            let act = &acts[i * nba..(i + 1) * nba];
            out[r * m + i] = row
                .chunks_exact(QK)
                .zip(act)
                .map(|(w, a)| {
                    let s: f64 =
                        w.iter().zip(a.qs).map(|(w, q)| f64::from(*w) * f64::from(q)).sum();
                    s * f64::from(a.d)
                })
                .sum();
        }
    }
    out
}

#[test]
fn portable_products_equal_the_exact_product_of_the_dequantised_values() {
    for (dtype, w, kind) in matrices() {
        let nba = w.cols / QK;
        for m in [1, 5] {
            let mut acts = Vec::new();
            quantize_rows(&super::tests::values(m * w.cols, 3), w.cols, &mut acts);
            let got = product_with(Isa::Portable, &w, &acts, m);
            let exact = reference(&w, &acts, m);
            for r in 0..w.rows {
                for i in 0..m {
                    let (terms, mins) = magnitudes(&w, r, &acts[i * nba..(i + 1) * nba]);
                    // Rounding, and `s` held at f16 precision (relative error ≤ 2⁻¹¹).
                    let bound = rounding_bound(&w, terms) + mins / 1024.0;
                    let (a, b) = (f64::from(got[r * m + i]), exact[r * m + i]);
                    assert!(
                        (a - b).abs() <= bound,
                        "{dtype:?} {kind} {r},{i}: {a} vs {b} ({bound})"
                    );
                }
            }
        }
    }
}

#[test]
fn products_are_within_activation_quantisation_error_of_f32_and_of_candle() {
    // Candle quantises activations as ggml does (Q8_K for the K-quants, Q8_0 for Q5_0); both
    // round each activation by at most half a step, max|x|/254, so each result is within
    // Σ|w|·max|x|/254 of the unquantised product.
    for (dtype, rows, cols) in [
        (GgmlDType::Q4K, 40, 1536),
        (GgmlDType::Q5K, 24, 768),
        (GgmlDType::Q6K, 24, 1024),
        (GgmlDType::Q5_0, 40, 896),
    ] {
        for m in [1, 4] {
            let (q, ours) = both(dtype, rows, cols, 30);
            let w = dequantized(&q);
            let x = super::tests::values(m * cols, 31);
            let got = super::tests::ours_product(&ours, &x, m);
            let theirs = super::tests::candle_product(q, &x, m);
            for i in 0..m {
                let x = &x[i * cols..(i + 1) * cols];
                let xmax = x.iter().fold(0f32, |a, v| a.max(v.abs()));
                for r in 0..rows {
                    let w = &w[r * cols..(r + 1) * cols];
                    let exact: f32 = w.iter().zip(x).map(|(a, b)| a * b).sum();
                    let bound = 1.05 * w.iter().map(|v| v.abs()).sum::<f32>() * xmax / 254.0;
                    let (a, b) = (got[i * rows + r], theirs[i * rows + r]);
                    assert!((a - exact).abs() <= bound, "{dtype:?} {r},{i}: {a} vs f32 {exact}");
                    assert!((a - b).abs() <= 2.0 * bound, "{dtype:?} {r},{i}: {a} vs candle {b}");
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn avx2() -> Option<pulp::x86::V3> {
    let token = pulp::x86::V3::try_new();
    if token.is_none() {
        eprintln!("skipped: this CPU has no AVX2/FMA, so only the portable kernels ever run");
    }
    token
}

/// Activation blocks with random and extreme (±127) bytes.
fn random_acts(n: usize, seed: u64) -> Vec<ActBlock> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            let qs: [i8; QK] = std::array::from_fn(|_| {
                let r = rng.next();
                if i % 3 == 2 {
                    [-127, 127][(r >> 20) as usize % 2]
                } else {
                    // -127..=127, the range `quantize_row` produces.
                    i8::try_from((r % 255) as i32 - 127).unwrap_or(0)
                }
            });
            let d = (rng.next() % 1000) as f32 / 1e5;
            let sum: i32 = qs.iter().map(|q| i32::from(*q)).sum();
            ActBlock { d, s: sum as f32 * d, qs }
        })
        .collect()
}

#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_sub_block_sums_equal_the_portable_integer_sums() {
    use super::k::simd::{SimdBlock, lane_sum, lanes, unpack_q5_0};
    use super::k::{BlockQ4K, BlockQ5K, BlockQ6K};
    use super::k::{sumi_q4k, sumi_q5_0, sumi_q5k, sumi_q6k};
    use bytemuck::cast;
    let Some(s) = avx2() else { return };
    let n = 600;
    let acts = random_acts(n * SUBS, 40);
    let mut checked = [0usize; 4];
    let mut check = |f: usize, lanes: std::arch::x86_64::__m256i, sumi: i32| {
        assert_eq!(lane_sum(lanes), sumi, "format {f}");
        checked[f] += usize::from(sumi != 0);
    };
    s.vectorize(|| {
        let bytes = raw_blocks(GgmlDType::Q4K, n, 41, true);
        for (b, a) in k::parse_q4k(&bytes).zip(acts.chunks_exact(SUBS)) {
            let (sc, m) = scales_mins(&b.scales);
            let mins = b.visit(s, |j, q, scales| {
                check(0, lanes(s, BlockQ4K::SIGNED, q, scales, &a[j]), sumi_q4k(&b, &sc, j, &a[j]));
            });
            let want = m.map(|m| f32::from(m) * b.dmin.to_f32());
            assert_eq!(cast::<_, [f32; 8]>(mins).map(f32::to_bits), want.map(f32::to_bits));
        }
        let bytes = raw_blocks(GgmlDType::Q5K, n, 42, true);
        for (b, a) in k::parse_q5k(&bytes).zip(acts.chunks_exact(SUBS)) {
            let (sc, m) = scales_mins(&b.scales);
            let mins = b.visit(s, |j, q, scales| {
                check(1, lanes(s, BlockQ5K::SIGNED, q, scales, &a[j]), sumi_q5k(&b, &sc, j, &a[j]));
            });
            let want = m.map(|m| f32::from(m) * b.dmin.to_f32());
            assert_eq!(cast::<_, [f32; 8]>(mins).map(f32::to_bits), want.map(f32::to_bits));
        }
        let bytes = raw_blocks(GgmlDType::Q6K, n, 43, true);
        for (b, a) in k::parse_q6k(&bytes).zip(acts.chunks_exact(SUBS)) {
            b.visit(s, |j, q, scales| {
                check(2, lanes(s, BlockQ6K::SIGNED, q, scales, &a[j]), sumi_q6k(&b, j, &a[j]));
            });
        }
        let bytes = raw_blocks(GgmlDType::Q5_0, n * SUBS, 44, true);
        let ones = s.avx._mm256_set1_epi16(1);
        for (b, a) in k::parse_q5_0(&bytes).zip(&acts) {
            check(3, lanes(s, true, unpack_q5_0(s, &b), ones, a), sumi_q5_0(&b, a));
        }
    });
    assert!(checked.iter().all(|&c| c > n * SUBS * 3 / 4), "{checked:?}");
    // The largest sums: every weight and scale at its extreme against ±127.
    let q4 = k::parse_q4k(&[0xFF; k::Q4_K_BYTES]).next().unwrap();
    let q6 = BlockQ6K { ql: [0; 128], qh: [0; 64], scales: [-128; 16], d: f16::ONE };
    for a in [127i8, -127] {
        let act = ActBlock { d: 1.0, s: 0.0, qs: [a; QK] };
        let (sc, _) = scales_mins(&q4.scales);
        q4.visit(s, |j, q, scales| {
            let want = 63 * 15 * i32::from(a) * 32;
            assert_eq!(lane_sum(lanes(s, false, q, scales, &act)), want);
            assert_eq!(sumi_q4k(&q4, &sc, j, &act), want);
        });
        q6.visit(s, |j, q, scales| {
            let want = -128 * -32 * i32::from(a) * 32;
            assert_eq!(lane_sum(lanes(s, true, q, scales, &act)), want);
            assert_eq!(sumi_q6k(&q6, j, &act), want);
        });
    }
}

/// Q5_0 weights at -16 and 15 everywhere against activations at ±127: the grouped prompt
/// kernel's i16 sums of a block stay in range (an overflow would wrap and differ from the
/// portable kernel's i32 sums).
#[cfg(target_arch = "x86_64")]
#[test]
fn grouped_q5_0_sums_do_not_overflow_at_the_extremes() {
    let Some(s) = avx2() else { return };
    let (rows, cols, m) = (16, 4 * QK, 5);
    // Block bytes: d (f16 1.0), qh, qs. qh/qs all zero: every weight -16; all ones: 15 (every
    // third row).
    let mut bytes = Vec::new();
    for k in 0..rows * cols / QK {
        bytes.extend(f16::ONE.to_bits().to_le_bytes());
        let fill = if (k / (cols / QK)).is_multiple_of(3) { 0xFF } else { 0x00 };
        bytes.extend([fill; 4 + QK / 2]);
    }
    let w = from_raw(GgmlDType::Q5_0, rows, cols, &bytes).1;
    let patterns: [fn(usize) -> f32; 3] =
        [|_| 1.0, |_| -1.0, |k| if k % 2 == 0 { 1.0 } else { -1.0 }];
    for (case, pattern) in patterns.iter().enumerate() {
        let x: Vec<f32> = (0..m * cols).map(pattern).collect();
        let mut acts = Vec::new();
        quantize_rows(&x, cols, &mut acts);
        let portable = product_with(Isa::Portable, &w, &acts, m);
        let fast = product_with(Isa::Avx2(s), &w, &acts, m);
        for (k, (a, p)) in fast.iter().zip(&portable).enumerate() {
            assert_eq!(a.to_bits(), p.to_bits(), "case {case} output {k}: {a} vs {p}");
        }
        if case < 2 {
            // The sums really are at the extreme: rows of -16 against ±127 everywhere.
            let most = portable.iter().fold(0f32, |a, v| a.max(v.abs()));
            let extreme = (cols * 16) as f32 * 127.0 * acts[0].d;
            assert!(most >= extreme * 0.999, "case {case}: {most} < {extreme}");
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_products_match_the_portable_kernels() {
    let Some(s) = avx2() else { return };
    for (dtype, w, kind) in matrices() {
        let nba = w.cols / QK;
        // m = 4 and 9 run the grouped prompt kernels (9: two groups and one row left); 32 is
        // a prompt chunk.
        let ms: &[usize] = if w.cols > 4000 { &[1, 9] } else { &[1, 3, 4, 9, 32] };
        for &m in ms {
            let mut acts = Vec::new();
            quantize_rows(&super::tests::values(m * w.cols, 50), w.cols, &mut acts);
            let portable = product_with(Isa::Portable, &w, &acts, m);
            let fast = product_with(Isa::Avx2(s), &w, &acts, m);
            for r in 0..w.rows {
                for i in 0..m {
                    let (terms, _) = magnitudes(&w, r, &acts[i * nba..(i + 1) * nba]);
                    let (a, b) = (fast[r * m + i], portable[r * m + i]);
                    if dtype == GgmlDType::Q5_0 && m >= 4 {
                        // Prompts: the grouped kernel computes the portable expression.
                        assert_eq!(a.to_bits(), b.to_bits(), "{kind} m={m} {r},{i}: {a} vs {b}");
                    }
                    // The same integer sums and rounded terms, added in two orders.
                    let bound = rounding_bound(&w, terms);
                    assert!(
                        f64::from((a - b).abs()) <= bound,
                        "{dtype:?} {kind} m={m} {r},{i}: {a} vs {b} ({bound})"
                    );
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_prompt_kernels_give_each_row_exactly_the_single_row_result() {
    let Some(s) = avx2() else { return };
    // Q5_0 prompts run a kernel of their own that equals the portable one to the bit instead
    // (`avx2_products_match_the_portable_kernels`); its generation kernel rounds otherwise.
    for (dtype, w, kind) in matrices().into_iter().filter(|(d, ..)| *d != GgmlDType::Q5_0) {
        let m = 9;
        let mut acts = Vec::new();
        quantize_rows(&super::tests::values(m * w.cols, 60), w.cols, &mut acts);
        let grouped = product_with(Isa::Avx2(s), &w, &acts, m);
        for (i, act) in acts.chunks_exact(w.cols / QK).enumerate() {
            let single = product_with(Isa::Avx2(s), &w, act, 1);
            for r in 0..w.rows {
                let (a, b) = (grouped[r * m + i], single[r]);
                assert_eq!(a.to_bits(), b.to_bits(), "{dtype:?} {kind} {r},{i}");
            }
        }
    }
}
