//! How a hybrid search joins its two ranked lists into one: a weighted sum of each list's
//! standardised scores (z-scores), after one round of pseudo-relevance feedback on the vector
//! side.
//!
//! # Fusion
//!
//! BM25 scores and cosine similarities live on different scales, and their spread differs from
//! query to query. Each list's scores are therefore standardised over the list
//! (`z = (s − mean) / std`) and a memory's fused score is
//! `TEXT_WEIGHT · z_text + VECTOR_WEIGHT · z_vector`; a memory missing from a list counts as
//! that list's lowest entry. A memory found by one retriever only can thus still rank first
//! when that retriever is sure of it, which rank fusion (RRF) does not allow: on Cranfield
//! (`bench/retrieval`) z-score fusion raised nDCG@10 on both halves of the queries with either
//! embedded embedder. The weight was chosen on the odd half (0.4 for BM25 was best there, among
//! 0.2 to 0.6) and checked on the even half.
//!
//! A mean and a spread need samples: with fewer than [`MIN_STANDARDISED`] entries in either
//! list (a small store, a rare word) two nearly equal scores would become −1 and +1. Such
//! searches fuse by rank instead, reciprocal rank fusion (`Σ 1 / (60 + rank)`), where a memory
//! found by both retrievers outscores any memory found by one at the same ranks; and they get no
//! feedback round.
//!
//! # Feedback
//!
//! The vectors of the three memories the first fusion puts on top are averaged into the query
//! vector (Rocchio, `q' = q + mean(top 3)`, renormalised), the vector search's candidates are
//! ranked again against `q'`, and the fusion runs once more with that list. The memories a
//! search finds first say what the query is about in the collection's own terms; the few words
//! of a query do not. The second ranking only rescores the candidates the first pass already
//! rescored (hundreds of rows, not the whole index), so it adds well under a millisecond. A hit's
//! `similarity` stays its cosine similarity to the query itself.

use std::collections::HashMap;

/// Weight of the BM25 list's standardised scores; the vector list gets the rest.
pub const TEXT_WEIGHT: f64 = 0.4;
/// Memories from the top of the first fusion whose vectors feed back into the query.
pub const FEEDBACK_DOCS: usize = 3;
/// Entries both lists need for their scores to be standardised (and for feedback); shorter
/// lists are fused by rank.
pub const MIN_STANDARDISED: usize = 10;

/// Whether lists of these lengths are fused by their standardised scores (else by rank).
pub(crate) fn standardises(text: usize, vector: usize) -> bool {
    text >= MIN_STANDARDISED && vector >= MIN_STANDARDISED
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fused {
    pub rid: i64,
    pub score: f64,
    pub text_rank: Option<usize>,
    pub vector_rank: Option<usize>,
    pub similarity: Option<f32>,
}

/// Fuses a BM25 list (rid, score: higher is better) and a vector list (rid, cosine similarity),
/// each best first, into at most `limit` hits, best first: by standardised scores when both
/// lists are long enough ([`standardises`]), else by rank. With one list empty the other's
/// order is kept. Ties go to the better of the two ranks, then the lower rid.
pub(crate) fn fuse(text: &[(i64, f64)], vector: &[(i64, f32)], limit: usize) -> Vec<Fused> {
    let vector: Vec<(i64, f64)> = vector.iter().map(|&(rid, s)| (rid, f64::from(s))).collect();
    let by_score = standardises(text.len(), vector.len());
    let (text_weight, vector_weight) =
        if by_score { (TEXT_WEIGHT, 1.0 - TEXT_WEIGHT) } else { (1.0, 1.0) };
    // Each entry's share of the fused score: its standardised score, or 1 / (RRF_K + rank).
    let contributions = |list: &[(i64, f64)]| -> Vec<f64> {
        if by_score {
            standardised(list)
        } else {
            (1..=list.len()).map(|r| 1.0 / (crate::memory_search::RRF_K + r as f64)).collect()
        }
    };
    let mut by_rid: HashMap<i64, Fused> = HashMap::new();
    let text_z = contributions(text);
    for (i, (&(rid, _), z)) in text.iter().zip(&text_z).enumerate() {
        let f = by_rid.entry(rid).or_insert_with(|| blank(rid));
        f.text_rank = Some(i + 1);
        f.score += text_weight * z;
    }
    let vector_z = contributions(&vector);
    for (i, (&(rid, s), z)) in vector.iter().zip(&vector_z).enumerate() {
        let f = by_rid.entry(rid).or_insert_with(|| blank(rid));
        f.vector_rank = Some(i + 1);
        f.similarity = Some(s as f32);
        f.score += vector_weight * z;
    }
    // Missing from a list: that list's lowest standardised score (nothing, by rank).
    let floor = |z: &[f64]| z.iter().copied().fold(f64::INFINITY, f64::min);
    let (text_floor, vector_floor) = (floor(&text_z), floor(&vector_z));
    if by_score {
        for f in by_rid.values_mut() {
            if f.text_rank.is_none() {
                f.score += text_weight * text_floor;
            }
            if f.vector_rank.is_none() {
                f.score += vector_weight * vector_floor;
            }
        }
    }
    let mut fused: Vec<Fused> = by_rid.into_values().collect();
    let best_rank = |f: &Fused| f.text_rank.into_iter().chain(f.vector_rank).min().unwrap_or(0);
    fused.sort_by(|a, b| {
        b.score.total_cmp(&a.score).then(best_rank(a).cmp(&best_rank(b))).then(a.rid.cmp(&b.rid))
    });
    fused.truncate(limit);
    fused
}

/// `(s − mean) / std` over the list; all zeros when the scores do not spread (one entry, or
/// every score equal) or are not finite.
fn standardised(list: &[(i64, f64)]) -> Vec<f64> {
    let n = list.len() as f64;
    let mean = list.iter().map(|e| e.1).sum::<f64>() / n;
    let var = list.iter().map(|e| (e.1 - mean).powi(2)).sum::<f64>() / n;
    let std = var.sqrt();
    if !(std.is_finite() && std > 1e-12) {
        return vec![0.0; list.len()];
    }
    list.iter().map(|e| (e.1 - mean) / std).collect()
}

fn blank(rid: i64) -> Fused {
    Fused { rid, score: 0.0, text_rank: None, vector_rank: None, similarity: None }
}

/// The rank-fusion score of a hit, `Σ 1 / (RRF_K + rank)` over the lists it is in, as a share of
/// the best possible (first in every one of `lists`): 1.0 for a memory both retrievers put
/// first. What `aria memories search` shows as relevance.
pub fn rank_relevance(text_rank: Option<usize>, vector_rank: Option<usize>, lists: usize) -> f64 {
    let k = crate::memory_search::RRF_K;
    let score: f64 =
        text_rank.into_iter().chain(vector_rank).map(|r| 1.0 / (k + r as f64)).sum::<f64>();
    score / (lists.max(1) as f64 / (k + 1.0))
}

#[cfg(test)]
mod tests;
