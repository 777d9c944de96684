//! Runs in flight: each one's events fanned out to everyone following it (the page that
//! started it, a second tab, a WebSocket), one run at a time per conversation, and the bookkeeping
//! a graceful shutdown needs.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aria_api::SessionRecord;
use aria_core::{Agent, AgentEvent, RunError};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::Gateway;

/// One event of a run, as SSE (`event: NAME`, `data: JSON`) and WebSocket frames carry it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub event: &'static str,
    pub data: Value,
}

impl Event {
    pub fn new(event: &'static str, data: Value) -> Event {
        Event { event, data }
    }
}

/// Who started a run, which decides who is asked when a call needs approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The web page or another HTTP client following the run's events.
    Web,
    /// A WebSocket client.
    Ws,
    /// An OpenAI-compatible request: nobody can be asked, so such calls are denied.
    OpenAi,
    /// A Telegram chat: asked with Approve / Deny buttons.
    Telegram,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Web => "web",
            Channel::Ws => "ws",
            Channel::OpenAi => "openai",
            Channel::Telegram => "telegram",
        }
    }

    pub fn can_ask(self) -> bool {
        !matches!(self, Channel::OpenAi)
    }
}

/// The answer to a message once its run ended (also the data of the `done` event).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Reply {
    pub conversation_id: String,
    pub session_id: String,
    /// The final answer; `null` when the run did not finish with one.
    pub answer: Option<String>,
    /// `done`, `failed` or `cancelled` (or the state it stopped in).
    pub state: String,
    pub usage: UsageBody,
    pub cost_usd: f64,
    /// Why the run failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct UsageBody {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Reply {
    /// The reply to a finished run. Its answer and error pass the secret filter, as they do
    /// when stored (a provider's error may quote a key or a URL with credentials).
    pub fn from_session(s: &SessionRecord, store: &aria_store::Store) -> Reply {
        Reply {
            conversation_id: s.conversation_id.clone(),
            session_id: s.id.clone(),
            answer: s.answer.as_deref().map(|a| store.redact_text(a)),
            state: s.state.as_str().to_owned(),
            usage: UsageBody {
                input_tokens: s.usage.input_tokens,
                output_tokens: s.usage.output_tokens,
            },
            cost_usd: s.cost_usd,
            error: s.error.as_deref().map(|e| store.redact_text(e)),
        }
    }
}

#[derive(Debug, Default)]
struct HubState {
    session_id: Option<String>,
    history: Vec<Event>,
    followers: Vec<mpsc::UnboundedSender<Event>>,
    finished: bool,
    reply: Option<Reply>,
}

/// One run's events: kept in order (so a late follower sees everything) and sent to every
/// follower.
#[derive(Debug)]
pub struct RunHub {
    pub conversation_id: String,
    pub channel: Channel,
    /// The credential that started it (an [`crate::security::Identity`] label), when it came
    /// over HTTP: that client may not answer the run's approval questions itself.
    pub started_by: Option<String>,
    pub cancel: CancellationToken,
    state: Mutex<HubState>,
}

