//! `[mcp.servers.NAME]`: MCP servers whose tools the agent may use. Environment
//! variables are passed by name only (`env = ["GITHUB_TOKEN"]`), never a value in this file.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use aria_api::Tier;
use aria_mcp::ServerConfig;
use aria_sandbox::NetworkGrant;
use serde::{Deserialize, Serialize};

use super::{ConfigError, Env};

/// `[mcp]` as written.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcp {
    #[serde(default)]
    pub servers: BTreeMap<String, RawServer>,
}

/// One `[mcp.servers.NAME]` as written.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    /// The program (stdio servers).
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Names of environment variables passed from ARIA's environment.
    #[serde(default)]
    pub env: Vec<String>,
    /// A Streamable HTTP server's URL (instead of `command`).
    pub url: Option<String>,
    /// Headers for a Streamable HTTP server: header name = the environment variable holding its
    /// value (`headers = { Authorization = "MY_SERVER_AUTH" }`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub enabled: Option<bool>,
    pub timeout_secs: Option<u64>,
    /// Only these tools (default: all).
    pub tools: Option<Vec<String>>,
    /// The tier of the server's tools (default irreversible: ARIA asks before each call).
    pub tier: Option<String>,
    #[serde(default)]
    pub tool_tiers: BTreeMap<String, String>,
    /// Extra paths the server may read (where npm, uvx or a venv installed it).
    #[serde(default)]
    pub read_paths: Vec<String>,
    /// Whether the server may use the network (default false): `true`, or only these hosts
    /// (`["api.github.com", "*.example.com"]`). Public addresses only, either way.
    pub network: Option<NetworkGrant>,
}

/// The enabled servers, checked.
pub type McpServers = Vec<ServerConfig>;

fn tier(server: &str, what: &str, text: &str) -> Result<Tier, ConfigError> {
    match text {
        "read" => Ok(Tier::Read),
        "recoverable-write" | "recoverable_write" => Ok(Tier::RecoverableWrite),
        "irreversible" => Ok(Tier::Irreversible),
        other => Err(ConfigError::Invalid(format!(
            "[mcp.servers.{server}] {what} = {other:?}: write read, recoverable-write or irreversible"
        ))),
    }
}

pub fn resolve_mcp(raw: RawMcp, env: &dyn Env) -> Result<McpServers, ConfigError> {
    let mut out = Vec::new();
    for (name, s) in raw.servers {
        if name.is_empty()
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ConfigError::Invalid(format!(
                "[mcp.servers.{name}]: a server name is letters, digits, - or _"
            )));
        }
        if !s.enabled.unwrap_or(true) {
            continue;
        }
        let command = s.command.filter(|c| !c.trim().is_empty());
        let url = match (&command, s.url) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Invalid(format!(
                    "[mcp.servers.{name}]: give command (a stdio server) or url (a Streamable \
                     HTTP server), not both"
                )));
            }
            (None, None) => {
                return Err(ConfigError::Invalid(format!(
                    "[mcp.servers.{name}]: give the command that starts the server (command = \
                     \"npx\", args = [...]) or the url of a Streamable HTTP server"
                )));
            }
            (_, Some(url)) => {
                let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
                if !matches!(scheme.as_deref(), Some("http" | "https")) {
                    return Err(ConfigError::Invalid(format!(
                        "[mcp.servers.{name}] url = {url:?}: give an http:// or https:// URL"
                    )));
                }
                if !s.env.is_empty() || !s.read_paths.is_empty() || s.network.is_some() {
                    return Err(ConfigError::Invalid(format!(
                        "[mcp.servers.{name}]: env, read_paths and network are for stdio \
                         servers; a url server gets its secrets through headers = {{ NAME = \
                         \"ENV_VAR\" }}"
                    )));
                }
                Some(url)
            }
            (Some(_), None) => {
                if !s.headers.is_empty() {
                    return Err(ConfigError::Invalid(format!(
                        "[mcp.servers.{name}] headers: only a url server gets headers; a stdio \
                         server gets environment variables (env = [\"NAME\"])"
                    )));
                }
                None
            }
        };
        for (header, var) in &s.headers {
            let token = |t: &str| {
                !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
            };
            if !token(header) || !token(var) {
                return Err(ConfigError::Invalid(format!(
                    "[mcp.servers.{name}] headers.{header} = {var:?}: a header name, then the \
                     name of the environment variable that holds its value"
                )));
            }
        }
        let timeout = s.timeout_secs.unwrap_or(30);
        if !(1..=3_600).contains(&timeout) {
            return Err(ConfigError::Invalid(format!(
                "[mcp.servers.{name}] timeout_secs = {timeout}: give 1 to 3600"
            )));
        }
        let grant = s.network.clone().unwrap_or_default();
        grant.validate().map_err(|e| ConfigError::Invalid(format!("[mcp.servers.{name}] {e}")))?;
        let mut tool_tiers = BTreeMap::new();
        for (tool, t) in &s.tool_tiers {
            tool_tiers.insert(tool.clone(), tier(&name, &format!("tool_tiers.{tool}"), t)?);
        }
        out.push(ServerConfig {
            name: name.clone(),
            command: command.unwrap_or_default(),
            url,
            headers: s.headers.into_iter().collect(),
            args: s.args,
            env: s.env,
            timeout: Duration::from_secs(timeout),
            tools: s.tools,
            tier: match s.tier.as_deref() {
                Some(t) => tier(&name, "tier", t)?,
                None => Tier::Irreversible,
            },
            tool_tiers,
            read_paths: s
                .read_paths
                .iter()
                .map(|p| super::expand_tilde(p, env))
                .collect::<Vec<PathBuf>>(),
            network: grant.granted(),
            network_hosts: grant.hosts(),
        });
    }
    Ok(out)
}
