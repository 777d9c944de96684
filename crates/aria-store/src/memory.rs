//! Long-term memories: the types, and storing, reading, updating and forgetting them.
//! Searching is in `memory_search.rs`, the vector index in `memory_index.rs`, the tables in
//! `memory_schema.rs`.
//!
//! Every write runs in one `BEGIN IMMEDIATE` transaction together with its audit record, so a
//! memory never changes unaudited and an audit record never describes a write that did not
//! happen. The store takes vectors, not an embedder: it stays synchronous and knows nothing of
//! models; callers embed first (see `aria-core`, `aria-cli`).

use aria_api::AuditEvent;
use rusqlite::{OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{StoreError, sql, to_u64};
use crate::memory_index::{RowMeta, normalized};
use crate::store::{Store, now_rfc3339};

/// What a memory is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    Fact,
    Preference,
    Event,
    Skill,
    Document,
}

/// Whether a memory takes part in search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryStatus {
    /// Found by search (the default filter).
    Active,
    /// Kept, found only when a search asks for archived memories.
    Archived,
    /// Forgotten: out of the full-text index and without vectors; only `get` still reads it.
    Deleted,
}

macro_rules! text_enum {
    ($ty:ty, $what:literal, $($variant:ident => $text:literal),+) => {
        impl $ty {
            /// The stored (and `--json`) spelling.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$(Self::$variant),+];
        }
        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    other => Err(format!(
                        concat!("unknown memory ", $what, " `{}`; expected one of: {}"),
                        other,
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

text_enum!(MemoryKind, "kind", Fact => "fact", Preference => "preference", Event => "event",
    Skill => "skill", Document => "document");
text_enum!(MemoryStatus, "status", Active => "active", Archived => "archived", Deleted => "deleted");

/// Where a memory came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The conversation it was extracted from.
    pub conversation_id: Option<String>,
    /// The messages (ids in the `messages` table) it was extracted from.
    #[serde(default)]
    pub message_ids: Vec<i64>,
    /// When the extraction ran (RFC 3339).
    pub extracted_at: Option<String>,
    /// The model that extracted it, e.g. `ollama:qwen3:4b`.
    pub extracted_by: Option<String>,
}

/// A memory to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    /// A caller-chosen id (`import` keeps the file's ids); a UUIDv7 when `None`.
    pub id: Option<String>,
    pub content: String,
    pub kind: MemoryKind,
    pub categories: Vec<String>,
    /// 0..=1.
    pub importance: f32,
    /// 0..=1.
    pub confidence: f32,
    pub verified: bool,
    /// Never sent to a model off this machine (see [`MemoryFilter::private`]).
    pub private: bool,
    /// Waits for the user's confirmation before it is ever recalled into a prompt (see
    /// [`MemoryFilter::unconfirmed`]).
    pub unconfirmed: bool,
    pub provenance: Provenance,
}

impl NewMemory {
    /// A fact with middling importance, full confidence and no provenance: what a person types.
    pub fn new(content: impl Into<String>) -> NewMemory {
        NewMemory {
            id: None,
            content: content.into(),
            kind: MemoryKind::Fact,
            categories: Vec::new(),
            importance: 0.5,
            confidence: 1.0,
            verified: false,
            private: false,
            unconfirmed: false,
            provenance: Provenance::default(),
        }
    }
}

/// A stored memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub id: String,
    pub content: String,
    pub kind: MemoryKind,
    pub categories: Vec<String>,
    pub importance: f32,
    pub confidence: f32,
    pub status: MemoryStatus,
    pub verified: bool,
    pub access_count: u64,
    pub accessed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Never sent to a model off this machine.
    #[serde(default)]
    pub private: bool,
    /// Stored by a model after it read outside text: never recalled into a prompt until the
    /// user confirms it.
    #[serde(default)]
    pub unconfirmed: bool,
    pub provenance: Provenance,
}

/// Changes to a memory; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryUpdate {
    pub content: Option<String>,
    pub kind: Option<MemoryKind>,
    pub categories: Option<Vec<String>>,
    pub importance: Option<f32>,
    pub confidence: Option<f32>,
    pub status: Option<MemoryStatus>,
    pub verified: Option<bool>,
    pub private: Option<bool>,
    pub unconfirmed: Option<bool>,
}

/// A vector and the embedding model that made it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Embedding<'a> {
    /// [`aria_api::Embedder::model_id`].
    pub model: &'a str,
    pub vector: &'a [f32],
}

