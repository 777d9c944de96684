use std::collections::HashMap;

use aria_api::cosine;

use super::*;

fn meta(kind: MemoryKind) -> RowMeta {
    RowMeta {
        status: MemoryStatus::Active,
        kind,
        categories: vec![],
        private: false,
        unconfirmed: false,
    }
}

fn any(_: &RowMeta) -> bool {
    true
}

/// The stored vectors by rid, as a database would give them back; counts what it was asked.
#[derive(Default)]
struct MapSource {
    rows: HashMap<i64, Vec<f32>>,
    fetched: usize,
}

impl VectorSource for MapSource {
    fn fetch(
        &mut self,
        rows: &[RowKey],
        sink: &mut dyn FnMut(RowKey, &[f32]),
    ) -> Result<(), StoreError> {
        self.fetched += rows.len();
        for &(rid, passage) in rows {
            if let Some(v) = self.rows.get(&rid).filter(|_| passage == 0) {
                sink((rid, passage), v);
            }
        }
        Ok(())
    }
}

/// The index in both residences, fed the same rows, and the stored vectors.
struct Both {
    ram: VectorIndex,
    sqlite: VectorIndex,
    source: MapSource,
}

impl Both {
    fn new(dims: usize) -> Both {
        Both {
            ram: VectorIndex::new("m", dims, 0, Residence::Ram),
            sqlite: VectorIndex::new("m", dims, 0, Residence::Sqlite),
            source: MapSource::default(),
        }
    }

    fn upsert(&mut self, rid: i64, kind: MemoryKind, v: &[f32]) {
        self.ram.upsert(rid, meta(kind), v);
        self.sqlite.upsert(rid, meta(kind), v);
        self.source.rows.insert(rid, v.to_vec());
    }

    /// Searches both, checks they agree with each other and with the exact `f32` scan.
    fn check(&mut self, q: &[f32], k: usize, keep: Keep<'_>) -> Vec<(i64, f32)> {
        let ram = self.ram.search(q, k, keep, &mut NoSource).unwrap();
        let sqlite = self.sqlite.search(q, k, keep, &mut self.source).unwrap();
        let exact = exact_scan(&self.source.rows, &self.ram, q, k, keep);
        assert_eq!(ram, exact, "ram residence vs exact scan, k = {k}");
        assert_eq!(sqlite, exact, "sqlite residence vs exact scan, k = {k}");
        exact
    }
}

/// A source that must not be read (the RAM residence never does).
struct NoSource;

impl VectorSource for NoSource {
    fn fetch(&mut self, _: &[RowKey], _: &mut dyn FnMut(RowKey, &[f32])) -> Result<(), StoreError> {
        panic!("the RAM residence read the database")
    }
}

/// Brute force: every row normalised and scored in `f32`, sorted by (score desc, rid asc).
fn exact_scan(
    rows: &HashMap<i64, Vec<f32>>,
    index: &VectorIndex,
    q: &[f32],
    k: usize,
    keep: Keep<'_>,
) -> Vec<(i64, f32)> {
    let Some(q) = normalized(q, index.dims) else { return Vec::new() };
    let mut scored: Vec<(i64, f32)> = rows
        .iter()
        .filter(|(rid, _)| keep(&index.metas[index.slots[&(**rid, 0)]]))
        .filter_map(|(&rid, v)| normalized(v, index.dims).map(|u| (rid, dot(&q, &u))))
        .collect();
    if k == 0 {
        return Vec::new();
    }
    top_k(&mut scored, k);
    scored
}

struct Lcg(u64);

impl Lcg {
    /// Uniform in [-0.5, 0.5).
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as f32 / (1u64 << 31) as f32) - 0.5
    }
    fn vector(&mut self, dims: usize) -> Vec<f32> {
        (0..dims).map(|_| self.next()).collect()
    }
}

