//! Shared helpers for the integration suite.

mod anthropic;
mod embed;
mod ollama;
mod openai_errors;
mod openai_stream;
mod router;

use std::time::Duration;

use aria_api::{ChatEvent, ChatRequest, Message, Provider, ProviderError};
use aria_models::{OpenAiConfig, OpenAiProvider};
use aria_testkit::openai_mock::MockServer;
use futures::StreamExt;

/// A provider pointed at `server`, with short timeouts so failures show up fast.
pub fn provider(server: &MockServer) -> OpenAiProvider {
    OpenAiProvider::new(config(&server.base_url())).unwrap()
}

pub fn config(base_url: &str) -> OpenAiConfig {
    OpenAiConfig {
        connect_timeout: Duration::from_secs(2),
        first_byte_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        ..OpenAiConfig::new(base_url).with_api_key("sk-test-key")
    }
}

pub fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: "gpt-mock".into(),
        messages,
        tools: vec![],
        max_tokens: None,
        temperature: None,
    }
}

/// Every event until the stream ends, and the error that ended it, if any. Fails the test if
/// anything follows an error.
pub async fn drain(
    provider: &dyn Provider,
    request: ChatRequest,
) -> (Vec<ChatEvent>, Option<ProviderError>) {
    let mut stream = provider.stream(request);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => {
                assert!(stream.next().await.is_none(), "the stream ends after an error");
                return (events, Some(err));
            }
        }
    }
    (events, None)
}

pub fn text_of(events: &[ChatEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
