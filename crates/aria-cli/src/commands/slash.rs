//! Chat commands: lines starting with `/` in interactive `aria chat` are handled here and never
//! sent to the model. An unknown one says so (a typo must not become a message).

use super::run::Context;
use crate::app;

/// What the chat loop does after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    /// Keep reading lines.
    Continue,
    /// Start a new conversation.
    New,
    /// Leave the chat.
    Exit,
    /// Send this text as the user's message (a resource or prompt of an MCP server).
    Send(String),
}

const HELP: &str = "\
/help            this list
/new             start a new conversation
/undo            put back the files of this conversation's last change (its restore point)
/resume          runs that were interrupted, and how to finish them
/tools           the tools the model may use, with their tiers
/cost            model spend today and this month
/mode            the approval mode of this chat
/resource SERVER URI [MESSAGE]   send an MCP server's resource (with MESSAGE) to the model
/prompt SERVER PROMPT [KEY=VALUE…]  send an MCP server's prompt, filled in, to the model
/exit, /quit     leave (or Ctrl-D)";

/// Handles `line` if it is a command (`Some`), else `None` (a message for the model).
pub fn handle(ctx: &Context, line: &str, conversation: Option<&str>) -> Option<After> {
    let word = line.split_whitespace().next()?;
    if !word.starts_with('/') || word.len() == 1 {
        return None;
    }
    let after = match word {
        "/exit" | "/quit" => After::Exit,
        "/new" => {
            eprintln!("(new conversation)");
            After::New
        }
        "/help" => {
            eprintln!("{HELP}");
            After::Continue
        }
        "/tools" => {
            tools(ctx);
            After::Continue
        }
        "/cost" => {
            cost(ctx);
            After::Continue
        }
        "/mode" => {
            eprintln!(
                "mode {} (start `aria chat --mode governed|supervised|read_only` to change it)",
                ctx.config.mode.as_str()
            );
            After::Continue
        }
        "/resume" => {
            resume(ctx);
            After::Continue
        }
        "/undo" => {
            undo(ctx, conversation);
            After::Continue
        }
        "/resource" | "/prompt" => mcp(ctx, word, line),
        other => {
            eprintln!("unknown command {other}; /help lists them (nothing was sent to the model)");
            After::Continue
        }
    };
    Some(after)
}

fn tools(ctx: &Context) {
    match super::inspect::tool_rows(ctx) {
        Ok(rows) => {
            for (spec, tier) in rows {
                eprintln!("  {:<16} {tier}", spec.name);
            }
        }
        Err(_) => eprintln!("the tools could not be listed; run `aria tools list` to see why"),
    }
}

fn cost(ctx: &Context) {
    let guard = crate::providers::StoreSpendGuard {
        store: ctx.store.clone(),
        caps: aria_models::PeriodCaps {
            per_day: ctx.config.caps.per_day_usd,
            per_month: ctx.config.caps.per_month_usd,
        },
    };
    match guard.spent() {
        Ok(s) => eprintln!(
            "spent today USD {:.4}, this month USD {:.4} (`aria cost` shows the details)",
            s.today, s.this_month
        ),
        Err(e) => eprintln!("spend is not available: {e}"),
    }
}

fn resume(ctx: &Context) {
    match ctx.store.unfinished_sessions() {
        Ok(list) if list.is_empty() => eprintln!("no interrupted runs"),
        Ok(list) => {
            for s in list {
                eprintln!(
                    "  {}  {}  {}: finish it with `aria run --resume {}`",
                    s.id,
                    s.state,
                    crate::render::clip(&s.task, 50),
                    s.id
                );
            }
        }
        Err(e) => eprintln!("interrupted runs are not available: {e}"),
    }
}

