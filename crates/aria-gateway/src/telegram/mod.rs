//! The Telegram channel: ARIA in a chat, one more front end over the daemon's agent.
//!
//! Three kinds of task share one [`Telegram`]: the poller (`poll.rs`) long-polls `getUpdates`
//! and persists the offset of each update *before* acting on it, so a restart neither repeats an
//! update nor (short of a crash in between) loses one; a follower per message (`chat.rs`) starts
//! a run in the chat's conversation with [`Channel::Telegram`] and renders its events — the
//! answer streamed into a message that is edited as text arrives, one line per tool step,
//! approvals as Approve / Deny buttons; and the outbox sender (`outbox.rs`), through which every
//! outgoing message and edit goes: written to the store first, sent after, never twice.
//!
//! Only the chats in `allowed_chat_ids` are served; in a group, commands and buttons also need
//! the sender in `allowed_user_ids`. Anything else is logged, audited (`telegram.refused`, with
//! the chat id), counted, and answered with nothing. Commands (`commands.rs`, diagnostics in
//! `health.rs`) bypass the model; `/mode` picks a stricter approval mode for one chat. Files sent
//! to the bot are saved under the configured inbox and handed to the model (`files.rs`).
//!
//! [`Channel::Telegram`]: crate::Channel::Telegram

mod chat;
mod choice;
pub mod client;
mod commands;
mod files;
pub mod format;
mod health;
mod notify;
pub mod outbox;
mod poll;
mod private;
mod schedule;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use client::{Bot, BotError, BotToken};
pub use notify::QueuedPush;
pub use outbox::{CHANNEL, Outbox};

use crate::Gateway;

/// The channel's settings (from `[telegram]` and the environment, resolved by the CLI).
#[derive(Debug, Clone)]
pub struct TelegramConfig {
    pub token: BotToken,
    /// `https://api.telegram.org` unless overridden (`TELEGRAM_API_BASE`).
    pub api_base: String,
    /// The chats served.
    pub allowed_chat_ids: Vec<i64>,
    /// Who may use commands and buttons in a group chat.
    pub allowed_user_ids: Vec<i64>,
    /// `getUpdates` long-poll timeout (30 s).
    pub poll_timeout: Duration,
    /// The least time between two edits of a streamed answer (1 s).
    pub edit_interval: Duration,
    /// The first wait after a failed request (doubled each time).
    pub retry_base: Duration,
    /// New messages per minute per chat (30).
    pub max_per_minute: u32,
    /// Where documents, photos and voice notes are saved (a directory inside a root); `None`:
    /// files are not taken.
    pub inbox: Option<std::path::PathBuf>,
    /// How long a run waits for a press on an `ask_user` question (60 s) before it is told the
    /// choice is postponed.
    pub choice_wait: Duration,
    /// After that, when an unanswered question is recalled (30 min), and the same again until
    /// it is cancelled.
    pub choice_reminder: Duration,
}

impl TelegramConfig {
    pub fn new(token: BotToken, allowed_chat_ids: Vec<i64>) -> TelegramConfig {
        let allowed_user_ids = allowed_chat_ids.iter().copied().filter(|id| *id > 0).collect();
        TelegramConfig {
            token,
            api_base: "https://api.telegram.org".into(),
            allowed_chat_ids,
            allowed_user_ids,
            poll_timeout: Duration::from_secs(30),
            edit_interval: Duration::from_secs(1),
            retry_base: Duration::from_millis(500),
            max_per_minute: 30,
            inbox: None,
            choice_wait: Duration::from_secs(60),
            choice_reminder: Duration::from_secs(30 * 60),
        }
    }
}

/// Why the channel did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "the Telegram channel is off: no chat is allowed. Add your chat id to [telegram] \
         allowed_chat_ids in aria.toml (write to the bot, then `aria telegram chats` lists the \
         ids that wrote)"
    )]
    NoAllowlist,
    #[error("the Telegram channel is off: {0}")]
    Client(String),
}

/// Where an approval question was posted.
#[derive(Debug, Clone, Copy)]
struct Asked {
    chat: i64,
    /// The outbox row of the question.
    row: i64,
}

/// The channel's shared state.
#[derive(Debug)]
pub struct Telegram {
    gw: Arc<Gateway>,
    bot: Bot,
    outbox: Outbox,
    config: TelegramConfig,
    started: Instant,
    /// Open approval questions by id.
    asked: Mutex<HashMap<String, Asked>>,
    /// The bot's username (`getMe`), to tell `/cmd@this_bot` from `/cmd@another_bot` in groups.
    username: std::sync::OnceLock<String>,
    /// The approval mode a chat chose with `/mode` (until the daemon stops).
    modes: Mutex<HashMap<i64, aria_api::ApprovalMode>>,
    /// Stops the poller and the followers' typing; the sender stops separately.
    stop: CancellationToken,
    /// Open `ask_user` questions by id (`choice.rs`).
    choices: Mutex<HashMap<String, choice::Pending>>,
    /// This channel, for the tasks it starts itself.
    this: std::sync::OnceLock<std::sync::Weak<Telegram>>,
}

