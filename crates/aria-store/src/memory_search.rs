//! Hybrid retrieval over memories: FTS5 BM25 top-N and exact vector top-N, joined by a weighted
//! sum of each list's standardised scores after one round of pseudo-relevance feedback on the
//! vector side ([`crate::memory_fusion`]). A memory found by neither retriever is not returned.

use std::collections::HashMap;

use rusqlite::{Connection, Transaction, params};
use serde::Serialize;
use serde_json::json;

use crate::error::{StoreError, sql};
use crate::memory::{
    Embedding, Memory, MemoryKind, MemoryStatus, SELECT_MEMORY, decode_vector, generation,
    get_by_id, normalize_text, read_memory,
};
use aria_api::cosine;

use crate::memory_fusion::{FEEDBACK_DOCS, fuse, standardises};
use crate::memory_index::{Residence, RowKey, RowMeta, VectorIndex, VectorSource};
pub use crate::memory_text::fts_query;
use crate::memory_text::text_candidates;
use crate::store::Store;

/// The reciprocal-rank constant (k = 60, as Cormack et al. 2009 propose). The
/// fusion no longer ranks by it; [`crate::memory_fusion::rank_relevance`] still reports a hit's
/// ranks through it (1.0 for first in every list).
pub const RRF_K: f64 = 60.0;

/// How many memories each retriever hands to the fusion by default. A memory that one retriever
/// ranks 150th and the other 20th still deserves a place in the first 100: with 100 per list it
/// got only the one list's share. Measured on Cranfield's 225 queries (`bench/retrieval`), 200
/// raised Recall@100 on both halves of the queries (odd ids 0.807 → 0.811, even 0.761 → 0.769)
/// and left nDCG@10 as it was; a search costs a few more rows of each list.
pub const CANDIDATES: usize = 200;

/// Vector candidates a duplicate check looks through for a memory of one passage.
const DUPLICATE_CANDIDATES: usize = 8;

/// Which retrievers a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchMode {
    /// BM25 and vectors, fused (vectors are skipped when the query has no embedding).
    #[default]
    Hybrid,
    /// BM25 only.
    Text,
    /// Vectors only.
    Vector,
}

/// Which memories a search may return.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryFilter {
    /// Allowed statuses; `deleted` is never searchable, whatever is asked.
    pub statuses: Vec<MemoryStatus>,
    /// Allowed kinds; any when empty.
    pub kinds: Vec<MemoryKind>,
    /// A memory must carry at least one of these; any when empty.
    pub categories: Vec<String>,
    /// Whether private memories may be returned: `false` for a search whose results go to a
    /// model off this machine.
    pub private: bool,
    /// A memory carrying any category that starts with this is not returned (`agent:` keeps
    /// the memories agents keep to themselves out of the shared pool); none excluded when
    /// `None`.
    pub without_category_prefix: Option<String>,
    /// Whether memories still waiting for the user's confirmation may be returned: `true` for
    /// the user's own view (list, search, the web UI), `false` for anything that reaches a
    /// model's prompt (they were stored by a model after it read outside text).
    pub unconfirmed: bool,
}

impl Default for MemoryFilter {
    fn default() -> Self {
        MemoryFilter {
            statuses: vec![MemoryStatus::Active],
            kinds: vec![],
            categories: vec![],
            private: true,
            without_category_prefix: None,
            unconfirmed: false,
        }
    }
}

impl MemoryFilter {
    fn keeps(&self, meta: &RowMeta) -> bool {
        meta.status != MemoryStatus::Deleted
            && self.statuses.contains(&meta.status)
            && (self.private || !meta.private)
            && (self.unconfirmed || !meta.unconfirmed)
            && (self.kinds.is_empty() || self.kinds.contains(&meta.kind))
            && (self.categories.is_empty()
                || meta.categories.iter().any(|c| self.categories.contains(c)))
            && self
                .without_category_prefix
                .as_deref()
                .is_none_or(|p| !meta.categories.iter().any(|c| c.starts_with(p)))
    }

