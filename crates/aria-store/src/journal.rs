//! Conversations, sessions, messages and traces: the [`Journal`] port and the read queries the
//! CLI and gateway list things with. Ids here are exact; the CLI accepts a unique prefix by
//! resolving it first ([`Store::resolve_id`](crate::Store::resolve_id)), never by guessing.

use aria_api::{
    Journal, JournalError, Limits, Message, MessageMeta, NewSession, Role, SessionRecord,
    SessionState, ToolCall, TraceKind, TraceRecord, Usage,
};
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params, params_from_iter};
use serde::{Deserialize, Serialize};

use crate::error::{StoreError, sql, to_i64, to_u64};
use crate::store::{Store, now_rfc3339};

/// A conversation as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub created_at: String,
    pub updated_at: String,
    pub message_count: u64,
}

/// A message with what the store recorded around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMessage {
    pub id: i64,
    pub session_id: Option<String>,
    pub message: Message,
    pub model: Option<String>,
    pub usage: Option<Usage>,
    pub created_at: String,
}

/// A trace with its row id and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTrace {
    pub id: i64,
    pub trace: TraceRecord,
    pub created_at: String,
}

/// How many characters of the task become a new conversation's title.
const TITLE_CHARS: usize = 60;

/// The first 60 characters of the task, whitespace collapsed, `…` when cut.
pub(crate) fn title_from_task(task: &str) -> String {
    let words = task.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.is_empty() {
        return "(untitled)".to_owned();
    }
    let mut chars = words.chars();
    let head: String = chars.by_ref().take(TITLE_CHARS).collect();
    if chars.next().is_some() { format!("{}…", head.trim_end()) } else { head }
}

