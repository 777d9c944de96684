//! An in-memory [`Journal`] and [`AuditSink`], for unit tests of the loop. It can be told to
//! fail the N-th audit write, to prove that a run halts rather than continue unaudited.

use std::collections::HashMap;
use std::sync::Mutex;

use aria_api::{
    AuditEvent, AuditSink, HistorySummary, Journal, JournalError, Message, MessageMeta, NewSession,
    SessionRecord, SessionState, TraceRecord, Usage,
};

#[derive(Debug, Default)]
struct Inner {
    sessions: HashMap<String, SessionRecord>,
    messages: Vec<(String, String, Message)>,
    traces: Vec<TraceRecord>,
    audit: Vec<AuditEvent>,
    /// Every state a session was saved with, in order.
    saved_states: Vec<(String, SessionState)>,
    summaries: HashMap<String, HistorySummary>,
    next_id: u64,
}

#[derive(Debug, Default)]
pub struct MemoryJournal {
    inner: Mutex<Inner>,
    /// Fail the audit write with this 0-based index (and every one after it).
    fail_audit_from: Option<usize>,
}

impl MemoryJournal {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn failing_audit_from(index: usize) -> Self {
        MemoryJournal { inner: Mutex::default(), fail_audit_from: Some(index) }
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Inner>, JournalError> {
        self.inner.lock().map_err(|_| JournalError::new("memory journal poisoned"))
    }

    pub fn audit_events(&self) -> Vec<AuditEvent> {
        self.lock().map(|i| i.audit.clone()).unwrap_or_default()
    }

    pub fn audit_kinds(&self) -> Vec<String> {
        self.audit_events().into_iter().map(|e| e.kind).collect()
    }

    pub fn traces(&self) -> Vec<TraceRecord> {
        self.lock().map(|i| i.traces.clone()).unwrap_or_default()
    }

    pub fn saved_states(&self, session_id: &str) -> Vec<SessionState> {
        self.lock()
            .map(|i| {
                i.saved_states.iter().filter(|(id, _)| id == session_id).map(|(_, s)| *s).collect()
            })
            .unwrap_or_default()
    }
}

impl AuditSink for MemoryJournal {
    fn append(&self, event: AuditEvent) -> Result<u64, JournalError> {
        let mut inner = self.lock()?;
        if self.fail_audit_from.is_some_and(|n| inner.audit.len() >= n) {
            return Err(JournalError::new("disk full (injected by the test)"));
        }
        inner.audit.push(event);
        Ok(inner.audit.len() as u64)
    }
}

impl Journal for MemoryJournal {
    fn create_session(&self, new: &NewSession) -> Result<SessionRecord, JournalError> {
        let mut inner = self.lock()?;
        inner.next_id += 1;
        let id = format!("s{}", inner.next_id);
        let conversation_id = new.conversation_id.clone().unwrap_or_else(|| format!("c{id}"));
        let record = SessionRecord {
            id: id.clone(),
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
            created_at: "2026-01-01T00:00:00.000Z".into(),
            updated_at: "2026-01-01T00:00:00.000Z".into(),
        };
        inner.sessions.insert(id, record.clone());
        Ok(record)
    }

    fn save_session(&self, session: &SessionRecord) -> Result<(), JournalError> {
        let mut inner = self.lock()?;
        inner.saved_states.push((session.id.clone(), session.state));
        inner.sessions.insert(session.id.clone(), session.clone());
        Ok(())
    }

    fn load_session(&self, id: &str) -> Result<Option<SessionRecord>, JournalError> {
        Ok(self.lock()?.sessions.get(id).cloned())
    }

    fn append_message(
        &self,
        session_id: &str,
        conversation_id: &str,
        message: &Message,
        _meta: &MessageMeta,
    ) -> Result<i64, JournalError> {
        let mut inner = self.lock()?;
        inner.messages.push((session_id.into(), conversation_id.into(), message.clone()));
        Ok(inner.messages.len() as i64)
    }

    fn conversation_messages(&self, conversation_id: &str) -> Result<Vec<Message>, JournalError> {
        Ok(self
            .lock()?
            .messages
            .iter()
            .filter(|(_, c, _)| c == conversation_id)
            .map(|(_, _, m)| m.clone())
            .collect())
    }

    fn record_trace(&self, trace: &TraceRecord) -> Result<(), JournalError> {
        self.lock()?.traces.push(trace.clone());
        Ok(())
    }

    fn save_summary(
        &self,
        conversation_id: &str,
        summary: &HistorySummary,
    ) -> Result<(), JournalError> {
        self.lock()?.summaries.insert(conversation_id.to_owned(), summary.clone());
        Ok(())
    }

    fn load_summary(&self, conversation_id: &str) -> Result<Option<HistorySummary>, JournalError> {
        Ok(self.lock()?.summaries.get(conversation_id).cloned())
    }
}
