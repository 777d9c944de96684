//! `aria agents list|show` (issue #24).

use serde_json::{Value, json};

use super::run::Context;
use crate::app;
use crate::cli::{AgentsCommand, GlobalArgs};
use crate::config::agents::AgentProfile;
use crate::exit::{CliResult, OK};

pub fn agents(global: &GlobalArgs, command: AgentsCommand) -> CliResult<u8> {
    match command {
        AgentsCommand::List { json } => {
            let config = app::load_config(global)?;
            list(&crate::agents::all(&config), json)
        }
        AgentsCommand::Show { name, json } => {
            let ctx = Context::load(global)?;
            let profile = crate::agents::find(&ctx.config, &name)?;
            show(&ctx, &profile, json)
        }
    }
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
        let mode = a.mode.map(|m| format!(", {}", m.as_str())).unwrap_or_default();
        let models = if a.models.is_empty() {
            String::new()
        } else {
            format!(", {}", a.models.join(" → "))
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
    println!("tools offered here ({}): {}", offered.len(), offered.join(", "));
    Ok(OK)
}
