//! The sender of the outbox: every message and edit the channel produces is a row in the
//! store first ([`Outbox::send`], [`Outbox::edit`]); this task sends the rows that are due, in
//! order per chat, and records each outcome before the next (see `aria_store::outbox` for the
//! states). It never resends a row recorded as sent; a request whose outcome is unknown is tried
//! once more and logged; markup Telegram cannot parse is sent again as plain text; at most
//! `max_per_minute` new messages go to one chat per minute, later ones wait.

use std::sync::Arc;
use std::time::Duration;

use aria_store::{OutboxItem, OutboxKind, OutboxState, Store, StoreError};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::client::{Bot, BotError, backoff};

/// The store's name for this channel.
pub const CHANNEL: &str = "telegram";

/// The key of a payload holding the plain-text fallback of an HTML text (never sent).
pub const PLAIN: &str = "aria_plain";

/// The key of a payload that is a file to upload (`sendDocument`): `{"filename", "content"}`.
pub const DOCUMENT: &str = "aria_document";

/// The key of a payload that may only be sent once the row it names was sent (an approval
/// question after the document holding the whole command); if that row failed, so does this.
pub const AFTER: &str = "aria_after";

/// Failures that certainly did not deliver are tried this many times in all.
const MAX_ATTEMPTS: u32 = 8;

