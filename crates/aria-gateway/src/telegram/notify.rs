//! Notifications in Telegram: each allowlisted chat gets them through the outbox unless it
//! said `/notify off` (kept in the store, so it survives restarts).

use std::sync::Arc;

use serde_json::Value;

use aria_store::Store;

use crate::notify::Push;

use super::{CHANNEL, Outbox, Telegram, format};

fn off_key(chat: i64) -> String {
    format!("notify_off:{chat}")
}

fn takes_notifications(store: &Store, chat: i64) -> bool {
    !matches!(store.channel_state(CHANNEL, &off_key(chat)), Ok(Some(v)) if v == "off")
}

/// Notifications for the allowlisted chats from a process that does not run the channel
/// (`aria schedule run`): queued in the outbox, which the daemon's sender delivers (it looks at
/// least every 30 s), or the next `aria serve` does.
#[derive(Debug)]
pub struct QueuedPush {
    outbox: Outbox,
    store: Arc<Store>,
    chats: Vec<i64>,
}

impl QueuedPush {
    pub fn new(store: Arc<Store>, chats: Vec<i64>) -> Self {
        QueuedPush { outbox: Outbox::new(store.clone()), store, chats }
    }
}

impl Push for QueuedPush {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn push(&self, text: &str) -> bool {
        let mut any = false;
        for &chat in &self.chats {
            if takes_notifications(&self.store, chat) {
                match self.outbox.send(chat, &format::escape(text), text, None) {
                    Ok(_) => any = true,
                    Err(e) => tracing::error!(chat, "cannot queue a Telegram message: {e}"),
                }
            }
        }
        any
    }
}

impl Telegram {
    /// Whether `chat` takes notifications (`/notify on`, the default).
    pub fn notify_on(&self, chat: i64) -> bool {
        takes_notifications(&self.gw.store, chat)
    }

    /// `/notify on|off` for `chat`.
    pub fn set_notify(&self, chat: i64, on: bool) -> Result<(), aria_store::StoreError> {
        self.gw.store.set_channel_state(CHANNEL, &off_key(chat), if on { "on" } else { "off" })
    }
}

impl Push for Telegram {
    fn name(&self) -> &'static str {
        "telegram"
    }

    /// Asks in the first allowlisted chat that takes notifications (one chat answers: a
    /// press is matched to the message it was asked in); the other chats that take
    /// notifications get `text`.
    fn ask(&self, question: &Value, text: &str) -> bool {
        let mut chats =
            self.config.allowed_chat_ids.clone().into_iter().filter(|&c| self.notify_on(c));
        let Some(owner) = chats.next() else {
            return false;
        };
        super::chat::ask(self, owner, question);
        for chat in chats {
            self.say(chat, text);
        }
        true
    }

    fn settle(&self, result: &Value) {
        super::chat::settle(self, result);
    }

    /// Queues `text` for every allowlisted chat that takes notifications.
    fn push(&self, text: &str) -> bool {
        let mut any = false;
        for chat in self.config.allowed_chat_ids.clone() {
            if self.notify_on(chat) {
                self.say(chat, text);
                any = true;
            }
        }
        any
    }
}
