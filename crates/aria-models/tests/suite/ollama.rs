//! The native Ollama provider against a mock of `/api/chat`, `/api/show`, `/api/tags` and
//! `/api/generate`.

use std::time::Duration;

use aria_api::{ChatEvent, ChatRequest, FinishReason, Message, Provider, ToolSpec, Usage};
use aria_models::{OllamaConfig, OllamaProvider, Timeouts};
use aria_testkit::mock::MockServer;
use aria_testkit::ollama_mock::{MockOllama, MockTurn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{drain, text_of};

fn config(server: &MockServer) -> OllamaConfig {
    OllamaConfig {
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            first_byte: Duration::from_secs(5),
            idle: Duration::from_secs(5),
            request: None,
        },
        ..OllamaConfig::new(server.url())
    }
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: "mock-model".into(),
        messages,
        tools: vec![],
        max_tokens: None,
        temperature: None,
    }
}

#[tokio::test]
async fn text_streams_and_num_ctx_comes_from_the_models_real_context_length() {
    let server =
        MockOllama::new(vec![MockTurn::text("Hello from llama, wörld"), MockTurn::text("again")])
            .context_length(8192)
            .usage(26, 7)
            .serve();
    let provider =
        OllamaProvider::new(OllamaConfig { keep_alive: Some("10m".into()), ..config(&server) })
            .unwrap();
    let (events, err) = drain(&provider, request(vec![Message::user("hi")])).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&events), "Hello from llama, wörld");
    assert_eq!(
        events[events.len() - 2..],
        [
            ChatEvent::Usage { usage: Usage { input_tokens: 26, output_tokens: 7 } },
            ChatEvent::Finished { reason: FinishReason::Stop },
        ]
    );
    assert_eq!(
        server.requests()[0],
        json!({"model": "mock-model", "stream": true, "keep_alive": "10m", "options": {"num_ctx": 8192},
               "messages": [{"role": "user", "content": "hi"}]})
    );
    provider.complete(request(vec![Message::user("again")])).await.unwrap();
    let shows: Vec<_> =
        server.other_requests().into_iter().filter(|(path, _)| path == "/api/show").collect();
    assert_eq!(
        shows,
        [("/api/show".to_string(), json!({"model": "mock-model"}))],
        "asked once, then cached"
    );
}

#[tokio::test]
async fn a_huge_context_is_capped_and_a_fixed_num_ctx_skips_the_lookup() {
    let server = MockOllama::new(vec![MockTurn::text("a"), MockTurn::text("b")])
        .context_length(131_072)
        .serve();
    let capped = OllamaProvider::new(config(&server)).unwrap();
    capped.complete(request(vec![Message::user("x")])).await.unwrap();
    assert_eq!(server.requests()[0]["options"]["num_ctx"], 32_768);
    let fixed =
        OllamaProvider::new(OllamaConfig { num_ctx: Some(4096), ..config(&server) }).unwrap();
    fixed.complete(request(vec![Message::user("x")])).await.unwrap();
    assert_eq!(server.requests()[1]["options"]["num_ctx"], 4096);
    assert_eq!(server.other_requests().len(), 1);
}

