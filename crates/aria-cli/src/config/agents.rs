//! Agent profiles (issue #24): a name, a description, a prompt of its own, a model chain, the
//! tools it may use, and settings that can only narrow what the configuration allows (mode,
//! cost per task and per day). Built in: `default`, `researcher`, `coder`, `companion`; more in
//! `aria.toml` (`[agents.NAME]`, read-only elsewhere) or made with `aria agents add` (stored in
//! ARIA's database).

use std::collections::BTreeMap;

use aria_api::ApprovalMode;
use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Where a profile comes from (only `store` ones can be edited outside `aria.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentSource {
    Builtin,
    Config,
    Store,
}

/// One agent profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentProfile {
    pub name: String,
    pub description: String,
    /// Added to ARIA's own system prompt (which keeps the roots and the rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `BACKEND/MODEL`, the first the primary, the rest fallbacks in order. Empty: the
    /// configured model and router.
    #[serde(default)]
    pub models: Vec<String>,
    /// Tool names and groups (see [`TOOL_GROUPS`]); `None`: every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The approval mode; the stricter of this and the configuration's applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ApprovalMode>,
    /// Cost cap of one task (USD); the lower of this and the configuration's applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Cost cap per day (USD); the lower of this and the configuration's applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    pub source: AgentSource,
}

/// The groups a profile's `tools` may name, and what each holds.
pub const TOOL_GROUPS: &[(&str, &str)] = &[
    ("all", "every tool"),
    (
        "read",
        "every tool whose calls only read (its tier is read), the web's and MCP servers' aside",
    ),
    ("files", "file_read, file_list, file_search, file_write, apply_patch"),
    ("git", "git_status, git_diff, git_log, git_commit"),
    ("shell", "shell_execute, python_run"),
    (
        "profiles",
        "the command profiles: lint_project, build_project, run_tests, ripgrep_search and [profiles.*]",
    ),
    ("web", "web_fetch, web_search"),
    ("memory", "memory_search, memory_store"),
    ("mcp", "every MCP server's tools"),
    ("mcp:NAME", "the tools of MCP server NAME"),
];

/// `[agents.NAME]` as written.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgent {
    pub description: Option<String>,
    pub system_prompt: Option<String>,
    pub models: Option<Vec<String>>,
    pub tools: Option<Vec<String>>,
    pub mode: Option<String>,
    pub max_cost_usd: Option<f64>,
    pub per_day_usd: Option<f64>,
    pub temperature: Option<f32>,
}

/// The backends a model chain may name.
const BACKENDS: &[&str] = &["local", "ollama", "openai", "anthropic"];

fn invalid(name: &str, message: String) -> ConfigError {
    ConfigError::Invalid(format!("[agents.{name}] {message}"))
}

/// Checks a profile's fields: the same rules for `aria.toml`, the CLI and the API.
pub fn check(profile: &AgentProfile) -> Result<(), ConfigError> {
    let name = &profile.name;
    if name.is_empty()
        || name.len() > 32
        || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_".contains(c))
    {
        return Err(ConfigError::Invalid(format!(
            "agent name {name:?}: use 1 to 32 lowercase letters, digits, - or _"
        )));
    }
    for model in &profile.models {
        match model.split_once('/') {
            Some((backend, m)) if BACKENDS.contains(&backend) && !m.trim().is_empty() => {}
            _ => {
                return Err(invalid(
                    name,
                    format!(
                        "models: {model:?} is not BACKEND/MODEL with BACKEND one of {}",
                        BACKENDS.join(", ")
                    ),
                ));
            }
        }
    }
    for tool in profile.tools.iter().flatten() {
        let group = TOOL_GROUPS.iter().any(|(g, _)| g == tool);
        let server = tool.strip_prefix("mcp:").is_some_and(|s| !s.is_empty());
        let plain = !tool.is_empty()
            && tool.len() <= 64
            && tool.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c));
        if !(group || server || plain) || tool == "mcp:NAME" {
            return Err(invalid(
                name,
                format!(
                    "tools: {tool:?} is neither a tool name nor a group ({})",
                    TOOL_GROUPS.iter().map(|(g, _)| *g).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    for (what, value) in
        [("max_cost_usd", profile.max_cost_usd), ("per_day_usd", profile.per_day_usd)]
    {
        if value.is_some_and(|v| !v.is_finite() || v < 0.0) {
            return Err(invalid(name, format!("{what} must be 0 or more")));
        }
    }
    if profile.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
        return Err(invalid(name, "temperature must be from 0 to 2".into()));
    }
    if profile.description.chars().count() > 500
        || profile.system_prompt.as_ref().is_some_and(|p| p.chars().count() > 20_000)
    {
        return Err(invalid(
            name,
            "the description is at most 500 characters, the prompt 20,000".into(),
        ));
    }
    Ok(())
}

/// A profile from `[agents.NAME]`.
pub fn from_raw(
    name: &str,
    raw: RawAgent,
    source: AgentSource,
) -> Result<AgentProfile, ConfigError> {
    let mode = match raw.mode.as_deref() {
        None => None,
        Some(m) => Some(ApprovalMode::parse(m).ok_or_else(|| {
            invalid(name, format!("mode = {m:?}: use governed, supervised or read_only"))
        })?),
    };
    let profile = AgentProfile {
        name: name.to_owned(),
        description: raw.description.unwrap_or_default(),
        system_prompt: raw.system_prompt.filter(|p| !p.trim().is_empty()),
        models: raw.models.unwrap_or_default(),
        tools: raw.tools,
        mode,
        max_cost_usd: raw.max_cost_usd,
        per_day_usd: raw.per_day_usd,
        temperature: raw.temperature,
        source,
    };
    check(&profile)?;
    Ok(profile)
}

/// The built-in profiles.
pub fn builtin() -> Vec<AgentProfile> {
    let profile = |name: &str,
                   description: &str,
                   prompt: Option<&str>,
                   tools: Option<&[&str]>,
                   mode: Option<ApprovalMode>| AgentProfile {
        name: name.into(),
        description: description.into(),
        system_prompt: prompt.map(str::to_owned),
        models: Vec::new(),
        tools: tools.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
        mode,
        max_cost_usd: None,
        per_day_usd: None,
        temperature: None,
        source: AgentSource::Builtin,
    };
    vec![
        profile(
            "default",
            "ARIA as configured: every tool, the configured mode and model.",
            None,
            None,
            None,
        ),
        profile(
            "researcher",
            "Reads and searches: files, git history, memory and the web; changes nothing.",
            Some(
                "You are a researcher. Find things out by reading files and searching the web, cite where each fact comes from, and say plainly what you could not find. You never change files.",
            ),
            Some(&["read", "web"]),
            Some(ApprovalMode::ReadOnly),
        ),
        profile(
            "coder",
            "Works on code: files, git, the shell and the lint, build and test profiles.",
            Some(
                "You are a careful software engineer. Read the code before changing it, make small changes, run the tests, and say what you changed and why.",
            ),
            Some(&["read", "files", "git", "shell", "profiles"]),
            None,
        ),
        profile(
            "companion",
            "Conversation and memory; no tool that changes files or runs anything.",
            Some(
                "You are a friendly companion. Talk with the user, remember what matters to them, and never claim to have done something you did not do.",
            ),
            Some(&["memory"]),
            None,
        ),
    ]
}

/// The profiles of `[agents.*]`, checked; a built-in name is refused (it would hide one).
pub fn resolve_agents(raw: BTreeMap<String, RawAgent>) -> Result<Vec<AgentProfile>, ConfigError> {
    let builtins = builtin();
    raw.into_iter()
        .map(|(name, agent)| {
            if builtins.iter().any(|b| b.name == name) {
                return Err(invalid(
                    &name,
                    format!("{name} is a built-in agent; give yours another name"),
                ));
            }
            from_raw(&name, agent, AgentSource::Config)
        })
        .collect()
}
