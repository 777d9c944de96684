//! What every HTTP provider shares: timeouts and their clock, the client builder, reading a
//! capped body, and turning transport failures into classified errors.
//!
//! Three clocks guard an answer: `connect` (TCP and TLS setup), `first_byte` (from sending the
//! request to the first byte of the answer's *body* — a local server sends its headers at once
//! and then loads the model), and `idle` (between two pieces of the body). `request`, when set,
//! bounds the whole answer.

use std::sync::Once;
use std::time::Duration;

use aria_api::ProviderError;
use futures::StreamExt;
use tokio::time::Instant;

/// The bytes of an error answer kept for classification; the rest is not read.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// The bytes of a JSON answer (a model list, a model description) read at most.
pub(crate) const MAX_JSON_BODY: usize = 8 * 1024 * 1024;

/// The timeouts of one provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub first_byte: Duration,
    pub idle: Duration,
    pub request: Option<Duration>,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            // Generous: a local server may load a model before its first token.
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(60),
            request: None,
        }
    }
}

/// Installs ring as rustls's process-wide crypto provider (reqwest is built without one). If
/// another part of the process installed a provider first, that one is kept.
pub(crate) fn ensure_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Parses and checks a base URL; `example` goes into the error message.
pub(crate) fn parse_base(
    base_url: &str,
    example: &str,
) -> Result<(String, reqwest::Url), ProviderError> {
    let base = base_url.trim().trim_end_matches('/').to_string();
    let url = reqwest::Url::parse(&base).map_err(|err| ProviderError::Config {
        message: format!("the base URL {base:?} is not a URL ({err}); use e.g. {example}"),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ProviderError::Config {
            message: format!("the base URL {base:?} must start with http:// or https://"),
        });
    }
    Ok((base, url))
}

/// An HTTP client for one provider, and where its server runs: judged by `resolver`
/// ([`crate::locality::judge`]), or not judged at all (remote) without one. The client has the
/// connect timeout and a user agent; a server judged local is reached without a proxy and,
/// when it was named, only at the loopback addresses that were checked (pinned).
pub(crate) fn client(
    url: &reqwest::Url,
    connect: Duration,
    resolver: Option<&dyn crate::locality::Resolve>,
) -> Result<(reqwest::Client, crate::locality::Locality), ProviderError> {
    use crate::locality::{Locality, judge};
    ensure_crypto_provider();
    let locality = match resolver {
        Some(r) => judge(url.as_str(), r),
        None => Locality::Remote { why: "where it runs was not checked".into() },
    };
    let mut builder = reqwest::Client::builder()
        .connect_timeout(connect)
        .user_agent(concat!("aria/", env!("CARGO_PKG_VERSION")));
    if let Some(pin) = locality.pin() {
        builder = builder.resolve_to_addrs(&pin.host, &pin.addrs);
    }
    if locality.is_local() || is_loopback(url) {
        builder = builder.no_proxy(); // a proxy never serves a model on this machine
    }
    let client = builder.build().map_err(|err| ProviderError::Config {
        message: format!("cannot build the HTTP client: {}", error_chain(&err)),
    })?;
    Ok((client, locality))
}

/// Whether the URL names this machine without asking any resolver: a loopback address, or
/// `localhost` (which always names this machine); decided by [`crate::locality::judge`] like
/// every other locality. Only chooses whether to bypass a proxy.
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    #[derive(Debug)]
    struct LocalhostOnly;
    impl crate::locality::Resolve for LocalhostOnly {
        fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<std::net::SocketAddr>> {
            if host.eq_ignore_ascii_case("localhost") {
                Ok(vec![std::net::SocketAddr::from(([127, 0, 0, 1], port))])
            } else {
                Err(std::io::Error::other("names are not resolved here"))
            }
        }
    }
    crate::locality::judge(url.as_str(), &LocalhostOnly).is_local()
}

/// A header value holding a secret: refused when it has characters HTTP does not allow, and
/// marked sensitive so it is never logged.
pub(crate) fn secret_header(value: &str) -> Result<reqwest::header::HeaderValue, ProviderError> {
    let mut header =
        reqwest::header::HeaderValue::from_str(value).map_err(|_| ProviderError::Config {
            message: "the API key contains characters not allowed in an HTTP header; check the \
                      variable for stray quotes or line breaks"
                .into(),
        })?;
    header.set_sensitive(true);
    Ok(header)
}

/// The deadlines of one request.
pub(crate) struct Clock {
    pub(crate) started: Instant,
    first_byte: Duration,
    idle: Duration,
    total: Option<Duration>,
    connect: Duration,
}

impl Clock {
    pub(crate) fn start(timeouts: &Timeouts) -> Clock {
        Clock {
            started: Instant::now(),
            first_byte: timeouts.first_byte,
            idle: timeouts.idle,
            total: timeouts.request,
            connect: timeouts.connect,
        }
    }

    /// The next deadline, and the timeout it stands for.
    pub(crate) fn deadline(&self, got_body: bool) -> (Instant, Duration) {
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

    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        endpoint: &str,
    ) -> Result<reqwest::Response, ProviderError> {
        let (deadline, after) = self.deadline(false);
        match tokio::time::timeout_at(deadline, request.send()).await {
            Err(_) => Err(ProviderError::Timeout { after }),
            Ok(Err(err)) => Err(from_transport(&err, endpoint, self.connect)),
            Ok(Ok(response)) => Ok(response),
        }
    }
}

