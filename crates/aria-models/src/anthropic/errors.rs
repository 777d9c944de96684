//! Anthropic failures as classified errors. Bodies are `{"type": "error", "error": {"type",
//! "message"}}`; the same `error` object can arrive as an `error` event inside a stream.

use std::time::Duration;

use aria_api::ProviderError;
use serde_json::Value;

use crate::http::truncate;

const MAX_BODY_CHARS: usize = 500;

fn is_context_length(message: &str) -> bool {
    let m = message.to_lowercase();
    ["prompt is too long", "context window", "context length", "too many tokens"]
        .iter()
        .any(|needle| m.contains(needle))
}

/// Classifies a non-success HTTP answer.
pub(crate) fn from_status(status: u16, retry_after: Option<Duration>, body: &str) -> ProviderError {
    let error = serde_json::from_str::<Value>(body).ok().and_then(|v| v.get("error").cloned());
    let kind =
        error.as_ref().and_then(|e| e.get("type")).and_then(Value::as_str).unwrap_or_default();
    let message = error
        .as_ref()
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            if body.trim().is_empty() {
                format!("HTTP {status} with an empty body")
            } else {
                truncate(body.trim(), MAX_BODY_CHARS)
            }
        });
    match (status, kind) {
        (401 | 403, _) | (_, "authentication_error" | "permission_error") => {
            ProviderError::Auth { message }
        }
        (429, _) | (_, "rate_limit_error") => ProviderError::RateLimited { retry_after },
        (400..=499, _) if is_context_length(&message) => {
            ProviderError::ContextLengthExceeded { message }
        }
        _ => ProviderError::Http { status, body: truncate(body, MAX_BODY_CHARS) },
    }
}

/// Classifies an `error` object that arrived inside a 200 stream. `overloaded_error` is HTTP
/// 529 and `api_error` HTTP 500 (both worth a retry).
pub(crate) fn from_error_object(error: &Value, retry_after: Option<Duration>) -> ProviderError {
    let kind = error.get("type").and_then(Value::as_str).unwrap_or_default();
    let status = match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    };
    let body = serde_json::json!({"type": "error", "error": error}).to_string();
    match from_status(status, retry_after, &body) {
        ProviderError::Http { status, .. } => {
            let message = error.get("message").and_then(Value::as_str).unwrap_or(kind);
            ProviderError::Http {
                status,
                body: truncate(
                    &format!("error reported inside the stream: {kind}: {message}"),
                    MAX_BODY_CHARS,
                ),
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(kind: &str, message: &str) -> String {
        json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
    }

    #[test]
    fn statuses_are_classified_as_documented() {
        assert_eq!(
            from_status(401, None, &body("authentication_error", "invalid x-api-key")),
            ProviderError::Auth { message: "invalid x-api-key".into() }
        );
        let wait = Some(Duration::from_secs(4));
        assert_eq!(
            from_status(429, wait, &body("rate_limit_error", "slow")),
            ProviderError::RateLimited { retry_after: wait }
        );
        let long = from_status(
            400,
            None,
            &body("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
        );
        assert_eq!(long.kind(), "context_length_exceeded");
        let overloaded = from_status(529, None, &body("overloaded_error", "Overloaded"));
        assert!(
            matches!(overloaded, ProviderError::Http { status: 529, .. })
                && overloaded.is_retryable()
        );
        assert!(
            !from_status(400, None, &body("invalid_request_error", "bad field")).is_retryable()
        );
    }

    #[test]
    fn stream_errors_keep_their_kind() {
        let err =
            from_error_object(&json!({"type": "overloaded_error", "message": "Overloaded"}), None);
        assert!(
            matches!(&err, ProviderError::Http { status: 529, body } if body.contains("Overloaded")),
            "{err:?}"
        );
        assert!(err.is_retryable());
        assert_eq!(
            from_error_object(&json!({"type": "rate_limit_error", "message": "x"}), None).kind(),
            "rate_limited"
        );
        assert!(
            from_error_object(&json!({"type": "api_error", "message": "x"}), None).is_retryable()
        );
    }
}
