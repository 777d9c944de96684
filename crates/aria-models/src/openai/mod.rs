//! The OpenAI-compatible chat-completions client: OpenAI itself, and the servers that copy its
//! API (Ollama's `/v1`, vLLM, llama.cpp's server, LM Studio).
//!
//! Requests always stream. Three clocks guard an answer: `connect_timeout` (TCP and TLS setup),
//! `first_byte_timeout` (from sending the request to the first byte of the answer's *body* — a
//! local server sends its headers at once and then loads the model), and `idle_timeout` (between
//! two pieces of the body). `request_timeout`, when set, bounds the whole answer.

mod assembler;
mod errors;
mod wire;

use std::collections::VecDeque;
use std::sync::{Arc, Once};
use std::time::Duration;

use aria_api::{ChatEvent, ChatRequest, ChatStream, Provider, ProviderError};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use tokio::time::Instant;

pub use assembler::ChunkAssembler;

use crate::sse::{SseEvent, SseParser};

/// The bytes of an error answer kept for classification; the rest is not read.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The bytes of a model list read at most.
const MAX_MODEL_LIST: usize = 8 * 1024 * 1024;

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
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        OpenAiConfig {
            base_url: Self::DEFAULT_BASE_URL.to_string(),
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            // Generous: a local server may load a model before its first token.
            first_byte_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(60),
            request_timeout: None,
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
    /// The base URL without a trailing slash.
    base: String,
    auth: Option<HeaderValue>,
}

/// Installs ring as rustls's process-wide crypto provider (reqwest is built without one). If
/// another part of the process installed a provider first, that one is kept.
fn ensure_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim().trim_end_matches('/').to_string();
        let url = reqwest::Url::parse(&base).map_err(|err| ProviderError::Config {
            message: format!(
                "the base URL {base:?} is not a URL ({err}); use e.g. {}",
                OpenAiConfig::DEFAULT_BASE_URL
            ),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ProviderError::Config {
                message: format!("the base URL {base:?} must start with http:// or https://"),
            });
        }
        let auth = match config.api_key.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
            None => None,
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    ProviderError::Config {
                        message: "the API key contains characters not allowed in an HTTP header; \
                                  check the variable for stray quotes or line breaks"
                            .into(),
                    }
                })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        ensure_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("aria/", env!("CARGO_PKG_VERSION")));
        if is_loopback(&url) {
            builder = builder.no_proxy(); // a proxy never serves a model on this machine
        }
        let client = builder.build().map_err(|err| ProviderError::Config {
            message: format!("cannot build the HTTP client: {}", errors::error_chain(&err)),
        })?;
        Ok(OpenAiProvider { inner: Arc::new(Inner { client, config, base, auth }) })
    }

    /// The base URL requests go to (without a trailing slash).
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    /// The ids of the models the server offers (`GET {base}/models`).
    pub async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        let inner = &self.inner;
        let endpoint = format!("{}/models", inner.base);
        let clock = Clock::start(&inner.config);
        let mut request = inner.client.get(&endpoint).header(ACCEPT, "application/json");
        if let Some(auth) = &inner.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let response = clock.send(request, &endpoint, inner.config.connect_timeout).await?;
        let status = response.status().as_u16();
        let retry_after = errors::retry_after(response.headers());
        let body = read_capped(response, MAX_MODEL_LIST, &clock).await?;
        let text = String::from_utf8_lossy(&body);
        if !(200..300).contains(&status) {
            return Err(errors::from_status(status, retry_after, &text));
        }
        let parsed: serde_json::Value =
            serde_json::from_slice(&body).map_err(|err| ProviderError::MalformedStream {
                message: format!("the model list is not JSON ({err})"),
            })?;
        let Some(data) = parsed.get("data").and_then(serde_json::Value::as_array) else {
            return Err(ProviderError::MalformedStream {
                message: format!(
                    "the model list has no `data` array: {}",
                    errors::truncate(&text, 200)
                ),
            });
        };
        Ok(data.iter().filter_map(|m| m.get("id")?.as_str().map(str::to_string)).collect())
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn stream(&self, request: ChatRequest) -> ChatStream {
        let inner = Arc::clone(&self.inner);
        let body = match wire::request_body(&request).and_then(|body| {
            serde_json::to_vec(&body).map_err(|err| ProviderError::Config {
                message: format!("cannot encode the request: {err}"),
            })
        }) {
            Ok(body) => body,
            Err(err) => return Box::pin(futures::stream::once(async { Err(err) })),
        };
        let phase = Phase::Start { inner, body };
        Box::pin(futures::stream::unfold(phase, |phase| async move {
            let mut reader = match phase {
                Phase::Start { inner, body } => match inner.open(body).await {
                    Ok(reader) => reader,
                    Err(err) => return Some((Err(err), Phase::Done)),
                },
                Phase::Reading(reader) => reader,
                Phase::Done => return None,
            };
            match reader.next_event().await {
                Some(Ok(event)) => Some((Ok(event), Phase::Reading(reader))),
                Some(Err(err)) => Some((Err(err), Phase::Done)),
                None => None,
            }
        }))
    }
}

