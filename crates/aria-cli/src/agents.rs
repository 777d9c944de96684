//! Running as an agent profile (`--agent NAME`): the profile's model chain becomes
//! the model and fallbacks (unless `--backend`/`--model` were given), its prompt is added to
//! ARIA's, only its tools are offered, and its mode and cost caps apply when they are
//! stricter. A profile can never widen what the configuration allows: roots, sensitive files,
//! caps and mode stay as they are or get narrower.

use aria_api::Tier;

use crate::cli::GlobalArgs;
use crate::config::agents::{AgentProfile, AgentSource, RawAgent, builtin, from_raw};
use crate::config::{Config, FallbackConfig};
use crate::exit::{CliError, CliResult};

/// Every agent: the built-in ones, those of `aria.toml`, then those stored in ARIA's
/// database (`aria agents add`, the API, the web UI). A stored agent that no longer passes the
/// checks, or whose name `aria.toml` has taken since, is left out with a warning in the log.
pub fn all(config: &Config, store: Option<&aria_store::Store>) -> CliResult<Vec<AgentProfile>> {
    let mut all = builtin();
    all.extend(config.agents.iter().cloned());
    for stored in store.map(|s| s.agents()).transpose()?.into_iter().flatten() {
        if all.iter().any(|a| a.name == stored.name) {
            tracing::warn!(agent = %stored.name, "a stored agent is hidden by one of the same name");
            continue;
        }
        match stored_profile(&stored) {
            Ok(profile) => all.push(profile),
            Err(e) => {
                tracing::warn!(agent = %stored.name, error = %e, "a stored agent is left out")
            }
        }
    }
    Ok(all)
}

/// A stored agent as a profile, checked as when it was made.
pub fn stored_profile(stored: &aria_store::StoredAgent) -> Result<AgentProfile, String> {
    let raw: RawAgent =
        serde_json::from_value(stored.profile.clone()).map_err(|e| e.to_string())?;
    from_raw(&stored.name, raw, AgentSource::Store).map_err(|e| e.to_string())
}

/// The agent `name`, or a usage error listing the names there are.
pub fn find(
    config: &Config,
    store: Option<&aria_store::Store>,
    name: &str,
) -> CliResult<AgentProfile> {
    let all = all(config, store)?;
    all.iter().find(|a| a.name == name).cloned().ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|a| a.name.as_str()).collect();
        CliError::usage(format!(
            "no agent named {name}; the agents are {} (aria agents list)",
            names.join(", ")
        ))
    })
}

/// The configuration of a command run as `name`: loaded again with the agent's primary model
/// (when no `--backend`/`--model` was given), then narrowed by the profile.
pub fn configure(
    global: &GlobalArgs,
    config: Config,
    store: &aria_store::Store,
    name: &str,
) -> CliResult<Config> {
    let profile = find(&config, Some(store), name)?;
    configure_profile(global, config, profile)
}

/// [`configure`] for a profile at hand.
pub fn configure_profile(
    global: &GlobalArgs,
    config: Config,
    profile: AgentProfile,
) -> CliResult<Config> {
    let mut config = match profile.models.first().and_then(|m| m.split_once('/')) {
        Some((backend, model)) if global.backend.is_none() && global.model.is_none() => {
            let mut with_model = global.clone();
            with_model.backend = Some(backend.to_owned());
            with_model.model = Some(model.to_owned());
            crate::app::load_config(&with_model)?
        }
        _ => config,
    };
    narrow(&mut config, &profile);
    config.agent = Some(profile);
    Ok(config)
}

/// The daemon's agents by profile, built when a conversation bound to one first runs and
/// built again when the profile has changed since (`aria agents edit`, the API). They share the
/// daemon's store, approvals and `ask_user` front end; a profile only narrows the daemon's
/// configuration, as it does for `aria run --agent`.
pub fn daemon_agents(
    global: &GlobalArgs,
    config: &Config,
    store: &std::sync::Arc<aria_store::Store>,
    redactor: &std::sync::Arc<aria_tools::SecretRedactor>,
    approvals: aria_gateway::Approvals,
    choices: std::sync::Arc<aria_gateway::choices::Choices>,
) -> aria_gateway::AgentFor {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    type Built = (AgentProfile, aria_gateway::Profiled);
    let built: Mutex<HashMap<String, Built>> = Mutex::default();
    let (global, config, store, redactor) =
        (global.clone(), config.clone(), store.clone(), redactor.clone());
    Arc::new(move |name: &str| {
        let profile = find(&config, Some(&store), name).map_err(|e| format!("{:#}", e.error))?;
        let mut cache = built.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((made_from, built)) = cache.get(name)
            && *made_from == profile
        {
            return Ok(built.clone());
        }
        let configured = configure_profile(&global, config.clone(), profile.clone())
            .map_err(|e| format!("{:#}", e.error))?;
        let ask_user: Arc<dyn aria_api::Tool> =
            Arc::new(aria_gateway::choices::AskUser::new(choices.clone()));
        let parts = crate::app::agent_parts(
            &configured,
            store.clone(),
            redactor.clone(),
            Some(Arc::new(approvals.clone())),
            false,
            vec![ask_user],
        )
        .map_err(|e| format!("{:#}", e.error))?;
        let extras =
            crate::planned::Extras::load(&configured).map_err(|e| format!("{:#}", e.error))?;
        let built = aria_gateway::Profiled {
            agent: Arc::new(parts.agent),
            persona: extras.persona.map(Arc::new),
            plan: extras.plan.map(Arc::new),
        };
        cache.insert(name.to_owned(), (profile, built.clone()));
        Ok(built)
    })
}

