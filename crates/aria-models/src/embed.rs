//! Embedders over HTTP: Ollama's `POST /api/embed` and the OpenAI-compatible
//! `POST /v1/embeddings`, behind [`aria_api::Embedder`].
//!
//! Requests carry a batch of texts (`"input": [...]`); a longer list is split into batches of
//! [`HttpEmbedderConfig::batch`] sent one after another. Answers are checked: one vector per text,
//! each of the configured length, OpenAI's `data` put back in `index` order. Errors are classified
//! with the same status mapping as the chat clients.

use std::sync::Arc;

use aria_api::{EmbedError, Embedder, ProviderError, check_embed_batch};
use futures::future::BoxFuture;
use reqwest::header::{ACCEPT, AUTHORIZATION};
use serde_json::{Value, json};

use crate::http::{self, Timeouts};
use crate::{ollama, openai};

/// Which API an [`HttpEmbedder`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedWire {
    /// `POST {base}/api/embed`, answer `{"embeddings": [[...], ...]}`.
    Ollama,
    /// `POST {base}/embeddings` (the base ends in `/v1`), answer
    /// `{"data": [{"index", "embedding"}, ...]}`.
    OpenAi,
}

/// Configuration of an [`HttpEmbedder`].
#[derive(Clone)]
pub struct HttpEmbedderConfig {
    pub wire: EmbedWire,
    /// Ollama: `http://127.0.0.1:11434`; OpenAI-compatible: `https://api.openai.com/v1`.
    pub base_url: String,
    pub model: String,
    /// The length of the model's vectors (e.g. 768 for `nomic-embed-text`, 1536 for
    /// `text-embedding-3-small`); an answer of another length is an error.
    pub dims: usize,
    /// Sent as `Authorization: Bearer …` when set. Never printed by `Debug`.
    pub api_key: Option<String>,
    /// Texts per request.
    pub batch: usize,
    pub timeouts: Timeouts,
}

impl std::fmt::Debug for HttpEmbedderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEmbedderConfig")
            .field("wire", &self.wire)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("dims", &self.dims)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl HttpEmbedderConfig {
    /// Defaults for everything but the wire, base URL, model and dimensions.
    pub fn new(wire: EmbedWire, base_url: &str, model: &str, dims: usize) -> Self {
        HttpEmbedderConfig {
            wire,
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            dims,
            api_key: None,
            batch: 64,
            timeouts: Timeouts::default(),
        }
    }
}

/// An embedder behind an HTTP API. Cheap to clone.
#[derive(Debug, Clone)]
pub struct HttpEmbedder {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: reqwest::Client,
    config: HttpEmbedderConfig,
    endpoint: String,
    model_id: String,
    locality: crate::locality::Locality,
}

impl HttpEmbedder {
    /// An embedder whose server is not judged: it counts as remote ([`HttpEmbedder::judged`]),
    /// so private memories are never sent to it.
    pub fn new(config: HttpEmbedderConfig) -> Result<Self, EmbedError> {
        Self::build(config, None)
    }

    /// An embedder whose server's locality is judged with `resolver` ([`crate::locality`]).
    pub fn judged(
        config: HttpEmbedderConfig,
        resolver: &dyn crate::locality::Resolve,
    ) -> Result<Self, EmbedError> {
        Self::build(config, Some(resolver))
    }

    /// Where the server runs.
    pub fn locality(&self) -> &crate::locality::Locality {
        &self.inner.locality
    }

    fn build(
        config: HttpEmbedderConfig,
        resolver: Option<&dyn crate::locality::Resolve>,
    ) -> Result<Self, EmbedError> {
        let example = match config.wire {
            EmbedWire::Ollama => ollama::OllamaConfig::DEFAULT_BASE_URL,
            EmbedWire::OpenAi => openai::OpenAiConfig::DEFAULT_BASE_URL,
        };
        let (base, url) = http::parse_base(&config.base_url, example).map_err(from_provider)?;
        if config.dims == 0 || config.batch == 0 || config.model.trim().is_empty() {
            return Err(EmbedError::Config {
                message: "an HTTP embedder needs a model name, dims > 0 and batch > 0".into(),
            });
        }
        let (client, locality) =
            http::client(&url, config.timeouts.connect, resolver).map_err(from_provider)?;
        let (endpoint, prefix) = match config.wire {
            EmbedWire::Ollama => (format!("{base}/api/embed"), "ollama"),
            EmbedWire::OpenAi => (format!("{base}/embeddings"), "openai"),
        };
        let model_id = format!("{prefix}:{}", config.model);
        let inner = Inner { client, config, endpoint, model_id, locality };
        Ok(HttpEmbedder { inner: Arc::new(inner) })
    }

    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }
}

impl Embedder for HttpEmbedder {
    fn model_id(&self) -> &str {
        &self.inner.model_id
    }

    fn dims(&self) -> usize {
        self.inner.config.dims
    }

    fn on_this_machine(&self) -> bool {
        self.inner.locality.is_local()
    }

    fn embed(&self, texts: &[String]) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        Box::pin(async move {
            let mut out = Vec::with_capacity(texts.len());
            for batch in texts.chunks(inner.config.batch) {
                let vectors = inner.embed_batch(batch).await?;
                check_embed_batch(batch.len(), inner.config.dims, &vectors).map_err(|e| {
                    EmbedError::Malformed {
                        message: format!(
                            "{} (model `{}`; set the embedder's dims to the model's vector length)",
                            e.to_string().trim_start_matches(
                                "the embedding provider sent an answer ARIA could not use: "
                            ),
                            inner.config.model
                        ),
                    }
                })?;
                out.extend(vectors);
            }
            Ok(out)
        })
    }
}