    /// The filter's values for [`FILTER_SQL`] (`?2` to `?7`).
    pub(crate) fn sql_params(
        &self,
    ) -> (String, Option<String>, Option<String>, bool, Option<&str>, bool) {
        let statuses: Vec<&str> = self
            .statuses
            .iter()
            .filter(|s| **s != MemoryStatus::Deleted)
            .map(|s| s.as_str())
            .collect();
        let kinds = (!self.kinds.is_empty())
            .then(|| json!(self.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>()).to_string());
        let categories = (!self.categories.is_empty()).then(|| json!(self.categories).to_string());
        (
            json!(statuses).to_string(),
            kinds,
            categories,
            self.private,
            self.without_category_prefix.as_deref(),
            self.unconfirmed,
        )
    }
}

/// The condition a memory row `m` meets when it passes a filter, as [`MemoryFilter::keeps`];
/// its values are bound from [`MemoryFilter::sql_params`] at `?2` to `?7`. The excluded prefix
/// is compared with `substr` (exact and case-sensitive, as `starts_with`; no LIKE escaping).
pub(crate) const FILTER_SQL: &str = "m.status IN (SELECT value FROM json_each(?2)) \
     AND (?3 IS NULL OR m.kind IN (SELECT value FROM json_each(?3))) \
     AND (?4 IS NULL OR EXISTS (SELECT 1 FROM json_each(m.categories) c \
          WHERE c.value IN (SELECT value FROM json_each(?4)))) \
     AND (?5 OR m.private = 0) \
     AND (?6 IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(m.categories) c \
          WHERE substr(c.value, 1, length(?6)) = ?6)) \
     AND (?7 OR m.unconfirmed = 0)";

/// One search.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryQuery<'a> {
    pub text: &'a str,
    /// The query's vector; its model picks the vectors searched.
    pub embedding: Option<Embedding<'a>>,
    pub limit: usize,
    /// How many each retriever contributes before fusion (at least `limit`).
    pub candidates: usize,
    pub filter: MemoryFilter,
    pub mode: SearchMode,
}

impl<'a> MemoryQuery<'a> {
    /// A hybrid search of active memories with [`CANDIDATES`] candidates per retriever.
    pub fn new(text: &'a str, embedding: Option<Embedding<'a>>, limit: usize) -> Self {
        MemoryQuery {
            text,
            embedding,
            limit,
            candidates: CANDIDATES,
            filter: MemoryFilter::default(),
            mode: SearchMode::Hybrid,
        }
    }

    /// How many candidates each retriever contributes: [`MemoryQuery::candidates`], at least
    /// `limit`.
    fn depth(&self) -> usize {
        self.candidates.max(self.limit)
    }

    /// How many ranked lists this search fuses: BM25 unless vectors alone, vectors when the
    /// query has an embedding (what [`crate::memory_fusion::rank_relevance`] is a share of).
    pub fn lists(&self) -> usize {
        usize::from(self.mode != SearchMode::Vector)
            + usize::from(self.mode != SearchMode::Text && self.embedding.is_some())
    }
}

/// The BM25 candidates of one query, computed ahead ([`Store::memory_text_candidates`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TextCandidates {
    key: TextKey,
    rids: Vec<(i64, f64)>,
}

/// What the BM25 candidates depend on.
#[derive(Debug, Clone, PartialEq)]
struct TextKey {
    text: String,
    filter: MemoryFilter,
    n: usize,
}

