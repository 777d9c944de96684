//! The Telegram channel from the CLI's side: `aria serve` starts it when `TELEGRAM_BOT_TOKEN`
//! is set ([`start`]), and `aria telegram chats` lists the chats that wrote to the bot, to copy
//! into `[telegram] allowed_chat_ids`: those the channel saw, and (when the token is set and
//! no daemon is polling) those with messages still waiting at Telegram, read without confirming
//! them — which is how the first chat id is found before any chat is allowed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use aria_gateway::Gateway;
use aria_gateway::telegram::{Bot, CHANNEL, Telegram, TelegramConfig, TelegramHandle};
use serde_json::{Value, json};

use super::run::Context;
use crate::cli::{GlobalArgs, TelegramCommand};
use crate::config::TelegramSettings;
use crate::exit::{CliResult, OK};

/// Starts the channel when a token is set. Without an allowlist (or with a bad API base) it
/// stays off and says why, once; the daemon goes on serving its other front ends.
pub fn start(settings: &TelegramSettings, gateway: &Arc<Gateway>) -> Option<TelegramHandle> {
    let token = settings.token.clone()?;
    let mut config = TelegramConfig::new(token, settings.allowed_chat_ids.clone());
    config.allowed_user_ids.clone_from(&settings.allowed_user_ids);
    config.api_base.clone_from(&settings.api_base);
    config.inbox.clone_from(&settings.inbox);
    match Telegram::start(gateway.clone(), config) {
        Ok(handle) => {
            eprintln!(
                "Telegram: polling {} for {} allowed chat(s).",
                settings.api_base,
                settings.allowed_chat_ids.len()
            );
            Some(handle)
        }
        Err(e) => {
            eprintln!("note: {e}; the rest of ARIA keeps serving");
            None
        }
    }
}

/// A chat that wrote: seen by the channel, or waiting at Telegram.
struct Row {
    title: Option<String>,
    taken: u64,
    refused: u64,
    waiting: u64,
    last_seen: String,
}

pub fn telegram(global: &GlobalArgs, command: TelegramCommand) -> CliResult<u8> {
    let TelegramCommand::Chats { limit, json } = command;
    let ctx = Context::load(global)?;
    let settings = &ctx.config.telegram;
    let mut rows: BTreeMap<i64, Row> = BTreeMap::new();
    for c in ctx.store.channel_chats(CHANNEL, limit)? {
        let row = Row {
            title: c.title,
            taken: c.messages,
            refused: c.refused,
            waiting: 0,
            last_seen: c.last_seen_at,
        };
        rows.insert(c.chat_id, row);
    }
    // A running channel's long poll would be cut by another getUpdates: its chats are above.
    let polling = !settings.allowed_chat_ids.is_empty()
        && aria_store::runlock::daemon_running(&ctx.config.data_dir);
    let waiting = match &settings.token {
        _ if polling => Err("`aria serve` is polling them; its chats are listed".into()),
        Some(token) => super::run::runtime()?.block_on(waiting_chats(settings, token.clone())),
        None => Err("TELEGRAM_BOT_TOKEN is not set".into()),
    };
    let note = match waiting {
        Ok(chats) => {
            for (id, title) in chats {
                let row = rows.entry(id).or_insert(Row {
                    title: None,
                    taken: 0,
                    refused: 0,
                    waiting: 0,
                    last_seen: String::new(),
                });
                row.waiting += 1;
                if row.title.is_none() {
                    row.title = title;
                }
            }
            None
        }
        Err(why) => Some(why),
    };
    let allowed = &settings.allowed_chat_ids;
    if json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(id, r)| {
                json!({
                    "chat_id": id,
                    "title": r.title,
                    "in_allowlist": allowed.contains(id),
                    "messages": r.taken,
                    "refused": r.refused,
                    "waiting": r.waiting,
                    "last_seen_at": (!r.last_seen.is_empty()).then_some(&r.last_seen),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(OK);
    }
    if let Some(why) = &note {
        eprintln!("note: messages waiting at Telegram were not read: {why}");
    }
    if rows.is_empty() {
        println!(
            "No chat has written to the bot yet. With TELEGRAM_BOT_TOKEN set, write to the bot, \
             then run this again."
        );
        return Ok(OK);
    }
    println!(
        "{:>16}  {:<11} {:>6} {:>8} {:>8}  {:<24} title",
        "chat id", "allowlist", "taken", "refused", "waiting", "last seen"
    );
    for (id, r) in &rows {
        println!(
            "{id:>16}  {:<11} {:>6} {:>8} {:>8}  {:<24} {}",
            if allowed.contains(id) { "allowed" } else { "not listed" },
            r.taken,
            r.refused,
            r.waiting,
            r.last_seen,
            r.title.as_deref().unwrap_or("")
        );
    }
    println!(
        "\nServe a chat by adding its id to [telegram] allowed_chat_ids in aria.toml, then \
         restart `aria serve`."
    );
    Ok(OK)
}

/// The chats of the updates waiting at Telegram, one entry per update, read without an offset
/// (nothing is confirmed, so the channel still gets them).
async fn waiting_chats(
    settings: &TelegramSettings,
    token: aria_gateway::telegram::BotToken,
) -> Result<Vec<(i64, Option<String>)>, String> {
    let bot = Bot::new(&settings.api_base, token, Duration::from_millis(500))?;
    let body =
        json!({"timeout": 0, "limit": 100, "allowed_updates": ["message", "callback_query"]});
    let updates = bot.call("getUpdates", &body, None).await.map_err(|e| match e {
        aria_gateway::telegram::BotError::Rejected { status: 409, .. } => {
            "`aria serve` is polling them; its chats are listed above".to_owned()
        }
        other => other.to_string(),
    })?;
    let chats = updates
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|u| {
                    u.pointer("/message/chat").or_else(|| u.pointer("/callback_query/message/chat"))
                })
                .filter_map(|chat| {
                    let title = ["title", "username", "first_name"]
                        .iter()
                        .find_map(|k| chat.get(*k).and_then(Value::as_str))
                        .map(str::to_owned);
                    Some((chat.get("id")?.as_i64()?, title))
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(chats)
}
