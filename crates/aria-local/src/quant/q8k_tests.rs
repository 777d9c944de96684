//! The Q8_K-activation kernels of `quant/q8k.rs`: quantisation, portable products against the
//! exact (f64) product of the dequantised weights and activations, against the f32 product
//! within the activation rounding, and AVX2 against portable.

use candle_core::quantized::GgmlDType;

use super::k::QK_K;
use super::k_tests::{from_raw, raw_blocks};
use super::tests::both;
use super::*;

fn values(n: usize, seed: u64) -> Vec<f32> {
    super::tests::values(n, seed)
}

/// K-quant matrices at Qwen2.5-Coder widths (1536, 8960, 4864) with odd row counts (more than
/// 16 rows spread a product over several tasks), and raw blocks with extreme quant patterns.
fn matrices() -> Vec<(GgmlDType, QMatrix, &'static str)> {
    let mut out = Vec::new();
    for (seed, (dtype, rows, cols)) in (70..).zip([
        (GgmlDType::Q4K, 37, 1536),
        (GgmlDType::Q5K, 21, 512),
        (GgmlDType::Q6K, 19, 4864),
        (GgmlDType::Q4K, 3, 8960),
    ]) {
        out.push((dtype, both(dtype, rows, cols, seed).1, "quantised"));
    }
    for (seed, dtype) in (80..).zip([GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K]) {
        let (rows, cols) = (17, 4 * QK_K);
        let bytes = raw_blocks(dtype, rows * cols / QK_K, seed, false);
        out.push((dtype, from_raw(dtype, rows, cols, &bytes).1, "raw"));
    }
    out
}

fn product_with(isa: Isa, w: &QMatrix, acts: &[ActBlockK], m: usize) -> Vec<f32> {
    let mut out_t = vec![f32::NAN; w.rows * m];
    matmul_t_k_with(isa, vec![Product { w, out_t: &mut out_t }], acts);
    out_t
}

/// For each output, `(the f64 product of the dequantised weights and activations, Σ|w·a|)`.
fn reference(w: &QMatrix, acts: &[ActBlockK], m: usize) -> Vec<(f64, f64)> {
    let nb = w.cols / QK_K;
    let mut row = vec![0f32; w.cols];
    let mut out = vec![(0f64, 0f64); w.rows * m];
    for r in 0..w.rows {
        w.dequantize_row(r, &mut row);
        for i in 0..m {
            let act = &acts[i * nb..(i + 1) * nb];
            let (mut sum, mut abs) = (0f64, 0f64);
            for (w, a) in row.chunks_exact(QK_K).zip(act) {
                for (w, q) in w.iter().zip(a.qs) {
                    let t = f64::from(*w) * f64::from(q) * f64::from(a.d);
                    sum += t;
                    abs += t.abs();
                }
            }
            out[r * m + i] = (sum, abs);
        }
    }
    out
}

/// Rounding of f32 sums over a row: the per-block float terms (a product and a minimum term
/// per block, each a few roundings) plus cancellation between `d·Σ` and `dmin·Σ`, which can
/// each be far larger than their difference: bounded by the sizes of both, taken from `w`.
fn bound(w: &QMatrix, r: usize, act: &[ActBlockK], abs: f64) -> f64 {
    let mut row = vec![0f32; w.cols];
    w.dequantize_row(r, &mut row);
    // |d·sc·q| + |dmin·m| ≤ 2·max|w| + ... : the minimum term is at most the weights' range.
    let max_w = row.iter().fold(0f32, |a, v| a.max(v.abs()));
    let side: f64 = act
        .iter()
        .map(|a| {
            f64::from(a.d)
                * f64::from(max_w)
                * a.qs.iter().map(|q| f64::from(q.unsigned_abs())).sum::<f64>()
        })
        .sum();
    let blocks = act.len() as f64;
    (blocks + 16.0) * 8.0 * f64::from(f32::EPSILON) * (abs + 2.0 * side)
}

#[test]
fn q8k_activations_round_to_the_nearest_step_and_carry_their_sums() {
    let x = values(3 * QK_K, 90);
    let mut acts = Vec::new();
    super::q8k::quantize_rows_k(&x, &mut acts);
    assert_eq!(acts.len(), 3);
    for (x, a) in x.chunks_exact(QK_K).zip(&acts) {
        let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert_eq!(a.d, amax / 127.0);
        assert_eq!(a.qs.iter().map(|q| q.unsigned_abs()).max(), Some(127));
        for (v, q) in x.iter().zip(a.qs) {
            assert!((v - f32::from(q) * a.d).abs() <= a.d * 0.5001, "{v} {q} {}", a.d);
        }
        for (j, s) in a.sums.iter().enumerate() {
            let want: i32 = a.qs[32 * j..32 * j + 32].iter().map(|&q| i32::from(q)).sum();
            assert_eq!(i32::from(*s), want);
        }
    }
    let mut zero = Vec::new();
    super::q8k::quantize_rows_k(&[0.0; QK_K], &mut zero);
    assert_eq!(zero[0], ActBlockK::default());
}

#[test]
fn portable_q8k_products_equal_the_exact_product_of_the_dequantised_values() {
    for (dtype, w, kind) in matrices() {
        let nb = w.cols / QK_K;
        for m in [1, 5] {
            let mut acts = Vec::new();
            super::q8k::quantize_rows_k(&values(m * w.cols, 91), &mut acts);
            let got = product_with(Isa::Portable, &w, &acts, m);
            let exact = reference(&w, &acts, m);
            for r in 0..w.rows {
                for i in 0..m {
                    let (want, abs) = exact[r * m + i];
                    let b = bound(&w, r, &acts[i * nb..(i + 1) * nb], abs);
                    let a = f64::from(got[r * m + i]);
                    assert!(
                        (a - want).abs() <= b,
                        "{dtype:?} {kind} m={m} {r},{i}: {a} vs {want} ({b})"
                    );
                }
            }
        }
    }
}

