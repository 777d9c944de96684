//! The in-memory vector index: every live vector of one embedding model, searched for the
//! exact top-k by cosine similarity, in two passes.
//!
//! SQLite stays the source of truth: the index is loaded from `memory_embeddings` on the first
//! search and tagged with the `memory_state.generation` it was loaded at. Writes made through
//! this process update it in place; a change made by another process moves the generation on,
//! and the next search reloads.
//!
//! # Two passes, exact answer
//!
//! An exact scan of 100,000 × 384 `f32` reads 154 MB per query: memory-bandwidth bound, about
//! 15 ms on two cores. So each unit vector `x` is also kept as int8 codes with one scale,
//! `x ≈ x' = scale · code` (`scale = max |xᵢ| / 127`), 4× smaller, and the query the same way.
//! 1. **First pass**: integer dot products of the codes (which LLVM vectorises) over all rows,
//!    split over two threads, keep the `m = max(OVERSAMPLE · k, MIN_CANDIDATES)` best
//!    approximate scores `a = q'·x'`.
//! 2. **Rescore** those `m` with the exact `f32` dot product and take the top `k`.
//!
//! The answer is then *certified*, not hoped for. For unit `q` and `x`,
//! `|q·x − q'·x'| ≤ |x − x'| + |q − q'| · |x'|`, and both residual norms are known (each row's
//! is stored at quantisation). Let `t` be the k-th best exact score among the candidates and
//! `cut` the lowest approximate score that made the candidate list. Every row left out has
//! `a ≤ cut`, hence an exact score `≤ cut + E` with `E` the largest error bound of any row.
//! When `cut + E < t` no row left out can enter the top `k`: done. Otherwise (near-ties across
//! the cut, many identical vectors) a second scan rescores every row whose own bound
//! `a + e ≥ t`, which by the same argument are the only rows that could. The result is the
//! exact top `k` of the `f32` scan, ties broken by the lower rid, whatever the data.
//!
//! # Where the `f32` vectors live
//!
//! [`Residence::Ram`] keeps the unit `f32` rows next to the codes (1.9 KB per 384-dim row);
//! [`Residence::Sqlite`] keeps only the codes (0.4 KB per row) and reads the candidates' blobs
//! from `memory_embeddings` through a [`VectorSource`] when rescoring.
//!
//! # Passages
//!
//! A row is one passage of a memory (a long text has several, schema step 15). A search
//! returns memories, each scored by its best passage: the rescored rows are reduced to the
//! best row per memory before `t` (now the k-th best *memory*) is taken. The certificate above
//! still holds: a row left out scores at most `cut + E < t`, so it can neither bring another
//! memory into the top `k` nor raise the score of one already there, which is at least `t`.

use std::collections::{HashMap, HashSet};

use crate::error::StoreError;
use crate::memory::{MemoryKind, MemoryStatus};

/// What a filter needs to know about a row without touching SQLite.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowMeta {
    pub status: MemoryStatus,
    pub kind: MemoryKind,
    pub categories: Vec<String>,
    pub private: bool,
    pub unconfirmed: bool,
}

/// Where the exact `f32` vectors used for rescoring are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Residence {
    /// In this process, next to the int8 codes: the fastest rescore, ~4.8× the codes' memory.
    #[default]
    Ram,
    /// Read from the database for the candidates of each search: a quarter of the memory.
    Sqlite,
}

/// A row's key: the memory's rid and the passage's number (0 for the first).
pub(crate) type RowKey = (i64, u32);

/// Gives the stored (not necessarily unit) vectors of rows, for rescoring with
/// [`Residence::Sqlite`]. A row it does not know is simply not passed to `sink`.
pub(crate) trait VectorSource {
    fn fetch(
        &mut self,
        rows: &[RowKey],
        sink: &mut dyn FnMut(RowKey, &[f32]),
    ) -> Result<(), StoreError>;
}

/// A row filter.
pub(crate) type Keep<'a> = &'a (dyn Fn(&RowMeta) -> bool + Sync);

