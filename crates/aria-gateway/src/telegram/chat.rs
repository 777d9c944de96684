//! A message in a chat becomes a run in the chat's conversation; its events become messages:
//! the answer is sent as soon as the first text arrives and then edited (at most once per
//! `edit_interval`) as more comes, split over several messages past 4,096 characters; each tool
//! step is one line (`🔧 file_read notes/todo.md`); a typing indicator shows while tools run;
//! an approval question is a message with Approve / Deny buttons, edited to say how it ended,
//! showing the whole call (a call too long for one message goes first as a file, and the
//! buttons only after it was delivered). A word still being written is held back until the
//! next one starts, so a key never leaves in pieces the redactor cannot recognise; an answer
//! that may quote a private memory is held until the run ends (see `private`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::format::{self, MESSAGE_LIMIT};
use super::outbox::CHANNEL;
use super::private::{self, Privacy};
use super::{Asked, Telegram};
use crate::approvals::Decision;
use crate::runs::{Channel, Event, Start};

/// The conversation a chat talks in, created on its first message.
pub(super) fn conversation(tg: &Telegram, chat: i64) -> Result<String, aria_store::StoreError> {
    let store = &tg.gw.store;
    if let Some(id) = store.channel_chat_conversation(CHANNEL, chat)?
        && store.conversation(&id)?.is_some()
    {
        return Ok(id);
    }
    new_conversation(tg, chat)
}

/// Starts a new conversation for a chat (`/new`).
pub(super) fn new_conversation(tg: &Telegram, chat: i64) -> Result<String, aria_store::StoreError> {
    let id = tg.gw.store.create_conversation("")?.id;
    tg.gw.store.set_channel_chat_conversation(CHANNEL, chat, &id)?;
    Ok(id)
}

/// Starts a run for `text` and follows it in the background.
pub(super) fn start(tg: &Arc<Telegram>, chat: i64, text: String) {
    if tg.gw.accepting().is_err() {
        tg.say(chat, "ARIA is stopping and takes no new messages; try again in a moment.");
        return;
    }
    let conversation = match conversation(tg, chat) {
        Ok(id) => id,
        Err(e) => {
            tracing::error!(chat, "cannot find the chat's conversation: {e}");
            tg.say(chat, "ARIA cannot open this chat's conversation (a storage error); see the daemon's log.");
            return;
        }
    };
    let start = match tg.modes().get(&chat) {
        Some(mode) => Start::MessageInMode(text, *mode),
        None => Start::Message(text),
    };
    let hub = tg.gw.runs.start(tg.gw.clone(), conversation.clone(), start, Channel::Telegram);
    let events = hub.follow();
    let span = tracing::info_span!("telegram_follow", chat, conversation_id = %conversation);
    let follow = follow(tg.clone(), chat, conversation, events);
    tokio::spawn(tracing::Instrument::instrument(follow, span));
}

/// The answer being streamed: its Markdown-ish text and the rows of the messages showing it.
struct Stream {
    chat: i64,
    text: String,
    /// (outbox row, the text that part showed last).
    parts: Vec<(i64, String)>,
    dirty: bool,
}

impl Stream {
    fn push(&mut self, text: &str) {
        self.text.push_str(text);
        self.dirty = true;
    }

    /// A line of its own (a tool step, a warning).
    fn line(&mut self, line: &str) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.text.push('\n');
        self.dirty = true;
    }

    /// Sends the parts not shown yet and edits those that changed. Until the `last` flush,
    /// a word still being written is held back: the start of a key shows no pattern the
    /// redactor knows, and would leave before the rest of it arrives.
    fn flush(&mut self, tg: &Telegram, last: bool) {
        if !self.dirty || self.text.trim().is_empty() {
            return;
        }
        let complete = if last || self.text.ends_with(char::is_whitespace) {
            self.text.len()
        } else {
            self.text.rfind(char::is_whitespace).unwrap_or(0)
        };
        let text = self.text[..complete].trim_end().to_owned();
        if text.is_empty() {
            return;
        }
        // What is held back is still to be shown.
        self.dirty = complete < self.text.len();
        for (i, part) in format::split(&text, MESSAGE_LIMIT).into_iter().enumerate() {
            let html = format::to_html(&part);
            let queued = match self.parts.get_mut(i) {
                Some((_, shown)) if *shown == part => continue,
                Some((row, shown)) => {
                    shown.clone_from(&part);
                    tg.outbox.edit(self.chat, *row, &html, &part, None).map(|_| ())
                }
                None => tg.outbox.send(self.chat, &html, &part, None).map(|row| {
                    self.parts.push((row, part.clone()));
                }),
            };
            if let Err(e) = queued {
                tracing::error!(chat = self.chat, "cannot queue the answer: {e}");
            }
        }
    }
}

