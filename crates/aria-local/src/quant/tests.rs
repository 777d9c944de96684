//! The kernels against candle's implementation of the same formats (the reference numerics:
//! a port of ggml's) and against plain f32 arithmetic.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};

use super::*;

/// Deterministic pseudo-random values in [-1, 1) with a few larger outliers.
pub(super) fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
            if i % 97 == 0 { v * 6.0 } else { v }
        })
        .collect()
}

/// The same weights as candle's quantised tensor and as ours.
pub(super) fn both(dtype: GgmlDType, rows: usize, cols: usize, seed: u64) -> (QTensor, QMatrix) {
    let w = Tensor::from_vec(values(rows * cols, seed), (rows, cols), &Device::Cpu).unwrap();
    let q = QTensor::quantize(&w, dtype).unwrap();
    let bytes = q.data().unwrap();
    assert_eq!(bytes.len(), byte_len(dtype, rows, cols));
    let mut ours = QMatrix::with_capacity(dtype, rows, cols).unwrap();
    // Pushed in two pieces, as the loader does with a bounded buffer.
    let cut = bytes.len() / ours.block_bytes() / 3 * ours.block_bytes();
    ours.push_bytes(&bytes[..cut]);
    assert!(!ours.is_complete());
    ours.push_bytes(&bytes[cut..]);
    assert!(ours.is_complete());
    (q, ours)
}

pub(super) fn ours_product(w: &QMatrix, x: &[f32], m: usize) -> Vec<f32> {
    let mut acts = Vec::new();
    quantize_rows(x, w.cols(), &mut acts);
    let mut out_t = vec![f32::NAN; w.rows() * m];
    matmul_t(vec![Product { w, out_t: &mut out_t }], &acts);
    let mut out = vec![f32::NAN; w.rows() * m];
    transpose_into(&out_t, w.rows(), m, &mut out);
    out
}

pub(super) fn candle_product(q: QTensor, x: &[f32], m: usize) -> Vec<f32> {
    let cols = q.shape().dims()[1];
    let x = Tensor::from_slice(x, (m, cols), &Device::Cpu).unwrap();
    let mm = QMatMul::from_qtensor(q).unwrap();
    mm.forward(&x).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

/// `|ours - reference| <= relative·(1 + |reference|) + absolute` element-wise.
fn assert_close(ours: &[f32], reference: &[f32], relative: f32, absolute: f32) {
    assert_eq!(ours.len(), reference.len());
    for (i, (a, b)) in ours.iter().zip(reference).enumerate() {
        assert!(
            (a - b).abs() <= relative * (1.0 + b.abs()) + absolute,
            "element {i}: ours {a}, reference {b}"
        );
    }
}

#[test]
fn q4_1_products_match_candles_q4_1_q8_1_kernel() {
    // 200 rows × 576: more than one task and enough work to run on the pool; m = 1 is a
    // generated token, m = 5 a prompt chunk. Candle rounds the activation sum `s` through f16
    // twice (`f16(f16(Σq)·d)`; ggml and we once: `f16(d·Σq)`), which moves each block's minimum
    // term `m·s` by up to ~2⁻¹⁰ of itself; the integer parts agree exactly.
    for m in [1, 5] {
        let (q, ours) = both(GgmlDType::Q4_1, 200, 576, 1);
        let x = values(m * 576, 2);
        let reference = candle_product(q, &x, m);
        let got = ours_product(&ours, &x, m);
        let Blocks::Q4_1(blocks) = &ours.blocks else { panic!("not Q4_1") };
        let mut acts = Vec::new();
        quantize_rows(&x, 576, &mut acts);
        let nb = 576 / QK;
        for i in 0..m {
            for r in 0..200 {
                let slack: f32 = blocks[r * nb..(r + 1) * nb]
                    .iter()
                    .zip(&acts[i * nb..(i + 1) * nb])
                    .map(|(w, a)| (w.m.to_f32() * a.s).abs() / 512.0)
                    .sum();
                let (a, b) = (got[i * 200 + r], reference[i * 200 + r]);
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()) + slack, "{i},{r}: {a} vs {b}");
            }
        }
    }
}

