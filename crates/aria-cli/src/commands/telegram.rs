//! The Telegram channel from the CLI's side: `aria serve` starts it when `TELEGRAM_BOT_TOKEN`
//! is set ([`start`]), and `aria telegram chats` lists the chats that wrote to the bot, to copy
//! into `[telegram] allowed_chat_ids`.

use std::sync::Arc;

use aria_gateway::Gateway;
use aria_gateway::telegram::{CHANNEL, Telegram, TelegramConfig, TelegramHandle};
use serde_json::json;

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

pub fn telegram(global: &GlobalArgs, command: TelegramCommand) -> CliResult<u8> {
    let TelegramCommand::Chats { limit, json } = command;
    let ctx = Context::load(global)?;
    let chats = ctx.store.channel_chats(CHANNEL, limit)?;
    let allowed = &ctx.config.telegram.allowed_chat_ids;
    if json {
        let rows: Vec<_> = chats
            .iter()
            .map(|c| {
                let mut v = serde_json::to_value(c).unwrap_or_default();
                v["in_allowlist"] = json!(allowed.contains(&c.chat_id));
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(OK);
    }
    if chats.is_empty() {
        println!(
            "No chat has written to the bot yet. Start `aria serve` with TELEGRAM_BOT_TOKEN set, \
             write to the bot, then run this again."
        );
        return Ok(OK);
    }
    println!(
        "{:>16}  {:<11} {:>8} {:>8}  {:<24} title",
        "chat id", "allowlist", "taken", "refused", "last seen"
    );
    for c in &chats {
        println!(
            "{:>16}  {:<11} {:>8} {:>8}  {:<24} {}",
            c.chat_id,
            if allowed.contains(&c.chat_id) { "allowed" } else { "not listed" },
            c.messages,
            c.refused,
            c.last_seen_at,
            c.title.as_deref().unwrap_or("")
        );
    }
    println!(
        "\nServe a chat by adding its id to [telegram] allowed_chat_ids in aria.toml, then restart `aria serve`."
    );
    Ok(OK)
}
