//! The machinery every loopback model-server mock shares: the script of [`MockTurn`]s, the
//! request log, the server thread, and the body plans (frames, then end / hang / abort).
//!
//! Each vendor module ([`crate::openai_mock`], [`crate::anthropic_mock`],
//! [`crate::ollama_mock`]) only adds its routes and renders turns in its own wire format. The
//! script vocabulary is the same for all of them, so a fault-injection script (429 with
//! `Retry-After`, 500/503, a connection reset mid-stream, truncated JSON, a stalled stream) is
//! written once and played by any vendor's server.
//!
//! The design decision to know: every server runs on **its own thread with its own
//! current-thread runtime**, whether started from async code or not. Shutting down (or dropping)
//! a [`MockServer`] drops that runtime, which closes every connection at once — a
//! [`MockTurn::Stall`] never outlives its test, and a test's own runtime flavour never matters.
//!
//! Usage numbers are deterministic: input tokens are the byte length of the request's
//! `messages` JSON (plus `system` for Anthropic) divided by 4 (rounded up), output tokens the byte
//! length of the generated text plus arguments divided by 4 (rounded up, at least 1), unless
//! [`Mock::usage`] fixes them.

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

/// One scripted answer to one chat request.
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
    /// Streaming: headers and the first (role / `message_start`) frame, then nothing, ever.
    /// Non-streaming: no answer at all.
    Stall,
    /// The answer is cut in the middle of a JSON object and the connection is dropped, without
    /// the vendor's end-of-answer marker.
    Truncated,
    /// This exact body, with status 200 and the vendor's streaming content type.
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

    /// A bare HTTP status with a short text body, e.g. `MockTurn::status(503)`.
    pub fn status(status: u16) -> Self {
        MockTurn::Error { status, body: format!("mock: HTTP {status}"), retry_after: None }
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

/// Which vendor's wire format a mock speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
    Ollama,
}

impl Wire {
    fn label(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
            Wire::Ollama => "ollama",
        }
    }
}

/// A mock server's configuration (a builder). Each vendor module has a short `start`.
#[derive(Debug, Clone)]
pub struct Mock {
    pub(crate) wire: Wire,
    pub(crate) script: Vec<MockTurn>,
    pub(crate) end: ScriptEnd,
    pub(crate) models: Vec<String>,
    pub(crate) chunk_delay: Duration,
    pub(crate) usage: Option<(u64, u64)>,
    pub(crate) context_length: u64,
    pub(crate) embed_dims: usize,
    pub(crate) embed_errors: Vec<MockTurn>,
}

impl Mock {
    /// An OpenAI-compatible mock (kept as the default for the foundation's tests).
    pub fn new(script: Vec<MockTurn>) -> Self {
        Mock::with_wire(Wire::OpenAi, script)
    }

    pub fn with_wire(wire: Wire, script: Vec<MockTurn>) -> Self {
        Mock {
            wire,
            script,
            end: ScriptEnd::Fail,
            models: vec!["mock-model".to_string()],
            chunk_delay: Duration::ZERO,
            usage: None,
            context_length: 32_768,
            embed_dims: 8,
            embed_errors: Vec::new(),
        }
    }

    /// Starts an OpenAI-compatible server playing `script`, failing (HTTP 500) once it runs out.
    pub async fn start(script: Vec<MockTurn>) -> MockServer {
        Mock::new(script).serve()
    }

    pub fn on_script_end(mut self, end: ScriptEnd) -> Self {
        self.end = end;
        self
    }

    /// The model ids the server lists (default: `mock-model`).
    pub fn models(mut self, ids: Vec<String>) -> Self {
        self.models = ids;
        self
    }

    /// Sleeps this long before each streamed frame (default: none).
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Reports these token counts instead of the byte-length estimate.
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some((input_tokens, output_tokens));
        self
    }

    /// The context length an Ollama mock reports in `/api/show` (default 32768).
    pub fn context_length(mut self, tokens: u64) -> Self {
        self.context_length = tokens;
        self
    }

    /// The length of the vectors the embedding endpoints answer with (default 8).
    pub fn embed_dims(mut self, dims: usize) -> Self {
        self.embed_dims = dims;
        self
    }

    /// Errors (only [`MockTurn::Error`] is meaningful) that answer the first embedding requests,
    /// in order, before the endpoint starts answering with vectors.
    pub fn embed_errors(mut self, errors: Vec<MockTurn>) -> Self {
        self.embed_errors = errors;
        self
    }

    /// Starts the server on its own thread. Panics if no loopback port can be bound (a test
    /// cannot go on without it).
    pub fn serve(self) -> MockServer {
        let label = self.wire.label();
        match self.try_serve() {
            Ok(server) => server,
            Err(err) => panic!("{label} mock: cannot start a loopback server: {err}"),
        }
    }

    /// Starts the server on its own thread, reporting failure to bind or spawn.
    pub fn try_serve(self) -> std::io::Result<MockServer> {
        let wire = self.wire;
        let shared = Arc::new(Shared {
            config: self,
            log: Mutex::default(),
            others: Mutex::default(),
            played: Mutex::new(0),
            embeds: Mutex::new(0),
            notify: Notify::new(),
        });
        let app: Router = match wire {
            Wire::OpenAi => crate::openai_mock::routes(Arc::clone(&shared)),
            Wire::Anthropic => crate::anthropic_mock::routes(Arc::clone(&shared)),
            Wire::Ollama => crate::ollama_mock::routes(Arc::clone(&shared)),
        };
        let server = Loopback::serve(&format!("{}-mock", wire.label()), app)?;
        Ok(MockServer { addr: server.addr, shared, _server: server })
    }
}