/// One line for a tool step: its name and its most telling argument.
pub(super) fn tool_line(name: &str, arguments: &Value) -> String {
    let detail = ["path", "command", "query", "url", "pattern", "content", "id"]
        .iter()
        .find_map(|k| arguments.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
        .or_else(|| arguments.as_object().filter(|m| !m.is_empty()).map(|_| arguments.to_string()))
        .unwrap_or_default();
    let detail: String =
        aria_api::escape_hidden(&detail.replace(['`', '\n'], " ")).chars().take(80).collect();
    if detail.is_empty() { format!("🔧 `{name}`") } else { format!("🔧 `{name} {detail}`") }
}

async fn follow(
    tg: Arc<Telegram>,
    chat: i64,
    conversation: String,
    mut events: mpsc::UnboundedReceiver<Event>,
) {
    let mut stream = Stream { chat, text: String::new(), parts: Vec::new(), dirty: false };
    let mut privacy = Privacy::default();
    // Streamed only while no private memory can be in it (see `private`).
    let flush = |stream: &mut Stream, privacy: &mut Privacy| {
        if !privacy.may_quote(&tg.gw.store) {
            stream.flush(&tg, false);
        }
    };
    let mut tools_running = 0usize;
    typing(&tg, chat);
    let mut typing_tick = tokio::time::interval(Duration::from_secs(4));
    typing_tick.tick().await;
    let mut edit_tick = tokio::time::interval(tg.config.edit_interval);
    edit_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = edit_tick.tick() => {
                flush(&mut stream, &mut privacy);
                continue;
            }
            _ = typing_tick.tick(), if tools_running > 0 || stream.parts.is_empty() => {
                typing(&tg, chat);
                continue;
            }
        };
        let Some(event) = event else { break };
        privacy.note(event.event, &event.data);
        let first = stream.parts.is_empty();
        match event.event {
            "text" => {
                stream.push(event.data["delta"].as_str().unwrap_or_default());
                // The first words go out at once; later ones wait for the next edit tick.
                if first {
                    flush(&mut stream, &mut privacy);
                }
            }
            "tool_call" => {
                tools_running += 1;
                stream.line(&tool_line(
                    event.data["name"].as_str().unwrap_or("tool"),
                    &event.data["arguments"],
                ));
                flush(&mut stream, &mut privacy);
                typing(&tg, chat);
            }
            "tool_result" => {
                tools_running = tools_running.saturating_sub(1);
                let outcome = event.data["outcome"].as_str().unwrap_or_default();
                if matches!(outcome, "denied" | "refused") {
                    let name = event.data["name"].as_str().unwrap_or("tool");
                    let why = event.data["reason"]
                        .as_str()
                        .or_else(|| event.data["summary"].as_str())
                        .unwrap_or(outcome);
                    stream.line(&format!("⛔ `{name}` not run: {why}"));
                }
            }
            "warning" => {
                stream.line(&format!("⚠️ {}", event.data["message"].as_str().unwrap_or_default()))
            }
            "approval" => {
                flush(&mut stream, &mut privacy);
                ask(&tg, chat, &event.data);
            }
            "approval_result" => settle(&tg, &event.data),
            "done" => {
                let failed = event.data["state"] != "done";
                if stream.text.trim().is_empty() || failed {
                    let answer = event.data["answer"].as_str().map(str::to_owned);
                    match (answer, event.data["error"].as_str()) {
                        (Some(a), _) if !failed && !a.trim().is_empty() => stream.push(&a),
                        (_, Some(error)) => stream.line(&format!(
                            "⚠️ The run {}: {error}",
                            event.data["state"].as_str().unwrap_or("ended")
                        )),
                        _ if failed => stream.line(&format!(
                            "⚠️ The run ended: {}",
                            event.data["state"].as_str().unwrap_or("unknown")
                        )),
                        _ => stream.line("(no answer)"),
                    }
                }
            }
            "error" => {
                let message = event.data["message"].as_str().unwrap_or("the run stopped");
                let hint =
                    event.data["hint"].as_str().map(|h| format!(" ({h})")).unwrap_or_default();
                stream.line(&format!("⚠️ {message}{hint}"));
            }
            _ => {}
        }
    }
    if privacy.may_quote(&tg.gw.store) && privacy.quotes_private(&tg.gw.store, &stream.text) {
        tracing::info!(chat, conversation_id = %conversation, "an answer quoting a private memory was kept off Telegram");
        let ui = private::ui_base(&tg.gw.services.config);
        stream.text = private::withheld(&conversation, ui.as_deref());
        stream.dirty = true;
    }
    stream.flush(&tg, true);
}

