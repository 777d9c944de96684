//! The provider contract: one request in, a stream of events out.

use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::message::{Message, ToolCall, Usage};
use crate::tool::ToolSpec;

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    Other,
}

/// What a provider stream yields. Tool calls arrive whole; text arrives in deltas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    TextDelta { text: String },
    ToolCall { call: ToolCall },
    Usage { usage: Usage },
    Finished { reason: FinishReason },
}

/// A whole answer, collected from a stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish_reason: Option<FinishReason>,
}

impl ChatResponse {
    /// Folds one event into the response.
    pub fn absorb(&mut self, event: ChatEvent) {
        match event {
            ChatEvent::TextDelta { text } => self.text.push_str(&text),
            ChatEvent::ToolCall { call } => self.tool_calls.push(call),
            ChatEvent::Usage { usage } => self.usage.add(usage),
            ChatEvent::Finished { reason } => self.finish_reason = Some(reason),
        }
    }
}

/// The stream a provider returns. It is `'static`: providers clone what they need into it.
pub type ChatStream = BoxStream<'static, Result<ChatEvent, ProviderError>>;

/// A chat model. Only [`Provider::stream`] is required; [`Provider::complete`] collects it.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// A short name for logs and traces, e.g. `openai`.
    fn name(&self) -> &str;

    /// Starts a streaming call. Errors that happen before the first event are yielded as the
    /// stream's first item.
    fn stream(&self, request: ChatRequest) -> ChatStream;

    /// Runs a call to completion.
    fn complete(
        &self,
        request: ChatRequest,
    ) -> BoxFuture<'static, Result<ChatResponse, ProviderError>> {
        let mut stream = self.stream(request);
        Box::pin(async move {
            let mut response = ChatResponse::default();
            while let Some(event) = stream.next().await {
                response.absorb(event?);
            }
            Ok(response)
        })
    }
}

/// A classified provider failure. Every message says what to do next.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    #[error(
        "the model provider rejected the credentials ({message}); check the API key variable for this provider"
    )]
    Auth { message: String },
    #[error("the model provider is rate limiting requests{}; wait and retry, or lower the request rate", retry_hint(.retry_after))]
    RateLimited { retry_after: Option<Duration> },
    #[error(
        "the conversation does not fit the model's context window ({message}); shorten the input or use a model with a larger context"
    )]
    ContextLengthExceeded { message: String },
    #[error(
        "could not reach the model provider at {endpoint}: {message}; check that the server is running and the base URL is right"
    )]
    Network { endpoint: String, message: String },
    #[error("the model provider did not answer within {}s; the server may be overloaded, retry later", .after.as_secs())]
    Timeout { after: Duration },
    #[error("the model provider answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("the model provider sent a stream ARIA could not parse: {message}")]
    MalformedStream { message: String },
    #[error("the model provider is not configured correctly: {message}")]
    Config { message: String },
}

fn retry_hint(after: &Option<Duration>) -> String {
    match after {
        Some(d) => format!(" (retry after {}s)", d.as_secs()),
        None => String::new(),
    }
}

impl ProviderError {
    /// Whether trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimited { .. }
            | ProviderError::Network { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::MalformedStream { .. } => true,
            ProviderError::Http { status, .. } => *status >= 500 || *status == 408,
            ProviderError::Auth { .. }
            | ProviderError::ContextLengthExceeded { .. }
            | ProviderError::Config { .. } => false,
        }
    }

    /// A stable machine name for traces and JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderError::Auth { .. } => "auth",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::ContextLengthExceeded { .. } => "context_length_exceeded",
            ProviderError::Network { .. } => "network",
            ProviderError::Timeout { .. } => "timeout",
            ProviderError::Http { .. } => "http",
            ProviderError::MalformedStream { .. } => "malformed_stream",
            ProviderError::Config { .. } => "config",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    #[derive(Debug)]
    struct Canned(Vec<ChatEvent>);
    impl Provider for Canned {
        fn name(&self) -> &str {
            "canned"
        }
        fn stream(&self, _request: ChatRequest) -> ChatStream {
            Box::pin(stream::iter(self.0.clone().into_iter().map(Ok)))
        }
    }

    #[test]
    fn complete_collects_the_stream() {
        let call = ToolCall { id: "c1".into(), name: "file_read".into(), arguments: "{}".into() };
        let provider = Canned(vec![
            ChatEvent::TextDelta { text: "Hel".into() },
            ChatEvent::TextDelta { text: "lo".into() },
            ChatEvent::ToolCall { call: call.clone() },
            ChatEvent::Usage { usage: Usage { input_tokens: 3, output_tokens: 2 } },
            ChatEvent::Finished { reason: FinishReason::ToolCalls },
        ]);
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![],
            tools: vec![],
            max_tokens: None,
            temperature: None,
        };
        let response = futures::executor::block_on(provider.complete(request)).unwrap();
        assert_eq!(response.text, "Hello");
        assert_eq!(response.tool_calls, vec![call]);
        assert_eq!(response.usage.total(), 5);
        assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    }

    #[test]
    fn retryability_is_classified() {
        assert!(ProviderError::RateLimited { retry_after: None }.is_retryable());
        assert!(ProviderError::Http { status: 503, body: String::new() }.is_retryable());
        assert!(!ProviderError::Http { status: 400, body: String::new() }.is_retryable());
        assert!(!ProviderError::Auth { message: "bad key".into() }.is_retryable());
        let msg =
            ProviderError::RateLimited { retry_after: Some(Duration::from_secs(7)) }.to_string();
        assert!(msg.contains("retry after 7s"), "{msg}");
    }
}