/// Candidates rescored per result wanted (`c` in `c · k`).
pub(crate) const OVERSAMPLE: usize = 4;
/// Candidates rescored at least, whatever `k`.
pub(crate) const MIN_CANDIDATES: usize = 100;
/// Rows above which a scan is split over two threads.
const PARALLEL_ROWS: usize = 16_384;
/// Covers the `f32` rounding of the scores being compared (a 384-term dot product of unit
/// vectors is off by less than 3e-5), so the certificate also holds for computed scores.
const ROUNDING_SLACK: f32 = 1e-4;

/// Searches the vectors of one model.
#[derive(Debug)]
pub(crate) struct VectorIndex {
    pub model: String,
    pub dims: usize,
    /// The `memory_state.generation` this index reflects.
    pub generation: i64,
    residence: Residence,
    /// Per row: the memory's rid, and which of its passages the row is.
    rids: Vec<i64>,
    passages: Vec<u32>,
    metas: Vec<RowMeta>,
    /// `rows × dims` int8 codes.
    codes: Vec<i8>,
    /// Per row: `x' = scale · code`.
    scales: Vec<f32>,
    /// Per row: an upper bound of `|x − x'|`.
    errors: Vec<f32>,
    /// At least every row's error bound (never lowered on removal: a larger bound stays valid).
    max_error: f32,
    /// `rows × dims` unit vectors, with [`Residence::Ram`] only.
    exact: Vec<f32>,
    slots: HashMap<RowKey, usize>,
    /// For a memory with more than one passage: one past its highest passage number.
    spans: HashMap<i64, u32>,
    /// Scratch for decoding a stored vector.
    scratch: Vec<f32>,
}

impl VectorIndex {
    pub fn new(model: &str, dims: usize, generation: i64, residence: Residence) -> VectorIndex {
        VectorIndex {
            model: model.to_owned(),
            dims,
            generation,
            residence,
            rids: Vec::new(),
            passages: Vec::new(),
            metas: Vec::new(),
            codes: Vec::new(),
            scales: Vec::new(),
            errors: Vec::new(),
            max_error: 0.0,
            exact: Vec::new(),
            slots: HashMap::new(),
            spans: HashMap::new(),
            scratch: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.rids.len()
    }

    pub fn residence(&self) -> Residence {
        self.residence
    }

    /// Replaces a memory's rows with one vector (one passage); see
    /// [`VectorIndex::upsert_passages`].
    #[cfg(test)]
    pub fn upsert(&mut self, rid: i64, meta: RowMeta, vector: &[f32]) {
        self.upsert_passages(rid, meta, &[vector]);
    }

    /// Replaces a memory's rows with one row per passage, each vector normalised to unit
    /// length; a zero passage or one of the wrong length is not indexed (it could never be
    /// similar to anything).
    pub fn upsert_passages<V: AsRef<[f32]>>(&mut self, rid: i64, meta: RowMeta, passages: &[V]) {
        self.remove(rid);
        for (passage, vector) in (0u32..).zip(passages) {
            if let Some(unit) = normalized(vector.as_ref(), self.dims) {
                let slot = self.push_slot((rid, passage), meta.clone());
                self.set_row(slot, &unit);
            }
        }
    }

    /// Adds an empty slot (zero codes, scale and error) for `key`, which is not in the index
    /// yet; the caller fills it with [`VectorIndex::set_row`].
    fn push_slot(&mut self, key: RowKey, meta: RowMeta) -> usize {
        let slot = self.rids.len();
        self.slots.insert(key, slot);
        let (rid, passage) = key;
        if passage > 0 {
            let span = self.spans.entry(rid).or_insert(1);
            *span = (*span).max(passage + 1);
        }
        self.rids.push(rid);
        self.passages.push(passage);
        self.metas.push(meta);
        self.codes.resize(self.codes.len() + self.dims, 0);
        self.scales.push(0.0);
        self.errors.push(0.0);
        if self.residence == Residence::Ram {
            self.exact.resize(self.exact.len() + self.dims, 0.0);
        }
        slot
    }

    /// The slots of a memory's passages.
    fn slots_of(&self, rid: i64) -> impl Iterator<Item = usize> + '_ {
        let span = self.spans.get(&rid).copied().unwrap_or(1);
        (0..span).filter_map(move |p| self.slots.get(&(rid, p)).copied())
    }