/// The vectors of one memory under one model, one per passage of its text, first passage
/// first: one vector for a text its embedder takes whole, more for a longer one
/// (`aria_api::Embedder::passages`). Search scores the memory by its best passage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Passages<'a> {
    /// [`aria_api::Embedder::model_id`].
    pub model: &'a str,
    pub vectors: &'a [Vec<f32>],
}

/// Who is writing, for the audit record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writer<'a> {
    /// `user`, `agent`, `system`, …
    pub actor: &'a str,
    pub session_id: Option<&'a str>,
}

impl Writer<'static> {
    /// A person at the CLI.
    pub const USER: Writer<'static> = Writer { actor: "user", session_id: None };
}

pub(crate) const SELECT_MEMORY: &str = "SELECT rid, id, content, kind, categories, importance, \
    confidence, status, verified, access_count, accessed_at, created_at, updated_at, \
    source_conversation_id, source_message_ids, extracted_at, extracted_by, private, unconfirmed \
    FROM memories";

/// Lowercase words separated by single spaces: two texts that differ only in case,
/// punctuation or spacing normalise to the same string.
pub fn normalize_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

impl Store {
    /// Stores one memory (with its passages' vectors when given) and audits it
    /// (`memory.store`).
    pub fn memory_insert(
        &self,
        memory: &NewMemory,
        embedding: Option<Passages<'_>>,
        by: Writer<'_>,
    ) -> Result<Memory, StoreError> {
        let mut ids = self.memory_insert_batch(
            std::slice::from_ref(memory),
            embedding.map(|e| e.model),
            |_| embedding.map(|e| e.vectors),
            by,
        )?;
        let id = ids
            .pop()
            .ok_or_else(|| StoreError::Corrupt { what: "insert returned no id".into() })?;
        self.memory_get(&id)?.ok_or(StoreError::UnknownMemory(id))
    }