impl RunHub {
    fn new(conversation_id: String, channel: Channel, started_by: Option<String>) -> RunHub {
        RunHub {
            conversation_id,
            channel,
            started_by,
            cancel: CancellationToken::new(),
            state: Mutex::new(HubState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn session_id(&self) -> Option<String> {
        self.lock().session_id.clone()
    }

    pub fn is_finished(&self) -> bool {
        self.lock().finished
    }

    /// The reply once the run ended.
    pub fn reply(&self) -> Option<Reply> {
        self.lock().reply.clone()
    }

    pub fn publish(&self, event: Event) {
        let mut state = self.lock();
        if state.finished {
            return;
        }
        state.followers.retain(|f| f.send(event.clone()).is_ok());
        state.history.push(event);
    }

    /// Everything said so far, then each new event; the stream ends after the run's last
    /// event.
    pub fn follow(&self) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.lock();
        for event in &state.history {
            let _ = tx.send(event.clone());
        }
        if !state.finished {
            state.followers.push(tx);
        }
        rx
    }

    fn finish(&self, reply: Option<Reply>) {
        let mut state = self.lock();
        state.finished = true;
        state.reply = reply;
        // Dropping the senders ends every follower's stream.
        state.followers.clear();
    }
}

/// What a run starts from.
#[derive(Debug, Clone)]
pub enum Start {
    Message(String),
    /// A message run in another approval mode than the agent's (a chat's `/mode`).
    MessageInMode(String, aria_api::ApprovalMode),
    /// A scheduled job's prompt, under its own cost cap (USD) when it has one; the agent's
    /// cap still binds when it is lower.
    Job(String, Option<f64>),
    Resume(String),
}

/// How many finished runs stay followable (their events replayed) after they end.
const KEEP_FINISHED: usize = 256;

#[derive(Debug, Default)]
struct Tables {
    by_session: HashMap<String, Arc<RunHub>>,
    finished: VecDeque<String>,
    by_conversation: HashMap<String, Arc<RunHub>>,
    conversation_locks: HashMap<String, Arc<tokio::sync::Mutex<()>>>,
    tasks: Vec<tokio::task::AbortHandle>,
    active: usize,
}

/// How many runs work at once; more wait their turn (each waiting one costs only its queue
/// entry, so a flood of messages cannot make the daemon hold thousands of runs in memory).
pub const MAX_RUNNING: usize = 8;

/// Every run the daemon started.
#[derive(Debug)]
pub struct Runs {
    tables: Mutex<Tables>,
    idle: Notify,
    slots: Arc<tokio::sync::Semaphore>,
}

impl Default for Runs {
    fn default() -> Self {
        Runs::new()
    }
}

impl Runs {
    pub fn new() -> Runs {
        Runs {
            tables: Mutex::default(),
            idle: Notify::new(),
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_RUNNING)),
        }
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run of this session (in flight, or finished recently).
    pub fn session(&self, session_id: &str) -> Option<Arc<RunHub>> {
        self.tables().by_session.get(session_id).cloned()
    }

    /// The run in flight in this conversation, if any.
    pub fn in_conversation(&self, conversation_id: &str) -> Option<Arc<RunHub>> {
        self.tables().by_conversation.get(conversation_id).cloned()
    }

    /// Whether this session is being run by this daemon now.
    pub fn is_running(&self, session_id: &str) -> bool {
        self.session(session_id).is_some_and(|h| !h.is_finished())
    }

    pub fn active(&self) -> usize {
        self.tables().active
    }

    /// Starts a run in `conversation_id` (after the one in flight there, if any) and returns its
    /// hub at once; follow it before awaiting anything so no event is missed.
    pub fn start(
        self: &Arc<Self>,
        gateway: Arc<Gateway>,
        conversation_id: String,
        start: Start,
        channel: Channel,
    ) -> Arc<RunHub> {
        self.start_by(gateway, conversation_id, start, channel, None)
    }

    /// [`Runs::start`] for a run a credential started (`started_by`: its identity label).
    pub fn start_by(
        self: &Arc<Self>,
        gateway: Arc<Gateway>,
        conversation_id: String,
        start: Start,
        channel: Channel,
        started_by: Option<String>,
    ) -> Arc<RunHub> {
        let hub = Arc::new(RunHub::new(conversation_id.clone(), channel, started_by));
        let lock = {
            let mut t = self.tables();
            t.active += 1;
            t.conversation_locks.entry(conversation_id.clone()).or_default().clone()
        };
        if let Start::Resume(id) = &start {
            hub.lock().session_id = Some(id.clone());
            self.tables().by_session.insert(id.clone(), hub.clone());
        }
        let runs = Arc::clone(self);
        let task_hub = hub.clone();
        let task = tokio::spawn(async move {
            let turn = lock.lock_owned().await;
            // Closed only if the semaphore is dropped, which it never is while `runs` lives.
            let _slot = runs.slots.clone().acquire_owned().await;
            runs.tables().by_conversation.insert(conversation_id.clone(), task_hub.clone());
            let result = match gateway.agent_of(&conversation_id) {
                Ok(profiled) => {
                    crate::profiled::run(
                        &gateway,
                        &profiled,
                        &runs,
                        &task_hub,
                        &conversation_id,
                        start,
                    )
                    .await
                }
                Err(e) => Err(e),
            };
            let reply = match result {
                Ok(reply) => {
                    task_hub.publish(Event::new(
                        "usage",
                        json!({
                            "input_tokens": reply.usage.input_tokens,
                            "output_tokens": reply.usage.output_tokens,
                            "cost_usd": reply.cost_usd,
                        }),
                    ));
                    task_hub.publish(Event::new("done", json!(reply)));
                    Some(reply)
                }
                Err(error) => {
                    task_hub.publish(Event::new("error", json!(error.body().error)));
                    None
                }
            };
            task_hub.finish(reply);
            drop(turn);
            runs.finished(&conversation_id, &task_hub);
        });
        let mut t = self.tables();
        t.tasks.retain(|h| !h.is_finished());
        t.tasks.push(task.abort_handle());
        hub
    }

    fn finished(&self, conversation_id: &str, hub: &Arc<RunHub>) {
        let mut t = self.tables();
        if t.by_conversation.get(conversation_id).is_some_and(|h| Arc::ptr_eq(h, hub)) {
            t.by_conversation.remove(conversation_id);
        }
        if let Some(id) = hub.session_id() {
            t.finished.push_back(id);
        }
        while t.finished.len() > KEEP_FINISHED {
            if let Some(old) = t.finished.pop_front() {
                t.by_session.remove(&old);
            }
        }
        // The conversation's turn lock goes when nobody holds or waits for it (the map keeps
        // one per conversation in use, not one per conversation ever used).
        if t.conversation_locks.get(conversation_id).is_some_and(|l| Arc::strong_count(l) == 1) {
            t.conversation_locks.remove(conversation_id);
        }
        t.active = t.active.saturating_sub(1);
        if t.active == 0 {
            self.idle.notify_waiters();
        }
    }

    /// Waits until no run is in flight or `grace` has passed; then stops the rest where they
    /// are: their sessions stay in the state last persisted, interrupted and resumable.
    /// Returns how many were stopped.
    pub async fn drain(&self, grace: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let notified = self.idle.notified();
            if self.active() == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                break;
            }
        }
        let (tasks, hubs) = {
            let mut t = self.tables();
            let hubs: Vec<Arc<RunHub>> = t.by_conversation.values().cloned().collect();
            (std::mem::take(&mut t.tasks), hubs)
        };
        let stopped = tasks.iter().filter(|t| !t.is_finished()).count();
        for task in tasks {
            task.abort();
        }
        // Followers of a stopped run hear why, and their streams end.
        for hub in hubs.iter().filter(|h| !h.is_finished()) {
            let id = hub.session_id().unwrap_or_default();
            hub.publish(Event::new(
                "error",
                json!({
                    "code": "interrupted",
                    "message": "the daemon stopped before this run ended; it is interrupted, \
                                with everything up to its last step saved",
                    "hint": format!("resume it with POST /api/v1/runs/{id}/resume or `aria run --resume {id}`"),
                }),
            ));
            hub.finish(None);
        }
        stopped
    }

    /// Whether deleting this conversation must wait: a run in it is in flight or queued.
    pub fn busy(&self, conversation_id: &str) -> bool {
        let t = self.tables();
        t.by_conversation.contains_key(conversation_id)
            || t.conversation_locks.get(conversation_id).is_some_and(|l| l.try_lock().is_err())
    }
}