/// Reads at most `cap` bytes of a body within the request's deadlines.
pub(crate) async fn read_capped(
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

/// Sends a request and reads a whole JSON answer; a non-success status goes to `classify`.
pub(crate) async fn get_json(
    request: reqwest::RequestBuilder,
    endpoint: &str,
    timeouts: &Timeouts,
    classify: fn(u16, Option<Duration>, &str) -> ProviderError,
) -> Result<serde_json::Value, ProviderError> {
    let clock = Clock::start(timeouts);
    let response = clock.send(request, endpoint).await?;
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let body = read_capped(response, MAX_JSON_BODY, &clock).await?;
    if !(200..300).contains(&status) {
        return Err(classify(status, retry_after, &String::from_utf8_lossy(&body)));
    }
    serde_json::from_slice(&body).map_err(|err| ProviderError::MalformedStream {
        message: format!(
            "{endpoint} answered something that is not JSON ({err}): {}",
            truncate(&String::from_utf8_lossy(&body), 200)
        ),
    })
}

pub(crate) fn broken(err: &reqwest::Error) -> ProviderError {
    ProviderError::MalformedStream {
        message: format!("the connection broke in the middle of the answer ({})", error_chain(err)),
    }
}

/// Reads `Retry-After` as whole or fractional seconds (the HTTP-date form is not used by model
/// providers and is ignored).
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// Classifies a failure to send a request or to receive its answer's head.
pub(crate) fn from_transport(
    err: &reqwest::Error,
    endpoint: &str,
    connect_timeout: Duration,
) -> ProviderError {
    if err.is_timeout() {
        // The only timeout given to the HTTP client itself is the connect timeout.
        return ProviderError::Timeout { after: connect_timeout };
    }
    ProviderError::Network { endpoint: endpoint.to_string(), message: error_chain(err) }
}

/// An error and all its sources on one line, e.g. `error sending request: client error
/// (Connect): tcp connect error: Connection refused (os error 111)`.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// A request body as JSON bytes; a value that cannot be encoded is a configuration error.
pub(crate) fn encode_body<T: serde::Serialize>(body: &T) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(body).map_err(|err| ProviderError::Config {
        message: format!("cannot encode the request: {err}"),
    })
}

/// One element of a stream parsed as JSON; `what` names it in the error ("a chunk", "an
/// event", "a line"), which quotes the start of the data.
pub(crate) fn parse_stream_json<T: serde::de::DeserializeOwned>(
    data: &str,
    what: &str,
) -> Result<T, ProviderError> {
    serde_json::from_str(data).map_err(|err| ProviderError::MalformedStream {
        message: format!("{what} is not the JSON expected ({err}): {}", truncate(data, 200)),
    })
}

/// The model names in a model-list answer: the string field `key` of each element of the
/// array `list` (`data`/`id` for OpenAI and Anthropic, `models`/`name` for Ollama).
pub(crate) fn model_names(
    parsed: &serde_json::Value,
    list: &str,
    key: &str,
) -> Result<Vec<String>, ProviderError> {
    let Some(items) = parsed.get(list).and_then(serde_json::Value::as_array) else {
        return Err(ProviderError::MalformedStream {
            message: format!(
                "the model list has no `{list}` array: {}",
                truncate(&parsed.to_string(), 200)
            ),
        });
    };
    Ok(items.iter().filter_map(|m| m.get(key)?.as_str().map(str::to_string)).collect())
}

/// At most `max` characters of `text`, with `…` when cut (never inside a character).
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_lists_are_read_by_field_and_a_wrong_shape_is_named() {
        let ok = serde_json::json!({"data": [{"id": "a"}, {"object": "x"}, {"id": "b"}]});
        assert_eq!(model_names(&ok, "data", "id").unwrap(), ["a", "b"]);
        let bad = serde_json::json!({"error": "nope"});
        let err = model_names(&bad, "models", "name").unwrap_err();
        assert_eq!(err.kind(), "malformed_stream");
        assert!(err.to_string().contains("no `models` array"), "{err}");
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
        let timeouts = Timeouts {
            first_byte: Duration::from_secs(30),
            idle: Duration::from_secs(5),
            request: Some(Duration::from_secs(20)),
            ..Timeouts::default()
        };
        let clock = Clock::start(&timeouts);
        assert_eq!(
            clock.deadline(false),
            (clock.started + Duration::from_secs(20), Duration::from_secs(20))
        );
        assert_eq!(clock.deadline(true).1, Duration::from_secs(5));
    }

    #[test]
    fn retry_after_reads_seconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after", "1.5".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        headers.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn truncation_respects_characters() {
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("héllo", 5), "héllo");
    }

    #[test]
    fn bad_base_urls_are_config_errors() {
        for url in ["", "api.openai.com/v1", "ftp://host/v1"] {
            assert_eq!(parse_base(url, "x").unwrap_err().kind(), "config", "{url}");
        }
        assert_eq!(parse_base("http://h:1/v1/", "x").unwrap().0, "http://h:1/v1");
    }
}
