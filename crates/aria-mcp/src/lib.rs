//! MCP servers' tools for ARIA, with the official Rust SDK (`rmcp`).
//!
//! A [`Server`] is one configured stdio MCP server. It runs inside ARIA's sandbox: it sees the
//! roots (read-write only when one of its allowed tools has a write tier), its `read_paths`
//! (where npm, uvx or a venv installed it), the system's programs and libraries, no network
//! unless its entry grants it (then public addresses only, through the sandbox's egress proxy,
//! optionally only the hosts the entry lists), and only the environment variables its entry
//! names. It starts on
//! first use, is started again (with a growing pause) after it died, and stops when the
//! [`Server`] is dropped.
//!
//! Its tools become [`McpTool`]s named `SERVER__tool` (sanitised to `^[a-zA-Z0-9_-]{1,64}$`, as
//! the OpenAI and Anthropic APIs require) with the server's JSON Schemas, so the agent loop
//! validates, audits, caps and filters their calls like any other tool's. Their tier is the
//! user's: `irreversible` (ask) unless the entry says otherwise, per server or per tool; a
//! tool's own `readOnlyHint` is shown, never trusted.

pub mod serve;

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use aria_sandbox::{Input, Output, Sandbox};
use aria_tools::PathGuard;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;

/// Characters of a tool result kept (the loop caps again for the model).
const MAX_RESULT_CHARS: usize = 100_000;

/// The longest pause before a dead server is started again.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// One `[mcp.servers.NAME]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    /// The program of a stdio server (empty for a Streamable HTTP one).
    pub command: String,
    /// A Streamable HTTP server's URL: reached from ARIA's process, no program is started.
    pub url: Option<String>,
    /// Headers sent to a Streamable HTTP server: (header name, the environment variable that
    /// holds its value). Values never live in the configuration file.
    pub headers: Vec<(String, String)>,
    pub args: Vec<String>,
    /// Names of environment variables passed from ARIA's environment (never values).
    pub env: Vec<String>,
    /// How long one call may take.
    pub timeout: Duration,
    /// The tools offered (`None`: all of the server's).
    pub tools: Option<Vec<String>>,
    /// The tier of every tool (irreversible unless the user says otherwise).
    pub tier: Tier,
    /// Tiers of single tools, over `tier`.
    pub tool_tiers: BTreeMap<String, Tier>,
    /// Extra read-only paths the server needs.
    pub read_paths: Vec<PathBuf>,
    /// Whether the server may reach the network: public addresses only, through the sandbox's
    /// egress proxy, which logs every destination.
    pub network: bool,
    /// The hosts its network grant is limited to; `None`: any public host.
    pub network_hosts: Option<Vec<String>>,
}

impl ServerConfig {
    /// The tier of the server's tool `tool`.
    pub fn tier_of(&self, tool: &str) -> Tier {
        self.tool_tiers.get(tool).copied().unwrap_or(self.tier)
    }

    fn allows(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|list| list.iter().any(|t| t == tool))
    }
}

/// What went wrong with a server.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("MCP server {server}: {message}")]
    Server { server: String, message: String },
    #[error("MCP server {server}: {tool} took longer than {secs} s and was abandoned")]
    Timeout { server: String, tool: String, secs: u64 },
}

fn err(server: &str, message: impl Into<String>) -> McpError {
    McpError::Server { server: server.to_owned(), message: message.into() }
}

/// One of the server's tools, as it described itself: its description and the descriptions
/// in its input schema are outside text, redacted, marked and capped
/// ([`aria_tools::describe_outside`]) before anything shows them to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// The server's `readOnlyHint` (shown, never trusted).
    pub read_only_hint: Option<bool>,
    /// The injection filter flagged the description or the schema's texts.
    pub flagged: bool,
}

impl RemoteTool {
    /// A tool as the server described it, its texts made safe for a model.
    pub fn described(
        name: String,
        description: &str,
        mut input_schema: Value,
        read_only_hint: Option<bool>,
    ) -> RemoteTool {
        let described =
            aria_tools::describe_outside(description, aria_tools::MAX_TOOL_DESCRIPTION_CHARS);
        let schema_flagged = aria_tools::describe_schema_outside(&mut input_schema);
        RemoteTool {
            name,
            description: described.text,
            input_schema,
            read_only_hint,
            flagged: described.flagged || schema_flagged,
        }
    }
}