fn limit_param(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

const SESSION_COLUMNS: &str = "id, conversation_id, task, provider, model, state, iterations, \
    input_tokens, output_tokens, cost_usd, limits, error, answer, created_at, updated_at";

impl Store {
    fn create_session_impl(&self, new: &NewSession) -> Result<SessionRecord, StoreError> {
        let limits = serde_json::to_string(&new.limits)
            .map_err(|source| StoreError::Encode { what: "session limits", source })?;
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("starting to create a session"))?;
        let now = now_rfc3339();
        let conversation_id = match &new.conversation_id {
            Some(id) => {
                let found = tx
                    .execute(
                        // A conversation created empty takes its title from its first task.
                        "UPDATE conversations SET updated_at = ?2, \
                         title = CASE WHEN title = '' THEN ?3 ELSE title END WHERE id = ?1",
                        params![id, now, title_from_task(&new.task)],
                    )
                    .map_err(sql("touching the conversation"))?;
                if found == 0 {
                    return Err(StoreError::UnknownConversation(id.clone()));
                }
                id.clone()
            }
            None => {
                let id = uuid::Uuid::now_v7().to_string();
                tx.execute(
                    "INSERT INTO conversations (id, title, created_at, updated_at) \
                     VALUES (?1, ?2, ?3, ?3)",
                    params![id, title_from_task(&new.task), now],
                )
                .map_err(sql("creating a conversation"))?;
                id
            }
        };
        let record = SessionRecord {
            id: uuid::Uuid::now_v7().to_string(),
            conversation_id,
            task: new.task.clone(),
            provider: new.provider.clone(),
            model: new.model.clone(),
            state: SessionState::Idle,
            iterations: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            limits: new.limits,
            error: None,
            answer: None,
            created_at: now.clone(),
            updated_at: now,
        };
        tx.execute(
            &format!(
                "INSERT INTO sessions ({SESSION_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, 0, 0, 0.0, ?7, NULL, NULL, ?8, ?8)"
            ),
            params![
                record.id,
                record.conversation_id,
                record.task,
                record.provider,
                record.model,
                record.state.as_str(),
                limits,
                record.created_at,
            ],
        )
        .map_err(sql("creating a session"))?;
        tx.commit().map_err(sql("committing a new session"))?;
        Ok(record)
    }

    fn save_session_impl(&self, s: &SessionRecord) -> Result<(), StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE sessions SET state = ?2, iterations = ?3, input_tokens = ?4, \
                 output_tokens = ?5, cost_usd = ?6, error = ?7, answer = ?8, updated_at = ?9 \
                 WHERE id = ?1",
                params![
                    s.id,
                    s.state.as_str(),
                    s.iterations,
                    to_i64("input_tokens", s.usage.input_tokens)?,
                    to_i64("output_tokens", s.usage.output_tokens)?,
                    s.cost_usd,
                    s.error,
                    s.answer,
                    now_rfc3339(),
                ],
            )
            .map_err(sql("saving a session"))?;
        if changed == 0 {
            return Err(StoreError::UnknownSession(s.id.clone()));
        }
        Ok(())
    }

    /// How many sessions last changed at or after `since` (RFC 3339 UTC) and are now in
    /// `state` (the heartbeat's failed runs).
    pub fn sessions_in_state_since(&self, state: &str, since: &str) -> Result<u64, StoreError> {
        crate::store::count(
            &self.conn(),
            "SELECT COUNT(*) FROM sessions WHERE state = ?1 AND updated_at >= ?2",
            rusqlite::params![state, since],
            "counting sessions",
        )
    }

    /// One session by exact id.
    pub fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let conn = self.conn();
        let query = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1");
        let raw = conn
            .query_row(&query, [id], RawSession::read)
            .optional()
            .map_err(sql("loading a session"))?;
        raw.map(RawSession::into_record).transpose()
    }

    fn append_message_impl(
        &self,
        session_id: &str,
        conversation_id: &str,
        message: &Message,
        meta: &MessageMeta,
    ) -> Result<i64, StoreError> {
        let tool_calls = if message.tool_calls.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&message.tool_calls)
                    .map_err(|source| StoreError::Encode { what: "tool calls", source })?,
            )
        };
        let (input_tokens, output_tokens) = match meta.usage {
            Some(u) => (
                Some(to_i64("input_tokens", u.input_tokens)?),
                Some(to_i64("output_tokens", u.output_tokens)?),
            ),
            None => (None, None),
        };
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql("starting to append a message"))?;
        let owner: Option<String> = tx
            .query_row("SELECT conversation_id FROM sessions WHERE id = ?1", [session_id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql("looking up the message's session"))?;
        match owner {
            None => return Err(StoreError::UnknownSession(session_id.to_owned())),
            Some(actual) if actual != conversation_id => {
                return Err(StoreError::SessionConversationMismatch {
                    session: session_id.to_owned(),
                    actual,
                    given: conversation_id.to_owned(),
                });
            }
            Some(_) => {}
        }
        let now = now_rfc3339();
        tx.execute(
            "UPDATE conversations SET updated_at = ?2 WHERE id = ?1",
            params![conversation_id, now],
        )
        .map_err(sql("touching the conversation"))?;
        tx.execute(
            "INSERT INTO messages (conversation_id, session_id, role, content, tool_calls, \
             tool_call_id, model, input_tokens, output_tokens, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                conversation_id,
                session_id,
                message.role.as_str(),
                message.content,
                tool_calls,
                message.tool_call_id,
                meta.model,
                input_tokens,
                output_tokens,
                now,
            ],
        )
        .map_err(sql("appending a message"))?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(sql("committing a message"))?;
        Ok(id)
    }

    /// All messages of a conversation with their metadata, oldest first.
    pub fn stored_messages(&self, conversation_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let conn = self.conn();
        if summary(&conn, conversation_id)?.is_none() {
            return Err(StoreError::UnknownConversation(conversation_id.to_owned()));
        }
        messages(&conn, conversation_id)
    }

    /// The most recently updated conversations first.
    pub fn list_conversations(&self, limit: usize) -> Result<Vec<ConversationSummary>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!("{SUMMARY} ORDER BY c.updated_at DESC, c.id DESC LIMIT ?1"))
            .map_err(sql("listing conversations"))?;
        let rows = stmt
            .query_map([limit_param(limit)], read_summary)
            .map_err(sql("listing conversations"))?;
        rows.map(|r| r.map_err(sql("listing conversations"))?).collect()
    }

    /// One conversation (exact id) without its messages; `None` if unknown.
    pub fn conversation(&self, id: &str) -> Result<Option<ConversationSummary>, StoreError> {
        summary(&self.conn(), id)
    }

    /// One conversation (exact id) with all its messages, oldest first; `None` if unknown.
    pub fn get_conversation(
        &self,
        id: &str,
    ) -> Result<Option<(ConversationSummary, Vec<StoredMessage>)>, StoreError> {
        let conn = self.conn();
        let Some(summary) = summary(&conn, id)? else { return Ok(None) };
        Ok(Some((summary, messages(&conn, id)?)))
    }

    /// The most recently created sessions first.
    pub fn list_sessions(&self, limit: usize) -> Result<Vec<SessionRecord>, StoreError> {
        self.query_sessions(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?1"
            ),
            [limit_param(limit)],
        )
    }

    /// The sessions created at or after `since` (RFC 3339 UTC), oldest first.
    pub fn sessions_since(&self, since: &str) -> Result<Vec<SessionRecord>, StoreError> {
        self.query_sessions(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions WHERE created_at >= ?1 \
                 ORDER BY created_at, id"
            ),
            [since],
        )
    }

    /// Sessions newest first, `offset` of them skipped, and how many there are in all.
    pub fn session_page(
        &self,
        limit: usize,
        offset: usize,
    ) -> Result<(Vec<SessionRecord>, u64), StoreError> {
        let total = crate::store::count(
            &self.conn(),
            "SELECT COUNT(*) FROM sessions",
            [],
            "counting sessions",
        )?;
        let items = self.query_sessions(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at DESC, id DESC \
                 LIMIT ?1 OFFSET ?2"
            ),
            [limit_param(limit), limit_param(offset)],
        )?;
        Ok((items, total))
    }

    /// The sessions (runs) of one conversation, oldest first.
    pub fn sessions_in_conversation(
        &self,
        conversation_id: &str,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        self.query_sessions(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions WHERE conversation_id = ?1 \
                 ORDER BY created_at, id"
            ),
            [conversation_id],
        )
    }

    /// Sessions interrupted mid-run: any state but `idle` (never started) and the terminal
    /// `done`, `failed`, `cancelled`. Newest first. These are what `aria` offers to resume after
    /// a crash; failed runs are resumable too but are listed by [`Store::list_sessions`].
    pub fn unfinished_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let states: Vec<&str> = SessionState::ALL
            .into_iter()
            .filter(|s| !s.is_terminal() && *s != SessionState::Idle)
            .map(SessionState::as_str)
            .collect();
        let marks = vec!["?"; states.len()].join(", ");
        self.query_sessions(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions WHERE state IN ({marks}) \
                 ORDER BY created_at DESC, id DESC"
            ),
            params_from_iter(states),
        )
    }

    fn query_sessions(
        &self,
        query: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(query).map_err(sql("listing sessions"))?;
        let rows = stmt.query_map(params, RawSession::read).map_err(sql("listing sessions"))?;
        rows.map(|r| r.map_err(sql("listing sessions"))?.into_record()).collect()
    }

    fn record_trace_impl(&self, t: &TraceRecord) -> Result<(), StoreError> {
        let detail = serde_json::to_string(&t.detail)
            .map_err(|source| StoreError::Encode { what: "trace detail", source })?;
        let conn = self.conn();
        let known: Option<i64> = conn
            .query_row("SELECT 1 FROM sessions WHERE id = ?1", [&t.session_id], |r| r.get(0))
            .optional()
            .map_err(sql("looking up the trace's session"))?;
        if known.is_none() {
            return Err(StoreError::UnknownSession(t.session_id.clone()));
        }
        conn.execute(
            "INSERT INTO traces (session_id, kind, name, duration_ms, input_tokens, \
             output_tokens, cost_usd, outcome, detail, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                t.session_id,
                t.kind.as_str(),
                t.name,
                to_i64("duration_ms", t.duration_ms)?,
                to_i64("input_tokens", t.usage.input_tokens)?,
                to_i64("output_tokens", t.usage.output_tokens)?,
                t.cost_usd,
                t.outcome,
                detail,
                now_rfc3339(),
            ],
        )
        .map_err(sql("recording a trace"))?;
        Ok(())
    }

    /// A session's traces in the order they were recorded.
    pub fn traces_for_session(&self, session_id: &str) -> Result<Vec<StoredTrace>, StoreError> {
        self.query_traces("WHERE session_id = ?1 ORDER BY id", [session_id])
    }

    /// Every trace recorded at or after `since` (RFC 3339 UTC), oldest first.
    pub fn traces_since(&self, since: &str) -> Result<Vec<StoredTrace>, StoreError> {
        self.query_traces("WHERE created_at >= ?1 ORDER BY id", [since])
    }

    /// At most `limit` traces with an id above `after`, in id order (the metrics' catch-up).
    pub fn traces_after(&self, after: i64, limit: usize) -> Result<Vec<StoredTrace>, StoreError> {
        self.query_traces(
            "WHERE id > ?1 ORDER BY id LIMIT ?2",
            rusqlite::params![after, i64::try_from(limit).unwrap_or(i64::MAX)],
        )
    }

    /// At most `limit` finished sessions (done, failed, cancelled) that last changed after
    /// (`updated_at`, `id`), in that order (the OpenTelemetry export's cursor).
    pub fn sessions_finished_after(
        &self,
        updated_at: &str,
        id: &str,
        limit: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        self.query_sessions(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions \
                 WHERE state IN ('done', 'failed', 'cancelled') \
                 AND (updated_at > ?1 OR (updated_at = ?1 AND id > ?2)) \
                 ORDER BY updated_at, id LIMIT ?3"
            ),
            rusqlite::params![updated_at, id, i64::try_from(limit).unwrap_or(i64::MAX)],
        )
    }

    /// Runs started per UTC hour (`2026-11-26T18`) at or after `since`, oldest first.
    pub fn sessions_per_hour_since(&self, since: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT substr(created_at, 1, 13), COUNT(*) FROM sessions WHERE created_at >= ?1 \
                 GROUP BY 1 ORDER BY 1",
            )
            .map_err(sql("counting sessions"))?;
        stmt.query_map([since], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0).unsigned_abs())))
            .map_err(sql("counting sessions"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql("counting sessions"))
    }

    /// How many sessions are in each state.
    pub fn session_state_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached("SELECT state, COUNT(*) FROM sessions GROUP BY state ORDER BY state")
            .map_err(sql("counting sessions"))?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0).unsigned_abs())))
            .map_err(sql("counting sessions"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql("counting sessions"))
    }

    fn query_traces(
        &self,
        filter: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<StoredTrace>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT id, session_id, kind, name, duration_ms, input_tokens, output_tokens, \
                 cost_usd, outcome, detail, created_at FROM traces {filter}"
            ))
            .map_err(sql("reading traces"))?;
        let rows = stmt
            .query_map(params, |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    [r.get::<_, i64>(4)?, r.get::<_, i64>(5)?, r.get::<_, i64>(6)?],
                    r.get::<_, f64>(7)?,
                    r.get::<_, String>(8)?,
                    r.get::<_, String>(9)?,
                    r.get::<_, String>(10)?,
                ))
            })
            .map_err(sql("reading traces"))?;
        rows.map(|row| {
            let (
                id,
                session_id,
                kind,
                name,
                [duration, input, output],
                cost_usd,
                outcome,
                detail,
                created_at,
            ) = row.map_err(sql("reading traces"))?;
            let kind = match kind.as_str() {
                "model_call" => TraceKind::ModelCall,
                "tool_call" => TraceKind::ToolCall,
                "approval" => TraceKind::Approval,
                "memory_recall" => TraceKind::MemoryRecall,
                other => return Err(corrupt(format!("trace {id} has unknown kind `{other}`"))),
            };
            let detail = serde_json::from_str(&detail)
                .map_err(|e| corrupt(format!("trace {id} detail is not JSON ({e})")))?;
            let usage = Usage {
                input_tokens: to_u64("input_tokens", input)?,
                output_tokens: to_u64("output_tokens", output)?,
            };
            let trace = TraceRecord {
                session_id,
                kind,
                name,
                duration_ms: to_u64("duration_ms", duration)?,
                usage,
                cost_usd,
                outcome,
                detail,
            };
            Ok(StoredTrace { id, trace, created_at })
        })
        .collect()
    }
}