    /// Stores many memories in one transaction, all or none, each audited. `vector_of(i)` gives
    /// the vectors of `memories[i]`'s passages under `model`. Returns the ids, in order.
    pub fn memory_insert_batch<'v>(
        &self,
        memories: &[NewMemory],
        model: Option<&str>,
        vector_of: impl Fn(usize) -> Option<&'v [Vec<f32>]>,
        by: Writer<'_>,
    ) -> Result<Vec<String>, StoreError> {
        for m in memories {
            validate(&m.content, m.importance, m.confidence)?;
        }
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("starting a memory write"))?;
        let before = generation(&tx)?;
        let now = now_rfc3339();
        let mut ids = Vec::with_capacity(memories.len());
        let mut events = Vec::with_capacity(memories.len());
        let mut touched = Vec::with_capacity(memories.len());
        for (i, m) in memories.iter().enumerate() {
            let id = m.id.clone().unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
            let rid = insert_row(&tx, &id, m, &now)?;
            if let (Some(model), Some(vectors)) = (model, vector_of(i)) {
                put_vectors(&tx, rid, model, vectors, &now)?;
            }
            events.push(AuditEvent::new(
                by.session_id,
                by.actor,
                "memory.store",
                json!({
                    "id": id, "content": m.content, "kind": m.kind.as_str(),
                    "categories": m.categories, "importance": m.importance,
                    "confidence": m.confidence, "verified": m.verified, "private": m.private,
                    "unconfirmed": m.unconfirmed, "provenance": m.provenance, "embedding_model": model,
                }),
            ));
            touched.push(rid);
            ids.push(id);
        }
        self.append_events_in(&tx, events)?;
        let delta = self.index_delta(&tx, before, &touched)?;
        tx.commit().map_err(sql("committing memories"))?;
        self.apply_delta(delta);
        Ok(ids)
    }

    /// One memory by id, whatever its status.
    pub fn memory_get(&self, id: &str) -> Result<Option<Memory>, StoreError> {
        let conn = self.conn();
        get_by_id(&conn, id)
    }

    /// Memories with one of `statuses` (all when empty), most recently updated first.
    pub fn memory_list(
        &self,
        statuses: &[MemoryStatus],
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let statuses: Vec<&str> = if statuses.is_empty() {
            MemoryStatus::ALL.iter().map(|s| s.as_str()).collect()
        } else {
            statuses.iter().map(|s| s.as_str()).collect()
        };
        let conn = self.conn();
        let query = format!(
            "{SELECT_MEMORY} WHERE status IN (SELECT value FROM json_each(?1)) \
             ORDER BY updated_at DESC, rid DESC LIMIT ?2 OFFSET ?3"
        );
        let mut stmt = conn.prepare_cached(&query).map_err(sql("listing memories"))?;
        let rows = stmt
            .query_map(
                params![
                    json!(statuses).to_string(),
                    i64::try_from(limit).unwrap_or(i64::MAX),
                    i64::try_from(offset).unwrap_or(i64::MAX)
                ],
                read_memory,
            )
            .map_err(sql("listing memories"))?;
        rows.map(|r| r.map(|(_, m)| m).map_err(sql("reading a memory"))).collect()
    }

    /// How many memories have each status: (active, archived, deleted).
    pub fn memory_counts(&self) -> Result<(u64, u64, u64), StoreError> {
        let conn = self.conn();
        let count = |status: &str| -> Result<u64, StoreError> {
            let n: i64 = conn
                .query_row("SELECT count(*) FROM memories WHERE status = ?1", [status], |r| {
                    r.get(0)
                })
                .map_err(sql("counting memories"))?;
            to_u64("memory count", n)
        };
        Ok((count("active")?, count("archived")?, count("deleted")?))
    }

    /// Applies `update` and audits it (`memory.update`, with the fields that changed). A content
    /// change drops the memory's vectors of every model (they described the old text) and
    /// stores `embedding` when given; memories left without a vector are found by
    /// [`Store::memory_missing_embeddings`] (`aria memories reindex`).
    pub fn memory_update(
        &self,
        id: &str,
        update: &MemoryUpdate,
        embedding: Option<Passages<'_>>,
        by: Writer<'_>,
    ) -> Result<Memory, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("starting a memory update"))?;
        let before = generation(&tx)?;
        let (rid, old) = get_by_id(&tx, id)?
            .map(|m| (rid_of(&tx, id), m))
            .ok_or_else(|| StoreError::UnknownMemory(id.to_owned()))?;
        let rid = rid?;
        let new = apply(&old, update);
        validate(&new.content, new.importance, new.confidence)?;
        let now = now_rfc3339();
        tx.execute(
            "UPDATE memories SET content = ?2, normalized = ?3, kind = ?4, categories = ?5, \
             importance = ?6, confidence = ?7, status = ?8, verified = ?9, updated_at = ?10, \
             private = ?11, unconfirmed = ?12 WHERE rid = ?1",
            params![
                rid,
                new.content,
                normalize_text(&new.content),
                new.kind.as_str(),
                json!(new.categories).to_string(),
                f64::from(new.importance),
                f64::from(new.confidence),
                new.status.as_str(),
                new.verified,
                now,
                new.private,
                new.unconfirmed,
            ],
        )
        .map_err(sql("updating a memory"))?;
        if new.content != old.content || new.status == MemoryStatus::Deleted {
            tx.execute("DELETE FROM memory_embeddings WHERE rid = ?1", [rid])
                .map_err(sql("dropping a memory's vectors"))?;
        }
        if let Some(e) = embedding.filter(|_| new.status != MemoryStatus::Deleted) {
            put_vectors(&tx, rid, e.model, e.vectors, &now)?;
        }
        let kind = if new.status == MemoryStatus::Deleted && old.status != MemoryStatus::Deleted {
            "memory.forget"
        } else {
            "memory.update"
        };
        let payload = changes(&old, &new, embedding.map(|e| e.model));
        self.append_events_in(&tx, [AuditEvent::new(by.session_id, by.actor, kind, payload)])?;
        let delta = self.index_delta(&tx, before, &[rid])?;
        tx.commit().map_err(sql("committing a memory update"))?;
        self.apply_delta(delta);
        drop(conn);
        self.memory_get(id)?.ok_or_else(|| StoreError::UnknownMemory(id.to_owned()))
    }

    /// Forgets a memory: status `deleted`, out of the text index, vectors dropped; the row stays
    /// so the audit log's references still resolve. Audited as `memory.forget`.
    pub fn memory_forget(&self, id: &str, by: Writer<'_>) -> Result<Memory, StoreError> {
        let update =
            MemoryUpdate { status: Some(MemoryStatus::Deleted), ..MemoryUpdate::default() };
        self.memory_update(id, &update, None, by)
    }

    /// Records that memories were used (retrieved into a context or shown): `access_count + 1`
    /// and `accessed_at = now`. Bookkeeping, not a change of what is remembered, so not audited.
    pub fn memory_touch(&self, ids: &[String]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let conn = self.conn();
        conn.execute(
            "UPDATE memories SET access_count = access_count + 1, accessed_at = ?2 \
             WHERE id IN (SELECT value FROM json_each(?1))",
            params![json!(ids).to_string(), now_rfc3339()],
        )
        .map_err(sql("recording memory access"))?;
        Ok(())
    }

    /// Up to `limit` live memories (not deleted) that have no vector of `model`, oldest first:
    /// the work list of a reindex. Resumable: what was embedded is no longer listed.
    pub fn memory_missing_embeddings(
        &self,
        model: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>, StoreError> {
        self.memory_missing_embeddings_of(model, limit, true)
    }

    /// [`Store::memory_missing_embeddings`], private memories only when `private` (an embedder
    /// off this machine never gets them).
    pub fn memory_missing_embeddings_of(
        &self,
        model: &str,
        limit: usize,
        private: bool,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT m.id, m.content FROM memories m WHERE m.status <> 'deleted' \
                 AND (?3 OR m.private = 0) AND NOT EXISTS \
                 (SELECT 1 FROM memory_embeddings e WHERE e.rid = m.rid AND e.model = ?1) \
                 ORDER BY m.rid LIMIT ?2",
            )
            .map_err(sql("listing memories to embed"))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![model, limit, private], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql("listing memories to embed"))?;
        rows.map(|r| r.map_err(sql("reading a memory to embed"))).collect()
    }

    /// Up to `limit` live memories after rid `after`, in rid order, with how many vectors of
    /// `model` each has (its passages; 0 for none), as (rid, id, content, count): a reindex
    /// walks them to find memories whose text now splits into another number of passages than
    /// were stored (those embedded whole before passages existed). Page on with the last rid.
    pub fn memory_passage_counts(
        &self,
        model: &str,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, String, String, u64)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT m.rid, m.id, m.content, \
                 (SELECT count(*) FROM memory_embeddings e WHERE e.rid = m.rid AND e.model = ?1) \
                 FROM memories m WHERE m.status <> 'deleted' AND m.rid > ?2 \
                 ORDER BY m.rid LIMIT ?3",
            )
            .map_err(sql("listing memories' passages"))?;
        let rows = stmt
            .query_map(params![model, after, i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, i64>(3)?))
            })
            .map_err(sql("listing memories' passages"))?;
        rows.map(|r| {
            let (rid, id, content, n) = r.map_err(sql("reading a memory's passages"))?;
            Ok((rid, id, content, to_u64("passage count", n)?))
        })
        .collect()
    }

    /// Stores vectors of `model` for memories by id (each memory's passages, first first; they
    /// replace the vectors of `model` it had), in one transaction, audited as one
    /// `memory.embed` record (ids and model; the vectors themselves are derived data). A memory
    /// that was deleted or forgotten meanwhile is skipped. Returns how many were stored.
    pub fn memory_put_embeddings(
        &self,
        model: &str,
        vectors: &[(String, Vec<Vec<f32>>)],
        by: Writer<'_>,
    ) -> Result<usize, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("starting to store vectors"))?;
        let before = generation(&tx)?;
        let now = now_rfc3339();
        let mut stored = Vec::with_capacity(vectors.len());
        let mut rids = Vec::with_capacity(vectors.len());
        for (id, vector) in vectors {
            let rid: Option<i64> = tx
                .query_row(
                    "SELECT rid FROM memories WHERE id = ?1 AND status <> 'deleted'",
                    [id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql("finding a memory to embed"))?;
            if let Some(rid) = rid {
                put_vectors(&tx, rid, model, vector, &now)?;
                rids.push(rid);
                stored.push(id.as_str());
            }
        }
        if !stored.is_empty() {
            let payload = json!({ "model": model, "ids": stored });
            self.append_events_in(
                &tx,
                [AuditEvent::new(by.session_id, by.actor, "memory.embed", payload)],
            )?;
        }
        let delta = self.index_delta(&tx, before, &rids)?;
        tx.commit().map_err(sql("committing vectors"))?;
        self.apply_delta(delta);
        Ok(stored.len())
    }

    /// (model, number of live memories with a vector of it), for `reindex` progress and status.
    pub fn memory_embedding_models(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT e.model, count(DISTINCT e.rid) FROM memory_embeddings e \
                 JOIN memories m ON m.rid = e.rid \
                 WHERE m.status <> 'deleted' GROUP BY e.model ORDER BY e.model",
            )
            .map_err(sql("counting vectors"))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .map_err(sql("counting vectors"))?;
        rows.map(|r| {
            let (model, n) = r.map_err(sql("counting vectors"))?;
            Ok((model, to_u64("vector count", n)?))
        })
        .collect()
    }
}

