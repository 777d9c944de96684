//! What an agent profile adds around the daemon's runs: a persona that rewords the
//! answer the channel shows, and a planner that turns a message into planned steps carried out
//! by the profile's agent. A planned task that needs the user's yes asks it on the channel that
//! started it, as an approval question (`confirm_completion`, with the goal and the planner's
//! summary): Approve is yes, Deny or no answer is no.

use std::sync::Arc;

use aria_core::{
    Agent, ApprovalAnswer, ApprovalRequest, Approver, Confirmation, Confirmer, Persona,
    PlanSettings, PlanStatus, Planner,
};
use futures::future::BoxFuture;
use serde_json::json;
use tokio::sync::mpsc;

use crate::Gateway;
use crate::error::ApiError;
use crate::runs::{Event, Reply, RunHub, Runs, Start, UsageBody};

/// The agent that runs a conversation, with what its profile adds.
#[derive(Clone)]
pub struct Profiled {
    pub agent: Arc<Agent>,
    pub persona: Option<Arc<Persona>>,
    pub plan: Option<Arc<(Planner, PlanSettings)>>,
}

impl Profiled {
    /// An agent with nothing around it (the daemon's own).
    pub fn plain(agent: Arc<Agent>) -> Profiled {
        Profiled { agent, persona: None, plan: None }
    }
}

impl std::fmt::Debug for Profiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiled")
            .field("persona", &self.persona.as_ref().map(|p| &p.name))
            .field("planner", &self.plan.as_ref().map(|p| &p.0.model))
            .finish_non_exhaustive()
    }
}

fn internal(gateway: &Gateway, e: impl std::fmt::Display) -> ApiError {
    ApiError::internal("the run could not go on", gateway.store.redact_text(&e.to_string()))
}

/// Runs one start of a conversation as `profiled` says; the reply for its `done` event.
pub(crate) async fn run(
    gateway: &Arc<Gateway>,
    profiled: &Profiled,
    runs: &Arc<Runs>,
    hub: &Arc<RunHub>,
    conversation_id: &str,
    start: Start,
) -> Result<Reply, ApiError> {
    // A chat's /mode only narrows: a plan's steps run in the agent's own mode, so a chat set
    // stricter than that runs the message unplanned, in the chat's mode.
    let narrowed = match &start {
        Start::MessageInMode(_, mode) => {
            profiled.agent.config().mode.stricter(*mode) != profiled.agent.config().mode
        }
        _ => false,
    };
    if let (Some(plan), Start::Message(text) | Start::MessageInMode(text, _)) =
        (&profiled.plan, &start)
    {
        if !narrowed {
            return planned(gateway, profiled, plan, runs, hub, conversation_id, text).await;
        }
        hub.publish(Event::new(
            "warning",
            json!({"message": "this chat's mode is stricter than the agent's, so the message \
                               runs without the planner, in the chat's mode"}),
        ));
    }
    let quiet = profiled.persona.is_some();
    let session =
        crate::runs::drive(gateway, &profiled.agent, runs, hub, conversation_id, start, quiet)
            .await
            .map_err(|e| internal(gateway, e))?;
    let mut reply = Reply::from_session(&session, &gateway.store);
    if let (Some(persona), Some(answer)) = (&profiled.persona, &reply.answer)
        && session.state == aria_api::SessionState::Done
    {
        let styled = profiled.agent.restyle(&session.id, persona, answer).await;
        reply.answer = Some(gateway.store.redact_text(&styled));
    }
    // The answer was held back for the persona: it is shown whole now.
    if quiet && let Some(answer) = &reply.answer {
        hub.publish(Event::new("text", json!({ "delta": answer })));
    }
    Ok(reply)
}