impl TextKey {
    fn of(query: &MemoryQuery<'_>) -> TextKey {
        TextKey { text: query.text.to_owned(), filter: query.filter.clone(), n: query.depth() }
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryHit {
    pub memory: Memory,
    /// The fused score: the weighted sum of the hit's standardised BM25 score and vector
    /// similarity ([`crate::memory_fusion`]); only its order means something.
    pub score: f64,
    /// Rank in the BM25 list (from 1), when it was there.
    pub text_rank: Option<usize>,
    /// Rank in the vector list (from 1, after feedback in a hybrid search), when it was there.
    pub vector_rank: Option<usize>,
    /// Cosine similarity to the query, when found by the vector search.
    pub similarity: Option<f32>,
}

/// An existing memory that says the same thing as a new one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Duplicate {
    pub memory: Memory,
    /// 1.0 for the same normalised text, else the cosine similarity.
    pub similarity: f32,
    pub same_text: bool,
}

/// A memory after a write: its filter fields and its passages' vectors (none when it has no
/// vector of the index's model), or `None` when it left the index.
pub(crate) type IndexRow = (i64, Option<(RowMeta, Vec<Vec<f32>>)>);

/// What a write must do to this process's vector index once it has committed.
#[derive(Debug)]
pub(crate) enum IndexDelta {
    None,
    Invalidate,
    Apply { model: String, before: i64, after: i64, rows: Vec<IndexRow> },
}

impl Store {
    /// Searches memories. See the module docs for the fusion; `query.mode` picks the retrievers.
    pub fn memory_search(&self, query: &MemoryQuery<'_>) -> Result<Vec<MemoryHit>, StoreError> {
        self.search(query, None)
    }

    /// The BM25 half of `query`, on its own: run it while the query's vector is being
    /// embedded, then hand it to [`Store::memory_search_with_text`] with the vector (a search
    /// through the daemon overlaps the two instead of doing one after the other).
    pub fn memory_text_candidates(
        &self,
        query: &MemoryQuery<'_>,
    ) -> Result<TextCandidates, StoreError> {
        let key = TextKey::of(query);
        let rids = text_candidates(&self.conn(), query.text, &query.filter, key.n)?;
        Ok(TextCandidates { key, rids })
    }

    /// [`Store::memory_search`] with its BM25 half computed ahead by
    /// [`Store::memory_text_candidates`]. Candidates computed for another text, filter or
    /// candidate count are not used: the BM25 half then runs again here, so the result is
    /// always the same as `memory_search`'s.
    pub fn memory_search_with_text(
        &self,
        query: &MemoryQuery<'_>,
        text: TextCandidates,
    ) -> Result<Vec<MemoryHit>, StoreError> {
        let ahead = (text.key == TextKey::of(query)).then_some(text.rids);
        self.search(query, ahead)
    }

    fn search(
        &self,
        query: &MemoryQuery<'_>,
        mut ahead: Option<Vec<(i64, f64)>>,
    ) -> Result<Vec<MemoryHit>, StoreError> {
        let n = query.depth();
        let conn = self.conn();
        let wants_text = query.mode != SearchMode::Vector;
        // BM25 runs on this thread while other threads scan the vectors (unless it ran ahead).
        let mut text: Option<Result<Vec<(i64, f64)>, StoreError>> = None;
        let mut run_text = || {
            if wants_text {
                text = Some(match ahead.take() {
                    Some(rids) => Ok(rids),
                    None => text_candidates(&conn, query.text, &query.filter, n),
                });
            }
        };
        let (pool, generation) = match (query.mode, query.embedding) {
            (SearchMode::Text, _) | (_, None) => {
                run_text();
                (Vec::new(), None)
            }
            (_, Some(e)) => {
                let (pool, generation) =
                    self.vector_candidates(&conn, e, &query.filter, n, &mut run_text)?;
                (pool, Some(generation))
            }
        };
        let text = text.transpose()?.unwrap_or_default();
        let mut vector: Vec<(i64, f32)> = pool.iter().take(n).copied().collect();
        let mut fed_back = false;
        if let (SearchMode::Hybrid, Some(e), Some(generation)) =
            (query.mode, query.embedding, generation)
            && standardises(text.len(), vector.len())
        {
            let top: Vec<i64> = fuse(&text, &vector, FEEDBACK_DOCS).iter().map(|f| f.rid).collect();
            if let Some(again) = self.vector_feedback(&conn, e, generation, &top, &pool)? {
                vector = again.into_iter().take(n).collect();
                fed_back = true;
            }
        }
        let mut fused = fuse(&text, &vector, query.limit);
        if fed_back {
            // Ranked by the fed-back query; a hit's similarity stays the one to the query.
            let to_query: HashMap<i64, f32> = pool.iter().copied().collect();
            for f in fused.iter_mut().filter(|f| f.similarity.is_some()) {
                f.similarity = to_query.get(&f.rid).copied();
            }
        }
        let rows = rows_by_rid(&conn, fused.iter().map(|f| f.rid))?;
        // The rows as they are now: one forgotten, archived or re-filed since its candidate list
        // was made (BM25 computed ahead, a write from another process) is not returned.
        Ok(fused
            .into_iter()
            .filter_map(|f| {
                let row = rows.get(&f.rid).filter(|m| query.filter.keeps(&RowMeta::from(*m)));
                row.map(|m| MemoryHit {
                    memory: m.clone(),
                    score: f.score,
                    text_rank: f.text_rank,
                    vector_rank: f.vector_rank,
                    similarity: f.similarity,
                })
            })
            .collect())
    }

