//! Commands: explicit requests answered without the model. Every command listed in [`MENU`] is
//! implemented here (the menu is registered with `setMyCommands`); anything else is answered
//! with the list.

use std::sync::Arc;

use aria_api::ApprovalMode;
use aria_store::{MemoryQuery, Writer};
use serde_json::Value;

use super::Telegram;
use super::chat;
use super::format::escape;
use super::outbox::CHANNEL;

/// The command menu: (name, what it does).
pub(super) const MENU: &[(&str, &str)] = &[
    ("start", "What ARIA is and what you can ask"),
    ("help", "The commands"),
    ("new", "Start a new conversation"),
    ("status", "Uptime, version, runs, outbox, last operations; /status resources"),
    ("health", "Healthy, degraded or unhealthy, with each check"),
    ("logs", "Warnings and errors of the last hours: /logs [HOURS]"),
    ("cancel", "Stop the run in progress"),
    ("cost", "Model spend today and this month"),
    ("memory", "Search memories: /memory QUERY"),
    ("forget", "Forget a memory: /forget ID"),
    ("mode", "This chat's approval mode: /mode governed|supervised|read_only"),
    ("agent", "Who you talk to: /agent lists the agents, /agent NAME switches"),
    ("snapshots", "The latest restore points"),
    ("rollback", "Put back the files of a restore point: /rollback ID"),
    ("schedule", "Scheduled jobs: /schedule list|add|edit|show|run|history|enable|disable|delete"),
    ("notify", "Notifications in this chat: /notify on|off"),
    ("heartbeat", "The heartbeat now; /heartbeat on|off for the scheduled one"),
];