/// Forwards a run's events to the hub (without its `text` deltas when `quiet_text`: the
/// answer shown is another one, a persona's or a plan's); holds each session's run lock while it
/// runs, so the CLI sees the session as running, not interrupted.
pub(crate) fn forward(
    gateway: &Arc<Gateway>,
    runs: &Arc<Runs>,
    hub: &Arc<RunHub>,
    mut rx: mpsc::UnboundedReceiver<AgentEvent>,
    quiet_text: bool,
) -> tokio::task::JoinHandle<()> {
    let hub = hub.clone();
    let runs = runs.clone();
    let gateway = gateway.clone();
    tokio::spawn(async move {
        let mut lock = None;
        while let Some(event) = rx.recv().await {
            if let AgentEvent::Started { session_id, .. } = &event {
                hub.lock().session_id = Some(session_id.clone());
                runs.tables().by_session.insert(session_id.clone(), hub.clone());
                // One session at a time: a plan's steps run one after the other.
                drop(lock.take());
                lock = aria_store::runlock::SessionLock::acquire(&gateway.data_dir, session_id)
                    .map_err(|e| tracing::warn!("session lock: {e}"))
                    .ok();
            }
            if quiet_text && matches!(event, AgentEvent::Text { .. }) {
                continue;
            }
            let mut out = to_event(&gateway, &event);
            // Every state change names its run, as the contract says.
            if out.event == "state"
                && let (Some(map), Some(id)) = (out.data.as_object_mut(), hub.session_id())
            {
                map.entry("session_id").or_insert(Value::String(id));
            }
            hub.publish(out);
        }
        drop(lock);
    })
}

