//! Loopback mock of the OpenAI chat-completions API.
//!
//! [`MockOpenAi`] plays a script of [`MockTurn`]s, one per `POST /v1/chat/completions`, and
//! records every request body and header so tests can assert on what a client *sent*. Streamed
//! answers use the chunk shapes OpenAI documents: a role chunk, content or tool-call deltas (a
//! call's first chunk carries `index`, `id`, `type` and `function.name` with empty `arguments`;
//! argument fragments follow, several calls interleaved by index), a chunk with `finish_reason`,
//! a usage chunk with `"choices": []` when the request asked for `stream_options.include_usage`,
//! then `data: [DONE]`. Requests without `"stream": true` get a whole `chat.completion` object.
//! `GET /v1/models` lists the configured model ids.
//!
//! The design decision to know: every server runs on **its own thread with its own
//! current-thread runtime**, whether started from async code ([`MockOpenAi::start`]) or not
//! ([`MockServer::start_blocking`]). Shutting down (or dropping) a [`MockServer`] drops that
//! runtime, which closes every connection at once — a [`MockTurn::Stall`] never outlives its test,
//! and a test's own runtime flavour never matters.
//!
//! This is dev-only code: the convenience constructors panic with a clear message when the
//! loopback socket cannot be bound (a test cannot go on without it); [`MockOpenAi::try_serve`]
//! returns the error instead. Nothing here listens beyond 127.0.0.1.
//!
//! Usage numbers are deterministic: `prompt_tokens` is the byte length of the request's
//! `messages` JSON divided by 4 (rounded up), `completion_tokens` the byte length of the generated
//! text plus arguments divided by 4 (rounded up, at least 1), unless [`MockOpenAi::usage`] fixes
//! them. Tool-call ids are `call_{hit}_{index}`, `hit` being the 1-based request number.

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use axum::routing::{get, post};
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

/// The `created` timestamp of every mock response (fixed, so transcripts are reproducible).
pub const CREATED: u64 = 1_735_689_600;

/// One scripted answer to one chat-completions request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MockTurn {
    /// Text, streamed as several content deltas (four characters each); finish reason `stop`.
    Text(String),
    /// Tool calls as `(name, arguments JSON text)`; finish reason `tool_calls`.
    ToolCalls(Vec<(String, String)>),
    /// Some text first, then tool calls; finish reason `tool_calls`.
    TextThenTools(String, Vec<(String, String)>),
    /// An HTTP error with this status and body (sent as JSON when it parses as JSON), plus a
    /// `Retry-After: <seconds>` header when set.
    Error { status: u16, body: String, retry_after: Option<u64> },
    /// Streaming: headers and the role chunk, then nothing, ever. Non-streaming: no answer at all.
    Stall,
    /// The answer is cut in the middle of a JSON object and the connection is dropped, without
    /// `finish_reason` or `[DONE]`.
    Truncated,
    /// This exact body, with status 200 and `Content-Type: text/event-stream`.
    Raw(String),
}

impl MockTurn {
    pub fn text(text: impl Into<String>) -> Self {
        MockTurn::Text(text.into())
    }

    /// A single tool call.
    pub fn tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        MockTurn::ToolCalls(vec![(name.into(), arguments.into())])
    }

    /// An OpenAI-shaped error: `{"error": {"message", "type", "code"}}`.
    pub fn error(status: u16, kind: &str, code: Option<&str>, message: &str) -> Self {
        let body =
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}});
        MockTurn::Error { status, body: body.to_string(), retry_after: None }
    }
}

/// What the mock does once every scripted turn has been played.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ScriptEnd {
    /// Answer HTTP 500 with a body explaining that the script ran out.
    #[default]
    Fail,
    /// Play the last turn again, forever ("the model never stops").
    Repeat,
}

/// A mock server's configuration (a builder). [`MockOpenAi::start`] is the short way.
#[derive(Debug, Clone)]
pub struct MockOpenAi {
    script: Vec<MockTurn>,
    end: ScriptEnd,
    models: Vec<String>,
    chunk_delay: Duration,
    usage: Option<(u64, u64)>,
}

impl MockOpenAi {
    pub fn new(script: Vec<MockTurn>) -> Self {
        MockOpenAi {
            script,
            end: ScriptEnd::Fail,
            models: vec!["mock-model".to_string()],
            chunk_delay: Duration::ZERO,
            usage: None,
        }
    }