/// Rolls back the newest restore point taken in this conversation.
fn undo(ctx: &Context, conversation: Option<&str>) {
    let Some(conversation) = conversation else {
        eprintln!("nothing to undo: this conversation has not changed any file yet");
        return;
    };
    let Some(id) = last_snapshot(ctx, conversation) else {
        eprintln!("nothing to undo: this conversation has not changed any file yet");
        return;
    };
    let done = app::snapshots_everywhere(&ctx.config, &ctx.store, false)
        .map_err(|e| e.error.to_string())
        .and_then(|s| s.rollback(&id, None, None, "user").map_err(|e| e.to_string()));
    match done {
        Ok(done) => {
            let _ = ctx.store.audit_append(aria_api::AuditEvent::new(
                None,
                "user",
                "snapshot.rollback",
                serde_json::json!({
                    "snapshot": done.snapshot,
                    "repository": done.repository,
                    "restored": done.restored,
                    "revert_commit": done.revert_commit,
                    "branch": done.branch,
                    "via": "/undo",
                }),
            ));
            eprintln!(
                "undone: {} put back as before {} ({} file(s)); this undo can itself be undone \
                 with `aria rollback`",
                done.repository.display(),
                done.snapshot,
                done.restored.len()
            );
        }
        Err(e) => eprintln!("could not undo {id}: {e}"),
    }
}

fn last_snapshot(ctx: &Context, conversation: &str) -> Option<String> {
    let sessions = ctx.store.list_sessions(1000).ok()?;
    let mut newest: Option<(u64, String)> = None;
    for s in sessions.iter().filter(|s| s.conversation_id == conversation) {
        for r in ctx.store.audit_for_session(&s.id).ok()? {
            if r.kind != "tool.snapshot" {
                continue;
            }
            for point in r.payload["snapshots"].as_array().cloned().unwrap_or_default() {
                if let Some(id) = point["id"].as_str()
                    && newest.as_ref().is_none_or(|(seq, _)| r.seq > *seq)
                {
                    newest = Some((r.seq, id.to_owned()));
                }
            }
        }
    }
    newest.map(|(_, id)| id)
}

/// `/resource SERVER URI [MESSAGE]` and `/prompt SERVER PROMPT [KEY=VALUE…]`: what the user
/// chose from an MCP server becomes their message (resources and prompts are the user's to
/// choose, not the model's).
fn mcp(ctx: &Context, word: &str, line: &str) -> After {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (Some(server), Some(what)) = (words.get(1), words.get(2)) else {
        eprintln!(
            "usage: {word} SERVER {} (aria mcp list names the servers)",
            if word == "/resource" { "URI [MESSAGE]" } else { "PROMPT [KEY=VALUE…]" }
        );
        return After::Continue;
    };
    let Some(entry) = ctx.config.mcp.iter().find(|s| s.name == *server) else {
        eprintln!("no MCP server named {server}; aria mcp list names them");
        return After::Continue;
    };
    let guard = match app::path_guard(&ctx.config) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("{:#}", e.error);
            return After::Continue;
        }
    };
    let rest = &words[3..];
    let ask = if word == "/resource" {
        crate::mcp::Ask::Read((*what).to_owned())
    } else {
        let args: Vec<String> = rest.iter().map(|w| (*w).to_owned()).collect();
        match super::mcp::prompt_args(&args) {
            Ok(args) => crate::mcp::Ask::Prompt((*what).to_owned(), args),
            Err(e) => {
                eprintln!("{:#}", e.error);
                return After::Continue;
            }
        }
    };
    match crate::mcp::ask(entry, &guard, ask) {
        Ok(serde_json::Value::String(text)) if word == "/resource" => {
            let ask = if rest.is_empty() { "Read it.".to_owned() } else { rest.join(" ") };
            eprintln!("(sending {what} from {server}: {} characters)", text.chars().count());
            After::Send(format!("The resource {what} of MCP server {server}:\n\n{text}\n\n{ask}"))
        }
        Ok(serde_json::Value::String(text)) => {
            eprintln!("(sending prompt {what} of {server})");
            After::Send(text)
        }
        Ok(_) => After::Continue,
        Err(e) => {
            eprintln!("{server}: {e}");
            After::Continue
        }
    }
}