fn validate(content: &str, importance: f32, confidence: f32) -> Result<(), StoreError> {
    if content.trim().is_empty() {
        return Err(StoreError::InvalidMemory("the content is empty".into()));
    }
    for (name, v) in [("importance", importance), ("confidence", confidence)] {
        if !(0.0..=1.0).contains(&v) {
            return Err(StoreError::InvalidMemory(format!("{name} is {v}, must be 0..=1")));
        }
    }
    Ok(())
}

fn insert_row(tx: &Transaction<'_>, id: &str, m: &NewMemory, now: &str) -> Result<i64, StoreError> {
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO memories (id, content, normalized, kind, categories, importance, \
             confidence, status, verified, created_at, updated_at, source_conversation_id, \
             source_message_ids, extracted_at, extracted_by, private, unconfirmed) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'active', ?8, ?9, ?9, ?10, ?11, ?12, ?13, ?14, \
             ?15)",
        )
        .map_err(sql("preparing a memory insert"))?;
    let result = stmt.execute(params![
        id,
        m.content,
        normalize_text(&m.content),
        m.kind.as_str(),
        json!(m.categories).to_string(),
        f64::from(m.importance),
        f64::from(m.confidence),
        m.verified,
        now,
        m.provenance.conversation_id,
        json!(m.provenance.message_ids).to_string(),
        m.provenance.extracted_at,
        m.provenance.extracted_by,
        m.private,
        m.unconfirmed,
    ]);
    match result {
        Ok(_) => Ok(tx.last_insert_rowid()),
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) => {
            Err(StoreError::DuplicateMemoryId(id.to_owned()))
        }
        Err(e) => Err(sql("inserting a memory")(e)),
    }
}

