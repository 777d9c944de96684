//! The agent's long-term memory ([`aria_core::MemoryBackend`]) over the SQLite store and an
//! embedder: queries and new memories are embedded here (when an embedder is configured), the store
//! searches (BM25 + vectors, fused by standardised scores) and deduplicates, and audits every write
//! in the same transaction.
//!
//! The profile is the active facts and preferences in the category `profile` (extraction files
//! stable facts about the user there); the context builder keeps those with confidence > 0.5.
//!
//! An agent's backend is scoped ([`StoreMemory::for_agent`]): an agent profile with
//! `memory = "own"` sees and writes only the memories in its category `agent:NAME`; every other
//! agent sees the shared pool, the memories no agent keeps to itself (none with an `agent:`
//! category). A backend built with [`StoreMemory::new`] alone is unscoped (the user's view).

use std::sync::Arc;

use aria_api::Embedder;
use aria_core::{
    MemoryBackend, MemoryError, MemoryFuture, MemoryHit, MemoryKind, NewMemory, SearchScope, Stored,
};
use aria_store::{
    Embedding, Memory, MemoryFilter, MemoryQuery, MemoryStatus, MemoryUpdate, Store, StoreError,
    Writer,
};

/// The category that marks a memory as part of the user's profile.
pub const PROFILE_CATEGORY: &str = "profile";
/// How many recent memories are scanned for profile entries.
const PROFILE_SCAN: usize = 500;
/// The most profile entries put into a request (the context builder also caps their tokens).
const PROFILE_MAX: usize = 20;
/// A new memory whose vector is at least this close to an existing one updates it.
pub const DUPLICATE_SIMILARITY: f32 = 0.92;
/// [`DUPLICATE_SIMILARITY`] for granite-embedding-30m-english, whose similarities sit closer
/// together: "The user deploys on Fridays." and "… on Mondays." score 0.945 there, paraphrases
/// 0.95 to 0.97 (NumPy reference of the same pack). Two different facts must not merge, so the
/// bar is above them all; a paraphrase below it is kept as a second memory.
pub const GRANITE_DUPLICATE_SIMILARITY: f32 = 0.975;

/// The similarity at which a new memory's vector of `model` (an embedder id such as
/// `local:all-minilm-l6-v2`) updates an existing memory instead of adding one.
pub fn duplicate_similarity(model: &str) -> f32 {
    if model.strip_prefix("local:") == Some(crate::config::GRANITE_LOCAL_EMBEDDING_MODEL) {
        GRANITE_DUPLICATE_SIMILARITY
    } else {
        DUPLICATE_SIMILARITY
    }
}
/// The start of the category that marks a memory as one agent's own (`agent:NAME`).
pub const AGENT_CATEGORY_PREFIX: &str = "agent:";

/// The category of the memories the agent `name` keeps to itself.
pub fn agent_category(name: &str) -> String {
    format!("{AGENT_CATEGORY_PREFIX}{name}")
}

/// Which memories a backend sees and merges into.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scope {
    /// Every memory: the user's view (the HTTP API, `aria tools`), as before scopes existed.
    #[default]
    All,
    /// The shared pool of an agent whose profile says `memory = "shared"` (or that has no
    /// profile): every memory without an `agent:` category.
    Shared,
    /// The memories of an agent whose profile says `memory = "own"`: those in its category
    /// (`agent:NAME`), which it adds to everything it stores.
    Own(String),
}

impl Scope {
    /// Narrows a search's filter to the scope.
    fn narrow(&self, filter: &mut MemoryFilter) {
        match self {
            Scope::All => {}
            Scope::Shared => {
                filter.without_category_prefix = Some(AGENT_CATEGORY_PREFIX.to_owned());
            }
            Scope::Own(name) => filter.categories = vec![agent_category(name)],
        }
    }

    /// Whether a memory with these categories is in the scope (as [`Scope::narrow`]).
    fn holds(&self, categories: &[String]) -> bool {
        match self {
            Scope::All => true,
            Scope::Shared => !categories.iter().any(|c| c.starts_with(AGENT_CATEGORY_PREFIX)),
            Scope::Own(name) => categories.contains(&agent_category(name)),
        }
    }

    /// The categories a new memory is stored with: an own scope adds its category; a scoped
    /// agent cannot file a memory under another agent's (nor the shared agent into one
    /// agent's pool, where it would vanish from its own view).
    fn categories(&self, mut categories: Vec<String>) -> Vec<String> {
        if *self == Scope::All {
            return categories;
        }
        categories.retain(|c| !c.starts_with(AGENT_CATEGORY_PREFIX));
        if let Scope::Own(name) = self {
            categories.push(agent_category(name));
        }
        categories
    }
}

