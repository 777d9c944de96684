//! Tests of the mock itself, through a real HTTP client over loopback.

use super::*;

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn chat_body(stream: bool, include_usage: bool) -> Value {
    let mut body = json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]});
    if stream {
        body["stream"] = json!(true);
    }
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

async fn post(server: &MockServer, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", server.base_url()))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Splits an SSE body into its `data:` payloads, parsed (`[DONE]` stays a string).
fn events(body: &str) -> Vec<Value> {
    assert!(body.ends_with("\n\n"), "every event ends with a blank line: {body:?}");
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let data = e.strip_prefix("data: ").unwrap_or_else(|| panic!("not a data line: {e:?}"));
            serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_string()))
        })
        .collect()
}

#[tokio::test]
async fn text_streams_as_several_deltas_with_usage_and_done() {
    let server = MockOpenAi::start(vec![MockTurn::text("Hello, world")]).await;
    let response = post(&server, &chat_body(true, true)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = events(&response.text().await.unwrap());

    assert_eq!(events[0]["object"], "chat.completion.chunk");
    assert_eq!(events[0]["model"], "gpt-test");
    assert_eq!(events[0]["choices"][0]["delta"]["role"], "assistant");
    let deltas: Vec<&str> =
        events.iter().filter_map(|e| e["choices"][0]["delta"]["content"].as_str()).collect();
    assert!(deltas.len() >= 3, "{deltas:?}");
    assert_eq!(deltas.concat(), "Hello, world");

    let n = events.len();
    assert_eq!(events[n - 3]["choices"][0]["finish_reason"], "stop");
    let usage = &events[n - 2];
    assert_eq!(usage["choices"], json!([]));
    let total = usage["usage"]["prompt_tokens"].as_u64().unwrap()
        + usage["usage"]["completion_tokens"].as_u64().unwrap();
    assert!(total > 0);
    assert_eq!(usage["usage"]["total_tokens"].as_u64(), Some(total));
    assert_eq!(events[n - 1], "[DONE]");

    assert_eq!(server.hits(), 1);
    assert_eq!(server.requests()[0]["messages"][0]["content"], "hi");
    assert_eq!(server.request_headers()[0]["authorization"], "Bearer sk-test");
}

#[tokio::test]
async fn tool_calls_stream_headers_then_interleaved_fragments() {
    let calls = vec![
        ("file_read".to_string(), r#"{"path":"src/main.rs"}"#.to_string()),
        ("shell".to_string(), r#"{"command":"cargo test -p aria"}"#.to_string()),
    ];
    let server = MockOpenAi::start(vec![MockTurn::ToolCalls(calls.clone())]).await;
    let body = post(&server, &chat_body(true, false)).await.text().await.unwrap();
    let events = events(&body);

    let mut args = [String::new(), String::new()];
    let mut order = Vec::new();
    for event in &events {
        for call in event["choices"][0]["delta"]["tool_calls"].as_array().into_iter().flatten() {
            let i = call["index"].as_u64().unwrap() as usize;
            if let Some(id) = call["id"].as_str() {
                assert_eq!(id, format!("call_1_{i}"));
                assert_eq!(call["type"], "function");
                assert_eq!(call["function"]["name"], calls[i].0.as_str());
                assert_eq!(call["function"]["arguments"], "", "the header has empty arguments");
            } else {
                assert!(call.get("type").is_none() && call["function"].get("name").is_none());
                args[i].push_str(call["function"]["arguments"].as_str().unwrap());
                order.push(i);
            }
        }
    }
    assert_eq!(args[0], calls[0].1);
    assert_eq!(args[1], calls[1].1);
    assert!(order.iter().filter(|&&i| i == 0).count() >= 3, "arguments come in fragments");
    assert!(order.windows(2).any(|w| w[0] > w[1]), "fragments are interleaved: {order:?}");
    let n = events.len();
    assert_eq!(events[n - 2]["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(events[n - 1], "[DONE]", "no usage chunk unless asked for");
}

#[tokio::test]
async fn a_request_without_stream_gets_a_whole_completion() {
    let turn = MockTurn::TextThenTools("Let me look.".into(), vec![("ls".into(), "{}".into())]);
    let server = MockOpenAi::new(vec![turn]).usage(11, 7).serve();
    let response = post(&server, &chat_body(false, false)).await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Let me look.");
    assert_eq!(choice["message"]["tool_calls"][0]["id"], "call_1_0");
    assert_eq!(choice["message"]["tool_calls"][0]["function"]["name"], "ls");
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18})
    );
}

#[tokio::test]
async fn errors_carry_status_body_and_retry_after_and_the_script_end_fails_loudly() {
    let server = MockOpenAi::start(vec![
        MockTurn::Error { status: 429, body: "slow down".into(), retry_after: Some(7) },
        MockTurn::error(401, "invalid_request_error", Some("invalid_api_key"), "Incorrect API key"),
    ])
    .await;
    let first = post(&server, &chat_body(true, true)).await;
    assert_eq!(first.status(), 429);
    assert_eq!(first.headers()["retry-after"], "7");
    assert_eq!(first.text().await.unwrap(), "slow down");

    let second = post(&server, &chat_body(true, true)).await;
    assert_eq!(second.status(), 401);
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key");

    let third = post(&server, &chat_body(true, true)).await;
    assert_eq!(third.status(), 500);
    let body: Value = third.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("script exhausted") && message.contains("#3"), "{message}");
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn repeat_plays_the_last_turn_forever() {
    let server = MockOpenAi::new(vec![MockTurn::text("a"), MockTurn::text("loop")])
        .on_script_end(ScriptEnd::Repeat)
        .serve();
    for expected in ["a", "loop", "loop", "loop"] {
        let body: Value = post(&server, &chat_body(false, false)).await.json().await.unwrap();
        assert_eq!(body["choices"][0]["message"]["content"], expected);
    }
    assert!(server.wait_for_hits(4, Duration::from_secs(1)).await);
    assert!(!server.wait_for_hits(5, Duration::from_millis(50)).await);
}

#[tokio::test]
async fn a_stalled_stream_sends_its_role_chunk_then_nothing_until_shutdown() {
    let server = MockOpenAi::start(vec![MockTurn::Stall]).await;
    let mut response = post(&server, &chat_body(true, false)).await;
    assert_eq!(response.status(), 200);
    let first = response.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""));
    let next = tokio::time::timeout(Duration::from_millis(200), response.chunk()).await;
    assert!(next.is_err(), "a stall sends nothing more");

    server.shutdown();
    let after = tokio::time::timeout(Duration::from_secs(5), response.chunk()).await;
    assert!(matches!(after, Ok(Err(_)) | Ok(Ok(None))), "shutdown closes the stalled stream");
}