/// The agent a command runs as: `wanted` (`--agent`), or the one `conversation` is bound to.
/// Continuing a conversation as another agent is a usage error: a conversation keeps its
/// agent, so its history is never read by a profile with other tools or another prompt.
pub fn choose(
    store: &aria_store::Store,
    wanted: Option<&str>,
    conversation: Option<&str>,
) -> CliResult<Option<String>> {
    let bound = match conversation {
        Some(c) => store.conversation_agent(c)?,
        None => None,
    };
    match (wanted, bound) {
        (Some(w), Some(b)) if w != b => Err(CliError::usage(format!(
            "conversation {} is bound to the agent {b}; continue it without --agent (or with \
             --agent {b}), or start a new conversation as {w}",
            conversation.unwrap_or_default()
        ))),
        (Some(w), _) => Ok(Some(w.to_owned())),
        (None, Some(b)) if b != "default" => Ok(Some(b)),
        (None, _) => Ok(None),
    }
}

/// Applies what a profile may change: never looser than the configuration.
pub fn narrow(config: &mut Config, profile: &AgentProfile) {
    if let Some(mode) = profile.mode {
        config.mode = config.mode.stricter(mode);
    }
    if let Some(cap) = profile.max_cost_usd {
        config.limits.max_cost_usd = config.limits.max_cost_usd.min(cap);
    }
    if let Some(cap) = profile.per_day_usd {
        config.caps.per_day_usd = Some(config.caps.per_day_usd.map_or(cap, |c| c.min(cap)));
    }
    if let Some(t) = profile.temperature {
        config.provider.temperature = Some(t);
    }
    if profile.models.len() > 1 {
        config.router.fallback = profile.models[1..]
            .iter()
            .filter_map(|m| m.split_once('/'))
            .map(|(backend, model)| FallbackConfig {
                backend: backend.to_owned(),
                model: model.to_owned(),
                on_error: true,
                on_context_overflow: true,
                above_input_tokens: None,
            })
            .collect();
    }
}

/// What a tool is, for a profile's groups.
#[derive(Debug, Clone, Copy)]
pub struct ToolKind<'a> {
    pub name: &'a str,
    /// Its tier when called without arguments (what it is at least).
    pub tier: Tier,
    /// One of the command profiles' tools.
    pub profile: bool,
    /// The MCP server it comes from.
    pub mcp_server: Option<&'a str>,
}

/// Whether `profile` offers `tool`. `ask_user` (how the model asks the person) always is.
pub fn allows(profile: &AgentProfile, tool: ToolKind<'_>) -> bool {
    let Some(wanted) = &profile.tools else { return true };
    tool.name == "ask_user"
        || wanted.iter().any(|w| match w.as_str() {
            "all" => true,
            // Reading the web is its own group: what leaves in a URL is a way out.
            "read" => tool.tier == Tier::Read && tool.mcp_server.is_none() && !web(tool.name),
            "files" => {
                ["file_read", "file_list", "file_search"].contains(&tool.name)
                    || aria_api::CHANGE_TOOLS.contains(&tool.name)
            }
            "git" => ["git_status", "git_diff", "git_log", "git_commit"].contains(&tool.name),
            "shell" => ["shell_execute", "python_run"].contains(&tool.name),
            "profiles" => tool.profile,
            "web" => web(tool.name),
            "memory" => ["memory_search", "memory_store"].contains(&tool.name),
            "mcp" => tool.mcp_server.is_some(),
            other => match other.strip_prefix("mcp:") {
                Some(server) => tool.mcp_server == Some(server),
                None => other == tool.name,
            },
        })
}

fn web(tool: &str) -> bool {
    ["web_fetch", "web_search"].contains(&tool)
}

