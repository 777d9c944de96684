//! Successful answers from the OpenAI-compatible provider, and the requests it sends.

use std::time::Duration;

use aria_api::{ChatEvent, FinishReason, Message, Provider, ToolCall, ToolSpec, Usage};
use aria_models::{OpenAiConfig, OpenAiProvider};
use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{config, drain, provider, request, text_of};

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
}

#[tokio::test]
async fn streamed_text_arrives_in_deltas_then_usage_then_finished() {
    let server =
        MockOpenAi::new(vec![MockTurn::text("Hello from the mock, wörld 🌍")]).usage(21, 4).serve();
    let (events, err) = drain(&provider(&server), request(vec![Message::user("hi")])).await;
    assert_eq!(err, None);

    let deltas = events.iter().filter(|e| matches!(e, ChatEvent::TextDelta { .. })).count();
    assert!(deltas >= 3, "text is streamed, not buffered: {events:?}");
    assert_eq!(text_of(&events), "Hello from the mock, wörld 🌍");
    let tail = &events[events.len() - 2..];
    assert_eq!(
        tail,
        [
            ChatEvent::Usage { usage: Usage { input_tokens: 21, output_tokens: 4 } },
            ChatEvent::Finished { reason: FinishReason::Stop },
        ]
    );
}

#[tokio::test]
async fn the_request_is_a_streaming_chat_completion_with_bearer_auth() {
    let server = MockOpenAi::start(vec![MockTurn::text("ok")]).await;
    let mut req = request(vec![Message::system("be brief"), Message::user("hi")]);
    req.max_tokens = Some(100);
    req.temperature = Some(0.3);
    drain(&provider(&server), req).await;

    let body = &server.requests()[0];
    assert_eq!(
        *body,
        json!({
            "model": "gpt-mock",
            "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 100,
            "temperature": 0.3,
        })
    );
    let headers = &server.request_headers()[0];
    assert_eq!(headers["authorization"], "Bearer sk-test-key");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["accept"], "text/event-stream");
}

#[tokio::test]
async fn without_a_key_no_authorization_is_sent_and_a_trailing_slash_is_fine() {
    let server = MockOpenAi::start(vec![MockTurn::text("ok")]).await;
    let config = OpenAiConfig { api_key: None, ..config(&format!("{}/", server.base_url())) };
    let response =
        OpenAiProvider::new(config).unwrap().complete(request(vec![Message::user("hi")])).await;
    assert_eq!(response.unwrap().text, "ok");
    assert!(!server.request_headers()[0].contains_key("authorization"));
}

#[tokio::test]
async fn one_tool_call_arrives_whole() {
    let args = r#"{"path":"README.md","max_lines":40}"#;
    let server = MockOpenAi::start(vec![MockTurn::tool_call("file_read", args)]).await;
    let (events, err) = drain(&provider(&server), request(vec![Message::user("read it")])).await;
    assert_eq!(err, None);
    let calls: Vec<&ToolCall> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolCall { call } => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls, [&call("call_1_0", "file_read", args)]);
    assert_eq!(events.last(), Some(&ChatEvent::Finished { reason: FinishReason::ToolCalls }));
}

#[tokio::test]
async fn two_interleaved_calls_with_split_arguments_are_reassembled() {
    let a = r#"{"pattern":"fn main","path":"src/ — ünïcode"}"#;
    let b = r#"{"command":"cargo test -p aria-models --lib"}"#;
    let turn = MockTurn::TextThenTools(
        "Let me check two things.".into(),
        vec![("search".into(), a.into()), ("shell".into(), b.into())],
    );
    let server = MockOpenAi::start(vec![turn]).await;
    let response = provider(&server).complete(request(vec![Message::user("go")])).await.unwrap();
    assert_eq!(response.text, "Let me check two things.");
    assert_eq!(
        response.tool_calls,
        vec![call("call_1_0", "search", a), call("call_1_1", "shell", b)]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert!(response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
}

#[tokio::test]
async fn tool_results_go_back_paired_with_their_call_ids_and_tools_are_declared() {
    let server = MockOpenAi::start(vec![
        MockTurn::ToolCalls(vec![
            ("ls".into(), r#"{"dir":"."}"#.into()),
            ("now".into(), "{}".into()),
        ]),
        MockTurn::text("Two files; it is noon."),
    ])
    .await;
    let provider = provider(&server);
    let tools = vec![ToolSpec {
        name: "ls".into(),
        description: "List a directory".into(),
        parameters: json!({"type": "object", "properties": {"dir": {"type": "string"}}, "required": ["dir"]}),
    }];
    let mut messages = vec![Message::user("what is here, and when?")];
    let first = provider
        .complete(aria_api::ChatRequest { tools: tools.clone(), ..request(messages.clone()) });
    let first = first.await.unwrap();
    messages.push(Message::assistant(first.text.clone(), first.tool_calls.clone()));
    for (call, output) in first.tool_calls.iter().zip(["a.txt b.txt", "12:00"]) {
        messages.push(Message::tool_result(call.id.clone(), output));
    }
    let second =
        provider.complete(aria_api::ChatRequest { tools, ..request(messages) }).await.unwrap();
    assert_eq!(second.text, "Two files; it is noon.");

    let sent = &server.requests()[1];
    assert_eq!(
        sent["tools"],
        json!([{"type": "function", "function": {
            "name": "ls", "description": "List a directory",
            "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}, "required": ["dir"]},
        }}])
    );
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": "what is here, and when?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1_0", "type": "function", "function": {"name": "ls", "arguments": "{\"dir\":\".\"}"}},
                {"id": "call_1_1", "type": "function", "function": {"name": "now", "arguments": "{}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1_0", "content": "a.txt b.txt"},
            {"role": "tool", "tool_call_id": "call_1_1", "content": "12:00"},
        ])
    );
}

#[tokio::test]
async fn a_slow_stream_that_keeps_talking_is_not_an_idle_timeout() {
    // Ten chunks 60 ms apart take longer than the idle timeout, but no single gap does.
    let server = MockOpenAi::new(vec![MockTurn::text("slow and steady wins")])
        .chunk_delay(Duration::from_millis(60))
        .serve();
    let config =
        OpenAiConfig { idle_timeout: Duration::from_millis(250), ..config(&server.base_url()) };
    let started = std::time::Instant::now();
    let (events, err) =
        drain(&OpenAiProvider::new(config).unwrap(), request(vec![Message::user("hi")])).await;
    assert_eq!(err, None);
    assert_eq!(text_of(&events), "slow and steady wins");
    assert!(started.elapsed() > Duration::from_millis(250), "the answer outlasted one idle period");
}

#[tokio::test]
async fn a_server_that_closes_after_finish_reason_without_done_is_accepted() {
    let raw = concat!(
        ": ping\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\r\n\r\n",
    );
    let server = MockOpenAi::start(vec![MockTurn::Raw(raw.into())]).await;
    let (events, err) = drain(&provider(&server), request(vec![Message::user("hi")])).await;
    assert_eq!(err, None);
    assert_eq!(
        events,
        [
            ChatEvent::TextDelta { text: "Hi".into() },
            ChatEvent::Finished { reason: FinishReason::Length }
        ]
    );
}

#[tokio::test]
async fn models_are_listed() {
    let server =
        MockOpenAi::new(vec![]).models(vec!["llama3.2:3b".into(), "qwen2.5:7b".into()]).serve();
    let ids = provider(&server).list_models().await.unwrap();
    assert_eq!(ids, ["llama3.2:3b", "qwen2.5:7b"]);
}
