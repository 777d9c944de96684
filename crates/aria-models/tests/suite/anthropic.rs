//! The Anthropic Messages provider against a mock speaking the documented event stream.

use std::time::Duration;

use aria_api::{
    ChatEvent, ChatRequest, FinishReason, Message, Provider, ProviderError, ToolCall, ToolSpec,
    Usage,
};
use aria_models::{AnthropicConfig, AnthropicProvider, Timeouts};
use aria_testkit::anthropic_mock::{MockAnthropic, MockTurn};
use aria_testkit::mock::MockServer;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{drain, request, text_of};

fn provider(server: &MockServer) -> AnthropicProvider {
    let config = AnthropicConfig {
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            first_byte: Duration::from_secs(5),
            idle: Duration::from_secs(5),
            request: None,
        },
        ..AnthropicConfig::new(server.url(), "sk-ant-test")
    };
    AnthropicProvider::new(config).unwrap()
}

fn calls(events: &[ChatEvent]) -> Vec<ToolCall> {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolCall { call } => Some(call.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_streams_with_usage_and_the_request_has_the_documented_shape() {
    let server = MockAnthropic::new(vec![MockTurn::text("Hello from Claude, wörld 🌍")])
        .usage(31, 9)
        .serve();
    let mut req = request(vec![Message::system("be brief"), Message::user("hi")]);
    req.model = "claude-test".into();
    let (events, err) = drain(&provider(&server), req).await;
    assert_eq!(err, None);
    assert!(events.iter().filter(|e| matches!(e, ChatEvent::TextDelta { .. })).count() >= 3);
    assert_eq!(text_of(&events), "Hello from Claude, wörld 🌍");
    assert_eq!(
        events[events.len() - 2..],
        [
            ChatEvent::Usage { usage: Usage { input_tokens: 31, output_tokens: 9 } },
            ChatEvent::Finished { reason: FinishReason::Stop },
        ]
    );
    assert_eq!(
        server.requests()[0],
        json!({"model": "claude-test", "max_tokens": 4096, "system": "be brief", "stream": true,
               "messages": [{"role": "user", "content": "hi"}]})
    );
    let headers = &server.request_headers()[0];
    assert_eq!(headers["x-api-key"], "sk-ant-test");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["accept"], "text/event-stream");
    assert!(!headers.contains_key("authorization"));
}

#[tokio::test]
async fn several_tool_calls_with_split_inputs_arrive_whole_and_results_go_back_paired() {
    let a = r#"{"path":"src/ — ünïcode.rs","max_lines":40}"#;
    let b = r#"{"command":"cargo test"}"#;
    let server = MockAnthropic::start(vec![
        MockTurn::TextThenTools(
            "Checking.".into(),
            vec![("file_read".into(), a.into()), ("shell".into(), b.into())],
        ),
        MockTurn::text("All good."),
    ])
    .await;
    let provider = provider(&server);
    let tools = vec![ToolSpec {
        name: "file_read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }];
    let mut messages = vec![Message::user("check")];
    let (events, err) =
        drain(&provider, ChatRequest { tools: tools.clone(), ..request(messages.clone()) }).await;
    assert_eq!(err, None);
    let got = calls(&events);
    assert_eq!(
        got,
        [
            ToolCall { id: "toolu_mock1_0".into(), name: "file_read".into(), arguments: a.into() },
            ToolCall { id: "toolu_mock1_1".into(), name: "shell".into(), arguments: b.into() },
        ]
    );
    assert_eq!(events.last(), Some(&ChatEvent::Finished { reason: FinishReason::ToolCalls }));
    messages.push(Message::assistant("Checking.", got.clone()));
    messages.push(Message::tool_result(&got[0].id, "fn main() {}"));
    messages.push(Message::tool_result(&got[1].id, "ok"));
    let second = provider.complete(ChatRequest { tools, ..request(messages) }).await.unwrap();
    assert_eq!(second.text, "All good.");

    let sent = &server.requests()[1];
    assert_eq!(
        sent["tools"],
        json!([{"name": "file_read", "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}])
    );
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": "check"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_mock1_0", "name": "file_read", "input": {"path": "src/ — ünïcode.rs", "max_lines": 40}},
                {"type": "tool_use", "id": "toolu_mock1_1", "name": "shell", "input": {"command": "cargo test"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_mock1_0", "content": "fn main() {}"},
                {"type": "tool_result", "tool_use_id": "toolu_mock1_1", "content": "ok"},
            ]},
        ])
    );
}

async fn failure(turn: MockTurn) -> (Vec<ChatEvent>, ProviderError) {
    let server = MockAnthropic::start(vec![turn]).await;
    let (events, err) = drain(&provider(&server), request(vec![Message::user("hi")])).await;
    (events, err.expect("the call should fail"))
}

#[tokio::test]
async fn error_bodies_are_classified() {
    let (_, auth) =
        failure(MockAnthropic::error(401, "authentication_error", "invalid x-api-key")).await;
    assert_eq!(auth, ProviderError::Auth { message: "invalid x-api-key".into() });
    let (_, rate) = failure(MockTurn::Error {
        status: 429,
        body:
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
                .to_string(),
        retry_after: Some(3),
    })
    .await;
    assert_eq!(rate, ProviderError::RateLimited { retry_after: Some(Duration::from_secs(3)) });
    let (_, long) = failure(MockAnthropic::error(
        400,
        "invalid_request_error",
        "prompt is too long: 208310 tokens > 200000 maximum",
    ))
    .await;
    assert_eq!(long.kind(), "context_length_exceeded");
    let (_, overloaded) =
        failure(MockAnthropic::error(529, "overloaded_error", "Overloaded")).await;
    assert!(
        matches!(overloaded, ProviderError::Http { status: 529, .. }) && overloaded.is_retryable()
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_and_a_cut_stream_end_with_classified_errors() {
    let raw = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Par\"}}\n\n",
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let (events, err) = failure(MockTurn::Raw(raw.into())).await;
    assert_eq!(text_of(&events), "Par");
    assert!(matches!(err, ProviderError::Http { status: 529, .. }), "{err:?}");
    let (events, err) = failure(MockTurn::Truncated).await;
    assert_eq!(text_of(&events), "Hel");
    assert_eq!(err.kind(), "malformed_stream");
}

#[tokio::test]
async fn a_stalled_stream_times_out() {
    let server = MockAnthropic::start(vec![MockTurn::Stall]).await;
    let config = AnthropicConfig {
        timeouts: Timeouts { idle: Duration::from_millis(200), ..Timeouts::default() },
        ..AnthropicConfig::new(server.url(), "k")
    };
    let (events, err) =
        drain(&AnthropicProvider::new(config).unwrap(), request(vec![Message::user("hi")])).await;
    assert!(events.is_empty());
    assert_eq!(err, Some(ProviderError::Timeout { after: Duration::from_millis(200) }));
}

#[tokio::test]
async fn models_are_listed_with_the_auth_headers() {
    let server =
        MockAnthropic::new(vec![]).models(vec!["claude-a".into(), "claude-b".into()]).serve();
    assert_eq!(provider(&server).list_models().await.unwrap(), ["claude-a", "claude-b"]);
}
