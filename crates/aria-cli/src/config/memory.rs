//! `[memory]`: which embedder long-term memory uses.
//!
//! ```toml
//! [memory]
//! embedder = "local"            # local (default), ollama, openai, or none (BM25 only)
//! embedding_model = "granite-embedding-30m-english"   # or all-minilm-l6-v2
//! embedding_base_url = "http://127.0.0.1:11434"   # ollama / openai only
//! embedding_dims = 768          # ollama / openai: needed for models ARIA does not know
//! embedding_batch = 64          # texts per embedding call
//! extract = true                # mine finished turns for memories (off in --dry-run/read_only)
//! vectors = "ram"               # ram (fastest search) or sqlite (a quarter of the memory)
//! recall_limit = 8              # at most this many memories recalled into one request
//! recall_min_similarity = 0.66  # a recalled memory's cosine similarity to the message
//! ```
//!
//! Automatic recall sends a memory with a request only when it is relevant: its vector at least
//! `recall_min_similarity` from the message's (or, with no vectors, a full-text match), at most
//! `recall_limit` of them, at most 2,000 tokens. The default floor depends on the embedder
//! (its scores for unrelated text differ): 0.66 for the embedded granite-embedding-30m-english
//! (it scores unrelated text up to about 0.64), 0.3 for the embedded all-MiniLM-L6-v2 and for
//! OpenAI's models, 0.5 for Ollama's (nomic-embed-text scores unrelated text around 0.4).
//!
//! Changing `embedding_model` (or moving from all-MiniLM-L6-v2, the default before granite)
//! leaves the stored memories without vectors of the new model until `aria memories reindex`
//! embeds them; until then search finds them by their words only.

use serde::{Deserialize, Serialize};

use super::{ConfigError, ProviderConfig};

#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemory {
    /// `local` (the embedded granite-embedding-30m-english; default), `ollama`, `openai` or
    /// `none`.
    pub embedder: Option<String>,
    /// The embedding model: a catalog name for `local`, the server's model name otherwise.
    pub embedding_model: Option<String>,
    /// The embedding server (default: the Ollama URL, or the OpenAI base URL).
    pub embedding_base_url: Option<String>,
    /// The model's vector length (known models are found without it).
    pub embedding_dims: Option<usize>,
    /// Texts per embedding call (default 64).
    pub embedding_batch: Option<usize>,
    /// Whether finished turns are mined for facts and preferences (default true).
    pub extract: Option<bool>,
    /// Where the exact vectors searched are kept: `ram` (default) or `sqlite`.
    pub vectors: Option<String>,
    /// The most memories recalled into one request (default 8).
    pub recall_limit: Option<usize>,
    /// The least cosine similarity of a recalled memory to the message (default per embedder).
    pub recall_min_similarity: Option<f64>,
}

/// The embedder memory uses.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EmbedderConfig {
    /// BM25 only: no vectors are made or searched.
    None,
    /// The embedded sentence embedder (a catalog name).
    Local {
        model: String,
    },
    Ollama {
        base_url: String,
        model: String,
        dims: usize,
    },
    #[serde(rename = "openai")]
    OpenAi {
        base_url: String,
        model: String,
        dims: usize,
    },
}

/// Resolved `[memory]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryConfig {
    pub embedder: EmbedderConfig,
    pub batch: usize,
    /// Memory extraction after each turn (never in `--dry-run` or `read_only` mode).
    pub extract: bool,
    /// Where the exact vectors used to rescore a search's candidates are kept.
    pub vectors: VectorResidence,
    /// The most memories recalled into one request.
    pub recall_limit: usize,
    /// The least cosine similarity of a recalled memory to the user's message.
    pub recall_min_similarity: f64,
}

/// `[memory] recall_limit` when it is not set.
pub const DEFAULT_RECALL_LIMIT: usize = 8;

/// `[memory] vectors`: every search first scans int8 codes held in memory, then rescores its
/// candidates with the exact vectors, kept either beside the codes or read back from the
/// database (about a quarter of the memory: ~43 MB instead of ~190 MB at 100,000 memories of
/// 384 dimensions, and a few milliseconds more per search).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VectorResidence {
    #[default]
    Ram,
    Sqlite,
}

/// The default embedded embedding model (a catalog name in `aria-local`).
pub const DEFAULT_LOCAL_EMBEDDING_MODEL: &str = GRANITE_LOCAL_EMBEDDING_MODEL;
/// granite-embedding-30m-english (a catalog name in `aria-local`): the default, with its own
/// recall floor.
pub const GRANITE_LOCAL_EMBEDDING_MODEL: &str = "granite-embedding-30m-english";
pub const DEFAULT_OLLAMA_EMBEDDING_MODEL: &str = "nomic-embed-text";
pub const DEFAULT_OPENAI_EMBEDDING_MODEL: &str = "text-embedding-3-small";

