//! Unit tests of the search helpers.

use super::*;

#[test]
fn rrf_puts_a_memory_found_by_both_above_those_found_by_one() {
    // 7 is second in both lists; 1 and 2 top one list each.
    let fused = fuse(&[1, 7, 3], &[(2, 0.9), (7, 0.8), (4, 0.7)], 10);
    assert_eq!(fused[0].rid, 7);
    assert_eq!((fused[0].text_rank, fused[0].vector_rank), (Some(2), Some(2)));
    assert!((fused[0].score - 2.0 / 62.0).abs() < 1e-12);
    assert_eq!(fused.iter().map(|f| f.rid).collect::<Vec<_>>(), vec![7, 1, 2, 3, 4]);
    assert_eq!(fuse(&[1, 2], &[], 1).len(), 1);
}

#[test]
fn fts_query_quotes_words_and_drops_stop_words_and_syntax() {
    assert_eq!(
        fts_query("What's my favourite COLOR?").as_deref(),
        Some("\"favourite\" OR \"color\"")
    );
    assert_eq!(fts_query("NEAR(a b) OR \"x*\"").as_deref(), Some("\"near\" OR \"b\" OR \"x\""));
    assert_eq!(fts_query("the a").as_deref(), Some("\"the\" OR \"a\""));
    assert_eq!(fts_query("  ?! "), None);
}
