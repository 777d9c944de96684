//! Approval questions asked through the daemon: sent to the channel that started the run,
//! persisted until answered, denied when nobody can be asked, when the time runs out (the
//! agent loop applies `approval_timeout_secs`) or when the daemon stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aria_core::{ApprovalAnswer, ApprovalRequest, Approver};
use aria_store::{Store, StoredApproval};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::oneshot;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult};
use crate::runs::{Event, Runs};
use crate::security::{Identity, Scope};

/// The answer to an approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run this call once.
    Approve,
    /// Run this call, and the same call with the same arguments for the rest of the session
    /// (at most 15 minutes).
    ApproveSession,
    Deny,
}

impl Decision {
    fn answer(self) -> ApprovalAnswer {
        match self {
            Decision::Approve => ApprovalAnswer::Once,
            Decision::ApproveSession => ApprovalAnswer::Session,
            Decision::Deny => ApprovalAnswer::Deny,
        }
    }

    fn status(self) -> &'static str {
        match self {
            Decision::Approve => "approved",
            Decision::ApproveSession => "approved_session",
            Decision::Deny => "denied",
        }
    }
}

#[derive(Debug)]
struct Inner {
    store: Arc<Store>,
    runs: Arc<Runs>,
    timeout: Duration,
    pending: Mutex<HashMap<String, oneshot::Sender<ApprovalAnswer>>>,
}

/// The daemon's [`Approver`].
#[derive(Debug, Clone)]
pub struct Approvals(Arc<Inner>);

impl Approvals {
    pub fn new(store: Arc<Store>, runs: Arc<Runs>, timeout: Duration) -> Approvals {
        Approvals(Arc::new(Inner { store, runs, timeout, pending: Mutex::default() }))
    }

    fn pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<ApprovalAnswer>>> {
        self.0.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers a pending question as `by` (recorded with the answer). Unknown ids are 404; one
    /// already answered (or expired) 409. A person's channel calls this directly; requests
    /// of the HTTP API go through [`answer_request`], which first checks who may answer.
    pub fn answer(&self, id: &str, decision: Decision, by: &Identity) -> ApiResult<StoredApproval> {
        let Some(sender) = self.pending().remove(id) else {
            return Err(match self.0.store.approval(id)? {
                Some(a) => ApiError::conflict(
                    format!("approval {id} was already settled: {}", a.status),
                    "list the questions still waiting with GET /api/v1/approvals",
                ),
                None => ApiError::not_found(
                    format!("no approval question {id}"),
                    "list the questions still waiting with GET /api/v1/approvals",
                ),
            });
        };
        let settled = self.0.store.approval_answer(id, decision.status(), Some(&by.label))?;
        let settled = settled.ok_or_else(|| {
            ApiError::conflict(format!("approval {id} was already settled"), "nothing to do")
        })?;
        // The run may have stopped waiting in the meantime (timeout, cancel): then this changes
        // nothing, and the stored status says what was answered.
        let _ = sender.send(decision.answer());
        if let Some(hub) = self.0.runs.session(&settled.session_id) {
            hub.publish(Event::new(
                "approval_result",
                json!({ "id": id, "status": settled.status, "tool": settled.tool }),
            ));
        }
        Ok(settled)
    }

    async fn ask_inner(self, request: ApprovalRequest) -> ApprovalAnswer {
        let store = &self.0.store;
        // The run's conversation is known before it starts; the session id is not.
        let hub = match store.session(&request.session_id) {
            Ok(Some(s)) => self.0.runs.in_conversation(&s.conversation_id),
            _ => None,
        };
        let Some(hub) = hub.filter(|h| h.channel.can_ask()) else {
            return ApprovalAnswer::Deny;
        };
        let record = pending_record(&request, hub.channel.as_str());
        let (id, tier) = (record.id.clone(), record.tier.clone());
        if let Err(e) = store.approval_insert(&record) {
            tracing::error!("cannot record an approval question, so it is denied: {e}");
            return ApprovalAnswer::Deny;
        }
        let (tx, rx) = oneshot::channel();
        self.pending().insert(id.clone(), tx);
        let expires = time_after(self.0.timeout);
        hub.publish(Event::new(
            "approval",
            json!({
                "id": id,
                "session_id": request.session_id,
                "tool": request.tool,
                "arguments": request.arguments,
                "shown": aria_api::approval_arguments(&request.arguments),
                "tier": tier,
                "reason": request.reason,
                "expires_at": expires,
            }),
        ));
        // If the loop stops waiting (timeout, cancel, shutdown), the question expires; once
        // answered, the guard finds nothing pending and does nothing.
        let _expire = Expire { approvals: self.clone(), id: id.clone() };
        rx.await.unwrap_or(ApprovalAnswer::Deny)
    }
}

/// Whether `by` may answer approval question `id`: only a person's channel (a web login,
/// Telegram's allowed user) or an admin credential that is not the client whose call waits —
/// neither the credential that started the run nor one that spoke to `/mcp` while the question
/// of an MCP client was open. Unknown questions pass (answering them says 404).
fn may_answer(gw: &crate::Gateway, id: &str, by: &Identity) -> ApiResult<()> {
    if by.person {
        return Ok(());
    }
    let hint = "answer it in the web UI (open the link `aria ui` prints), on Telegram, or with \
                another admin credential than the one of the client that is waiting";
    if by.scope != Scope::Admin {
        return Err(ApiError::forbidden(
            format!(
                "the credential {} has the scope `{}`: only a person's channel or an admin \
                 credential answers approval questions",
                by.label,
                by.scope.as_str()
            ),
            hint,
        ));
    }
    let Some(question) = gw.store.approval(id)? else { return Ok(()) };
    let own_run = gw
        .runs
        .session(&question.session_id)
        .is_some_and(|hub| hub.started_by.as_deref() == Some(by.label.as_str()));
    let lifetime = gw.approvals.0.timeout + Duration::from_secs(60);
    let own_mcp_call = question.channel == "mcp" && gw.security.is_recent_mcp_client(by, lifetime);
    if own_run || own_mcp_call {
        return Err(ApiError::forbidden(
            format!(
                "the credential {} is the client whose call is waiting for this answer; a \
                 client never approves its own calls",
                by.label
            ),
            hint,
        ));
    }
    Ok(())
}

/// Answers approval question `id` for a request of the HTTP API or the WebSocket: refused
/// unless [`may_answer`] lets `by` answer it, then [`Approvals::answer`].
pub fn answer_request(
    gw: &crate::Gateway,
    id: &str,
    decision: Decision,
    by: &Identity,
) -> ApiResult<StoredApproval> {
    may_answer(gw, id, by)?;
    gw.approvals.answer(id, decision, by)
}

/// Settles a question nobody answered.
struct Expire {
    approvals: Approvals,
    id: String,
}

impl Drop for Expire {
    fn drop(&mut self) {
        if self.approvals.pending().remove(&self.id).is_some() {
            let _ = self.approvals.0.store.approval_settle(&self.id, "expired");
            if let Ok(Some(a)) = self.approvals.0.store.approval(&self.id)
                && let Some(hub) = self.approvals.0.runs.session(&a.session_id)
            {
                hub.publish(Event::new(
                    "approval_result",
                    json!({ "id": self.id, "status": "expired", "tool": a.tool }),
                ));
            }
        }
    }
}

/// The approver of calls no run started: those of MCP clients on the daemon's `/mcp`. A
/// question is recorded (channel `mcp`), announced through the notifier (Telegram, the web UI's
/// Notifications page, the desktop) and answered like any other, on the Notifications page or
/// with `POST /api/v1/approvals/{id}`. Unanswered within the approval timeout it is denied.
#[derive(Debug, Clone)]
pub struct Detached {
    approvals: Approvals,
    notifications: Arc<crate::notify::Notifications>,
}

impl Detached {
    pub fn new(approvals: Approvals, notifications: Arc<crate::notify::Notifications>) -> Self {
        Detached { approvals, notifications }
    }