struct Connection {
    service: RunningService<RoleClient, ()>,
    /// The sandboxed process of a stdio server: dropping it kills its process group.
    _process: Option<aria_sandbox::Running>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct State {
    connection: Option<Connection>,
    /// Failed starts in a row, and when the last one was.
    failures: u32,
    last_failure: Option<Instant>,
}

/// One stdio MCP server.
#[derive(Debug)]
pub struct Server {
    pub config: ServerConfig,
    guard: Arc<PathGuard>,
    state: Mutex<State>,
}

/// Whether the server said at the handshake that it has what `has` looks for (a server without
/// resources or prompts has none to list, rather than an error).
fn offers(peer: &Peer<RoleClient>, has: impl Fn(&rmcp::model::ServerCapabilities) -> bool) -> bool {
    peer.peer_info().is_none_or(|info| has(&info.capabilities))
}

/// `text` cut to [`MAX_RESULT_CHARS`], saying so.
fn cap(text: String) -> String {
    if text.chars().count() <= MAX_RESULT_CHARS {
        return text;
    }
    text.chars().take(MAX_RESULT_CHARS).collect::<String>()
        + "\n[cut: the server answered more than ARIA keeps]"
}

/// `name` cut to what model APIs accept: letters, digits, `_` and `-`, at most 64.
pub fn sanitise(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    clean.chars().take(64).collect()
}

/// The name the model sees for `tool` of `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    sanitise(&format!("{server}__{tool}"))
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (reader, writer) = std::io::pipe()?;
    Ok((reader.into(), writer.into()))
}

impl Server {
    pub fn new(config: ServerConfig, guard: Arc<PathGuard>) -> Arc<Server> {
        Arc::new(Server { config, guard, state: Mutex::default() })
    }

    /// Whether one of the offered tools writes (then the roots are mounted read-write).
    fn writes(&self) -> bool {
        let mut tiers: Vec<Tier> = self.config.tool_tiers.values().copied().collect();
        tiers.push(self.config.tier);
        tiers.iter().any(|t| *t > Tier::Read)
    }