/// The part of the system prompt that says which agent this is.
pub fn prompt_section(profile: &AgentProfile) -> String {
    let mut text = format!("\n\nYou are running as the agent \"{}\"", profile.name);
    if !profile.description.is_empty() {
        text.push_str(&format!(": {}", profile.description));
    }
    text.push('.');
    if let Some(prompt) = &profile.system_prompt {
        text.push_str("\n\n");
        text.push_str(prompt);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::agents::check;
    use aria_api::ApprovalMode;

    fn kind(name: &str, tier: Tier) -> ToolKind<'_> {
        ToolKind { name, tier, profile: false, mcp_server: None }
    }

    fn named(name: &str) -> AgentProfile {
        builtin().into_iter().find(|a| a.name == name).unwrap()
    }

    #[test]
    fn the_built_in_agents_offer_what_they_say() {
        let researcher = named("researcher");
        assert!(allows(&researcher, kind("file_read", Tier::Read)));
        assert!(allows(&researcher, kind("web_search", Tier::Read)));
        assert!(!allows(&researcher, kind("file_write", Tier::RecoverableWrite)));
        assert!(!allows(&researcher, kind("shell_execute", Tier::Irreversible)));
        assert_eq!(researcher.mode, Some(ApprovalMode::ReadOnly));
        let coder = named("coder");
        for tool in
            ["file_write", "file_edit", "apply_patch", "git_commit", "shell_execute", "python_run"]
        {
            assert!(allows(&coder, kind(tool, Tier::RecoverableWrite)), "{tool}");
        }
        let run_tests = ToolKind { profile: true, ..kind("run_tests", Tier::Read) };
        assert!(allows(&coder, run_tests));
        assert!(!allows(&coder, kind("web_fetch", Tier::Read)));
        let companion = named("companion");
        assert!(allows(&companion, kind("memory_search", Tier::Read)));
        assert!(allows(&companion, kind("ask_user", Tier::Read)));
        for tool in ["file_write", "shell_execute", "file_read", "web_fetch", "git_commit"] {
            assert!(!allows(&companion, kind(tool, Tier::Read)), "{tool}");
        }
        assert!(allows(&named("default"), kind("anything", Tier::Irreversible)));
    }

    #[test]
    fn mcp_groups_name_servers_and_read_leaves_their_tools_out() {
        let profile = AgentProfile { tools: Some(vec!["mcp:fs".into()]), ..named("default") };
        let fs = ToolKind { mcp_server: Some("fs"), ..kind("fs__read", Tier::Read) };
        let other = ToolKind { mcp_server: Some("gh"), ..kind("gh__issues", Tier::Read) };
        assert!(allows(&profile, fs) && !allows(&profile, other));
        // A server's own say-so never makes its tool part of "read".
        assert!(!allows(&named("researcher"), fs));
    }

    #[test]
    fn a_profile_only_narrows() {
        let mut profile = named("default");
        profile.mode = Some(ApprovalMode::Governed);
        profile.max_cost_usd = Some(50.0);
        profile.per_day_usd = Some(0.5);
        let mut config = test_config();
        config.mode = ApprovalMode::Supervised;
        config.limits.max_cost_usd = 1.0;
        config.caps.per_day_usd = Some(2.0);
        narrow(&mut config, &profile);
        assert_eq!(config.mode, ApprovalMode::Supervised, "a looser mode is ignored");
        assert_eq!(config.limits.max_cost_usd, 1.0, "a higher cap is ignored");
        assert_eq!(config.caps.per_day_usd, Some(0.5), "a lower cap applies");
        profile.mode = Some(ApprovalMode::ReadOnly);
        narrow(&mut config, &profile);
        assert_eq!(config.mode, ApprovalMode::ReadOnly);
    }

    #[test]
    fn bad_profiles_are_refused_naming_the_field() {
        let raw = |f: fn(&mut RawAgent)| {
            let mut r = RawAgent::default();
            f(&mut r);
            from_raw("mine", r, AgentSource::Config).unwrap_err().to_string()
        };
        assert!(raw(|r| r.models = Some(vec!["gpt-4o".into()])).contains("models"));
        assert!(raw(|r| r.models = Some(vec!["cloud/x".into()])).contains("BACKEND/MODEL"));
        assert!(raw(|r| r.tools = Some(vec!["rm -rf".into()])).contains("tools"));
        assert!(raw(|r| r.mode = Some("yolo".into())).contains("mode"));
        assert!(raw(|r| r.max_cost_usd = Some(-1.0)).contains("max_cost_usd"));
        assert!(raw(|r| r.temperature = Some(3.0)).contains("temperature"));
        let bad_name = AgentProfile { name: "Has Space".into(), ..named("default") };
        assert!(check(&bad_name).is_err());
        assert!(check(&named("coder")).is_ok());
    }

    fn test_config() -> Config {
        let env = crate::config::Vars([("HOME", "/home/u")].into_iter().collect());
        crate::config::resolve(
            crate::config::RawConfig::default(),
            crate::config::ConfigSource::None(std::path::PathBuf::from("/x")),
            &env,
            &crate::config::Overrides::default(),
        )
        .unwrap()
    }
}