/// The running channel's tasks.
#[derive(Debug)]
pub struct TelegramHandle {
    pub channel: Arc<Telegram>,
    /// `None` once it was waited for.
    poller: Option<JoinHandle<()>>,
    sender: JoinHandle<()>,
    sender_stop: CancellationToken,
}

impl TelegramHandle {
    /// Stops polling at once (an open long poll is abandoned; its updates were not confirmed,
    /// so they come again to the next start). Calling it again does nothing more.
    pub async fn stop_polling(&mut self) {
        self.channel.stop.cancel();
        if let Some(poller) = self.poller.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), poller).await;
        }
    }

    /// Stops everything: polling, then the sender after it had `flush` to send what is due
    /// (what is left stays in the outbox for the next start).
    pub async fn stop(mut self, flush: Duration) {
        self.stop_polling().await;
        let deadline = tokio::time::Instant::now() + flush;
        while tokio::time::Instant::now() < deadline {
            let due = self.channel.gw.store.outbox_due(CHANNEL, outbox::now_ms(), 1);
            if due.map(|d| d.is_empty()).unwrap_or(true) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.sender_stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.sender).await;
    }
}

impl Telegram {
    /// Starts the poller and the outbox sender.
    pub fn start(gw: Arc<Gateway>, config: TelegramConfig) -> Result<TelegramHandle, StartError> {
        if config.allowed_chat_ids.is_empty() {
            return Err(StartError::NoAllowlist);
        }
        if config.token.is_empty() {
            return Err(StartError::Client("TELEGRAM_BOT_TOKEN is empty".into()));
        }
        let bot = Bot::new(&config.api_base, config.token.clone(), config.retry_base)
            .map_err(StartError::Client)?;
        let outbox = Outbox::new(gw.store.clone());
        let channel = Arc::new(Telegram {
            gw,
            bot: bot.clone(),
            outbox: outbox.clone(),
            config,
            started: Instant::now(),
            asked: Mutex::default(),
            modes: Mutex::default(),
            username: std::sync::OnceLock::new(),
            stop: CancellationToken::new(),
            choices: Mutex::default(),
            this: std::sync::OnceLock::new(),
        });
        let _ = channel.this.set(Arc::downgrade(&channel));
        if let Some(choices) = &channel.gw.services.choices {
            let chooser: Arc<dyn crate::choices::Chooser> = channel.clone();
            choices.attach(Arc::downgrade(&chooser));
        }
        let push: Arc<dyn crate::notify::Push> = channel.clone();
        channel.gw.notifications.attach(Arc::downgrade(&push));
        drop(push);
        let sender_stop = CancellationToken::new();
        let sender = tokio::spawn(tracing::Instrument::instrument(
            outbox::run_sender(outbox, bot, channel.config.max_per_minute, sender_stop.clone()),
            tracing::info_span!("telegram_outbox"),
        ));
        let poller = tokio::spawn(tracing::Instrument::instrument(
            poll::run(channel.clone()),
            tracing::info_span!("telegram_poll"),
        ));
        Ok(TelegramHandle { channel, poller: Some(poller), sender, sender_stop })
    }

    fn asked(&self) -> std::sync::MutexGuard<'_, HashMap<String, Asked>> {
        self.asked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn modes(&self) -> std::sync::MutexGuard<'_, HashMap<i64, aria_api::ApprovalMode>> {
        self.modes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn chat_allowed(&self, chat: i64) -> bool {
        self.config.allowed_chat_ids.contains(&chat)
    }

    /// Whether `user` may use commands and buttons in `chat` (always, in an allowed private chat).
    fn user_allowed(&self, chat: i64, user: i64) -> bool {
        self.chat_allowed(chat) && (chat == user || self.config.allowed_user_ids.contains(&user))
    }

    /// How long the channel has been running.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// A plain message to a chat, through the outbox.
    fn say(&self, chat: i64, text: &str) {
        self.say_html(chat, &format::escape(text), text);
    }

    fn say_html(&self, chat: i64, html: &str, plain: &str) {
        if let Err(e) = self.outbox.send(chat, html, plain, None) {
            tracing::error!(chat, "cannot queue a Telegram message: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_commands_need_an_allowed_user_and_private_chats_default_to_themselves() {
        let config = TelegramConfig::new(BotToken::new("t"), vec![42, -100]);
        assert_eq!(config.allowed_user_ids, [42]);
    }
}
