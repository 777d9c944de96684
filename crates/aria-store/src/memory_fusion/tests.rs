//! The fusion of a BM25 list and a vector list: by rank for short lists, by standardised scores
//! for long ones, and the relevance figure of a hit's ranks.

use super::*;

fn rids(fused: &[Fused]) -> Vec<i64> {
    fused.iter().map(|f| f.rid).collect()
}

#[test]
fn short_lists_fuse_by_rank_and_a_memory_found_by_both_comes_first() {
    // 7 is second in both lists; 1 and 2 top one list each.
    let fused = fuse(&[(1, 9.0), (7, 8.0), (3, 1.0)], &[(2, 0.9), (7, 0.8), (4, 0.7)], 10);
    assert_eq!(fused[0].rid, 7);
    assert_eq!((fused[0].text_rank, fused[0].vector_rank), (Some(2), Some(2)));
    assert!((fused[0].score - 2.0 / 62.0).abs() < 1e-12);
    assert_eq!(rids(&fused), vec![7, 1, 2, 3, 4]);
    assert_eq!(fused[2].similarity, Some(0.9));
    assert_eq!(fuse(&[(1, 2.0), (2, 1.0)], &[], 1).len(), 1);
}

/// Twelve entries per list: `text` scores 10, 9, … and `vector` 0.90, 0.89, … unless given.
fn long(first_text: &[(i64, f64)], first_vector: &[(i64, f32)]) -> Vec<Fused> {
    let mut text = first_text.to_vec();
    let mut vector = first_vector.to_vec();
    let mut i = 0;
    while text.len() < MIN_STANDARDISED + 2 {
        text.push((100 + i, 5.0 - i as f64 * 0.1));
        i += 1;
    }
    let mut j = 0;
    while vector.len() < MIN_STANDARDISED + 2 {
        vector.push((200 + j, 0.50 - j as f32 * 0.01));
        j += 1;
    }
    fuse(&text, &vector, 100)
}

#[test]
fn long_lists_fuse_by_standardised_scores_so_a_clear_winner_of_one_list_can_lead() {
    // 1 stands far above the rest of the vector list and is absent from BM25's; 7 is second in
    // both, each time only just above the pack. By rank 7 would lead; by score 1 does.
    let fused = long(&[(5, 9.0), (7, 5.2)], &[(1, 0.99), (7, 0.52)]);
    assert_eq!(fused[0].rid, 1, "{:?}", &fused[..3]);
    assert!(fused.iter().any(|f| f.rid == 7));
    // Every entry of both lists is there once, scores best first.
    assert_eq!(fused.len(), 12 + 12 - 1, "one memory (7) is in both lists");
    assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn a_memory_missing_from_a_list_scores_that_lists_lowest_entry_there() {
    let text: Vec<(i64, f64)> = (0..12).map(|i| (i, 12.0 - i as f64)).collect();
    let vector: Vec<(i64, f32)> = (0..12).map(|i| (i + 6, 0.9 - i as f32 * 0.05)).collect();
    let fused = fuse(&text, &vector, 100);
    let z = |list: &[f64], x: f64| {
        let n = list.len() as f64;
        let mean = list.iter().sum::<f64>() / n;
        let std = (list.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        (x - mean) / std
    };
    let ts: Vec<f64> = text.iter().map(|t| t.1).collect();
    let vs: Vec<f64> = vector.iter().map(|v| f64::from(v.1)).collect();
    // rid 0: first in BM25's list, not in the vector list.
    let want = TEXT_WEIGHT * z(&ts, 12.0) + (1.0 - TEXT_WEIGHT) * z(&vs, vs[11]);
    let got = fused.iter().find(|f| f.rid == 0).unwrap();
    assert!((got.score - want).abs() < 1e-9, "{} vs {want}", got.score);
    assert_eq!((got.text_rank, got.vector_rank, got.similarity), (Some(1), None, None));
    // rid 6: in both (7th by BM25, first by vectors).
    let want = TEXT_WEIGHT * z(&ts, 6.0) + (1.0 - TEXT_WEIGHT) * z(&vs, vs[0]);
    let got = fused.iter().find(|f| f.rid == 6).unwrap();
    assert!((got.score - want).abs() < 1e-9, "{} vs {want}", got.score);
}

#[test]
fn equal_scores_do_not_divide_by_zero_and_keep_the_rank_order() {
    let text: Vec<(i64, f64)> = (0..12).map(|i| (i, 3.0)).collect();
    let vector: Vec<(i64, f32)> = (0..12).map(|i| (i, 0.5)).collect();
    let fused = fuse(&text, &vector, 100);
    assert!(fused.iter().all(|f| f.score == 0.0));
    assert_eq!(rids(&fused), (0..12).collect::<Vec<_>>());
}

#[test]
fn rank_relevance_is_one_for_first_in_every_list() {
    assert!((rank_relevance(Some(1), Some(1), 2) - 1.0).abs() < 1e-12);
    assert!((rank_relevance(Some(1), None, 2) - 0.5).abs() < 1e-12);
    assert!((rank_relevance(None, Some(1), 1) - 1.0).abs() < 1e-12);
    assert!(rank_relevance(Some(5), Some(9), 2) < rank_relevance(Some(2), Some(3), 2));
    assert_eq!(rank_relevance(None, None, 0), 0.0);
}