#[test]
fn search_ranks_by_cosine_and_respects_the_filter() {
    let mut both = Both::new(3);
    both.upsert(1, MemoryKind::Fact, &[1.0, 0.0, 0.0]);
    both.upsert(2, MemoryKind::Preference, &[0.6, 0.8, 0.0]);
    both.upsert(3, MemoryKind::Fact, &[0.0, 0.0, 5.0]);
    let hits = both.check(&[2.0, 0.1, 0.0], 2, &any);
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 2]);
    assert!((hits[0].1 - 0.99875).abs() < 1e-4, "{hits:?}");
    let facts = both.check(&[0.6, 0.8, 0.0], 5, &|m| m.kind == MemoryKind::Fact);
    assert_eq!(facts.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 3]);
}

#[test]
fn remove_and_replace_keep_slots_consistent() {
    for residence in [Residence::Ram, Residence::Sqlite] {
        let mut index = VectorIndex::new("m", 2, 0, residence);
        let mut source = MapSource::default();
        for rid in 0..5 {
            index.upsert(rid, meta(MemoryKind::Fact), &[1.0, rid as f32]);
            source.rows.insert(rid, vec![1.0, rid as f32]);
        }
        index.remove(1);
        index.remove(4);
        index.remove(42);
        index.upsert(3, meta(MemoryKind::Fact), &[-1.0, 0.0]);
        source.rows.insert(3, vec![-1.0, 0.0]);
        assert_eq!(index.len(), 3);
        assert_eq!(index.codes.len(), 6);
        assert_eq!(index.exact.len(), if residence == Residence::Ram { 6 } else { 0 });
        let hits = index.search(&[-1.0, 0.0], 1, &any, &mut source).unwrap();
        assert_eq!(hits, vec![(3, 1.0)]);
        let all: Vec<i64> = index
            .search(&[1.0, 0.0], 10, &any, &mut source)
            .unwrap()
            .into_iter()
            .map(|h| h.0)
            .collect();
        assert_eq!(all, vec![0, 2, 3]);
    }
}

#[test]
fn zero_and_wrong_length_vectors_are_not_indexed_or_searched() {
    let mut index = VectorIndex::new("m", 2, 0, Residence::Ram);
    index.upsert(1, meta(MemoryKind::Fact), &[0.0, 0.0]);
    index.upsert(2, meta(MemoryKind::Fact), &[1.0, 0.0, 0.0]);
    assert_eq!(index.len(), 0);
    index.upsert(3, meta(MemoryKind::Fact), &[1.0, 0.0]);
    assert!(index.search(&[0.0, 0.0], 3, &any, &mut NoSource).unwrap().is_empty());
    assert!(index.search(&[1.0], 3, &any, &mut NoSource).unwrap().is_empty());
    assert!(index.search(&[1.0, 0.0], 0, &any, &mut NoSource).unwrap().is_empty());
}

/// Random data on both sides of the parallel threshold, several `k`, with and without a
/// filter: the exact top-k every time, and on such data the certificate holds after the first
/// pass (only the candidates are read back, no second pass).
#[test]
fn random_data_gives_the_exact_top_k_from_the_candidates_alone() {
    let dims = 48;
    let mut rng = Lcg(7);
    for rows in [500, PARALLEL_ROWS + 1000] {
        let mut both = Both::new(dims);
        for rid in 0..rows as i64 {
            let kind = if rid % 3 == 0 { MemoryKind::Event } else { MemoryKind::Fact };
            both.upsert(rid, kind, &rng.vector(dims));
        }
        for k in [1, 10, 100] {
            for _ in 0..5 {
                let q = rng.vector(dims);
                both.source.fetched = 0;
                let hits = both.check(&q, k, &any);
                assert_eq!(hits.len(), k);
                let m = (k * OVERSAMPLE).max(MIN_CANDIDATES);
                assert_eq!(both.source.fetched, m, "rows = {rows}, k = {k}: a second pass ran");
                let events = both.check(&q, k, &|m| m.kind == MemoryKind::Event);
                assert_eq!(events.len(), k);
                assert!(events.iter().all(|(rid, _)| rid % 3 == 0));
            }
        }
    }
}

