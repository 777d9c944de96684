//! The OpenAI-compatible chat-completions client: OpenAI itself, and the servers that copy its
//! API (Ollama's `/v1`, vLLM, llama.cpp's server, LM Studio).
//!
//! Requests always stream, with `stream_options.include_usage` so the usage arrives in the
//! stream. Timeouts are those of [`crate::Timeouts`]. `tool_choice` and `parallel_tool_calls`
//! are sent when configured and the request declares tools.

mod assembler;
pub(crate) mod errors;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use aria_api::{ChatRequest, ChatStream, Provider, ProviderError};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};

pub use assembler::ChunkAssembler;
pub use wire::ToolChoice;

use crate::http::{self, Clock, MAX_ERROR_BODY, Timeouts, read_capped};
use crate::reader::{BodyReader, SseDecoder, chat_stream, failed};

/// How to reach an OpenAI-compatible server.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// E.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`; a trailing `/` is fine.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set. Never printed by `Debug`.
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    pub first_byte_timeout: Duration,
    pub idle_timeout: Duration,
    pub request_timeout: Option<Duration>,
    /// Sent as `tool_choice` when the request has tools (`None`: the server's default, `auto`).
    pub tool_choice: Option<ToolChoice>,
    /// Sent as `parallel_tool_calls` when the request has tools (`None`: the server's default,
    /// which for OpenAI is `true`). Several calls in one answer are always understood.
    pub parallel_tool_calls: Option<bool>,
}

impl OpenAiConfig {
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// Defaults for everything but the base URL.
    pub fn new(base_url: impl Into<String>) -> Self {
        OpenAiConfig { base_url: base_url.into(), ..Self::default() }
    }

    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    fn timeouts(&self) -> Timeouts {
        Timeouts {
            connect: self.connect_timeout,
            first_byte: self.first_byte_timeout,
            idle: self.idle_timeout,
            request: self.request_timeout,
        }
    }
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        let t = Timeouts::default();
        OpenAiConfig {
            base_url: Self::DEFAULT_BASE_URL.to_string(),
            api_key: None,
            connect_timeout: t.connect,
            first_byte_timeout: t.first_byte,
            idle_timeout: t.idle,
            request_timeout: t.request,
            tool_choice: None,
            parallel_tool_calls: None,
        }
    }
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = if self.api_key.is_some() { "[set]" } else { "[unset]" };
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &format_args!("{key}"))
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("tool_choice", &self.tool_choice)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .finish()
    }
}

/// A [`Provider`] for OpenAI-compatible chat completions. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: reqwest::Client,
    config: OpenAiConfig,
    timeouts: Timeouts,
    /// The base URL without a trailing slash.
    base: String,
    auth: Option<HeaderValue>,
    locality: crate::locality::Locality,
}

impl OpenAiProvider {
    /// A client whose server is not judged: it counts as remote ([`OpenAiProvider::judged`]).
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        Self::build(config, None)
    }

    /// A client whose server's locality is judged with `resolver` ([`crate::locality`]); a
    /// server judged local is reached only at the addresses that were checked.
    pub fn judged(
        config: OpenAiConfig,
        resolver: &dyn crate::locality::Resolve,
    ) -> Result<Self, ProviderError> {
        Self::build(config, Some(resolver))
    }

    fn build(
        config: OpenAiConfig,
        resolver: Option<&dyn crate::locality::Resolve>,
    ) -> Result<Self, ProviderError> {
        let (base, url) = http::parse_base(&config.base_url, OpenAiConfig::DEFAULT_BASE_URL)?;
        let auth = match config.api_key.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
            None => None,
            Some(key) => Some(http::secret_header(&format!("Bearer {key}"))?),
        };
        let timeouts = config.timeouts();
        let (client, locality) = http::client(&url, timeouts.connect, resolver)?;
        let inner = Inner { client, config, timeouts, base, auth, locality };
        Ok(OpenAiProvider { inner: Arc::new(inner) })
    }

    /// Where the server runs (remote unless built with [`OpenAiProvider::judged`]).
    pub fn locality(&self) -> &crate::locality::Locality {
        &self.inner.locality
    }

    /// The base URL requests go to (without a trailing slash).
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    /// The ids of the models the server offers (`GET {base}/models`).
    pub async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        let inner = &self.inner;
        let endpoint = format!("{}/models", inner.base);
        let mut request = inner.client.get(&endpoint).header(ACCEPT, "application/json");
        if let Some(auth) = &inner.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let parsed =
            http::get_json(request, &endpoint, &inner.timeouts, errors::from_status).await?;
        http::model_names(&parsed, "data", "id")
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn stream(&self, request: ChatRequest) -> ChatStream {
        let inner = Arc::clone(&self.inner);
        let options = wire::Options {
            tool_choice: inner.config.tool_choice,
            parallel_tool_calls: inner.config.parallel_tool_calls,
        };
        let body = match wire::request_body(&request, &options).and_then(|b| http::encode_body(&b))
        {
            Ok(body) => body,
            Err(err) => return failed(err),
        };
        let stream = chat_stream(async move { inner.open(body).await });
        crate::textcalls::recognise(stream, &request.tools)
    }
}

impl Inner {
    async fn open(
        &self,
        body: Vec<u8>,
    ) -> Result<Box<BodyReader<SseDecoder<ChunkAssembler>>>, ProviderError> {
        let endpoint = format!("{}/chat/completions", self.base);
        let clock = Clock::start(&self.timeouts);
        let mut request = self
            .client
            .post(&endpoint)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let response = clock.send(request, &endpoint).await?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = http::retry_after(response.headers());
            // A body that does not arrive in time still leaves the status to classify.
            let body = read_capped(response, MAX_ERROR_BODY, &clock).await.unwrap_or_default();
            return Err(errors::from_status(status, retry_after, &String::from_utf8_lossy(&body)));
        }
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        if is_json {
            // A server that ignored `stream: true` answers one JSON object: read it as one event.
            tracing::debug!(%endpoint, "the server answered JSON instead of an event stream");
        }
        Ok(BodyReader::new(response, clock, SseDecoder::new(ChunkAssembler::new(), is_json)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let config = OpenAiConfig::default().with_api_key("sk-secret-123");
        let shown = format!("{config:?}");
        assert!(shown.contains("[set]") && !shown.contains("sk-secret"), "{shown}");
        assert!(format!("{:?}", OpenAiConfig::default()).contains("[unset]"));
        let provider = OpenAiProvider::new(config).unwrap();
        assert!(!format!("{provider:?}").contains("sk-secret"));
    }

    #[test]
    fn an_https_client_can_be_built_and_the_base_url_is_normalised() {
        let provider =
            OpenAiProvider::new(OpenAiConfig::new("https://api.openai.com/v1/")).unwrap();
        assert_eq!(provider.base_url(), "https://api.openai.com/v1");
        assert_eq!(provider.name(), "openai");
    }

    #[test]
    fn bad_base_urls_and_keys_are_config_errors() {
        for url in ["", "api.openai.com/v1", "ftp://host/v1"] {
            let err = OpenAiProvider::new(OpenAiConfig::new(url)).unwrap_err();
            assert_eq!(err.kind(), "config", "{url}");
        }
        let err = OpenAiProvider::new(OpenAiConfig::default().with_api_key("sk-\nx")).unwrap_err();
        assert_eq!(err.kind(), "config");
        assert!(!err.to_string().contains("sk-"), "the message never echoes the key");
    }
}