    /// Starts a server playing `script`, failing (HTTP 500) once it runs out.
    pub async fn start(script: Vec<MockTurn>) -> MockServer {
        MockOpenAi::new(script).serve()
    }

    pub fn on_script_end(mut self, end: ScriptEnd) -> Self {
        self.end = end;
        self
    }

    /// The ids `GET /v1/models` lists (default: `mock-model`).
    pub fn models(mut self, ids: Vec<String>) -> Self {
        self.models = ids;
        self
    }

    /// Sleeps this long before each streamed chunk (default: none).
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Reports these token counts instead of the byte-length estimate.
    pub fn usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = Some((prompt_tokens, completion_tokens));
        self
    }

    /// Starts the server on its own thread. Panics if no loopback port can be bound.
    pub fn serve(self) -> MockServer {
        match self.try_serve() {
            Ok(server) => server,
            Err(err) => panic!("openai mock: cannot start a loopback server: {err}"),
        }
    }

    /// Starts the server on its own thread, reporting failure to bind or spawn.
    pub fn try_serve(self) -> std::io::Result<MockServer> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let shared = Arc::new(Shared {
            config: self,
            log: Mutex::default(),
            played: Mutex::new(0),
            notify: Notify::new(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/models", get(list_models))
            .fallback(no_route)
            .with_state(Arc::clone(&shared));
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("openai-mock-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = axum::serve(listener, app).into_future() => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime here closes every open connection, stalled ones included.
                drop(runtime);
            })?;
        Ok(MockServer { addr, shared, stop: Some(stop), thread: Some(thread) })
    }
}

/// A running mock. Dropping it shuts it down.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Starts a server from non-async code (e.g. a test that spawns the `aria` binary).
    pub fn start_blocking(script: Vec<MockTurn>) -> MockServer {
        MockOpenAi::new(script).serve()
    }

    /// The base URL a client is configured with, e.g. `http://127.0.0.1:40123/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every chat-completions request body received, in order (a body that is not JSON is
    /// recorded as a JSON string).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.log().iter().map(|r| r.body.clone()).collect()
    }

    /// The headers of every chat-completions request, names lowercased, in order.
    pub fn request_headers(&self) -> Vec<BTreeMap<String, String>> {
        self.shared.log().iter().map(|r| r.headers.clone()).collect()
    }

    /// How many chat-completions requests have been received.
    pub fn hits(&self) -> usize {
        self.shared.log().len()
    }

    /// Waits until at least `n` requests have arrived; false if `timeout` passed first.
    pub async fn wait_for_hits(&self, n: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.notify.notified();
            if self.hits() >= n {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.hits() >= n;
            }
        }
    }

    /// [`MockServer::wait_for_hits`] for non-async tests (polls every 5 ms).
    pub fn wait_for_hits_blocking(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.hits() < n {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Stops the server and closes every connection. Also done on drop.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

#[derive(Debug)]
struct Recorded {
    body: Value,
    headers: BTreeMap<String, String>,
}

#[derive(Debug)]
struct Shared {
    config: MockOpenAi,
    log: Mutex<Vec<Recorded>>,
    played: Mutex<usize>,
    notify: Notify,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Vec<Recorded>> {
        // A poisoned log still holds every request recorded before the panic.
        self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a request; returns its 1-based number.
    fn record(&self, body: Value, headers: &HeaderMap) -> usize {
        let headers = headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect();
        let hit = {
            let mut log = self.log();
            log.push(Recorded { body, headers });
            log.len()
        };
        self.notify.notify_waiters();
        hit
    }

    /// The turn that answers the next valid request, or `None` once the script ran out.
    fn next_turn(&self) -> (usize, Option<&MockTurn>) {
        let played = {
            let mut played = self.played.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            *played += 1;
            *played
        };
        let script = &self.config.script;
        let turn = match script.get(played - 1) {
            Some(turn) => Some(turn),
            None if self.config.end == ScriptEnd::Repeat => script.last(),
            None => None,
        };
        (played, turn)
    }
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let Ok(request) = parsed else {
        shared.record(Value::String(String::from_utf8_lossy(&body).into()), &headers);
        return error_response(
            StatusCode::BAD_REQUEST,
            "openai mock: the request body is not JSON",
        );
    };
    let hit = shared.record(request.clone(), &headers);
    let (played, turn) = shared.next_turn();
    let Some(turn) = turn else {
        let message = format!(
            "openai mock: script exhausted: {} turn(s) scripted and this is chat request #{played}; \
             script more turns or use ScriptEnd::Repeat",
            shared.config.script.len()
        );
        return error_response(StatusCode::INTERNAL_SERVER_ERROR, &message);
    };
    let ctx = Ctx::new(&request, hit, &shared.config);
    if *turn == MockTurn::Stall && !ctx.stream {
        std::future::pending::<()>().await;
    }
    render(turn, &ctx).into_response(shared.config.chunk_delay)
}

async fn list_models(State(shared): State<Arc<Shared>>) -> Response {
    let data: Vec<Value> = shared
        .config
        .models
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": CREATED, "owned_by": "aria-mock"}))
        .collect();
    json_response(StatusCode::OK, &json!({"object": "list", "data": data}))
}

async fn no_route(method: Method, uri: Uri) -> Response {
    error_response(StatusCode::NOT_FOUND, &format!("openai mock: no route for {method} {uri}"))
}

fn error_response(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}});
    json_response(status, &body)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    Plan::json(status, body.to_string()).into_response(Duration::ZERO)
}