/// Shows "typing…" (best effort, not through the outbox: it is not a message and goes stale).
fn typing(tg: &Arc<Telegram>, chat: i64) {
    let tg = tg.clone();
    tokio::spawn(async move {
        let body = json!({"chat_id": chat, "action": "typing"});
        if let Err(e) = tg.bot.call("sendChatAction", &body, None).await {
            tracing::debug!(chat, "sendChatAction failed: {e}");
        }
    });
}

/// Posts an approval question with its buttons.
pub(super) fn ask(tg: &Telegram, chat: i64, data: &Value) {
    let Some(id) = data["id"].as_str() else { return };
    let tool = data["tool"].as_str().unwrap_or("tool");
    let buttons = |yes: &str, no: &str| {
        json!({"reply_markup": {"inline_keyboard": [[
            {"text": yes, "callback_data": format!("approve:{id}")},
            {"text": no, "callback_data": format!("deny:{id}")},
        ]]}})
    };
    if tool != "confirm_completion" {
        return ask_call(tg, chat, id, data, buttons("Approve", "Deny"));
    }
    // A planned task's "is it done?" (confirm_completion) is a question about the work, not a
    // tool call: said as such, with Yes / Not yet.
    let (html, plain) = {
        let text = |k: &str| {
            clip(&aria_api::escape_hidden(data["arguments"][k].as_str().unwrap_or_default()), 1500)
        };
        let (goal, summary) = (text("goal"), text("summary"));
        (
            format!(
                "Is this done?\n<b>{}</b>\nGoal: {}",
                format::escape(&summary),
                format::escape(&goal)
            ),
            format!("Is this done?\n{summary}\nGoal: {goal}"),
        )
    };
    let queued = tg.outbox.send(chat, &html, &plain, Some(buttons("Yes, done", "Not yet")));
    asked_in(tg, chat, id, queued);
}

/// Remembers the message a question was asked in (only a press on it answers).
fn asked_in(tg: &Telegram, chat: i64, id: &str, queued: Result<i64, aria_store::StoreError>) {
    match queued {
        Ok(row) => {
            tg.asked().insert(id.to_owned(), Asked { chat, row });
        }
        Err(e) => tracing::error!(chat, "cannot queue an approval question: {e}"),
    }
}

/// How much of the start and of the end of a long call the question itself quotes.
const QUOTED: usize = 400;

