//! `aria setup`: finds the model servers already running on this machine (Ollama, LM Studio,
//! llama.cpp's server, vLLM) and the provider keys in the environment, lists what each offers,
//! checks the chosen model with two questions (one answer, one tool call) and writes it into
//! `aria.toml`.
//!
//! Only loopback is probed, each address once with a short timeout, so a machine with nothing
//! running answers in about a second. Keys are reported as present, never printed, and never
//! used to call a remote service until the user picks that backend.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use aria_api::{ChatRequest, Message, Provider, ToolSpec};
use serde_json::{Value, json};

use crate::cli::{GlobalArgs, SetupArgs};
use crate::config::Config;
use crate::exit::{CliError, CliResult, FAILED, OK};
use crate::providers;

/// The usual loopback homes of local model servers.
const KNOWN_SERVERS: &[(&str, &str, &str)] = &[
    ("ollama", "Ollama", "http://127.0.0.1:11434"),
    ("openai", "LM Studio", "http://127.0.0.1:1234/v1"),
    ("openai", "llama.cpp server", "http://127.0.0.1:8080/v1"),
    ("openai", "vLLM", "http://127.0.0.1:8000/v1"),
];

/// How long one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// A server that answered, and what it offers.
#[derive(Debug, Clone)]
struct Found {
    /// `ollama` or `openai` (the backend that speaks its protocol).
    backend: &'static str,
    label: String,
    url: String,
    models: Vec<String>,
}

pub fn setup(global: &GlobalArgs, args: SetupArgs) -> CliResult<u8> {
    let config = crate::app::load_config(global).map_err(CliError::config)?;
    let runtime = super::run::runtime()?;
    let mut candidates: Vec<(&'static str, String, String)> = KNOWN_SERVERS
        .iter()
        .map(|(backend, label, url)| (*backend, (*label).to_owned(), (*url).to_owned()))
        .collect();
    if let Ok(host) = std::env::var("OLLAMA_HOST") {
        candidates.insert(0, ("ollama", "Ollama (OLLAMA_HOST)".into(), host));
    }
    if let Ok(url) = std::env::var("OPENAI_BASE_URL") {
        candidates.insert(0, ("openai", "OpenAI-compatible (OPENAI_BASE_URL)".into(), url));
    }
    for url in &args.probe {
        let backend =
            if url.contains(":11434") || url.ends_with("/api") { "ollama" } else { "openai" };
        candidates.insert(0, (backend, format!("{url} (--probe)"), url.clone()));
    }
    let found = runtime.block_on(probe_all(&config, candidates));
    let keys: Vec<&str> = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
        .into_iter()
        .filter(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty()))
        .collect();
    if args.json && args.use_model.is_none() {
        let servers: Vec<Value> = found
            .iter()
            .map(|f| json!({"backend": f.backend, "server": f.label, "url": f.url, "models": f.models}))
            .collect();
        println!("{}", json!({"servers": servers, "keys": keys}));
        return Ok(OK);
    }
    report(&found, &keys);
    let chosen = match &args.use_model {
        Some(spec) => Some(parse_use(spec, &found)?),
        None => choose(&found)?,
    };
    let Some((backend, url, model)) = chosen else {
        eprintln!(
            "Nothing chosen; nothing was written. Start a model server (e.g. `ollama serve` and \
             `ollama pull qwen3:4b`) and run `aria setup` again, or keep the embedded model."
        );
        return Ok(if found.is_empty() { FAILED } else { OK });
    };
    // The file must be able to take the choice before the model is asked anything.
    let (path, after) = provider_table(&config, &backend, &url, &model)?;
    let checked = runtime.block_on(check(&config, &backend, &url, &model));
    let (answered, tool_call) = match checked {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("error: {backend} {model} at {url} did not answer: {e}; nothing was written");
            return Ok(FAILED);
        }
    };
    println!("answer:    {}", if answered { "ok" } else { "EMPTY" });
    println!("tool call: {}", if tool_call { "ok" } else { "NONE (it answered in text)" });
    if !answered {
        eprintln!("error: the model gave no answer; nothing was written");
        return Ok(FAILED);
    }
    if !tool_call {
        eprintln!(
            "warning: {model} did not call the tool it was offered: ARIA's work (files, shell, \
             git) goes through tool calls, so it will often answer without doing anything; a \
             model with tool use (qwen3, llama3.1+, mistral-nemo) works better"
        );
    }
    let written = write(&path, &after)?;
    if args.json {
        println!(
            "{}",
            json!({"backend": backend, "url": url, "model": model, "answer": answered,
                   "tool_call": tool_call, "config": written.display().to_string()})
        );
    }
    eprintln!("wrote [provider] to {}: ARIA now uses {backend} {model}", written.display());
    Ok(OK)
}