fn corrupt(what: String) -> StoreError {
    StoreError::Corrupt { what }
}

pub(crate) const SUMMARY: &str = "SELECT c.id, c.title, c.created_at, c.updated_at, \
    (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) FROM conversations c";

pub(crate) fn read_summary(
    r: &Row<'_>,
) -> rusqlite::Result<Result<ConversationSummary, StoreError>> {
    let (id, title, created_at, updated_at) = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
    let count: i64 = r.get(4)?;
    Ok(to_u64("message_count", count).map(|message_count| ConversationSummary {
        id,
        title,
        created_at,
        updated_at,
        message_count,
    }))
}

fn summary(conn: &Connection, id: &str) -> Result<Option<ConversationSummary>, StoreError> {
    conn.query_row(&format!("{SUMMARY} WHERE c.id = ?1"), [id], read_summary)
        .optional()
        .map_err(sql("reading a conversation"))?
        .transpose()
}

fn messages(conn: &Connection, conversation_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, session_id, role, content, tool_calls, tool_call_id, model, input_tokens, \
             output_tokens, created_at FROM messages WHERE conversation_id = ?1 ORDER BY id",
        )
        .map_err(sql("reading messages"))?;
    let rows = stmt
        .query_map([conversation_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<String>>(6)?,
                (r.get::<_, Option<i64>>(7)?, r.get::<_, Option<i64>>(8)?),
                r.get::<_, String>(9)?,
            ))
        })
        .map_err(sql("reading messages"))?;
    rows.map(|row| {
        let (id, session_id, role, content, tool_calls, tool_call_id, model, tokens, created_at) =
            row.map_err(sql("reading messages"))?;
        let role = Role::parse(&role)
            .ok_or_else(|| corrupt(format!("message {id} has unknown role `{role}`")))?;
        let tool_calls: Vec<ToolCall> = match tool_calls {
            None => Vec::new(),
            Some(text) => serde_json::from_str(&text)
                .map_err(|e| corrupt(format!("message {id} tool_calls are not valid ({e})")))?,
        };
        let usage = match tokens {
            (Some(i), Some(o)) => Some(Usage {
                input_tokens: to_u64("input_tokens", i)?,
                output_tokens: to_u64("output_tokens", o)?,
            }),
            _ => None,
        };
        let message = Message { role, content, tool_calls, tool_call_id };
        Ok(StoredMessage { id, session_id, message, model, usage, created_at })
    })
    .collect()
}

