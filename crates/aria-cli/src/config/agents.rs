//! Agent profiles: a name, a description, a prompt of its own, a model chain, the
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
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "short_float")]
    pub temperature: Option<f32>,
    /// Whose memories it recalls and adds to: everyone's, or only its own.
    #[serde(default)]
    pub memory: MemoryScope,
    /// A persona (`personas/NAME.toml` under `$ARIA_HOME`) that may reword its answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// `BACKEND/MODEL` of a planner: it writes the plan and decides when the goal is met; the
    /// agent's own model chain carries out each step with tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<String>,
    /// Whether a planned task is done only once the user says yes on the channel that
    /// started it.
    #[serde(default)]
    pub confirm_completion: bool,
    pub source: AgentSource,
}

/// An `f32` as the decimal it was written as (0.3, not 0.30000001192092896).
fn short_float<S: serde::Serializer>(value: &Option<f32>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.serialize_f64(v.to_string().parse().unwrap_or(f64::from(*v))),
        None => s.serialize_none(),
    }
}

/// Whose memories an agent sees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScope {
    /// The memories every agent shares (those no agent keeps to itself).
    #[default]
    Shared,
    /// Only the memories this agent made.
    Own,
}

impl MemoryScope {
    pub fn parse(text: &str) -> Option<MemoryScope> {
        match text {
            "shared" => Some(MemoryScope::Shared),
            "own" => Some(MemoryScope::Own),
            _ => None,
        }
    }
}

/// The groups a profile's `tools` may name, and what each holds.
pub const TOOL_GROUPS: &[(&str, &str)] = &[
    ("all", "every tool"),
    (
        "read",
        "every tool whose calls only read (its tier is read), the web's and MCP servers' aside",
    ),
    ("files", "file_read, file_list, file_search, file_write, file_edit, file_insert, apply_patch"),
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
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
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
    pub memory: Option<String>,
    pub persona: Option<String>,
    pub planner: Option<String>,
    pub confirm_completion: Option<bool>,
}

/// The backends a model chain may name.
const BACKENDS: &[&str] = &["local", "ollama", "openai", "anthropic"];

fn invalid(name: &str, message: String) -> ConfigError {
    ConfigError::Invalid(format!("[agents.{name}] {message}"))
}

/// Whether `name` can name an agent or a persona.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_".contains(c))
}

/// Checks a profile's fields: the same rules for `aria.toml`, the CLI and the API.
pub fn check(profile: &AgentProfile) -> Result<(), ConfigError> {
    let name = &profile.name;
    if !valid_name(name) {
        return Err(ConfigError::Invalid(format!(
            "agent name {name:?}: use 1 to 32 lowercase letters, digits, - or _"
        )));
    }
    for (field, model) in profile
        .models
        .iter()
        .map(|m| ("models", m))
        .chain(profile.planner.iter().map(|m| ("planner", m)))
    {
        match model.split_once('/') {
            Some((backend, m)) if BACKENDS.contains(&backend) && !m.trim().is_empty() => {}
            _ => {
                return Err(invalid(
                    name,
                    format!(
                        "{field}: {model:?} is not BACKEND/MODEL with BACKEND one of {}",
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
    if let Some(persona) = &profile.persona
        && !valid_name(persona)
    {
        return Err(invalid(
            name,
            format!(
                "persona: {persona:?} is not a persona name (personas/NAME.toml; 1 to 32 \
                 lowercase letters, digits, - or _)"
            ),
        ));
    }
    if profile.confirm_completion && profile.planner.is_none() {
        return Err(invalid(
            name,
            "confirm_completion needs a planner (it confirms a planned task's end)".into(),
        ));
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
    let memory = match raw.memory.as_deref() {
        None => MemoryScope::Shared,
        Some(m) => MemoryScope::parse(m)
            .ok_or_else(|| invalid(name, format!("memory = {m:?}: use shared or own")))?,
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
        memory,
        persona: raw.persona.filter(|p| !p.is_empty()),
        planner: raw.planner.filter(|p| !p.is_empty()),
        confirm_completion: raw.confirm_completion.unwrap_or(false),
        source,
    };
    check(&profile)?;
    Ok(profile)
}

/// A profile as `[agents.NAME]` would say it (also how `aria agents add` stores one).
pub fn to_raw(profile: &AgentProfile) -> RawAgent {
    RawAgent {
        description: Some(profile.description.clone()),
        system_prompt: profile.system_prompt.clone(),
        models: (!profile.models.is_empty()).then(|| profile.models.clone()),
        tools: profile.tools.clone(),
        mode: profile.mode.map(|m| m.as_str().to_owned()),
        max_cost_usd: profile.max_cost_usd,
        per_day_usd: profile.per_day_usd,
        temperature: profile.temperature,
        memory: (profile.memory == MemoryScope::Own).then(|| "own".to_owned()),
        persona: profile.persona.clone(),
        planner: profile.planner.clone(),
        confirm_completion: profile.confirm_completion.then_some(true),
    }
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
        memory: MemoryScope::Shared,
        persona: None,
        planner: None,
        confirm_completion: false,
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
