//! Turning what an OpenAI-compatible server says when it fails into a classified
//! [`ProviderError`]: HTTP statuses and bodies, `error` objects inside a stream, transport errors.

use std::time::Duration;

use aria_api::ProviderError;
use serde_json::Value;

pub(crate) use crate::http::truncate;

/// How much of an unclassified error body is kept in [`ProviderError::Http`].
pub(crate) const MAX_BODY_CHARS: usize = 500;

/// The fields of an OpenAI `{"error": {...}}` object (or an Ollama-style `{"error": "text"}`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ErrorInfo {
    pub message: String,
    pub kind: String,
    pub code: String,
    /// A numeric `code` (vLLM puts the HTTP status there).
    pub status: Option<u16>,
}

impl ErrorInfo {
    /// Reads the `error` member of a parsed body, or the body itself when it is vLLM's
    /// top-level `{"object": "error", ...}`.
    pub(crate) fn from_body(body: &Value) -> Option<ErrorInfo> {
        match body.get("error") {
            Some(error) => Self::from_error(error),
            None if body.get("object").and_then(Value::as_str) == Some("error") => {
                Self::from_error(body)
            }
            None => None,
        }
    }

    /// Reads an `error` value itself.
    pub(crate) fn from_error(error: &Value) -> Option<ErrorInfo> {
        let text = |key: &str| match error.get(key) {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        };
        match error {
            Value::String(message) => {
                Some(ErrorInfo { message: message.clone(), ..ErrorInfo::default() })
            }
            Value::Object(_) => Some(ErrorInfo {
                message: text("message"),
                kind: text("type"),
                code: text("code"),
                status: error
                    .get("code")
                    .and_then(Value::as_u64)
                    .and_then(|c| u16::try_from(c).ok())
                    .filter(|c| (400..600).contains(c)),
            }),
            _ => None,
        }
    }

    fn is_context_length(&self) -> bool {
        let message = self.message.to_lowercase();
        self.code == "context_length_exceeded"
            || self.kind.contains("context")
            || [
                "maximum context length",
                "context length",
                "context_length",
                "context window",
                "context size",
            ]
            .iter()
            .any(|needle| message.contains(needle))
    }

    fn is_rate_limit(&self) -> bool {
        self.code == "rate_limit_exceeded" || self.kind.starts_with("rate_limit")
    }

    fn is_auth(&self) -> bool {
        self.code == "invalid_api_key" || self.kind == "authentication_error"
    }
}

/// Classifies a non-success HTTP answer.
pub(crate) fn from_status(status: u16, retry_after: Option<Duration>, body: &str) -> ProviderError {
    let info = serde_json::from_str::<Value>(body).ok().and_then(|v| ErrorInfo::from_body(&v));
    let message = match &info {
        Some(info) if !info.message.is_empty() => info.message.clone(),
        _ if !body.trim().is_empty() => truncate(body.trim(), MAX_BODY_CHARS),
        _ => format!("HTTP {status} with an empty body"),
    };
    let info =
        info.unwrap_or_else(|| ErrorInfo { message: message.clone(), ..ErrorInfo::default() });
    match status {
        401 | 403 => ProviderError::Auth { message },
        // Out of credit is not a rate limit: waiting will not help, so it stays a 429 `Http`.
        429 if info.code == "insufficient_quota" || info.kind == "insufficient_quota" => {
            ProviderError::Http { status, body: truncate(body, MAX_BODY_CHARS) }
        }
        429 => ProviderError::RateLimited { retry_after },
        400..=499 if info.is_context_length() => ProviderError::ContextLengthExceeded { message },
        _ => ProviderError::Http { status, body: truncate(body, MAX_BODY_CHARS) },
    }
}

