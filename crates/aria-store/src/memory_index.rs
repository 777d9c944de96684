//! The in-memory vector index: every live vector of one embedding model, as one contiguous
//! row-major `f32` matrix of unit vectors, searched by exact dot product (= cosine similarity).
//!
//! SQLite stays the source of truth: the index is loaded from `memory_embeddings` on the first
//! search and tagged with the `memory_state.generation` it was loaded at. Writes made through
//! this process update it in place; a change made by another process moves the generation on,
//! and the next search reloads. Exact search keeps recall at 100 % (no approximate graph to
//! tune); a 384-dimension scan of 100,000 rows is ~38 M multiply-adds, a few milliseconds with
//! the 8-lane accumulation below, which the compiler turns into SIMD, split over two threads.

use std::collections::HashMap;

use crate::memory::{MemoryKind, MemoryStatus};

/// What a filter needs to know about a row without touching SQLite.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowMeta {
    pub status: MemoryStatus,
    pub kind: MemoryKind,
    pub categories: Vec<String>,
}

/// Exact-search index over the vectors of one model.
#[derive(Debug)]
pub(crate) struct VectorIndex {
    pub model: String,
    pub dims: usize,
    /// The `memory_state.generation` this index reflects.
    pub generation: i64,
    rids: Vec<i64>,
    metas: Vec<RowMeta>,
    data: Vec<f32>,
    slots: HashMap<i64, usize>,
}

/// Rows above which the scan is split over two threads.
const PARALLEL_ROWS: usize = 16_384;

impl VectorIndex {
    pub fn new(model: &str, dims: usize, generation: i64) -> VectorIndex {
        VectorIndex {
            model: model.to_owned(),
            dims,
            generation,
            rids: Vec::new(),
            metas: Vec::new(),
            data: Vec::new(),
            slots: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.rids.len()
    }

    /// Adds or replaces a row. The vector is normalised to unit length; a zero vector or one of
    /// the wrong length is not indexed (it could never be similar to anything).
    pub fn upsert(&mut self, rid: i64, meta: RowMeta, vector: &[f32]) {
        let Some(unit) = normalized(vector, self.dims) else {
            self.remove(rid);
            return;
        };
        match self.slots.get(&rid) {
            Some(&slot) => {
                self.metas[slot] = meta;
                self.data[slot * self.dims..(slot + 1) * self.dims].copy_from_slice(&unit);
            }
            None => {
                self.slots.insert(rid, self.rids.len());
                self.rids.push(rid);
                self.metas.push(meta);
                self.data.extend_from_slice(&unit);
            }
        }
    }

    /// Appends a row not yet in the index straight from its stored form (`f32` little-endian),
    /// decoding and normalising in place: no allocation per row, which is what loading 100,000
    /// vectors costs otherwise. Returns `false` (and indexes nothing) when the blob has the
    /// wrong length or the vector is zero or not finite, as [`VectorIndex::upsert`] would.
    pub fn push_le_bytes(&mut self, rid: i64, meta: RowMeta, blob: &[u8]) -> bool {
        if blob.len() != self.dims * 4 || self.slots.contains_key(&rid) {
            return false;
        }
        let start = self.data.len();
        self.data
            .extend(blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        let row = &mut self.data[start..];
        let norm = dot(row, row).sqrt();
        if !norm.is_finite() || norm == 0.0 {
            self.data.truncate(start);
            return false;
        }
        row.iter_mut().for_each(|x| *x /= norm);
        self.slots.insert(rid, self.rids.len());
        self.rids.push(rid);
        self.metas.push(meta);
        true
    }

    /// Room for `rows` more rows, so a load does not reallocate the matrix as it grows.
    pub fn reserve(&mut self, rows: usize) {
        self.rids.reserve(rows);
        self.metas.reserve(rows);
        self.data.reserve(rows.saturating_mul(self.dims));
        self.slots.reserve(rows);
    }

    /// Removes a row (swap-remove: the last row takes its slot).
    pub fn remove(&mut self, rid: i64) {
        let Some(slot) = self.slots.remove(&rid) else { return };
        let last = self.rids.len() - 1;
        if slot != last {
            let moved = self.rids[last];
            self.rids.swap(slot, last);
            self.metas.swap(slot, last);
            let (head, tail) = self.data.split_at_mut(last * self.dims);
            head[slot * self.dims..(slot + 1) * self.dims].copy_from_slice(&tail[..self.dims]);
            self.slots.insert(moved, slot);
        }
        self.rids.pop();
        self.metas.pop();
        self.data.truncate(last * self.dims);
    }

    /// The `k` most similar rows that pass `keep`, best first, as (rid, cosine similarity).
    /// An empty result when the query has the wrong length or is zero.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        keep: &(dyn Fn(&RowMeta) -> bool + Sync),
    ) -> Vec<(i64, f32)> {
        let Some(q) = normalized(query, self.dims) else { return Vec::new() };
        if k == 0 || self.rids.is_empty() {
            return Vec::new();
        }
        let rows = self.rids.len();
        let mut scored = if rows >= PARALLEL_ROWS {
            let mid = rows / 2;
            let (a, b) = std::thread::scope(|s| {
                let left = s.spawn(|| self.scan(&q, 0, mid, k, keep));
                let right = self.scan(&q, mid, rows, k, keep);
                // A panic in the scan is a bug; surface it instead of returning half the rows.
                (left.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), right)
            });
            let mut all = a;
            all.extend(b);
            all
        } else {
            self.scan(&q, 0, rows, k, keep)
        };
        top_k(&mut scored, k);
        scored
    }