/// Many copies of one vector (exact ties across the candidate cut): ties go to the lower rid,
/// which needs the second pass, and it finds them.
#[test]
fn identical_vectors_tie_by_rid_across_the_candidate_cut() {
    let dims = 32;
    let mut rng = Lcg(11);
    let mut both = Both::new(dims);
    let same = rng.vector(dims);
    // Background rows first, then 600 identical rows with rids in shuffled order.
    for rid in 0..3000i64 {
        both.upsert(10_000 + rid, MemoryKind::Fact, &rng.vector(dims));
    }
    let mut rids: Vec<i64> = (0..600).collect();
    for i in (1..rids.len()).rev() {
        let j = ((rng.next() + 0.5) * (i + 1) as f32) as usize % (i + 1);
        rids.swap(i, j);
    }
    for &rid in &rids {
        both.upsert(rid, MemoryKind::Fact, &same);
    }
    for k in [1, 10, 150] {
        let hits = both.check(&same, k, &any);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), (0..k as i64).collect::<Vec<_>>());
    }
}

/// Near-ties: rows that differ from the query's best match by less than the quantisation
/// error, and rows whose int8 codes lose most of their information (one large component), so
/// the approximate order is wrong; the answer is still the exact one.
#[test]
fn near_ties_and_badly_quantised_rows_still_give_the_exact_top_k() {
    let dims = 64;
    let mut rng = Lcg(3);
    let mut both = Both::new(dims);
    let q = rng.vector(dims);
    for rid in 0..2000i64 {
        let v: Vec<f32> = match rid % 4 {
            // The query plus noise far below one int8 step.
            0 => q.iter().map(|x| x + rng.next() * 1e-4).collect(),
            // One dominant component: every other component quantises to 0 or ±1.
            1 => {
                let mut v: Vec<f32> = rng.vector(dims).iter().map(|x| x * 0.02).collect();
                v[(rid as usize) % dims] = 1.0;
                v
            }
            // The query mixed with a random direction.
            2 => q.iter().zip(rng.vector(dims)).map(|(a, b)| a + 0.05 * b).collect(),
            _ => rng.vector(dims),
        };
        both.upsert(rid, MemoryKind::Fact, &v);
    }
    for k in [1, 10, 100, 600] {
        let hits = both.check(&q, k, &any);
        assert_eq!(hits.len(), k);
    }
    let mut axis = vec![0.0; dims];
    axis[5] = 1.0;
    both.check(&axis, 10, &any);
}

#[test]
fn a_filter_that_keeps_fewer_rows_than_k_returns_them_all() {
    let mut both = Both::new(8);
    let mut rng = Lcg(5);
    for rid in 0..400i64 {
        let kind = if rid < 3 { MemoryKind::Skill } else { MemoryKind::Fact };
        both.upsert(rid, kind, &rng.vector(8));
    }
    let hits = both.check(&rng.vector(8), 10, &|m| m.kind == MemoryKind::Skill);
    assert_eq!(hits.len(), 3);
    // A `k` far beyond the rows (a caller's limit) returns them all.
    assert_eq!(both.check(&rng.vector(8), usize::MAX / 2, &any).len(), 400);
}

#[test]
fn rows_missing_from_the_database_are_left_out_not_invented() {
    let mut index = VectorIndex::new("m", 4, 0, Residence::Sqlite);
    let mut source = MapSource::default();
    for rid in 0..10i64 {
        let v = [1.0, rid as f32, 0.5, -1.0];
        index.upsert(rid, meta(MemoryKind::Fact), &v);
        if rid != 9 {
            source.rows.insert(rid, v.to_vec());
        }
    }
    let hits = index.search(&[1.0, 9.0, 0.5, -1.0], 3, &any, &mut source).unwrap();
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![8, 7, 6]);
}