async fn probe_all(config: &Config, candidates: Vec<(&'static str, String, String)>) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    for (backend, label, url) in candidates {
        if found.iter().any(|f| same_url(&f.url, &url)) {
            continue;
        }
        let Ok(built) = backend_at(config, backend, &url, "") else { continue };
        let listed = tokio::time::timeout(PROBE_TIMEOUT, built.list_models()).await;
        if let Ok(Ok(models)) = listed {
            found.push(Found { backend, label, url, models });
        }
    }
    found
}

fn same_url(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// A backend client for the server at `url`.
fn backend_at(
    config: &Config,
    backend: &str,
    url: &str,
    model: &str,
) -> CliResult<providers::Backend> {
    let mut config = config.clone();
    match backend {
        "ollama" => config.provider.ollama_url = url.to_owned(),
        _ => {
            config.provider.base_url = url.to_owned();
            // A local server takes any key; a configured one is kept.
            config.provider.api_key.get_or_insert_with(|| "none".to_owned());
        }
    }
    providers::backend(&config, backend, model)
}

fn report(found: &[Found], keys: &[&str]) {
    if found.is_empty() {
        println!(
            "No model server answered on this machine's usual ports (Ollama 11434, LM \
                  Studio 1234, llama.cpp 8080, vLLM 8000)."
        );
    }
    let mut n = 0;
    for f in found {
        println!("{} at {} ({} models)", f.label, f.url, f.models.len());
        for m in &f.models {
            n += 1;
            println!("  {n:>2}. {m}");
        }
    }
    for key in keys {
        println!(
            "{key} is set (a remote backend; `--use openai/MODEL` or `--use anthropic/MODEL` uses it)"
        );
    }
}

/// `BACKEND/MODEL` of `--use`, with the URL of the server that offers it.
fn parse_use(spec: &str, found: &[Found]) -> CliResult<(String, String, String)> {
    let Some((backend, model)) = spec.split_once('/') else {
        return Err(CliError::usage(format!(
            "--use {spec}: write BACKEND/MODEL, e.g. ollama/qwen3:4b or openai/gpt-4o-mini"
        )));
    };
    if !matches!(backend, "ollama" | "openai" | "anthropic") || model.is_empty() {
        return Err(CliError::usage(format!(
            "--use {spec}: the backend is ollama, openai or anthropic, then /MODEL"
        )));
    }
    let server = found.iter().find(|f| f.backend == backend && f.models.iter().any(|m| m == model));
    let url = match (server, backend) {
        (Some(f), _) => f.url.clone(),
        (None, "anthropic") => String::new(),
        (None, _) => {
            return Err(CliError::usage(format!(
                "no server found here offers {spec}; `aria setup` lists what is offered"
            )));
        }
    };
    Ok((backend.to_owned(), url, model.to_owned()))
}

/// Asks on the terminal which model to use; `None` when there is no terminal or no answer.
fn choose(found: &[Found]) -> CliResult<Option<(String, String, String)>> {
    let all: Vec<(&Found, &String)> =
        found.iter().flat_map(|f| f.models.iter().map(move |m| (f, m))).collect();
    if all.is_empty() {
        return Ok(None);
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        eprintln!("No terminal to ask on: pick one with `aria setup --use BACKEND/MODEL`.");
        return Ok(None);
    }
    eprint!("Use which model? [1-{}, Enter for none] ", all.len());
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).map_err(CliError::failed)?;
    let Ok(n) = line.trim().parse::<usize>() else { return Ok(None) };
    Ok(all.get(n.wrapping_sub(1)).map(|(f, m)| (f.backend.to_owned(), f.url.clone(), (*m).clone())))
}