#[tokio::test]
async fn a_truncated_stream_breaks_mid_json_without_done() {
    let server = MockOpenAi::start(vec![MockTurn::Truncated]).await;
    let mut response = post(&server, &chat_body(true, true)).await;
    let mut received = Vec::new();
    let outcome = loop {
        match response.chunk().await {
            Ok(Some(bytes)) => received.extend_from_slice(&bytes),
            Ok(None) => break "clean end",
            Err(_) => break "connection error",
        }
    };
    assert_eq!(outcome, "connection error", "the connection is dropped, not closed cleanly");
    let text = String::from_utf8(received).unwrap();
    assert!(text.contains(r#""content":"Hel"#), "what came before the cut arrives: {text}");
    assert!(text.ends_with(r#""content":"lo"#), "cut mid-JSON: {text}");
    assert!(!text.contains("[DONE]") && !text.contains("finish_reason\":\""));
}

#[tokio::test]
async fn raw_bodies_are_sent_verbatim_and_models_are_listed() {
    let raw = ": keep-alive\r\ndata: {\"x\":1}\r\n\r\n".to_string();
    let server = MockOpenAi::new(vec![MockTurn::Raw(raw.clone())])
        .models(vec!["a".into(), "b".into()])
        .serve();
    let response = post(&server, &chat_body(true, false)).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.text().await.unwrap(), raw);

    let models: Value = client()
        .get(format!("{}/models", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> =
        models["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(server.hits(), 1, "listing models is not a chat request");

    let missing = client().get(format!("{}/nope", server.base_url())).send().await.unwrap();
    assert_eq!(missing.status(), 404);
}

#[test]
fn start_blocking_serves_non_async_callers_and_closes_the_port_on_shutdown() {
    let server = MockServer::start_blocking(vec![MockTurn::text("hi")]);
    let addr = server.addr();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let body: Value = runtime.block_on(async {
        post(&server, &json!({"model": "m", "messages": []})).await.json().await.unwrap()
    });
    assert_eq!(body["choices"][0]["message"]["content"], "hi");
    assert!(server.wait_for_hits_blocking(1, Duration::from_secs(1)));
    server.shutdown();
    assert!(std::net::TcpStream::connect(addr).is_err(), "the port is closed after shutdown");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_recorded_and_refused() {
    let server = MockOpenAi::start(vec![MockTurn::text("unused")]).await;
    let response = client()
        .post(format!("{}/chat/completions", server.base_url()))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(server.requests(), vec![Value::String("{not json".into())]);
    let body: Value = post(&server, &chat_body(false, false)).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "unused", "a refused body plays no turn");
}
