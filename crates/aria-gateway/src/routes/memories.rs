//! Long-term memories: list, search, remember, read, edit, forget.
//!
//! The same store calls as `aria memories`: every write is the user's ([`Writer::USER`]) and
//! the store audits it in the write's own transaction (`memory.store`, `memory.update`,
//! `memory.forget`). A new memory goes through the agent's [`aria_core::MemoryBackend`] when
//! the daemon has one, so it is embedded (vector search finds it) and a memory that says the
//! same thing is updated instead of duplicated. Search is the store's own ranking, with the
//! query embedded by the daemon's embedder (loaded once); without one it is BM25 only.
//!
//! Forgotten memories keep their row (the audit log refers to them) but are gone for the API:
//! reading, editing or forgetting one again is a 404.

use std::str::FromStr;
use std::sync::Arc;

use aria_store::{
    Embedding, Memory, MemoryKind, MemoryQuery, MemoryStatus, MemoryUpdate, SearchMode, StoreError,
    Writer,
};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{
    AdditionalProperties, AllOfBuilder, AnyOfBuilder, ObjectBuilder, OneOfBuilder, Schema,
    SchemaType, Type,
};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::resources::blocking;
use crate::Gateway;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery, Paging};

pub fn routes() -> OpenApiRouter<Arc<Gateway>> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(search))
        .routes(routes!(get_one, edit, forget))
        .routes(routes!(confirm))
}

/// The statuses a listing shows: everything but forgotten memories (as `aria memories list`).
const LISTED: &[MemoryStatus] = &[MemoryStatus::Active, MemoryStatus::Archived];
/// Rows read per query when a listing filters by kind.
const SCAN: usize = 500;
/// Search results by default, and at most.
const SEARCH_DEFAULT: u32 = 10;
const SEARCH_MAX: u32 = 100;

/// One memory as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemoryBody {
    pub id: String,
    pub content: String,
    /// `fact`, `preference`, `event`, `skill` or `document`.
    pub kind: String,
    pub categories: Vec<String>,
    /// 0 to 1.
    pub importance: f32,
    /// 0 to 1.
    pub confidence: f32,
    /// `active` or `archived` (forgotten memories are not shown).
    pub status: String,
    /// A person wrote or confirmed it.
    pub verified: bool,
    /// Never sent to a model off this machine.
    pub private: bool,
    /// Stored by the model after it read outside text: never recalled into a prompt until the
    /// user confirms it (`POST /api/v1/memories/{id}/confirm`).
    pub unconfirmed: bool,
    pub access_count: u64,
    pub accessed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Where it came from: `{conversation_id, message_ids, extracted_at, extracted_by}`.
    #[schema(value_type = Object)]
    pub provenance: Value,
}

impl From<Memory> for MemoryBody {
    fn from(m: Memory) -> MemoryBody {
        MemoryBody {
            provenance: serde_json::to_value(&m.provenance).unwrap_or_default(),
            id: m.id,
            content: m.content,
            kind: m.kind.as_str().to_owned(),
            categories: m.categories,
            importance: m.importance,
            confidence: m.confidence,
            status: m.status.as_str().to_owned(),
            verified: m.verified,
            private: m.private,
            unconfirmed: m.unconfirmed,
            access_count: m.access_count,
            accessed_at: m.accessed_at,
            created_at: m.created_at,
            updated_at: m.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryPage {
    pub items: Vec<MemoryBody>,
    pub limit: usize,
    pub offset: usize,
    pub total: u64,
}

fn unknown(id: &str) -> ApiError {
    ApiError::not_found(
        format!("no memory {id}"),
        "list them with GET /api/v1/memories, or search with GET /api/v1/memories/search?q=TEXT",
    )
}

/// A memory the API can show: it exists and was not forgotten.
fn live(gw: &Gateway, id: &str) -> ApiResult<Memory> {
    match gw.store.memory_get(id)? {
        Some(m) if m.status != MemoryStatus::Deleted => Ok(m),
        Some(_) => Err(ApiError::not_found(
            format!("memory {id} was forgotten"),
            "list the memories ARIA still has with GET /api/v1/memories",
        )),
        None => Err(unknown(id)),
    }
}

/// A store error of a memory write: unknown ids are 404, rejected content 400.
fn write_error(e: StoreError, id: &str) -> ApiError {
    match e {
        StoreError::UnknownMemory(_) => unknown(id),
        StoreError::InvalidMemory(why) => {
            ApiError::bad_request(format!("the memory was not stored: {why}"), "fix `content`")
        }
        other => ApiError::from(other),
    }
}

fn parse_kind(kind: &str) -> ApiResult<MemoryKind> {
    MemoryKind::from_str(kind.trim()).map_err(|e| {
        ApiError::bad_request(e, "`kind` is one of fact, preference, event, skill, document")
    })
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    #[param(schema_with = kind_filter_schema)]
    pub kind: Option<String>,
    /// How many items (1–500, default 50; more is read as 500).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub limit: Option<u32>,
    /// How many to skip (default 0).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub offset: Option<u32>,
}

/// The `kind` filter of a listing: a kind, or empty for every kind.
fn kind_filter_schema() -> Schema {
    let kinds = MemoryKind::ALL.iter().map(|k| k.as_str());
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(kinds.chain([""])))
        .description(Some(
            "Only memories of this kind: `fact`, `preference`, `event`, `skill` or `document` \
             (empty: every kind).",
        ))
        .build()
        .into()
}

/// Memories ARIA has (active and archived), most recently updated first.
#[utoipa::path(get, path = "/api/v1/memories", tag = "memories", params(ListQuery),
    responses((status = 200, body = MemoryPage), (status = 400, body = ErrorBody)))]