    /// A live (active or archived) memory that duplicates `content`: the same normalised text,
    /// else the most similar vector of the same model at cosine ≥ `min_similarity` among
    /// memories of one passage (a long document is a duplicate only word for word). Extraction
    /// updates that memory instead of storing a second copy.
    pub fn memory_find_duplicate(
        &self,
        content: &str,
        embedding: Option<Embedding<'_>>,
        min_similarity: f32,
    ) -> Result<Option<Duplicate>, StoreError> {
        let filter = MemoryFilter {
            statuses: vec![MemoryStatus::Active, MemoryStatus::Archived],
            ..MemoryFilter::default()
        };
        self.memory_find_duplicate_in(content, embedding, min_similarity, &filter)
    }

    /// [`Store::memory_find_duplicate`] among the memories `filter` keeps (an agent with its
    /// own memory merges only into its own): the same normalised text, else the most similar
    /// vector at cosine ≥ `min_similarity`, an active one before an archived one.
    pub fn memory_find_duplicate_in(
        &self,
        content: &str,
        embedding: Option<Embedding<'_>>,
        min_similarity: f32,
        filter: &MemoryFilter,
    ) -> Result<Option<Duplicate>, StoreError> {
        let conn = self.conn();
        let (statuses, kinds, categories, private, without, unconfirmed) = filter.sql_params();
        let same: Option<String> = conn
            .query_row(
                &format!(
                    "SELECT m.id FROM memories m WHERE m.normalized = ?1 AND {FILTER_SQL} \
                     ORDER BY m.status = 'active' DESC, m.rid LIMIT 1"
                ),
                params![
                    normalize_text(content),
                    statuses,
                    kinds,
                    categories,
                    private,
                    without,
                    unconfirmed
                ],
                |r| r.get(0),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .map_err(sql("looking for a duplicate memory"))?;
        if let Some(id) = same {
            return Ok(get_by_id(&conn, &id)?.map(|memory| Duplicate {
                memory,
                similarity: 1.0,
                same_text: true,
            }));
        }
        let Some(e) = embedding else { return Ok(None) };
        // Whole texts only: a memory of several passages is a document, and a short text close
        // to one of its passages is not a copy of it (merging would replace the document).
        let (best, _) =
            self.vector_candidates(&conn, e, filter, DUPLICATE_CANDIDATES, &mut || {})?;
        let mut passages = conn
            .prepare_cached("SELECT count(*) FROM memory_embeddings WHERE rid = ?1 AND model = ?2")
            .map_err(sql("counting a memory's passages"))?;
        let mut whole = None;
        for &(rid, similarity) in best.iter().take_while(|b| b.1 >= min_similarity) {
            let n: i64 = passages
                .query_row(params![rid, e.model], |r| r.get(0))
                .map_err(sql("counting a memory's passages"))?;
            if n == 1 {
                whole = Some((rid, similarity));
                break;
            }
        }
        let Some((rid, similarity)) = whole else { return Ok(None) };
        Ok(rows_by_rid(&conn, [rid])?.remove(&rid).map(|memory| Duplicate {
            memory,
            similarity,
            same_text: false,
        }))
    }

    /// The cosine similarity between two stored memories' (first passages') vectors of `model`
    /// (for tests and diagnostics); `None` when either has none.
    pub fn memory_similarity(
        &self,
        a: &str,
        b: &str,
        model: &str,
    ) -> Result<Option<f32>, StoreError> {
        let conn = self.conn();
        let get = |id: &str| -> Result<Option<Vec<u8>>, StoreError> {
            conn.query_row(
                "SELECT e.vector FROM memory_embeddings e JOIN memories m ON m.rid = e.rid \
                 WHERE m.id = ?1 AND e.model = ?2 AND e.passage = 0",
                params![id, model],
                |r| r.get(0),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .map_err(sql("reading a vector"))
        };
        Ok(match (get(a)?, get(b)?) {
            (Some(x), Some(y)) => Some(cosine(&decode_vector(&x), &decode_vector(&y))),
            _ => None,
        })
    }

    /// The vector search's rescored candidates, best first (the top `n` first, see
    /// [`VectorIndex::search_alongside`]), from this process's index, (re)loaded when it is of
    /// another model or another process changed the vectors since it was loaded; and the
    /// generation they were read at.
    fn vector_candidates(
        &self,
        conn: &Connection,
        e: Embedding<'_>,
        filter: &MemoryFilter,
        n: usize,
        alongside: &mut dyn FnMut(),
    ) -> Result<(Vec<(i64, f32)>, i64), StoreError> {
        // One read transaction: the generation, and the vectors a rescore reads, agree.
        let tx = conn.unchecked_transaction().map_err(sql("starting a vector search"))?;
        let current = generation(&tx)?;
        let residence = self.memory_vector_residence();
        let mut slot = self.vector_index();
        let fresh = slot.as_ref().is_some_and(|i| {
            i.model == e.model && i.generation == current && i.residence() == residence
        });
        if !fresh {
            *slot = Some(load_index(&tx, e.model, residence)?);
        }
        let Some(index) = slot.as_ref() else { return Ok((Vec::new(), current)) };
        if index.len() > 0 && index.dims != e.vector.len() {
            return Err(StoreError::InvalidMemory(format!(
                "the query vector has {} dimensions but `{}` vectors in the store have {}; \
                 the embedder changed without a reindex, run `aria memories reindex`",
                e.vector.len(),
                e.model,
                index.dims
            )));
        }
        let mut source = StoredVectors { conn: &tx, model: e.model, buffer: Vec::new() };
        let pool =
            index.search_alongside(e.vector, n, &|m| filter.keeps(m), &mut source, alongside)?;
        Ok((pool, current))
    }

    /// The candidates `pool` ranked again with the vectors of `top` fed back into the query
    /// ([`VectorIndex::feedback`]); `None` when the index is no longer the one the candidates
    /// came from (a write in between) or has none of `top`'s vectors.
    fn vector_feedback(
        &self,
        conn: &Connection,
        e: Embedding<'_>,
        generation: i64,
        top: &[i64],
        pool: &[(i64, f32)],
    ) -> Result<Option<Vec<(i64, f32)>>, StoreError> {
        let slot = self.vector_index();
        let Some(index) =
            slot.as_ref().filter(|i| i.model == e.model && i.generation == generation)
        else {
            return Ok(None);
        };
        let pool: Vec<i64> = pool.iter().map(|p| p.0).collect();
        let mut source = StoredVectors { conn, model: e.model, buffer: Vec::new() };
        index.feedback(e.vector, top, &pool, &mut source)
    }

    /// Reads, inside a write transaction, what the index needs to follow the write.
    pub(crate) fn index_delta(
        &self,
        tx: &Transaction<'_>,
        before: i64,
        rids: &[i64],
    ) -> Result<IndexDelta, StoreError> {
        let model = match self.vector_index().as_ref() {
            None => return Ok(IndexDelta::None),
            Some(i) if i.generation != before => return Ok(IndexDelta::Invalidate),
            // Loaded when the store had no vector of its model, the index has no length yet and
            // would drop every vector upserted into it: load it again, with the first ones.
            Some(i) if i.dims == 0 => return Ok(IndexDelta::Invalidate),
            Some(i) => i.model.clone(),
        };
        let mut meta_stmt = tx
            .prepare_cached(
                "SELECT status, kind, categories, private, unconfirmed FROM memories WHERE rid = ?1",
            )
            .map_err(sql("reading a memory for the index"))?;
        let mut vectors_stmt = tx
            .prepare_cached(
                "SELECT vector FROM memory_embeddings WHERE rid = ?1 AND model = ?2 \
                 ORDER BY passage",
            )
            .map_err(sql("reading a memory's vectors for the index"))?;
        let mut rows = Vec::with_capacity(rids.len());
        for &rid in rids {
            let (status, kind, cats, flags) = meta_stmt
                .query_row(params![rid], |r| {
                    let (status, kind, cats): (String, String, String) =
                        (r.get(0)?, r.get(1)?, r.get(2)?);
                    Ok((status, kind, cats, (r.get::<_, bool>(3)?, r.get::<_, bool>(4)?)))
                })
                .map_err(sql("reading a memory for the index"))?;
            let entry = match meta_of(&status, &kind, &cats, flags) {
                Some(meta) if meta.status != MemoryStatus::Deleted => {
                    let passages = vectors_stmt
                        .query_map(params![rid, model], |r| r.get::<_, Vec<u8>>(0))
                        .and_then(|blobs| {
                            blobs.map(|b| b.map(|b| decode_vector(&b))).collect::<Result<_, _>>()
                        })
                        .map_err(sql("reading a memory's vectors for the index"))?;
                    Some((meta, passages))
                }
                _ => None,
            };
            rows.push((rid, entry));
        }
        Ok(IndexDelta::Apply { model, before, after: generation(tx)?, rows })
    }

    /// Applies a committed write's delta (or drops the index when it cannot be applied).
    pub(crate) fn apply_delta(&self, delta: IndexDelta) {
        let mut slot = self.vector_index();
        match delta {
            IndexDelta::None => {}
            IndexDelta::Invalidate => *slot = None,
            IndexDelta::Apply { model, before, after, rows } => match slot.as_mut() {
                Some(index) if index.model == model && index.generation == before => {
                    for (rid, entry) in rows {
                        match entry {
                            Some((meta, passages)) => index.upsert_passages(rid, meta, &passages),
                            None => index.remove(rid),
                        }
                    }
                    index.generation = after;
                }
                _ => *slot = None,
            },
        }
    }
}

/// `flags`: the row's `(private, unconfirmed)`.
fn meta_of(
    status: &str,
    kind: &str,
    categories: &str,
    (private, unconfirmed): (bool, bool),
) -> Option<RowMeta> {
    Some(RowMeta {
        status: status.parse().ok()?,
        kind: kind.parse().ok()?,
        // Most memories have no category: skip the JSON parser for them (index loads).
        categories: if categories == "[]" {
            Vec::new()
        } else {
            serde_json::from_str(categories).ok()?
        },
        private,
        unconfirmed,
    })
}

/// Loads every live vector of `model`, with the generation it reflects, inside the caller's
/// read transaction (so the two agree). One sequential pass over the pages of
/// `memory_embeddings` (walking the rowid table beats one lookup per row through the
/// `(model, rid)` index), each blob decoded straight into the index: no allocation per row.
fn load_index(
    tx: &Connection,
    model: &str,
    residence: Residence,
) -> Result<VectorIndex, StoreError> {
    let generation = generation(tx)?;
    let rows_hint: i64 = tx
        .query_row("SELECT count(*) FROM memories WHERE status <> 'deleted'", [], |r| r.get(0))
        .map_err(sql("counting vectors"))?;
    let mut stmt = tx
        .prepare(
            "SELECT e.rid, e.passage, e.dims, e.vector, m.status, m.kind, m.categories, \
             m.private, m.unconfirmed \
             FROM memory_embeddings e NOT INDEXED JOIN memories m ON m.rid = e.rid \
             WHERE e.model = ?1 AND m.status <> 'deleted'",
        )
        .map_err(sql("loading vectors"))?;
    let mut rows = stmt.query([model]).map_err(sql("loading vectors"))?;
    let mut index: Option<VectorIndex> = None;
    let bad = |rid: i64| StoreError::Corrupt { what: format!("memory row {rid} has bad fields") };
    while let Some(row) = rows.next().map_err(sql("loading vectors"))? {
        let text = |i: usize| row.get_ref(i).and_then(|v| Ok(v.as_str()?));
        let (rid, passage, dims, blob, meta) = (|| -> rusqlite::Result<_> {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
                row.get_ref(3)?.as_blob()?,
                meta_of(
                    text(4)?,
                    text(5)?,
                    text(6)?,
                    (row.get::<_, bool>(7)?, row.get::<_, bool>(8)?),
                ),
            ))
        })()
        .map_err(sql("loading vectors"))?;
        let passage = u32::try_from(passage).map_err(|_| bad(rid))?;
        let meta = meta.ok_or_else(|| bad(rid))?;
        let index = index.get_or_insert_with(|| {
            let dims = usize::try_from(dims).unwrap_or(0);
            let mut index = VectorIndex::new(model, dims, generation, residence);
            index.reserve(usize::try_from(rows_hint).unwrap_or(0));
            index
        });
        // A zero vector (or one of another length than the first) is not indexed, as upsert.
        index.push_le_bytes((rid, passage), meta, blob);
    }
    Ok(index.unwrap_or_else(|| VectorIndex::new(model, 0, generation, residence)))
}

/// The stored vectors of one model, read back for a rescore ([`Residence::Sqlite`]).
struct StoredVectors<'c> {
    conn: &'c Connection,
    model: &'c str,
    buffer: Vec<f32>,
}