    /// Runs the MCP handshake on `transport` within the server's timeout.
    async fn handshake<T, E, A>(
        &self,
        transport: T,
    ) -> Result<RunningService<RoleClient, ()>, McpError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let name = &self.config.name;
        match tokio::time::timeout(self.config.timeout, ().serve(transport)).await {
            Ok(Ok(service)) => Ok(service),
            Ok(Err(e)) => {
                let text = e.to_string();
                // A server that is not there: say so, without the transport's type names.
                match (&self.config.url, text.split_once("Client error: ")) {
                    (Some(url), Some((_, why))) => Err(err(
                        name,
                        format!("cannot reach {url} ({why}); is the server running?"),
                    )),
                    _ => Err(err(name, format!("the MCP handshake failed: {text}"))),
                }
            }
            Err(_) => Err(err(
                name,
                format!(
                    "did not answer the MCP handshake within {} s",
                    self.config.timeout.as_secs()
                ),
            )),
        }
    }

    /// Connects to a Streamable HTTP server, with its headers from the environment.
    async fn connect(&self, url: &str) -> Result<Connection, McpError> {
        use reqwest::header::{HeaderName, HeaderValue};
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let name = &self.config.name;
        let mut headers = std::collections::HashMap::new();
        for (header, var) in &self.config.headers {
            let value = std::env::var(var).map_err(|_| {
                err(name, format!("the header {header} comes from ${var}, which is not set"))
            })?;
            let header_name = HeaderName::try_from(header.as_str())
                .map_err(|e| err(name, format!("{header:?} is not a header name: {e}")))?;
            let mut value = HeaderValue::try_from(value)
                .map_err(|e| err(name, format!("${var} is not a header value: {e}")))?;
            value.set_sensitive(true);
            headers.insert(header_name, value);
        }
        aria_tools::ensure_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(self.config.timeout)
            .user_agent(concat!("aria/", env!("CARGO_PKG_VERSION"), " (mcp)"))
            .build()
            .map_err(|e| err(name, format!("no HTTP client: {e}")))?;
        let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let service = self.handshake(transport).await?;
        Ok(Connection { service, _process: None })
    }

    /// Starts the process in the sandbox (or connects to the URL) and runs the MCP handshake.
    async fn start(&self) -> Result<Connection, McpError> {
        if let Some(url) = &self.config.url {
            return self.connect(url).await;
        }
        let name = &self.config.name;
        let program = aria_tools::profiles::find_program(&self.config.command)
            .or_else(|| {
                let p = PathBuf::from(&self.config.command);
                (p.is_absolute() && p.is_file()).then_some(p)
            })
            .ok_or_else(|| {
                err(name, format!("the program {:?} was not found", self.config.command))
            })?;
        let mut argv = vec![program.to_string_lossy().into_owned()];
        argv.extend(self.config.args.iter().cloned());
        let cwd = self.guard.roots().first().cloned().unwrap_or_else(std::env::temp_dir);
        let mut spec = aria_tools::confine::spawn_spec(
            &self.guard,
            argv,
            cwd,
            aria_tools::confine::Access::Execute,
        )
        .map_err(|e| err(name, e))?;
        if !self.writes() {
            spec.root_access = aria_sandbox::RootAccess::ReadOnly;
        }
        spec.extra_read.extend(self.config.read_paths.iter().cloned());
        if let Some(dir) = program.parent() {
            spec.extra_read.push(dir.to_path_buf());
        }
        spec.network = self.config.network;
        spec.egress.hosts = self.config.network_hosts.clone();
        spec.env_allowlist.extend(self.config.env.iter().cloned());
        // A server lives as long as ARIA uses it; each call has its own timeout.
        spec.timeout = Duration::from_secs(30 * 24 * 3600);
        spec.output_cap = 64 * 1024;
        let (child_in, to_child) = pipe().map_err(|e| err(name, format!("no pipe: {e}")))?;
        let (from_child, child_out) = pipe().map_err(|e| err(name, format!("no pipe: {e}")))?;
        spec.stdin = Input::Fd(child_in);
        spec.stdout = Output::Fd(child_out);
        let process =
            Sandbox::start(spec).map_err(|e| err(name, format!("could not start: {e}")))?;
        let reader = tokio::fs::File::from_std(std::fs::File::from(from_child));
        let writer = tokio::fs::File::from_std(std::fs::File::from(to_child));
        let service = self.handshake((reader, writer)).await?;
        Ok(Connection { service, _process: Some(process) })
    }

    /// A handle on a live connection, starting the server first when it is not running (after
    /// a pause that grows with each failed start). Calls go through the handle without holding
    /// the lock, so several may be in flight at once.
    async fn peer(&self) -> Result<Peer<RoleClient>, McpError> {
        let mut state = self.state.lock().await;
        if state.connection.as_ref().is_some_and(|c| c.service.is_closed()) {
            tracing::warn!(server = %self.config.name, "the MCP server stopped; starting it again");
            state.connection = None;
        }
        if let Some(connection) = state.connection.as_ref() {
            return Ok(connection.service.peer().clone());
        }
        if let Some(at) = state.last_failure {
            let pause = Duration::from_millis(500)
                .saturating_mul(1u32 << state.failures.min(8))
                .min(MAX_BACKOFF);
            let left = pause.saturating_sub(at.elapsed());
            if !left.is_zero() {
                return Err(err(
                    &self.config.name,
                    format!("it failed to start; trying again in {} s", left.as_secs().max(1)),
                ));
            }
        }
        match self.start().await {
            Ok(connection) => {
                let peer = connection.service.peer().clone();
                state.connection = Some(connection);
                state.failures = 0;
                state.last_failure = None;
                Ok(peer)
            }
            Err(e) => {
                state.failures += 1;
                state.last_failure = Some(Instant::now());
                Err(e)
            }
        }
    }

    fn timed_out(&self, tool: &str) -> McpError {
        McpError::Timeout {
            server: self.config.name.clone(),
            tool: tool.to_owned(),
            secs: self.config.timeout.as_secs(),
        }
    }

    /// Awaits one request within the server's timeout: `what` names it in a timeout, `doing`
    /// in a failure.
    async fn within<T>(
        &self,
        what: &str,
        doing: &str,
        request: impl std::future::Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        match tokio::time::timeout(self.config.timeout, request).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(err(&self.config.name, format!("{doing} failed: {e}"))),
            Err(_) => Err(self.timed_out(what)),
        }
    }

    /// The tools the server offers (those its entry allows).
    pub async fn list_tools(&self) -> Result<Vec<RemoteTool>, McpError> {
        let peer = self.peer().await?;
        let tools = self.within("tools/list", "tools/list", peer.list_all_tools()).await?;
        Ok(tools
            .into_iter()
            .filter(|t| self.config.allows(&t.name))
            .map(|t| {
                RemoteTool::described(
                    t.name.to_string(),
                    t.description.as_deref().unwrap_or_default(),
                    Value::Object((*t.input_schema).clone()),
                    t.annotations.and_then(|a| a.read_only_hint),
                )
            })
            .collect())
    }

    /// The resources the server offers: `uri`, `name`, `description`, `mimeType` as it gave
    /// them.
    pub async fn list_resources(&self) -> Result<Vec<Value>, McpError> {
        let peer = self.peer().await?;
        if !offers(&peer, |c| c.resources.is_some()) {
            return Ok(Vec::new());
        }
        let list =
            self.within("resources/list", "resources/list", peer.list_all_resources()).await?;
        Ok(list.iter().filter_map(|r| serde_json::to_value(r).ok()).collect())
    }

    /// The text of resource `uri` (binary parts are named, not shown), cut to what ARIA keeps.
    pub async fn read_resource(&self, uri: &str) -> Result<String, McpError> {
        let peer = self.peer().await?;
        if !offers(&peer, |c| c.resources.is_some()) {
            return Err(err(&self.config.name, "it offers no resources"));
        }
        let params = rmcp::model::ReadResourceRequestParams::new(uri);
        let read = self
            .within("resources/read", &format!("reading {uri}"), peer.read_resource(params))
            .await?;
        let value = serde_json::to_value(&read).unwrap_or_default();
        let mut text = String::new();
        for part in value["contents"].as_array().into_iter().flatten() {
            match part["text"].as_str() {
                Some(t) => text.push_str(t),
                None => text.push_str(&format!(
                    "[binary content of {} omitted]",
                    part["mimeType"].as_str().unwrap_or("unknown type")
                )),
            }
            text.push('\n');
        }
        Ok(cap(text))
    }

    /// The prompts the server offers: `name`, `description`, `arguments`.
    pub async fn list_prompts(&self) -> Result<Vec<Value>, McpError> {
        let peer = self.peer().await?;
        if !offers(&peer, |c| c.prompts.is_some()) {
            return Ok(Vec::new());
        }
        let list = self.within("prompts/list", "prompts/list", peer.list_all_prompts()).await?;
        Ok(list.iter().filter_map(|p| serde_json::to_value(p).ok()).collect())
    }

    /// Prompt `name` filled with `arguments`: the text of its messages, one per paragraph.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<String, McpError> {
        let peer = self.peer().await?;
        if !offers(&peer, |c| c.prompts.is_some()) {
            return Err(err(&self.config.name, "it offers no prompts"));
        }
        let params = rmcp::model::GetPromptRequestParams::new(name).with_arguments(arguments);
        let rmcp::model::GetPromptResponse::Complete(got) = self
            .within("prompts/get", &format!("prompt {name}"), peer.get_prompt_once(params))
            .await?
        else {
            return Err(err(&self.config.name, format!("prompt {name} wants more input")));
        };
        let value = serde_json::to_value(&got).unwrap_or_default();
        let texts: Vec<String> = value["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["content"]["text"].as_str().map(str::to_owned))
            .collect();
        Ok(cap(texts.join("\n\n")))
    }

    /// Calls `tool` with `arguments`: the text of its content (or its structured content), or
    /// why it failed.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<String, ToolError> {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::failed(format!(
                    "{tool}: the arguments must be an object, not {other}"
                )));
            }
        };
        let peer = self.peer().await.map_err(|e| ToolError::failed(e.to_string()))?;
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let outcome = match tokio::time::timeout(self.config.timeout, peer.call_tool(params)).await
        {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => {
                // The process died or its pipe broke: the next call starts it again.
                if matches!(e, ServiceError::TransportClosed | ServiceError::TransportSend(_)) {
                    self.forget().await;
                }
                return Err(ToolError::failed(
                    err(&self.config.name, format!("{tool} failed: {e}")).to_string(),
                ));
            }
            Err(_) => {
                // A server that does not answer in time is stopped, so it cannot pile up
                // stuck calls; the next call starts a fresh one.
                self.forget().await;
                return Err(ToolError::failed(self.timed_out(tool).to_string()));
            }
        };
        let result = serde_json::to_value(&outcome).unwrap_or_default();
        let mut text = String::new();
        for block in result["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
                Some(kind) => text.push_str(&format!("[{kind} content omitted]")),
                None => {}
            }
            text.push('\n');
        }
        if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
            && text.trim().is_empty()
        {
            text = structured.to_string();
        }
        text = cap(text);
        if result["isError"].as_bool() == Some(true) {
            return Err(ToolError::failed(format!("{tool}: {}", text.trim())));
        }
        Ok(text)
    }

    /// Drops the connection (its process group is killed); the next use starts a new one.
    async fn forget(&self) {
        let taken = self.state.lock().await.connection.take();
        drop(taken);
    }

    /// Stops the server now (it starts again on the next use).
    pub async fn stop(&self) {
        let taken = self.state.lock().await.connection.take();
        if let Some(connection) = taken {
            let _ = connection.service.cancel().await;
        }
    }
}

