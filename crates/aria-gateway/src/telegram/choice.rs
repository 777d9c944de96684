//! `ask_user` in Telegram: the options as buttons under the question (see `choices.rs`).
//!
//! A question is kept by a short id (the buttons' `callback_data` is `choose:ID:N`, well
//! under Telegram's 64 bytes). A press from the chat within [`TelegramConfig::choice_wait`]
//! answers the waiting run; after that the run was told "postponed" and a press starts the
//! chat's next run with the choice as the user's message. A reminder goes out after
//! [`TelegramConfig::choice_reminder`], and the same time later the question is cancelled:
//! its message says so and loses its buttons. A press from another chat, or on a question no
//! longer open, changes nothing.
//!
//! [`TelegramConfig::choice_wait`]: super::TelegramConfig::choice_wait
//! [`TelegramConfig::choice_reminder`]: super::TelegramConfig::choice_reminder

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};

use serde_json::json;
use tokio::sync::oneshot;

use super::outbox::CHANNEL;
use super::{Telegram, format};
use crate::choices::{Choice, Chooser};

/// One open question.
#[derive(Debug)]
pub(super) struct Pending {
    chat: i64,
    /// The outbox row of the question (its message id once sent).
    row: i64,
    question: String,
    options: Vec<String>,
    /// The run still waiting for the answer; `None` once it was told "postponed".
    waiting: Option<oneshot::Sender<String>>,
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..10].to_owned()
}

impl Telegram {
    fn pending(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Pending>> {
        self.choices.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The chat whose conversation the session belongs to, if any.
    fn chat_of_session(&self, session_id: &str) -> Option<i64> {
        let store = &self.gw.store;
        let conversation = store.session(session_id).ok().flatten()?.conversation_id;
        store.channel_chat_of_conversation(CHANNEL, &conversation).ok().flatten()
    }

    /// Closes question `id` with `text` in place of the buttons (nothing when it is gone).
    fn close_choice(&self, id: &str, text: &str) -> Option<Pending> {
        let pending = self.pending().remove(id)?;
        let html = format!("{}\n\n{}", format::escape(&pending.question), format::escape(text));
        let plain = format!("{}\n\n{text}", pending.question);
        let no_buttons = json!({"reply_markup": {"inline_keyboard": []}});
        if let Err(e) = self.outbox.edit(pending.chat, pending.row, &html, &plain, Some(no_buttons))
        {
            tracing::warn!(chat = pending.chat, "cannot close a choice question: {e}");
        }
        Some(pending)
    }
}

/// Follows an open question after the run stopped waiting: the reminder, then the cancel.
/// Stops with the channel; it holds the channel only weakly so as not to keep it alive.
fn follow_up(tg: &Telegram, id: String) {
    let Some(weak) = tg.this.get().cloned() else { return };
    let reminder = tg.config.choice_reminder;
    let stop = tg.stop.clone();
    let span = tracing::info_span!("telegram_choice", choice = %id);
    let task = async move {
        let wait = || async {
            tokio::select! {
                () = stop.cancelled() => false,
                () = tokio::time::sleep(reminder) => true,
            }
        };
        if !wait().await {
            return;
        }
        let Some(tg) = weak.upgrade() else { return };
        let open = tg.pending().get(&id).map(|p| (p.chat, p.question.clone()));
        let Some((chat, question)) = open else { return };
        tg.say(chat, &format!("Still waiting for your choice: {question} (the buttons above)."));
        drop(tg);
        if !wait().await {
            return;
        }
        let Some(tg) = weak.upgrade() else { return };
        tg.close_choice(&id, "Cancelled: no choice came, so nothing was done.");
    };
    tokio::spawn(tracing::Instrument::instrument(task, span));
}

impl Chooser for Telegram {
    fn choose<'a>(
        &'a self,
        session_id: &'a str,
        question: &'a str,
        options: &'a [String],
    ) -> Pin<Box<dyn Future<Output = Choice> + Send + 'a>> {
        Box::pin(async move {
            let Some(chat) = self.chat_of_session(session_id) else {
                return Choice::NobodyToAsk("this run is not in a Telegram chat".into());
            };
            let id = new_id();
            let buttons: Vec<Vec<serde_json::Value>> = options
                .iter()
                .enumerate()
                .map(|(n, o)| vec![json!({"text": o, "callback_data": format!("choose:{id}:{n}")})])
                .collect();
            let extra = json!({"reply_markup": {"inline_keyboard": buttons}});
            let html = format!("❓ {}", format::escape(question));
            let row = match self.outbox.send(chat, &html, &format!("❓ {question}"), Some(extra)) {
                Ok(row) => row,
                Err(e) => {
                    return Choice::NobodyToAsk(format!("the question could not be sent: {e}"));
                }
            };
            let (tx, rx) = oneshot::channel();
            self.pending().insert(
                id.clone(),
                Pending {
                    chat,
                    row,
                    question: question.to_owned(),
                    options: options.to_vec(),
                    waiting: Some(tx),
                },
            );
            match tokio::time::timeout(self.config.choice_wait, rx).await {
                Ok(Ok(option)) => Choice::Chosen(option),
                _ => {
                    if let Some(p) = self.pending().get_mut(&id) {
                        p.waiting = None;
                    }
                    follow_up(self, id);
                    Choice::Postponed
                }
            }
        })
    }
}

/// A press on an option of question `id`; returns what to tell the person who pressed.
pub(super) fn answer_button(
    tg: &Arc<Telegram>,
    chat: i64,
    message_id: Option<i64>,
    data: &str,
) -> Option<String> {
    let rest = data.strip_prefix("choose:")?;
    let Some((id, n)) = rest.split_once(':') else {
        return Some("This button is not ARIA's.".into());
    };
    let index: usize = n.parse().unwrap_or(usize::MAX);
    let open = {
        let pending = tg.pending();
        pending.get(id).and_then(|p| {
            let here =
                p.chat == chat && message_id.is_some() && tg.outbox.message_id(p.row) == message_id;
            here.then(|| p.options.get(index).cloned()).flatten()
        })
    };
    let Some(option) = open else {
        tracing::warn!(chat, choice = id, "refused a press on a stale or foreign choice");
        return Some("This question is no longer open.".into());
    };
    let pending = tg.close_choice(id, &format!("✅ {option}"))?;
    let delivered = pending.waiting.is_some_and(|waiting| waiting.send(option.clone()).is_ok());
    if !delivered {
        // The run stopped waiting: the choice is the chat's next message.
        super::chat::start(
            tg,
            chat,
            format!("I choose: {option} (your question was: {})", pending.question),
        );
    }
    Some(format!("Chosen: {option}"))
}
