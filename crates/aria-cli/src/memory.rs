//! The agent's long-term memory ([`aria_core::MemoryBackend`]) over the SQLite store and an
//! embedder: queries and new memories are embedded here (when an embedder is configured), the
//! store searches (BM25 + vectors fused by RRF) and deduplicates, and audits every write in
//! the same transaction.
//!
//! The profile is the active facts and preferences in the category `profile` (extraction files
//! stable facts about the user there); the context builder keeps those with confidence > 0.5.

use std::sync::Arc;

use aria_api::Embedder;
use aria_core::{
    MemoryBackend, MemoryError, MemoryFuture, MemoryHit, MemoryKind, NewMemory, SearchScope, Stored,
};
use aria_store::{
    Embedding, Memory, MemoryQuery, MemoryStatus, MemoryUpdate, Store, StoreError, Writer,
};

/// The category that marks a memory as part of the user's profile.
pub const PROFILE_CATEGORY: &str = "profile";
/// How many recent memories are scanned for profile entries.
const PROFILE_SCAN: usize = 500;
/// The most profile entries put into a request (the context builder also caps their tokens).
const PROFILE_MAX: usize = 20;
/// A new memory whose vector is at least this close to an existing one updates it.
pub const DUPLICATE_SIMILARITY: f32 = 0.92;

/// Memory backed by the store, with an optional embedder (without one, search is BM25 only and
/// duplicates are found by their normalised text).
#[derive(Debug, Clone)]
pub struct StoreMemory {
    store: Arc<Store>,
    embedder: Option<Arc<dyn Embedder>>,
}

impl StoreMemory {
    pub fn new(store: Arc<Store>, embedder: Option<Arc<dyn Embedder>>) -> Self {
        StoreMemory { store, embedder }
    }

    /// The vector of `text`; `None` without an embedder. A failing embedder is an error for
    /// writes (a memory without its vector would be missing from vector search) but only a
    /// warning for searches, which still have BM25.
    async fn embed(&self, text: &str) -> Result<Option<(String, Vec<f32>)>, MemoryError> {
        let Some(embedder) = &self.embedder else { return Ok(None) };
        let mut vectors = embedder
            .embed(&[text.to_owned()])
            .await
            .map_err(|e| MemoryError::Embed(e.to_string()))?;
        let vector = vectors
            .pop()
            .ok_or_else(|| MemoryError::Embed("the embedder returned no vector".into()))?;
        Ok(Some((embedder.model_id().to_owned(), vector)))
    }
}

/// The embedder the agent's memory uses: the configured one, except that the embedded model is
/// never fetched on an agent command (only `aria model pull` / `aria memories` fetch it): until
/// it is on this machine, and when the configured one cannot be built, search is BM25 only and
/// the reason is logged.
pub fn agent_embedder(config: &crate::config::Config) -> Option<Arc<dyn Embedder>> {
    if let crate::config::EmbedderConfig::Local { model } = &config.memory.embedder
        && !local_embedder_present(config, model)
    {
        tracing::warn!(
            "memory search uses BM25 only: the embedding model {model} is not on this machine \
             yet (`aria model pull` or `aria memories reindex` fetches it)"
        );
        return None;
    }
    match crate::embedder::build(config) {
        Ok(embedder) => embedder,
        Err(e) => {
            tracing::warn!("memory search uses BM25 only: {:#}", e.error);
            None
        }
    }
}

#[cfg(feature = "local")]
fn local_embedder_present(config: &crate::config::Config, name: &str) -> bool {
    aria_local::ModelCatalog::builtin()
        .get(name)
        .is_ok_and(|entry| entry.dir(&config.provider.models_dir).join("config.json").is_file())
}

#[cfg(not(feature = "local"))]
fn local_embedder_present(_config: &crate::config::Config, _name: &str) -> bool {
    false
}

fn store_error(e: StoreError) -> MemoryError {
    MemoryError::Store(e.to_string())
}

fn kind_to_store(kind: MemoryKind) -> aria_store::MemoryKind {
    match kind {
        MemoryKind::Fact => aria_store::MemoryKind::Fact,
        MemoryKind::Preference => aria_store::MemoryKind::Preference,
        MemoryKind::Event => aria_store::MemoryKind::Event,
        MemoryKind::Skill => aria_store::MemoryKind::Skill,
        MemoryKind::Document => aria_store::MemoryKind::Document,
    }
}

fn kind_from_store(kind: aria_store::MemoryKind) -> MemoryKind {
    match kind {
        aria_store::MemoryKind::Fact => MemoryKind::Fact,
        aria_store::MemoryKind::Preference => MemoryKind::Preference,
        aria_store::MemoryKind::Event => MemoryKind::Event,
        aria_store::MemoryKind::Skill => MemoryKind::Skill,
        aria_store::MemoryKind::Document => MemoryKind::Document,
    }
}