enum Phase {
    Start { inner: Arc<Inner>, body: Vec<u8> },
    Reading(Box<Reader>),
    Done,
}

impl Inner {
    async fn open(&self, body: Vec<u8>) -> Result<Box<Reader>, ProviderError> {
        let endpoint = format!("{}/chat/completions", self.base);
        let clock = Clock::start(&self.config);
        let mut request = self
            .client
            .post(&endpoint)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let response = clock.send(request, &endpoint, self.config.connect_timeout).await?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = errors::retry_after(response.headers());
            // A body that does not arrive in time still leaves the status to classify.
            let body = read_capped(response, MAX_ERROR_BODY, &clock).await.unwrap_or_default();
            return Err(errors::from_status(status, retry_after, &String::from_utf8_lossy(&body)));
        }
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        let reader = Reader {
            body: response.bytes_stream().boxed(),
            clock,
            got_body: false,
            // A server that ignored `stream: true` answers one JSON object: read it as one event.
            whole_json: is_json.then(Vec::new),
            parser: SseParser::new(),
            assembler: ChunkAssembler::new(),
            sse: Vec::new(),
            pending: VecDeque::new(),
            failed: None,
            ended: false,
        };
        if reader.whole_json.is_some() {
            tracing::debug!(%endpoint, "the server answered JSON instead of an event stream");
        }
        Ok(Box::new(reader))
    }
}

/// The deadlines of one request.
struct Clock {
    started: Instant,
    first_byte: Duration,
    idle: Duration,
    total: Option<Duration>,
}

impl Clock {
    fn start(config: &OpenAiConfig) -> Clock {
        Clock {
            started: Instant::now(),
            first_byte: config.first_byte_timeout,
            idle: config.idle_timeout,
            total: config.request_timeout,
        }
    }

    /// The next deadline, and the timeout it stands for.
    fn deadline(&self, got_body: bool) -> (Instant, Duration) {
        let (at, after) = if got_body {
            (Instant::now() + self.idle, self.idle)
        } else {
            (self.started + self.first_byte, self.first_byte)
        };
        match self.total {
            Some(total) if self.started + total < at => (self.started + total, total),
            _ => (at, after),
        }
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        endpoint: &str,
        connect_timeout: Duration,
    ) -> Result<reqwest::Response, ProviderError> {
        let (deadline, after) = self.deadline(false);
        match tokio::time::timeout_at(deadline, request.send()).await {
            Err(_) => Err(ProviderError::Timeout { after }),
            Ok(Err(err)) => Err(errors::from_transport(&err, endpoint, connect_timeout)),
            Ok(Ok(response)) => Ok(response),
        }
    }
}

/// Reads at most `cap` bytes of a body within the request's deadlines.
async fn read_capped(
    response: reqwest::Response,
    cap: usize,
    clock: &Clock,
) -> Result<Vec<u8>, ProviderError> {
    let mut body = response.bytes_stream();
    let mut out = Vec::new();
    while out.len() < cap {
        let (deadline, after) = clock.deadline(!out.is_empty());
        match tokio::time::timeout_at(deadline, body.next()).await {
            Err(_) => return Err(ProviderError::Timeout { after }),
            Ok(None) => break,
            Ok(Some(Err(err))) => return Err(broken(&err)),
            Ok(Some(Ok(bytes))) => out.extend_from_slice(&bytes),
        }
    }
    out.truncate(cap);
    Ok(out)
}

