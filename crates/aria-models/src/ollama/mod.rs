//! Ollama's native API client: `/api/chat` streamed as NDJSON, `/api/show` for a model's real
//! context length, `/api/tags` for the installed models, and unloading a model.
//!
//! Ollama silently truncates a prompt longer than `num_ctx`, whose default is far below what
//! most models support. So before the first chat with a model the provider asks `/api/show`
//! for the model's context length and sends `options.num_ctx` with every request: the model's
//! length, capped at [`OllamaConfig::max_num_ctx`] (a 128k context can need more memory for its
//! cache than a small machine has), unless [`OllamaConfig::num_ctx`] fixes it. The answer is
//! cached per model.

pub(crate) mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aria_api::{ChatRequest, ChatStream, Provider, ProviderError};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Value, json};

pub use wire::LineAssembler;

use crate::http::{self, Clock, MAX_ERROR_BODY, Timeouts, read_capped};
use crate::reader::{BodyReader, LineDecoder, chat_stream, failed};

/// How to reach an Ollama server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OllamaConfig {
    /// E.g. `http://127.0.0.1:11434` (see [`OllamaConfig::host_url`] for `OLLAMA_HOST` forms).
    pub base_url: String,
    pub timeouts: Timeouts,
    /// Sent as `keep_alive` (e.g. `"5m"`, `"-1"`); `None` leaves Ollama's default.
    pub keep_alive: Option<String>,
    /// A fixed `num_ctx`; `None` reads the model's context length from `/api/show`.
    pub num_ctx: Option<u64>,
    /// The largest `num_ctx` sent when it comes from the model's context length.
    pub max_num_ctx: u64,
}

impl OllamaConfig {
    pub const DEFAULT_BASE_URL: &'static str = "http://127.0.0.1:11434";

    pub fn new(base_url: impl Into<String>) -> Self {
        OllamaConfig {
            base_url: base_url.into(),
            timeouts: Timeouts::default(),
            keep_alive: None,
            num_ctx: None,
            max_num_ctx: 32_768,
        }
    }

    /// Turns an `OLLAMA_HOST` value into a URL the way the `ollama` command does: a scheme and
    /// the port 11434 are added when missing, and `0.0.0.0` (a listen address) becomes
    /// `127.0.0.1`.
    pub fn host_url(value: &str) -> String {
        let value = value.trim().trim_end_matches('/');
        let (scheme, rest) = match value.split_once("://") {
            Some((scheme, rest)) => (scheme, rest),
            None => ("http", value),
        };
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let host = if host.is_empty() { "127.0.0.1" } else { host };
        let has_port = match host.rfind(']') {
            Some(end) => host[end..].contains(':'),
            None => host.contains(':'),
        };
        let host = if has_port { host.to_string() } else { format!("{host}:11434") };
        let host = host.replacen("0.0.0.0", "127.0.0.1", 1);
        format!("{scheme}://{host}{path}")
    }
}

/// A [`Provider`] for Ollama's native chat API. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OllamaProvider {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: reqwest::Client,
    config: OllamaConfig,
    base: String,
    /// Context lengths read from `/api/show`, per model.
    context: Mutex<HashMap<String, u64>>,
    locality: crate::locality::Locality,
}

impl OllamaProvider {
    /// A client whose server is not judged: it counts as remote ([`OllamaProvider::judged`]).
    pub fn new(config: OllamaConfig) -> Result<Self, ProviderError> {
        Self::build(config, None)
    }

    /// A client whose server's locality is judged with `resolver` ([`crate::locality`]): an
    /// Ollama server is on this machine only when its address says so, whatever the backend.
    pub fn judged(
        config: OllamaConfig,
        resolver: &dyn crate::locality::Resolve,
    ) -> Result<Self, ProviderError> {
        Self::build(config, Some(resolver))
    }

    fn build(
        config: OllamaConfig,
        resolver: Option<&dyn crate::locality::Resolve>,
    ) -> Result<Self, ProviderError> {
        let (base, url) = http::parse_base(&config.base_url, OllamaConfig::DEFAULT_BASE_URL)?;
        let (client, locality) = http::client(&url, config.timeouts.connect, resolver)?;
        let context = Mutex::default();
        Ok(OllamaProvider { inner: Arc::new(Inner { client, config, base, context, locality }) })
    }