/// What one request is answered with.
struct Ctx {
    stream: bool,
    include_usage: bool,
    model: String,
    id: String,
    hit: usize,
    prompt_tokens: u64,
    fixed_usage: Option<(u64, u64)>,
}

impl Ctx {
    fn new(request: &Value, hit: usize, config: &MockOpenAi) -> Ctx {
        let messages_len = request.get("messages").map_or(0, |m| m.to_string().len());
        Ctx {
            stream: request.get("stream").and_then(Value::as_bool).unwrap_or(false),
            include_usage: request
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            model: request.get("model").and_then(Value::as_str).unwrap_or("mock-model").into(),
            id: format!("chatcmpl-mock{hit:04}"),
            hit,
            prompt_tokens: (messages_len as u64).div_ceil(4),
            fixed_usage: config.usage,
        }
    }

    fn call_id(&self, index: usize) -> String {
        format!("call_{}_{index}", self.hit)
    }

    fn usage(&self, generated_bytes: usize) -> Value {
        let (prompt, completion) = self
            .fixed_usage
            .unwrap_or((self.prompt_tokens, (generated_bytes as u64).div_ceil(4).max(1)));
        json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
    }

    /// One `chat.completion.chunk` SSE event.
    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Bytes {
        let mut chunk = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": CREATED,
            "model": self.model, "system_fingerprint": "fp_mock",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        sse(&chunk)
    }
}

fn sse(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// Splits `text` into pieces of at most `n` characters (never inside a character).
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// How a body ends after its frames.
enum Tail {
    End,
    Hang,
    Abort,
}

struct Plan {
    status: StatusCode,
    content_type: &'static str,
    retry_after: Option<u64>,
    frames: Vec<Bytes>,
    tail: Tail,
}

impl Plan {
    fn json(status: StatusCode, body: String) -> Plan {
        let frames = vec![Bytes::from(body)];
        Plan {
            status,
            content_type: "application/json",
            retry_after: None,
            frames,
            tail: Tail::End,
        }
    }

    fn event_stream(frames: Vec<Bytes>, tail: Tail) -> Plan {
        Plan {
            status: StatusCode::OK,
            content_type: "text/event-stream",
            retry_after: None,
            frames,
            tail,
        }
    }

    fn into_response(self, delay: Duration) -> Response {
        let head = stream::iter(self.frames).then(move |frame| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok::<Bytes, std::io::Error>(frame)
        });
        let tail: BoxStream<'static, Result<Bytes, std::io::Error>> = match self.tail {
            Tail::End => stream::empty().boxed(),
            Tail::Hang => stream::pending().boxed(),
            Tail::Abort => stream::once(async {
                // Pausing lets the server flush what it sent before the connection drops.
                tokio::time::sleep(Duration::from_millis(20)).await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "openai mock: connection dropped mid-answer",
                ))
            })
            .boxed(),
        };
        let mut response = Response::new(Body::from_stream(head.chain(tail)));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        if self.content_type == "text/event-stream" {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        }
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