/// A `sessions` row before its text columns are parsed.
struct RawSession {
    id: String,
    conversation_id: String,
    task: String,
    provider: String,
    model: String,
    state: String,
    iterations: i64,
    input_tokens: i64,
    output_tokens: i64,
    cost_usd: f64,
    limits: String,
    error: Option<String>,
    answer: Option<String>,
    created_at: String,
    updated_at: String,
}

impl RawSession {
    fn read(r: &Row<'_>) -> rusqlite::Result<RawSession> {
        Ok(RawSession {
            id: r.get(0)?,
            conversation_id: r.get(1)?,
            task: r.get(2)?,
            provider: r.get(3)?,
            model: r.get(4)?,
            state: r.get(5)?,
            iterations: r.get(6)?,
            input_tokens: r.get(7)?,
            output_tokens: r.get(8)?,
            cost_usd: r.get(9)?,
            limits: r.get(10)?,
            error: r.get(11)?,
            answer: r.get(12)?,
            created_at: r.get(13)?,
            updated_at: r.get(14)?,
        })
    }

    fn into_record(self) -> Result<SessionRecord, StoreError> {
        let id = self.id;
        let state = SessionState::parse(&self.state)
            .ok_or_else(|| corrupt(format!("session {id} has unknown state `{}`", self.state)))?;
        let limits: Limits = serde_json::from_str(&self.limits)
            .map_err(|e| corrupt(format!("session {id} limits are not valid ({e})")))?;
        let iterations = u32::try_from(self.iterations)
            .map_err(|_| corrupt(format!("session {id} iterations = {}", self.iterations)))?;
        Ok(SessionRecord {
            conversation_id: self.conversation_id,
            task: self.task,
            provider: self.provider,
            model: self.model,
            state,
            iterations,
            usage: Usage {
                input_tokens: to_u64("input_tokens", self.input_tokens)?,
                output_tokens: to_u64("output_tokens", self.output_tokens)?,
            },
            cost_usd: self.cost_usd,
            limits,
            error: self.error,
            answer: self.answer,
            created_at: self.created_at,
            updated_at: self.updated_at,
            id,
        })
    }
}