pub(super) async fn handle(tg: &Arc<Telegram>, chat: i64, text: &str) {
    let (command, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    // `/status@my_bot` in groups.
    let command = command.trim_start_matches('/').split('@').next().unwrap_or_default();
    let rest = rest.trim();
    let answer = match command {
        "start" => Ok(format!(
            "Hello, I am ARIA. Write to me and I work on it with the tools I have; anything \
             that cannot be undone asks you first, with buttons.\n\n{}",
            help()
        )),
        "help" => Ok(help()),
        "new" => chat::new_conversation(tg, chat)
            .map(|_| "A new conversation begins; the earlier one is kept.".to_owned())
            .map_err(|e| e.to_string()),
        "status" if rest == "resources" => Ok(super::health::resources(tg).await),
        "status" => status(tg),
        "health" => Ok(super::health::health(tg).await),
        "logs" => super::health::logs(tg, rest),
        "cancel" => Ok(cancel(tg, chat)),
        "cost" => cost(tg),
        "memory" => memory(tg, rest).await,
        "forget" => forget(tg, rest),
        "mode" => mode(tg, chat, rest),
        "agent" => agent(tg, chat, rest),
        "snapshots" => snapshots(tg).await,
        "rollback" => rollback(tg, rest).await,
        "schedule" => super::schedule::schedule(tg, chat, rest),
        "notify" => super::schedule::notify(tg, chat, rest),
        "heartbeat" => super::schedule::heartbeat(tg, rest),
        _ => Ok(format!("There is no command /{command}.\n\n{}", help())),
    };
    let text = answer.unwrap_or_else(|e| format!("⚠️ {e}"));
    for part in super::format::split(&text, super::format::MESSAGE_LIMIT) {
        tg.say_html(chat, &escape(&part), &part);
    }
}

fn help() -> String {
    let mut out = String::from("Commands:\n");
    for (name, about) in MENU {
        out.push_str(&format!("/{name} — {about}\n"));
    }
    out.push_str(&format!("\nScheduled jobs:\n{}\n", super::schedule::USAGE));
    out
}

fn status(tg: &Telegram) -> Result<String, String> {
    let store = &tg.gw.store;
    let secs = tg.uptime().as_secs();
    let uptime = format!("{}h {:02}m {:02}s", secs / 3600, secs / 60 % 60, secs % 60);
    let waiting = store.outbox_waiting(CHANNEL).map_err(|e| e.to_string())?;
    let refused = store.channel_refused(CHANNEL).map_err(|e| e.to_string())?;
    let oldest = store.outbox_oldest_waiting(CHANNEL).map_err(|e| e.to_string())?;
    let stuck = oldest
        .and_then(|t| {
            time::OffsetDateTime::parse(&t, &time::format_description::well_known::Rfc3339).ok()
        })
        .map(|t| time::OffsetDateTime::now_utc() - t)
        .filter(|age| age.whole_minutes() >= 10)
        .map(|age| format!(" (⚠️ the oldest has waited {} min)", age.whole_minutes()))
        .unwrap_or_default();
    let mut out = format!(
        "ARIA {}\nuptime {uptime}\nruns in flight: {}\noutbox: {waiting} waiting{stuck}\n\
         refused messages (not on the allowlist): {refused}\nlast scheduler tick: {}\n\n\
         Last operations:\n",
        env!("CARGO_PKG_VERSION"),
        tg.gw.runs.active(),
        last_tick(tg),
    );
    let records = store.audit_list(Some(10)).map_err(|e| e.to_string())?;
    for r in records.iter().rev() {
        let time = r.time.get(11..19).unwrap_or(&r.time);
        out.push_str(&format!("{time} {} ({})\n", r.kind, r.actor));
    }
    Ok(out)
}

/// When the scheduler last looked for due jobs, or that it does not run.
fn last_tick(tg: &Telegram) -> String {
    match tg.gw.notifications.scheduler() {
        None => "the scheduler is not running".to_owned(),
        Some(scheduler) => scheduler.last_tick().map_or_else(
            || "none yet".to_owned(),
            |t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        ),
    }
}

fn cancel(tg: &Telegram, chat: i64) -> String {
    let running = tg
        .gw
        .store
        .channel_chat_conversation(CHANNEL, chat)
        .ok()
        .flatten()
        .and_then(|c| tg.gw.runs.in_conversation(&c))
        .filter(|h| !h.is_finished());
    match running {
        Some(hub) => {
            hub.cancel.cancel();
            "Cancelling the run in progress.".into()
        }
        None => "Nothing is running in this chat.".into(),
    }
}

/// `/agent`: the agents and the one this chat talks to; `/agent NAME`: a new conversation with
/// NAME (a conversation keeps its agent, so switching starts a new one; the old one is kept).
fn agent(tg: &Telegram, chat: i64, arg: &str) -> Result<String, String> {
    let book = tg.gw.services.agents.as_ref().ok_or("this daemon runs only its own agent")?;
    let store = &tg.gw.store;
    if arg.is_empty() {
        let current = match store.channel_chat_conversation(CHANNEL, chat) {
            Ok(Some(id)) => store.conversation_agent(&id).ok().flatten(),
            _ => None,
        };
        let current = current.unwrap_or_else(|| "default".to_owned());
        let mut out = format!("This chat talks to the agent {current}.\n\nAgents:\n");
        for a in book.list().map_err(|e| e.to_string())? {
            let name = a["name"].as_str().unwrap_or_default();
            let mark = if name == current { " ✓" } else { "" };
            out.push_str(&format!(
                "{name}{mark} — {}\n",
                a["description"].as_str().unwrap_or_default()
            ));
        }
        out.push_str("\nSwitch with /agent NAME (a new conversation begins).");
        return Ok(out);
    }
    let profile = book.get(arg).map_err(|e| e.to_string())?;
    let id = chat::new_conversation(tg, chat).map_err(|e| e.to_string())?;
    store.set_conversation_agent(&id, arg).map_err(|e| e.to_string())?;
    let about = profile["description"].as_str().filter(|d| !d.is_empty());
    Ok(format!(
        "You are now talking to the agent {arg}{}. A new conversation begins; the earlier one \
         is kept.",
        about.map(|d| format!(": {d}")).unwrap_or_default()
    ))
}

fn mode(tg: &Telegram, chat: i64, arg: &str) -> Result<String, String> {
    let configured = tg.gw.agent.config().mode;
    if arg.is_empty() {
        let current = tg.modes().get(&chat).copied().unwrap_or(configured);
        return Ok(format!(
            "This chat runs in {} mode (the daemon's: {}). Change it with /mode governed, \
             /mode supervised or /mode read_only.",
            current.as_str(),
            configured.as_str()
        ));
    }
    let wanted = ApprovalMode::parse(arg).ok_or_else(|| {
        format!("there is no mode `{arg}`: use governed, supervised or read_only")
    })?;
    // A chat may only choose a mode at least as strict as the daemon's.
    if wanted.strictness() < configured.strictness() {
        return Err(format!(
            "the daemon runs in {} mode and a chat can only be stricter: governed < supervised < \
             read_only",
            configured.as_str()
        ));
    }
    tg.modes().insert(chat, wanted);
    Ok(format!("This chat now runs in {} mode until the daemon restarts.", wanted.as_str()))
}

fn cost(tg: &Telegram) -> Result<String, String> {
    let store = &tg.gw.store;
    let today = store.spend_since(&aria_store::day_start_utc()).map_err(|e| e.to_string())?;
    let month = store.spend_since(&aria_store::month_start_utc()).map_err(|e| e.to_string())?;
    let caps = &tg.gw.services.config["caps"];
    let cap = |v: &Value| v.as_f64().map_or("no cap".to_owned(), |c| format!("cap ${c:.2}"));
    Ok(format!(
        "Spend today: ${today:.4} ({})\nThis month: ${month:.4} ({})",
        cap(&caps["per_day_usd"]),
        cap(&caps["per_month_usd"])
    ))
}

/// Memories matching `query`; private memories are not shown (Telegram is off this machine).
async fn memory(tg: &Telegram, query: &str) -> Result<String, String> {
    if query.is_empty() {
        return Err("Say what to look for: /memory QUERY".into());
    }
    let hits: Vec<(String, String)> = match &tg.gw.services.memory {
        Some(memory) => {
            let scope = aria_core::SearchScope { limit: 10, private: false };
            memory
                .search(query, scope)
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|h| (h.id, h.content))
                .collect()
        }
        None => tg
            .gw
            .store
            .memory_search(&MemoryQuery::new(query, None, 10))
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|h| (h.memory.id, h.memory.content))
            .collect(),
    };
    if hits.is_empty() {
        return Ok(format!("No memory matches “{query}”."));
    }
    let mut out = String::new();
    for (id, content) in hits {
        let content: String = content.chars().take(300).collect();
        out.push_str(&format!("{id}\n{content}\n\n"));
    }
    out.push_str("Forget one with /forget ID.");
    Ok(out)
}

