//! The agent: what one run needs, and the two ways to start one (a new task, or a resume).

use std::sync::Arc;
use std::time::Duration;

use aria_api::{
    ApprovalMode, AuditEvent, AuditSink, ChatRequest, Journal, JournalError, Limits, Message,
    MessageMeta, NewSession, Provider, Redact, Role, SessionRecord, SessionState, Usage,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::context::TokenCounter;
use crate::events::{AgentEvent, Approver, EventSink};
use crate::memory::MemoryBackend;
use crate::memory_extract::Background;
use crate::registry::ToolRegistry;
use crate::run::Run;
use crate::snapshot::Snapshotter;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Price {
    pub fn cost(&self, usage: Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// Spend limits beyond one run (per day, per month). The loop asks before every priced model
/// call, with the call's estimated cost, so the limits bind every run that goes through an
/// [`Agent`] — interactive, scripted or scheduled.
pub trait SpendGuard: Send + Sync + std::fmt::Debug {
    /// `Err(message)`: refuse the call before any request is made (the message names the cap
    /// and how to raise it). `Ok(Some(warning))`: allow it and warn the user once per run.
    fn check(&self, estimate_usd: f64) -> Result<Option<String>, String>;
}

/// The model that answered a call, with its price (`None`: not known; the call is then charged
/// at [`AgentConfig::price`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub model: String,
    pub price: Option<Price>,
    /// The backend that answered (`openai`, `ollama`, …), when known.
    pub backend: Option<String>,
    /// Whether a fallback route answered instead of the primary.
    pub fallback: bool,
    /// Tries the call took before it was answered, over every route (0: not known).
    pub tries: u32,
}

/// Which model answered, when the provider routes between several (a fallback chain). After
/// each model call the loop asks it, and records the call's trace, cost and message under the
/// model that answered instead of the configured one. The pre-call cost check stays at
/// [`AgentConfig::price`] (a chain's highest), since the answering route is not known yet.
pub trait AnsweredBy: Send + Sync + std::fmt::Debug {
    /// The model that answered the most recent call through the agent's provider; `None`: not
    /// known (the configured model and price are used).
    fn last_answer(&self) -> Option<Answer>;
}

/// Settings of one agent. Limits here come from configuration; the model cannot change them.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub model: String,
    pub system_prompt: String,
    pub limits: Limits,
    pub mode: ApprovalMode,
    pub dry_run: bool,
    /// `None` for models with no known price (local models cost nothing).
    pub price: Option<Price>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    /// The agent profile this agent runs as (recorded in `session.start`), if one was chosen.
    pub agent: Option<String>,
    /// How long an approval question waits before it counts as "no".
    pub approval_timeout: Duration,
    /// Per-day and per-month caps; `None`: only the per-task cap applies.
    pub spend_guard: Option<Arc<dyn SpendGuard>>,
    /// Whether recoverable writes are snapshotted before they run. Off until a snapshotter is
    /// configured: then `governed` mode asks before a recoverable write, as it has no undo.
    /// When on, a recoverable write runs only after [`AgentConfig::snapshotter`] took its
    /// snapshot; with no snapshotter it does not run at all (fail closed).
    pub snapshots: bool,
    /// Takes the snapshots before recoverable writes; set with [`AgentConfig::with_snapshotter`].
    pub snapshotter: Option<Arc<dyn Snapshotter>>,
    /// The governed workflow (check → commit or restore) after snapshotted writes; `None`: off.
    pub governor: Option<Arc<dyn crate::workflow::Governor>>,
    /// Which route answered, for a provider that falls back; `None`: always `model`.
    pub answered_by: Option<Arc<dyn AnsweredBy>>,
    /// Counts a request's input tokens for the pre-call cost check (e.g. tiktoken for OpenAI
    /// models); `None`: the built-in estimate of a quarter token per byte.
    pub count_input_tokens: Option<fn(&ChatRequest) -> u64>,
    /// The model's context window in tokens; `None`: unknown (no compaction, the router's
    /// planner is the only guard).
    pub context_window: Option<u64>,
    /// Token counts for context building (`aria_models::tokens` in the binary).
    pub token_counter: TokenCounter,
    /// How long a compaction summary may take before the turn truncates instead.
    pub summary_timeout: Duration,
    /// The most memories recalled for one user message (after the relevance floor).
    pub memory_search_limit: usize,
    /// Automatic recall keeps a memory only when its vector is at least this similar to the
    /// message (see [`crate::relevant`]).
    pub recall_min_similarity: f64,
    /// Whether every model this agent calls runs on this machine (the embedded model, Ollama,
    /// a server on loopback). Only then do private memories reach the model, through recall or
    /// `memory_search`. Off by default: privacy fails closed.
    pub local_model: bool,
    /// Whether finished turns are mined for memories (on by default; never in `--dry-run` or
    /// `read_only` mode, and only with a memory backend).
    pub extract_memories: bool,
    /// How long one extraction may take.
    pub extraction_timeout: Duration,
    /// Offer the model only the tools that best fit the user's message (small models); `None`
    /// offers every tool.
    pub tool_selection: Option<Arc<crate::ToolSelection>>,
    /// What the user approved in advance (`--allow`, `[policy] allow`, `--yes`); never used
    /// once the run is tainted by a flagged tool result.
    pub preapproval: crate::Preapproval,
    /// The directories the tools work in, recorded in `session.start` so that a resumed run
    /// works in the same place (the front end checks them on resume).
    pub roots: Vec<String>,
}

impl AgentConfig {
    /// Installs the snapshotter and turns snapshots on: `governed` mode then runs recoverable
    /// writes without asking, each after its snapshot.
    pub fn with_snapshotter(mut self, snapshotter: Arc<dyn Snapshotter>) -> Self {
        self.snapshotter = Some(snapshotter);
        self.snapshots = true;
        self
    }

    pub fn new(model: impl Into<String>, system_prompt: impl Into<String>) -> Self {
        AgentConfig {
            model: model.into(),
            system_prompt: system_prompt.into(),
            limits: Limits::default(),
            mode: ApprovalMode::default(),
            dry_run: false,
            price: None,
            temperature: None,
            agent: None,
            max_output_tokens: None,
            approval_timeout: Duration::from_secs(60),
            spend_guard: None,
            snapshots: false,
            snapshotter: None,
            governor: None,
            answered_by: None,
            count_input_tokens: None,
            context_window: None,
            token_counter: TokenCounter::default(),
            summary_timeout: Duration::from_secs(60),
            memory_search_limit: 10,
            recall_min_similarity: crate::memory_policy::DEFAULT_RECALL_MIN_SIMILARITY,
            local_model: false,
            extract_memories: true,
            extraction_timeout: Duration::from_secs(60),
            tool_selection: None,
            preapproval: crate::Preapproval::default(),
            roots: Vec::new(),
        }
    }
}

/// A run could not start, or its record could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The store failed; the run was halted rather than continue unrecorded.
    #[error("{0}; the run was halted so that nothing happens unaudited")]
    Journal(#[from] JournalError),
    #[error("there is no session `{0}`; `aria sessions list` shows the known ones")]
    UnknownSession(String),
    #[error(
        "session `{id}` is {state} and cannot be resumed; only interrupted or failed runs can be"
    )]
    NotResumable { id: String, state: SessionState },
}

