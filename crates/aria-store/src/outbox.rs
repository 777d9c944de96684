//! The outbox of the daemon's chat channels (Telegram first): every outgoing message is written
//! here first and sent after, so a restart loses none, and a success is recorded so none is
//! sent twice. Also the small per-channel state the channels keep: a cursor (Telegram's
//! `getUpdates` offset) and the chats that wrote, with the conversation each one talks in.
//!
//! A row's life: `pending` → `sent` (with the platform's message id), or back to `pending` with
//! a later `next_attempt_ms` after a failure that certainly did not deliver, or `unknown` when
//! the request left and no answer came (it may have arrived). An `unknown` row is tried once
//! more; any failure then makes it `failed`, never a loop. Rows of one chat go out in order: a
//! row waits while an earlier one of its chat is still `pending` or `unknown`.
//!
//! Every payload passes the store's redactor on its way in (the channels send rows as stored),
//! so neither a message that leaves nor its stored copy holds a secret the redactor knows.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use crate::StoreError;
use crate::error::sql;
use crate::store::{Store, now_rfc3339};

/// The statements of the schema step that adds the outbox and the channels' state.
pub(crate) const OUTBOX: &[&str] = &[
    "CREATE TABLE outbox (
        id INTEGER PRIMARY KEY,
        channel TEXT NOT NULL,
        chat_id INTEGER NOT NULL,
        kind TEXT NOT NULL,
        edit_of INTEGER REFERENCES outbox(id),
        payload TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER NOT NULL,
        message_id INTEGER,
        error TEXT,
        sent_at_ms INTEGER,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    ) STRICT",
    "CREATE INDEX outbox_due ON outbox(channel, state, next_attempt_ms)",
    "CREATE INDEX outbox_chat ON outbox(channel, chat_id, id)",
    "CREATE TABLE channel_state (
        channel TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (channel, key)
    ) STRICT",
    "CREATE TABLE channel_chats (
        channel TEXT NOT NULL,
        chat_id INTEGER NOT NULL,
        title TEXT,
        conversation_id TEXT,
        allowed INTEGER NOT NULL,
        messages INTEGER NOT NULL DEFAULT 0,
        refused INTEGER NOT NULL DEFAULT 0,
        first_seen_at TEXT NOT NULL,
        last_seen_at TEXT NOT NULL,
        PRIMARY KEY (channel, chat_id)
    ) STRICT",
];

/// A new message, or an edit of one sent earlier through the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutboxKind {
    Send,
    Edit,
}

/// Where a row is in its life (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutboxState {
    Pending,
    Sent,
    Failed,
    Unknown,
}

impl OutboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxState::Pending => "pending",
            OutboxState::Sent => "sent",
            OutboxState::Failed => "failed",
            OutboxState::Unknown => "unknown",
        }
    }

    fn parse(text: &str) -> Option<OutboxState> {
        Some(match text {
            "pending" => OutboxState::Pending,
            "sent" => OutboxState::Sent,
            "failed" => OutboxState::Failed,
            "unknown" => OutboxState::Unknown,
            _ => return None,
        })
    }
}

/// One row of the outbox.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutboxItem {
    pub id: i64,
    pub channel: String,
    pub chat_id: i64,
    pub kind: OutboxKind,
    /// For an edit: the row of the message it edits.
    pub edit_of: Option<i64>,
    /// For an edit: the platform's id of that message, once it was sent.
    pub target_message_id: Option<i64>,
    /// What to send (the platform's request body, without the chat and message ids).
    pub payload: Value,
    pub state: OutboxState,
    pub attempts: u32,
    /// Not tried again before this (Unix milliseconds).
    pub next_attempt_ms: i64,
    /// The platform's id of the message once it was sent.
    pub message_id: Option<i64>,
    pub error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// A chat that wrote to a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChannelChat {
    pub chat_id: i64,
    pub title: Option<String>,
    pub conversation_id: Option<String>,
    /// Whether it was on the allowlist when it last wrote.
    pub allowed: bool,
    /// Messages taken from it.
    pub messages: u64,
    /// Messages refused (not on the allowlist).
    pub refused: u64,
    pub first_seen_at: String,
    pub last_seen_at: String,
}

const ITEM_SELECT: &str = "SELECT o.id, o.channel, o.chat_id, o.kind, o.edit_of, \
    (SELECT t.message_id FROM outbox t WHERE t.id = o.edit_of), o.payload, o.state, o.attempts, \
    o.next_attempt_ms, o.message_id, o.error, o.created_at, o.updated_at FROM outbox o";