/// Replaces the vectors of `model` of memory `rid` with `passages` (passage 0 first). Nothing
/// is written when `passages` is empty; every vector must be non-zero, finite and of the
/// model's length.
fn put_vectors(
    tx: &Transaction<'_>,
    rid: i64,
    model: &str,
    passages: &[Vec<f32>],
    now: &str,
) -> Result<(), StoreError> {
    let Some(first) = passages.first() else { return Ok(()) };
    for v in passages {
        if normalized(v, v.len()).is_none() {
            return Err(StoreError::InvalidMemory(format!(
                "the vector from `{model}` is empty, zero or not finite"
            )));
        }
        if v.len() != first.len() {
            return Err(StoreError::InvalidMemory(format!(
                "the passages' vectors from `{model}` have {} and {} dimensions",
                first.len(),
                v.len()
            )));
        }
    }
    let dims: Option<i64> = tx
        .query_row("SELECT dims FROM memory_embeddings WHERE model = ?1 LIMIT 1", [model], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql("reading a model's dimensions"))?;
    if let Some(d) = dims.filter(|d| usize::try_from(*d).ok() != Some(first.len())) {
        return Err(StoreError::InvalidMemory(format!(
            "model `{model}` has {d}-dimension vectors in the store, this one has {}",
            first.len()
        )));
    }
    tx.prepare_cached("DELETE FROM memory_embeddings WHERE rid = ?1 AND model = ?2")
        .and_then(|mut s| s.execute(params![rid, model]))
        .map_err(sql("replacing a memory's vectors"))?;
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO memory_embeddings (rid, model, passage, dims, vector, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(sql("storing a vector"))?;
    for (passage, vector) in passages.iter().enumerate() {
        let blob: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        insert
            .execute(params![rid, model, passage as i64, vector.len() as i64, blob, now])
            .map_err(sql("storing a vector"))?;
    }
    Ok(())
}

/// Decodes a stored f32 little-endian vector.
pub(crate) fn decode_vector(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

pub(crate) fn generation(conn: &rusqlite::Connection) -> Result<i64, StoreError> {
    conn.query_row("SELECT generation FROM memory_state WHERE id = 1", [], |r| r.get(0))
        .map_err(sql("reading the memory generation"))
}

fn rid_of(conn: &rusqlite::Connection, id: &str) -> Result<i64, StoreError> {
    conn.query_row("SELECT rid FROM memories WHERE id = ?1", [id], |r| r.get(0))
        .map_err(sql("finding a memory"))
}

pub(crate) fn get_by_id(
    conn: &rusqlite::Connection,
    id: &str,
) -> Result<Option<Memory>, StoreError> {
    let query = format!("{SELECT_MEMORY} WHERE id = ?1");
    conn.prepare_cached(&query)
        .and_then(|mut s| s.query_row([id], read_memory).optional())
        .map_err(sql("reading a memory"))
        .map(|m| m.map(|(_, m)| m))
}

/// Reads one row of [`SELECT_MEMORY`] as (rid, memory).
pub(crate) fn read_memory(row: &Row<'_>) -> rusqlite::Result<(i64, Memory)> {
    let parse_err = |i: usize, e: String| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, e.into())
    };
    let kind: String = row.get(3)?;
    let status: String = row.get(7)?;
    let categories: String = row.get(4)?;
    let message_ids: String = row.get(14)?;
    let access_count: i64 = row.get(9)?;
    Ok((
        row.get(0)?,
        Memory {
            id: row.get(1)?,
            content: row.get(2)?,
            kind: kind.parse().map_err(|e| parse_err(3, e))?,
            categories: serde_json::from_str(&categories)
                .map_err(|e| parse_err(4, e.to_string()))?,
            importance: row.get::<_, f64>(5)? as f32,
            confidence: row.get::<_, f64>(6)? as f32,
            status: status.parse().map_err(|e| parse_err(7, e))?,
            verified: row.get(8)?,
            access_count: u64::try_from(access_count).unwrap_or(0),
            accessed_at: row.get(10)?,
            created_at: row.get(11)?,
            updated_at: row.get(12)?,
            private: row.get(17)?,
            unconfirmed: row.get(18)?,
            provenance: Provenance {
                conversation_id: row.get(13)?,
                message_ids: serde_json::from_str(&message_ids)
                    .map_err(|e| parse_err(14, e.to_string()))?,
                extracted_at: row.get(15)?,
                extracted_by: row.get(16)?,
            },
        },
    ))
}