/// Everything a run needs, wired by the composition root.
pub struct Agent {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: Arc<ToolRegistry>,
    pub(crate) journal: Arc<dyn Journal>,
    pub(crate) audit: Arc<dyn AuditSink>,
    pub(crate) redactor: Arc<dyn Redact>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) memory: Option<Arc<dyn MemoryBackend>>,
    pub(crate) background: Background,
    /// Recent results of the governed workflow's checks by tree state, shared by this agent's
    /// runs so a check is not run again before an edit on a tree it just ran on.
    pub(crate) check_memory: Arc<crate::workflow::CheckMemory>,
    pub(crate) config: AgentConfig,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider.name())
            .field("tools", &self.tools)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Agent {
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: Arc<ToolRegistry>,
        journal: Arc<dyn Journal>,
        audit: Arc<dyn AuditSink>,
        redactor: Arc<dyn Redact>,
        config: AgentConfig,
    ) -> Self {
        Agent {
            provider,
            tools,
            journal,
            audit,
            redactor,
            approver: None,
            memory: None,
            background: Background::default(),
            check_memory: Arc::default(),
            config,
        }
    }

    /// Gives the agent long-term memory: recalled into every request, and filled from
    /// finished turns when [`AgentConfig::extract_memories`] is on.
    pub fn with_memory(mut self, memory: Arc<dyn MemoryBackend>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Waits up to `timeout` for background work (memory extraction) started so far, so a
    /// process can exit without cutting it off. `true` when everything finished.
    pub async fn finish_background(&self, timeout: Duration) -> bool {
        self.background.drain(timeout).await
    }

    /// Whether finished turns are mined for memories.
    fn extracts(&self) -> bool {
        self.config.extract_memories
            && !self.config.dry_run
            && self.config.mode != ApprovalMode::ReadOnly
            && self.memory.is_some()
    }

    /// Starts memory extraction for a finished turn in the background; the turn does not wait.
    pub(crate) fn extract_later(
        &self,
        session: &SessionRecord,
        history: &[Message],
        message_ids: &[i64],
    ) {
        let Some(memory) = self.memory.clone().filter(|_| self.extracts()) else { return };
        let Some(start) = history.iter().rposition(|m| m.role == Role::User) else { return };
        let user = &history[start];
        // A turn that read files may have put their content in the answer: what is extracted
        // from it stays on this machine.
        let private = crate::memory_policy::turn_read_files(&history[start..]);
        let unconfirmed = crate::outside::first_outside_tool(history).is_some();
        let job = crate::memory_extract::Job {
            provider: Arc::clone(&self.provider),
            memory,
            audit: Arc::clone(&self.audit),
            journal: Arc::clone(&self.journal),
            redactor: Arc::clone(&self.redactor),
            spend_guard: self.config.spend_guard.clone(),
            price: self.config.price,
            answered_by: self.config.answered_by.clone(),
            model: self.config.model.clone(),
            timeout: self.config.extraction_timeout,
            session_id: session.id.clone(),
            conversation_id: session.conversation_id.clone(),
            message_ids: message_ids.to_vec(),
            user: user.content.clone(),
            answer: session.answer.clone().unwrap_or_default(),
            tool_output: history[start..]
                .iter()
                .filter(|m| m.role == Role::Tool)
                .map(|m| m.content.clone())
                .collect(),
            private,
            unconfirmed,
            system_prompt: self.config.system_prompt.clone(),
        };
        self.background.spawn(job);
    }

    /// Sets who is asked when a call needs approval. Without one, such calls are denied.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// Runs one task to a terminal state. `Err` only when the store fails; every other failure
    /// ends in a session whose state is `failed` or `cancelled` with its reason.
    pub async fn run(
        &self,
        task: &str,
        conversation_id: Option<String>,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<SessionRecord, RunError> {
        self.run_in_mode(task, conversation_id, events, cancel, self.config.mode).await
    }

    /// [`Agent::run`] in another approval mode (a front end's per-chat choice, e.g. Telegram's
    /// `/mode`). The mode is recorded in `session.start`; a resumed run uses the agent's.
    pub async fn run_in_mode(
        &self,
        task: &str,
        conversation_id: Option<String>,
        events: &EventSink,
        cancel: CancellationToken,
        mode: ApprovalMode,
    ) -> Result<SessionRecord, RunError> {
        self.run_with(task, conversation_id, events, cancel, mode, self.config.limits).await
    }

    /// [`Agent::run_in_mode`] under other limits (a scheduled job's own cost cap). The limits
    /// are the session's: recorded in `session.start` and enforced for this run; a resumed run
    /// goes on under the agent's.
    pub async fn run_with(
        &self,
        task: &str,
        conversation_id: Option<String>,
        events: &EventSink,
        cancel: CancellationToken,
        mode: ApprovalMode,
        limits: Limits,
    ) -> Result<SessionRecord, RunError> {
        let session = self.journal.create_session(&NewSession {
            conversation_id,
            task: task.to_owned(),
            provider: self.provider.name().to_owned(),
            model: self.config.model.clone(),
            limits,
        })?;
        self.audit.append(AuditEvent::new(
            Some(&session.id),
            "user",
            "session.start",
            json!({
                "task": task,
                "conversation_id": session.conversation_id,
                "provider": session.provider,
                "model": session.model,
                "limits": session.limits,
                "mode": mode.as_str(),
                "dry_run": self.config.dry_run,
                "roots": self.config.roots,
                "agent": self.config.agent,
            }),
        ))?;
        let mut history = self.journal.conversation_messages(&session.conversation_id)?;
        // The outbound filter applies to the user's own words too: a pasted key never
        // reaches a model or the store.
        let user = Message::user(self.redactor.redact(task).into_owned());
        let user_id = self.journal.append_message(
            &session.id,
            &session.conversation_id,
            &user,
            &MessageMeta::default(),
        )?;
        history.push(user);
        let _ = events.send(AgentEvent::Started {
            session_id: session.id.clone(),
            conversation_id: session.conversation_id.clone(),
            resumed: false,
        });
        Run::new(self, session, history, events, cancel)
            .with_user_message_id(user_id)
            .with_mode(mode)
            .start()
            .await
    }

    /// Resumes an interrupted or failed session from its persisted messages. Tool calls that
    /// were in flight when the process died are answered as interrupted, never silently re-run.
    pub async fn resume(
        &self,
        session_id: &str,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<SessionRecord, RunError> {
        let mut session = self
            .journal
            .load_session(session_id)?
            .ok_or_else(|| RunError::UnknownSession(session_id.to_owned()))?;
        let from = session.state;
        let to = from
            .resume()
            .map_err(|_| RunError::NotResumable { id: session.id.clone(), state: from })?;
        let mut history = self.journal.conversation_messages(&session.conversation_id)?;
        self.answer_interrupted_calls(&session, &mut history)?;
        // Model and limits may change on resume (a run that failed on its backend or its cost
        // cap must be resumable): what it goes on with is recorded, and what changed as
        // `changed: {field: [before, after]}`.
        let limits = self.config.limits;
        let mut changed = serde_json::Map::new();
        if session.model != self.config.model {
            changed.insert("model".into(), json!([session.model, self.config.model]));
        }
        if session.limits != limits {
            changed.insert("limits".into(), json!([session.limits, limits]));
        }
        self.audit.append(AuditEvent::new(
            Some(&session.id),
            "user",
            "session.resume",
            json!({
                "from": from,
                "to": to,
                "iterations": session.iterations,
                "model": self.config.model,
                "limits": limits,
                "mode": self.config.mode.as_str(),
                "roots": self.config.roots,
                "changed": changed,
            }),
        ))?;
        if !changed.is_empty() {
            session.model = self.config.model.clone();
            session.limits = limits;
        }
        session.state = to;
        session.error = None;
        self.journal.save_session(&session)?;
        let _ = events.send(AgentEvent::Started {
            session_id: session.id.clone(),
            conversation_id: session.conversation_id.clone(),
            resumed: true,
        });
        Run::new(self, session, history, events, cancel).start().await
    }

    fn answer_interrupted_calls(
        &self,
        session: &SessionRecord,
        history: &mut Vec<Message>,
    ) -> Result<(), RunError> {
        let Some(last_call_turn) =
            history.iter().rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
        else {
            return Ok(());
        };
        let answered: Vec<String> =
            history[last_call_turn + 1..].iter().filter_map(|m| m.tool_call_id.clone()).collect();
        let missing: Vec<_> = history[last_call_turn]
            .tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id))
            .cloned()
            .collect();
        for call in missing {
            let note = format!(
                "error: the call to `{}` was interrupted when ARIA stopped unexpectedly; whether it \
                 had any effect is unknown, so check before calling it again",
                call.name
            );
            let message = Message::tool_result(&call.id, note);
            self.audit.append(AuditEvent::new(
                Some(&session.id),
                "system",
                "tool.interrupted",
                json!({"call_id": call.id, "name": call.name}),
            ))?;
            self.journal.append_message(
                &session.id,
                &session.conversation_id,
                &message,
                &MessageMeta::default(),
            )?;
            history.push(message);
        }
        Ok(())
    }
}