    async fn ask_inner(self, request: ApprovalRequest) -> ApprovalAnswer {
        let store = &self.approvals.0.store;
        let record = pending_record(&request, "mcp");
        let (id, tier) = (record.id.clone(), record.tier.clone());
        if let Err(e) = store.approval_insert(&record) {
            tracing::error!("cannot record an approval question, so it is denied: {e}");
            return ApprovalAnswer::Deny;
        }
        let (tx, rx) = oneshot::channel();
        self.approvals.pending().insert(id.clone(), tx);
        // Dropped last: once the question is settled (answered, or expired by `_expire`), the
        // channels that asked it say how it ended.
        let _settled =
            Settled { detached: self.clone(), id: id.clone(), tool: request.tool.clone() };
        let _expire = Expire { approvals: self.approvals.clone(), id: id.clone() };
        // A notification, not where the call is approved (the Notifications page and Telegram
        // show it whole); still, nothing hidden in it may read as something else.
        let arguments: String =
            aria_api::escape_hidden(&request.arguments.to_string()).chars().take(300).collect();
        let text = format!(
            "{} `{}` ({tier}) with {arguments}. Approve or deny it on the Notifications page of \
             the web UI, or with POST /api/v1/approvals/{id} {{\"decision\": \"approve\"}} or \
             {{\"decision\": \"deny\"}}; unanswered within {} s it is denied.",
            request.reason.as_deref().unwrap_or("An MCP client asks to run this:"),
            request.tool,
            self.approvals.0.timeout.as_secs()
        );
        let question = json!({
            "id": id, "tool": request.tool, "tier": tier, "arguments": request.arguments,
            "reason": request.reason,
        });
        self.notifications.publish_question(&text, &question);
        rx.await.unwrap_or(ApprovalAnswer::Deny)
    }
}

/// Tells the notifier's channels how a detached question ended.
struct Settled {
    detached: Detached,
    id: String,
    tool: String,
}

impl Drop for Settled {
    fn drop(&mut self) {
        let status = match self.detached.approvals.0.store.approval(&self.id) {
            Ok(Some(a)) => a.status,
            _ => "expired".to_owned(),
        };
        self.detached
            .notifications
            .settled(&json!({"id": self.id, "status": status, "tool": self.tool}));
    }
}

impl Approver for Detached {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        Box::pin(self.clone().ask_inner(request))
    }
}

impl Approver for Approvals {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        Box::pin(self.clone().ask_inner(request))
    }
}

/// A new question about `request`, asked on `channel`, as it is recorded.
fn pending_record(request: &ApprovalRequest, channel: &str) -> StoredApproval {
    StoredApproval {
        id: uuid::Uuid::now_v7().to_string(),
        session_id: request.session_id.clone(),
        tool: request.tool.clone(),
        arguments: request.arguments.clone(),
        tier: request.tier.as_str().to_owned(),
        reason: request.reason.clone(),
        channel: channel.to_owned(),
        status: "pending".into(),
        created_at: now_rfc3339(),
        answered_at: None,
        answered_by: None,
    }
}

fn now_rfc3339() -> String {
    time_after(Duration::ZERO)
}

/// RFC 3339 UTC of now plus `after`.
fn time_after(after: Duration) -> String {
    let t = time::OffsetDateTime::now_utc() + after;
    t.replace_nanosecond(0)
        .unwrap_or(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