#[test]
fn push_le_bytes_indexes_what_upsert_would_and_refuses_bad_blobs() {
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut pushed = VectorIndex::new("m", 2, 0, Residence::Ram);
    let mut upserted = VectorIndex::new("m", 2, 0, Residence::Ram);
    for (rid, v) in [(1, [3.0f32, 4.0]), (2, [0.0, -2.0]), (5, [1.0, 1.0])] {
        assert!(pushed.push_le_bytes((rid, 0), meta(MemoryKind::Fact), &bytes(&v)));
        upserted.upsert(rid, meta(MemoryKind::Fact), &v);
    }
    assert_eq!(pushed.exact, upserted.exact);
    assert_eq!((&pushed.codes, &pushed.scales), (&upserted.codes, &upserted.scales));
    let search = |i: &VectorIndex| i.search(&[0.6, 0.8], 3, &any, &mut NoSource).unwrap();
    assert_eq!(search(&pushed), search(&upserted));
    // Wrong length, zero, not finite, already present: nothing indexed, nothing left behind.
    assert!(!pushed.push_le_bytes((6, 0), meta(MemoryKind::Fact), &bytes(&[1.0, 2.0, 3.0])));
    assert!(!pushed.push_le_bytes((7, 0), meta(MemoryKind::Fact), &bytes(&[0.0, 0.0])));
    assert!(!pushed.push_le_bytes((8, 0), meta(MemoryKind::Fact), &bytes(&[f32::NAN, 1.0])));
    assert!(!pushed.push_le_bytes((1, 0), meta(MemoryKind::Fact), &bytes(&[1.0, 0.0])));
    assert_eq!((pushed.len(), pushed.exact.len(), pushed.codes.len()), (3, 6, 6));
    assert_eq!(pushed.search(&[3.0, 4.0], 1, &any, &mut NoSource).unwrap(), vec![(1, 1.0)]);
}

#[test]
fn quantize_bounds_the_residual_and_idot_matches_the_naive_sum() {
    let mut rng = Lcg(9);
    for dims in [1, 15, 16, 17, 384] {
        let x = normalized(&rng.vector(dims), dims).unwrap();
        let mut codes = vec![0i8; dims];
        let (scale, error) = quantize(&x, &mut codes);
        let residual: f64 = x
            .iter()
            .zip(&codes)
            .map(|(&v, &c)| (f64::from(v) - f64::from(scale) * f64::from(c)).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(f64::from(error) >= residual, "{error} < {residual}");
        assert!(error <= scale * (dims as f32).sqrt(), "half a step per component at most");
        assert!(codes.iter().any(|&c| c.unsigned_abs() == 127));
        let other: Vec<i8> = (0..dims).map(|i| (i as i32 * 37 % 255 - 127) as i8).collect();
        let naive: i32 = codes.iter().zip(&other).map(|(&a, &b)| i32::from(a) * i32::from(b)).sum();
        assert_eq!(idot(&codes, &other), naive);
    }
    let full = vec![-127i8; 384];
    assert_eq!(idot(&full, &full), 127 * 127 * 384);
    assert_eq!(quantize(&[0.0, 0.0], &mut [1, 1]), (0.0, 0.0));
}

#[test]
fn dot_matches_the_naive_sum() {
    let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.1).collect();
    let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    assert!((dot(&a, &b) - naive).abs() < 1e-3);
    assert!((cosine(&[1.0, 0.0], &[0.0, 2.0])).abs() < 1e-6);
}

/// The work run alongside the first pass (BM25, in a hybrid search) runs exactly once whatever
/// path the search takes: empty index, unusable query, one thread, two threads.
#[test]
fn the_alongside_work_runs_exactly_once_on_every_path() {
    let dims = 8;
    let mut rng = Lcg(13);
    let mut small = VectorIndex::new("m", dims, 0, Residence::Ram);
    let mut large = VectorIndex::new("m", dims, 0, Residence::Ram);
    for rid in 0..(PARALLEL_ROWS + 10) as i64 {
        let v = rng.vector(dims);
        if rid < 50 {
            small.upsert(rid, meta(MemoryKind::Fact), &v);
        }
        large.upsert(rid, meta(MemoryKind::Fact), &v);
    }
    let empty = VectorIndex::new("m", dims, 0, Residence::Ram);
    let q = rng.vector(dims);
    let cases: [(&VectorIndex, Vec<f32>, usize); 5] = [
        (&empty, q.clone(), 5),
        (&small, vec![0.0; dims], 5),
        (&small, q.clone(), 0),
        (&small, q.clone(), 5),
        (&large, q.clone(), 5),
    ];
    for (i, (index, query, k)) in cases.into_iter().enumerate() {
        let mut runs = 0;
        let hits =
            index.search_alongside(&query, k, &any, &mut NoSource, &mut || runs += 1).unwrap();
        assert_eq!(runs, 1, "case {i}");
        // The pool starts with the top k, and holds every other candidate rescored, best first.
        let top = index.search(&query, k, &any, &mut NoSource).unwrap();
        assert_eq!(hits[..top.len()], top[..], "case {i}");
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1), "case {i}");
    }
}