/// Asks to approve a tool call, showing exactly what would run: the whole arguments, every
/// hidden character made visible ([`aria_api::approval_arguments`]). When that does not fit one
/// message, the whole text goes first as a file (`sendDocument`), and the question with the
/// buttons is a second message that the outbox sends only once the file was sent: nobody can
/// approve a call whose every character they were not sent. The question quotes the start and
/// the end of the call, where an appended command would be.
fn ask_call(tg: &Telegram, chat: i64, id: &str, data: &Value, buttons: Value) {
    let tool = aria_api::escape_hidden(data["tool"].as_str().unwrap_or("tool"));
    let tier = aria_api::escape_hidden(data["tier"].as_str().unwrap_or("irreversible"));
    let arguments = aria_api::approval_arguments(&data["arguments"]);
    let reason = data["reason"]
        .as_str()
        .map(|r| format!("\nWhy: {}", aria_api::escape_hidden(r)))
        .unwrap_or_default();
    let plain = format!("Approve this {tier} action?\n{tool}\n{arguments}{reason}");
    let html = format!(
        "Approve this <b>{}</b> action?\n<b>{}</b>\n<pre>{}</pre>{}",
        format::escape(&tier),
        format::escape(&tool),
        format::escape(&arguments),
        format::escape(&reason)
    );
    if fits_one_message(&plain) {
        let queued = tg.outbox.send(chat, &html, &plain, Some(buttons));
        return asked_in(tg, chat, id, queued);
    }
    let length = arguments.chars().count();
    let caption = format!(
        "The whole {tool} call ARIA asks to approve ({length} characters). Read it all: the \
         question follows this file."
    );
    let document =
        match tg.outbox.send_document(chat, &format!("approval-{id}.txt"), &plain, &caption) {
            Ok(row) => row,
            Err(e) => return tracing::error!(chat, "cannot queue an approval question: {e}"),
        };
    let head: String = arguments.chars().take(QUOTED).collect();
    let tail: String = arguments.chars().skip(length.saturating_sub(QUOTED)).collect();
    let reason = clip(&reason, 600);
    let note = format!(
        "Its arguments are too long for one message ({length} characters): they are in the file \
         above, whole. Read the file before you answer."
    );
    let plain = format!(
        "Approve this {tier} action?\n{tool}\n{note}\nIt starts:\n{head}\n…\nIt ends:\n{tail}{reason}"
    );
    let html = format!(
        "Approve this <b>{}</b> action?\n<b>{}</b>\n{}\nIt starts:\n<pre>{}</pre>\nIt ends:\n<pre>{}</pre>{}",
        format::escape(&tier),
        format::escape(&tool),
        format::escape(&note),
        format::escape(&head),
        format::escape(&tail),
        format::escape(&reason)
    );
    let queued = tg.outbox.send_after(chat, document, &html, &plain, Some(buttons));
    asked_in(tg, chat, id, queued);
}

/// Whether `text` fits one Telegram message (with room for the markup's line breaks).
fn fits_one_message(text: &str) -> bool {
    text.encode_utf16().count() + 16 <= MESSAGE_LIMIT
}

/// At most `max` characters of `text`, saying how many more there were (a question must fit
/// one message, or Telegram refuses it and nobody can answer).
pub(super) fn clip(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n… ({} more characters)", total - max)
}

/// Edits a question once it is settled (answered here or elsewhere, expired), without buttons.
pub(super) fn settle(tg: &Telegram, data: &Value) {
    let Some(id) = data["id"].as_str() else { return };
    let Some(asked) = tg.asked().remove(id) else { return };
    let tool = data["tool"].as_str().unwrap_or("tool");
    let outcome = match data["status"].as_str().unwrap_or_default() {
        "approved" | "approved_session" => "✅ Approved",
        "denied" => "❌ Denied",
        "expired" => "⌛ No answer in time: denied",
        other => other,
    };
    let plain = format!("{outcome}: {tool}");
    let html = format!("{outcome}: <b>{}</b>", format::escape(tool));
    if let Err(e) = tg.outbox.edit(asked.chat, asked.row, &html, &plain, None) {
        tracing::error!("cannot queue the edit of an approval question: {e}");
    }
}

/// A press on Approve or Deny by the allowed user `user` (recorded as who answered); returns
/// what to tell the person who pressed.
pub(super) fn answer_button(
    tg: &Telegram,
    chat: i64,
    user: i64,
    message_id: Option<i64>,
    data: &str,
) -> String {
    let (decision, id) = match data.split_once(':') {
        Some(("approve", id)) => (Decision::Approve, id),
        Some(("deny", id)) => (Decision::Deny, id),
        _ => return "This button is not ARIA's.".into(),
    };
    let asked = tg.asked().get(id).copied();
    let current = asked.filter(|a| {
        a.chat == chat && message_id.is_some() && tg.outbox.message_id(a.row) == message_id
    });
    if current.is_none() {
        tracing::warn!(
            chat,
            approval = id,
            "refused a button press on a stale or foreign approval message"
        );
        return "This question is no longer open.".into();
    }
    // A private chat's id is its user's; a group's button is recorded by who pressed it.
    let by = if user != 0 { user } else { chat };
    match tg.gw.approvals.answer(id, decision, &crate::security::Identity::telegram(by)) {
        Ok(_) => match decision {
            Decision::Deny => "Denied.".into(),
            _ => "Approved.".into(),
        },
        Err(e) => e.body().error.message,
    }
}
