//! ARIA's front ends in the daemon: the HTTP API under `/api/v1` (REST, Server-Sent Events,
//! WebSocket), the OpenAI-compatible `/v1/chat/completions`, and the web UI at `/`.
//!
//! Every front end talks to one shared [`aria_core::Agent`] through [`runs::Runs`]: a message
//! starts a run, whose events go to every follower of that run; approval questions go to the
//! channel that started it ([`approvals::Approvals`]). The agent, the store and the models are
//! built once by `aria serve` (in `aria-cli`) and handed in as a [`Gateway`].
//!
//! The listener's security is one middleware ([`security`]): on a loopback listener a `Host`
//! that is not a loopback name is refused (DNS rebinding), a state-changing request from a
//! foreign `Origin` is refused everywhere, bodies must be JSON, a configured token is required
//! (bearer, or the cookie of a web login plus a CSRF header), and each client is rate-limited.
//! The contract is `docs/http-api.md`; `GET /api/v1/openapi.json` is generated from the handlers.
//!
//! The Telegram channel ([`telegram`], feature `telegram`, on by default) is one more front end
//! over the same runs: it long-polls the Bot API and sends every message through an outbox in
//! the store.

pub mod approvals;
pub mod choices;
pub mod error;
mod extract;
#[cfg(any(feature = "telegram", feature = "otlp"))]
mod http;
pub mod jobs;
pub mod logs;
pub mod metrics;
pub mod notify;
mod observe;
pub mod openai;
pub mod openapi;
#[cfg(feature = "otlp")]
pub mod otlp;
mod profiled;
mod routes;
pub mod runs;
pub mod security;
mod sse;
pub mod status;
#[cfg(feature = "telegram")]
pub mod telegram;
mod ui;
mod ws;

use std::path::PathBuf;
use std::sync::Arc;

use aria_api::Provider;
use aria_core::{Agent, MemoryBackend};
use aria_store::Store;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use approvals::{Approvals, Decision, Detached};
pub use error::{ApiError, ApiResult};
pub use profiled::Profiled;
pub use runs::{Channel, Event, Reply, Runs};
pub use security::{Security, token_matches};

/// The largest request body accepted (bytes).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// A model a request may name as `BACKEND/MODEL`: a plain pass-through, no tools of ARIA's.
pub type PassThrough = Arc<dyn Fn(&str, &str) -> Result<Arc<dyn Provider>, String> + Send + Sync>;

/// What the endpoints beyond conversations use, built by the composition root.
#[derive(Clone, Default)]
pub struct Services {
    /// Long-term memory (hybrid search, remembering with embeddings).
    pub memory: Option<Arc<dyn MemoryBackend>>,
    /// The embedder memory uses (re-embeds a memory whose text is edited).
    pub embedder: Option<Arc<dyn aria_api::Embedder>>,
    /// The git restore points under the roots.
    pub snapshots: Option<Arc<aria_tools::Snapshots>>,
    /// The effective configuration with secrets redacted.
    pub config: Value,
    /// The agent's own model (for OpenAI-compatible requests that bring their own tools).
    pub provider: Option<(Arc<dyn Provider>, String)>,
    /// Other backends, by name, for `BACKEND/MODEL`.
    pub pass_through: Option<PassThrough>,
    /// Where the `ask_user` tool's questions go (a front end attaches itself).
    pub choices: Option<Arc<choices::Choices>>,
    /// ARIA's tools for MCP clients, served at `/mcp` (Streamable HTTP) behind the security
    /// layer; what asks goes to [`approvals::Detached`].
    pub mcp: Option<Arc<aria_core::ToolGate>>,
    /// The MCP servers ARIA uses, as `aria mcp list --json` shows them.
    pub mcp_servers: Option<McpServers>,
    /// The agent profiles (`/api/v1/agents`), as `aria agents` reads and writes them.
    pub agents: Option<Arc<dyn AgentBook>>,
    /// Builds (or returns the one built before) the agent that runs as profile NAME, for
    /// conversations bound to an agent other than `default`.
    pub agent_for: Option<AgentFor>,
}