/// Every text the journal stores passes through the store's redactor first, like audit
/// payloads: a secret pasted into a task, returned by a tool or echoed by a model never lands
/// in the database.
impl Store {
    fn scrub(&self, text: &str) -> String {
        self.redactor().redact(text).into_owned()
    }

    fn scrub_opt(&self, text: &Option<String>) -> Option<String> {
        text.as_deref().map(|t| self.scrub(t))
    }
}

impl Journal for Store {
    fn create_session(&self, new: &NewSession) -> Result<SessionRecord, JournalError> {
        let new = NewSession { task: self.scrub(&new.task), ..new.clone() };
        Ok(self.create_session_impl(&new)?)
    }

    fn save_session(&self, session: &SessionRecord) -> Result<(), JournalError> {
        let session = SessionRecord {
            error: self.scrub_opt(&session.error),
            answer: self.scrub_opt(&session.answer),
            ..session.clone()
        };
        Ok(self.save_session_impl(&session)?)
    }

    fn load_session(&self, id: &str) -> Result<Option<SessionRecord>, JournalError> {
        Ok(self.session(id)?)
    }

    fn append_message(
        &self,
        session_id: &str,
        conversation_id: &str,
        message: &Message,
        meta: &MessageMeta,
    ) -> Result<i64, JournalError> {
        let mut message = message.clone();
        message.content = self.scrub(&message.content);
        for call in &mut message.tool_calls {
            call.arguments = self.scrub(&call.arguments);
        }
        Ok(self.append_message_impl(session_id, conversation_id, &message, meta)?)
    }

    fn conversation_messages(&self, conversation_id: &str) -> Result<Vec<Message>, JournalError> {
        Ok(self.stored_messages(conversation_id)?.into_iter().map(|m| m.message).collect())
    }

    fn record_trace(&self, trace: &TraceRecord) -> Result<(), JournalError> {
        let mut trace = trace.clone();
        aria_api::redact_json(self.redactor(), &mut trace.detail);
        Ok(self.record_trace_impl(&trace)?)
    }

    fn save_summary(
        &self,
        conversation_id: &str,
        summary: &aria_api::HistorySummary,
    ) -> Result<(), JournalError> {
        Ok(Store::save_summary(self, conversation_id, summary)?)
    }

    fn load_summary(
        &self,
        conversation_id: &str,
    ) -> Result<Option<aria_api::HistorySummary>, JournalError> {
        Ok(Store::load_summary(self, conversation_id)?)
    }
}