fn render(turn: &MockTurn, ctx: &Ctx) -> Plan {
    match turn {
        MockTurn::Text(text) => answer(ctx, text, &[]),
        MockTurn::ToolCalls(calls) => answer(ctx, "", calls),
        MockTurn::TextThenTools(text, calls) => answer(ctx, text, calls),
        MockTurn::Error { status, body, retry_after } => {
            let is_json = serde_json::from_str::<Value>(body).is_ok();
            Plan {
                status: StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                content_type: if is_json {
                    "application/json"
                } else {
                    "text/plain; charset=utf-8"
                },
                retry_after: *retry_after,
                frames: vec![Bytes::from(body.clone())],
                tail: Tail::End,
            }
        }
        MockTurn::Stall => Plan::event_stream(
            vec![ctx.chunk(json!({"role": "assistant", "content": ""}), None)],
            Tail::Hang,
        ),
        MockTurn::Truncated => truncated(ctx),
        MockTurn::Raw(body) => {
            let frames = body.as_bytes().chunks(64).map(Bytes::copy_from_slice).collect();
            Plan::event_stream(frames, Tail::End)
        }
    }
}

/// A successful answer: text and/or tool calls, streamed or whole.
fn answer(ctx: &Ctx, text: &str, calls: &[(String, String)]) -> Plan {
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    let generated = text.len() + calls.iter().map(|(_, a)| a.len()).sum::<usize>();
    if !ctx.stream {
        let tool_calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": ctx.call_id(i), "type": "function", "function": {"name": name, "arguments": args}})
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": null, "refusal": null});
        if !text.is_empty() {
            message["content"] = json!(text);
        }
        if !tool_calls.is_empty() {
            message["tool_calls"] = json!(tool_calls);
        }
        let body = json!({
            "id": ctx.id, "object": "chat.completion", "created": CREATED, "model": ctx.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
            "usage": ctx.usage(generated),
        });
        return Plan::json(StatusCode::OK, body.to_string());
    }
    let role = if text.is_empty() { json!(null) } else { json!("") };
    let mut frames = vec![ctx.chunk(json!({"role": "assistant", "content": role}), None)];
    for piece in pieces(text, 4) {
        frames.push(ctx.chunk(json!({"content": piece}), None));
    }
    frames.extend(tool_call_chunks(ctx, calls));
    frames.push(ctx.chunk(json!({}), Some(finish)));
    if ctx.include_usage {
        frames.push(sse(&json!({
            "id": ctx.id, "object": "chat.completion.chunk", "created": CREATED, "model": ctx.model,
            "system_fingerprint": "fp_mock", "choices": [], "usage": ctx.usage(generated),
        })));
    }
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
    Plan::event_stream(frames, Tail::End)
}

/// Each call's header chunk, then argument fragments round-robin across calls.
fn tool_call_chunks(ctx: &Ctx, calls: &[(String, String)]) -> Vec<Bytes> {
    let mut frames = Vec::new();
    for (i, (name, _)) in calls.iter().enumerate() {
        let call = json!({"index": i, "id": ctx.call_id(i), "type": "function",
                          "function": {"name": name, "arguments": ""}});
        frames.push(ctx.chunk(json!({"tool_calls": [call]}), None));
    }
    let fragments: Vec<Vec<String>> = calls.iter().map(|(_, args)| pieces(args, 6)).collect();
    let rounds = fragments.iter().map(Vec::len).max().unwrap_or(0);
    for round in 0..rounds {
        for (i, call_fragments) in fragments.iter().enumerate() {
            if let Some(fragment) = call_fragments.get(round) {
                let call = json!({"index": i, "function": {"arguments": fragment}});
                frames.push(ctx.chunk(json!({"tool_calls": [call]}), None));
            }
        }
    }
    frames
}

fn truncated(ctx: &Ctx) -> Plan {
    if !ctx.stream {
        let partial = format!("{{\"id\":\"{}\",\"object\":\"chat.completion\",\"choi", ctx.id);
        return Plan { tail: Tail::Abort, ..Plan::json(StatusCode::OK, partial) };
    }
    let mut frames = vec![
        ctx.chunk(json!({"role": "assistant", "content": ""}), None),
        ctx.chunk(json!({"content": "Hel"}), None),
    ];
    let cut = format!(
        "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"lo",
        ctx.id
    );
    frames.push(Bytes::from(cut));
    Plan::event_stream(frames, Tail::Abort)
}

#[cfg(test)]
#[path = "openai_mock_tests.rs"]
mod tests;