/// A running mock. Dropping it shuts it down.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _server: Loopback,
}

impl MockServer {
    /// Starts an OpenAI-compatible server from non-async code (e.g. a test that spawns the
    /// `aria` binary).
    pub fn start_blocking(script: Vec<MockTurn>) -> MockServer {
        Mock::new(script).serve()
    }

    /// The OpenAI-style base URL, e.g. `http://127.0.0.1:40123/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The server's root URL without a path, e.g. `http://127.0.0.1:40123` (what Anthropic's
    /// and Ollama's clients are configured with).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every chat request body received, in order (a body that is not JSON is recorded as a
    /// JSON string).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.log().iter().map(|r| r.body.clone()).collect()
    }

    /// The headers of every chat request, names lowercased, in order.
    pub fn request_headers(&self) -> Vec<BTreeMap<String, String>> {
        self.shared.log().iter().map(|r| r.headers.clone()).collect()
    }

    /// How many chat requests have been received.
    pub fn hits(&self) -> usize {
        self.shared.log().len()
    }

    /// Requests to endpoints other than chat (Ollama's `/api/show`, `/api/generate`, ...), as
    /// `(path, body)` in order.
    pub fn other_requests(&self) -> Vec<(String, Value)> {
        self.shared.others().clone()
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
    pub fn shutdown(self) {}
}

/// An axum app served on a loopback port by a thread with its own runtime (so it works from
/// async and non-async tests alike). Dropping it stops the server and closes every connection,
/// stalled ones included.
#[derive(Debug)]
pub(crate) struct Loopback {
    pub(crate) addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Loopback {
    /// Binds 127.0.0.1 on a free port and serves `app` there; the thread is named `name-PORT`.
    pub(crate) fn serve(name: &str, app: Router) -> std::io::Result<Loopback> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name(format!("{name}-{}", addr.port())).spawn(
            move || {
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
            },
        )?;
        Ok(Loopback { addr, stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[derive(Debug)]
struct Recorded {
    body: Value,
    headers: BTreeMap<String, String>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: Mock,
    log: Mutex<Vec<Recorded>>,
    others: Mutex<Vec<(String, Value)>>,
    played: Mutex<usize>,
    embeds: Mutex<usize>,
    notify: Notify,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Vec<Recorded>> {
        // A poisoned log still holds every request recorded before the panic.
        self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn others(&self) -> MutexGuard<'_, Vec<(String, Value)>> {
        self.others.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a chat request; returns its 1-based number.
    pub(crate) fn record(&self, body: Value, headers: &HeaderMap) -> usize {
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

    /// Records a request to another endpoint.
    pub(crate) fn record_other(&self, path: &str, body: Value) {
        self.others().push((path.to_string(), body));
    }

    /// The turn that answers the next valid request, or `None` once the script ran out.
    pub(crate) fn next_turn(&self) -> (usize, Option<&MockTurn>) {
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

    /// Counts an embedding request; returns the scripted error that answers it, if any.
    pub(crate) fn next_embed_error(&self) -> Option<&MockTurn> {
        let mut n = self.embeds.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *n += 1;
        self.config.embed_errors.get(*n - 1)
    }

    /// The message for a request that found the script exhausted.
    pub(crate) fn exhausted(&self, played: usize) -> String {
        format!(
            "{} mock: script exhausted: {} turn(s) scripted and this is chat request #{played}; \
             script more turns or use ScriptEnd::Repeat",
            self.config.wire.label(),
            self.config.script.len()
        )
    }

    /// `(input, output)` tokens for an answer.
    pub(crate) fn usage(&self, prompt_bytes: usize, generated_bytes: usize) -> (u64, u64) {
        self.config.usage.unwrap_or((
            (prompt_bytes as u64).div_ceil(4),
            (generated_bytes as u64).div_ceil(4).max(1),
        ))
    }
}

/// Splits `text` into pieces of at most `n` characters (never inside a character).
pub(crate) fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// How a body ends after its frames.
pub(crate) enum Tail {
    End,
    Hang,
    Abort,
}

/// A whole response: status, headers, frames and how the body ends.
pub(crate) struct Plan {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub retry_after: Option<u64>,
    pub frames: Vec<Bytes>,
    pub tail: Tail,
}

impl Plan {
    pub(crate) fn json(status: StatusCode, body: String) -> Plan {
        let frames = vec![Bytes::from(body)];
        Plan {
            status,
            content_type: "application/json",
            retry_after: None,
            frames,
            tail: Tail::End,
        }
    }

    pub(crate) fn stream(content_type: &'static str, frames: Vec<Bytes>, tail: Tail) -> Plan {
        Plan { status: StatusCode::OK, content_type, retry_after: None, frames, tail }
    }

    /// [`MockTurn::Error`] as a response.
    pub(crate) fn error(status: u16, body: &str, retry_after: Option<u64>) -> Plan {
        let is_json = serde_json::from_str::<Value>(body).is_ok();
        Plan {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            content_type: if is_json { "application/json" } else { "text/plain; charset=utf-8" },
            retry_after,
            frames: vec![Bytes::from(body.to_string())],
            tail: Tail::End,
        }
    }

    pub(crate) fn into_response(self, delay: Duration) -> Response {
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
                    "mock: connection dropped mid-answer",
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
