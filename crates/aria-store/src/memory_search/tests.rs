//! Unit tests of the search helpers.

use super::*;

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