async fn list(
    State(gw): State<Arc<Gateway>>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<MemoryPage>> {
    let paging = Paging { limit: query.limit, offset: query.offset };
    let (limit, offset) = (paging.limit(), paging.offset());
    let kind = query.kind.as_deref().filter(|k| !k.trim().is_empty()).map(parse_kind);
    let (items, total) = match kind.transpose()? {
        None => {
            let items = gw.store.memory_list(LISTED, limit, offset)?;
            let (active, archived, _) = gw.store.memory_counts()?;
            (items, active + archived)
        }
        Some(kind) => {
            let store = gw.store.clone();
            blocking("listing memories", move || Ok(of_kind(&store, kind, limit, offset)?)).await?
        }
    };
    Ok(Json(MemoryPage {
        items: items.into_iter().map(MemoryBody::from).collect(),
        limit,
        offset,
        total,
    }))
}

/// One page of the listed memories of `kind`, and how many there are. The store lists by
/// status only, so this reads the listing through once (in chunks) and counts as it goes.
fn of_kind(
    store: &aria_store::Store,
    kind: MemoryKind,
    limit: usize,
    offset: usize,
) -> Result<(Vec<Memory>, u64), StoreError> {
    let mut page = Vec::new();
    let mut seen = 0usize;
    let mut from = 0usize;
    loop {
        let chunk = store.memory_list(LISTED, SCAN, from)?;
        let read = chunk.len();
        for m in chunk.into_iter().filter(|m| m.kind == kind) {
            if seen >= offset && page.len() < limit {
                page.push(m);
            }
            seen += 1;
        }
        if read < SCAN {
            return Ok((page, u64::try_from(seen).unwrap_or(u64::MAX)));
        }
        from += read;
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// What to look for (not blank).
    #[param(
        required = true,
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub q: Option<String>,
    /// How many results (1–100, default 10; more is read as 100).
    #[param(value_type = Option<u64>, maximum = 4294967295u32)]
    pub limit: Option<u32>,
    /// Which retrievers rank: `hybrid` (default: BM25 and vectors, fused), `bm25` or `vector`.
    #[param(inline)]
    pub retriever: Option<Retriever>,
}

/// The retrievers a search ranks with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Retriever {
    Hybrid,
    Bm25,
    Vector,
}

/// One search result.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchHit {
    pub memory: MemoryBody,
    /// The fused score (BM25 and vector scores standardised and weighted, or reciprocal rank
    /// fusion for short lists): higher is better; only the order matters.
    pub score: f64,
    /// Cosine similarity of the memory's vector to the query's, when vector search found it.
    pub similarity: Option<f64>,
    /// Whether the full-text search matched the query's words.
    pub text_match: bool,
    /// Its rank in the BM25 list (from 1), when it was there.
    pub text_rank: Option<usize>,
    /// Its rank in the vector list (from 1), when it was there.
    pub vector_rank: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults {
    /// Best first.
    pub items: Vec<SearchHit>,
    /// How many ranked lists were fused (1 or 2): a hit's relevance from its ranks is a share
    /// of what being first in all of them gives.
    pub lists: usize,
}

/// Hybrid search of the active memories (BM25 and, when an embedder is configured, vectors),
/// private ones included: the results go to the user, not to a model. Ranked exactly as
/// `aria memories search` ranks (which asks a running daemon through this endpoint).
#[utoipa::path(get, path = "/api/v1/memories/search", tag = "memories", params(SearchQuery),
    responses((status = 200, body = SearchResults), (status = 400, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
async fn search(
    State(gw): State<Arc<Gateway>>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> ApiResult<Json<SearchResults>> {
    let Some(q) = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) else {
        return Err(ApiError::bad_request(
            "nothing to search for",
            "say what to look for in `q`, e.g. GET /api/v1/memories/search?q=editor",
        ));
    };
    let limit = query.limit.unwrap_or(SEARCH_DEFAULT).clamp(1, SEARCH_MAX) as usize;
    let mode = match query.retriever {
        None | Some(Retriever::Hybrid) => SearchMode::Hybrid,
        Some(Retriever::Bm25) => SearchMode::Text,
        Some(Retriever::Vector) => SearchMode::Vector,
    };
    // The query's vector, from the embedder the daemon keeps loaded: no per-search model load.
    let embedder = gw.services.embedder.clone().filter(|_| mode != SearchMode::Text);
    // BM25 needs no vector: on another core while the query is embedded, not after it.
    let text = (mode == SearchMode::Hybrid && embedder.is_some()).then(|| {
        let (store, q) = (gw.store.clone(), q.to_owned());
        tokio::task::spawn_blocking(move || {
            store.memory_text_candidates(&user_view(MemoryQuery::new(&q, None, limit)))
        })
    });
    let vector = match &embedder {
        Some(embedder) => match embedder.embed(&[q.to_owned()]).await {
            Ok(mut vectors) => vectors.pop(),
            Err(e) if mode == SearchMode::Vector => {
                return Err(memory_error(aria_core::MemoryError::Embed(e.to_string())));
            }
            Err(e) => {
                tracing::warn!("memory search falls back to BM25 only: {e}");
                None
            }
        },
        None if mode == SearchMode::Vector => {
            return Err(ApiError::bad_request(
                "retriever=vector needs an embedder, and this daemon has none",
                "set [memory] embedder, or search with retriever=hybrid or bm25",
            ));
        }
        None => None,
    };
    // Candidates that failed (or a task that did not finish) are looked for again below, where
    // an error is reported as any search error is.
    let text = match text {
        Some(task) => task.await.ok().and_then(Result::ok),
        None => None,
    };
    let q = q.to_owned();
    let store = gw.store.clone();
    let (hits, lists) = blocking("searching memories", move || {
        let embedding = match (&embedder, &vector) {
            (Some(e), Some(v)) => Some(Embedding { model: e.model_id(), vector: v }),
            _ => None,
        };
        let mut search = user_view(MemoryQuery::new(&q, embedding, limit));
        search.mode = mode;
        let lists = search.lists();
        let hits = match text {
            Some(text) => store.memory_search_with_text(&search, text)?,
            None => store.memory_search(&search)?,
        };
        Ok((hits, lists))
    })
    .await?;
    // Counting the accesses is a write: done after the answer, not before it.
    let ids: Vec<String> = hits.iter().map(|h| h.memory.id.clone()).collect();
    let store = gw.store.clone();
    tokio::task::spawn_blocking(move || {
        if let Err(e) = store.memory_touch(&ids) {
            tracing::warn!("could not record memory access: {e}");
        }
    });
    let items = hits
        .into_iter()
        .map(|h| SearchHit {
            text_match: h.text_rank.is_some(),
            text_rank: h.text_rank,
            vector_rank: h.vector_rank,
            similarity: h.similarity.map(f64::from),
            score: h.score,
            memory: h.memory.into(),
        })
        .collect();
    Ok(Json(SearchResults { items, lists }))
}

fn memory_error(e: aria_core::MemoryError) -> ApiError {
    match e {
        aria_core::MemoryError::Invalid(why) => ApiError::bad_request(why, "fix `content`"),
        aria_core::MemoryError::Embed(why) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            format!("the memory could not be embedded: {why}"),
            "check that the embedding model of `[memory] embedder` is reachable (`aria doctor`), \
             then try again",
        ),
        aria_core::MemoryError::Store(why) => ApiError::internal("the memory store failed", why),
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"content": "The user prefers short answers.", "kind": "preference"}))]
pub struct NewMemoryBody {
    /// What to remember (not blank).
    #[schema(
        min_length = 1,
        pattern = r"[^\t\n\x0B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub content: String,
    /// `fact` (default), `preference`, `event`, `skill` or `document`.
    #[serde(default)]
    #[schema(schema_with = crate::openapi::memory_kind)]
    pub kind: Option<String>,
    /// Never send it to a model off this machine (default false).
    #[serde(default)]
    pub private: bool,
}