    /// Where the server runs (remote unless built with [`OllamaProvider::judged`]).
    pub fn locality(&self) -> &crate::locality::Locality {
        &self.inner.locality
    }

    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    /// The installed models (`GET /api/tags`).
    pub async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        let endpoint = format!("{}/api/tags", self.inner.base);
        let request = self.inner.client.get(&endpoint).header(ACCEPT, "application/json");
        let parsed =
            http::get_json(request, &endpoint, &self.inner.config.timeouts, wire::from_status)
                .await?;
        http::model_names(&parsed, "models", "name")
    }

    /// The model's context length in tokens, from `/api/show` (cached).
    pub async fn context_length(&self, model: &str) -> Result<u64, ProviderError> {
        self.inner.context_length(model).await
    }

    /// The `num_ctx` sent with chats to `model`: the configured one, else the model's context
    /// length capped at [`OllamaConfig::max_num_ctx`]. This is the window the model works with.
    pub async fn num_ctx(&self, model: &str) -> Result<u64, ProviderError> {
        self.inner.num_ctx(model).await
    }

    /// Unloads a model from memory now (`keep_alive: 0`).
    pub async fn unload(&self, model: &str) -> Result<(), ProviderError> {
        let endpoint = format!("{}/api/generate", self.inner.base);
        let request = self
            .inner
            .client
            .post(&endpoint)
            .header(CONTENT_TYPE, "application/json")
            .body(json!({"model": model, "keep_alive": 0}).to_string());
        http::get_json(request, &endpoint, &self.inner.config.timeouts, wire::from_status).await?;
        Ok(())
    }
}

impl Inner {
    async fn context_length(&self, model: &str) -> Result<u64, ProviderError> {
        if let Some(n) = self.cached(model) {
            return Ok(n);
        }
        let endpoint = format!("{}/api/show", self.base);
        let request = self
            .client
            .post(&endpoint)
            .header(CONTENT_TYPE, "application/json")
            .body(json!({"model": model}).to_string());
        let shown =
            http::get_json(request, &endpoint, &self.config.timeouts, wire::from_status).await?;
        let n = context_from_show(&shown).ok_or_else(|| ProviderError::MalformedStream {
            message: format!("/api/show for `{model}` has no context length in `model_info`"),
        })?;
        self.context.lock().unwrap_or_else(|p| p.into_inner()).insert(model.to_string(), n);
        Ok(n)
    }

    fn cached(&self, model: &str) -> Option<u64> {
        self.context.lock().unwrap_or_else(|p| p.into_inner()).get(model).copied()
    }

    async fn num_ctx(&self, model: &str) -> Result<u64, ProviderError> {
        if let Some(n) = self.config.num_ctx {
            return Ok(n);
        }
        Ok(self.context_length(model).await?.min(self.config.max_num_ctx))
    }

    async fn open(
        &self,
        request: ChatRequest,
    ) -> Result<Box<BodyReader<LineDecoder<LineAssembler>>>, ProviderError> {
        let options = wire::Options {
            num_ctx: Some(self.num_ctx(&request.model).await?),
            keep_alive: self.config.keep_alive.clone(),
        };
        let body = http::encode_body(&wire::request_body(&request, &options)?)?;
        let endpoint = format!("{}/api/chat", self.base);
        let clock = Clock::start(&self.config.timeouts);
        let http_request = self
            .client
            .post(&endpoint)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/x-ndjson")
            .body(body);
        let response = clock.send(http_request, &endpoint).await?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = http::retry_after(response.headers());
            let body = read_capped(response, MAX_ERROR_BODY, &clock).await.unwrap_or_default();
            return Err(wire::from_status(status, retry_after, &String::from_utf8_lossy(&body)));
        }
        Ok(BodyReader::new(response, clock, LineDecoder::new(LineAssembler::new())))
    }
}

/// `model_info["<architecture>.context_length"]`, or any `*.context_length`.
fn context_from_show(shown: &Value) -> Option<u64> {
    let info = shown.get("model_info")?.as_object()?;
    let arch = info.get("general.architecture").and_then(Value::as_str);
    if let Some(n) =
        arch.and_then(|a| info.get(&format!("{a}.context_length"))).and_then(Value::as_u64)
    {
        return Some(n);
    }
    info.iter().find(|(k, _)| k.ends_with(".context_length")).and_then(|(_, v)| v.as_u64())
}

impl Provider for OllamaProvider {
    fn name(&self) -> &str {
        "ollama"
    }

    fn stream(&self, request: ChatRequest) -> ChatStream {
        if request.model.trim().is_empty() {
            return failed(ProviderError::Config {
                message: "no Ollama model is named; pass --model".into(),
            });
        }
        let inner = Arc::clone(&self.inner);
        let tools = request.tools.clone();
        let stream = chat_stream(async move { inner.open(request).await });
        crate::textcalls::recognise(stream, &tools)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_host_values_become_urls() {
        for (value, url) in [
            ("127.0.0.1", "http://127.0.0.1:11434"),
            ("0.0.0.0:8080", "http://127.0.0.1:8080"),
            ("http://gpu-box:11434/", "http://gpu-box:11434"),
            ("https://ollama.example", "https://ollama.example:11434"),
            ("[::1]", "http://[::1]:11434"),
            ("[::1]:9", "http://[::1]:9"),
        ] {
            assert_eq!(OllamaConfig::host_url(value), url, "{value}");
        }
    }

    #[test]
    fn the_context_length_is_found_under_the_architecture() {
        let shown = json!({"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768, "x.context_length": 5}});
        assert_eq!(context_from_show(&shown), Some(32768));
        assert_eq!(
            context_from_show(&json!({"model_info": {"gemma3.context_length": 8192}})),
            Some(8192)
        );
        assert_eq!(context_from_show(&json!({"model_info": {}})), None);
    }
}
