//! Requests that do not run the agent: `BACKEND/MODEL`, and requests with the client's own
//! tools. The client's messages (and tools) go to the model as they are; its answer, tool calls
//! included, comes back in OpenAI's format. No tool of ARIA's runs here.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use aria_api::{
    AuditEvent, ChatEvent, ChatRequest, ChatStream, FinishReason, Provider, ProviderError, Usage,
};
use axum::Json;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};

use super::OpenAiError;
use super::wire::{self, CompletionRequest, Meta};
use crate::Gateway;

/// Sends the request to `provider` as `model`; `shown` is the model name the answer carries.
pub(super) async fn respond(
    gw: &Gateway,
    provider: Arc<dyn Provider>,
    model: String,
    shown: String,
    request: CompletionRequest,
) -> Result<Response, OpenAiError> {
    let messages = wire::messages(request.raw_messages())?;
    let mut tools = wire::tools(request.tools.as_deref().unwrap_or_default())?;
    if request.tool_choice.as_ref().and_then(Value::as_str) == Some("none") {
        tools.clear();
    }
    gw.store.audit_append(AuditEvent::new(
        None,
        "user",
        "openai.completion",
        json!({
            "model": shown,
            "messages": messages.len(),
            "client_tools": tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            "stream": request.stream(),
        }),
    ))?;
    let chat = ChatRequest {
        model,
        messages,
        tools,
        max_tokens: request.max_tokens(),
        temperature: request.temperature,
    };
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    let meta = Meta::new(id, shown, request.include_usage());
    if !request.stream() {
        let answer = provider.complete(chat).await.map_err(provider_error)?;
        let finish = finish(answer.finish_reason, !answer.tool_calls.is_empty());
        let content = (!answer.text.is_empty()).then_some(answer.text.as_str());
        let body = wire::completion(&meta, content, &answer.tool_calls, finish, answer.usage);
        return Ok(Json(body).into_response());
    }
    let mut events = provider.stream(chat);
    // An error before anything was said is an HTTP error, not a broken stream.
    let first = match events.next().await {
        Some(Err(e)) => return Err(provider_error(e)),
        first => first,
    };
    let mut relay = Relay {
        pending: VecDeque::from([data(&wire::role_chunk(&meta))]),
        meta,
        events,
        calls: 0,
        usage: Usage::default(),
        reason: None,
        ended: false,
        store: gw.store.clone(),
    };
    relay.on(first);
    let stream = futures::stream::unfold(relay, |mut r| async move {
        loop {
            if let Some(event) = r.pending.pop_front() {
                return Some((Ok::<_, Infallible>(event), r));
            }
            if r.ended {
                return None;
            }
            let next = r.events.next().await;
            r.on(next);
        }
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// A provider stream turned into chunks.
struct Relay {
    meta: Meta,
    events: ChatStream,
    pending: VecDeque<SseEvent>,
    /// Tool calls so far (their `index`).
    calls: usize,
    usage: Usage,
    reason: Option<FinishReason>,
    ended: bool,
    /// For the secret filter: a backend's error may quote a key.
    store: std::sync::Arc<aria_store::Store>,
}

impl Relay {
    fn on(&mut self, item: Option<Result<ChatEvent, ProviderError>>) {
        let meta = &self.meta;
        match item {
            Some(Ok(ChatEvent::TextDelta { text })) if !text.is_empty() => {
                self.pending.push_back(data(&wire::content_chunk(meta, &text)));
            }
            Some(Ok(ChatEvent::TextDelta { .. })) => {}
            Some(Ok(ChatEvent::ToolCall { call })) => {
                for chunk in wire::tool_call_chunks(meta, self.calls, &call) {
                    self.pending.push_back(data(&chunk));
                }
                self.calls += 1;
            }
            Some(Ok(ChatEvent::Usage { usage })) => self.usage.add(usage),
            Some(Ok(ChatEvent::Finished { reason })) => self.reason = Some(reason),
            Some(Err(e)) => {
                self.ended = true;
                self.pending.push_back(SseEvent::default().data(error_data(&self.store, e)));
            }
            None => {
                self.ended = true;
                let finish = finish(self.reason, self.calls > 0);
                self.pending.push_back(data(&wire::finish_chunk(meta, finish)));
                if meta.include_usage {
                    self.pending.push_back(data(&wire::usage_chunk(meta, self.usage)));
                }
                self.pending.push_back(SseEvent::default().data("[DONE]"));
            }
        }
    }
}

/// The finish reason; an answer with tool calls says `tool_calls` whatever the backend said
/// (some say `stop`), since that is what OpenAI's clients look for.
fn finish(reason: Option<FinishReason>, has_calls: bool) -> &'static str {
    if has_calls {
        return "tool_calls";
    }
    reason.map_or("stop", wire::finish_reason)
}

fn data(value: &Value) -> SseEvent {
    SseEvent::default().data(value.to_string())
}

/// A failure in the middle of a stream, as its last event's data: in OpenAI's shape, through
/// the secret filter (a backend's error may quote a key or a URL with credentials).
fn error_data(store: &aria_store::Store, e: ProviderError) -> String {
    store.redact_text(&provider_error(e).body().to_string())
}

/// A model's failure as an HTTP error: the client's fault stays 4xx, the backend's is 502/504.
fn provider_error(e: ProviderError) -> OpenAiError {
    let (status, code) = match &e {
        ProviderError::Auth { .. } => (StatusCode::BAD_GATEWAY, "upstream_auth"),
        ProviderError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded"),
        ProviderError::ContextLengthExceeded { .. } => {
            (StatusCode::BAD_REQUEST, "context_length_exceeded")
        }
        ProviderError::Network { .. } => (StatusCode::BAD_GATEWAY, "upstream_unreachable"),
        ProviderError::Timeout { .. } => (StatusCode::GATEWAY_TIMEOUT, "upstream_timeout"),
        ProviderError::Http { status, .. } if (400..500).contains(status) => {
            (StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_GATEWAY), "upstream_rejected")
        }
        ProviderError::Http { .. } => (StatusCode::BAD_GATEWAY, "upstream_error"),
        ProviderError::MalformedStream { .. } => (StatusCode::BAD_GATEWAY, "upstream_malformed"),
        ProviderError::Config { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "model_config"),
    };
    OpenAiError {
        retry: Some(e.is_retryable()),
        ..OpenAiError::new(
            status,
            code,
            e.to_string(),
            "the model behind this request failed; `aria doctor` checks the backends",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_failures_keep_whose_fault_it_is() {
        let e = provider_error(ProviderError::ContextLengthExceeded { message: "too long".into() });
        assert_eq!((e.status.as_u16(), e.code.as_str()), (400, "context_length_exceeded"));
        let e = provider_error(ProviderError::Http { status: 404, body: "no model".into() });
        assert_eq!((e.status.as_u16(), e.retry), (404, Some(false)));
        let e = provider_error(ProviderError::Network {
            endpoint: "http://127.0.0.1:1".into(),
            message: "refused".into(),
        });
        assert_eq!((e.status.as_u16(), e.kind, e.retry), (502, "server_error", Some(true)));
    }

    #[test]
    fn a_failure_mid_stream_is_told_without_the_secrets_it_quotes() {
        #[derive(Debug)]
        struct Hide;
        impl aria_api::Redact for Hide {
            fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
                text.replace("sk-live-0123456789abcdef", "[REDACTED:api_key]").into()
            }
        }
        let store = aria_store::Store::open_in_memory(std::sync::Arc::new(Hide)).unwrap();
        let e =
            ProviderError::Http { status: 401, body: "bad key sk-live-0123456789abcdef".into() };
        let text = error_data(&store, e);
        assert!(!text.contains("sk-live-0123456789abcdef"), "{text}");
        assert!(text.contains("[REDACTED:api_key]") && text.contains("\"error\""), "{text}");
    }

    #[test]
    fn calls_finish_as_tool_calls() {
        assert_eq!(finish(Some(FinishReason::Stop), true), "tool_calls");
        assert_eq!(finish(Some(FinishReason::Length), false), "length");
        assert_eq!(finish(None, false), "stop");
    }
}
