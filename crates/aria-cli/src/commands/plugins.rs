//! `aria plugins list|add|remove|test`: plugins are installed by copying their
//! directory into `$ARIA_HOME/plugins/NAME` once the manifest checks pass, so what runs is what
//! was checked, not a directory a model could later edit inside a root.

use std::path::{Path, PathBuf};

use aria_api::{Tool, ToolContext};
use aria_tools::plugins::{MANIFEST, Plugin};
use serde_json::{Value, json};

use crate::app;
use crate::cli::{GlobalArgs, PluginsCommand};
use crate::exit::{CliError, CliResult, FAILED, OK};

pub fn plugins(global: &GlobalArgs, command: PluginsCommand) -> CliResult<u8> {
    let config = app::load_config(global)?;
    let dir = app::plugins_dir(&config);
    match command {
        PluginsCommand::List { json } => list(&dir, json),
        PluginsCommand::Add { dir: from, force } => add(&dir, &from, force),
        PluginsCommand::Remove { name } => remove(&dir, &name),
        PluginsCommand::Test { name, tool, input } => {
            test(&config, &dir, &name, tool.as_deref(), input.as_deref())
        }
    }
}

fn list(dir: &Path, json: bool) -> CliResult<u8> {
    let (plugins, errors) = Plugin::load_all(dir);
    if json {
        let value = json!({
            "plugins": plugins.iter().map(|p| json!({
                "name": p.name,
                "version": p.version,
                "description": p.description,
                "dir": p.dir,
                "tools": p.tools.iter().map(|t| json!({
                    "name": t.name,
                    "tier": t.tier.as_str(),
                    "timeout_secs": t.timeout.as_secs(),
                    "network": t.network,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "errors": errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(OK);
    }
    if plugins.is_empty() && errors.is_empty() {
        println!(
            "No plugins installed. Add one with `aria plugins add DIR` (a directory with a \
             plugin.toml; the repository ships plugins/wordcount)."
        );
    }
    for p in &plugins {
        println!("{} {} — {}", p.name, p.version, p.description);
        for t in &p.tools {
            let net = if t.network { ", network" } else { "" };
            println!("  {} [{}{net}, {} s]", t.name, t.tier.as_str(), t.timeout.as_secs());
        }
    }
    for e in &errors {
        eprintln!("not loaded: {e}");
    }
    Ok(OK)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
        // Symbolic links are not copied: a plugin is its own files.
    }
    Ok(())
}

fn add(plugins: &Path, from: &Path, force: bool) -> CliResult<u8> {
    if !from.join(MANIFEST).is_file() {
        return Err(CliError::usage(format!("{} has no {MANIFEST}", from.display())));
    }
    let plugin = Plugin::load(from).map_err(CliError::usage)?;
    let target = plugins.join(&plugin.name);
    if target.exists() && !force {
        return Err(CliError::usage(format!(
            "a plugin named {} is installed already; `aria plugins add --force {}` replaces it",
            plugin.name,
            from.display()
        )));
    }
    // Copied next to its place, checked again there, then moved in: never half installed.
    std::fs::create_dir_all(plugins).map_err(|e| {
        CliError::failed(anyhow::anyhow!("cannot create {}: {e}", plugins.display()))
    })?;
    let staging = plugins.join(format!(".{}.new", plugin.name));
    let _ = std::fs::remove_dir_all(&staging);
    copy_dir(&plugin.dir, &staging).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staging);
        CliError::failed(anyhow::anyhow!("cannot copy {}: {e}", plugin.dir.display()))
    })?;
    let installed = Plugin::load(&staging).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staging);
        CliError::usage(e)
    })?;
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(|e| {
            CliError::failed(anyhow::anyhow!("cannot replace {}: {e}", target.display()))
        })?;
    }
    std::fs::rename(&staging, &target).map_err(|e| {
        CliError::failed(anyhow::anyhow!("cannot install into {}: {e}", target.display()))
    })?;
    let tools: Vec<String> =
        installed.tools.iter().map(|t| format!("{} [{}]", t.name, t.tier.as_str())).collect();
    println!(
        "Installed plugin {} {} into {} — tools: {}.",
        installed.name,
        installed.version,
        target.display(),
        tools.join(", ")
    );
    Ok(OK)
}

fn remove(plugins: &Path, name: &str) -> CliResult<u8> {
    let target: PathBuf = plugins.join(name);
    if name.contains(['/', '\\']) || name.starts_with('.') || !target.join(MANIFEST).is_file() {
        return Err(CliError::usage(format!(
            "no plugin named {name}; `aria plugins list` shows them"
        )));
    }
    std::fs::remove_dir_all(&target).map_err(|e| {
        CliError::failed(anyhow::anyhow!("cannot remove {}: {e}", target.display()))
    })?;
    println!("Removed plugin {name}.");
    Ok(OK)
}

fn test(
    config: &crate::config::Config,
    plugins: &Path,
    name: &str,
    tool: Option<&str>,
    input: Option<&str>,
) -> CliResult<u8> {
    let dir = plugins.join(name);
    if name.contains(['/', '\\']) || !dir.join(MANIFEST).is_file() {
        return Err(CliError::usage(format!(
            "no plugin named {name}; `aria plugins list` shows them"
        )));
    }
    let plugin = Plugin::load(&dir).map_err(CliError::usage)?;
    let index = match tool {
        Some(t) => plugin.tools.iter().position(|x| x.name == t).ok_or_else(|| {
            let names: Vec<&str> = plugin.tools.iter().map(|x| x.name.as_str()).collect();
            CliError::usage(format!(
                "plugin {name} has no tool {t}; its tools: {}",
                names.join(", ")
            ))
        })?,
        None => 0,
    };
    let spec = &plugin.tools[index];
    let args: Value = match input {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| CliError::usage(format!("--input is not JSON: {e}")))?,
        None => spec.example.clone().ok_or_else(|| {
            CliError::usage(format!(
                "{} has no example in its manifest; give the arguments with --input JSON",
                spec.name
            ))
        })?,
    };
    let validator = jsonschema::validator_for(&spec.input_schema).map_err(CliError::usage)?;
    if let Some(first) = validator.iter_errors(&args).next() {
        return Err(CliError::usage(format!(
            "the arguments do not match {}'s input schema: {first} at {}",
            spec.name,
            first.instance_path()
        )));
    }
    let guard = app::path_guard(config)?;
    let tools = plugin.tools(&guard);
    let tool: &dyn Tool = tools[index].as_ref();
    let runtime = super::run::runtime()?;
    let started = std::time::Instant::now();
    let ctx = ToolContext { session_id: format!("plugin-test:{name}"), dry_run: false };
    let result = runtime.block_on(tool.call(args, &ctx));
    let took = started.elapsed().as_secs_f64() * 1e3;
    match result {
        Ok(out) => {
            println!("{}", out.content);
            eprintln!("{} answered in {took:.0} ms (output schema checked)", spec.name);
            Ok(OK)
        }
        Err(e) => {
            eprintln!("{} failed after {took:.0} ms: {e}", spec.name);
            Ok(FAILED)
        }
    }
}
