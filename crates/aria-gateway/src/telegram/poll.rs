//! Long polling: `getUpdates` with the persisted offset; each update's offset is saved before
//! it is acted on (see the module essay in `mod.rs`), then the update is checked against the
//! allowlist and handed to a command, a run, or an approval answer.

use std::sync::Arc;
use std::time::Duration;

use aria_api::AuditEvent;
use serde_json::{Value, json};

use super::client::backoff;
use super::outbox::CHANNEL;
use super::{Telegram, chat, commands, files};

const OFFSET: &str = "offset";

/// Polls until the channel is stopped.
pub(super) async fn run(tg: Arc<Telegram>) {
    match tg.bot.call_retrying("getMe", &json!({}), 3).await {
        Ok(me) => {
            if let Some(name) = me.get("username").and_then(Value::as_str) {
                let _ = tg.username.set(name.to_ascii_lowercase());
            }
        }
        Err(e) if e.is_unauthorized() => {
            tracing::error!("Telegram refused the bot token ({e}); check TELEGRAM_BOT_TOKEN");
        }
        Err(e) => tracing::warn!("getMe failed: {e}"),
    }
    register_commands(&tg).await;
    let mut failures = 0u32;
    loop {
        let offset = match tg.gw.store.channel_state(CHANNEL, OFFSET) {
            Ok(v) => v.and_then(|v| v.parse::<i64>().ok()),
            Err(e) => {
                tracing::error!("cannot read the Telegram offset: {e}");
                None
            }
        };
        let mut body = json!({
            "timeout": tg.config.poll_timeout.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        if let Some(offset) = offset {
            body["offset"] = json!(offset);
        }
        let wait = tg.config.poll_timeout + Duration::from_secs(10);
        let answer = tokio::select! {
            () = tg.stop.cancelled() => return,
            answer = tg.bot.call("getUpdates", &body, Some(wait)) => answer,
        };
        let updates = match answer {
            Ok(Value::Array(updates)) => {
                failures = 0;
                updates
            }
            Ok(_) => Vec::new(),
            Err(e) => {
                failures += 1;
                let pause = backoff(&e, failures, tg.config.retry_base, Duration::from_secs(60));
                if e.is_unauthorized() {
                    tracing::error!(
                        "Telegram refused the bot token ({e}); check TELEGRAM_BOT_TOKEN"
                    );
                } else {
                    tracing::warn!("getUpdates failed ({e}); polling again in {pause:?}");
                }
                tokio::select! {
                    () = tg.stop.cancelled() => return,
                    () = tokio::time::sleep(pause) => {}
                }
                continue;
            }
        };
        for update in updates {
            let Some(id) = update.get("update_id").and_then(Value::as_i64) else {
                continue;
            };
            if offset.is_some_and(|o| id < o) {
                continue;
            }
            // Saved first: a restart must not act on this update again.
            if let Err(e) = tg.gw.store.set_channel_state(CHANNEL, OFFSET, &(id + 1).to_string()) {
                tracing::error!("cannot save the Telegram offset, so updates are not taken: {e}");
                break;
            }
            handle(&tg, &update).await;
        }
    }
}

/// Registers the command menu (best effort).
async fn register_commands(tg: &Telegram) {
    let commands: Vec<Value> = commands::MENU
        .iter()
        .map(|(name, about)| json!({"command": name, "description": about}))
        .collect();
    if let Err(e) = tg.bot.call_retrying("setMyCommands", &json!({"commands": commands}), 3).await {
        tracing::warn!("cannot register the Telegram command menu: {e}");
    }
}

/// Who wrote, where, and what.
struct Incoming<'a> {
    chat: i64,
    user: i64,
    title: Option<&'a str>,
}

fn incoming<'a>(chat: &'a Value, from: Option<&Value>) -> Option<Incoming<'a>> {
    Some(Incoming {
        chat: chat.get("id")?.as_i64()?,
        user: from.and_then(|f| f.get("id")).and_then(Value::as_i64).unwrap_or(0),
        title: chat
            .get("title")
            .or_else(|| chat.get("username"))
            .or_else(|| chat.get("first_name"))
            .and_then(Value::as_str),
    })
}

