//! Scheduled jobs inside `aria serve`: the composition of `aria-scheduler`'s loop with the
//! gateway (which runs agent tasks) and the Telegram outbox (which carries notifications).
//!
//! Actions run here: `notify` (the job's fixed message is the notification) and `agent` (the
//! prompt runs as a task in a new conversation through `gw.runs.start`, like any other front
//! end's message; its answer is the notification). A scheduled run has nobody to ask, so it is
//! started as a channel that cannot ask: a call that needs approval is denied.

use std::sync::Arc;

use aria_gateway::Gateway;
use aria_gateway::runs::{Channel, RunHub, Start};
use aria_gateway::telegram::Telegram;
use aria_scheduler::scheduler::{JobRun, Notice, Notifier, RunFuture, RunOutput, Runner};

/// Runs `notify` and `agent` actions.
pub struct GatewayRunner {
    pub gateway: Arc<Gateway>,
}

/// Cancels the run when the scheduler drops its future (the job timed out).
struct CancelOnDrop(Arc<RunHub>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.0.is_finished() {
            self.0.cancel.cancel();
        }
    }
}

impl Runner for GatewayRunner {
    fn run(&self, run: JobRun) -> RunFuture {
        let gateway = self.gateway.clone();
        Box::pin(async move {
            let action = &run.job.action;
            match action["kind"].as_str() {
                Some("notify") => Ok(RunOutput {
                    text: action["message"].as_str().unwrap_or_default().to_owned(),
                    session_id: None,
                }),
                Some("agent") => {
                    let prompt = action["prompt"].as_str().unwrap_or_default().to_owned();
                    agent(&gateway, &run.job.name, prompt).await
                }
                other => Err(format!(
                    "this version of aria cannot run a job whose action is {other:?}; delete \
                     it with `aria schedule delete {}`",
                    run.job.name
                )),
            }
        })
    }
}

async fn agent(gateway: &Arc<Gateway>, job: &str, prompt: String) -> Result<RunOutput, String> {
    let conversation = gateway
        .store
        .create_conversation(&format!("scheduled: {job}"))
        .map_err(|e| format!("cannot open a conversation for the run: {e}"))?;
    let hub = gateway.runs.start(
        gateway.clone(),
        conversation.id,
        Start::Message(prompt),
        Channel::OpenAi,
    );
    let guard = CancelOnDrop(hub.clone());
    let mut events = hub.follow();
    while events.recv().await.is_some() {}
    let reply = guard.0.reply().ok_or("the run ended without a reply")?;
    match (reply.state.as_str(), reply.answer) {
        ("done", Some(answer)) => {
            Ok(RunOutput { text: answer, session_id: Some(reply.session_id) })
        }
        (state, _) => Err(format!(
            "the run {} ended {state}{}",
            reply.session_id,
            reply.error.map(|e| format!(": {e}")).unwrap_or_default()
        )),
    }
}

/// Tells the user: the daemon's log always, and each allowlisted Telegram chat through the
/// outbox when the Telegram channel runs (the sender is woken at once).
pub struct OutboxNotifier {
    pub telegram: Option<Arc<Telegram>>,
}

impl Notifier for OutboxNotifier {
    fn notify(&self, notice: Notice) {
        tracing::info!(job = %notice.job, slot = %notice.slot, kind = ?notice.kind, "{}", notice.text);
        if let Some(telegram) = &self.telegram {
            telegram.notify_allowed(&notice.text);
        }
    }
}
