//! The OpenAI-compatible endpoints and the WebSocket, against a real listener: a gateway on a
//! loopback port whose agent plays a script, spoken to over HTTP (reqwest) and WebSocket
//! (tokio-tungstenite) as clients would.
//!
//! It has its own harness rather than `common::Harness`: these tests need the daemon's approver
//! wired into the agent (an OpenAI request's calls are denied by the gateway's approvals for its
//! channel, a WebSocket's are asked on the socket), an irreversible tool that counts its calls,
//! separate scripted models for the agent, its own model and a pass-through backend, and a token.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns unwrap too

use std::sync::Arc;
use std::time::Duration;

use aria_api::{Message, NoRedact, Role, Tool};
use aria_core::{Agent, AgentConfig, ToolRegistry};
use aria_gateway::{Approvals, Gateway, PassThrough, Runs, Security, Services};
use aria_store::Store;
use aria_testkit::scripted::{End, ScriptedProvider, Turn};
use aria_testkit::tools::DeleteTool;
use futures::{SinkExt, StreamExt};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;

// -----------------------------------------------------------------------------------------------
// The harness
// -----------------------------------------------------------------------------------------------

#[derive(Default)]
struct Script {
    /// The agent's model (runs of `aria`).
    agent: Vec<Turn>,
    /// The agent's model as the endpoint uses it for client tools (`services.provider`).
    own: Vec<Turn>,
    /// The model the pass-through gives for backend `mock`.
    other: Vec<Turn>,
    token: Option<&'static str>,
    config: Value,
}

struct Harness {
    base: String,
    gw: Arc<Gateway>,
    agent: ScriptedProvider,
    own: ScriptedProvider,
    other: ScriptedProvider,
    tool: Arc<DeleteTool>,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Harness {
    async fn start(script: Script) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&dir.path().join("aria.db"), Arc::new(NoRedact)).unwrap());
        let runs = Arc::new(Runs::new());
        let approvals = Approvals::new(store.clone(), runs.clone(), Duration::from_secs(30));
        let agent_model = ScriptedProvider::new(script.agent, End::Fail);
        let own = ScriptedProvider::new(script.own, End::Fail);
        let other = ScriptedProvider::new(script.other, End::Fail);
        let tool = Arc::new(DeleteTool::default());
        let mut config = AgentConfig::new("test-model", "You are a test.");
        config.approval_timeout = Duration::from_secs(30);
        let agent = Agent::new(
            Arc::new(agent_model.clone()),
            Arc::new(ToolRegistry::new(vec![tool.clone() as Arc<dyn Tool>]).unwrap()),
            store.clone(),
            store.clone(),
            Arc::new(NoRedact),
            config,
        )
        .with_approver(Arc::new(approvals.clone()));
        let pass_other = other.clone();
        let pass_through: PassThrough = Arc::new(move |backend: &str, _model: &str| {
            if backend == "mock" {
                Ok(Arc::new(pass_other.clone()) as Arc<dyn aria_api::Provider>)
            } else {
                Err(format!("no backend `{backend}` in this test"))
            }
        });
        let gw = Arc::new(Gateway::new(
            agent,
            store,
            runs,
            approvals,
            dir.path().to_path_buf(),
            Services {
                config: script.config,
                provider: Some((Arc::new(own.clone()), "test-model".into())),
                pass_through: Some(pass_through),
                ..Services::default()
            },
            Security::new(script.token.map(str::to_owned), true, Vec::new(), 0),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        // The listener lives as long as the test; `gw.shutdown` only stops new work, as in
        // `aria serve`, where the listener closes after the drain.
        tokio::spawn(aria_gateway::serve(listener, gw.clone(), std::future::pending()));
        // reqwest is built without a TLS provider; it needs one installed even for http://.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        Harness { base, gw, agent: agent_model, own, other, tool, http, _dir: dir }
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.post(format!("{}{path}", self.base))
    }

    /// A chat completion; the status, the headers and the JSON body.
    async fn complete(&self, body: Value) -> (u16, reqwest::header::HeaderMap, Value) {
        let response = self.post("/v1/chat/completions").json(&body).send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.json().await.unwrap())
    }

    /// A streamed chat completion: the headers and each `data:` payload.
    async fn stream(&self, body: Value) -> (reqwest::header::HeaderMap, Vec<String>) {
        let response = self.post("/v1/chat/completions").json(&body).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        (headers, sse_data(&text))
    }

    fn messages(&self, conversation_id: &str) -> Vec<Message> {
        let (_, stored) = self.gw.store.get_conversation(conversation_id).unwrap().unwrap();
        stored.into_iter().map(|m| m.message).collect()
    }

    async fn ws(&self) -> Ws {
        let url = format!("{}/api/v1/ws", self.base.replace("http://", "ws://"));
        let (socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        Ws(socket)
    }
}

fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .collect()
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("no {name} header"))
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

struct Ws(
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
);

impl Ws {
    async fn send(&mut self, frame: Value) {
        self.send_text(&frame.to_string()).await;
    }

    async fn send_text(&mut self, text: &str) {
        self.0.send(WsMessage::Text(text.into())).await.unwrap();
    }

    /// The next text frame as JSON (`None` when the socket closed).
    async fn next(&mut self) -> Option<Value> {
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(10), self.0.next())
                .await
                .expect("a frame within 10 s")?;
            match frame.unwrap() {
                WsMessage::Text(t) => return Some(serde_json::from_str(t.as_str()).unwrap()),
                WsMessage::Close(_) => return None,
                _ => {}
            }
        }
    }

    /// Frames until one with this event name (inclusive).
    async fn until(&mut self, event: &str) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let frame = self.next().await.unwrap_or_else(|| panic!("closed before {event}"));
            let done = frame["event"] == event;
            frames.push(frame);
            if done {
                return frames;
            }
        }
    }
}

// -----------------------------------------------------------------------------------------------
// OpenAI-compatible
// -----------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aria_runs_the_last_user_message_in_a_new_conversation() {
    let h = Harness::start(Script { agent: vec![Turn::text("Four.")], ..Script::default() }).await;
    let (status, headers, body) = h
        .complete(json!({"model": "aria", "messages": [
            {"role": "system", "content": "The client's own system prompt."},
            user("An earlier question"),
            {"role": "assistant", "content": "An earlier answer"},
            user("What is 2+2?"),
        ]}))
        .await;
    assert_eq!(status, 200, "{body}");
    let session_id = header(&headers, "x-aria-session-id");
    let conversation_id = header(&headers, "x-aria-conversation-id");
    assert_eq!(body["id"], format!("chatcmpl-{session_id}"));
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "aria");
    assert_eq!(
        body["choices"],
        json!([{"index": 0, "logprobs": null, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Four.", "refusal": null}}])
    );
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
    );
    // ARIA keeps its own history: only the task was stored and sent as the user's words.
    let stored: Vec<(Role, String)> =
        h.messages(conversation_id).into_iter().map(|m| (m.role, m.content)).collect();
    assert_eq!(
        stored,
        vec![(Role::User, "What is 2+2?".into()), (Role::Assistant, "Four.".into())]
    );
    let sent = &h.agent.requests()[0].messages;
    let said: Vec<&str> = sent.iter().map(|m| m.content.as_str()).collect();
    assert!(said.contains(&"What is 2+2?"), "{said:?}");
    assert!(!said.iter().any(|m| m.contains("earlier") || m.contains("client's own")), "{said:?}");
    let session = h.gw.store.session(session_id).unwrap().unwrap();
    assert_eq!(
        (session.conversation_id.as_str(), session.state.as_str()),
        (conversation_id, "done")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_header_continues_a_conversation() {
    let h = Harness::start(Script {
        agent: vec![Turn::text("Noted: blue."), Turn::text("Blue.")],
        ..Script::default()
    })
    .await;
    let (_, headers, _) = h.complete(json!({"messages": [user("My colour is blue.")]})).await;
    let conversation_id = header(&headers, "x-aria-conversation-id").to_owned();
    let response = h
        .post("/v1/chat/completions")
        .header("X-Aria-Conversation", &conversation_id)
        .json(&json!({"model": "aria", "messages": [user("What is my colour?")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(header(response.headers(), "x-aria-conversation-id"), conversation_id);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "Blue.");
    // The second run saw the first exchange, from ARIA's own history.
    let second = &h.agent.requests()[1].messages;
    assert!(second.iter().any(|m| m.content == "My colour is blue."), "{second:?}");
    assert_eq!(h.messages(&conversation_id).len(), 4);

    let response = h
        .post("/v1/chat/completions")
        .header("X-Aria-Conversation", "no-such-conversation")
        .json(&json!({"messages": [user("Hello")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "conversation_not_found");
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aria_streams_openai_chunks() {
    let h = Harness::start(Script {
        agent: vec![Turn::text("Hello there, streaming world.")],
        ..Script::default()
    })
    .await;
    let (headers, data) = h
        .stream(json!({"model": "aria", "stream": true, "stream_options": {"include_usage": true},
                       "messages": [user("Say hello")]}))
        .await;
    assert!(header(&headers, "content-type").starts_with("text/event-stream"));
    let session_id = header(&headers, "x-aria-session-id");
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> =
        data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["id"], format!("chatcmpl-{session_id}"));
        assert_eq!(chunk["model"], "aria");
    }
    assert_eq!(chunks[0]["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
    let text: String =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(text, "Hello there, streaming world.");
    let (finish, usage) = (&chunks[chunks.len() - 2], &chunks[chunks.len() - 1]);
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert_eq!(finish["choices"][0]["delta"], json!({}));
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
    );
    // Without include_usage there is no usage chunk.
    let h = Harness::start(Script { agent: vec![Turn::text("Hi.")], ..Script::default() }).await;
    let (_, data) = h.stream(json!({"stream": true, "messages": [user("Hi")]})).await;
    let last: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(last.get("usage").is_none(), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn irreversible_calls_are_denied_and_the_answer_says_so() {
    let delete = || Turn::tool("file_delete", json!({"path": "a.txt"}));
    let h = Harness::start(Script {
        agent: vec![delete(), Turn::text("I could not delete a.txt."), delete(), Turn::text("No.")],
        ..Script::default()
    })
    .await;
    let (status, headers, body) = h.complete(json!({"messages": [user("Delete a.txt")]})).await;
    assert_eq!(status, 200, "{body}");
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(content.starts_with("I could not delete a.txt.\n\n---\n"), "{content}");
    assert!(content.contains("ARIA did not run 1 action that needs approval"), "{content}");
    assert!(content.contains("- file_delete {\"path\":\"a.txt\"}"), "{content}");
    assert_eq!(h.tool.calls(), 0, "the irreversible call ran");
    // ARIA records the run as failed (the change asked for was not made); the client still
    // gets the answer, with why nothing was done.
    let session = h.gw.store.session(header(&headers, "x-aria-session-id")).unwrap().unwrap();
    assert_eq!(session.state.as_str(), "failed");
    assert!(h.gw.store.approvals_pending().unwrap().is_empty());
    // The model was told it was refused.
    let told = &h.agent.requests()[1].messages;
    assert!(told.iter().any(|m| m.role == Role::Tool && m.content.contains("refused")), "{told:?}");

    let (_, data) = h.stream(json!({"stream": true, "messages": [user("Delete a.txt")]})).await;
    let text: String = data
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect();
    assert!(text.starts_with("No.\n\n---\nARIA did not run 1 action"), "{text}");
    assert_eq!(h.tool.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_is_an_error_that_is_not_retried() {
    let down = || Turn::Fail(aria_api::ProviderError::Auth { message: "bad key".into() });
    let h = Harness::start(Script { agent: vec![down(), down()], ..Script::default() }).await;
    let (status, headers, body) = h.complete(json!({"messages": [user("Hello")]})).await;
    assert_eq!(status, 500, "{body}");
    // OpenAI's SDKs retry a 500 unless told not to; a run may have acted before it failed.
    assert_eq!(header(&headers, "x-should-retry"), "false");
    let session_id = header(&headers, "x-aria-session-id");
    assert_eq!(body["error"]["code"], "run_failed");
    assert_eq!(body["error"]["type"], "server_error");
    assert!(body["error"]["message"].as_str().unwrap().contains("credentials"), "{body}");
    assert!(body["error"]["hint"].as_str().unwrap().contains(session_id), "{body}");

    // Streamed, the stream ends with OpenAI's in-stream error object and no [DONE].
    let (_, data) = h.stream(json!({"stream": true, "messages": [user("Hello")]})).await;
    let last: Value = serde_json::from_str(data.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "run_failed", "{data:?}");
    assert!(!data.iter().any(|d| d == "[DONE]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_tools_come_back_as_tool_calls() {
    let weather = || Turn::tool("weather", json!({"city": "Oslo"}));
    let h = Harness::start(Script {
        own: vec![weather(), Turn::text("It rains in Oslo."), weather()],
        ..Script::default()
    })
    .await;
    let tools = json!([{"type": "function", "function": {"name": "weather",
        "description": "Today's weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    let first = json!([{"role": "system", "content": "Use tools."}, user("Weather in Oslo?")]);
    let (status, headers, body) =
        h.complete(json!({"model": "aria", "messages": first, "tools": tools})).await;
    assert_eq!(status, 200, "{body}");
    assert!(headers.get("x-aria-session-id").is_none(), "no run was started");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        body["choices"][0]["message"],
        json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "call_0_0", "type": "function",
             "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]})
    );
    let sent = &h.own.requests()[0];
    assert_eq!(sent.model, "test-model");
    assert_eq!(
        sent.messages,
        vec![Message::system("Use tools."), Message::user("Weather in Oslo?")]
    );
    assert_eq!(sent.tools.len(), 1);
    assert_eq!(sent.tools[0].name, "weather");
    assert_eq!(sent.tools[0].parameters["required"], json!(["city"]));
    assert!(h.agent.requests().is_empty(), "the agent ran");

    // The client runs the tool and sends its result back.
    let mut messages = first.as_array().unwrap().clone();
    messages.push(body["choices"][0]["message"].clone());
    messages.push(json!({"role": "tool", "tool_call_id": "call_0_0", "content": "rain"}));
    let (_, _, body) = h.complete(json!({"messages": messages, "tools": tools})).await;
    assert_eq!(body["choices"][0]["message"]["content"], "It rains in Oslo.");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(h.own.requests()[1].messages[3], Message::tool_result("call_0_0", "rain"));

    // Streamed: the call arrives as OpenAI's tool-call deltas.
    let (_, data) = h.stream(json!({"stream": true, "messages": first, "tools": tools})).await;
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> =
        data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    let deltas: Vec<&Value> = chunks.iter().map(|c| &c["choices"][0]["delta"]).collect();
    assert_eq!(
        deltas[1]["tool_calls"],
        json!([{"index": 0, "id": "call_2_0", "type": "function",
                "function": {"name": "weather", "arguments": ""}}])
    );
    let arguments: String = deltas
        .iter()
        .filter_map(|d| d["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(arguments, "{\"city\":\"Oslo\"}");
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_models_pass_through_and_unknown_models_are_not_found() {
    let h =
        Harness::start(Script { other: vec![Turn::text("Bonjour.")], ..Script::default() }).await;
    let messages = json!([{"role": "system", "content": "Answer in French."}, user("Hello")]);
    let (status, headers, body) =
        h.complete(json!({"model": "mock/m1", "messages": messages, "max_tokens": 50})).await;
    assert_eq!(status, 200, "{body}");
    assert!(headers.get("x-aria-session-id").is_none());
    assert_eq!(body["model"], "mock/m1");
    assert_eq!(body["choices"][0]["message"]["content"], "Bonjour.");
    let sent = &h.other.requests()[0];
    assert_eq!((sent.model.as_str(), sent.max_tokens), ("m1", Some(50)));
    assert_eq!(sent.messages, vec![Message::system("Answer in French."), Message::user("Hello")]);
    assert!(sent.tools.is_empty());
    assert!(h.agent.requests().is_empty());

    for (model, says) in [
        ("aria:coder", "no agent `coder`"),
        ("nope/x", "no backend `nope`"),
        ("gpt-4o", "no model `gpt-4o`"),
    ] {
        let (status, _, body) = h.complete(json!({"model": model, "messages": [user("Hi")]})).await;
        assert_eq!(status, 404, "{model}: {body}");
        let error = &body["error"];
        assert_eq!(
            (error["code"].as_str(), error["param"].as_str()),
            (Some("model_not_found"), Some("model"))
        );
        assert_eq!(error["type"], "invalid_request_error");
        assert!(error["message"].as_str().unwrap().contains(says), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_lists_aria_and_the_models_that_can_be_named() {
    let h = Harness::start(Script {
        config: json!({"router": {"fallback": [{"backend": "mock", "model": "m2"},
                                                {"backend": "nope", "model": "x"}]}}),
        ..Script::default()
    })
    .await;
    let response = h.http.get(format!("{}/v1/models", h.base)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "list");
    let ids: Vec<&str> =
        body["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["aria", "scripted/test-model", "mock/m2"]);
    assert!(body["data"].as_array().unwrap().iter().all(|m| m["object"] == "model"));
    // The endpoints are in the API's OpenAPI document.
    let spec: Value = h
        .http
        .get(format!("{}/api/v1/openapi.json", h.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for path in ["/v1/chat/completions", "/v1/models", "/api/v1/ws"] {
        assert!(spec["paths"][path].is_object(), "{path} is not documented");
    }
    // The agent's own model, named as listed, passes through to it.
    let own =
        Harness::start(Script { own: vec![Turn::text("Direct.")], ..Script::default() }).await;
    let (status, _, body) =
        own.complete(json!({"model": "scripted/test-model", "messages": [user("Hi")]})).await;
    assert_eq!((status, &body["choices"][0]["message"]["content"]), (200, &json!("Direct.")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_errors_in_openai_shape() {
    let h = Harness::start(Script { token: Some("sekrit"), ..Script::default() }).await;
    let authed = |r: reqwest::RequestBuilder| r.bearer_auth("sekrit");
    let check = |body: &Value, status: u16, code: &str, kind: &str| {
        let e = &body["error"];
        assert_eq!(
            (e["code"].as_str(), e["type"].as_str()),
            (Some(code), Some(kind)),
            "{status}: {body}"
        );
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
        assert!(e.get("param").is_some(), "{body}");
    };
    let send = |r: reqwest::RequestBuilder| async move {
        let response = r.send().await.unwrap();
        (response.status().as_u16(), response.json::<Value>().await.unwrap())
    };
    let url = "/v1/chat/completions";
    let (status, body) = send(h.post(url).json(&json!({"messages": [user("Hi")]}))).await;
    assert_eq!(status, 401);
    check(&body, status, "invalid_api_key", "authentication_error");
    let (status, body) = send(h.post(url).bearer_auth("wrong").json(&json!({}))).await;
    assert_eq!(status, 401);
    check(&body, status, "invalid_api_key", "authentication_error");
    let (status, body) = send(h.http.get(format!("{}/v1/models", h.base))).await;
    assert_eq!(status, 401);
    check(&body, status, "invalid_api_key", "authentication_error");

    let bad_json =
        authed(h.post(url)).header("content-type", "application/json").body("{\"messages\": [");
    let (status, body) = send(bad_json).await;
    assert_eq!(status, 400);
    check(&body, status, "invalid_json", "invalid_request_error");
    let (status, body) = send(authed(h.post(url)).json(&json!({"model": "aria"}))).await;
    assert_eq!(status, 400);
    check(&body, status, "missing_required_parameter", "invalid_request_error");
    assert_eq!(body["error"]["param"], "messages");
    let (status, body) = send(authed(h.post(url)).json(&json!({"messages": [
        {"role": "assistant", "content": "no user message"}]})))
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["param"], "messages");
    let (status, body) = send(authed(h.post(url)).body("messages=hi")).await;
    assert_eq!(status, 415);
    check(&body, status, "unsupported_media_type", "invalid_request_error");
    let (status, body) = send(authed(h.http.get(format!("{}/v1/nothing", h.base)))).await;
    assert_eq!(status, 404);
    check(&body, status, "not_found", "invalid_request_error");
    // The rest of the API keeps ARIA's shape.
    let (status, body) = send(h.http.get(format!("{}/api/v1/conversations", h.base))).await;
    assert_eq!(status, 401);
    assert!(body["error"]["hint"].is_string() && body["error"].get("type").is_none(), "{body}");

    // A stopping daemon takes no new runs (its listener stays open until the drain is over).
    h.gw.shutdown.cancel();
    let (status, body) = send(authed(h.post(url)).json(&json!({"messages": [user("Hi")]}))).await;
    assert_eq!(status, 503);
    check(&body, status, "unavailable", "server_error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_its_run() {
    let h = Harness::start(Script { agent: vec![Turn::Hang], ..Script::default() }).await;
    let response = h
        .post("/v1/chat/completions")
        .json(&json!({"stream": true, "messages": [user("Take your time")]}))
        .send()
        .await
        .unwrap();
    let session_id = header(response.headers(), "x-aria-session-id").to_owned();
    let mut body = response.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""));
    drop(body);
    let mut state = String::new();
    for _ in 0..100 {
        state = h.gw.store.session(&session_id).unwrap().unwrap().state.as_str().to_owned();
        if state == "cancelled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, "cancelled");
}

// -----------------------------------------------------------------------------------------------
// WebSocket
// -----------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_streams_runs_and_bad_frames_do_not_close_it() {
    let h = Harness::start(Script {
        agent: vec![Turn::text("Hello over the socket."), Turn::text("Again.")],
        ..Script::default()
    })
    .await;
    let mut ws = h.ws().await;
    for bad in [
        "not json",
        "{\"type\": \"shout\"}",
        "{\"type\": \"message\"}",
        "{\"type\": \"message\", \"content\": \"x\", \"extra\": 1}",
        "{\"type\": \"message\", \"content\": \"  \"}",
    ] {
        ws.send_text(bad).await;
        let frame = ws.next().await.unwrap();
        assert_eq!(frame["event"], "error", "{bad}");
        assert_eq!(frame["data"]["code"], "bad_request", "{bad}: {frame}");
        assert!(frame["data"]["hint"].as_str().is_some_and(|h| !h.is_empty()));
    }
    ws.send(json!({"type": "message", "conversation_id": "nope", "content": "Hi"})).await;
    assert_eq!(ws.next().await.unwrap()["data"]["code"], "not_found");

    ws.send(json!({"type": "message", "content": "Say hello"})).await;
    let frames = ws.until("done").await;
    let started = &frames[0];
    assert_eq!(
        (started["event"].as_str(), started["data"]["state"].as_str()),
        (Some("state"), Some("started"))
    );
    let conversation_id = started["data"]["conversation_id"].as_str().unwrap().to_owned();
    let session_id = started["data"]["session_id"].as_str().unwrap().to_owned();
    for frame in &frames {
        assert_eq!(frame["conversation_id"], conversation_id.as_str());
        assert_eq!(frame["session_id"], session_id.as_str());
        assert!(frame["data"].is_object());
    }
    let text: String = frames
        .iter()
        .filter(|f| f["event"] == "text")
        .filter_map(|f| f["data"]["delta"].as_str())
        .collect();
    assert_eq!(text, "Hello over the socket.");
    let done = &frames.last().unwrap()["data"];
    assert_eq!(
        (done["answer"].as_str(), done["state"].as_str()),
        (Some("Hello over the socket."), Some("done"))
    );
    assert!(frames.iter().any(|f| f["event"] == "usage"));

    // The same conversation goes on when named.
    ws.send(json!({"type": "message", "conversation_id": conversation_id, "content": "Again"}))
        .await;
    let frames = ws.until("done").await;
    assert_eq!(frames[0]["conversation_id"], conversation_id.as_str());
    assert_eq!(h.messages(&conversation_id).len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_asks_approvals_on_the_socket() {
    let h = Harness::start(Script {
        agent: vec![Turn::tool("file_delete", json!({"path": "a.txt"})), Turn::text("Deleted.")],
        ..Script::default()
    })
    .await;
    let mut ws = h.ws().await;
    ws.send(json!({"type": "message", "content": "Delete a.txt"})).await;
    let frames = ws.until("approval").await;
    let question = &frames.last().unwrap()["data"];
    assert_eq!(
        (question["tool"].as_str(), question["tier"].as_str()),
        (Some("file_delete"), Some("irreversible"))
    );
    assert_eq!(h.tool.calls(), 0);
    ws.send(json!({"type": "approve", "id": question["id"], "decision": "maybe"})).await;
    // Events of the run may come first (its state changes race with the question).
    let error = ws.until("error").await.pop().unwrap();
    assert_eq!(error["data"]["code"], "bad_request");
    assert!(error["data"]["message"].as_str().unwrap().contains("maybe"), "{error}");
    ws.send(json!({"type": "approve", "id": question["id"], "decision": "approve"})).await;
    let frames = ws.until("done").await;
    let result = frames.iter().find(|f| f["event"] == "approval_result").expect("approval_result");
    assert_eq!(result["data"]["status"], "approved");
    assert_eq!(frames.last().unwrap()["data"]["answer"], "Deleted.");
    assert_eq!(h.tool.calls(), 1);
    // Answering again is a conflict, reported on the socket.
    ws.send(json!({"type": "approve", "id": question["id"], "decision": "deny"})).await;
    assert_eq!(ws.next().await.unwrap()["data"]["code"], "conflict");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_runs_share_a_socket_and_cancel_stops_one() {
    let h = Harness::start(Script {
        agent: vec![Turn::Hang, Turn::text("The second run.")],
        ..Script::default()
    })
    .await;
    let mut ws = h.ws().await;
    ws.send(json!({"type": "message", "content": "Hang"})).await;
    let first = ws.next().await.unwrap();
    let hanging = first["session_id"].as_str().unwrap().to_owned();
    for _ in 0..100 {
        if !h.agent.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A second run on the same socket finishes while the first is still in flight.
    ws.send(json!({"type": "message", "content": "Answer"})).await;
    let frames = ws.until("done").await;
    let done = frames.last().unwrap();
    assert_ne!(done["session_id"], hanging.as_str());
    assert_eq!(done["data"]["answer"], "The second run.");
    assert!(h.gw.runs.is_running(&hanging));

    ws.send(json!({"type": "cancel", "session_id": "no-such-run"})).await;
    // The hanging run's own frames may come first.
    let refused = ws.until("error").await;
    assert_eq!(refused.last().unwrap()["data"]["code"], "not_found");
    ws.send(json!({"type": "cancel", "session_id": hanging})).await;
    let frames = ws.until("done").await;
    let done = frames.last().unwrap();
    assert_eq!(done["session_id"], hanging.as_str());
    assert_eq!(done["data"]["state"], "cancelled");
    ws.send(json!({"type": "cancel", "session_id": hanging})).await;
    assert_eq!(ws.next().await.unwrap()["data"]["code"], "conflict");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_closes_when_the_daemon_stops() {
    let h = Harness::start(Script::default()).await;
    let mut ws = h.ws().await;
    ws.send_text("ping?").await;
    assert_eq!(ws.next().await.unwrap()["event"], "error");
    h.gw.shutdown.cancel();
    let frame = tokio::time::timeout(Duration::from_secs(10), ws.0.next()).await.unwrap();
    match frame {
        Some(Ok(WsMessage::Close(Some(close)))) => assert_eq!(u16::from(close.code), 1001),
        other => panic!("expected a close frame, got {other:?}"),
    }
}
