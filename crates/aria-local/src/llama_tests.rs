//! The small pieces of the forward pass. The whole pass is checked against the real model in
//! the integration tests (greedy answers, cache reuse).

use super::*;

#[test]
fn rms_norm_scales_each_row_to_unit_rms_times_the_weight() {
    let x = [3.0, 4.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0];
    let w = [1.0, 2.0, 1.0, 1.0];
    let mut out = Vec::new();
    rms_norm_rows(&x, &w, 0.0, &mut out);
    let rms = (25.0f32 / 4.0).sqrt();
    assert_eq!(out[..4], [3.0 / rms, 8.0 / rms, 0.0, 0.0]);
    assert_eq!(out[4..], [1.0, 2.0, 1.0, 1.0]);
}

#[test]
fn rope_table_is_the_identity_at_position_zero_and_rotates_by_position_times_frequency() {
    let (cos, sin) = rope_table(8, 10000.0);
    assert_eq!(cos.len(), MAX_SEQ_LEN * 4);
    assert!(cos[..4].iter().all(|c| *c == 1.0) && sin[..4].iter().all(|s| *s == 0.0));
    // Position 3, pair 1: angle 3 / 10000^(2/8).
    let angle = 3.0f32 / 10000f32.powf(0.25);
    assert!((cos[3 * 4 + 1] - angle.cos()).abs() < 1e-6);
    assert!((sin[3 * 4 + 1] - angle.sin()).abs() < 1e-6);
}

#[test]
fn silu_and_dot_match_their_definitions() {
    assert_eq!(silu(0.0), 0.0);
    assert!((silu(2.0) - 2.0 / (1.0 + (-2.0f32).exp())).abs() < 1e-7);
    let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.5).collect();
    let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    assert!((dot(&a, &b) - want).abs() < 1e-3);
}
