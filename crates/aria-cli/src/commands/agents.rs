//! `aria agents list|show|add|edit|remove`: agent profiles from the command line, checked by
//! the same rules as the HTTP API's (`agents_book.rs`).

use aria_store::AgentWrite;
use serde_json::{Value, json};

use super::run::Context;
use crate::agents_book::{editable, remove, save};
use crate::app;
use crate::cli::{AgentFields, AgentsCommand, GlobalArgs};
use crate::config::agents::{AgentProfile, RawAgent};
use crate::exit::{CliError, CliResult, OK};

pub fn agents(global: &GlobalArgs, command: AgentsCommand) -> CliResult<u8> {
    match command {
        AgentsCommand::List { json } => {
            let ctx = Context::load(global)?;
            list(&crate::agents::all(&ctx.config, Some(&ctx.store))?, json)
        }
        AgentsCommand::Show { name, json } => {
            let ctx = Context::load(global)?;
            let profile = crate::agents::find(&ctx.config, Some(&ctx.store), &name)?;
            show(&ctx, &profile, json)
        }
        AgentsCommand::Add { name, fields } => {
            let ctx = Context::load(global)?;
            let json = fields.json;
            let raw = apply(RawAgent::default(), fields, &[])?;
            let profile = save(&ctx.config, &ctx.store, &name, raw, AgentWrite::Create)?;
            saved(&profile, json, "made")
        }
        AgentsCommand::Edit { name, fields, unset } => {
            let ctx = Context::load(global)?;
            let json = fields.json;
            if unset.is_empty() && fields_empty(&fields) {
                return Err(CliError::usage(
                    "say what to change: a field flag (aria agents edit --help) or --unset FIELD",
                ));
            }
            let raw = apply(editable(&ctx.config, &ctx.store, &name)?, fields, &unset)?;
            let profile = save(&ctx.config, &ctx.store, &name, raw, AgentWrite::Replace)?;
            saved(&profile, json, "changed")
        }
        AgentsCommand::Remove { name } => {
            let ctx = Context::load(global)?;
            remove(&ctx.config, &ctx.store, &name)?;
            println!("removed the agent {name}");
            Ok(OK)
        }
    }
}

fn fields_empty(f: &AgentFields) -> bool {
    let AgentFields {
        description,
        prompt,
        prompt_file,
        models,
        tools,
        mode,
        max_cost_usd,
        per_day_usd,
        temperature,
        memory,
        persona,
        planner,
        confirm_completion,
        json: _,
    } = f;
    description.is_none()
        && prompt.is_none()
        && prompt_file.is_none()
        && models.is_none()
        && tools.is_none()
        && mode.is_none()
        && max_cost_usd.is_none()
        && per_day_usd.is_none()
        && temperature.is_none()
        && memory.is_none()
        && persona.is_none()
        && planner.is_none()
        && !confirm_completion
}

/// The fields that can be cleared with `--unset`.
const UNSETTABLE: &[&str] = &[
    "description",
    "system_prompt",
    "models",
    "tools",
    "mode",
    "max_cost_usd",
    "per_day_usd",
    "temperature",
    "memory",
    "persona",
    "planner",
    "confirm_completion",
];

/// `fields` over `raw`, then `unset` cleared.
fn apply(mut raw: RawAgent, fields: AgentFields, unset: &[String]) -> CliResult<RawAgent> {
    let prompt = match (fields.prompt, fields.prompt_file) {
        (Some(p), _) => Some(p),
        (None, Some(path)) => Some(std::fs::read_to_string(&path).map_err(|e| {
            CliError::usage(format!("cannot read the prompt file {}: {e}", path.display()))
        })?),
        (None, None) => None,
    };
    fn set<T>(slot: &mut Option<T>, value: Option<T>) {
        if value.is_some() {
            *slot = value;
        }
    }
    set(&mut raw.description, fields.description);
    set(&mut raw.system_prompt, prompt);
    set(&mut raw.models, fields.models);
    set(&mut raw.tools, fields.tools);
    set(&mut raw.mode, fields.mode);
    set(&mut raw.max_cost_usd, fields.max_cost_usd);
    set(&mut raw.per_day_usd, fields.per_day_usd);
    set(&mut raw.temperature, fields.temperature);
    set(&mut raw.memory, fields.memory);
    set(&mut raw.persona, fields.persona);
    set(&mut raw.planner, fields.planner);
    if fields.confirm_completion {
        raw.confirm_completion = Some(true);
    }
    for field in unset {
        match field.replace('-', "_").as_str() {
            "description" => raw.description = None,
            "system_prompt" | "prompt" => raw.system_prompt = None,
            "models" => raw.models = None,
            "tools" => raw.tools = None,
            "mode" => raw.mode = None,
            "max_cost_usd" => raw.max_cost_usd = None,
            "per_day_usd" => raw.per_day_usd = None,
            "temperature" => raw.temperature = None,
            "memory" => raw.memory = None,
            "persona" => raw.persona = None,
            "planner" => raw.planner = None,
            "confirm_completion" => raw.confirm_completion = None,
            other => {
                return Err(CliError::usage(format!(
                    "--unset {other}: no such field; use one of {}",
                    UNSETTABLE.join(", ")
                )));
            }
        }
    }
    Ok(raw)
}

