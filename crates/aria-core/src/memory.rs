//! The agent's view of long-term memory: a small port that the context builder, the extraction
//! job and the memory tools speak, implemented in `aria-cli` over the store and the embedder.
//!
//! The port is deliberately narrow — search, the profile, and one write that deduplicates — so
//! that the agent never sees vectors, SQL or the embedder: how a query is embedded and how
//! BM25 and vector results are fused is the store's business.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// What kind of thing a memory is: fact, preference, event, skill or document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    Fact,
    Preference,
    Event,
    Skill,
    Document,
}

impl MemoryKind {
    pub const ALL: [MemoryKind; 5] = [
        MemoryKind::Fact,
        MemoryKind::Preference,
        MemoryKind::Event,
        MemoryKind::Skill,
        MemoryKind::Document,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Fact => "fact",
            MemoryKind::Preference => "preference",
            MemoryKind::Event => "event",
            MemoryKind::Skill => "skill",
            MemoryKind::Document => "document",
        }
    }

    pub fn parse(s: &str) -> Option<MemoryKind> {
        MemoryKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One remembered item as search or the profile returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryHit {
    pub id: String,
    pub content: String,
    pub kind: MemoryKind,
    #[serde(default)]
    pub categories: Vec<String>,
    pub confidence: f64,
    /// Higher is better; only the order matters.
    pub score: f64,
    /// Cosine similarity of the memory's vector to the query's, when vector search found it.
    #[serde(default)]
    pub similarity: Option<f64>,
    /// Whether the full-text search matched the query's words.
    #[serde(default)]
    pub text_match: bool,
    /// Never sent to a model off this machine.
    #[serde(default)]
    pub private: bool,
}

/// What one search may return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchScope {
    /// At most this many hits.
    pub limit: usize,
    /// Whether private memories may be returned: only when the results go to a model that runs
    /// on this machine.
    pub private: bool,
}

/// Where a memory came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub conversation_id: Option<String>,
    pub session_id: Option<String>,
    /// The journal ids of the messages it was taken from.
    pub message_ids: Vec<i64>,
    /// The model that extracted it; `None` when the user or a tool call stored it verbatim.
    pub model: Option<String>,
    /// When it was extracted (RFC 3339 UTC); `None` when it was not extracted.
    pub extracted_at: Option<String>,
    /// `extraction` or `tool` (the model called `memory_store`).
    pub source: String,
}

/// A memory to store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewMemory {
    pub content: String,
    pub kind: MemoryKind,
    pub categories: Vec<String>,
    /// 0 to 1.
    pub importance: f64,
    /// 0 to 1.
    pub confidence: f64,
    /// Never sent to a model off this machine (the user said so, or it came from a file).
    #[serde(default)]
    pub private: bool,
    /// Written by the model in a run that had read outside text: kept, but never recalled into
    /// a prompt until the user confirms it.
    #[serde(default)]
    pub unconfirmed: bool,
    pub provenance: Provenance,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", content = "id", rename_all = "lowercase")]
pub enum Stored {
    /// A new memory with this id.
    Inserted(String),
    /// An existing memory said the same thing; it was updated instead of duplicated.
    Updated(String),
}

impl Stored {
    pub fn id(&self) -> &str {
        match self {
            Stored::Inserted(id) | Stored::Updated(id) => id,
        }
    }
}

/// Long-term memory failed. Never fatal to a turn: the loop answers without memories.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MemoryError {
    /// The query or the memory could not be embedded.
    #[error("could not embed for memory search: {0}")]
    Embed(String),
    /// The store failed.
    #[error("the memory store failed: {0}")]
    Store(String),
    /// The request was wrong (empty content, bad kind, ...).
    #[error("{0}")]
    Invalid(String),
}

pub type MemoryFuture<'a, T> = BoxFuture<'a, Result<T, MemoryError>>;

/// Long-term memory as the agent uses it.
pub trait MemoryBackend: Send + Sync + std::fmt::Debug {
    /// The best active memories for `query` within `scope`, best first (hybrid retrieval).
    fn search<'a>(&'a self, query: &'a str, scope: SearchScope)
    -> MemoryFuture<'a, Vec<MemoryHit>>;

    /// The user's profile entries (stable facts and preferences about them), private ones only
    /// when `private`. The context builder keeps those with confidence above 0.5.
    fn profile(&self, private: bool) -> MemoryFuture<'_, Vec<MemoryHit>>;

    /// Stores `memory`, or updates an existing one that says the same thing (which becomes
    /// private when `memory` is; privacy is never dropped by a write). The backend
    /// audits the write (`memory.store` / `memory.update`, in the same transaction as the write
    /// in the SQLite store), with the provenance's session and `source` as the actor.
    fn remember(&self, memory: NewMemory) -> MemoryFuture<'_, Stored>;
}
