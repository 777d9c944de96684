//! ARIA as an MCP server: its tools for other agents and editors, over stdio
//! (`aria mcp serve`) or Streamable HTTP (the daemon's `/mcp`).
//!
//! Every call goes through a [`ToolGate`]: the tool's schema, the policy for its tier, a
//! question to ARIA's user for what asks (refused when none can be asked), a restore point
//! before a recoverable write, the audit log with the client's name, and the secret filter on
//! the result. A tool's tier is told to the client as annotations: `readOnlyHint` for the read
//! tier, `destructiveHint` for what ARIA asks about.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aria_api::Tier;
use aria_core::{Caller, ToolGate};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

/// What the server tells a client about itself.
const INSTRUCTIONS: &str = "ARIA's tools on the user's machine: files, search, git, restore \
    points and rollback, memory, and shell commands, confined to the roots the user allowed. \
    Writes that can be undone take a restore point first (see snapshot_list and \
    snapshot_rollback). Anything irreversible needs the approval of ARIA's user and is refused \
    when no one can be asked. Every call is audited with this client's name.";

/// One client's view of ARIA's tools.
#[derive(Debug, Clone)]
pub struct AriaServer {
    gate: Arc<ToolGate>,
    connection: String,
}

impl AriaServer {
    /// A server for one connection (stdio) or one HTTP session.
    pub fn new(gate: Arc<ToolGate>) -> AriaServer {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        AriaServer { gate, connection: format!("mcp-{}-{n}", std::process::id()) }
    }

    /// The tools as MCP describes them.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.gate
            .specs()
            .into_iter()
            .map(|spec| {
                let schema = match spec.parameters {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                let tier = self.gate.tier_hint(&spec.name).unwrap_or(Tier::Irreversible);
                let annotations = ToolAnnotations::new()
                    .read_only(tier == Tier::Read)
                    .destructive(tier >= Tier::Irreversible);
                rmcp::model::Tool::new(spec.name, spec.description, Arc::new(schema))
                    .with_annotations(annotations)
            })
            .collect()
    }
}

impl AriaServer {
    /// Serves on this process's stdin and stdout until the client closes them.
    pub async fn serve_stdio(self) -> Result<(), String> {
        use rmcp::ServiceExt;
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("the MCP client did not complete the handshake: {e}"))?;
        running.waiting().await.map_err(|e| format!("the MCP connection failed: {e}"))?;
        Ok(())
    }
}

/// The Streamable HTTP endpoint (the daemon mounts it at `/mcp`): one [`AriaServer`] per MCP
/// session, all on `gate`, until `stop` is cancelled. Hosts and origins are left to the
/// daemon's own security layer in front of it (loopback `Host`, foreign `Origin`, the token).
pub fn http_service(
    gate: Arc<ToolGate>,
    stop: tokio_util::sync::CancellationToken,
) -> rmcp::transport::StreamableHttpService<
    AriaServer,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_cancellation_token(stop);
    rmcp::transport::StreamableHttpService::new(
        move || Ok(AriaServer::new(gate.clone())),
        Default::default(),
        config,
    )
}

impl ServerHandler for AriaServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("aria", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let client = context.client_info().map(|i| i.name).unwrap_or_default();
        let caller = Caller::new(&client, self.connection.clone());
        let args = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(Default::default()));
        let gated = self.gate.call(&caller, &request.name, args).await;
        let content = vec![ContentBlock::text(gated.text)];
        let result = if gated.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        Ok(result.into())
    }
}