/// Remembers something. 201 with the new memory; 200 with the existing one when ARIA already
/// had a memory that says the same thing (it is updated, not duplicated).
#[utoipa::path(post, path = "/api/v1/memories", tag = "memories", request_body = NewMemoryBody,
    responses((status = 201, body = MemoryBody), (status = 200, body = MemoryBody),
              (status = 400, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn create(
    State(gw): State<Arc<Gateway>>,
    ApiJson(body): ApiJson<NewMemoryBody>,
) -> ApiResult<Response> {
    let content = body.content.trim().to_owned();
    if content.is_empty() {
        return Err(ApiError::bad_request(
            "the memory is empty",
            "say what to remember in `content`",
        ));
    }
    let kind = body.kind.as_deref().map(parse_kind).transpose()?.unwrap_or(MemoryKind::Fact);
    let (id, created) = match &gw.services.memory {
        Some(memory) => {
            let new = aria_core::NewMemory {
                content,
                kind: core_kind(kind),
                categories: Vec::new(),
                importance: 0.5,
                confidence: 1.0,
                private: body.private,
                unconfirmed: false,
                provenance: aria_core::Provenance {
                    source: "user".to_owned(),
                    ..aria_core::Provenance::default()
                },
            };
            match memory.remember(new).await.map_err(memory_error)? {
                aria_core::Stored::Inserted(id) => (id, true),
                aria_core::Stored::Updated(id) => (id, false),
            }
        }
        None => {
            let mut new = aria_store::NewMemory::new(content);
            new.kind = kind;
            new.private = body.private;
            new.verified = true; // a person typed it
            let m = gw
                .store
                .memory_insert(&new, None, Writer::USER)
                .map_err(|e| write_error(e, "(new)"))?;
            (m.id, true)
        }
    };
    let m = gw.store.memory_get(&id)?.ok_or_else(|| unknown(&id))?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(MemoryBody::from(m))).into_response())
}