/// One MCP tool as the model sees it.
#[derive(Debug)]
pub struct McpTool {
    server: Arc<Server>,
    remote: String,
    tier: Tier,
    spec: ToolSpec,
}

impl McpTool {
    pub fn new(server: Arc<Server>, remote: &RemoteTool) -> McpTool {
        let tier = server.config.tier_of(&remote.name);
        let hint = match remote.read_only_hint {
            Some(true) => " The server says it only reads (not relied on).",
            _ => "",
        };
        let mut parameters = remote.input_schema.clone();
        if parameters.get("type").is_none() {
            parameters["type"] = json!("object");
        }
        let spec = ToolSpec {
            name: tool_name(&server.config.name, &remote.name),
            description: format!(
                "{} (MCP server {}){hint}",
                remote.description.trim(),
                server.config.name
            ),
            parameters,
        };
        McpTool { server, remote: remote.name.clone(), tier, spec }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        self.tier
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.server.config.timeout)
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            if ctx.dry_run {
                return Ok(ToolOutput::text(format!(
                    "dry run: would call {} on MCP server {} with {args}",
                    self.remote, self.server.config.name
                )));
            }
            let text = self.server.call(&self.remote, args).await?;
            Ok(ToolOutput::text(text).with_details(json!({
                "mcp_server": self.server.config.name,
                "mcp_tool": self.remote,
            })))
        })
    }
}

/// The tools of `servers`, named `SERVER__tool`. Two that sanitise to one name are an error
/// naming both.
pub fn tools(servers: &[(Arc<Server>, Vec<RemoteTool>)]) -> Result<Vec<Arc<dyn Tool>>, String> {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut out: Vec<Arc<dyn Tool>> = Vec::new();
    for (server, remote) in servers {
        for r in remote {
            let tool = McpTool::new(server.clone(), r);
            let full = format!("{}:{}", server.config.name, r.name);
            if let Some(other) = seen.insert(tool.spec.name.clone(), full.clone()) {
                return Err(format!(
                    "the MCP tools {other} and {full} both become {}; rename a server or leave one \
                     tool out with [mcp.servers.NAME] tools",
                    tool.spec.name
                ));
            }
            out.push(Arc::new(tool));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_model_apis() {
        assert_eq!(tool_name("fs", "read_file"), "fs__read_file");
        assert_eq!(tool_name("my server", "a.b/c"), "my_server__a_b_c");
        assert_eq!(tool_name("x", &"y".repeat(100)).len(), 64);
    }
}