#[tokio::test]
async fn several_tool_calls_arrive_and_results_go_back_named() {
    let server = MockOllama::start(vec![
        MockTurn::ToolCalls(vec![
            ("ls".into(), r#"{"dir":"."}"#.into()),
            ("now".into(), "{}".into()),
        ]),
        MockTurn::text("done"),
    ])
    .await;
    let provider = OllamaProvider::new(config(&server)).unwrap();
    let tools = vec![ToolSpec {
        name: "ls".into(),
        description: "List".into(),
        parameters: json!({"type": "object"}),
    }];
    let first = provider
        .complete(ChatRequest { tools: tools.clone(), ..request(vec![Message::user("go")]) })
        .await
        .unwrap();
    assert_eq!(first.finish_reason, Some(FinishReason::ToolCalls));
    let names: Vec<(&str, &str)> =
        first.tool_calls.iter().map(|c| (c.name.as_str(), c.arguments.as_str())).collect();
    assert_eq!(names, [("ls", r#"{"dir":"."}"#), ("now", "{}")]);
    let mut messages = vec![Message::user("go"), Message::assistant("", first.tool_calls.clone())];
    messages.push(Message::tool_result(&first.tool_calls[0].id, "a.txt"));
    messages.push(Message::tool_result(&first.tool_calls[1].id, "noon"));
    provider.complete(ChatRequest { tools, ..request(messages) }).await.unwrap();
    let sent = &server.requests()[1];
    assert_eq!(
        sent["tools"][0],
        json!({"type": "function", "function": {"name": "ls", "description": "List", "parameters": {"type": "object"}}})
    );
    assert_eq!(
        sent["messages"][1]["tool_calls"],
        json!([
            {"function": {"name": "ls", "arguments": {"dir": "."}}},
            {"function": {"name": "now", "arguments": {}}},
        ])
    );
    assert_eq!(sent["messages"][2], json!({"role": "tool", "content": "a.txt", "tool_name": "ls"}));
    assert_eq!(sent["messages"][3], json!({"role": "tool", "content": "noon", "tool_name": "now"}));
}

#[tokio::test]
async fn a_tool_call_written_as_text_becomes_a_real_call() {
    let text = "<tool_call>\n{\"name\": \"ls\", \"arguments\": {\"dir\": \"src\"}}\n</tool_call>";
    let server = MockOllama::start(vec![MockTurn::text(text)]).await;
    let provider = OllamaProvider::new(config(&server)).unwrap();
    let tools = vec![ToolSpec {
        name: "ls".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    }];
    let response = provider
        .complete(ChatRequest { tools, ..request(vec![Message::user("go")]) })
        .await
        .unwrap();
    assert_eq!(response.text, "");
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(
        (response.tool_calls[0].name.as_str(), response.tool_calls[0].arguments.as_str()),
        ("ls", "{\"dir\":\"src\"}")
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn failures_are_classified() {
    let server = MockOllama::start(vec![
        MockOllama::error(500, "llama runner process has terminated"),
        MockTurn::Truncated,
        MockTurn::Raw("{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"done\":false}\n{\"error\":\"an error was encountered while running the model\"}\n".into()),
    ])
    .await;
    let provider = OllamaProvider::new(config(&server)).unwrap();
    let (_, err) = drain(&provider, request(vec![Message::user("a")])).await;
    assert!(matches!(err, Some(aria_api::ProviderError::Http { status: 500, .. })), "{err:?}");
    let (events, err) = drain(&provider, request(vec![Message::user("b")])).await;
    assert_eq!(text_of(&events), "Hel");
    assert_eq!(err.unwrap().kind(), "malformed_stream");
    let (events, err) = drain(&provider, request(vec![Message::user("c")])).await;
    assert_eq!(text_of(&events), "x");
    assert!(err.unwrap().is_retryable());

    let unknown = OllamaProvider::new(config(&server)).unwrap();
    let (_, err) =
        drain(&unknown, ChatRequest { model: "nope".into(), ..request(vec![Message::user("d")]) })
            .await;
    let err = err.unwrap();
    assert!(
        err.to_string().contains("not found") && err.to_string().contains("ollama pull"),
        "{err}"
    );
    assert_eq!(server.hits(), 3, "a model that /api/show does not know is never sent a chat");
}

#[tokio::test]
async fn models_are_listed_and_unloaded_with_keep_alive_zero() {
    let server =
        MockOllama::new(vec![]).models(vec!["llama3.2:latest".into(), "qwen2.5:7b".into()]).serve();
    let provider = OllamaProvider::new(config(&server)).unwrap();
    assert_eq!(provider.list_models().await.unwrap(), ["llama3.2:latest", "qwen2.5:7b"]);
    provider.unload("qwen2.5:7b").await.unwrap();
    assert_eq!(
        server.other_requests(),
        [("/api/generate".to_string(), json!({"model": "qwen2.5:7b", "keep_alive": 0}))]
    );
    assert_eq!(provider.context_length("llama3.2").await.unwrap(), 32_768);
    assert!(provider.unload("missing").await.is_err());
}