#[test]
fn q8_0_products_match_candles_q8_0_kernel() {
    for m in [1, 3] {
        let (q, ours) = both(GgmlDType::Q8_0, 70, 256, 3);
        let x = values(m * 256, 4);
        let reference = candle_product(q, &x, m);
        assert_close(&ours_product(&ours, &x, m), &reference, 1e-5, 0.0);
    }
}

#[test]
fn products_are_close_to_the_f32_product_of_the_dequantised_weights() {
    let (rows, cols) = (48, 128);
    let (q, ours) = both(GgmlDType::Q4_1, rows, cols, 5);
    let w = q.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let x = values(cols, 6);
    let got = ours_product(&ours, &x, 1);
    for r in 0..rows {
        let exact: f32 = w[r * cols..(r + 1) * cols].iter().zip(&x).map(|(a, b)| a * b).sum();
        let scale: f32 = w[r * cols..(r + 1) * cols].iter().map(|v| v.abs()).sum();
        // Activations carry 8 bits: the error is a small fraction of Σ|w|·max|x|.
        assert!((got[r] - exact).abs() <= 0.02 * scale, "row {r}: {} vs {exact}", got[r]);
    }
}

#[test]
fn dequantised_rows_match_candle() {
    for dtype in [GgmlDType::Q4_1, GgmlDType::Q8_0] {
        let (q, ours) = both(dtype, 6, 64, 7);
        let w =
            q.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let mut row = vec![0f32; 64];
        for r in 0..6 {
            ours.dequantize_row(r, &mut row);
            assert_eq!(row, w[r * 64..(r + 1) * 64], "{dtype:?} row {r}");
        }
    }
}

#[test]
fn quantised_activations_round_to_the_nearest_step_and_carry_their_sum() {
    let x = values(64, 8);
    let mut acts = Vec::new();
    quantize_rows(&x, 64, &mut acts);
    assert_eq!(acts.len(), 2);
    for (block, xs) in acts.iter().zip(x.chunks_exact(QK)) {
        let amax = xs.iter().fold(0f32, |a, v| a.max(v.abs()));
        assert!((block.d - amax / 127.0).abs() <= 1e-3 * block.d);
        for (q, v) in block.qs.iter().zip(xs) {
            assert!((f32::from(*q) * block.d - v).abs() <= 0.51 * block.d + 1e-3 * v.abs());
        }
        let sum: i32 = block.qs.iter().map(|q| i32::from(*q)).sum();
        assert!((block.s - sum as f32 * block.d).abs() <= 1e-3 * (1.0 + block.s.abs()));
    }
    let mut zero = Vec::new();
    quantize_rows(&[0.0; 32], 32, &mut zero);
    assert_eq!(zero[0], ActBlock::default());
}

#[test]
fn fused_products_fill_each_output_as_separate_calls_would() {
    let (_, a) = both(GgmlDType::Q4_1, 40, 96, 9);
    let (_, b) = both(GgmlDType::Q4_1, 24, 96, 10);
    let x = values(2 * 96, 11);
    let mut acts = Vec::new();
    quantize_rows(&x, 96, &mut acts);
    let (mut oa, mut ob) = (vec![0f32; 80], vec![0f32; 48]);
    matmul_t(vec![Product { w: &a, out_t: &mut oa }, Product { w: &b, out_t: &mut ob }], &acts);
    let mut ta = vec![0f32; 80];
    transpose_into(&oa, 40, 2, &mut ta);
    assert_eq!(ta, ours_product(&a, &x, 2));
    let mut tb = vec![0f32; 48];
    transpose_into(&ob, 24, 2, &mut tb);
    assert_eq!(tb, ours_product(&b, &x, 2));
}

#[test]
fn formats_without_a_kernel_or_partial_blocks_are_refused() {
    assert!(QMatrix::with_capacity(GgmlDType::Q2K, 4, 256).is_none());
    assert!(QMatrix::with_capacity(GgmlDType::Q4K, 4, 896).is_none());
    assert!(QMatrix::with_capacity(GgmlDType::Q4_1, 4, 48).is_none());
    assert!(supported(GgmlDType::Q4_1) && supported(GgmlDType::Q8_0));
    assert!(!supported(GgmlDType::F32));
}