    /// Scores rows `from..to` and keeps the best `k` of them, as (rid, similarity).
    fn scan(
        &self,
        q: &[f32],
        from: usize,
        to: usize,
        k: usize,
        keep: &(dyn Fn(&RowMeta) -> bool + Sync),
    ) -> Vec<(i64, f32)> {
        let mut scored = Vec::with_capacity(to - from);
        for slot in from..to {
            if !keep(&self.metas[slot]) {
                continue;
            }
            let row = &self.data[slot * self.dims..(slot + 1) * self.dims];
            scored.push((self.rids[slot], dot(q, row)));
        }
        top_k(&mut scored, k);
        scored
    }
}

/// Keeps the `k` highest scores, sorted best first; ties go to the lower rid, so the order
/// does not depend on where a row happens to sit in the matrix.
fn top_k(scored: &mut Vec<(i64, f32)>, k: usize) {
    let order = |a: &(i64, f32), b: &(i64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, order);
        scored.truncate(k);
    }
    scored.sort_unstable_by(order);
}

/// Dot product with eight independent accumulators, so the loop vectorises without
/// `-ffast-math` (floating-point addition is not associative; separate lanes make the order
/// explicit).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let chunks_a = a.chunks_exact(8);
    let chunks_b = b.chunks_exact(8);
    let tail: f32 = chunks_a.remainder().iter().zip(chunks_b.remainder()).map(|(x, y)| x * y).sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for i in 0..8 {
            acc[i] += ca[i] * cb[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `v / |v|`, or `None` when `v` has the wrong length, is zero or is not finite.
pub(crate) fn normalized(v: &[f32], dims: usize) -> Option<Vec<f32>> {
    if v.len() != dims {
        return None;
    }
    let norm = dot(v, v).sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return None;
    }
    Some(v.iter().map(|x| x / norm).collect())
}

/// Cosine similarity of two vectors of the same length (0 when either is zero).
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    match (normalized(a, a.len()), normalized(b, a.len())) {
        (Some(a), Some(b)) => dot(&a, &b),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(kind: MemoryKind) -> RowMeta {
        RowMeta { status: MemoryStatus::Active, kind, categories: vec![] }
    }

    fn any(_: &RowMeta) -> bool {
        true
    }

    #[test]
    fn search_ranks_by_cosine_and_respects_the_filter() {
        let mut index = VectorIndex::new("m", 3, 0);
        index.upsert(1, meta(MemoryKind::Fact), &[1.0, 0.0, 0.0]);
        index.upsert(2, meta(MemoryKind::Preference), &[0.6, 0.8, 0.0]);
        index.upsert(3, meta(MemoryKind::Fact), &[0.0, 0.0, 5.0]);
        let hits = index.search(&[2.0, 0.1, 0.0], 2, &any);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 2]);
        assert!((hits[0].1 - 0.99875).abs() < 1e-4, "{hits:?}");
        let facts = index.search(&[0.6, 0.8, 0.0], 5, &|m| m.kind == MemoryKind::Fact);
        assert_eq!(facts.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 3]);
    }

    #[test]
    fn remove_and_replace_keep_slots_consistent() {
        let mut index = VectorIndex::new("m", 2, 0);
        for rid in 0..5 {
            index.upsert(rid, meta(MemoryKind::Fact), &[1.0, rid as f32]);
        }
        index.remove(1);
        index.remove(4);
        index.remove(42);
        index.upsert(3, meta(MemoryKind::Fact), &[-1.0, 0.0]);
        assert_eq!(index.len(), 3);
        let hits = index.search(&[-1.0, 0.0], 1, &any);
        assert_eq!(hits, vec![(3, 1.0)]);
        let all: Vec<i64> = index.search(&[1.0, 0.0], 10, &any).into_iter().map(|h| h.0).collect();
        assert_eq!(all, vec![0, 2, 3]);
    }

    #[test]
    fn zero_and_wrong_length_vectors_are_not_indexed_or_searched() {
        let mut index = VectorIndex::new("m", 2, 0);
        index.upsert(1, meta(MemoryKind::Fact), &[0.0, 0.0]);
        index.upsert(2, meta(MemoryKind::Fact), &[1.0, 0.0, 0.0]);
        assert_eq!(index.len(), 0);
        index.upsert(3, meta(MemoryKind::Fact), &[1.0, 0.0]);
        assert!(index.search(&[0.0, 0.0], 3, &any).is_empty());
        assert!(index.search(&[1.0], 3, &any).is_empty());
    }

    #[test]
    fn parallel_scan_returns_what_a_single_scan_would() {
        let dims = 16;
        let mut index = VectorIndex::new("m", dims, 0);
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let rows = PARALLEL_ROWS + 1000;
        for rid in 0..rows as i64 {
            let v: Vec<f32> = (0..dims).map(|_| next()).collect();
            index.upsert(rid, meta(MemoryKind::Fact), &v);
        }
        let q: Vec<f32> = (0..dims).map(|_| next()).collect();
        let fast = index.search(&q, 10, &any);
        let qn = normalized(&q, dims).unwrap();
        let mut slow = index.scan(&qn, 0, rows, rows, &any);
        slow.truncate(10);
        assert_eq!(fast, slow);
    }

    #[test]
    fn push_le_bytes_indexes_what_upsert_would_and_refuses_bad_blobs() {
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let mut pushed = VectorIndex::new("m", 2, 0);
        let mut upserted = VectorIndex::new("m", 2, 0);
        for (rid, v) in [(1, [3.0f32, 4.0]), (2, [0.0, -2.0]), (5, [1.0, 1.0])] {
            assert!(pushed.push_le_bytes(rid, meta(MemoryKind::Fact), &bytes(&v)));
            upserted.upsert(rid, meta(MemoryKind::Fact), &v);
        }
        assert_eq!(pushed.data, upserted.data);
        assert_eq!(pushed.search(&[0.6, 0.8], 3, &any), upserted.search(&[0.6, 0.8], 3, &any));
        // Wrong length, zero, not finite, already present: nothing indexed, nothing left behind.
        assert!(!pushed.push_le_bytes(6, meta(MemoryKind::Fact), &bytes(&[1.0, 2.0, 3.0])));
        assert!(!pushed.push_le_bytes(7, meta(MemoryKind::Fact), &bytes(&[0.0, 0.0])));
        assert!(!pushed.push_le_bytes(8, meta(MemoryKind::Fact), &bytes(&[f32::NAN, 1.0])));
        assert!(!pushed.push_le_bytes(1, meta(MemoryKind::Fact), &bytes(&[1.0, 0.0])));
        assert_eq!((pushed.len(), pushed.data.len()), (3, 6));
        assert_eq!(pushed.search(&[3.0, 4.0], 1, &any), vec![(1, 1.0)]);
    }

    #[test]
    fn dot_matches_the_naive_sum() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.1).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-3);
        assert!((cosine(&[1.0, 0.0], &[0.0, 2.0])).abs() < 1e-6);
    }
}