fn read_item(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<OutboxItem, StoreError>> {
    let kind: String = r.get(3)?;
    let payload: String = r.get(6)?;
    let state: String = r.get(7)?;
    let corrupt = |what: String| Ok(Err(StoreError::Corrupt { what }));
    let kind = match kind.as_str() {
        "send" => OutboxKind::Send,
        "edit" => OutboxKind::Edit,
        other => return corrupt(format!("outbox kind `{other}`")),
    };
    let Some(state) = OutboxState::parse(&state) else {
        return corrupt(format!("outbox state `{state}`"));
    };
    let Ok(payload) = serde_json::from_str(&payload) else {
        return corrupt("an outbox payload is not JSON".into());
    };
    let attempts: i64 = r.get(8)?;
    Ok(Ok(OutboxItem {
        id: r.get(0)?,
        channel: r.get(1)?,
        chat_id: r.get(2)?,
        kind,
        edit_of: r.get(4)?,
        target_message_id: r.get(5)?,
        payload,
        state,
        attempts: u32::try_from(attempts).unwrap_or(0),
        next_attempt_ms: r.get(9)?,
        message_id: r.get(10)?,
        error: r.get(11)?,
        created_at: r.get(12)?,
        updated_at: r.get(13)?,
    }))
}

fn encode(payload: &Value) -> Result<String, StoreError> {
    serde_json::to_string(payload)
        .map_err(|source| StoreError::Encode { what: "an outbox payload", source })
}

impl Store {
    /// A payload as the outbox keeps it: every text in it through the store's redactor. This
    /// is the one way into the table, so what leaves through a channel (which sends the rows
    /// as stored) never holds a secret the redactor knows, and neither does the stored copy.
    fn encode_redacted(&self, payload: &Value) -> Result<String, StoreError> {
        let mut payload = payload.clone();
        aria_api::redact_json(self.redactor(), &mut payload);
        encode(&payload)
    }

    /// Queues a new message for `chat_id`, due at once; returns its row id.
    pub fn outbox_send(
        &self,
        channel: &str,
        chat_id: i64,
        payload: &Value,
        now_ms: i64,
    ) -> Result<i64, StoreError> {
        let payload = self.encode_redacted(payload)?;
        let conn = self.conn();
        let now = now_rfc3339();
        conn.execute(
            "INSERT INTO outbox (channel, chat_id, kind, payload, state, next_attempt_ms, \
             created_at, updated_at) VALUES (?1, ?2, 'send', ?3, 'pending', ?4, ?5, ?5)",
            params![channel, chat_id, payload, now_ms, now],
        )
        .map_err(sql("queueing an outgoing message"))?;
        Ok(conn.last_insert_rowid())
    }

    /// Queues an edit of the message of row `of`. An edit of the same message still waiting and
    /// never tried takes the new payload instead (only the latest text matters), so a burst of
    /// edits costs one request. Returns the row id of the edit.
    pub fn outbox_edit(
        &self,
        channel: &str,
        chat_id: i64,
        of: i64,
        payload: &Value,
        now_ms: i64,
    ) -> Result<i64, StoreError> {
        let payload = self.encode_redacted(payload)?;
        let conn = self.conn();
        let now = now_rfc3339();
        let waiting: Option<i64> = conn
            .query_row(
                "SELECT id FROM outbox WHERE channel = ?1 AND edit_of = ?2 AND kind = 'edit' \
                 AND state = 'pending' AND attempts = 0 ORDER BY id DESC LIMIT 1",
                params![channel, of],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("looking for a queued edit"))?;
        if let Some(id) = waiting {
            conn.execute(
                "UPDATE outbox SET payload = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, payload, now],
            )
            .map_err(sql("merging a queued edit"))?;
            return Ok(id);
        }
        conn.execute(
            "INSERT INTO outbox (channel, chat_id, kind, edit_of, payload, state, \
             next_attempt_ms, created_at, updated_at) \
             VALUES (?1, ?2, 'edit', ?3, ?4, 'pending', ?5, ?6, ?6)",
            params![channel, chat_id, of, payload, now_ms, now],
        )
        .map_err(sql("queueing an edit"))?;
        Ok(conn.last_insert_rowid())
    }

    /// The rows due now (`pending` or `unknown`, `next_attempt_ms <= now_ms`, no earlier row of
    /// the same chat still waiting), oldest first, at most `limit`.
    pub fn outbox_due(
        &self,
        channel: &str,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<OutboxItem>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "{ITEM_SELECT} WHERE o.channel = ?1 AND o.state IN ('pending', 'unknown') \
                 AND o.next_attempt_ms <= ?2 AND NOT EXISTS (SELECT 1 FROM outbox e \
                 WHERE e.channel = o.channel AND e.chat_id = o.chat_id AND e.id < o.id \
                 AND e.state IN ('pending', 'unknown')) ORDER BY o.id LIMIT ?3"
            ))
            .map_err(sql("listing the outbox"))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![channel, now_ms, limit], read_item)
            .map_err(sql("listing the outbox"))?;
        rows.map(|r| r.map_err(sql("listing the outbox"))?).collect()
    }

    /// The earliest `next_attempt_ms` of a row still waiting, to sleep until.
    pub fn outbox_next_due(&self, channel: &str) -> Result<Option<i64>, StoreError> {
        self.conn()
            .query_row(
                "SELECT MIN(next_attempt_ms) FROM outbox WHERE channel = ?1 \
                 AND state IN ('pending', 'unknown')",
                [channel],
                |r| r.get(0),
            )
            .map_err(sql("reading the outbox"))
    }

    /// One row.
    pub fn outbox_item(&self, id: i64) -> Result<Option<OutboxItem>, StoreError> {
        let conn = self.conn();
        conn.query_row(&format!("{ITEM_SELECT} WHERE o.id = ?1"), [id], read_item)
            .optional()
            .map_err(sql("reading the outbox"))?
            .transpose()
    }

    /// Every row of a chat, oldest first (for tests and diagnostics).
    pub fn outbox_items(&self, channel: &str, chat_id: i64) -> Result<Vec<OutboxItem>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "{ITEM_SELECT} WHERE o.channel = ?1 AND o.chat_id = ?2 ORDER BY o.id"
            ))
            .map_err(sql("listing the outbox"))?;
        let rows = stmt
            .query_map(params![channel, chat_id], read_item)
            .map_err(sql("listing the outbox"))?;
        rows.map(|r| r.map_err(sql("listing the outbox"))?).collect()
    }

    /// Records a success. Only a waiting row changes; `false` when it was not waiting (a
    /// success is never recorded twice, and a sent row never goes back).
    pub fn outbox_mark_sent(
        &self,
        id: i64,
        message_id: Option<i64>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE outbox SET state = 'sent', message_id = COALESCE(?2, message_id), \
                 attempts = attempts + 1, sent_at_ms = ?3, error = NULL, updated_at = ?4 \
                 WHERE id = ?1 AND state IN ('pending', 'unknown')",
                params![id, message_id, now_ms, now_rfc3339()],
            )
            .map_err(sql("recording a sent message"))?;
        Ok(changed > 0)
    }

    /// Records a failure that certainly did not deliver: tried again at `next_attempt_ms`.
    /// A row whose outcome was already unknown fails for good instead (it had its one retry).
    pub fn outbox_mark_retry(
        &self,
        id: i64,
        next_attempt_ms: i64,
        error: &str,
    ) -> Result<OutboxState, StoreError> {
        self.outbox_settle(
            id,
            "CASE state WHEN 'unknown' THEN 'failed' ELSE 'pending' END",
            next_attempt_ms,
            error,
        )
    }

    /// Records a request whose outcome is unknown (it left, no answer came): tried once more at
    /// `next_attempt_ms`; a second unknown outcome fails it.
    pub fn outbox_mark_unknown(
        &self,
        id: i64,
        next_attempt_ms: i64,
        error: &str,
    ) -> Result<OutboxState, StoreError> {
        self.outbox_settle(
            id,
            "CASE state WHEN 'unknown' THEN 'failed' ELSE 'unknown' END",
            next_attempt_ms,
            error,
        )
    }

    /// Moves a waiting row to `next_attempt_ms` without counting an attempt (a rate limit of
    /// our own, not a failure).
    pub fn outbox_defer(&self, id: i64, next_attempt_ms: i64) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE outbox SET next_attempt_ms = ?2 \
                 WHERE id = ?1 AND state IN ('pending', 'unknown')",
                params![id, next_attempt_ms],
            )
            .map_err(sql("deferring an outgoing message"))?;
        Ok(())
    }

    /// Folds waiting messages into one: `keep` takes `payload`, and each row of `absorbed` is
    /// removed — all in one transaction, and only if every row is still an untried, waiting
    /// `send` of the same chat that no edit refers to (`keep` too: waiting, no edits; it may
    /// have been tried). `false` (nothing changed) otherwise.
    pub fn outbox_merge(
        &self,
        keep: i64,
        absorbed: &[i64],
        payload: &Value,
    ) -> Result<bool, StoreError> {
        let payload = self.encode_redacted(payload)?;
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql("merging queued messages"))?;
        let chat: Option<(String, i64)> = tx
            .query_row(
                "SELECT channel, chat_id FROM outbox o WHERE id = ?1 AND kind = 'send' \
                 AND state = 'pending' AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.edit_of = o.id)",
                [keep],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(sql("merging queued messages"))?;
        let Some((channel, chat)) = chat else { return Ok(false) };
        for id in absorbed {
            let mergeable: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM outbox o WHERE o.id = ?1 AND o.channel = ?2 \
                     AND o.chat_id = ?3 AND o.kind = 'send' AND o.state = 'pending' \
                     AND o.attempts = 0 AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.edit_of = o.id))",
                    params![id, channel, chat],
                    |r| r.get(0),
                )
                .map_err(sql("merging queued messages"))?;
            if !mergeable || *id == keep {
                return Ok(false);
            }
            tx.execute("DELETE FROM outbox WHERE id = ?1", [id])
                .map_err(sql("merging queued messages"))?;
        }
        tx.execute(
            "UPDATE outbox SET payload = ?2, updated_at = ?3 WHERE id = ?1",
            params![keep, payload, now_rfc3339()],
        )
        .map_err(sql("merging queued messages"))?;
        tx.commit().map_err(sql("merging queued messages"))?;
        Ok(true)
    }

    /// When the oldest row still waiting was queued (RFC 3339), to tell a stuck outbox.
    pub fn outbox_oldest_waiting(&self, channel: &str) -> Result<Option<String>, StoreError> {
        self.conn()
            .query_row(
                "SELECT MIN(created_at) FROM outbox WHERE channel = ?1 \
                 AND state IN ('pending', 'unknown')",
                [channel],
                |r| r.get(0),
            )
            .map_err(sql("reading the outbox"))
    }

    /// Gives up on a row.
    pub fn outbox_mark_failed(&self, id: i64, error: &str) -> Result<OutboxState, StoreError> {
        self.outbox_settle(id, "'failed'", 0, error)
    }

    fn outbox_settle(
        &self,
        id: i64,
        state: &str,
        next_attempt_ms: i64,
        error: &str,
    ) -> Result<OutboxState, StoreError> {
        let conn = self.conn();
        conn.execute(
            &format!(
                "UPDATE outbox SET state = {state}, attempts = attempts + 1, \
                 next_attempt_ms = ?2, error = ?3, updated_at = ?4 \
                 WHERE id = ?1 AND state IN ('pending', 'unknown')"
            ),
            params![id, next_attempt_ms, error, now_rfc3339()],
        )
        .map_err(sql("recording a failed send"))?;
        let state: Option<String> = conn
            .query_row("SELECT state FROM outbox WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(sql("reading the outbox"))?;
        state.as_deref().and_then(OutboxState::parse).ok_or_else(|| StoreError::Corrupt {
            what: format!("outbox row {id} is missing or has an unknown state"),
        })
    }

    /// How many rows still wait to be sent.
    pub fn outbox_waiting(&self, channel: &str) -> Result<u64, StoreError> {
        crate::store::count(
            &self.conn(),
            "SELECT COUNT(*) FROM outbox WHERE channel = ?1 AND state IN ('pending', 'unknown')",
            [channel],
            "counting the outbox",
        )
    }

    /// New messages (not edits) sent to a chat since `since_ms`, for the per-chat rate limit.
    pub fn outbox_sent_since(
        &self,
        channel: &str,
        chat_id: i64,
        since_ms: i64,
    ) -> Result<u64, StoreError> {
        crate::store::count(
            &self.conn(),
            "SELECT COUNT(*) FROM outbox WHERE channel = ?1 AND chat_id = ?2 \
                 AND kind = 'send' AND state = 'sent' AND sent_at_ms >= ?3",
            params![channel, chat_id, since_ms],
            "counting sent messages",
        )
    }

    /// A value the channel keeps (e.g. Telegram's `getUpdates` offset).
    pub fn channel_state(&self, channel: &str, key: &str) -> Result<Option<String>, StoreError> {
        self.conn()
            .query_row(
                "SELECT value FROM channel_state WHERE channel = ?1 AND key = ?2",
                params![channel, key],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("reading a channel's state"))
    }

    pub fn set_channel_state(
        &self,
        channel: &str,
        key: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO channel_state (channel, key, value, updated_at) \
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (channel, key) \
                 DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                params![channel, key, value, now_rfc3339()],
            )
            .map_err(sql("saving a channel's state"))?;
        Ok(())
    }

    /// Notes that `chat_id` wrote: counted as taken (`allowed`) or refused.
    pub fn channel_chat_seen(
        &self,
        channel: &str,
        chat_id: i64,
        title: Option<&str>,
        allowed: bool,
    ) -> Result<(), StoreError> {
        let (taken, refused) = if allowed { (1, 0) } else { (0, 1) };
        self.conn()
            .execute(
                "INSERT INTO channel_chats (channel, chat_id, title, allowed, messages, refused, \
                 first_seen_at, last_seen_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) \
                 ON CONFLICT (channel, chat_id) DO UPDATE SET \
                 title = COALESCE(excluded.title, title), allowed = excluded.allowed, \
                 messages = messages + excluded.messages, refused = refused + excluded.refused, \
                 last_seen_at = excluded.last_seen_at",
                params![channel, chat_id, title, allowed, taken, refused, now_rfc3339()],
            )
            .map_err(sql("noting a chat"))?;
        Ok(())
    }

    /// The chats that wrote, most recent first.
    pub fn channel_chats(
        &self,
        channel: &str,
        limit: usize,
    ) -> Result<Vec<ChannelChat>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT chat_id, title, conversation_id, allowed, messages, refused, \
                 first_seen_at, last_seen_at FROM channel_chats WHERE channel = ?1 \
                 ORDER BY last_seen_at DESC, chat_id LIMIT ?2",
            )
            .map_err(sql("listing chats"))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![channel, limit], |r| {
                let messages: i64 = r.get(4)?;
                let refused: i64 = r.get(5)?;
                Ok(ChannelChat {
                    chat_id: r.get(0)?,
                    title: r.get(1)?,
                    conversation_id: r.get(2)?,
                    allowed: r.get(3)?,
                    messages: u64::try_from(messages).unwrap_or(0),
                    refused: u64::try_from(refused).unwrap_or(0),
                    first_seen_at: r.get(6)?,
                    last_seen_at: r.get(7)?,
                })
            })
            .map_err(sql("listing chats"))?;
        rows.map(|r| r.map_err(sql("listing chats"))).collect()
    }

    /// Messages refused from chats not on the allowlist, in all.
    pub fn channel_refused(&self, channel: &str) -> Result<u64, StoreError> {
        crate::store::count(
            &self.conn(),
            "SELECT COALESCE(SUM(refused), 0) FROM channel_chats WHERE channel = ?1",
            [channel],
            "counting refused messages",
        )
    }

    /// The chat whose conversation is `conversation_id`, if a chat talks in it.
    pub fn channel_chat_of_conversation(
        &self,
        channel: &str,
        conversation_id: &str,
    ) -> Result<Option<i64>, StoreError> {
        self.conn()
            .query_row(
                "SELECT chat_id FROM channel_chats WHERE channel = ?1 AND conversation_id = ?2 \
                 ORDER BY last_seen_at DESC LIMIT 1",
                params![channel, conversation_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("looking up a chat"))
    }

    /// The conversation a chat talks in, if it has one.
    pub fn channel_chat_conversation(
        &self,
        channel: &str,
        chat_id: i64,
    ) -> Result<Option<String>, StoreError> {
        let found: Option<Option<String>> = self
            .conn()
            .query_row(
                "SELECT conversation_id FROM channel_chats WHERE channel = ?1 AND chat_id = ?2",
                params![channel, chat_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql("reading a chat's conversation"))?;
        Ok(found.flatten())
    }

    /// Points a chat at a conversation (its first, or a new one after `/new`).
    pub fn set_channel_chat_conversation(
        &self,
        channel: &str,
        chat_id: i64,
        conversation_id: &str,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO channel_chats (channel, chat_id, conversation_id, allowed, \
                 first_seen_at, last_seen_at) VALUES (?1, ?2, ?3, 1, ?4, ?4) \
                 ON CONFLICT (channel, chat_id) DO UPDATE SET conversation_id = excluded.conversation_id",
                params![channel, chat_id, conversation_id, now_rfc3339()],
            )
            .map_err(sql("saving a chat's conversation"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