#[test]
fn q8k_products_are_within_the_activation_rounding_of_the_f32_product() {
    for (dtype, w, kind) in matrices() {
        let m = 3;
        let x = values(m * w.cols, 92);
        let mut acts = Vec::new();
        super::q8k::quantize_rows_k(&x, &mut acts);
        let got = product_with(Isa::detect(), &w, &acts, m);
        let mut row = vec![0f32; w.cols];
        for r in 0..w.rows {
            w.dequantize_row(r, &mut row);
            for i in 0..m {
                let xi = &x[i * w.cols..(i + 1) * w.cols];
                let exact: f64 =
                    row.iter().zip(xi).map(|(a, b)| f64::from(*a) * f64::from(*b)).sum();
                // Each activation is off by at most half its block's step.
                let err: f64 = row
                    .chunks_exact(QK_K)
                    .zip(&acts[i * w.cols / QK_K..])
                    .map(|(w, a)| {
                        w.iter().map(|v| f64::from(v.abs())).sum::<f64>() * f64::from(a.d) / 2.0
                    })
                    .sum();
                let a = f64::from(got[r * m + i]);
                assert!(
                    (a - exact).abs() <= err * 1.01 + 1e-4,
                    "{dtype:?} {kind} {r},{i}: {a} vs {exact} ({err})"
                );
            }
        }
    }
}

#[test]
fn only_k_quants_take_q8k_activations() {
    assert!(both(GgmlDType::Q4K, 2, 256, 1).1.takes_q8k());
    assert!(both(GgmlDType::Q6K, 2, 256, 1).1.takes_q8k());
    let q5_0 = both(GgmlDType::Q5_0, 2, 256, 1).1;
    assert!(!q5_0.takes_q8k());
    // A product that includes a format without a Q8_K kernel is refused, its output untouched.
    let mut acts = Vec::new();
    super::q8k::quantize_rows_k(&values(256, 1), &mut acts);
    let mut out = vec![f32::NAN; 2];
    matmul_t_k(vec![Product { w: &q5_0, out_t: &mut out }], &acts);
    assert!(out.iter().all(|v| v.is_nan()));
}

#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_q8k_products_match_the_portable_kernels_and_prompts_equal_them_bit_for_bit() {
    let Some(s) = pulp::x86::V3::try_new() else {
        eprintln!("skipped: this CPU has no AVX2/FMA, so only the portable kernels ever run");
        return;
    };
    for (dtype, w, kind) in matrices() {
        let nb = w.cols / QK_K;
        // m = 1 and 3 run a row at a time (generation); from 4 the grouped kernel takes groups
        // of eight weight rows (the rows past a multiple of eight a row at a time), four
        // activation rows at once and the rest one by one (9: two groups of four and one).
        for m in [1, 3, 4, 6, 9] {
            let mut acts = Vec::new();
            super::q8k::quantize_rows_k(&values(m * w.cols, 93), &mut acts);
            let portable = product_with(Isa::Portable, &w, &acts, m);
            let fast = product_with(Isa::Avx2(s), &w, &acts, m);
            let exact = reference(&w, &acts, m);
            for r in 0..w.rows {
                for i in 0..m {
                    let (a, p) = (fast[r * m + i], portable[r * m + i]);
                    let at = format!("{dtype:?} {kind} m={m} {r},{i}: {a} vs {p}");
                    if m >= 4 {
                        assert_eq!(a.to_bits(), p.to_bits(), "{at}");
                    } else {
                        let act = &acts[i * nb..(i + 1) * nb];
                        let b = bound(&w, r, act, exact[r * m + i].1);
                        assert!((f64::from(a) - f64::from(p)).abs() <= 2.0 * b, "{at}");
                    }
                }
            }
        }
    }
}

/// Extreme weights (every quant at its largest, scales at their largest) against activations
/// at ±127: the grouped kernel's i16 sums of a scale unit stay in range (an overflow would
/// wrap and differ from the portable kernels' i32 sums).
#[cfg(target_arch = "x86_64")]
#[test]
fn grouped_q8k_sums_do_not_overflow_at_the_extremes() {
    let Some(s) = pulp::x86::V3::try_new() else {
        eprintln!("skipped: this CPU has no AVX2/FMA");
        return;
    };
    for dtype in [GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K] {
        let (rows, cols) = (16, 2 * QK_K);
        let bytes = raw_blocks(dtype, rows * cols / QK_K, 5, false);
        let w = from_raw(dtype, rows, cols, &bytes).1;
        let m = 5;
        // All at +1, all at -1 (each quantises to ±127: the largest sums), and mixed.
        let patterns: [fn(usize) -> f32; 3] =
            [|_| 1.0, |_| -1.0, |k| if k % 3 == 0 { 1.0 } else { -0.5 }];
        for (case, pattern) in patterns.iter().enumerate() {
            let x: Vec<f32> = (0..m * cols).map(pattern).collect();
            let mut acts = Vec::new();
            super::q8k::quantize_rows_k(&x, &mut acts);
            let portable = product_with(Isa::Portable, &w, &acts, m);
            let fast = product_with(Isa::Avx2(s), &w, &acts, m);
            for (k, (a, p)) in fast.iter().zip(&portable).enumerate() {
                assert_eq!(
                    a.to_bits(),
                    p.to_bits(),
                    "{dtype:?} case {case} output {k}: {a} vs {p}"
                );
            }
        }
    }
}
