//! Notifications in Telegram: each allowlisted chat gets them through the outbox unless it
//! said `/notify off` (kept in the store, so it survives restarts).

use crate::notify::Push;

use super::{CHANNEL, Telegram};

fn off_key(chat: i64) -> String {
    format!("notify_off:{chat}")
}

impl Telegram {
    /// Whether `chat` takes notifications (`/notify on`, the default).
    pub fn notify_on(&self, chat: i64) -> bool {
        !matches!(self.gw.store.channel_state(CHANNEL, &off_key(chat)), Ok(Some(v)) if v == "off")
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
