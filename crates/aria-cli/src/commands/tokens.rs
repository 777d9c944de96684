//! `aria tokens` (scoped API tokens for clients of `aria serve`) and `aria ui` (a fresh
//! one-time login link to the running daemon's web page).
//!
//! A client program gets a token of its own with the least scope it needs, so a chat client
//! cannot answer approvals and an MCP client reaches only `/mcp`. Only a token's digest is
//! stored; its value is printed once.

use anyhow::anyhow;
use serde_json::json;

use super::run::Context;
use crate::cli::{GlobalArgs, TokensCommand, UiArgs};
use crate::exit::{CliError, CliResult, FAILED, OK};

pub fn tokens(global: &GlobalArgs, command: TokensCommand) -> CliResult<u8> {
    let ctx = Context::load(global)?;
    match command {
        TokensCommand::Add { name, scope, json } => add(&ctx, &name, &scope, json),
        TokensCommand::List { json } => list(&ctx, json),
        TokensCommand::Remove { name } => {
            if ctx.store.token_remove(&name).map_err(CliError::failed)? {
                eprintln!("removed the token {name}: requests that carry it are refused now");
                Ok(OK)
            } else {
                Err(CliError::usage(format!(
                    "no token named {name}; `aria tokens list` shows them"
                )))
            }
        }
    }
}

/// Whether `name` is a token name: 1–64 of letters, digits, `.`, `_`, `-`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn add(ctx: &Context, name: &str, scope: &str, json: bool) -> CliResult<u8> {
    if !valid_name(name) {
        return Err(CliError::usage(format!(
            "`{name}` is not a token name: use 1 to 64 letters, digits, `.`, `_` or `-`"
        )));
    }
    if aria_gateway::security::Scope::parse(scope).is_none() {
        return Err(CliError::usage(format!("`{scope}` is not a scope: read, chat, mcp or admin")));
    }
    let token = super::serve::random_token()?;
    if !ctx.store.token_create(name, scope, &token).map_err(CliError::failed)? {
        return Err(CliError::usage(format!(
            "a token named {name} exists already: remove it first (aria tokens remove {name}) \
             or pick another name"
        )));
    }
    if json {
        println!("{}", json!({"name": name, "scope": scope, "token": token}));
    } else {
        println!("{token}");
        eprintln!(
            "This is the only time the token is shown. Give it to the client as \
             `Authorization: Bearer TOKEN`; its scope is {scope}. A running daemon accepts it \
             at once; `aria tokens remove {name}` revokes it."
        );
    }
    Ok(OK)
}

fn list(ctx: &Context, json: bool) -> CliResult<u8> {
    let tokens = ctx.store.tokens().map_err(CliError::failed)?;
    if json {
        println!("{}", json!({ "tokens": tokens }));
        return Ok(OK);
    }
    if tokens.is_empty() {
        println!(
            "No scoped tokens. The daemon's own token (every scope) is in {}; make one per \
             client with `aria tokens add NAME --scope read|chat|mcp|admin`.",
            super::serve::token_path(&ctx.config.data_dir).display()
        );
        return Ok(OK);
    }
    println!("{:<24} {:<6} {:<20} LAST USED", "NAME", "SCOPE", "CREATED");
    for t in tokens {
        println!(
            "{:<24} {:<6} {:<20} {}",
            t.name,
            t.scope,
            t.created_at.get(..19).unwrap_or(&t.created_at),
            t.last_used_at.as_deref().and_then(|a| a.get(..19)).unwrap_or("never"),
        );
    }
    Ok(OK)
}

/// `aria ui`: asks the running daemon for a one-time login link and prints it (and opens it
/// on a desktop unless `--print`).
pub fn ui(global: &GlobalArgs, args: UiArgs) -> CliResult<u8> {
    let config = crate::app::load_config(global).map_err(CliError::config)?;
    let Some(daemon) = crate::daemon_client::find(&config.data_dir) else {
        eprintln!(
            "error: no `aria serve` is running for {}; start it (aria serve), and it prints a \
             login link itself",
            config.data_dir.display()
        );
        return Ok(FAILED);
    };
    let answer = daemon.post_json("/api/v1/login-codes", &json!({})).map_err(|e| match e {
        crate::daemon_client::AskError::Unreachable(why) => {
            CliError::failed(anyhow!("the daemon at {} did not answer: {why}", daemon.address))
        }
        crate::daemon_client::AskError::Refused(status, why) => CliError::failed(anyhow!(
            "the daemon refused to make a login link ({status}): {why}; check that \
             ARIA_API_TOKEN (if set) is the daemon's token"
        )),
    })?;
    let Some(url) = answer["url"].as_str() else {
        return Err(CliError::failed(anyhow!("the daemon's answer has no link: {answer}")));
    };
    println!("{url}");
    eprintln!("The link logs a browser in once, within 10 minutes.");
    if !args.print {
        super::serve::open_browser(url);
    }
    Ok(OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_names_are_short_plain_words() {
        assert!(valid_name("ci-bot.2"));
        assert!(!valid_name(""));
        assert!(!valid_name("has space"));
        assert!(!valid_name(&"x".repeat(65)));
        assert!(!valid_name("é"));
    }
}