fn hit(memory: Memory, score: f64) -> MemoryHit {
    MemoryHit {
        id: memory.id,
        content: memory.content,
        kind: kind_from_store(memory.kind),
        categories: memory.categories,
        confidence: f64::from(memory.confidence),
        score,
        similarity: None,
        text_match: false,
        private: memory.private,
    }
}

impl MemoryBackend for StoreMemory {
    fn search<'a>(
        &'a self,
        query: &'a str,
        scope: SearchScope,
    ) -> MemoryFuture<'a, Vec<MemoryHit>> {
        Box::pin(async move {
            let embedded = match self.embed(query).await {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!("memory search falls back to BM25 only: {e}");
                    None
                }
            };
            let embedding =
                embedded.as_ref().map(|(model, v)| Embedding { model, vector: v.as_slice() });
            let mut search = MemoryQuery::new(query, embedding, scope.limit);
            search.filter.private = scope.private;
            let hits = self.store.memory_search(&search).map_err(store_error)?;
            let ids: Vec<String> = hits.iter().map(|h| h.memory.id.clone()).collect();
            if let Err(e) = self.store.memory_touch(&ids) {
                tracing::warn!("could not record memory access: {e}");
            }
            Ok(hits
                .into_iter()
                .map(|h| MemoryHit {
                    similarity: h.similarity.map(f64::from),
                    text_match: h.text_rank.is_some(),
                    ..hit(h.memory, h.score)
                })
                .collect())
        })
    }

    fn profile(&self, private: bool) -> MemoryFuture<'_, Vec<MemoryHit>> {
        Box::pin(async move {
            let recent = self
                .store
                .memory_list(&[MemoryStatus::Active], PROFILE_SCAN, 0)
                .map_err(store_error)?;
            let mut profile: Vec<Memory> = recent
                .into_iter()
                .filter(|m| {
                    matches!(
                        m.kind,
                        aria_store::MemoryKind::Fact | aria_store::MemoryKind::Preference
                    ) && m.categories.iter().any(|c| c == PROFILE_CATEGORY)
                        && (private || !m.private)
                })
                .collect();
            profile.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
            profile.truncate(PROFILE_MAX);
            Ok(profile.into_iter().map(|m| hit(m, 0.0)).collect())
        })
    }

    fn remember(&self, memory: NewMemory) -> MemoryFuture<'_, Stored> {
        Box::pin(async move {
            if memory.content.trim().is_empty() {
                return Err(MemoryError::Invalid("a memory cannot be empty".into()));
            }
            let embedded = self.embed(&memory.content).await?;
            let embedding =
                embedded.as_ref().map(|(model, v)| Embedding { model, vector: v.as_slice() });
            let session = memory.provenance.session_id.as_deref();
            // The user's own words (the HTTP API, the web page) are theirs and verified; the
            // model's `memory_store` calls are the agent's; extraction is the system's.
            let (actor, verified) = match memory.provenance.source.as_str() {
                "user" => ("user", true),
                "tool" => ("agent", false),
                _ => ("system", false),
            };
            let by = Writer { actor, session_id: session };
            let duplicate = self
                .store
                .memory_find_duplicate(&memory.content, embedding, DUPLICATE_SIMILARITY)
                .map_err(store_error)?;
            if let Some(dup) = duplicate {
                let old = dup.memory;
                let mut categories = old.categories.clone();
                for c in &memory.categories {
                    if !categories.contains(c) {
                        categories.push(c.clone());
                    }
                }
                let update = MemoryUpdate {
                    // The newer wording wins; the same text keeps the stored vector.
                    content: (old.content != memory.content).then(|| memory.content.clone()),
                    categories: (categories != old.categories).then_some(categories),
                    importance: Some(old.importance.max(memory.importance as f32)),
                    confidence: Some(old.confidence.max(memory.confidence as f32)),
                    status: Some(MemoryStatus::Active),
                    // Privacy is kept, and gained when the new wording is private.
                    private: (memory.private && !old.private).then_some(true),
                    ..MemoryUpdate::default()
                };
                let vector = embedding.filter(|_| update.content.is_some());
                let updated =
                    self.store.memory_update(&old.id, &update, vector, by).map_err(store_error)?;
                return Ok(Stored::Updated(updated.id));
            }
            let new = aria_store::NewMemory {
                id: None,
                content: memory.content,
                kind: kind_to_store(memory.kind),
                categories: memory.categories,
                importance: memory.importance.clamp(0.0, 1.0) as f32,
                confidence: memory.confidence.clamp(0.0, 1.0) as f32,
                verified,
                private: memory.private,
                provenance: aria_store::Provenance {
                    conversation_id: memory.provenance.conversation_id,
                    message_ids: memory.provenance.message_ids,
                    extracted_at: memory.provenance.extracted_at,
                    extracted_by: memory.provenance.model,
                },
            };
            let stored = self.store.memory_insert(&new, embedding, by).map_err(store_error)?;
            Ok(Stored::Inserted(stored.id))
        })
    }
}
