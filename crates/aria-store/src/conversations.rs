//! Conversations as the daemon's front ends manage them: created empty, paged and searched,
//! renamed, deleted; and the approval questions a run asks through them, kept so that a
//! restart does not lose a pending one (it is answered "denied" and reported).

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::error::sql;
use crate::journal::{ConversationSummary, SUMMARY, read_summary};
use crate::store::{Store, count, now_rfc3339};

/// One page of conversations and how many match in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConversationPage {
    pub items: Vec<ConversationSummary>,
    pub total: u64,
}

/// An approval question a run asked, and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredApproval {
    pub id: String,
    pub session_id: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub tier: String,
    pub reason: Option<String>,
    /// Where it was asked: `web`, `ws`, `telegram`, …
    pub channel: String,
    /// `pending`, `approved`, `approved_session`, `denied`, `expired`, `interrupted`.
    pub status: String,
    pub created_at: String,
    pub answered_at: Option<String>,
    /// Who answered: the channel and identity, e.g. `web:session`, `api:token NAME`,
    /// `telegram:123`, `cli`; `None` while pending, and for questions that expired or were
    /// interrupted.
    #[serde(default)]
    pub answered_by: Option<String>,
}

/// The statements of the schema step that adds the approvals table.
pub(crate) const APPROVALS: &[&str] = &[
    "CREATE TABLE approvals (
        id TEXT PRIMARY KEY NOT NULL,
        session_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        tier TEXT NOT NULL,
        reason TEXT,
        channel TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        answered_at TEXT
    ) STRICT",
    "CREATE INDEX approvals_status ON approvals(status, created_at)",
];

