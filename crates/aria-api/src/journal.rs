//! Persistence ports of the agent loop. The loop records everything it does through these two
//! traits; `aria-store` implements them on SQLite. Every method that fails returns a
//! [`JournalError`], and the loop halts on it: a run never continues unrecorded or unaudited.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{Message, Usage};
use crate::session::{Limits, SessionState};

/// The persistence layer could not record something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not write to the ARIA store: {message}")]
pub struct JournalError {
    pub message: String,
}

impl JournalError {
    pub fn new(message: impl Into<String>) -> Self {
        JournalError { message: message.into() }
    }
}

/// One audit event before it is chained. The sink adds seq, time and hashes, and scrubs secrets
/// from the payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub session_id: Option<String>,
    /// Who caused it: `agent`, `user`, `system`, or `tool:<name>`.
    pub actor: String,
    /// What happened, dotted: `session.transition`, `tool.start`, `tool.end`, `tool.refused`, ...
    pub kind: String,
    pub payload: Value,
}

impl AuditEvent {
    pub fn new(session_id: Option<&str>, actor: &str, kind: &str, payload: Value) -> Self {
        AuditEvent {
            session_id: session_id.map(str::to_owned),
            actor: actor.to_owned(),
            kind: kind.to_owned(),
            payload,
        }
    }
}

/// The hash-chained audit log.
pub trait AuditSink: Send + Sync {
    /// Appends one event and returns its sequence number. Must be durable before it returns.
    fn append(&self, event: AuditEvent) -> Result<u64, JournalError>;
}

/// What a new session is started with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSession {
    /// Continue this conversation, or start a new one when `None`.
    pub conversation_id: Option<String>,
    pub task: String,
    pub provider: String,
    pub model: String,
    pub limits: Limits,
}

/// A session as persisted. Counters are cumulative over the whole run, resumes included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: String,
    pub conversation_id: String,
    pub task: String,
    pub provider: String,
    pub model: String,
    pub state: SessionState,
    pub iterations: u32,
    pub usage: Usage,
    pub cost_usd: f64,
    pub limits: Limits,
    /// Why the run failed, in words for a person.
    pub error: Option<String>,
    /// The final answer once the run is done.
    pub answer: Option<String>,
    /// RFC 3339 UTC.
    pub created_at: String,
    pub updated_at: String,
}

/// Facts recorded with a message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageMeta {
    pub model: Option<String>,
    pub usage: Option<Usage>,
}

/// A model-written summary that stands in for the oldest messages of a conversation once its
/// history outgrew the context budget (compaction). `covers` counts messages from the start of
/// the conversation, in [`Journal::conversation_messages`] order: the summary replaces exactly
/// those, and the messages after them are sent as they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistorySummary {
    pub text: String,
    pub covers: u64,
    /// The model that wrote it.
    pub model: String,
}

/// What one traced step was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    ModelCall,
    ToolCall,
    /// A question to the user: how long it waited and the answer (`approve`, `deny`, …).
    Approval,
    /// Long-term memory recalled for a user message: how long the search took, what came back.
    MemoryRecall,
}

impl TraceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceKind::ModelCall => "model_call",
            TraceKind::ToolCall => "tool_call",
            TraceKind::Approval => "approval",
            TraceKind::MemoryRecall => "memory_recall",
        }
    }
}

/// One model call or one tool execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    pub session_id: String,
    pub kind: TraceKind,
    /// Model name or tool name.
    pub name: String,
    pub duration_ms: u64,
    pub usage: Usage,
    pub cost_usd: f64,
    /// `ok`, or the error kind (`refused`, `timeout`, `rate_limited`, ...).
    pub outcome: String,
    pub detail: Value,
}

/// Sessions, messages and traces.
pub trait Journal: Send + Sync {
    fn create_session(&self, new: &NewSession) -> Result<SessionRecord, JournalError>;
    /// Overwrites the session's mutable fields (state, counters, error, answer).
    fn save_session(&self, session: &SessionRecord) -> Result<(), JournalError>;
    fn load_session(&self, id: &str) -> Result<Option<SessionRecord>, JournalError>;
    fn append_message(
        &self,
        session_id: &str,
        conversation_id: &str,
        message: &Message,
        meta: &MessageMeta,
    ) -> Result<i64, JournalError>;
    /// All messages of a conversation, oldest first.
    fn conversation_messages(&self, conversation_id: &str) -> Result<Vec<Message>, JournalError>;
    fn record_trace(&self, trace: &TraceRecord) -> Result<(), JournalError>;
    /// Replaces the conversation's summary (each new one covers at least what the last did).
    /// The default keeps none and says so, so compaction falls back to the summary in memory.
    fn save_summary(
        &self,
        conversation_id: &str,
        summary: &HistorySummary,
    ) -> Result<(), JournalError> {
        let _ = (conversation_id, summary);
        Err(JournalError::new("this journal keeps no conversation summaries"))
    }
    /// The conversation's latest summary, if it was ever compacted.
    fn load_summary(&self, conversation_id: &str) -> Result<Option<HistorySummary>, JournalError> {
        let _ = conversation_id;
        Ok(None)
    }
}