impl From<&Memory> for RowMeta {
    fn from(m: &Memory) -> RowMeta {
        RowMeta {
            status: m.status,
            kind: m.kind,
            categories: m.categories.clone(),
            private: m.private,
            unconfirmed: m.unconfirmed,
        }
    }
}

fn apply(old: &Memory, u: &MemoryUpdate) -> Memory {
    let mut m = old.clone();
    if let Some(c) = &u.content {
        m.content = c.clone();
    }
    m.kind = u.kind.unwrap_or(m.kind);
    if let Some(c) = &u.categories {
        m.categories = c.clone();
    }
    m.importance = u.importance.unwrap_or(m.importance);
    m.confidence = u.confidence.unwrap_or(m.confidence);
    m.status = u.status.unwrap_or(m.status);
    m.verified = u.verified.unwrap_or(m.verified);
    m.private = u.private.unwrap_or(m.private);
    m.unconfirmed = u.unconfirmed.unwrap_or(m.unconfirmed);
    m
}

/// The audit payload of an update: the id and, per changed field, `[old, new]`.
fn changes(old: &Memory, new: &Memory, model: Option<&str>) -> serde_json::Value {
    let mut changed = serde_json::Map::new();
    let mut diff = |name: &str, a: serde_json::Value, b: serde_json::Value| {
        if a != b {
            changed.insert(name.to_owned(), json!([a, b]));
        }
    };
    diff("content", json!(old.content), json!(new.content));
    diff("kind", json!(old.kind), json!(new.kind));
    diff("categories", json!(old.categories), json!(new.categories));
    diff("importance", json!(old.importance), json!(new.importance));
    diff("confidence", json!(old.confidence), json!(new.confidence));
    diff("status", json!(old.status), json!(new.status));
    diff("verified", json!(old.verified), json!(new.verified));
    diff("private", json!(old.private), json!(new.private));
    diff("unconfirmed", json!(old.unconfirmed), json!(new.unconfirmed));
    json!({ "id": old.id, "changed": changed, "embedding_model": model })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod passages_tests;