pub fn now_ms() -> i64 {
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    i64::try_from(now).unwrap_or(i64::MAX)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Queues rows and wakes the sender.
#[derive(Debug, Clone)]
pub struct Outbox {
    store: Arc<Store>,
    wake: Arc<Notify>,
}

impl Outbox {
    pub fn new(store: Arc<Store>) -> Outbox {
        Outbox { store, wake: Arc::new(Notify::new()) }
    }

    /// A text message: `html` with `plain` as its fallback, plus any extra fields
    /// (`reply_markup`). Returns the row.
    pub fn send(
        &self,
        chat: i64,
        html: &str,
        plain: &str,
        extra: Option<Value>,
    ) -> Result<i64, StoreError> {
        let payload = text_payload(html, plain, extra);
        let id = self.store.outbox_send(CHANNEL, chat, &payload, now_ms())?;
        self.wake.notify_one();
        Ok(id)
    }

    /// An edit of the message of row `of` (its buttons go unless `extra` has `reply_markup`).
    pub fn edit(
        &self,
        chat: i64,
        of: i64,
        html: &str,
        plain: &str,
        extra: Option<Value>,
    ) -> Result<i64, StoreError> {
        let payload = text_payload(html, plain, extra);
        let id = self.store.outbox_edit(CHANNEL, chat, of, &payload, now_ms())?;
        self.wake.notify_one();
        Ok(id)
    }

    /// A text file (`sendDocument`) with a short `caption`. Returns the row.
    pub fn send_document(
        &self,
        chat: i64,
        filename: &str,
        content: &str,
        caption: &str,
    ) -> Result<i64, StoreError> {
        let payload = json!({
            DOCUMENT: {"filename": filename, "content": content},
            "caption": caption,
        });
        let id = self.store.outbox_send(CHANNEL, chat, &payload, now_ms())?;
        self.wake.notify_one();
        Ok(id)
    }

    /// Like [`Outbox::send`], but sent only after row `after` was: never before it, and never
    /// at all if it failed.
    pub fn send_after(
        &self,
        chat: i64,
        after: i64,
        html: &str,
        plain: &str,
        extra: Option<Value>,
    ) -> Result<i64, StoreError> {
        let mut payload = text_payload(html, plain, extra);
        payload[AFTER] = json!(after);
        let id = self.store.outbox_send(CHANNEL, chat, &payload, now_ms())?;
        self.wake.notify_one();
        Ok(id)
    }

    /// Telegram's id of the message of row `row`, once it was sent.
    pub fn message_id(&self, row: i64) -> Option<i64> {
        self.store.outbox_item(row).ok().flatten().and_then(|i| i.message_id)
    }
}

fn text_payload(html: &str, plain: &str, extra: Option<Value>) -> Value {
    let mut payload = json!({"text": html, "parse_mode": "HTML", PLAIN: plain});
    if let (Some(Value::Object(extra)), Some(map)) = (extra, payload.as_object_mut()) {
        map.extend(extra);
    }
    payload
}

/// Sends due rows until `stop` is cancelled.
pub async fn run_sender(outbox: Outbox, bot: Bot, max_per_minute: u32, stop: CancellationToken) {
    loop {
        let wait = match send_due(&outbox, &bot, max_per_minute).await {
            Ok(wait) => wait,
            Err(e) => {
                tracing::error!("the Telegram outbox cannot be read: {e}");
                Duration::from_secs(5)
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = outbox.wake.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Sends what is due now; returns how long to sleep before looking again.
async fn send_due(outbox: &Outbox, bot: &Bot, max_per_minute: u32) -> Result<Duration, StoreError> {
    let store = &outbox.store;
    let now = now_ms();
    let due = store.outbox_due(CHANNEL, now, 32)?;
    for item in &due {
        if item.kind == OutboxKind::Send && max_per_minute > 0 {
            let recent = store.outbox_sent_since(CHANNEL, item.chat_id, now - 60_000)?;
            if recent >= u64::from(max_per_minute) {
                // Waits (without counting an attempt) and holds back the rest of its chat, which
                // is folded into it while it fits one message.
                merge_waiting(store, item)?;
                store.outbox_defer(item.id, now + 2_000)?;
                continue;
            }
        }
        deliver(store, bot, item).await?;
    }
    if due.len() == 32 {
        return Ok(Duration::ZERO);
    }
    let next = store.outbox_next_due(CHANNEL)?;
    Ok(next.map_or(Duration::from_secs(30), |at| {
        Duration::from_millis(u64::try_from(at - now_ms()).unwrap_or(0).max(10))
    }))
}

/// Folds the plain messages queued right after `item` (no buttons, never tried, never edited)
/// into it, as long as the whole fits one Telegram message.
fn merge_waiting(store: &Store, item: &OutboxItem) -> Result<(), StoreError> {
    let plain_of = |p: &Value| p.get(PLAIN).and_then(Value::as_str).map(str::to_owned);
    let simple = |p: &Value| p.get("reply_markup").is_none() && plain_of(p).is_some();
    if !simple(&item.payload) {
        return Ok(());
    }
    let (mut html, mut plain) = (
        item.payload["text"].as_str().unwrap_or_default().to_owned(),
        plain_of(&item.payload).unwrap_or_default(),
    );
    let mut absorbed = Vec::new();
    let later = store.outbox_items(CHANNEL, item.chat_id)?.into_iter().filter(|r| r.id > item.id);
    for row in later {
        let mergeable = row.kind == OutboxKind::Send
            && row.state == OutboxState::Pending
            && row.attempts == 0
            && simple(&row.payload);
        let next_plain = plain_of(&row.payload).unwrap_or_default();
        let fits = (plain.len() + next_plain.len() + 2) <= super::format::MESSAGE_LIMIT
            && plain.encode_utf16().count() + next_plain.encode_utf16().count() + 2
                <= super::format::MESSAGE_LIMIT;
        if !mergeable || !fits {
            break;
        }
        html = format!("{html}\n\n{}", row.payload["text"].as_str().unwrap_or_default());
        plain = format!("{plain}\n\n{next_plain}");
        absorbed.push(row.id);
    }
    if absorbed.is_empty() {
        return Ok(());
    }
    let payload = text_payload(&html, &plain, None);
    if store.outbox_merge(item.id, &absorbed, &payload)? {
        tracing::info!(
            chat = item.chat_id,
            merged = absorbed.len(),
            "rate limit reached: queued messages merged into one"
        );
    }
    Ok(())
}

/// One row: sent, retried later, flagged as unknown, or failed.
async fn deliver(store: &Store, bot: &Bot, item: &OutboxItem) -> Result<(), StoreError> {
    let mut body = item.payload.clone();
    let plain = body.as_object_mut().and_then(|m| m.remove(PLAIN));
    let document = body.as_object_mut().and_then(|m| m.remove(DOCUMENT));
    let after = body.as_object_mut().and_then(|m| m.remove(AFTER)).and_then(|v| v.as_i64());
    if let Some(after) = after {
        match store.outbox_item(after)?.map(|i| i.state) {
            Some(OutboxState::Sent) => {}
            Some(OutboxState::Pending | OutboxState::Unknown) => {
                store.outbox_defer(item.id, now_ms() + 500)?;
                return Ok(());
            }
            Some(OutboxState::Failed) | None => {
                tracing::error!(
                    row = item.id,
                    chat = item.chat_id,
                    "not sent: the message it must follow (row {after}) could not be sent"
                );
                store.outbox_mark_failed(
                    item.id,
                    &format!("the message it must follow (row {after}) could not be sent"),
                )?;
                return Ok(());
            }
        }
    }
    body["chat_id"] = json!(item.chat_id);
    if let Some(document) = document {
        let result = match body.as_object() {
            Some(fields) => {
                let filename = document["filename"].as_str().unwrap_or("text.txt");
                let content = document["content"].as_str().unwrap_or_default();
                bot.send_document(fields, filename, content.as_bytes()).await
            }
            None => Err(BotError::Rejected { status: 400, description: "no fields".into() }),
        };
        return record(store, bot, item, "sendDocument", result);
    }
    let method = match item.kind {
        OutboxKind::Send => "sendMessage",
        OutboxKind::Edit => {
            let Some(target) = item.target_message_id else {
                store.outbox_mark_failed(item.id, "the message to edit was never sent")?;
                return Ok(());
            };
            body["message_id"] = json!(target);
            "editMessageText"
        }
    };
    let mut result = bot.call(method, &body, None).await;
    if let (Err(e), Some(Value::String(plain))) = (&result, plain)
        && e.is_bad_markup()
    {
        tracing::warn!(row = item.id, "Telegram refused the formatting ({e}); sending plain text");
        if let Some(map) = body.as_object_mut() {
            map.remove("parse_mode");
            map.insert("text".into(), Value::String(plain));
        }
        result = bot.call(method, &body, None).await;
    }
    record(store, bot, item, method, result)
}

/// Records the outcome of one try of row `item`.
fn record(
    store: &Store,
    bot: &Bot,
    item: &OutboxItem,
    method: &str,
    result: Result<Value, BotError>,
) -> Result<(), StoreError> {
    let now = now_ms();
    let attempt = item.attempts + 1;
    let wait = |e: &BotError| ms(backoff(e, attempt, bot.retry_base, Duration::from_secs(60)));
    match result {
        Ok(answer) => {
            let message_id = answer.get("message_id").and_then(Value::as_i64);
            store.outbox_mark_sent(item.id, message_id, now)?;
        }
        Err(e) if e.is_not_modified() => {
            store.outbox_mark_sent(item.id, None, now)?;
        }
        Err(e @ BotError::Network { sent: true, .. }) => {
            let state = store.outbox_mark_unknown(item.id, now + wait(&e), &e.to_string())?;
            if state == OutboxState::Unknown {
                tracing::warn!(
                    row = item.id,
                    chat = item.chat_id,
                    "{method}: outcome unknown ({e}); it may have arrived, trying once more"
                );
            } else {
                tracing::error!(
                    row = item.id,
                    chat = item.chat_id,
                    "{method}: outcome unknown twice ({e}); given up, not sent again"
                );
            }
        }
        Err(e) if e.is_retryable() && attempt < MAX_ATTEMPTS => {
            let state = store.outbox_mark_retry(item.id, now + wait(&e), &e.to_string())?;
            tracing::warn!(
                row = item.id,
                chat = item.chat_id,
                "{method} failed ({e}); {}",
                match state {
                    OutboxState::Failed => "its one extra try is used: given up",
                    _ => "will retry",
                }
            );
        }
        Err(e) => {
            tracing::error!(row = item.id, chat = item.chat_id, "{method} failed for good: {e}");
            store.outbox_mark_failed(item.id, &e.to_string())?;
        }
    }
    Ok(())
}