/// Memory backed by the store, with an optional embedder (without one, search is BM25 only and
/// duplicates are found by their normalised text).
#[derive(Debug, Clone)]
pub struct StoreMemory {
    store: Arc<Store>,
    embedder: Option<Arc<dyn Embedder>>,
    scope: Scope,
}

impl StoreMemory {
    /// An unscoped backend ([`Scope::All`]): it sees every memory.
    pub fn new(store: Arc<Store>, embedder: Option<Arc<dyn Embedder>>) -> Self {
        StoreMemory { store, embedder, scope: Scope::All }
    }

    /// The backend of an agent: `Some(name)` for a profile with its own memory
    /// ([`Scope::Own`]), `None` for one that shares the pool ([`Scope::Shared`]).
    // Until `app::agent_parts` builds the agent's backend with it.
    pub fn for_agent(self, own: Option<&str>) -> Self {
        let scope = own.map_or(Scope::Shared, |name| Scope::Own(name.to_owned()));
        StoreMemory { scope, ..self }
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

    /// The vectors of `text`'s passages (one for a text the embedder takes whole), with the
    /// embedder's model id; `None` without an embedder, and for a `private` text when the
    /// embedder is not on this machine ([`aria_api::may_embed`]: it is found by its words).
    async fn embed_passages(
        &self,
        text: &str,
        private: bool,
    ) -> Result<Option<(String, Vec<Vec<f32>>)>, MemoryError> {
        let Some(embedder) = &self.embedder else { return Ok(None) };
        if !aria_api::may_embed(embedder.as_ref(), private) {
            return Ok(None);
        }
        let mut grouped = embedder
            .embed_passages(&[text.to_owned()])
            .await
            .map_err(|e| MemoryError::Embed(e.to_string()))?;
        let vectors = grouped
            .pop()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| MemoryError::Embed("the embedder returned no vector".into()))?;
        Ok(Some((embedder.model_id().to_owned(), vectors)))
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
        .is_ok_and(|entry| entry.files_present(&config.provider.models_dir))
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

/// The store's form of a memory the agent keeps.
fn store_new(memory: NewMemory, verified: bool) -> aria_store::NewMemory {
    aria_store::NewMemory {
        id: None,
        content: memory.content,
        kind: kind_to_store(memory.kind),
        categories: memory.categories,
        importance: memory.importance.clamp(0.0, 1.0) as f32,
        confidence: memory.confidence.clamp(0.0, 1.0) as f32,
        verified,
        private: memory.private,
        unconfirmed: memory.unconfirmed,
        provenance: aria_store::Provenance {
            conversation_id: memory.provenance.conversation_id,
            message_ids: memory.provenance.message_ids,
            extracted_at: memory.provenance.extracted_at,
            extracted_by: memory.provenance.model,
        },
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
            self.scope.narrow(&mut search.filter);
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
                        && !m.unconfirmed
                        && self.scope.holds(&m.categories)
                })
                .collect();
            profile.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
            profile.truncate(PROFILE_MAX);
            Ok(profile.into_iter().map(|m| hit(m, 0.0)).collect())
        })
    }

    fn remember(&self, memory: NewMemory) -> MemoryFuture<'_, Stored> {
        Box::pin(async move {
            let mut memory = memory;
            memory.categories = self.scope.categories(std::mem::take(&mut memory.categories));
            if memory.content.trim().is_empty() {
                return Err(MemoryError::Invalid("a memory cannot be empty".into()));
            }
            if let Some(why) = aria_core::instructs_assistant(&memory.content) {
                return Err(MemoryError::Invalid(format!(
                    "this is not kept as a memory: {why}; how ARIA asks for approval is a \
                     setting (approval mode, [preapprove]), never a memory"
                )));
            }
            let embedded = self.embed_passages(&memory.content, memory.private).await?;
            let passages =
                embedded.as_ref().map(|(model, vectors)| aria_store::Passages { model, vectors });
            // A text of one passage is compared by its vector; a longer one (a document) only
            // by its words: the first passage of a long text is not the text.
            let embedding = embedded.as_ref().and_then(|(model, vectors)| match &vectors[..] {
                [one] => Some(Embedding { model, vector: one.as_slice() }),
                _ => None,
            });
            let session = memory.provenance.session_id.clone();
            let session = session.as_deref();
            // The user's own words (the HTTP API, the web page) are theirs and verified; the
            // model's `memory_store` calls are the agent's; extraction is the system's.
            let (actor, verified) = match memory.provenance.source.as_str() {
                "user" => ("user", true),
                "tool" => ("agent", false),
                _ => ("system", false),
            };
            let by = Writer { actor, session_id: session };
            // Only a duplicate in the scope is merged into: another agent's memory (or, for an
            // agent with its own memory, a shared one) is left alone and a new one stored.
            // A memory waiting for confirmation never rewrites a confirmed one: it merges only
            // into another unconfirmed memory, and the same words as a confirmed one change
            // nothing.
            let mut live = MemoryFilter {
                statuses: vec![MemoryStatus::Active, MemoryStatus::Archived],
                unconfirmed: memory.unconfirmed,
                ..MemoryFilter::default()
            };
            self.scope.narrow(&mut live);
            let bar =
                embedded.as_ref().map_or(DUPLICATE_SIMILARITY, |(m, _)| duplicate_similarity(m));
            let duplicate = self
                .store
                .memory_find_duplicate_in(&memory.content, embedding, bar, &live)
                .map_err(store_error)?
                .filter(|d| self.scope.holds(&d.memory.categories));
            if let Some(dup) = duplicate {
                let old = dup.memory;
                if memory.unconfirmed && !old.unconfirmed {
                    if aria_store::normalize_text(&old.content)
                        == aria_store::normalize_text(&memory.content)
                    {
                        return Ok(Stored::Updated(old.id));
                    }
                    let new = store_new(memory, verified);
                    let stored =
                        self.store.memory_insert(&new, passages, by).map_err(store_error)?;
                    return Ok(Stored::Inserted(stored.id));
                }
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
                let vectors = passages.filter(|_| update.content.is_some());
                let updated =
                    self.store.memory_update(&old.id, &update, vectors, by).map_err(store_error)?;
                return Ok(Stored::Updated(updated.id));
            }
            let new = store_new(memory, verified);
            let stored = self.store.memory_insert(&new, passages, by).map_err(store_error)?;
            Ok(Stored::Inserted(stored.id))
        })
    }
}