/// Random Q4_1 and Q8_0 weight blocks and activation blocks, every fourth one at the extremes
/// (nibbles 0 and 15, weights -128 and 127, activations -127 and 127: the range
/// [`quantize_row`] produces).
fn random_blocks(n: usize, seed: u64) -> (Vec<BlockQ4_1>, Vec<BlockQ8_0>, Vec<ActBlock>) {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let scale = |bits: u64| f16::from_f32((bits % 1000) as f32 / 1e4 - 0.05);
    let (mut w4, mut w8, mut acts) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let extreme = i % 4 == 3;
        let mut qs4 = [0u8; QK / 2];
        let mut qs8 = [0i8; QK];
        let mut qa = [0i8; QK];
        for j in 0..QK {
            let r = next();
            if j < QK / 2 {
                qs4[j] = if extreme { [0x00, 0xFF, 0x0F, 0xF0][(r % 4) as usize] } else { r as u8 };
            }
            qs8[j] = if extreme { [-128, 127][(r >> 8) as usize % 2] } else { (r >> 16) as i8 };
            qa[j] = if extreme {
                [-127, 127][(r >> 24) as usize % 2]
            } else {
                i8::try_from(((r >> 32) % 255) as i64 - 127).unwrap_or(0)
            };
        }
        w4.push(BlockQ4_1 { d: scale(next()), m: scale(next()), qs: qs4 });
        w8.push(BlockQ8_0 { d: scale(next()), qs: qs8 });
        let d = (next() % 1000) as f32 / 1e5;
        let sum: i32 = qa.iter().map(|q| i32::from(*q)).sum();
        acts.push(ActBlock { d, s: sum as f32 * d, qs: qa });
    }
    (w4, w8, acts)
}

