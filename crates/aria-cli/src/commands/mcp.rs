//! `aria mcp list|tools|test|add|serve|resources|prompts`: MCP servers ARIA uses, and ARIA as
//! an MCP server (`serve`).

use std::io::Write;

use aria_mcp::tool_name;
use serde_json::{Value, json};

use crate::app;
use crate::cli::{GlobalArgs, McpCommand};
use crate::config::Config;
use crate::exit::{CliError, CliResult, FAILED, OK};

pub fn mcp(global: &GlobalArgs, command: McpCommand) -> CliResult<u8> {
    let config = app::load_config(global)?;
    match command {
        McpCommand::List { json } => list(&config, json),
        McpCommand::Tools { name, json } => tools(&config, name.as_deref(), json),
        McpCommand::Test { name } => test(&config, &name),
        McpCommand::Serve => serve(global),
        McpCommand::Resources { name, read, json } => {
            let ask = read.map_or(crate::mcp::Ask::Resources, crate::mcp::Ask::Read);
            asked(&config, &name, ask, json)
        }
        McpCommand::Prompts { name, get, args, json } => {
            let ask = match get {
                Some(prompt) => crate::mcp::Ask::Prompt(prompt, prompt_args(&args)?),
                None => crate::mcp::Ask::Prompts,
            };
            asked(&config, &name, ask, json)
        }
        McpCommand::Add { name, command, env, read_paths, network } => {
            add(&config, &name, &command, &env, &read_paths, network)
        }
    }
}

fn find<'a>(config: &'a Config, name: &str) -> CliResult<&'a aria_mcp::ServerConfig> {
    config.mcp.iter().find(|s| s.name == name).ok_or_else(|| {
        CliError::usage(format!(
            "no enabled MCP server named {name}; add one with `aria mcp add {name} -- COMMAND ARGS…`"
        ))
    })
}

fn list(config: &Config, json: bool) -> CliResult<u8> {
    let rows = crate::mcp::server_rows(config);
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(OK);
    }
    if rows.is_empty() {
        println!("No MCP servers. Add one with `aria mcp add NAME -- COMMAND ARGS…`.");
    }
    for r in &rows {
        let tools =
            r["tools"].as_u64().map_or("not listed yet".to_owned(), |n| format!("{n} tools"));
        println!(
            "{}  {} {}  [{}{}]  {tools}",
            r["name"].as_str().unwrap_or_default(),
            r["url"].as_str().or(r["command"].as_str()).unwrap_or_default(),
            r["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
            r["tier"].as_str().unwrap_or_default(),
            if r["network"] == true { ", network" } else { "" }
        );
    }
    Ok(OK)
}