/// Vector lengths of well-known server embedding models.
fn known_dims(model: &str) -> Option<usize> {
    let base = model.split(':').next().unwrap_or(model);
    Some(match base {
        "nomic-embed-text" => 768,
        "mxbai-embed-large" => 1024,
        "all-minilm" => 384,
        "bge-m3" => 1024,
        "snowflake-arctic-embed" => 1024,
        "text-embedding-3-small" => 1536,
        "text-embedding-3-large" => 3072,
        "text-embedding-ada-002" => 1536,
        _ => return None,
    })
}

pub fn resolve_memory(
    raw: RawMemory,
    provider: &ProviderConfig,
) -> Result<MemoryConfig, ConfigError> {
    let batch = raw.embedding_batch.unwrap_or(64);
    if batch == 0 {
        return Err(ConfigError::Invalid("[memory] embedding_batch must be at least 1".into()));
    }
    let kind = raw.embedder.as_deref().unwrap_or("local");
    let server = |default_model: &str, default_url: &str| -> Result<_, ConfigError> {
        let model = raw.embedding_model.clone().unwrap_or_else(|| default_model.to_owned());
        let dims = match raw.embedding_dims.or_else(|| known_dims(&model)) {
            Some(0) => {
                return Err(ConfigError::Invalid(
                    "[memory] embedding_dims must be at least 1".into(),
                ));
            }
            Some(d) => d,
            None => {
                return Err(ConfigError::Invalid(format!(
                    "[memory] embedding_dims is needed for the embedding model `{model}` (ARIA \
                     does not know its vector length); set it to the model's dimension"
                )));
            }
        };
        let base_url = raw.embedding_base_url.clone().unwrap_or_else(|| default_url.to_owned());
        Ok((base_url, model, dims))
    };
    let embedder = match kind {
        "none" => EmbedderConfig::None,
        "local" => {
            if raw.embedding_base_url.is_some() || raw.embedding_dims.is_some() {
                return Err(ConfigError::Invalid(
                    "[memory] embedding_base_url and embedding_dims apply to ollama and openai \
                     embedders, not to the local one"
                        .into(),
                ));
            }
            EmbedderConfig::Local {
                model: raw
                    .embedding_model
                    .clone()
                    .unwrap_or_else(|| DEFAULT_LOCAL_EMBEDDING_MODEL.to_owned()),
            }
        }
        "ollama" => {
            let (base_url, model, dims) =
                server(DEFAULT_OLLAMA_EMBEDDING_MODEL, &provider.ollama_url)?;
            EmbedderConfig::Ollama { base_url, model, dims }
        }
        "openai" => {
            let default_url = if provider.name == "openai" {
                provider.base_url.clone()
            } else {
                super::DEFAULT_OPENAI_BASE_URL.to_owned()
            };
            let (base_url, model, dims) = server(DEFAULT_OPENAI_EMBEDDING_MODEL, &default_url)?;
            EmbedderConfig::OpenAi { base_url, model, dims }
        }
        other => {
            return Err(ConfigError::Invalid(format!(
                "[memory] embedder `{other}` is unknown; use local, ollama, openai or none"
            )));
        }
    };
    let vectors = match raw.vectors.as_deref() {
        None | Some("ram") => VectorResidence::Ram,
        Some("sqlite") => VectorResidence::Sqlite,
        Some(other) => {
            return Err(ConfigError::Invalid(format!(
                "[memory] vectors `{other}` is unknown; use ram (fastest search) or sqlite (less \
                 memory)"
            )));
        }
    };
    let recall_limit = raw.recall_limit.unwrap_or(DEFAULT_RECALL_LIMIT);
    if recall_limit == 0 || recall_limit > 50 {
        return Err(ConfigError::Invalid(format!(
            "[memory] recall_limit is {recall_limit}; use 1 to 50 (set extract = false and \
             remove memories to stop recall)"
        )));
    }
    let recall_min_similarity = match raw.recall_min_similarity {
        Some(s) if !(0.0..=1.0).contains(&s) => {
            return Err(ConfigError::Invalid(format!(
                "[memory] recall_min_similarity is {s}; use a cosine similarity from 0 to 1 \
                 (higher recalls fewer, closer memories)"
            )));
        }
        Some(s) => s,
        None => match embedder {
            EmbedderConfig::OpenAi { .. } => 0.3,
            EmbedderConfig::Ollama { .. } => 0.5,
            EmbedderConfig::Local { ref model } if model == GRANITE_LOCAL_EMBEDDING_MODEL => {
                aria_core::GRANITE_RECALL_MIN_SIMILARITY
            }
            EmbedderConfig::None | EmbedderConfig::Local { .. } => {
                aria_core::DEFAULT_RECALL_MIN_SIMILARITY
            }
        },
    };
    Ok(MemoryConfig {
        embedder,
        batch,
        extract: raw.extract.unwrap_or(true),
        vectors,
        recall_limit,
        recall_min_similarity,
    })
}