fn broken(err: &reqwest::Error) -> ProviderError {
    ProviderError::MalformedStream {
        message: format!(
            "the connection broke in the middle of the answer ({})",
            errors::error_chain(err)
        ),
    }
}

/// Reads one streamed answer: bytes → SSE events → chat events.
struct Reader {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    clock: Clock,
    got_body: bool,
    whole_json: Option<Vec<u8>>,
    parser: SseParser,
    assembler: ChunkAssembler,
    sse: Vec<SseEvent>,
    pending: VecDeque<ChatEvent>,
    /// An error found after some events: yielded once they are.
    failed: Option<ProviderError>,
    ended: bool,
}

impl Reader {
    async fn next_event(&mut self) -> Option<Result<ChatEvent, ProviderError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if let Some(err) = self.failed.take() {
                self.ended = true;
                return Some(Err(err));
            }
            if self.ended {
                return None;
            }
            let step = match self.read().await {
                Ok(Some(bytes)) => self.feed(&bytes),
                Ok(None) => self.end(),
                Err(err) => Err(err),
            };
            if let Err(err) = step {
                self.failed = Some(err);
            }
        }
    }

    async fn read(&mut self) -> Result<Option<Bytes>, ProviderError> {
        let (deadline, after) = self.clock.deadline(self.got_body);
        match tokio::time::timeout_at(deadline, self.body.next()).await {
            Err(_) => Err(ProviderError::Timeout { after }),
            Ok(None) => Ok(None),
            Ok(Some(Err(err))) => Err(broken(&err)),
            Ok(Some(Ok(bytes))) => {
                self.got_body |= !bytes.is_empty();
                Ok(Some(bytes))
            }
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        if let Some(whole) = &mut self.whole_json {
            whole.extend_from_slice(bytes);
            return Ok(());
        }
        let mut out = Vec::new();
        let parsed = self.parser.push(bytes, &mut self.sse).map_err(sse_error);
        let result = parsed.and_then(|()| self.drain_sse(&mut out));
        self.pending.extend(out);
        if self.assembler.is_done() {
            self.ended = true; // `[DONE]`: stop reading even if the server keeps the connection
        }
        result
    }

    fn drain_sse(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        for event in self.sse.drain(..) {
            self.assembler.push(&event.data, out)?;
        }
        Ok(())
    }

    fn end(&mut self) -> Result<(), ProviderError> {
        self.ended = true;
        let mut out = Vec::new();
        let result = match self.whole_json.take() {
            Some(whole) => {
                let text = String::from_utf8_lossy(&whole);
                self.assembler.push(&text, &mut out).and_then(|()| self.assembler.finish(&mut out))
            }
            None => self
                .parser
                .finish(&mut self.sse)
                .map_err(sse_error)
                .and_then(|()| self.drain_sse(&mut out))
                .and_then(|()| self.assembler.finish(&mut out)),
        };
        self.pending.extend(out);
        result
    }
}

fn sse_error(err: crate::sse::SseError) -> ProviderError {
    ProviderError::MalformedStream { message: err.to_string() }
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

    #[test]
    fn loopback_hosts_are_recognised() {
        for (url, expected) in [
            ("http://127.0.0.1:11434/v1", true),
            ("http://localhost/v1", true),
            ("http://[::1]:8080/v1", true),
            ("https://api.openai.com/v1", false),
            ("http://10.0.0.2/v1", false),
        ] {
            assert_eq!(is_loopback(&reqwest::Url::parse(url).unwrap()), expected, "{url}");
        }
    }

    #[test]
    fn the_deadline_moves_from_first_byte_to_idle_and_respects_the_total() {
        let config = OpenAiConfig {
            first_byte_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(5),
            request_timeout: Some(Duration::from_secs(20)),
            ..OpenAiConfig::default()
        };
        let clock = Clock::start(&config);
        assert_eq!(
            clock.deadline(false),
            (clock.started + Duration::from_secs(20), Duration::from_secs(20))
        );
        assert_eq!(clock.deadline(true).1, Duration::from_secs(5));
    }
}