/// The two questions: one plain answer, one tool call. `(answered, called the tool)`.
async fn check(
    config: &Config,
    backend: &str,
    url: &str,
    model: &str,
) -> Result<(bool, bool), String> {
    let built = backend_at(config, backend, url, model).map_err(|e| format!("{:#}", e.error))?;
    let provider: Arc<dyn Provider> = built.provider();
    let ask = |messages: Vec<Message>, tools: Vec<ToolSpec>| ChatRequest {
        model: model.to_owned(),
        messages,
        tools,
        max_tokens: Some(64),
        temperature: Some(0.0),
    };
    let within = Duration::from_secs(120);
    let answer = tokio::time::timeout(
        within,
        provider.complete(ask(vec![Message::user("Reply with the single word: ready")], vec![])),
    )
    .await
    .map_err(|_| "no answer within 120 s".to_owned())?
    .map_err(|e| e.to_string())?;
    let tool = ToolSpec {
        name: "current_time".into(),
        description: "The current date and time on the user's computer.".into(),
        parameters: json!({"type": "object", "properties": {}}),
    };
    let called = tokio::time::timeout(
        within,
        provider.complete(ask(
            vec![Message::user("What time is it? Use the current_time tool.")],
            vec![tool],
        )),
    )
    .await
    .map_err(|_| "no answer to the tool question within 120 s".to_owned())?
    .map_err(|e| e.to_string())?;
    let used_tool = called.tool_calls.iter().any(|c| c.name == "current_time");
    Ok((!answer.text.trim().is_empty(), used_tool))
}

/// The configuration file and its text with a new `[provider]` table: only a file without one
/// takes it; a file with one of its own is left alone and the lines to put there are said
/// instead (its comments and order are the user's).
fn provider_table(
    config: &Config,
    backend: &str,
    url: &str,
    model: &str,
) -> CliResult<(std::path::PathBuf, String)> {
    let path = config.source.path().to_path_buf();
    let before = std::fs::read_to_string(&path).unwrap_or_default();
    let quote = |t: &str| toml::Value::String(t.to_owned()).to_string();
    let mut table = format!("\n[provider]\nname = {}\nmodel = {}\n", quote(backend), quote(model));
    if backend == "openai" && !url.is_empty() {
        table.push_str(&format!("base_url = {}\n", quote(url)));
    }
    let parsed: toml::Table = toml::from_str(&before).map_err(|e| {
        CliError::config(anyhow!("{} does not parse: {e}; fix it first", path.display()))
    })?;
    if parsed.contains_key("provider") {
        return Err(CliError::usage(format!(
            "{} has a [provider] table already; set these in it yourself:{}",
            path.display(),
            table.trim_start_matches("\n[provider]")
        )));
    }
    if backend == "ollama" && !url.is_empty() && url != crate::config::DEFAULT_OLLAMA_URL {
        eprintln!(
            "note: set OLLAMA_HOST={url} where ARIA runs (the Ollama address is read from it)"
        );
    }
    let after = format!("{before}{table}");
    toml::from_str::<toml::Table>(&after)
        .map_err(|e| CliError::failed(anyhow!("the new [provider] would not parse: {e}")))?;
    Ok((path, after))
}

fn write(path: &std::path::Path, after: &str) -> CliResult<std::path::PathBuf> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::failed(anyhow!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(path, after)
        .map_err(|e| CliError::failed(anyhow!("cannot write {}: {e}", path.display())))?;
    Ok(path.to_path_buf())
}