/// Stored passages by row key, as the database gives them back.
#[derive(Default)]
struct PassageSource(HashMap<RowKey, Vec<f32>>);

impl VectorSource for PassageSource {
    fn fetch(
        &mut self,
        rows: &[RowKey],
        sink: &mut dyn FnMut(RowKey, &[f32]),
    ) -> Result<(), StoreError> {
        for key in rows {
            if let Some(v) = self.0.get(key) {
                sink(*key, v);
            }
        }
        Ok(())
    }
}

/// Memories of several passages in both residences, next to what is stored.
struct Passaged {
    ram: VectorIndex,
    sqlite: VectorIndex,
    source: PassageSource,
    memories: HashMap<i64, (MemoryKind, Vec<Vec<f32>>)>,
}

impl Passaged {
    fn new(dims: usize) -> Passaged {
        Passaged {
            ram: VectorIndex::new("m", dims, 0, Residence::Ram),
            sqlite: VectorIndex::new("m", dims, 0, Residence::Sqlite),
            source: PassageSource::default(),
            memories: HashMap::new(),
        }
    }

    fn put(&mut self, rid: i64, kind: MemoryKind, passages: Vec<Vec<f32>>) {
        self.remove(rid);
        self.ram.upsert_passages(rid, meta(kind), &passages);
        self.sqlite.upsert_passages(rid, meta(kind), &passages);
        for (p, v) in (0u32..).zip(&passages) {
            self.source.0.insert((rid, p), v.clone());
        }
        self.memories.insert(rid, (kind, passages));
    }

    fn remove(&mut self, rid: i64) {
        self.ram.remove(rid);
        self.sqlite.remove(rid);
        self.source.0.retain(|key, _| key.0 != rid);
        self.memories.remove(&rid);
    }

    /// Brute force: every memory scored by its best passage, best first, ties to the lower rid.
    fn exact(&self, q: &[f32], k: usize, keep: Keep<'_>) -> Vec<(i64, f32)> {
        let Some(q) = normalized(q, self.ram.dims) else { return Vec::new() };
        let mut scored: Vec<(i64, f32)> = self
            .memories
            .iter()
            .filter(|(_, (kind, _))| keep(&meta(*kind)))
            .filter_map(|(&rid, (_, passages))| {
                passages
                    .iter()
                    .filter_map(|p| normalized(p, self.ram.dims).map(|u| dot(&q, &u)))
                    .max_by(f32::total_cmp)
                    .map(|best| (rid, best))
            })
            .collect();
        if k == 0 {
            return Vec::new();
        }
        top_k(&mut scored, k);
        scored
    }

    fn check(&mut self, q: &[f32], k: usize, keep: Keep<'_>) -> Vec<(i64, f32)> {
        let exact = self.exact(q, k, keep);
        let ram = self.ram.search(q, k, keep, &mut NoSource).unwrap();
        let sqlite = self.sqlite.search(q, k, keep, &mut self.source).unwrap();
        assert_eq!(ram, exact, "ram residence vs exact scan, k = {k}");
        assert_eq!(sqlite, exact, "sqlite residence vs exact scan, k = {k}");
        exact
    }
}