    /// Appends a row not yet in the index straight from its stored form (`f32` little-endian),
    /// without an allocation per row (what loading 100,000 vectors costs otherwise). Returns
    /// `false` (and indexes nothing) when the blob has the wrong length or the vector is zero
    /// or not finite, as [`VectorIndex::upsert`] would.
    pub fn push_le_bytes(&mut self, key: RowKey, meta: RowMeta, blob: &[u8]) -> bool {
        if blob.len() != self.dims * 4 || self.slots.contains_key(&key) {
            return false;
        }
        let mut unit = std::mem::take(&mut self.scratch);
        unit.clear();
        unit.extend(blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        let ok = normalize_in_place(&mut unit);
        if ok {
            let slot = self.push_slot(key, meta);
            self.set_row(slot, &unit);
        }
        self.scratch = unit;
        ok
    }

    /// Writes a unit vector's codes (and exact copy) into an existing slot.
    fn set_row(&mut self, slot: usize, unit: &[f32]) {
        let range = slot * self.dims..(slot + 1) * self.dims;
        let (scale, error) = quantize(unit, &mut self.codes[range.clone()]);
        self.scales[slot] = scale;
        self.errors[slot] = error;
        self.max_error = self.max_error.max(error);
        if self.residence == Residence::Ram {
            self.exact[range].copy_from_slice(unit);
        }
    }

    /// Room for `rows` more rows, so a load does not reallocate as it grows.
    pub fn reserve(&mut self, rows: usize) {
        self.rids.reserve(rows);
        self.passages.reserve(rows);
        self.metas.reserve(rows);
        self.codes.reserve(rows.saturating_mul(self.dims));
        self.scales.reserve(rows);
        self.errors.reserve(rows);
        if self.residence == Residence::Ram {
            self.exact.reserve(rows.saturating_mul(self.dims));
        }
        self.slots.reserve(rows);
    }

    /// Removes a memory's rows.
    pub fn remove(&mut self, rid: i64) {
        let span = self.spans.remove(&rid).unwrap_or(1);
        for passage in 0..span {
            self.remove_row((rid, passage));
        }
    }

    /// Removes a row (swap-remove: the last row takes its slot).
    fn remove_row(&mut self, key: RowKey) {
        let Some(slot) = self.slots.remove(&key) else { return };
        let last = self.rids.len() - 1;
        let d = self.dims;
        if slot != last {
            let moved = (self.rids[last], self.passages[last]);
            self.rids.swap(slot, last);
            self.passages.swap(slot, last);
            self.metas.swap(slot, last);
            self.scales.swap(slot, last);
            self.errors.swap(slot, last);
            self.codes.copy_within(last * d..(last + 1) * d, slot * d);
            if self.residence == Residence::Ram {
                self.exact.copy_within(last * d..(last + 1) * d, slot * d);
            }
            self.slots.insert(moved, slot);
        }
        self.rids.pop();
        self.passages.pop();
        self.metas.pop();
        self.scales.pop();
        self.errors.pop();
        self.codes.truncate(last * d);
        if self.residence == Residence::Ram {
            self.exact.truncate(last * d);
        }
    }

    /// The `k` most similar memories whose rows pass `keep`, best first, as (rid, cosine
    /// similarity of its best passage): exactly what scoring every row in `f32` would return
    /// (see the module docs). Empty when
    /// the query has the wrong length or is zero. `source` is only read with
    /// [`Residence::Sqlite`].
    #[cfg(test)]
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        keep: Keep<'_>,
        source: &mut dyn VectorSource,
    ) -> Result<Vec<(i64, f32)>, StoreError> {
        let mut pool = self.search_alongside(query, k, keep, source, &mut || {})?;
        pool.truncate(k);
        Ok(pool)
    }

    /// The best memories the search rescored exactly, best first, each once with its best
    /// rescored passage: its first `k` entries are [`VectorIndex::search`]'s answer, the rest
    /// the next best candidates (from `OVERSAMPLE · k` or [`MIN_CANDIDATES`] rows in all,
    /// whichever is more, when there are that many), which
    /// pseudo-relevance feedback ranks again ([`VectorIndex::feedback`]). Runs
    /// `alongside` exactly once on the calling thread while other threads do the first pass
    /// (the hybrid search runs BM25 there): on two cores the two retrievers overlap instead of
    /// queueing.
    pub fn search_alongside(
        &self,
        query: &[f32],
        k: usize,
        keep: Keep<'_>,
        source: &mut dyn VectorSource,
        alongside: &mut dyn FnMut(),
    ) -> Result<Vec<(i64, f32)>, StoreError> {
        let mut alongside = Some(alongside);
        let result = self.search_inner(query, k, keep, source, &mut alongside);
        if let Some(run) = alongside {
            run();
        }
        result
    }