async fn planned(
    gateway: &Arc<Gateway>,
    profiled: &Profiled,
    plan: &(Planner, PlanSettings),
    runs: &Arc<Runs>,
    hub: &Arc<RunHub>,
    conversation_id: &str,
    goal: &str,
) -> Result<Reply, ApiError> {
    let (planner, settings) = plan;
    let (tx, rx) = mpsc::unbounded_channel();
    // The steps' answers are the executor's notes to the planner, not the answer.
    let forward = crate::runs::forward(gateway, runs, hub, rx, true);
    let confirmer = ChannelConfirmer { gateway: gateway.clone(), conversation_id };
    let ask: Option<&dyn Confirmer> =
        (settings.confirm_completion && hub.channel.can_ask()).then_some(&confirmer);
    let outcome = aria_core::plan_and_execute(
        planner,
        &profiled.agent,
        goal,
        Some(conversation_id.to_owned()),
        settings,
        ask,
        &tx,
        hub.cancel.clone(),
    )
    .await;
    drop(tx);
    let _ = forward.await;
    let outcome = outcome.map_err(|e| internal(gateway, e))?;
    for step in &outcome.steps {
        hub.publish(Event::new("plan_step", json!(step)));
    }
    let last = outcome.steps.last();
    let mut usage = UsageBody { input_tokens: 0, output_tokens: 0 };
    let mut cost = outcome.planner_cost_usd;
    for step in &outcome.steps {
        if let Ok(Some(s)) = gateway.store.session(&step.session_id) {
            usage.input_tokens += s.usage.input_tokens;
            usage.output_tokens += s.usage.output_tokens;
            cost += s.cost_usd;
        }
    }
    let (state, answer, error) = match &outcome.status {
        PlanStatus::Done { summary } => {
            let shown = match (&profiled.persona, last) {
                (Some(persona), Some(last)) => {
                    profiled.agent.restyle(&last.session_id, persona, summary).await
                }
                _ => summary.clone(),
            };
            ("done", Some(gateway.store.redact_text(&shown)), None)
        }
        PlanStatus::Cancelled => ("cancelled", None, None),
        PlanStatus::Aborted { reason } | PlanStatus::GaveUp { reason } => {
            ("failed", None, Some(gateway.store.redact_text(reason)))
        }
    };
    if let Some(answer) = &answer {
        hub.publish(Event::new("text", json!({ "delta": answer })));
    }
    Ok(Reply {
        conversation_id: conversation_id.to_owned(),
        session_id: last.map(|s| s.session_id.clone()).unwrap_or_default(),
        answer,
        state: state.to_owned(),
        usage,
        cost_usd: cost,
        error,
    })
}

/// Asks "is the goal met?" on the channel that started the task, as an approval question.
struct ChannelConfirmer<'a> {
    gateway: Arc<Gateway>,
    conversation_id: &'a str,
}

impl Confirmer for ChannelConfirmer<'_> {
    fn confirm(&self, goal: &str, summary: &str) -> BoxFuture<'_, Confirmation> {
        let (goal, summary) = (goal.to_owned(), summary.to_owned());
        Box::pin(async move {
            let session = self
                .gateway
                .store
                .sessions_in_conversation(self.conversation_id)
                .ok()
                .and_then(|s| s.into_iter().last());
            let Some(session) = session else {
                return Confirmation::No { reason: "there was no step to confirm".into() };
            };
            let request = ApprovalRequest {
                session_id: session.id,
                tool: "confirm_completion".into(),
                arguments: json!({"goal": goal, "summary": summary}),
                tier: aria_api::Tier::Read,
                reason: Some(format!(
                    "The planner says this is done: {summary} — is it? Approve if it is; deny \
                     and say what is missing in your next message if not."
                )),
            };
            let timeout = self.gateway.agent.config().approval_timeout;
            let answer = tokio::time::timeout(timeout, self.gateway.approvals.ask(request)).await;
            match answer {
                Ok(ApprovalAnswer::Deny) | Err(_) => Confirmation::No {
                    reason: "the user did not confirm that the goal is met".into(),
                },
                Ok(_) => Confirmation::Yes,
            }
        })
    }
}
