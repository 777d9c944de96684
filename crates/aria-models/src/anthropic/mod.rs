//! The Anthropic Messages API client (`POST /v1/messages`, streamed).
//!
//! Every request carries `x-api-key`, `anthropic-version` and a `max_tokens` (the API requires
//! one; [`AnthropicConfig::default_max_tokens`] when the request has none). System messages go
//! into the top-level `system`; tool results go back as `tool_result` blocks paired with their
//! `tool_use` ids. See [`wire`] for the body and [`MessageAssembler`] for the events.

mod assembler;
mod errors;
mod wire;

use std::sync::Arc;

use aria_api::{ChatRequest, ChatStream, Provider, ProviderError};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};

pub use assembler::MessageAssembler;

use crate::http::{self, Clock, MAX_ERROR_BODY, Timeouts, read_capped};
use crate::reader::{BodyReader, SseDecoder, chat_stream, failed};

/// How to reach the Messages API.
#[derive(Clone, PartialEq, Eq)]
pub struct AnthropicConfig {
    /// E.g. `https://api.anthropic.com` (`ANTHROPIC_BASE_URL`); `/v1/messages` is appended.
    pub base_url: String,
    /// `ANTHROPIC_API_KEY`, sent as `x-api-key`. Never printed by `Debug`.
    pub api_key: String,
    /// The `anthropic-version` header.
    pub version: String,
    pub timeouts: Timeouts,
    /// `max_tokens` for requests that do not set one.
    pub default_max_tokens: u32,
}

impl AnthropicConfig {
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";
    pub const VERSION: &'static str = "2023-06-01";

    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        AnthropicConfig {
            base_url: base_url.into(),
            api_key: api_key.into(),
            version: Self::VERSION.to_string(),
            timeouts: Timeouts::default(),
            default_max_tokens: 4096,
        }
    }
}

impl std::fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &format_args!("[set]"))
            .field("version", &self.version)
            .field("timeouts", &self.timeouts)
            .field("default_max_tokens", &self.default_max_tokens)
            .finish()
    }
}

/// A [`Provider`] for Anthropic's Messages API. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: reqwest::Client,
    config: AnthropicConfig,
    base: String,
    key: HeaderValue,
    version: HeaderValue,
}

impl AnthropicProvider {
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let (base, url) = http::parse_base(&config.base_url, AnthropicConfig::DEFAULT_BASE_URL)?;
        let key = config.api_key.trim();
        if key.is_empty() {
            return Err(ProviderError::Config {
                message: "the Anthropic provider needs an API key: set ANTHROPIC_API_KEY".into(),
            });
        }
        let key = http::secret_header(key)?;
        let version =
            HeaderValue::from_str(&config.version).map_err(|_| ProviderError::Config {
                message: format!(
                    "the anthropic-version {:?} is not a valid header value",
                    config.version
                ),
            })?;
        // Anthropic's API is never on this machine: not judged.
        let (client, _) = http::client(&url, config.timeouts.connect, None)?;
        Ok(AnthropicProvider { inner: Arc::new(Inner { client, config, base, key, version }) })
    }

    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    /// The ids of the models the API offers (`GET /v1/models`).
    pub async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        let inner = &self.inner;
        let endpoint = format!("{}/v1/models", inner.base);
        let request = inner
            .client
            .get(&endpoint)
            .header(ACCEPT, "application/json")
            .header("x-api-key", inner.key.clone())
            .header("anthropic-version", inner.version.clone());
        let parsed =
            http::get_json(request, &endpoint, &inner.config.timeouts, errors::from_status).await?;
        http::model_names(&parsed, "data", "id")
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn stream(&self, request: ChatRequest) -> ChatStream {
        let inner = Arc::clone(&self.inner);
        let body = match wire::request_body(&request, inner.config.default_max_tokens)
            .and_then(|body| http::encode_body(&body))
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
    ) -> Result<Box<BodyReader<SseDecoder<MessageAssembler>>>, ProviderError> {
        let endpoint = format!("{}/v1/messages", self.base);
        let clock = Clock::start(&self.config.timeouts);
        let request = self
            .client
            .post(&endpoint)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .header("x-api-key", self.key.clone())
            .header("anthropic-version", self.version.clone())
            .body(body);
        let response = clock.send(request, &endpoint).await?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = http::retry_after(response.headers());
            let body = read_capped(response, MAX_ERROR_BODY, &clock).await.unwrap_or_default();
            return Err(errors::from_status(status, retry_after, &String::from_utf8_lossy(&body)));
        }
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        Ok(BodyReader::new(response, clock, SseDecoder::new(MessageAssembler::new(), is_json)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_required_and_never_shown() {
        let err =
            AnthropicProvider::new(AnthropicConfig::new(AnthropicConfig::DEFAULT_BASE_URL, " "))
                .unwrap_err();
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
        let config = AnthropicConfig::new("https://api.anthropic.com/", "sk-ant-secret");
        assert!(!format!("{config:?}").contains("sk-ant"));
        let provider = AnthropicProvider::new(config).unwrap();
        assert!(!format!("{provider:?}").contains("sk-ant"));
        assert_eq!(provider.base_url(), "https://api.anthropic.com");
        assert_eq!(provider.name(), "anthropic");
    }
}
