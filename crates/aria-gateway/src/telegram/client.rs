//! A thin Bot API client: `POST {api_base}/bot{TOKEN}/{method}` with a JSON body, answered with
//! `{"ok": true, "result": …}` or `{"ok": false, "error_code", "description", "parameters"}`.
//!
//! Errors are classified ([`BotError`]) so the callers decide what to retry: the poller and the
//! small idempotent calls retry here ([`Bot::call_retrying`]); the outbox retries sends itself,
//! because a send is not idempotent. The token is never in an error, a log line or `Debug`:
//! reqwest's errors are stripped of their URL and scrubbed once more before they are shown.

use std::time::Duration;

use serde_json::Value;

/// The bot's token. Never printed: `Debug` shows a mask.
#[derive(Clone)]
pub struct BotToken(String);

impl BotToken {
    pub fn new(token: impl Into<String>) -> BotToken {
        BotToken(token.into().trim().to_owned())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with the token replaced by `***` wherever it appears.
    pub fn scrub(&self, text: &str) -> String {
        if self.0.is_empty() { text.to_owned() } else { text.replace(&self.0, "***") }
    }
}

impl std::fmt::Debug for BotToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BotToken(***)")
    }
}

/// Why a Bot API call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BotError {
    /// No answer. `sent`: the request may have reached Telegram (a timeout or a connection cut
    /// after it left), so its effect is unknown.
    #[error("Telegram could not be reached ({message}); check the network and TELEGRAM_API_BASE")]
    Network { message: String, sent: bool },
    /// 429: Telegram asks to wait this long.
    #[error("Telegram asks to slow down: retry after {retry_after} s")]
    RateLimited { retry_after: u64 },
    /// 5xx: Telegram (or a proxy in front of it) failed; nothing was done.
    #[error("Telegram answered HTTP {status}: {description}")]
    Server { status: u16, description: String },
    /// Any other refusal (400 bad request, 401 bad token, 403 blocked by the user, …).
    #[error("Telegram refused the request (HTTP {status}): {description}")]
    Rejected { status: u16, description: String },
}

impl BotError {
    /// Whether trying again later can help.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            BotError::Network { .. } | BotError::RateLimited { .. } | BotError::Server { .. }
        )
    }

    /// Telegram refused HTML markup it could not parse.
    pub fn is_bad_markup(&self) -> bool {
        matches!(self, BotError::Rejected { description, .. } if description.contains("can't parse entities"))
    }

    /// An edit that would change nothing (already the shown text).
    pub fn is_not_modified(&self) -> bool {
        matches!(self, BotError::Rejected { description, .. } if description.contains("message is not modified"))
    }

    /// The token is wrong or revoked.
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, BotError::Rejected { status: 401 | 404, .. })
    }
}

/// How long to wait before try `attempt` (1-based) after a retryable failure: `retry_after`
/// when Telegram said so, else `base` doubled per attempt, at most `max`.
pub fn backoff(error: &BotError, attempt: u32, base: Duration, max: Duration) -> Duration {
    if let BotError::RateLimited { retry_after } = error {
        return Duration::from_secs(*retry_after).max(base);
    }
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    base.saturating_mul(factor).min(max)
}