impl VectorSource for StoredVectors<'_> {
    fn fetch(
        &mut self,
        rows: &[RowKey],
        sink: &mut dyn FnMut(RowKey, &[f32]),
    ) -> Result<(), StoreError> {
        let wanted: std::collections::HashSet<RowKey> = rows.iter().copied().collect();
        let mut rids: Vec<i64> = rows.iter().map(|r| r.0).collect();
        rids.sort_unstable();
        rids.dedup();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT rid, passage, vector FROM memory_embeddings \
                 WHERE model = ?1 AND rid IN (SELECT value FROM json_each(?2))",
            )
            .map_err(sql("reading vectors to rescore"))?;
        let mut found = stmt
            .query(params![self.model, json!(rids).to_string()])
            .map_err(sql("reading vectors to rescore"))?;
        while let Some(row) = found.next().map_err(sql("reading vectors to rescore"))? {
            let (rid, passage): (i64, i64) =
                (|| Ok((row.get(0)?, row.get(1)?)))().map_err(sql("reading vectors to rescore"))?;
            // Only the rows asked for: another passage of the same memory was not a candidate.
            let Some(key) = u32::try_from(passage).ok().map(|p| (rid, p)) else { continue };
            if !wanted.contains(&key) {
                continue;
            }
            let blob = row
                .get_ref(2)
                .and_then(|v| Ok(v.as_blob()?))
                .map_err(sql("reading vectors to rescore"))?;
            self.buffer.clear();
            self.buffer
                .extend(blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            sink(key, &self.buffer);
        }
        Ok(())
    }
}

fn rows_by_rid(
    conn: &Connection,
    rids: impl IntoIterator<Item = i64>,
) -> Result<HashMap<i64, Memory>, StoreError> {
    let rids: Vec<i64> = rids.into_iter().collect();
    if rids.is_empty() {
        return Ok(HashMap::new());
    }
    let query = format!("{SELECT_MEMORY} WHERE rid IN (SELECT value FROM json_each(?1))");
    let mut stmt = conn.prepare_cached(&query).map_err(sql("reading search results"))?;
    let rows = stmt
        .query_map([json!(rids).to_string()], read_memory)
        .map_err(sql("reading search results"))?;
    rows.map(|r| r.map_err(sql("reading a search result"))).collect()
}

#[cfg(test)]
mod tests;