impl Inner {
    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let config = &self.config;
        let body = match config.wire {
            EmbedWire::Ollama => json!({"model": config.model, "input": texts, "truncate": true}),
            EmbedWire::OpenAi => {
                json!({"model": config.model, "input": texts, "encoding_format": "float"})
            }
        };
        let mut request =
            self.client.post(&self.endpoint).header(ACCEPT, "application/json").json(&body);
        if let Some(key) = &config.api_key {
            let value = http::secret_header(&format!("Bearer {key}")).map_err(from_provider)?;
            request = request.header(AUTHORIZATION, value);
        }
        let classify = match config.wire {
            EmbedWire::Ollama => ollama::wire::from_status,
            EmbedWire::OpenAi => openai::errors::from_status,
        };
        let answer = http::get_json(request, &self.endpoint, &config.timeouts, classify)
            .await
            .map_err(from_provider)?;
        match config.wire {
            EmbedWire::Ollama => parse_ollama(&answer),
            EmbedWire::OpenAi => parse_openai(&answer),
        }
    }
}

/// `{"embeddings": [[f, ...], ...]}`.
pub(crate) fn parse_ollama(answer: &Value) -> Result<Vec<Vec<f32>>, EmbedError> {
    let rows = answer.get("embeddings").and_then(Value::as_array).ok_or_else(|| {
        malformed(format!("no `embeddings` array in the answer: {}", preview(answer)))
    })?;
    rows.iter().map(vector).collect()
}

/// `{"data": [{"index": i, "embedding": [f, ...]}, ...]}`, in any order.
pub(crate) fn parse_openai(answer: &Value) -> Result<Vec<Vec<f32>>, EmbedError> {
    let data = answer
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(format!("no `data` array in the answer: {}", preview(answer))))?;
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; data.len()];
    for (position, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            None => position,
            Some(i) => i
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .filter(|i| *i < data.len())
                .ok_or_else(|| malformed(format!("bad `index` {i} in `data`")))?,
        };
        let embedding = item
            .get("embedding")
            .ok_or_else(|| malformed(format!("`data[{position}]` has no `embedding`")))?;
        if slots[index].replace(vector(embedding)?).is_some() {
            return Err(malformed(format!("`data` holds index {index} twice")));
        }
    }
    slots.into_iter().map(|v| v.ok_or_else(|| malformed("`data` skips an index".into()))).collect()
}

fn vector(value: &Value) -> Result<Vec<f32>, EmbedError> {
    let items = value
        .as_array()
        .ok_or_else(|| malformed(format!("an embedding is not an array: {}", preview(value))))?;
    items
        .iter()
        .map(|x| {
            x.as_f64().map(|f| f as f32).ok_or_else(|| {
                malformed(format!("an embedding holds a non-number: {}", preview(x)))
            })
        })
        .collect()
}

fn malformed(message: String) -> EmbedError {
    EmbedError::Malformed { message }
}

fn preview(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// The chat clients' classification, in the embedder's vocabulary.
fn from_provider(err: ProviderError) -> EmbedError {
    match err {
        ProviderError::Auth { message } => EmbedError::Auth { message },
        ProviderError::Network { endpoint, message } => EmbedError::Network { endpoint, message },
        ProviderError::Timeout { after } => EmbedError::Network {
            endpoint: "the embedding provider".into(),
            message: format!("no answer within {}s", after.as_secs()),
        },
        ProviderError::RateLimited { .. } => {
            EmbedError::Http { status: 429, body: "rate limited; wait and retry".into() }
        }
        ProviderError::Http { status, body } => EmbedError::Http { status, body },
        ProviderError::ContextLengthExceeded { message } => {
            EmbedError::Http { status: 400, body: message }
        }
        ProviderError::MalformedStream { message } => EmbedError::Malformed { message },
        ProviderError::Config { message } => EmbedError::Config { message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_data_is_put_back_in_index_order_and_checked() {
        let answer = json!({"data": [
            {"object": "embedding", "index": 1, "embedding": [0.5, 0.5]},
            {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]},
        ]});
        assert_eq!(parse_openai(&answer).unwrap(), vec![vec![1.0, 0.0], vec![0.5, 0.5]]);
        let twice =
            json!({"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [1]}]});
        assert!(parse_openai(&twice).unwrap_err().to_string().contains("twice"));
        let bad = json!({"data": [{"index": 0, "embedding": ["x"]}]});
        assert!(parse_openai(&bad).unwrap_err().to_string().contains("non-number"));
        assert!(parse_openai(&json!({"error": "x"})).is_err());
    }

    #[test]
    fn ollama_embeddings_parse_and_missing_ones_are_errors() {
        let answer = json!({"model": "m", "embeddings": [[0.1, 0.2], [0.3, 0.4]]});
        assert_eq!(parse_ollama(&answer).unwrap().len(), 2);
        let err = parse_ollama(&json!({"embedding": [0.1]})).unwrap_err();
        assert!(err.to_string().contains("no `embeddings` array"), "{err}");
    }

    #[test]
    fn config_debug_hides_the_key() {
        let mut config = HttpEmbedderConfig::new(EmbedWire::OpenAi, "http://x/v1", "m", 3);
        config.api_key = Some("sk-secret".into());
        assert!(!format!("{config:?}").contains("sk-secret"));
        assert!(
            HttpEmbedder::new(HttpEmbedderConfig::new(EmbedWire::Ollama, "x", "m", 3)).is_err()
        );
        assert!(
            HttpEmbedder::new(HttpEmbedderConfig::new(EmbedWire::Ollama, "http://x", "m", 0))
                .is_err()
        );
    }
}
