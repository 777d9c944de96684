//! MCP servers in the binary: their tools for the agent, and the tool lists kept
//! between runs.
//!
//! A server starts on first use. To offer its tools before that, ARIA keeps the list the server
//! gave last time in `$ARIA_HOME/mcp/NAME.json`, stamped with the server's entry: a changed
//! entry (or no list yet) lists the tools once, by starting the server on a thread of its own
//! and stopping it again. `aria mcp tools` refreshes the lists.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use aria_api::Tool;
use aria_mcp::{RemoteTool, Server, ServerConfig};
use serde_json::{Value, json};

use crate::config::Config;

fn cache_path(config: &Config, server: &str) -> PathBuf {
    config.data_dir.join("mcp").join(format!("{server}.json"))
}

/// What identifies a server's entry: a changed entry lists its tools again.
fn stamp(server: &ServerConfig) -> String {
    format!(
        "{:?}",
        (
            &server.command,
            &server.url,
            &server.headers,
            &server.args,
            &server.env,
            &server.tools,
            &server.read_paths,
            server.network
        )
    )
}

fn remote_json(tools: &[RemoteTool]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({"name": t.name, "description": t.description, "input_schema": t.input_schema,
                   "read_only_hint": t.read_only_hint})
        })
        .collect()
}

fn remote_from(value: &Value) -> Vec<RemoteTool> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            // Kept as the server gave them once; made safe again on every read.
            Some(RemoteTool::described(
                t["name"].as_str()?.to_owned(),
                t["description"].as_str().unwrap_or_default(),
                t["input_schema"].clone(),
                t["read_only_hint"].as_bool(),
            ))
        })
        .collect()
}

/// The tools `server` offered last time, if its entry has not changed since.
fn cached(config: &Config, server: &ServerConfig) -> Option<Vec<RemoteTool>> {
    let text = std::fs::read_to_string(cache_path(config, &server.name)).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    (value["stamp"].as_str() == Some(stamp(server).as_str())).then(|| remote_from(&value["tools"]))
}

fn keep(config: &Config, server: &ServerConfig, tools: &[RemoteTool]) {
    let path = cache_path(config, &server.name);
    let value = json!({"stamp": stamp(server), "tools": remote_json(tools), "listed_at": jiff::Timestamp::now().to_string()});
    let written = path
        .parent()
        .map(std::fs::create_dir_all)
        .transpose()
        .and_then(|_| std::fs::write(&path, value.to_string()));
    if let Err(e) = written {
        tracing::warn!("cannot keep the tool list of MCP server {}: {e}", server.name);
    }
}

/// Starts `server` on a thread with its own runtime, lists its tools and stops it: usable from
/// inside or outside a runtime. Returns the tools and how long the start and the list took.
pub fn list_now(
    server: &ServerConfig,
    guard: &Arc<aria_tools::PathGuard>,
) -> Result<(Vec<RemoteTool>, Duration), String> {
    with_server(server, guard, |live| async move {
        let started = std::time::Instant::now();
        let tools = live.list_tools().await.map_err(|e| e.to_string());
        tools.map(|t| (t, started.elapsed()))
    })
}

/// Starts `server` on a thread with a runtime of its own (usable from inside or outside a
/// runtime), runs `work` on it, and stops it.
fn with_server<T, F, Fut>(
    server: &ServerConfig,
    guard: &Arc<aria_tools::PathGuard>,
    work: F,
) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce(Arc<Server>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let (server, guard) = (server.clone(), guard.clone());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async move {
            let live = Server::new(server, guard);
            let answer = work(live.clone()).await;
            live.stop().await;
            answer
        })
    })
    .join()
    .map_err(|_| "talking to the MCP server stopped unexpectedly".to_owned())?
}

/// What to ask a server besides its tools (resources and prompts are the user's to choose:
/// `aria mcp resources|prompts`, and `/resource` and `/prompt` in `aria chat`).
#[derive(Debug, Clone)]
pub enum Ask {
    Resources,
    Read(String),
    Prompts,
    Prompt(String, serde_json::Map<String, Value>),
}

/// Starts `server` on a thread with its own runtime, asks it, and stops it: a list as a JSON
/// array, a resource or prompt as a JSON string.
pub fn ask(
    server: &ServerConfig,
    guard: &Arc<aria_tools::PathGuard>,
    ask: Ask,
) -> Result<Value, String> {
    with_server(server, guard, |live| async move {
        let answer = match ask {
            Ask::Resources => live.list_resources().await.map(Value::from),
            Ask::Read(uri) => live.read_resource(&uri).await.map(Value::from),
            Ask::Prompts => live.list_prompts().await.map(Value::from),
            Ask::Prompt(name, args) => live.get_prompt(&name, args).await.map(Value::from),
        };
        answer.map_err(|e| e.to_string())
    })
}

/// The tools of every enabled MCP server: from the kept lists, or listed now. A server that
/// cannot be listed is left out with a warning; two tools with one name are an error.
pub fn tools(
    config: &Config,
    guard: &Arc<aria_tools::PathGuard>,
) -> Result<Vec<Arc<dyn Tool>>, String> {
    let mut servers = Vec::new();
    for entry in &config.mcp {
        let listed = match cached(config, entry) {
            Some(tools) => tools,
            None => match list_now(entry, guard) {
                Ok((tools, _)) => {
                    keep(config, entry, &tools);
                    tools
                }
                Err(e) => {
                    tracing::warn!("the tools of MCP server {} are left out: {e}", entry.name);
                    continue;
                }
            },
        };
        servers.push((Server::new(entry.clone(), guard.clone()), listed));
    }
    aria_mcp::tools(&servers)
}

/// Refreshes the kept list of `server` (for `aria mcp tools`).
pub fn refresh(
    config: &Config,
    server: &ServerConfig,
    guard: &Arc<aria_tools::PathGuard>,
) -> Result<(Vec<RemoteTool>, Duration), String> {
    let (tools, took) = list_now(server, guard)?;
    keep(config, server, &tools);
    Ok((tools, took))
}

/// The kept list of `server`, if any (for `aria mcp list`).
pub fn kept(config: &Config, server: &ServerConfig) -> Option<Vec<RemoteTool>> {
    cached(config, server)
}

/// The configured servers as `aria mcp list --json` and `GET /api/v1/mcp/servers` show them.
pub fn server_rows(config: &Config) -> Vec<Value> {
    config
        .mcp
        .iter()
        .map(|s| {
            let kept = crate::mcp::kept(config, s);
            json!({
                "name": s.name,
                "transport": if s.url.is_some() { "http" } else { "stdio" },
                "command": s.command,
                "args": s.args,
                "url": s.url,
                "headers": s.headers.iter().map(|(h, _)| h).collect::<Vec<_>>(),
                "tier": s.tier.as_str(),
                "network": s.network,
                "timeout_secs": s.timeout.as_secs(),
                "tools": kept.as_ref().map(Vec::len),
                "listed": kept.is_some(),
            })
        })
        .collect()
}