    fn search_inner(
        &self,
        query: &[f32],
        k: usize,
        keep: Keep<'_>,
        source: &mut dyn VectorSource,
        alongside: &mut Option<&mut dyn FnMut()>,
    ) -> Result<Vec<(i64, f32)>, StoreError> {
        let Some(q) = normalized(query, self.dims) else { return Ok(Vec::new()) };
        if k == 0 || self.rids.is_empty() {
            return Ok(Vec::new());
        }
        let mut q_codes = vec![0i8; self.dims];
        let (q_scale, q_error) = quantize(&q, &mut q_codes);
        let query = Query { codes: &q_codes, scale: q_scale };
        let m = k.saturating_mul(OVERSAMPLE).max(MIN_CANDIDATES).min(self.rids.len());
        let (candidates, kept) = self.first_pass(&query, m, keep, alongside);
        let slots: Vec<usize> = candidates.iter().map(|c| c.0).collect();
        let mut scored = self.rescore(&q, &slots, source)?;
        best_per_memory(&mut scored);
        if candidates.len() == kept {
            // Every row that passes the filter was rescored.
            return Ok(scored);
        }
        let t = scored.get(k - 1).map_or(f32::NEG_INFINITY, |s| s.1);
        let cut = candidates.iter().map(|c| c.1).fold(f32::INFINITY, f32::min);
        let bound = |e: f32| e + q_error * (1.0 + e) + ROUNDING_SLACK;
        if cut + bound(self.max_error) < t {
            return Ok(scored);
        }
        // Near-ties across the cut: rescore every other row that could still reach `t`.
        let taken: HashSet<usize> = slots.into_iter().collect();
        let rest: Vec<usize> = (0..self.rids.len())
            .filter(|&slot| !taken.contains(&slot) && keep(&self.metas[slot]))
            .filter(|&slot| self.approx(&query, slot) + bound(self.errors[slot]) >= t)
            .collect();
        scored.extend(self.rescore(&q, &rest, source)?);
        // Near-ties can rescore thousands: the pool stays the first pass's size.
        best_per_memory(&mut scored);
        scored.truncate(m.max(k));
        Ok(scored)
    }

    /// Pseudo-relevance feedback (Rocchio): the memories of `pool` ranked again by their best
    /// passage's cosine similarity to the unit query plus the mean, over the memories of
    /// `feedback` (the ones a first search put on top), of each one's passage closest to the
    /// query (what made it relevant; for a memory of one passage, its vector); best first.
    /// `None` when no memory of `feedback` is in the index (nothing to learn from); memories
    /// of `pool` not in the index are left out.
    pub fn feedback(
        &self,
        query: &[f32],
        feedback: &[i64],
        pool: &[i64],
        source: &mut dyn VectorSource,
    ) -> Result<Option<Vec<(i64, f32)>>, StoreError> {
        let Some(mut q) = normalized(query, self.dims) else { return Ok(None) };
        let d = self.dims;
        // Per feedback memory: its best passage so far, as (similarity, unit vector).
        let mut best: HashMap<i64, (f32, Vec<f32>)> = HashMap::new();
        let mut offer = |rid: i64, unit: &[f32]| {
            let score = dot(&q, unit);
            let entry = best.entry(rid).or_insert_with(|| (f32::NEG_INFINITY, Vec::new()));
            if score > entry.0 {
                *entry = (score, unit.to_vec());
            }
        };
        let slots: Vec<usize> = feedback.iter().flat_map(|&r| self.slots_of(r)).collect();
        if self.residence == Residence::Ram {
            slots.iter().for_each(|&s| offer(self.rids[s], &self.exact[s * d..(s + 1) * d]));
        } else {
            let keys: Vec<RowKey> =
                slots.iter().map(|&s| (self.rids[s], self.passages[s])).collect();
            source.fetch(&keys, &mut |(rid, _), vector| {
                if let Some(unit) = normalized(vector, d) {
                    offer(rid, &unit);
                }
            })?;
        }
        if best.is_empty() {
            return Ok(None);
        }
        // Summed in rid order: the same floats whichever residence (and map order) found them.
        let mut best: Vec<(i64, (f32, Vec<f32>))> = best.into_iter().collect();
        best.sort_unstable_by_key(|b| b.0);
        let memories = best.len() as f32;
        for (_, (_, unit)) in &best {
            q.iter_mut().zip(unit).for_each(|(q, u)| *q += u / memories);
        }
        if !normalize_in_place(&mut q) {
            return Ok(None);
        }
        let pool: Vec<usize> = pool.iter().flat_map(|&r| self.slots_of(r)).collect();
        let mut scored = self.rescore(&q, &pool, source)?;
        best_per_memory(&mut scored);
        Ok(Some(scored))
    }