/// Runs the agent and forwards its events to the hub.
pub(crate) async fn drive(
    gateway: &Arc<Gateway>,
    agent: &Agent,
    runs: &Arc<Runs>,
    hub: &Arc<RunHub>,
    conversation_id: &str,
    start: Start,
    quiet_text: bool,
) -> Result<SessionRecord, RunError> {
    let (tx, rx) = mpsc::unbounded_channel::<AgentEvent>();
    let forward = forward(gateway, runs, hub, rx, quiet_text);
    let cancel = hub.cancel.clone();
    let result = match start {
        Start::Message(content) => {
            agent.run(&content, Some(conversation_id.to_owned()), &tx, cancel).await
        }
        Start::MessageInMode(content, mode) => {
            let conversation = Some(conversation_id.to_owned());
            // A chat's mode can only narrow what the conversation's agent allows.
            let mode = agent.config().mode.stricter(mode);
            agent.run_in_mode(&content, conversation, &tx, cancel, mode).await
        }
        Start::Job(content, cap) => {
            let config = agent.config();
            let mut limits = config.limits;
            if let Some(cap) = cap {
                limits.max_cost_usd = limits.max_cost_usd.min(cap);
            }
            let conversation = Some(conversation_id.to_owned());
            agent.run_with(&content, conversation, &tx, cancel, config.mode, limits).await
        }
        Start::Resume(session_id) => agent.resume(&session_id, &tx, cancel).await,
    };
    drop(tx);
    let _ = forward.await;
    result
}

/// A run's event as the API names it.
fn to_event(gateway: &Gateway, event: &AgentEvent) -> Event {
    match event {
        AgentEvent::Started { session_id, conversation_id, resumed } => Event::new(
            "state",
            json!({
                "session_id": session_id,
                "conversation_id": conversation_id,
                "state": "started",
                "resumed": resumed,
            }),
        ),
        AgentEvent::State { state } => Event::new("state", json!({ "state": state })),
        AgentEvent::Text { delta } => Event::new("text", json!({ "delta": delta })),
        AgentEvent::ToolStarted { call_id, name, arguments } => {
            let tier = gateway.agent.tools().get(name).map(|t| t.tier(arguments));
            Event::new(
                "tool_call",
                json!({ "call_id": call_id, "name": name, "arguments": arguments, "tier": tier }),
            )
        }
        AgentEvent::ToolFinished { call_id, name, outcome, summary } => Event::new(
            "tool_result",
            json!({ "call_id": call_id, "name": name, "outcome": outcome, "summary": summary }),
        ),
        AgentEvent::Denied { call_id, name, arguments, reason, hint } => Event::new(
            "tool_result",
            json!({
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "outcome": "denied",
                "summary": reason,
                "reason": reason,
                "hint": hint,
            }),
        ),
        AgentEvent::Warning { message } => Event::new("warning", json!({ "message": message })),
        AgentEvent::Restored { .. } | AgentEvent::Checked { .. } => {
            Event::new("workflow", serde_json::to_value(event).unwrap_or(Value::Null))
        }
    }
}
