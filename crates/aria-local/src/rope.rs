//! Rotary position embedding, in both of the pairings GGUF models use.
//!
//! Pair `j` of a head (`0 <= j < head_dim / 2`) is rotated by `position × θ_j`, with
//! `θ_j = base^(-2j / head_dim)`. Only which two values form pair `j` differs between styles
//! ([`RopeStyle`]). Angles are computed per forward pass for the positions it covers (a few
//! dozen sines per token), so nothing is sized to the model's maximum context.

use crate::hparams::RopeStyle;

/// The rotation of one model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rope {
    style: RopeStyle,
    head_dim: usize,
    /// `θ_j`, `head_dim / 2` of them.
    theta: Vec<f32>,
}

/// `cos` and `sin` of the angles of consecutive positions, `[position][head_dim / 2]` each.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Angles {
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl Rope {
    pub(crate) fn new(style: RopeStyle, head_dim: usize, freq_base: f32) -> Self {
        // The same f32 arithmetic as candle's `quantized_llama` table, which the llama models'
        // answers were checked with.
        let theta = (0..head_dim)
            .step_by(2)
            .map(|i| 1f32 / freq_base.powf(i as f32 / head_dim as f32))
            .collect();
        Rope { style, head_dim, theta }
    }

    /// The angles of positions `pos0 .. pos0 + m`.
    pub(crate) fn angles(&self, pos0: usize, m: usize, out: &mut Angles) {
        out.cos.clear();
        out.sin.clear();
        for pos in pos0..pos0 + m {
            for t in &self.theta {
                let a = pos as f32 * t;
                out.cos.push(a.cos());
                out.sin.push(a.sin());
            }
        }
    }

    /// Rotates every head of every row of `x` (`[row][heads × head_dim]`); row `i` sits at the
    /// `i`-th position of `angles`.
    pub(crate) fn apply(&self, x: &mut [f32], heads: usize, angles: &Angles) {
        let half = self.head_dim / 2;
        let rows = x.chunks_exact_mut(heads * self.head_dim);
        let per_row = angles.cos.chunks_exact(half).zip(angles.sin.chunks_exact(half));
        for (row, (c, s)) in rows.zip(per_row) {
            for head in row.chunks_exact_mut(self.head_dim) {
                match self.style {
                    RopeStyle::Interleaved => {
                        for (j, pair) in head.chunks_exact_mut(2).enumerate() {
                            let (x0, x1) = (pair[0], pair[1]);
                            pair[0] = x0 * c[j] - x1 * s[j];
                            pair[1] = x0 * s[j] + x1 * c[j];
                        }
                    }
                    RopeStyle::NeoX => {
                        let (lo, hi) = head.split_at_mut(half);
                        for (j, (x0, x1)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                            let (a, b) = (*x0, *x1);
                            *x0 = a * c[j] - b * s[j];
                            *x1 = a * s[j] + b * c[j];
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, in f64: pair `j` as a complex number times `e^(i · pos · θ_j)`.
    fn naive(x: &[f64], pos: usize, base: f64, style: RopeStyle) -> Vec<f64> {
        let d = x.len();
        let mut out = x.to_vec();
        for j in 0..d / 2 {
            let (a, b) = match style {
                RopeStyle::Interleaved => (2 * j, 2 * j + 1),
                RopeStyle::NeoX => (j, j + d / 2),
            };
            let angle = pos as f64 * base.powf(-2.0 * j as f64 / d as f64);
            let (s, c) = angle.sin_cos();
            out[a] = x[a] * c - x[b] * s;
            out[b] = x[a] * s + x[b] * c;
        }
        out
    }

    fn rotate(style: RopeStyle, head_dim: usize, heads: usize, pos0: usize, x: &[f32]) -> Vec<f32> {
        let rope = Rope::new(style, head_dim, 1_000_000.0);
        let mut angles = Angles::default();
        rope.angles(pos0, x.len() / (heads * head_dim), &mut angles);
        let mut y = x.to_vec();
        rope.apply(&mut y, heads, &angles);
        y
    }

    #[test]
    fn both_styles_match_the_naive_definition_for_every_head_and_position() {
        let (d, heads, rows, pos0) = (16, 3, 4, 37);
        let x: Vec<f32> =
            (0..rows * heads * d).map(|i| ((i * 7 % 23) as f32 - 11.0) / 5.0).collect();
        for style in [RopeStyle::Interleaved, RopeStyle::NeoX] {
            let y = rotate(style, d, heads, pos0, &x);
            for (r, (xr, yr)) in x.chunks(heads * d).zip(y.chunks(heads * d)).enumerate() {
                for (xh, yh) in xr.chunks(d).zip(yr.chunks(d)) {
                    let xh: Vec<f64> = xh.iter().map(|v| f64::from(*v)).collect();
                    let want = naive(&xh, pos0 + r, 1_000_000.0, style);
                    for (got, want) in yh.iter().zip(&want) {
                        assert!(
                            (f64::from(*got) - want).abs() < 1e-4,
                            "{style:?}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn neox_pairs_halves_and_interleaved_pairs_neighbours() {
        // Only value 0 and value 2 set in a 4-wide head: NeoX rotates them into each other,
        // the interleaved style rotates each into its neighbour (1 and 3).
        let x = [1.0, 0.0, 1.0, 0.0];
        let neox = rotate(RopeStyle::NeoX, 4, 1, 1, &x);
        let inter = rotate(RopeStyle::Interleaved, 4, 1, 1, &x);
        let (s, c) = 1f32.sin_cos();
        assert!((neox[0] - (c - s)).abs() < 1e-6 && (neox[2] - (s + c)).abs() < 1e-6);
        assert_eq!((neox[1], neox[3]), (0.0, 0.0));
        assert!((inter[0] - c).abs() < 1e-6 && (inter[1] - s).abs() < 1e-6);
    }

    #[test]
    fn position_zero_is_the_identity_and_scores_depend_on_distance_only() {
        let d = 8;
        let q: Vec<f32> = (0..d).map(|i| i as f32 - 3.5).collect();
        let k: Vec<f32> = (0..d).map(|i| (i as f32 * 0.7).sin()).collect();
        assert_eq!(rotate(RopeStyle::NeoX, d, 1, 0, &q), q);
        let score = |pq: usize, pk: usize| -> f32 {
            let (q, k) =
                (rotate(RopeStyle::NeoX, d, 1, pq, &q), rotate(RopeStyle::NeoX, d, 1, pk, &k));
            q.iter().zip(&k).map(|(a, b)| a * b).sum()
        };
        assert!((score(5, 2) - score(103, 100)).abs() < 1e-3);
        assert!((score(5, 2) - score(5, 4)).abs() > 1e-3);
    }
}