    /// The approximate score of one row.
    fn approx(&self, q: &Query<'_>, slot: usize) -> f32 {
        let row = &self.codes[slot * self.dims..(slot + 1) * self.dims];
        idot(q.codes, row) as f32 * (q.scale * self.scales[slot])
    }

    /// The best `m` approximate scores among the rows that pass `keep`, as (slot, score), and
    /// how many rows passed. Runs `alongside` (taking it) while the threads scan.
    fn first_pass(
        &self,
        q: &Query<'_>,
        m: usize,
        keep: Keep<'_>,
        alongside: &mut Option<&mut dyn FnMut()>,
    ) -> (Vec<(usize, f32)>, usize) {
        let rows = self.rids.len();
        if rows < PARALLEL_ROWS {
            return self.scan(q, 0, rows, m, keep);
        }
        let mid = rows / 2;
        // A panic in the scan is a bug; surface it instead of returning half the rows.
        let join = |h: std::thread::ScopedJoinHandle<'_, (Vec<(usize, f32)>, usize)>| {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        };
        let ((mut a, kept_a), (b, kept_b)) = std::thread::scope(|s| {
            let left = s.spawn(|| self.scan(q, 0, mid, m, keep));
            if let Some(run) = alongside.take() {
                let right = s.spawn(|| self.scan(q, mid, rows, m, keep));
                run();
                (join(left), join(right))
            } else {
                let right = self.scan(q, mid, rows, m, keep);
                (join(left), right)
            }
        });
        a.extend(b);
        self.best(&mut a, m);
        (a, kept_a + kept_b)
    }

    /// The first pass over rows `from..to`: a buffer of up to `2m` entries, cut back to the best
    /// `m` whenever it fills; once cut, a row scoring below the m-th best so far is skipped.
    fn scan(
        &self,
        q: &Query<'_>,
        from: usize,
        to: usize,
        m: usize,
        keep: Keep<'_>,
    ) -> (Vec<(usize, f32)>, usize) {
        let mut best: Vec<(usize, f32)> = Vec::with_capacity(m.saturating_mul(2).min(to - from));
        let mut floor = f32::NEG_INFINITY;
        let mut kept = 0;
        for slot in from..to {
            if !keep(&self.metas[slot]) {
                continue;
            }
            kept += 1;
            let a = self.approx(q, slot);
            if a < floor {
                continue;
            }
            best.push((slot, a));
            if best.len() >= m.saturating_mul(2) {
                self.best(&mut best, m);
                floor = best.iter().map(|b| b.1).fold(f32::INFINITY, f32::min);
            }
        }
        self.best(&mut best, m);
        (best, kept)
    }

    /// Keeps the `m` best (slot, score) entries, in no particular order; ties go to the lower
    /// rid, so which rows are candidates does not depend on where they sit.
    fn best(&self, entries: &mut Vec<(usize, f32)>, m: usize) {
        if entries.len() > m {
            let rids = &self.rids;
            entries.select_nth_unstable_by(m - 1, |a, b| {
                b.1.total_cmp(&a.1).then(rids[a.0].cmp(&rids[b.0]))
            });
            entries.truncate(m);
        }
    }