/// `%`, `_` and `\` taken literally in a `LIKE … ESCAPE '\'` pattern.
fn like_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store {
    /// A new conversation with no messages. An empty title is filled from its first message.
    pub fn create_conversation(&self, title: &str) -> Result<ConversationSummary, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        let now = now_rfc3339();
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        self.conn()
            .execute(
                "INSERT INTO conversations (id, title, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?3)",
                params![id, title, now],
            )
            .map_err(sql("creating a conversation"))?;
        Ok(ConversationSummary {
            id,
            title,
            created_at: now.clone(),
            updated_at: now,
            message_count: 0,
        })
    }

    /// Conversations, most recently updated first, `offset` of them skipped; `query` keeps those
    /// whose title or any message contains it (case-insensitive for ASCII).
    pub fn conversation_page(
        &self,
        query: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> Result<ConversationPage, StoreError> {
        let conn = self.conn();
        let filter = "WHERE (?1 IS NULL OR c.title LIKE ?1 ESCAPE '\\' OR EXISTS (SELECT 1 FROM \
                      messages m2 WHERE m2.conversation_id = c.id AND m2.content LIKE ?1 ESCAPE '\\'))";
        let pattern = query.filter(|q| !q.trim().is_empty()).map(|q| like_pattern(q.trim()));
        let total = count(
            &conn,
            &format!("SELECT COUNT(*) FROM conversations c {filter}"),
            params![pattern],
            "counting conversations",
        )?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "{SUMMARY} {filter} ORDER BY c.updated_at DESC, c.id DESC LIMIT ?2 OFFSET ?3"
            ))
            .map_err(sql("listing conversations"))?;
        let rows = stmt
            .query_map(params![pattern, to_i64(limit), to_i64(offset)], read_summary)
            .map_err(sql("listing conversations"))?;
        let items = rows
            .map(|r| r.map_err(sql("listing conversations"))?)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ConversationPage { items, total })
    }

    /// Gives a conversation a new title; `None` when there is no such conversation.
    pub fn rename_conversation(
        &self,
        id: &str,
        title: &str,
    ) -> Result<Option<ConversationSummary>, StoreError> {
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        let changed = self
            .conn()
            .execute(
                "UPDATE conversations SET title = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, title, now_rfc3339()],
            )
            .map_err(sql("renaming a conversation"))?;
        if changed == 0 {
            return Ok(None);
        }
        self.conversation(id)
    }

    /// Deletes a conversation with its messages, sessions, their traces and its summary, in one
    /// transaction. The audit log keeps its records (it is append-only and hash-chained): what
    /// was done stays provable after the conversation is gone. `false` when there was none.
    pub fn delete_conversation(&self, id: &str) -> Result<bool, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("starting to delete a conversation"))?;
        let sessions = "SELECT id FROM sessions WHERE conversation_id = ?1";
        for statement in [
            format!("DELETE FROM traces WHERE session_id IN ({sessions})"),
            "DELETE FROM messages WHERE conversation_id = ?1".to_owned(),
            "DELETE FROM conversation_summaries WHERE conversation_id = ?1".to_owned(),
            format!("DELETE FROM approvals WHERE session_id IN ({sessions})"),
            "DELETE FROM sessions WHERE conversation_id = ?1".to_owned(),
        ] {
            tx.execute(&statement, [id]).map_err(sql("deleting a conversation"))?;
        }
        let found = tx
            .execute("DELETE FROM conversations WHERE id = ?1", [id])
            .map_err(sql("deleting a conversation"))?;
        tx.commit().map_err(sql("committing a deletion"))?;
        Ok(found > 0)
    }

    /// Records an approval question as `pending`.
    pub fn approval_insert(&self, approval: &StoredApproval) -> Result<(), StoreError> {
        let arguments = serde_json::to_string(&approval.arguments)
            .map_err(|source| StoreError::Encode { what: "approval arguments", source })?;
        self.conn()
            .execute(
                "INSERT INTO approvals (id, session_id, tool, arguments, tier, reason, channel, \
                 status, created_at, answered_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    approval.id,
                    approval.session_id,
                    approval.tool,
                    redacted_json(self, &arguments),
                    approval.tier,
                    approval.reason,
                    approval.channel,
                    approval.status,
                    approval.created_at,
                    approval.answered_at,
                ],
            )
            .map_err(sql("recording an approval question"))?;
        Ok(())
    }

    /// Settles a pending approval with `status` (nobody answered it: it expired or was
    /// interrupted); `None` when it is unknown or already settled.
    pub fn approval_settle(
        &self,
        id: &str,
        status: &str,
    ) -> Result<Option<StoredApproval>, StoreError> {
        self.approval_answer(id, status, None)
    }

    /// Settles a pending approval with `status` as answered by `answered_by` (channel and
    /// identity); `None` when it is unknown or already settled.
    pub fn approval_answer(
        &self,
        id: &str,
        status: &str,
        answered_by: Option<&str>,
    ) -> Result<Option<StoredApproval>, StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE approvals SET status = ?2, answered_at = ?3, answered_by = ?4 \
                 WHERE id = ?1 AND status = 'pending'",
                params![id, status, now_rfc3339(), answered_by],
            )
            .map_err(sql("answering an approval question"))?;
        if changed == 0 {
            return Ok(None);
        }
        self.approval(id)
    }

    /// One approval question.
    pub fn approval(&self, id: &str) -> Result<Option<StoredApproval>, StoreError> {
        let conn = self.conn();
        conn.query_row(&format!("{APPROVAL_SELECT} WHERE id = ?1"), [id], read_approval)
            .optional()
            .map_err(sql("reading an approval question"))?
            .transpose()
    }

    /// The approval questions still waiting for an answer, oldest first.
    pub fn approvals_pending(&self) -> Result<Vec<StoredApproval>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "{APPROVAL_SELECT} WHERE status = 'pending' ORDER BY created_at, id"
            ))
            .map_err(sql("listing approval questions"))?;
        let rows = stmt.query_map([], read_approval).map_err(sql("listing approval questions"))?;
        rows.map(|r| r.map_err(sql("listing approval questions"))?).collect()
    }

    /// Settles every pending question as `interrupted` (the process that asked is gone: the call
    /// did not run) and returns them, for a daemon starting up to report.
    pub fn approvals_interrupt_pending(&self) -> Result<Vec<StoredApproval>, StoreError> {
        let pending = self.approvals_pending()?;
        let mut settled = Vec::with_capacity(pending.len());
        for a in pending {
            if let Some(done) = self.approval_settle(&a.id, "interrupted")? {
                settled.push(done);
            }
        }
        Ok(settled)
    }
}

/// The arguments' JSON text with secrets redacted, still JSON (a redaction that broke the text
/// keeps it as one JSON string).
fn redacted_json(store: &Store, json: &str) -> String {
    let redacted = store.redactor().redact(json);
    if serde_json::from_str::<serde_json::Value>(&redacted).is_ok() {
        redacted.into_owned()
    } else {
        serde_json::Value::String(redacted.into_owned()).to_string()
    }
}

const APPROVAL_SELECT: &str = "SELECT id, session_id, tool, arguments, tier, reason, channel, \
    status, created_at, answered_at, answered_by FROM approvals";

fn read_approval(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<StoredApproval, StoreError>> {
    let arguments: String = r.get(3)?;
    let arguments = match serde_json::from_str(&arguments) {
        Ok(v) => v,
        Err(_) => {
            return Ok(Err(StoreError::Corrupt {
                what: "the arguments of an approval question are not JSON".into(),
            }));
        }
    };
    Ok(Ok(StoredApproval {
        id: r.get(0)?,
        session_id: r.get(1)?,
        tool: r.get(2)?,
        arguments,
        tier: r.get(4)?,
        reason: r.get(5)?,
        channel: r.get(6)?,
        status: r.get(7)?,
        created_at: r.get(8)?,
        answered_at: r.get(9)?,
        answered_by: r.get(10)?,
    }))
}

#[cfg(test)]
mod tests;