fn core_kind(kind: MemoryKind) -> aria_core::MemoryKind {
    match kind {
        MemoryKind::Fact => aria_core::MemoryKind::Fact,
        MemoryKind::Preference => aria_core::MemoryKind::Preference,
        MemoryKind::Event => aria_core::MemoryKind::Event,
        MemoryKind::Skill => aria_core::MemoryKind::Skill,
        MemoryKind::Document => aria_core::MemoryKind::Document,
    }
}

/// One memory.
#[utoipa::path(get, path = "/api/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "memory id")),
    responses((status = 200, body = MemoryBody), (status = 404, body = ErrorBody)))]
async fn get_one(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<MemoryBody>> {
    Ok(Json(live(&gw, &id)?.into()))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditMemory {
    /// The new text.
    #[serde(default)]
    pub content: Option<String>,
    /// The new kind: `fact`, `preference`, `event`, `skill` or `document`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Whether it may be sent to a model off this machine (`true`: never).
    #[serde(default)]
    pub private: Option<bool>,
}

/// The schema of [`EditMemory`]: the three optional fields (`null` is the same as leaving one
/// out), at least one of them given. Written by hand because the derive cannot say "at least
/// one".
impl utoipa::PartialSchema for EditMemory {
    fn schema() -> RefOr<Schema> {
        let nullable = |t: Type| SchemaType::from_iter([t, Type::Null]);
        let not_blank = crate::openapi::not_blank_text();
        let fields = ObjectBuilder::new()
            .property(
                "content",
                OneOfBuilder::new()
                    .item(not_blank.clone())
                    .item(ObjectBuilder::new().schema_type(Type::Null))
                    .description(Some("The new text (not blank).")),
            )
            .property("kind", crate::openapi::memory_kind())
            .property(
                "private",
                ObjectBuilder::new().schema_type(nullable(Type::Boolean)).description(Some(
                    "Whether it may be sent to a model off this machine (`true`: never).",
                )),
            )
            .additional_properties(Some(AdditionalProperties::FreeForm(false)));
        let given = |name: &str, schema: Schema| {
            ObjectBuilder::new().property(name, schema).required(name).build()
        };
        let one_given = AnyOfBuilder::new()
            .item(given("content", not_blank))
            .item(given("kind", ObjectBuilder::new().schema_type(Type::String).build().into()))
            .item(given("private", ObjectBuilder::new().schema_type(Type::Boolean).build().into()));
        AllOfBuilder::new()
            .item(fields)
            .item(one_given)
            .description(Some(
                "Fields left out (or `null`) stay as they are; at least one is given.",
            ))
            .into()
    }
}

impl ToSchema for EditMemory {}

/// Edits a memory's text, kind or privacy. Fields left out stay as they are; a body that
/// changes nothing answers the memory as it is and writes nothing. A new text is embedded again
/// (with no embedder configured its old vectors are dropped until `aria memories reindex`).
#[utoipa::path(patch, path = "/api/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "memory id")), request_body = EditMemory,
    responses((status = 200, body = MemoryBody), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
async fn edit(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<EditMemory>,
) -> ApiResult<Json<MemoryBody>> {
    if body.content.is_none() && body.kind.is_none() && body.private.is_none() {
        return Err(ApiError::bad_request(
            "the edit changes nothing",
            "send at least one of `content`, `kind` or `private`",
        ));
    }
    let content = body.content.map(|c| c.trim().to_owned());
    if content.as_deref().is_some_and(str::is_empty) {
        return Err(ApiError::bad_request(
            "the new text is empty",
            "send the new text in `content`, or forget the memory with DELETE",
        ));
    }
    let kind = body.kind.as_deref().map(parse_kind).transpose()?;
    let old = live(&gw, &id)?;
    let update = MemoryUpdate {
        content: content.filter(|c| *c != old.content),
        kind: kind.filter(|k| *k != old.kind),
        private: body.private.filter(|p| *p != old.private),
        ..MemoryUpdate::default()
    };
    if update == MemoryUpdate::default() {
        return Ok(Json(old.into()));
    }
    // A new text gets a new vector now when an embedder is configured, so similarity search
    // finds it at once; without one it waits for `aria memories reindex`.
    // A long text gets one vector per passage.
    // A private memory is embedded only on this machine; elsewhere it is found by its words.
    let private = update.private.unwrap_or(old.private);
    let vectors = match (&update.content, &gw.services.embedder) {
        (Some(text), Some(embedder)) if aria_api::may_embed(embedder.as_ref(), private) => embedder
            .embed_passages(std::slice::from_ref(text))
            .await
            .map_err(|e| tracing::warn!("the edited memory keeps no vector until reindexed: {e}"))
            .ok()
            .and_then(|mut v| v.pop())
            .map(|v| (embedder.model_id().to_owned(), v)),
        _ => None,
    };
    let embedding =
        vectors.as_ref().map(|(model, vectors)| aria_store::Passages { model, vectors });
    let m = gw
        .store
        .memory_update(&id, &update, embedding, Writer::USER)
        .map_err(|e| write_error(e, &id))?;
    Ok(Json(m.into()))
}

/// Confirms a memory the model stored after reading outside text: from now on it may be
/// recalled into prompts. A memory that needs no confirmation is answered as it is.
#[utoipa::path(post, path = "/api/v1/memories/{id}/confirm", tag = "memories",
    params(("id" = String, Path, description = "memory id")),
    responses((status = 200, body = MemoryBody), (status = 404, body = ErrorBody)))]
async fn confirm(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<MemoryBody>> {
    let old = live(&gw, &id)?;
    if !old.unconfirmed {
        return Ok(Json(old.into()));
    }
    let update = MemoryUpdate { unconfirmed: Some(false), ..MemoryUpdate::default() };
    let m = gw
        .store
        .memory_update(&id, &update, None, Writer::USER)
        .map_err(|e| write_error(e, &id))?;
    Ok(Json(m.into()))
}

/// Forgets a memory: it is no longer recalled or listed (the audit log keeps its record).
#[utoipa::path(delete, path = "/api/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "memory id")),
    responses((status = 204, description = "forgotten"), (status = 404, body = ErrorBody)))]
async fn forget(
    State(gw): State<Arc<Gateway>>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    live(&gw, &id)?;
    gw.store.memory_forget(&id, Writer::USER).map_err(|e| write_error(e, &id))?;
    Ok(StatusCode::NO_CONTENT)
}

/// The user's own view of memory finds the memories waiting for their confirmation too (they
/// are marked `unconfirmed`); a model's recall never does.
fn user_view(mut query: MemoryQuery<'_>) -> MemoryQuery<'_> {
    query.filter.unconfirmed = true;
    query
}