    /// Exact scores of `slots` against the unit query `q`, as (rid, score), one per row.
    fn rescore(
        &self,
        q: &[f32],
        slots: &[usize],
        source: &mut dyn VectorSource,
    ) -> Result<Vec<(i64, f32)>, StoreError> {
        if self.residence == Residence::Ram {
            let d = self.dims;
            return Ok(slots
                .iter()
                .map(|&s| (self.rids[s], dot(q, &self.exact[s * d..(s + 1) * d])))
                .collect());
        }
        let keys: Vec<RowKey> = slots.iter().map(|&s| (self.rids[s], self.passages[s])).collect();
        let mut scored = Vec::with_capacity(keys.len());
        let mut unit = Vec::with_capacity(self.dims);
        source.fetch(&keys, &mut |(rid, _), vector| {
            if vector.len() != self.dims {
                return;
            }
            unit.clear();
            unit.extend_from_slice(vector);
            if normalize_in_place(&mut unit) {
                scored.push((rid, dot(q, &unit)));
            }
        })?;
        Ok(scored)
    }
}

/// A quantised query.
struct Query<'a> {
    codes: &'a [i8],
    scale: f32,
}

/// Fills `codes` with `round(x / scale)` for `scale = max |xᵢ| / 127`; returns the scale and an
/// upper bound of the residual norm `|x − scale · code|` (computed in `f64`, rounded up).
fn quantize(x: &[f32], codes: &mut [i8]) -> (f32, f32) {
    let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if max == 0.0 {
        codes.fill(0);
        return (0.0, 0.0);
    }
    let scale = max / 127.0;
    let mut residual = 0.0f64;
    for (c, &v) in codes.iter_mut().zip(x) {
        // In range by construction: |v| / scale ≤ 127.
        let q = (v / scale).round().clamp(-127.0, 127.0);
        *c = q as i8;
        let r = f64::from(v) - f64::from(scale) * f64::from(q);
        residual += r * r;
    }
    (scale, (residual.sqrt() * (1.0 + 1e-6) + 1e-9) as f32)
}

/// Integer dot product of int8 codes with sixteen `i32` lanes; LLVM turns the loop into
/// widening multiply-adds (`vpmaddwd` on AVX2). Cannot overflow: `|sum| ≤ 127² · len`.
fn idot(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    let chunks_a = a.chunks_exact(16);
    let chunks_b = b.chunks_exact(16);
    let tail = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .fold(0i32, |s, (&x, &y)| s.wrapping_add(i32::from(x).wrapping_mul(i32::from(y))));
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for i in 0..16 {
            acc[i] = acc[i].wrapping_add(i32::from(ca[i]).wrapping_mul(i32::from(cb[i])));
        }
    }
    acc.iter().fold(tail, |s, &x| s.wrapping_add(x))
}

/// Keeps the `k` highest scores, sorted best first; ties go to the lower rid, so the order
/// does not depend on where a row happens to sit in the matrix.
#[cfg(test)]
pub(crate) fn top_k(scored: &mut Vec<(i64, f32)>, k: usize) {
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, best_order);
        scored.truncate(k);
    }
    best_first(scored);
}

/// Keeps each memory's best row, sorted best first (ties to the lower rid).
fn best_per_memory(scored: &mut Vec<(i64, f32)>) {
    best_first(scored);
    let mut seen = HashSet::with_capacity(scored.len());
    scored.retain(|(rid, _)| seen.insert(*rid));
}

/// Sorts best first: higher score first, ties to the lower rid.
fn best_first(scored: &mut [(i64, f32)]) {
    scored.sort_unstable_by(best_order);
}

fn best_order(a: &(i64, f32), b: &(i64, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
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

/// Divides `v` by its norm; `false` (and `v` unspecified) when it is zero or not finite.
fn normalize_in_place(v: &mut [f32]) -> bool {
    let norm = dot(v, v).sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return false;
    }
    v.iter_mut().for_each(|x| *x /= norm);
    true
}

/// `v / |v|`, or `None` when `v` has the wrong length, is zero or is not finite.
pub(crate) fn normalized(v: &[f32], dims: usize) -> Option<Vec<f32>> {
    if v.len() != dims {
        return None;
    }
    let mut unit = v.to_vec();
    normalize_in_place(&mut unit).then_some(unit)
}

#[cfg(test)]
mod tests;
