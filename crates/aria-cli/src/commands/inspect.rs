//! Read-only commands: tools, conversations, sessions, config.

use aria_api::Role;
use serde_json::json;

use super::run::Context;
use crate::app;
use crate::cli::{ConfigCommand, ConversationsCommand, GlobalArgs, SessionsCommand, ToolsCommand};
use crate::config::ConfigSource;
use crate::exit::{CliError, CliResult, OK, USAGE};
use crate::render::clip;
use crate::runlock;

pub fn tools(global: &GlobalArgs, command: ToolsCommand) -> CliResult<u8> {
    let ToolsCommand::List { json } = command;
    let ctx = Context::load(global)?;
    let rows = tool_rows(&ctx)?;
    if json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|(spec, tier)| {
                let mut v = serde_json::to_value(spec).unwrap_or_default();
                v["tier"] = json!(tier);
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(OK);
    }
    for (spec, tier) in rows {
        let args: Vec<String> = spec.parameters["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        println!(
            "{:<16} {:<18} {{{}}}  {}",
            spec.name,
            tier,
            args.join(", "),
            clip(&spec.description, 80)
        );
    }
    Ok(OK)
}

/// Exactly what the model is offered: the built-in, profile and store tools, `ask_user` and the
/// memory tools (listed without loading an embedder: their specs do not depend on it), each with
/// its tier, sorted by name.
pub(crate) fn tool_rows(ctx: &Context) -> CliResult<Vec<(aria_api::ToolSpec, &'static str)>> {
    let tools = agent_tools(ctx)?;
    let mut rows: Vec<(aria_api::ToolSpec, &'static str)> =
        tools.iter().map(|t| (t.spec().clone(), tier_label(t.as_ref()))).collect();
    rows.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    Ok(rows)
}

/// Every tool an agent is given on this machine (without loading a model or an embedder).
pub(crate) fn agent_tools(ctx: &Context) -> CliResult<Vec<std::sync::Arc<dyn aria_api::Tool>>> {
    let mut tools = app::tools(&ctx.config)?;
    tools.extend(app::store_tools(&ctx.config, &ctx.store));
    let memory: std::sync::Arc<dyn aria_core::MemoryBackend> =
        std::sync::Arc::new(crate::memory::StoreMemory::new(ctx.store.clone(), None));
    tools.extend(aria_core::memory_tools(memory, ctx.redactor.clone(), false));
    // Every agent has `ask_user` (who answers depends on the front end, not its spec).
    let nobody = std::sync::Arc::default();
    tools.push(std::sync::Arc::new(aria_gateway::choices::AskUser::new(nobody)));
    Ok(tools)
}

/// A tool's tier as a person reads it in the list: its tier when it does not depend on the
/// arguments, else `by-arguments` (shell_execute classifies each command line).
fn tier_label(tool: &dyn aria_api::Tool) -> &'static str {
    let probes = [
        json!({}),
        json!({"path": "."}),
        json!({"command": "ls"}),
        json!({"command": "touch x"}),
        json!({"code": "1"}),
        json!({"url": "https://example.com/"}),
    ];
    let tiers: Vec<aria_api::Tier> = probes.iter().map(|a| tool.tier(a)).collect();
    let valid: Vec<aria_api::Tier> =
        tiers.iter().copied().filter(|t| *t != aria_api::Tier::Blocked).collect();
    match valid.first() {
        None => tiers[0].as_str(),
        Some(first) if valid.iter().any(|t| t != first) => "by-arguments",
        Some(first) => first.as_str(),
    }
}

pub fn conversations(global: &GlobalArgs, command: ConversationsCommand) -> CliResult<u8> {
    let ctx = Context::load(global)?;
    match command {
        ConversationsCommand::List { limit, json } => {
            let list = ctx.store.list_conversations(limit)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else if list.is_empty() {
                eprintln!("no conversations yet; start one with `aria chat`");
            } else {
                for c in list {
                    println!(
                        "{}  {}  {:>4} msgs  {}",
                        c.id, c.updated_at, c.message_count, c.title
                    );
                }
            }
        }
        ConversationsCommand::Show { id, json } => {
            let id = ctx.resolve(aria_store::IdKind::Conversation, &id)?;
            let Some((summary, messages)) = ctx.store.get_conversation(&id)? else {
                return Err(CliError {
                    code: USAGE,
                    error: anyhow::anyhow!(
                        "there is no conversation `{id}`; `aria conversations list` shows them"
                    ),
                });
            };
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &json!({"conversation": summary, "messages": messages})
                    )?
                );
                return Ok(OK);
            }
            println!("# {}\n{} · {} messages\n", summary.title, summary.id, summary.message_count);
            for m in messages {
                let who = match m.message.role {
                    Role::User => "you",
                    Role::Assistant => "aria",
                    Role::Tool => "tool",
                    Role::System => "system",
                };
                if !m.message.content.is_empty() {
                    // What a person reads: a tool result's content without its fence, and
                    // no copies of ARIA's markers in the model's words (--json keeps all).
                    let body = if m.message.role == Role::Tool {
                        let content = aria_core::untrusted_body(&m.message.content)
                            .unwrap_or(&m.message.content);
                        clip(content, 200)
                    } else {
                        aria_core::strip_markers(&m.message.content).into_owned()
                    };
                    println!("[{}] {who}: {body}", m.created_at);
                }
                for call in &m.message.tool_calls {
                    println!(
                        "[{}] {who} → {} {}",
                        m.created_at,
                        call.name,
                        clip(&call.arguments, 120)
                    );
                }
            }
        }
    }
    Ok(OK)
}