/// How long a persona's rewrite may take before the answer is kept as it was.
pub const RESTYLE_TIMEOUT: Duration = Duration::from_secs(60);

impl Agent {
    /// `answer` of session `session_id` in `persona`'s words when the rewrite keeps every fact,
    /// else `answer` as it is (see [`crate::restyle`]). Audited either way as
    /// `persona.restyle` (actor `persona`), with the reason when the answer was kept. The
    /// journal is not touched: the conversation keeps the run's own answer.
    pub async fn restyle(
        &self,
        session_id: &str,
        persona: &crate::Persona,
        answer: &str,
    ) -> String {
        let restyled = crate::restyle(
            self.provider.as_ref(),
            &self.config.model,
            persona,
            answer,
            self.redactor.as_ref(),
            RESTYLE_TIMEOUT,
        )
        .await;
        let (shown, payload) = match restyled {
            crate::Restyled::Rewritten(text) => {
                let payload = json!({"persona": persona.name, "outcome": "rewritten",
                                     "chars": text.chars().count()});
                (text, payload)
            }
            crate::Restyled::Kept { reason } => {
                tracing::info!(persona = %persona.name, %reason, "a persona's rewrite was not used");
                let payload = json!({"persona": persona.name, "outcome": "kept", "reason": reason});
                (answer.to_owned(), payload)
            }
        };
        let event = AuditEvent::new(Some(session_id), "persona", "persona.restyle", payload);
        if let Err(e) = self.audit.append(event) {
            tracing::warn!("could not audit a persona's rewrite: {e}");
        }
        shown
    }
}