fn saved(profile: &AgentProfile, json: bool, what: &str) -> CliResult<u8> {
    if json {
        println!("{}", serde_json::to_string_pretty(&row(profile))?);
    } else {
        println!(
            "{what} the agent {name} (kept in ARIA's database); use it with --agent {name}, see \
             it with aria agents show {name}",
            name = profile.name
        );
    }
    Ok(OK)
}

fn row(profile: &AgentProfile) -> Value {
    serde_json::to_value(profile).unwrap_or_default()
}

fn list(all: &[AgentProfile], json: bool) -> CliResult<u8> {
    if json {
        let rows: Vec<Value> = all.iter().map(row).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(OK);
    }
    for a in all {
        let tools = a.tools.as_ref().map_or("all tools".to_owned(), |t| t.join(", "));
        let mode = a.mode.map(|m| format!(" · mode {}", m.as_str())).unwrap_or_default();
        let models = if a.models.is_empty() {
            String::new()
        } else {
            format!(" · models {}", a.models.join(" → "))
        };
        println!(
            "{:<12} [{}] {}\n             tools: {tools}{mode}{models}",
            a.name,
            serde_json::to_value(a.source)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            a.description
        );
    }
    Ok(OK)
}

/// The tools this machine's configuration would offer `profile`.
fn offered(ctx: &Context, profile: &AgentProfile) -> CliResult<Vec<String>> {
    let tools = super::inspect::agent_tools(ctx)?;
    let tools = app::agent_tools(&ctx.config, profile, tools);
    Ok(tools.iter().map(|t| t.spec().name.clone()).collect())
}

fn show(ctx: &Context, profile: &AgentProfile, json: bool) -> CliResult<u8> {
    let offered = offered(ctx, profile)?;
    let mut narrowed = ctx.config.clone();
    crate::agents::narrow(&mut narrowed, profile);
    if json {
        let mut value = row(profile);
        value["offered_tools"] = json!(offered);
        value["effective"] = json!({
            "mode": narrowed.mode.as_str(),
            "max_cost_usd": narrowed.limits.max_cost_usd,
            "per_day_usd": narrowed.caps.per_day_usd,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(OK);
    }
    println!("{}: {}", profile.name, profile.description);
    if let Some(prompt) = &profile.system_prompt {
        println!("prompt: {prompt}");
    }
    if !profile.models.is_empty() {
        println!("models: {}", profile.models.join(" → "));
    }
    println!(
        "mode: {} · cost per task: ≤ {} USD · per day: {}",
        narrowed.mode.as_str(),
        narrowed.limits.max_cost_usd,
        narrowed.caps.per_day_usd.map_or("no cap".to_owned(), |c| format!("≤ {c} USD"))
    );
    if profile.memory == crate::config::agents::MemoryScope::Own {
        println!("memory: its own (it sees only the memories it made)");
    }
    if let Some(persona) = &profile.persona {
        println!("persona: {persona}");
    }
    if let Some(planner) = &profile.planner {
        let confirm = if profile.confirm_completion { ", done only when you say yes" } else { "" };
        println!("planner: {planner} (plans and judges; the models above do the steps{confirm})");
    }
    println!("tools offered here ({}): {}", offered.len(), offered.join(", "));
    Ok(OK)
}