fn tools(config: &Config, name: Option<&str>, json: bool) -> CliResult<u8> {
    let guard = app::path_guard(config)?;
    let servers: Vec<&aria_mcp::ServerConfig> = match name {
        Some(n) => vec![find(config, n)?],
        None => config.mcp.iter().collect(),
    };
    let mut out = Vec::new();
    let mut failed = false;
    for server in servers {
        match crate::mcp::refresh(config, server, &guard) {
            Ok((tools, _)) => {
                for t in tools {
                    out.push(json!({
                        "server": server.name,
                        "tool": t.name,
                        "name": tool_name(&server.name, &t.name),
                        "tier": server.tier_of(&t.name).as_str(),
                        "read_only_hint": t.read_only_hint,
                        "description": t.description,
                        "flagged": t.flagged,
                    }));
                }
            }
            Err(e) => {
                failed = true;
                eprintln!("{}: {e}", server.name);
            }
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for t in &out {
            let hint = if t["read_only_hint"] == true { " (says read-only)" } else { "" };
            let flag = if t["flagged"] == true {
                " [FLAGGED: its description holds instructions aimed at the model; they are \
                 marked as untrusted]"
            } else {
                ""
            };
            println!(
                "{}  [{}]{hint}{flag}  {}",
                t["name"].as_str().unwrap_or_default(),
                t["tier"].as_str().unwrap_or_default(),
                t["description"].as_str().unwrap_or_default().lines().next().unwrap_or_default()
            );
        }
    }
    Ok(if failed { FAILED } else { OK })
}

fn test(config: &Config, name: &str) -> CliResult<u8> {
    let server = find(config, name)?;
    let guard = app::path_guard(config)?;
    match crate::mcp::refresh(config, server, &guard) {
        Ok((tools, took)) => {
            println!(
                "{name}: started, initialized and listed {} tools in {} ms",
                tools.len(),
                took.as_millis()
            );
            Ok(OK)
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            Ok(FAILED)
        }
    }
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn add(
    config: &Config,
    name: &str,
    command: &[String],
    env: &[String],
    read_paths: &[String],
    network: bool,
) -> CliResult<u8> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(CliError::usage("a server name is letters, digits, - or _"));
    }
    if config.mcp_raw.servers.contains_key(name) {
        return Err(CliError::usage(format!(
            "[mcp.servers.{name}] exists already in {}",
            config.source.path().display()
        )));
    }
    let Some((program, args)) = command.split_first() else {
        return Err(CliError::usage(
            "give the command after --: aria mcp add NAME -- npx -y SERVER",
        ));
    };
    let list =
        |items: &[String]| items.iter().map(|i| toml_string(i)).collect::<Vec<_>>().join(", ");
    let mut entry = format!(
        "\n[mcp.servers.{name}]\ncommand = {}\nargs = [{}]\n",
        toml_string(program),
        list(args)
    );
    if !env.is_empty() {
        entry.push_str(&format!("env = [{}]\n", list(env)));
    }
    if !read_paths.is_empty() {
        entry.push_str(&format!("read_paths = [{}]\n", list(read_paths)));
    }
    if network {
        entry.push_str("network = true\n");
    }
    entry.push_str(
        "# Its tools ask before each call; set tier = \"read\" for a server that only reads.\n",
    );
    let path = config.source.path();
    // The entry must parse with the rest of the file before the file is changed.
    let before = std::fs::read_to_string(path).unwrap_or_default();
    let after = format!("{before}{entry}");
    toml::from_str::<toml::Table>(&after).map_err(|e| {
        CliError::usage(format!("the entry would not parse in {}: {e}", path.display()))
    })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError::failed(anyhow::anyhow!("cannot create {}: {e}", dir.display()))
        })?;
    }
    let mut file =
        std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| {
            CliError::failed(anyhow::anyhow!("cannot write {}: {e}", path.display()))
        })?;
    file.write_all(entry.as_bytes())
        .map_err(|e| CliError::failed(anyhow::anyhow!("cannot write {}: {e}", path.display())))?;
    println!("Added [mcp.servers.{name}] to {}. Try it: aria mcp test {name}", path.display());
    Ok(OK)
}

/// `aria mcp serve`: ARIA's tools over stdio until the client closes it.
fn serve(global: &GlobalArgs) -> CliResult<u8> {
    let ctx = super::run::Context::load(global)?;
    let gate = app::tool_gate(&ctx.config, &ctx.store, ctx.redactor.clone(), None, None)?;
    let server = aria_mcp::serve::AriaServer::new(std::sync::Arc::new(gate));
    // One thread answers the client (calls still overlap; tools that block run on the blocking
    // pool), and no worker threads are started before the first answer.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(anyhow::anyhow!("cannot start the async runtime: {e}")))?;
    runtime.block_on(server.serve_stdio()).map_err(|e| CliError::failed(anyhow::anyhow!("{e}")))?;
    Ok(OK)
}

/// `KEY=VALUE` words as a prompt's arguments.
pub fn prompt_args(words: &[String]) -> CliResult<serde_json::Map<String, Value>> {
    words
        .iter()
        .map(|w| match w.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), Value::from(v))),
            _ => Err(CliError::usage(format!("{w:?}: give a prompt argument as KEY=VALUE"))),
        })
        .collect()
}

/// `aria mcp resources|prompts`: asks the server and prints the answer.
fn asked(config: &Config, name: &str, ask: crate::mcp::Ask, json: bool) -> CliResult<u8> {
    let server = find(config, name)?;
    let guard = app::path_guard(config)?;
    let answer = match crate::mcp::ask(server, &guard, ask) {
        Ok(answer) => answer,
        Err(e) => {
            eprintln!("{name}: {e}");
            return Ok(FAILED);
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(OK);
    }
    match &answer {
        Value::String(text) => println!("{text}"),
        Value::Array(rows) if rows.is_empty() => println!("{name} offers none"),
        Value::Array(rows) => {
            for r in rows {
                let id = r["uri"].as_str().or(r["name"].as_str()).unwrap_or_default();
                let about = r["description"].as_str().or(r["name"].as_str()).unwrap_or_default();
                let args: Vec<&str> = r["arguments"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|a| a["name"].as_str())
                    .collect();
                let args =
                    if args.is_empty() { String::new() } else { format!(" ({})", args.join(", ")) };
                println!("{id}{args}  {about}");
            }
        }
        other => println!("{other}"),
    }
    Ok(OK)
}