/// The agent of a profile, by name, with its persona and planner; `Err` says why there is
/// none (unknown, a bad model, a missing persona…).
pub type AgentFor = Arc<dyn Fn(&str) -> Result<Profiled, String> + Send + Sync>;

/// Why the agent book refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BookError {
    /// A field is wrong (the message names it).
    Invalid(String),
    NotFound(String),
    /// The name is taken, or the agent is built in or defined in `aria.toml`.
    Conflict(String),
    Internal(String),
}

impl std::fmt::Display for BookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BookError::Invalid(m)
            | BookError::NotFound(m)
            | BookError::Conflict(m)
            | BookError::Internal(m) => f.write_str(m),
        }
    }
}

/// The agent profiles, read and written by the composition root's rules (the same as
/// `aria agents list|show|add|edit|remove`). Agents are JSON objects as `aria agents list
/// --json` prints them.
pub trait AgentBook: Send + Sync {
    fn list(&self) -> Result<Vec<Value>, BookError>;
    fn get(&self, name: &str) -> Result<Value, BookError>;
    /// `body`: `name` and the profile's fields.
    fn create(&self, body: Value) -> Result<Value, BookError>;
    /// `patch`: the fields to change (`null` clears one).
    fn update(&self, name: &str, patch: Value) -> Result<Value, BookError>;
    fn remove(&self, name: &str) -> Result<(), BookError>;
}

/// Lists the configured MCP servers (read when asked: the kept tool lists change).
pub type McpServers = Arc<dyn Fn() -> Vec<Value> + Send + Sync>;

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("memory", &self.memory.is_some())
            .field("snapshots", &self.snapshots.is_some())
            .field("provider", &self.provider.as_ref().map(|(_, m)| m))
            .field("mcp", &self.mcp.is_some())
            .finish_non_exhaustive()
    }
}

/// Everything the daemon's front ends share.
#[derive(Debug)]
pub struct Gateway {
    pub agent: Arc<Agent>,
    pub store: Arc<Store>,
    pub runs: Arc<Runs>,
    pub approvals: Approvals,
    /// `$ARIA_HOME`: where the run locks live.
    pub data_dir: PathBuf,
    pub services: Services,
    pub security: Security,
    /// Cancelled when the daemon begins to stop: no new runs from then on.
    pub shutdown: CancellationToken,
    /// What the user is told (scheduled jobs, heartbeats), recorded and pushed.
    pub notifications: Arc<notify::Notifications>,
    /// The status collector: health, resources, metrics.
    pub status: Arc<status::Collector>,
}

impl Gateway {
    /// The agent that runs in `conversation_id`: the daemon's own, or the profile the
    /// conversation is bound to.
    pub fn agent_of(&self, conversation_id: &str) -> Result<Profiled, ApiError> {
        let bound = self.store.conversation_agent(conversation_id)?;
        match bound.as_deref() {
            None | Some("default") => Ok(Profiled::plain(self.agent.clone())),
            Some(name) => match &self.services.agent_for {
                Some(agent_for) => agent_for(name).map_err(|e| {
                    ApiError::conflict(
                        format!("this conversation is bound to the agent {name}, which cannot run: {e}"),
                        "fix or make the agent again (aria agents add), or start a new conversation",
                    )
                }),
                None => Err(ApiError::unavailable(format!(
                    "this conversation is bound to the agent {name}, and this daemon runs only its own"
                ))),
            },
        }
    }