#[test]
fn a_memory_is_found_once_scored_by_its_best_passage_exactly() {
    for dims in [3usize, 8, 24] {
        let mut rng = Lcg(dims as u64 * 31 + 7);
        let mut index = Passaged::new(dims);
        let kind = |rid: i64| if rid % 3 == 0 { MemoryKind::Event } else { MemoryKind::Fact };
        for rid in 1..=700i64 {
            let n = 1 + ((rng.next() + 0.5) * 4.0) as usize;
            let passages = (0..n).map(|_| rng.vector(dims)).collect();
            index.put(rid, kind(rid), passages);
        }
        // Some memories get fewer passages (the old ones must leave), some leave entirely.
        for rid in (7..=700).step_by(7) {
            index.put(rid, kind(rid), vec![rng.vector(dims)]);
        }
        for rid in (11..=700).step_by(11) {
            index.remove(rid);
        }
        assert_eq!(index.ram.len(), index.source.0.len(), "one row per stored passage");
        let events = |m: &RowMeta| m.kind == MemoryKind::Event;
        for _ in 0..15 {
            let q = rng.vector(dims);
            for k in [1, 5, 10, 60, 2_000] {
                let hits = index.check(&q, k, &any);
                let distinct: HashSet<i64> = hits.iter().map(|h| h.0).collect();
                assert_eq!(distinct.len(), hits.len(), "a memory appears once");
                index.check(&q, k, &events);
            }
        }
    }
}

#[test]
fn one_memory_with_more_passages_than_candidates_does_not_crowd_out_the_others() {
    // 150 passages of one memory equal the query: more than the first pass keeps
    // (MIN_CANDIDATES), so its candidates hold one memory only and the rest must be found.
    let dims = 16;
    let mut rng = Lcg(99);
    let mut index = Passaged::new(dims);
    let q = rng.vector(dims);
    index.put(1, MemoryKind::Fact, vec![q.clone(); 150]);
    for rid in 2..=400 {
        let mut near = q.clone();
        near.iter_mut().for_each(|x| *x += rng.next() * 0.5);
        index.put(rid, MemoryKind::Fact, vec![near, rng.vector(dims)]);
    }
    let hits = index.check(&q, 10, &any);
    assert_eq!(hits.len(), 10);
    assert_eq!(hits[0].0, 1);
}

#[test]
fn feedback_ranks_memories_once_by_their_best_passage() {
    let dims = 8;
    let mut rng = Lcg(5);
    let mut index = Passaged::new(dims);
    for rid in 1..=50 {
        let passages = (0..1 + rid as usize % 3).map(|_| rng.vector(dims)).collect();
        index.put(rid, MemoryKind::Fact, passages);
    }
    let q = rng.vector(dims);
    let pool: Vec<i64> = (1..=50).collect();
    let ram = index.ram.feedback(&q, &[2, 3], &pool, &mut NoSource).unwrap().unwrap();
    let sqlite = index.sqlite.feedback(&q, &[2, 3], &pool, &mut index.source).unwrap().unwrap();
    assert_eq!(ram, sqlite);
    assert_eq!(ram.len(), 50, "each memory once");
    // The expanded query: q plus the mean over memories 2 and 3 of the passage of each that is
    // closest to q.
    let unit = |v: &[f32]| normalized(v, dims).unwrap();
    let q_unit = unit(&q);
    let mut expanded = q_unit.clone();
    for rid in [2, 3] {
        let closest = index.memories[&rid]
            .1
            .iter()
            .map(|p| unit(p))
            .max_by(|a, b| dot(&q_unit, a).total_cmp(&dot(&q_unit, b)))
            .unwrap();
        expanded.iter_mut().zip(&closest).for_each(|(e, x)| *e += x / 2.0);
    }
    let expanded = unit(&expanded);
    for (rid, score) in &ram {
        let best = index.memories[rid]
            .1
            .iter()
            .map(|p| dot(&expanded, &unit(p)))
            .fold(f32::NEG_INFINITY, f32::max);
        assert!((best - score).abs() < 1e-5, "memory {rid}: {score} against {best}");
    }
    assert!(ram.windows(2).all(|w| w[0].1 >= w[1].1));
}