/// A multipart/form-data body: each field of `fields` as text (strings as they are, other
/// values as JSON), then `content` as the file part `document`. Returns the boundary and the
/// body; the boundary is one that occurs nowhere in the parts.
pub fn multipart(
    fields: &serde_json::Map<String, Value>,
    filename: &str,
    content: &[u8],
) -> (String, Vec<u8>) {
    let mut boundary = String::from("aria-form-boundary-7d1f3c");
    let occurs = |b: &str, hay: &[u8]| hay.windows(b.len()).any(|w| w == b.as_bytes());
    let texts: Vec<(String, String)> = fields
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
        .collect();
    while occurs(&boundary, content)
        || texts
            .iter()
            .any(|(k, v)| occurs(&boundary, k.as_bytes()) || occurs(&boundary, v.as_bytes()))
    {
        boundary.push_str("-x");
    }
    // A file name is the channel's own (never the model's), but quotes and line breaks would
    // break the header: they are replaced.
    let filename: String =
        filename.chars().map(|c| if matches!(c, '"' | '\r' | '\n') { '_' } else { c }).collect();
    let mut body = Vec::with_capacity(content.len() + 512);
    for (name, value) in &texts {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"document\"; \
             filename=\"{filename}\"\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (boundary, body)
}

/// The client.
#[derive(Debug, Clone)]
pub struct Bot {
    http: reqwest::Client,
    base: String,
    token: BotToken,
    /// The first wait after a retryable failure (doubled each time, at most 30 s).
    pub retry_base: Duration,
}

/// The longest a call other than `getUpdates` may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

impl Bot {
    pub fn new(api_base: &str, token: BotToken, retry_base: Duration) -> Result<Bot, String> {
        let base = api_base.trim().trim_end_matches('/').to_owned();
        let url = reqwest::Url::parse(&base)
            .map_err(|e| format!("the Telegram API base {base:?} is not a URL ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("the Telegram API base {base:?} must start with https://"));
        }
        let http = crate::http::client_for(&url, Duration::from_secs(10), None)?;
        Ok(Bot { http, base, token, retry_base })
    }

    /// One call, no retry. `wait` is how long the answer may take (a long poll's timeout plus
    /// a margin; [`CALL_TIMEOUT`] when `None`).
    pub async fn call(
        &self,
        method: &str,
        body: &Value,
        wait: Option<Duration>,
    ) -> Result<Value, BotError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token.0);
        let request = self.http.post(url).json(body).timeout(wait.unwrap_or(CALL_TIMEOUT));
        self.answer(method, request).await
    }

    /// `sendDocument`: `content` uploaded as the file `filename` (multipart/form-data, as the
    /// Bot API takes new files), with the text fields of `fields` (`chat_id`, `caption`, …).
    pub async fn send_document(
        &self,
        fields: &serde_json::Map<String, Value>,
        filename: &str,
        content: &[u8],
    ) -> Result<Value, BotError> {
        let (boundary, body) = multipart(fields, filename, content);
        let url = format!("{}/bot{}/sendDocument", self.base, self.token.0);
        let request = self
            .http
            .post(url)
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body)
            .timeout(CALL_TIMEOUT);
        self.answer("sendDocument", request).await
    }

    /// Sends `request` and reads the Bot API's answer.
    async fn answer(
        &self,
        method: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Value, BotError> {
        let sent = request.send().await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                let left = !e.is_connect() && !e.is_builder();
                return Err(BotError::Network { message: self.describe(e), sent: left });
            }
        };
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|e| BotError::Network { message: self.describe(e), sent: true })?;
        let answer: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(_) if status >= 500 => {
                return Err(BotError::Server {
                    status,
                    description: "not a Bot API answer".into(),
                });
            }
            Err(_) => {
                return Err(BotError::Rejected {
                    status,
                    description: format!("the answer to {method} is not JSON"),
                });
            }
        };
        if answer.get("ok").and_then(Value::as_bool) == Some(true) {
            return Ok(answer.get("result").cloned().unwrap_or(Value::Null));
        }
        let description = self
            .token
            .scrub(answer.get("description").and_then(Value::as_str).unwrap_or("no description"));
        if let Some(retry_after) = answer.pointer("/parameters/retry_after").and_then(Value::as_u64)
        {
            return Err(BotError::RateLimited { retry_after });
        }
        Err(match status {
            429 => BotError::RateLimited { retry_after: 1 },
            500.. => BotError::Server { status, description },
            _ => BotError::Rejected { status, description },
        })
    }

    /// A call that is safe to repeat (`getMe`, `setMyCommands`, `sendChatAction`,
    /// `answerCallbackQuery`), retried up to `attempts` times on retryable failures.
    pub async fn call_retrying(
        &self,
        method: &str,
        body: &Value,
        attempts: u32,
    ) -> Result<Value, BotError> {
        let mut attempt = 1;
        loop {
            match self.call(method, body, None).await {
                Err(e) if e.is_retryable() && attempt < attempts => {
                    let wait = backoff(&e, attempt, self.retry_base, Duration::from_secs(30));
                    tracing::debug!(method, "Telegram call failed, retrying in {wait:?}: {e}");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// The bytes of a file `getFile` named (`file_path`), at most `limit` bytes.
    pub async fn download(&self, file_path: &str, limit: usize) -> Result<Vec<u8>, BotError> {
        let url = format!("{}/file/bot{}/{file_path}", self.base, self.token.0);
        let response = self
            .http
            .get(url)
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .map_err(|e| BotError::Network { message: self.describe(e), sent: false })?;
        let status = response.status().as_u16();
        if status != 200 {
            let description = format!("the file download answered HTTP {status}");
            return Err(if status >= 500 {
                BotError::Server { status, description }
            } else {
                BotError::Rejected { status, description }
            });
        }
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(BotError::Rejected {
                status: 413,
                description: "the file is too large".into(),
            });
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| BotError::Network { message: self.describe(e), sent: false })?;
        if bytes.len() > limit {
            return Err(BotError::Rejected {
                status: 413,
                description: "the file is too large".into(),
            });
        }
        Ok(bytes.to_vec())
    }

    /// A reqwest error as text, without the URL (which holds the token).
    fn describe(&self, e: reqwest::Error) -> String {
        let kind = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "connection failed"
        } else if e.is_body() || e.is_decode() {
            "the answer was cut off"
        } else {
            "request failed"
        };
        let e = e.without_url();
        let mut detail = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            detail.push_str(": ");
            detail.push_str(&s.to_string());
            source = s.source();
        }
        self.token.scrub(&format!("{kind}: {detail}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_never_shows() {
        let token = BotToken::new("123:SECRET");
        assert_eq!(format!("{token:?}"), "BotToken(***)");
        assert_eq!(token.scrub("url /bot123:SECRET/getMe"), "url /bot***/getMe");
    }

    #[test]
    fn a_document_upload_is_multipart_form_data_the_bot_api_can_read() {
        let mut fields = serde_json::Map::new();
        fields.insert("chat_id".into(), serde_json::json!(42));
        fields.insert("caption".into(), serde_json::json!("the whole call"));
        // Content that holds the first boundary tried: another one is chosen.
        let content = "echo --aria-form-boundary-7d1f3c\r\n; rm -rf important ⟨U+202E⟩";
        let (boundary, body) = multipart(&fields, "approval-1.txt", content.as_bytes());
        assert_ne!(boundary, "aria-form-boundary-7d1f3c");
        let parsed = aria_testkit::telegram_mock::parse_multipart(&body).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!({
                "chat_id": 42,
                "caption": "the whole call",
                "document": {"filename": "approval-1.txt", "content": content},
            })
        );
    }

    #[test]
    fn backoff_follows_retry_after_else_doubles_up_to_the_cap() {
        let base = Duration::from_millis(500);
        let max = Duration::from_secs(30);
        let limited = BotError::RateLimited { retry_after: 7 };
        assert_eq!(backoff(&limited, 1, base, max), Duration::from_secs(7));
        let down = BotError::Server { status: 502, description: String::new() };
        assert_eq!(backoff(&down, 1, base, max), base);
        assert_eq!(backoff(&down, 3, base, max), Duration::from_secs(2));
        assert_eq!(backoff(&down, 30, base, max), max);
    }
}