/// Classifies an `error` object that arrived inside a 200 event stream. Without a status of its
/// own it is reported as a server error (HTTP 500): the request had been accepted, so the
/// server failed while answering, and trying again may work.
pub(crate) fn from_stream_error(error: &Value) -> ProviderError {
    let info = ErrorInfo::from_error(error).unwrap_or_default();
    if let Some(status) = info.status {
        return from_status(status, None, &serde_json::json!({ "error": error }).to_string());
    }
    let message = if info.message.is_empty() {
        truncate(&error.to_string(), MAX_BODY_CHARS)
    } else {
        info.message.clone()
    };
    if info.is_context_length() {
        ProviderError::ContextLengthExceeded { message }
    } else if info.is_rate_limit() {
        ProviderError::RateLimited { retry_after: None }
    } else if info.is_auth() {
        ProviderError::Auth { message }
    } else {
        let body =
            truncate(&format!("error reported inside the stream: {message}"), MAX_BODY_CHARS);
        ProviderError::Http { status: 500, body }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn openai_error(kind: &str, code: Option<&str>, message: &str) -> String {
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
            .to_string()
    }

    #[test]
    fn auth_statuses_carry_the_servers_message() {
        let body = openai_error(
            "invalid_request_error",
            Some("invalid_api_key"),
            "Incorrect API key provided",
        );
        assert_eq!(
            from_status(401, None, &body),
            ProviderError::Auth { message: "Incorrect API key provided".into() }
        );
        assert_eq!(
            from_status(403, None, "forbidden"),
            ProviderError::Auth { message: "forbidden".into() }
        );
    }

    #[test]
    fn rate_limits_keep_retry_after_but_an_empty_quota_is_not_a_rate_limit() {
        let wait = Some(Duration::from_secs(3));
        assert_eq!(from_status(429, wait, "{}"), ProviderError::RateLimited { retry_after: wait });
        let quota = openai_error(
            "insufficient_quota",
            Some("insufficient_quota"),
            "You exceeded your quota",
        );
        let err = from_status(429, wait, &quota);
        assert_eq!(err.kind(), "http");
        assert!(!err.is_retryable());
    }

    #[test]
    fn context_length_is_recognised_in_the_shapes_servers_use() {
        let openai = openai_error(
            "invalid_request_error",
            Some("context_length_exceeded"),
            "This model's maximum context length is 8192 tokens.",
        );
        let vllm = json!({"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens", "type": "BadRequestError", "code": 400}).to_string();
        let llama = json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error"}}).to_string();
        for (status, body) in
            [(400, openai), (400, llama), (413, "maximum context length exceeded".into())]
        {
            assert_eq!(
                from_status(status, None, &body).kind(),
                "context_length_exceeded",
                "{body}"
            );
        }
        let err = from_status(400, None, &vllm);
        assert!(
            matches!(&err, ProviderError::ContextLengthExceeded { message } if message.starts_with("This model's"))
        );
        assert_eq!(
            from_status(400, None, &openai_error("invalid_request_error", None, "bad")).kind(),
            "http"
        );
    }

    #[test]
    fn other_statuses_keep_a_bounded_body() {
        let long = "x".repeat(2000);
        let ProviderError::Http { status, body } = from_status(502, None, &long) else { panic!() };
        assert_eq!(status, 502);
        assert_eq!(body.chars().count(), MAX_BODY_CHARS + 1);
        assert!(from_status(503, None, "").is_retryable());
    }

    #[test]
    fn stream_errors_are_classified_like_statuses() {
        let ctx =
            json!({"message": "maximum context length is 10", "type": "invalid_request_error"});
        assert_eq!(from_stream_error(&ctx).kind(), "context_length_exceeded");
        let rate = json!({"message": "slow", "type": "rate_limit_error"});
        assert_eq!(from_stream_error(&rate), ProviderError::RateLimited { retry_after: None });
        let numeric = json!({"message": "nope", "code": 401});
        assert_eq!(from_stream_error(&numeric), ProviderError::Auth { message: "nope".into() });
        let other = json!({"message": "The server had an error", "type": "server_error"});
        let err = from_stream_error(&other);
        assert!(
            matches!(&err, ProviderError::Http { status: 500, body } if body.contains("The server had an error"))
        );
        assert!(err.is_retryable());
        assert!(from_stream_error(&json!("model crashed")).to_string().contains("model crashed"));
    }
}