fn forget(tg: &Telegram, id: &str) -> Result<String, String> {
    if id.is_empty() {
        return Err("Name the memory: /forget ID (find ids with /memory QUERY)".into());
    }
    match tg.gw.store.memory_get(id).map_err(|e| e.to_string())? {
        Some(m) if m.status != aria_store::MemoryStatus::Deleted => {
            tg.gw.store.memory_forget(&m.id, Writer::USER).map_err(|e| e.to_string())?;
            Ok(format!("Forgotten: {}", m.id))
        }
        _ => Err(format!("There is no memory {id}; find ids with /memory QUERY")),
    }
}

fn snapshots_service(tg: &Telegram) -> Result<Arc<aria_tools::Snapshots>, String> {
    tg.gw
        .services
        .snapshots
        .clone()
        .ok_or_else(|| "This daemon keeps no snapshots (it was started without roots).".into())
}

async fn snapshots(tg: &Telegram) -> Result<String, String> {
    let service = snapshots_service(tg)?;
    let all = tokio::task::spawn_blocking(move || service.list(None, None))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    if all.is_empty() {
        return Ok("No restore points yet.".into());
    }
    let mut out = String::from("Latest restore points (newest first):\n");
    for s in all.iter().take(10) {
        let when = time::OffsetDateTime::from_unix_timestamp(s.time)
            .ok()
            .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
            .unwrap_or_default();
        out.push_str(&format!(
            "{} — {} — {} file(s), {when}\n",
            s.id.0,
            s.operation,
            s.files_changed.len()
        ));
    }
    out.push_str("Put one back with /rollback ID.");
    Ok(out)
}

async fn rollback(tg: &Telegram, id: &str) -> Result<String, String> {
    if id.is_empty() {
        return Err("Name the restore point: /rollback ID (see /snapshots)".into());
    }
    let service = snapshots_service(tg)?;
    let store = tg.gw.store.clone();
    let id = id.to_owned();
    tokio::task::spawn_blocking(move || {
        let done =
            crate::routes::resources::rollback_audited(&service, &store, &id, None, "telegram")
                .map_err(|e| match e {
                    crate::routes::resources::Rolled::Snapshot(e) => e.to_string(),
                    crate::routes::resources::Rolled::Store(e) => e.to_string(),
                })?;
        let files: Vec<&str> = done.restored.iter().map(|r| r.path.as_str()).collect();
        Ok(if files.is_empty() {
            format!("Rolled back to {}: the files already matched.", done.snapshot.0)
        } else {
            format!("Rolled back to {}: {}", done.snapshot.0, files.join(", "))
        })
    })
    .await
    .map_err(|e| e.to_string())?
}