    /// A gateway over `agent` and `store`, with a notifier of default settings, a fresh status
    /// collector, and not stopping.
    pub fn new(
        agent: Agent,
        store: Arc<Store>,
        runs: Arc<Runs>,
        approvals: Approvals,
        data_dir: PathBuf,
        services: Services,
        security: Security,
    ) -> Gateway {
        Gateway {
            notifications: Arc::new(notify::Notifications::new(store.clone(), Default::default())),
            status: Arc::default(),
            agent: Arc::new(agent),
            store,
            runs,
            approvals,
            data_dir,
            services,
            security,
            shutdown: CancellationToken::new(),
        }
    }

    /// Refuses new work once the daemon is stopping.
    pub fn accepting(&self) -> ApiResult<()> {
        if self.shutdown.is_cancelled() {
            return Err(ApiError::unavailable("the daemon is stopping and takes no new runs"));
        }
        Ok(())
    }
}

/// The whole HTTP face: API, OpenAI-compatible endpoints, web UI, behind the security layer.
pub fn router(gateway: Arc<Gateway>) -> axum::Router {
    // The routes' description is made with them; it is dropped here and made again on the
    // first request for it (`openapi::json`), so an idle daemon does not keep it.
    let (api, _description) = openapi::api_router().split_for_parts();
    let api = api
        .route("/api/v1/openapi.json", axum::routing::get(openapi::json))
        .merge(ui::routes())
        .merge(observe::routes())
        .merge(routes::meta::login_link_routes());
    let api = match &gateway.services.mcp {
        Some(gate) => api.nest_service(
            "/mcp",
            axum::Router::new()
                .fallback_service(aria_mcp::serve::http_service(
                    gate.clone(),
                    gateway.shutdown.child_token(),
                ))
                .layer(axum::middleware::from_fn(mcp_statuses)),
        ),
        None => api,
    };
    api.fallback(routes::not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(gateway.clone(), security::guard))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        // Outside the security layer, so its refusals under /v1/ get OpenAI's error shape too.
        .layer(axum::middleware::from_fn(openai::error_shape))
        .with_state(gateway)
}

/// Two of the MCP SDK's answers in the daemon's terms: a closed session answers 204 No Content
/// (the SDK says 202, which clients such as the official Python one report as a failed
/// termination), and a JSON body that does not parse is a 400 in ARIA's error shape (the SDK
/// says 415 Unsupported Media Type, in plain text).
async fn mcp_statuses(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let method = request.method().clone();
    let json = request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let mut response = next.run(request).await;
    match (method, response.status()) {
        (axum::http::Method::DELETE, axum::http::StatusCode::ACCEPTED) => {
            *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
        }
        (axum::http::Method::POST, axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE) if json => {
            let body = axum::body::to_bytes(response.into_body(), 64 * 1024).await;
            let why = body.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
            return ApiError::bad_request(
                format!("the body is not a JSON-RPC message: {}", why.trim()),
                "send one JSON-RPC request or notification (or a batch) as JSON",
            )
            .into_response();
        }
        _ => {}
    }
    response
}

/// How long a client may take to send a request's head (slow-loris protection).
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves until `shutdown` resolves, then stops taking connections and waits for open ones.
/// Each connection is HTTP/1.1 (with upgrades, for the WebSocket); a request head that does
/// not arrive within [`HEADER_TIMEOUT`] closes the connection.
pub async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let router = router(gateway);
    let closing = CancellationToken::new();
    let connections = tokio_util::task::TaskTracker::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let router = router.clone();
        let service = hyper::service::service_fn(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                let mut router = router.clone();
                async move {
                    use tower::Service;
                    router.call(request.map(axum::body::Body::new)).await
                }
            },
        );
        let connection = builder.serve_connection(TokioIo::new(stream), service).with_upgrades();
        let closing = closing.clone();
        connections.spawn(async move {
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                () = closing.cancelled() => {
                    // Finish the request in flight, then close.
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = result {
                tracing::debug!("connection from {peer}: {e}");
            }
        });
    }
    drop(listener);
    closing.cancel();
    connections.close();
    connections.wait().await;
    Ok(())
}