#[cfg(test)]
mod tests {
    use aria_api::{EmbedError, NoRedact};
    use futures::future::BoxFuture;

    use super::*;

    /// Bag-of-words vectors ([`aria_testkit::toy_embedding`]): texts sharing words are close.
    #[derive(Debug)]
    struct Toy;

    impl Embedder for Toy {
        fn model_id(&self) -> &str {
            "test:toy"
        }
        fn dims(&self) -> usize {
            64
        }
        fn embed(&self, texts: &[String]) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
            let out = texts.iter().map(|t| aria_testkit::toy_embedding(t, 64)).collect();
            Box::pin(async move { Ok(out) })
        }
    }

    fn backends() -> (Arc<Store>, StoreMemory) {
        let store = Arc::new(Store::open_in_memory(Arc::new(NoRedact)).unwrap());
        let all = StoreMemory::new(store.clone(), Some(Arc::new(Toy)));
        (store, all)
    }

    fn new(content: &str, categories: &[&str]) -> NewMemory {
        NewMemory {
            content: content.to_owned(),
            kind: MemoryKind::Fact,
            categories: categories.iter().map(|c| (*c).to_owned()).collect(),
            importance: 0.5,
            confidence: 0.9,
            private: false,
            unconfirmed: false,
            provenance: aria_core::Provenance {
                source: "tool".to_owned(),
                ..aria_core::Provenance::default()
            },
        }
    }

    fn id(stored: Stored) -> String {
        match stored {
            Stored::Inserted(id) | Stored::Updated(id) => id,
        }
    }

    async fn found(memory: &StoreMemory, query: &str) -> Vec<String> {
        let scope = SearchScope { limit: 10, private: true };
        let mut ids: Vec<String> =
            memory.search(query, scope).await.unwrap().into_iter().map(|h| h.id).collect();
        ids.sort();
        ids
    }

    #[tokio::test]
    async fn memory_of_an_own_scoped_agent_carries_its_category_and_is_its_alone() {
        let (store, all) = backends();
        let poet = all.clone().for_agent(Some("poet"));
        let shared = all.clone().for_agent(None);
        assert_eq!(poet.scope, Scope::Own("poet".into()));
        // A scoped agent cannot file under another agent's category.
        let own = id(poet
            .remember(new("the poet writes haiku at dawn", &["agent:critic"]))
            .await
            .unwrap());
        assert_eq!(
            store.memory_get(&own).unwrap().unwrap().categories,
            vec!["agent:poet".to_owned()]
        );
        let common = id(shared.remember(new("the user writes haiku too", &[])).await.unwrap());
        assert!(store.memory_get(&common).unwrap().unwrap().categories.is_empty());
        assert_eq!(found(&poet, "haiku").await, vec![own.clone()]);
        assert_eq!(found(&shared, "haiku").await, vec![common.clone()]);
        let mut both = vec![own.clone(), common.clone()];
        both.sort();
        assert_eq!(found(&all, "haiku").await, both, "the unscoped backend sees everything");
        // Another agent with its own memory sees neither.
        assert!(found(&all.clone().for_agent(Some("critic")), "haiku").await.is_empty());
    }

    /// [`Toy`], but running on this machine.
    #[derive(Debug)]
    struct LocalToy;

    impl Embedder for LocalToy {
        fn model_id(&self) -> &str {
            "test:toy"
        }
        fn dims(&self) -> usize {
            64
        }
        fn on_this_machine(&self) -> bool {
            true
        }
        fn embed(&self, texts: &[String]) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
            Toy.embed(texts)
        }
    }

    #[tokio::test]
    async fn a_private_memory_is_embedded_only_on_this_machine() {
        let (store, remote) = backends();
        let private = NewMemory { private: true, ..new("the safe code is 0815", &[]) };
        let secret = id(remote.remember(private.clone()).await.unwrap());
        let open = id(remote.remember(new("the user likes green tea", &[])).await.unwrap());
        let missing: Vec<String> = store
            .memory_missing_embeddings("test:toy", 10)
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(missing, vec![secret.clone()], "the remote embedder got only the public one");
        assert_ne!(open, secret);
        // Still found, by its words.
        assert!(found(&remote, "safe code").await.contains(&secret));
        let local = StoreMemory::new(store.clone(), Some(Arc::new(LocalToy)));
        let mine = id(local
            .remember(NewMemory { private: true, ..new("my PIN is 4711", &[]) })
            .await
            .unwrap());
        let missing = store.memory_missing_embeddings("test:toy", 10).unwrap();
        assert!(missing.iter().all(|(id, _)| *id != mine), "embedded on this machine");
    }

    #[tokio::test]
    async fn the_profile_is_scoped_like_search() {
        let (_store, all) = backends();
        let poet = all.clone().for_agent(Some("poet"));
        let shared = all.clone().for_agent(None);
        let mine = id(poet.remember(new("the user likes sonnets", &["profile"])).await.unwrap());
        let theirs =
            id(shared.remember(new("the user lives in Lyon", &["profile"])).await.unwrap());
        let ids = |hits: Vec<MemoryHit>| hits.into_iter().map(|h| h.id).collect::<Vec<_>>();
        assert_eq!(ids(poet.profile(true).await.unwrap()), vec![mine.clone()]);
        assert_eq!(ids(shared.profile(true).await.unwrap()), vec![theirs.clone()]);
        assert_eq!(all.profile(true).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_duplicate_in_another_scope_is_not_merged_into() {
        let (store, all) = backends();
        let poet = all.clone().for_agent(Some("poet"));
        let critic = all.clone().for_agent(Some("critic"));
        let shared = all.clone().for_agent(None);
        let text = "the deadline for the anthology is friday";
        let common = shared.remember(new(text, &[])).await.unwrap();
        assert!(matches!(common, Stored::Inserted(_)));
        // The same words from the poet: a memory of its own, the shared one untouched.
        let Stored::Inserted(own) = poet.remember(new(text, &[])).await.unwrap() else {
            panic!("merged into the shared memory")
        };
        assert_ne!(own, id(common.clone()));
        assert!(store.memory_get(&id(common.clone())).unwrap().unwrap().categories.is_empty());
        // Nor into another agent's, nor does the shared pool merge into the poet's.
        assert!(matches!(critic.remember(new(text, &[])).await.unwrap(), Stored::Inserted(_)));
        let similar = "The deadline for the anthology is Friday!";
        assert_eq!(shared.remember(new(similar, &[])).await.unwrap(), Stored::Updated(id(common)));
        // Its own duplicate is merged into, by text or by vector.
        assert_eq!(
            poet.remember(new(similar, &["poems"])).await.unwrap(),
            Stored::Updated(own.clone())
        );
        let close = "the deadline for the anthology is on friday";
        assert_eq!(poet.remember(new(close, &[])).await.unwrap(), Stored::Updated(own.clone()));
        let got = store.memory_get(&own).unwrap().unwrap();
        assert_eq!(got.categories, vec!["agent:poet".to_owned(), "poems".to_owned()]);
    }
}
