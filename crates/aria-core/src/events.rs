//! What a run tells its front end, and how it asks the user for approval.

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use aria_api::{SessionState, Tier};

/// Events out of a run, in order. Front ends render them; they never drive the loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    Started {
        session_id: String,
        conversation_id: String,
        resumed: bool,
    },
    State {
        state: SessionState,
    },
    Text {
        delta: String,
    },
    ToolStarted {
        call_id: String,
        name: String,
        arguments: Value,
    },
    ToolFinished {
        call_id: String,
        name: String,
        outcome: String,
        summary: String,
    },
    Warning {
        message: String,
    },
    /// The governed workflow put files back after a check that failed on the model's edit.
    Restored {
        check: String,
        snapshot: String,
        repository: String,
        files: Vec<String>,
    },
    /// The governed workflow ran the checks after the model's edit: each one's result before
    /// and after it, and what was made of that. Front ends say which failures were not the
    /// edit's fault (already failing before it, or could not run); a restore comes as
    /// [`AgentEvent::Restored`] as well.
    Checked {
        repository: String,
        snapshot: String,
        checks: Vec<crate::workflow::CheckReport>,
    },
    /// A call that needed approval and did not get it: what, why, and how to allow it.
    Denied {
        call_id: String,
        name: String,
        arguments: Value,
        reason: String,
        hint: String,
    },
}

pub type EventSink = tokio::sync::mpsc::UnboundedSender<AgentEvent>;

/// One question for the user: may this call run?
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    pub session_id: String,
    pub tool: String,
    pub arguments: Value,
    pub tier: Tier,
    /// What the user should know beyond the arguments, front ends show it with the question:
    /// why this call asks when its tier alone would not (a lint, build or test profile after
    /// the run changed the files that define what it runs), and what the tool says the call
    /// will do ([`aria_api::Tool::confirmation`]: `schedule_create` shows the schedule, its
    /// zone, the action and the next three fire times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The user's answer. Scoped: `Session` approves this tool with these exact arguments for the
/// rest of this session, at most 15 minutes; nothing is approved "always".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAnswer {
    Deny,
    Once,
    Session,
}

/// Asks the user through the channel that started the run. The loop applies the timeout
/// (60 s by default) and treats a timeout as `Deny`.
pub trait Approver: Send + Sync {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer>;
}