pub fn sessions(global: &GlobalArgs, command: SessionsCommand) -> CliResult<u8> {
    let SessionsCommand::List { limit, json } = command;
    let ctx = Context::load(global)?;
    let list = ctx.store.list_sessions(limit)?;
    let status = |s: &aria_api::SessionRecord| {
        if s.state.is_terminal() {
            s.state.as_str().to_owned()
        } else if runlock::is_running(&ctx.config.data_dir, &s.id) {
            format!("running ({})", s.state)
        } else {
            format!("interrupted ({})", s.state)
        }
    };
    if json {
        let rows: Vec<_> = list
            .iter()
            .map(|s| {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                v["status"] = json!(status(s));
                v["interrupted"] = json!(
                    !s.state.is_terminal() && !runlock::is_running(&ctx.config.data_dir, &s.id)
                );
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(OK);
    }
    for s in &list {
        println!(
            "{}  {}  {:<24} {:>2} it  {}",
            s.id,
            s.created_at,
            status(s),
            s.iterations,
            clip(&s.task, 60)
        );
    }
    if list.is_empty() {
        eprintln!("no sessions yet");
    }
    Ok(OK)
}

pub fn config(global: &GlobalArgs, command: ConfigCommand) -> CliResult<u8> {
    let config = app::load_config(global)?;
    match command {
        ConfigCommand::Path => {
            println!("config: {}", config.source.describe());
            println!("data:   {}", config.data_dir.display());
            println!("db:     {}", app::db_path(&config).display());
        }
        ConfigCommand::Show { json } => {
            let value = serde_json::to_value(&config)?;
            let redactor = app::redactor(&config);
            let mut value = value;
            aria_api::redact_json(redactor.as_ref(), &mut value);
            if json {
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                // A valid aria.toml (what `config check` accepts), secrets never included:
                // they come only from the environment or ARIA's .env files.
                println!("# {}", config.source.describe());
                println!("# data directory: {}", config.data_dir.display());
                let text = toml::to_string_pretty(&config.to_raw()).map_err(CliError::failed)?;
                // A credential written into a URL (`https://user:pass@…`, `?key=…`) is the one
                // secret a file value can hold: the secret filter takes it out.
                let shown = aria_api::Redact::redact(redactor.as_ref(), &text);
                if shown != text {
                    println!(
                        "# secrets in these values are shown as [REDACTED:kind]; put the real ones \
                         back (or better, in the environment) before using this file"
                    );
                }
                print!("{shown}");
            }
        }
        ConfigCommand::Check => {
            let mut problems = Vec::new();
            for root in &config.roots {
                if !root.is_dir() {
                    problems.push(format!(
                        "root {} does not exist or is not a directory",
                        root.display()
                    ));
                }
            }
            if let Err(e) = app::path_guard(&config) {
                problems.push(e.error.to_string());
            }
            if config.provider.name == crate::config::LOCAL_PROVIDER {
                if let Some(note) = app::local_model_note(&config) {
                    eprintln!("note: {note}");
                }
            } else if config.provider.api_key.is_none()
                && config.provider.base_url == crate::config::DEFAULT_OPENAI_BASE_URL
            {
                problems.push(
                    "no model is reachable: set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL for a local server (e.g. http://127.0.0.1:11434/v1 for Ollama)".into(),
                );
            }
            if matches!(config.source, ConfigSource::None(_)) {
                eprintln!(
                    "note: no config file; using built-in defaults ({})",
                    config.source.path().display()
                );
            }
            if problems.is_empty() {
                println!("configuration ok ({})", config.source.describe());
            } else {
                for p in &problems {
                    eprintln!("problem: {p}");
                }
                return Ok(USAGE);
            }
        }
    }
    Ok(OK)
}
