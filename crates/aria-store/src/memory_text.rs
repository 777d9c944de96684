//! The BM25 half of a memory search: free text to an FTS5 query (stop words dropped, every word
//! quoted), and the ranked candidates with their scores, bounded in work at 100,000 memories.

use std::collections::HashSet;

use rusqlite::{Connection, params};
use serde_json::json;

use crate::error::{StoreError, sql};
use crate::memory::normalize_text;
use crate::memory_search::{FILTER_SQL, MemoryFilter};

/// Rows a query word may match before it counts as common (see [`text_candidates`]).
pub const COMMON_WORD_ROWS: usize = 2_000;

/// BM25 candidates, best first. The query text becomes an OR of its words (stop words
/// dropped), each quoted so nothing in it is FTS5 syntax.
///
/// FTS5 scores every row that matches before it can sort, so one common word makes a search
/// over 100,000 memories score tens of thousands of rows. The rule that bounds the work:
/// - each word is probed for whether it matches more than [`COMMON_WORD_ROWS`] rows (the
///   probe stops counting there, so it costs at most that many doclist steps, no scoring);
/// - when some words are rarer than that, the common ones are dropped from the query: their
///   BM25 weight (IDF) is low, so the ranking of the rows the rare words find barely moves,
///   and rows that only a common word finds would rank below them anyway;
/// - when every word is common, all of them are kept but only the newest
///   [`COMMON_WORD_ROWS`] matching rows are scored (newest = highest rowid, which FTS5 walks
///   without scoring), a recency cut that suits memories.
///
/// A store with at most [`COMMON_WORD_ROWS`] memories is never affected: no word can be
/// common there, so small collections (and the IR benchmark's) get exact BM25.
pub(crate) fn text_candidates(
    conn: &Connection,
    text: &str,
    filter: &MemoryFilter,
    n: usize,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let words = query_words(text);
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let mut rare: Vec<&str> = Vec::with_capacity(words.len());
    for w in &words {
        if !is_common(conn, w)? {
            rare.push(w);
        }
    }
    let newest_only = rare.is_empty();
    let fts = if newest_only { or_query(&words) } else { or_query(&rare) };
    let (statuses, kinds, categories, private, without, unconfirmed) = filter.sql_params();
    let filter_query = format!(
        "SELECT m.rid FROM memories m WHERE m.rid IN (SELECT value FROM json_each(?1)) \
                 AND {FILTER_SQL}"
    );
    // Rank with the full-text index alone (no join per matching row: that is what made a
    // common word slow at 100,000 memories), then keep the ranked rows that pass the filter.
    // Fetch more when the filter dropped too many and the index has more to give.
    let mut fetch = n.saturating_mul(2).max(32);
    loop {
        let (ranked, exhausted) = if newest_only {
            (ranked_newest(conn, &fts, fetch)?, true)
        } else {
            let ranked = ranked_all(conn, &fts, fetch)?;
            let exhausted = ranked.len() < fetch;
            (ranked, exhausted)
        };
        let keep: HashSet<i64> = {
            let mut stmt = conn
                .prepare_cached(&filter_query)
                .map_err(sql("preparing the text search filter"))?;
            let rows = stmt
                .query_map(
                    params![
                        json!(ranked.iter().map(|r| r.0).collect::<Vec<_>>()).to_string(),
                        statuses,
                        kinds,
                        categories,
                        private,
                        without,
                        unconfirmed
                    ],
                    |r| r.get(0),
                )
                .map_err(sql("filtering the text search"))?;
            rows.collect::<Result<_, _>>().map_err(sql("reading a text search result"))?
        };
        let kept: Vec<(i64, f64)> =
            ranked.into_iter().filter(|r| keep.contains(&r.0)).take(n).collect();
        if kept.len() >= n || exhausted {
            return Ok(kept);
        }
        fetch = fetch.saturating_mul(4);
    }
}

/// Whether `word` matches more than [`COMMON_WORD_ROWS`] rows (counting stops there).
fn is_common(conn: &Connection, word: &str) -> Result<bool, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ?1 \
             LIMIT ?2)",
        )
        .map_err(sql("preparing the word probe"))?;
    let limit = i64::try_from(COMMON_WORD_ROWS + 1).unwrap_or(i64::MAX);
    let count: i64 = stmt
        .query_row(params![format!("\"{word}\""), limit], |r| r.get(0))
        .map_err(sql("probing a query word"))?;
    Ok(usize::try_from(count).unwrap_or(usize::MAX) > COMMON_WORD_ROWS)
}

/// The BM25 top-`fetch` over every matching row, as (rid, BM25 score: higher is better).
fn ranked_all(conn: &Connection, fts: &str, fetch: usize) -> Result<Vec<(i64, f64)>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT rowid, rank FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rank \
             LIMIT ?2",
        )
        .map_err(sql("preparing the text search"))?;
    // FTS5's rank is bm25(), lower for better matches.
    let rows = stmt
        .query_map(params![fts, i64::try_from(fetch).unwrap_or(i64::MAX)], |r| {
            Ok((r.get::<_, i64>(0)?, -r.get::<_, f64>(1)?))
        })
        .map_err(sql("running the text search"))?;
    rows.collect::<Result<_, _>>().map_err(sql("reading a text search result"))
}

/// The BM25 top-`fetch` among the newest [`COMMON_WORD_ROWS`] matching rows, as (rid, BM25
/// score: higher is better).
fn ranked_newest(
    conn: &Connection,
    fts: &str,
    fetch: usize,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ?1 \
             ORDER BY rowid DESC LIMIT ?2",
        )
        .map_err(sql("preparing the text search"))?;
    let limit = i64::try_from(COMMON_WORD_ROWS).unwrap_or(i64::MAX);
    let rows = stmt
        .query_map(params![fts, limit], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?)))
        .map_err(sql("running the text search"))?;
    let mut scored: Vec<(i64, f64)> =
        rows.collect::<Result<_, _>>().map_err(sql("reading a text search result"))?;
    // bm25() is lower for better matches; ties go to the newer row.
    scored.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
    Ok(scored.into_iter().take(fetch).map(|(rid, bm25)| (rid, -bm25)).collect())
}

const STOP_WORDS: &[&str] = &[
    "a", "s", "t", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has",
    "have", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "that", "the",
    "this", "to", "was", "we", "what", "when", "where", "which", "who", "why", "will", "with",
    "you", "your",
];

/// The FTS5 query for free text, or `None` when no searchable word is left.
pub fn fts_query(text: &str) -> Option<String> {
    let words = query_words(text);
    (!words.is_empty()).then(|| or_query(&words))
}

/// The distinct searchable words of free text (stop words dropped unless nothing else is
/// left), at most 64, normalised so none of them is FTS5 syntax.
fn query_words(text: &str) -> Vec<String> {
    let normalized = normalize_text(text);
    let mut words: Vec<&str> = Vec::new();
    for w in normalized.split(' ').filter(|w| !w.is_empty() && !STOP_WORDS.contains(w)) {
        if !words.contains(&w) && words.len() < 64 {
            words.push(w);
        }
    }
    if words.is_empty() {
        // A query made only of stop words still deserves an answer.
        words = normalized.split(' ').filter(|w| !w.is_empty()).take(64).collect();
    }
    words.into_iter().map(str::to_owned).collect()
}

/// `"w1" OR "w2" …`.
fn or_query<S: AsRef<str>>(words: &[S]) -> String {
    words.iter().map(|w| format!("\"{}\"", w.as_ref())).collect::<Vec<_>>().join(" OR ")
}