async fn handle(tg: &Arc<Telegram>, update: &Value) {
    if let Some(message) = update.get("message") {
        let Some(who) = message.get("chat").and_then(|c| incoming(c, message.get("from"))) else {
            return;
        };
        let text = message.get("text").and_then(Value::as_str).unwrap_or_default();
        let is_command = text.starts_with('/');
        if is_command && !addressed_to_us(tg, text) {
            return;
        }
        let allowed = if is_command {
            tg.user_allowed(who.chat, who.user)
        } else {
            tg.chat_allowed(who.chat)
        };
        if !refuse_unless(tg, &who, allowed, if is_command { "command" } else { "message" }) {
            return;
        }
        if is_command {
            commands::handle(tg, who.chat, text).await;
        } else if let Some(found) = files::attachment(message) {
            let span = tracing::info_span!("telegram_file", chat = who.chat);
            let task = files::receive(tg.clone(), who.chat, message.clone(), found);
            tokio::spawn(tracing::Instrument::instrument(task, span));
        } else if text.trim().is_empty() {
            tg.say(who.chat, "I can only read text messages for now.");
        } else {
            chat::start(tg, who.chat, text.to_owned());
        }
    } else if let Some(callback) = update.get("callback_query") {
        let chat = callback.pointer("/message/chat").unwrap_or(&Value::Null);
        let Some(who) = incoming(chat, callback.get("from")) else {
            return;
        };
        let id = callback.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let allowed = tg.user_allowed(who.chat, who.user);
        if !refuse_unless(tg, &who, allowed, "button") {
            // Telegram shows a spinner until a callback is answered; this one says nothing.
            let _ = tg
                .bot
                .call_retrying("answerCallbackQuery", &json!({"callback_query_id": id}), 2)
                .await;
            return;
        }
        let message_id = callback.pointer("/message/message_id").and_then(Value::as_i64);
        let data = callback.get("data").and_then(Value::as_str).unwrap_or_default();
        let note = match super::choice::answer_button(tg, who.chat, message_id, data) {
            Some(note) => note,
            None => chat::answer_button(tg, who.chat, who.user, message_id, data),
        };
        let body = json!({"callback_query_id": id, "text": note});
        if let Err(e) = tg.bot.call_retrying("answerCallbackQuery", &body, 3).await {
            tracing::warn!("answerCallbackQuery failed: {e}");
        }
    }
}

/// Whether a command is for this bot: `/cmd`, or `/cmd@name` with this bot's name.
fn addressed_to_us(tg: &Telegram, text: &str) -> bool {
    let word = text.split_whitespace().next().unwrap_or_default();
    match (word.split_once('@'), tg.username.get()) {
        (Some((_, name)), Some(ours)) => name.eq_ignore_ascii_case(ours),
        _ => true,
    }
}

/// Notes the chat; when not `allowed`, logs, audits and counts the refusal. Returns `allowed`.
fn refuse_unless(tg: &Telegram, who: &Incoming<'_>, allowed: bool, what: &str) -> bool {
    let store = &tg.gw.store;
    if let Err(e) = store.channel_chat_seen(CHANNEL, who.chat, who.title, allowed) {
        tracing::warn!("cannot note Telegram chat {}: {e}", who.chat);
    }
    if allowed {
        return true;
    }
    tracing::warn!(
        chat_id = who.chat,
        user_id = who.user,
        "refused a Telegram {what} from a chat or user not on the allowlist"
    );
    let event = AuditEvent::new(
        None,
        "system",
        "telegram.refused",
        json!({"chat_id": who.chat, "user_id": who.user, "what": what}),
    );
    if let Err(e) = store.audit_append(event) {
        tracing::error!("cannot audit a refused Telegram {what}: {e}");
    }
    false
}