/// `Σ |terms|` of the float sum behind `W[r] · act`: what rounding errors scale with.
fn magnitude(w: &QMatrix, r: usize, act: &[ActBlock]) -> f32 {
    let nb = w.cols / QK;
    match &w.blocks {
        Blocks::Q4_1(v) => v[r * nb..(r + 1) * nb]
            .iter()
            .zip(act)
            .map(|(b, a)| {
                (sumi_q4_1(b, a) as f32 * b.d.to_f32() * a.d).abs() + (b.m.to_f32() * a.s).abs()
            })
            .sum(),
        Blocks::Q8_0(v) => v[r * nb..(r + 1) * nb]
            .iter()
            .zip(act)
            .map(|(b, a)| (sumi_q8_0(b, a) as f32 * b.d.to_f32() * a.d).abs())
            .sum(),
        _ => panic!("the K-quant formats have their own tests (quant/k_tests.rs)"),
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

#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_block_sums_equal_the_portable_integer_sums() {
    let Some(s) = avx2() else { return };
    let (w4, w8, acts) = random_blocks(4000, 12);
    let (mut nonzero, mut extreme) = (0, 0);
    for ((b4, b8), a) in w4.iter().zip(&w8).zip(&acts) {
        let (q4, q8) = (sumi_q4_1(b4, a), sumi_q8_0(b8, a));
        assert_eq!(simd::lane_sum(s.vectorize(|| simd::lanes_q4_1(s, b4, a))), q4, "{b4:?} {a:?}");
        assert_eq!(simd::lane_sum(s.vectorize(|| simd::lanes_q8_0(s, b8, a))), q8, "{b8:?} {a:?}");
        nonzero += usize::from(q4 != 0 && q8 != 0);
        extreme += usize::from(b8.qs.contains(&-128) && a.qs.contains(&-127));
    }
    assert!(nonzero > 3700 && extreme > 900, "{nonzero} {extreme}");
    // The largest sums there are: every product at its extreme, both signs.
    for (w, a, q4, q8) in [
        (-128i8, 127i8, 15 * 127 * 32, -128 * 127 * 32),
        (127, -127, -15 * 127 * 32, -127 * 127 * 32),
        (-128, -127, -15 * 127 * 32, 128 * 127 * 32),
    ] {
        let b4 = BlockQ4_1 { d: f16::ONE, m: f16::ZERO, qs: [0xFF; QK / 2] };
        let b8 = BlockQ8_0 { d: f16::ONE, qs: [w; QK] };
        let act = ActBlock { d: 1.0, s: 0.0, qs: [a; QK] };
        assert_eq!(simd::lane_sum(s.vectorize(|| simd::lanes_q4_1(s, &b4, &act))), q4);
        assert_eq!(simd::lane_sum(s.vectorize(|| simd::lanes_q8_0(s, &b8, &act))), q8);
        assert_eq!((sumi_q4_1(&b4, &act), sumi_q8_0(&b8, &act)), (q4, q8));
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_products_match_the_portable_kernels_for_every_matrix_the_model_has() {
    let Some(s) = avx2() else { return };
    // SmolLM2's matrices: Q4_1 q/o (576x576), k/v (192x576), gate/up (1536x576), down
    // (576x1536); the tied output head is Q8_0 x576 (49152 rows, a slice here). 96 columns is
    // an odd number of blocks (the kernels' tail). m = 4 and 9 run the prompt kernels that
    // take four activation rows at once (9: two groups and one row left).
    let shapes = [
        (GgmlDType::Q4_1, 576, 576),
        (GgmlDType::Q4_1, 192, 576),
        (GgmlDType::Q4_1, 1536, 576),
        (GgmlDType::Q4_1, 576, 1536),
        (GgmlDType::Q8_0, 1024, 576),
        (GgmlDType::Q4_1, 40, 96),
        (GgmlDType::Q8_0, 40, 96),
    ];
    for (seed, (dtype, rows, cols)) in (20..).zip(shapes) {
        let (_, w) = both(dtype, rows, cols, seed);
        let nb = cols / QK;
        for m in [1, 3, 4, 9] {
            let mut acts = Vec::new();
            quantize_rows(&values(m * cols, seed + 100), cols, &mut acts);
            let (mut portable, mut fast) = (vec![f32::NAN; rows * m], vec![f32::NAN; rows * m]);
            matmul_t_with(Isa::Portable, vec![Product { w: &w, out_t: &mut portable }], &acts);
            matmul_t_with(Isa::Avx2(s), vec![Product { w: &w, out_t: &mut fast }], &acts);
            for r in 0..rows {
                for i in 0..m {
                    let (a, b) = (fast[r * m + i], portable[r * m + i]);
                    // Two orders of summing the same rounded terms.
                    let bound = 2.0
                        * (nb + 4) as f32
                        * f32::EPSILON
                        * magnitude(&w, r, &acts[i * nb..(i + 1) * nb]);
                    assert!(
                        (a - b).abs() <= bound,
                        "{dtype:?} {rows}x{cols} m={m} {r},{i}: {a} vs {b}"
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
    for (seed, (dtype, rows, cols)) in (40..).zip([
        (GgmlDType::Q4_1, 48, 576),
        (GgmlDType::Q4_1, 40, 96),
        (GgmlDType::Q8_0, 48, 576),
        (GgmlDType::Q8_0, 40, 96),
    ]) {
        let (_, w) = both(dtype, rows, cols, seed);
        let m = 9;
        let mut acts = Vec::new();
        quantize_rows(&values(m * cols, seed + 100), cols, &mut acts);
        let mut grouped = vec![f32::NAN; rows * m];
        matmul_t_with(Isa::Avx2(s), vec![Product { w: &w, out_t: &mut grouped }], &acts);
        for (i, act) in acts.chunks_exact(cols / QK).enumerate() {
            let mut single = vec![f32::NAN; rows];
            matmul_t_with(Isa::Avx2(s), vec![Product { w: &w, out_t: &mut single }], act);
            for r in 0..rows {
                assert_eq!(grouped[r * m + i].to_bits(), single[r].to_bits(), "{dtype:?} {r},{i}");
            }
        }
    }
}
