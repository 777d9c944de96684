//! One run of the loop: a session record, its history, and the steps that move it along the
//! state machine. Every transition goes through [`Run::transition`], which checks the whitelist,
//! audits, then persists; any store failure halts the run.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{
    AuditEvent, ChatRequest, JournalError, Message, MessageMeta, SessionRecord, SessionState, Tier,
    Tool, ToolCall, ToolContext, ToolError, TraceKind, TraceRecord, Usage,
};
use serde_json::{Value, json};
use tokio::time::Instant as TokioInstant;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, RunError};
use crate::events::{AgentEvent, EventSink};
use crate::output::{UntrustedFence, guard_for_model};
use crate::policy::{Decision, decide};

mod approve;
mod context;
mod dry;
mod governed;
mod habits;
mod model;
mod profiles;

/// Why the loop stopped before `Done`.
pub(crate) enum Stop {
    Fail(String),
    Cancel,
    Journal(JournalError),
}

impl From<JournalError> for Stop {
    fn from(e: JournalError) -> Self {
        Stop::Journal(e)
    }
}

/// One tool call on its way through Validating → Executing → Filtering → Updating.
struct Slot {
    call: ToolCall,
    plan: Plan,
}

enum Plan {
    Run {
        tool: Arc<dyn Tool>,
        args: Value,
        tier: Tier,
    },
    Ask {
        tool: Arc<dyn Tool>,
        args: Value,
        tier: Tier,
        /// Why it asks when its own tier would not (`run/profiles.rs`): the question shows
        /// it, and a refusal tells the model.
        why: Option<profiles::Raised>,
    },
    /// `--dry-run`: described (`run/dry.rs`), never run.
    Dry {
        args: Value,
        tier: Tier,
    },
    /// The text the model will see for this call.
    Answered(String),
}

pub(crate) struct Run<'a> {
    agent: &'a Agent,
    session: SessionRecord,
    history: Vec<Message>,
    events: &'a EventSink,
    cancel: CancellationToken,
    deadline: TokioInstant,
    start_iterations: u32,
    start_tokens: u64,
    /// Session-scoped approvals: this tool with these exact arguments, and when it was granted.
    approved: HashMap<(String, String), Instant>,
    /// A tool result of this run was flagged as a possible prompt injection (the id of the call
    /// that returned it). From then on every call policy asks about is asked, whatever was
    /// approved before: the one flag any standing approval consults ([`Run::approved_earlier`]).
    tainted: Option<String>,
    /// The latest tool whose result brought outside text into the conversation, when it came
    /// (at the run's start for one in the history before it), and the call's approval key (name
    /// and arguments; empty for history): from then on, pre-approvals and session approvals
    /// given before it no longer cover irreversible calls — a session approval still covers
    /// the very call whose own output it was — and what the model stores as a memory waits for
    /// the user's confirmation (`outside.rs`).
    outside: Option<(String, Instant, (String, String))>,
    /// Calls whose pre-approval was suspended by outside text (their denial says why).
    suspended: Vec<String>,
    /// Whether a call above the read tier ran to success in this run (something changed).
    changed: bool,
    /// Calls denied in this run (they may be why a change did not happen).
    denials: std::sync::atomic::AtomicUsize,
    /// Milliseconds from the latest model request to its first text or tool call (the latency
    /// a person waits before anything appears), audited with the response.
    first_output_ms: Option<u64>,
    /// Whether the model was already told once that it described a call instead of making it.
    /// The small-model habits this run has already pointed out (each at most once).
    nudged: Vec<&'static str>,
    /// A call written as text or a made-up tool result the last answer was, not yet pointed
    /// out to the model.
    text_call: Option<String>,
    cost_warned: bool,
    period_warned: bool,
    /// The delimiter around tool output for this run (fresh and random per run).
    fence: UntrustedFence,
    /// Restore points of this run not yet checked by the governed workflow.
    points: Vec<crate::RestorePoint>,
    /// The checks' results before the edit, per repository of `points` (`run/governed.rs`).
    baselines: Vec<crate::workflow::Baseline>,
    /// The first restore point of each repository this run took, for the whole run: what the
    /// run changed is compared against them (`run/profiles.rs`).
    run_points: Vec<crate::RestorePoint>,
    /// Calls that ran and may have changed files without a restore point.
    unsnapshotted: Vec<String>,
    /// Whether the governed workflow already gave the model its one retry.
    retried: bool,
    /// `--dry-run`: the changes this run described instead of making.
    dry: Vec<crate::workflow_dry_run::DryWrite>,
    /// The conversation's summary (compaction); loaded with the recall before the first call.
    summary: Option<aria_api::HistorySummary>,
    /// Profile and memories for this run's user message; `None` until the first call.
    recall: Option<context::Recall>,
    /// The tools offered to the model for this run, when a [`crate::ToolSelection`] chose
    /// them (at the first call; tools called later are added).
    offered: Option<Vec<aria_api::ToolSpec>>,
    /// A compaction failed this run: later calls truncate without trying again.
    compaction_failed: bool,
    /// Journal ids of this run's user message and the model's messages, for provenance.
    message_ids: Vec<i64>,
    /// The approval mode of this run: the agent's, or one its front end chose for it
    /// ([`Agent::run_in_mode`](crate::Agent::run_in_mode)).
    mode: aria_api::ApprovalMode,
}

impl<'a> Run<'a> {
    pub(crate) fn new(
        agent: &'a Agent,
        session: SessionRecord,
        history: Vec<Message>,
        events: &'a EventSink,
        cancel: CancellationToken,
    ) -> Self {
        let deadline = TokioInstant::now() + agent.config.limits.session_timeout;
        let outside = crate::outside::first_outside_tool(&history)
            .map(|name| (name.to_owned(), Instant::now(), (String::new(), String::new())));
        Run {
            agent,
            start_iterations: session.iterations,
            start_tokens: session.usage.total(),
            session,
            history,
            events,
            cancel,
            deadline,
            approved: HashMap::new(),
            tainted: None,
            outside,
            suspended: Vec::new(),
            changed: false,
            denials: std::sync::atomic::AtomicUsize::new(0),
            first_output_ms: None,
            nudged: Vec::new(),
            text_call: None,
            cost_warned: false,
            period_warned: false,
            fence: UntrustedFence::random(),
            points: Vec::new(),
            baselines: Vec::new(),
            run_points: Vec::new(),
            unsnapshotted: Vec::new(),
            retried: false,
            dry: Vec::new(),
            summary: None,
            recall: None,
            offered: None,
            compaction_failed: false,
            message_ids: Vec::new(),
            mode: agent.config.mode,
        }
    }

    /// Runs in `mode` instead of the agent's.
    pub(crate) fn with_mode(mut self, mode: aria_api::ApprovalMode) -> Self {
        self.mode = mode;
        self
    }

    /// Notes the journal id of the message that started this run (for memory provenance).
    pub(crate) fn with_user_message_id(mut self, id: i64) -> Self {
        self.message_ids.push(id);
        self
    }

    /// Drives the session to a terminal state.
    pub(crate) async fn start(mut self) -> Result<SessionRecord, RunError> {
        let outcome = self.steps().await;
        let ended = match outcome {
            Ok(()) => Ok(()),
            Err(Stop::Fail(reason)) => self.finish(SessionState::Failed, reason),
            Err(Stop::Cancel) => {
                self.finish(SessionState::Cancelled, "cancelled by the user".to_owned())
            }
            Err(Stop::Journal(e)) => {
                // Best effort: the store just failed, so recording the failure may fail too.
                let _ = self.finish(SessionState::Failed, e.to_string());
                Err(e)
            }
        };
        ended?;
        if self.session.state == SessionState::Done && self.mode != aria_api::ApprovalMode::ReadOnly
        {
            self.agent.extract_later(&self.session, &self.history, &self.message_ids);
        }
        let s = &self.session;
        tracing::info!(
            session = %s.id, state = %s.state, iterations = s.iterations,
            tokens = s.usage.total(), cost_usd = s.cost_usd, error = ?s.error,
            "run ended"
        );
        Ok(self.session)
    }

    async fn steps(&mut self) -> Result<(), Stop> {
        if self.session.state == SessionState::Idle {
            self.transition(SessionState::Planning)?;
        }
        if let Some(answer) = self.pending_final_answer() {
            return self.complete(answer);
        }
        loop {
            let response = self.plan().await?;
            if response.tool_calls.is_empty()
                && let Some((what, note)) = self.habit(&response.text)
            {
                // Small models describe a call instead of making it, answer nothing, or copy a
                // tool result as their answer: told (in this run's context only, not the
                // conversation), they usually do what was asked.
                self.audit("model.nudged", what)?;
                self.history.push(Message::user(note));
                continue;
            }
            if response.tool_calls.is_empty() {
                match self.governed(&response.text).await? {
                    governed::Governed::Nothing => return self.complete(response.text),
                    governed::Governed::Report(r) => {
                        // Streamed too, so a front end that shows the text sees the report.
                        let tail = format!("\n\n{r}");
                        let _ = self.events.send(AgentEvent::Text { delta: tail.clone() });
                        return self.complete(format!("{}{tail}", response.text));
                    }
                    governed::Governed::Retry => continue,
                }
            }
            self.transition(SessionState::Validating)?;
            let definitions =
                if !self.agent.config.dry_run && self.calls_profiles(&response.tool_calls) {
                    self.changed_definitions(None).await
                } else {
                    profiles::Definitions::default()
                };
            let mut slots = self.validate(response.tool_calls, &definitions)?;
            if slots.iter().any(|s| matches!(s.plan, Plan::Dry { .. })) {
                self.describe_dry(&mut slots).await?;
            }
            if slots.iter().any(|s| matches!(s.plan, Plan::Ask { .. })) {
                self.transition(SessionState::AwaitingApproval)?;
                self.ask_approvals(&mut slots).await?;
            }
            if slots.iter().any(|s| matches!(s.plan, Plan::Run { .. })) {
                self.transition(SessionState::Executing)?;
                self.execute(&mut slots).await?;
                self.transition(SessionState::Filtering)?;
            }
            let results = self.filter(slots)?;
            self.transition(SessionState::Updating)?;
            self.update(results)?;
            self.transition(SessionState::Planning)?;
        }
    }

    /// A resumed run whose model had already given its final answer only needs finishing.
    fn pending_final_answer(&self) -> Option<String> {
        let last = self.history.last()?;
        (last.role == aria_api::Role::Assistant && last.tool_calls.is_empty())
            .then(|| last.content.clone())
    }

    fn complete(&mut self, answer: String) -> Result<(), Stop> {
        self.transition(SessionState::Completing)?;
        let answer = crate::output::strip_markers(&answer).into_owned();
        let unfulfilled = self.unfulfilled(&answer).or_else(|| self.unanswered(&answer));
        self.session.answer = Some(answer);
        if let Some(reason) = unfulfilled {
            self.audit("run.unfulfilled", json!({ "reason": reason }))?;
            return Err(Stop::Fail(reason));
        }
        self.transition(SessionState::Done)?;
        self.audit_end()
    }

    fn finish(&mut self, state: SessionState, reason: String) -> Result<(), JournalError> {
        if !self.session.state.can_transition_to(state) {
            return Ok(());
        }
        let from = self.session.state;
        self.session.state = state;
        self.session.error = Some(reason);
        self.audit("session.transition", json!({"from": from, "to": state}))?;
        self.agent.journal.save_session(&self.session)?;
        let _ = self.events.send(AgentEvent::State { state });
        match self.audit_end() {
            Ok(()) | Err(Stop::Fail(_) | Stop::Cancel) => Ok(()),
            Err(Stop::Journal(e)) => Err(e),
        }
    }

    fn audit_end(&mut self) -> Result<(), Stop> {
        let s = &self.session;
        let payload = json!({
            "state": s.state,
            "error": s.error,
            "iterations": s.iterations,
            "usage": s.usage,
            "cost_usd": s.cost_usd,
        });
        self.audit("session.end", payload)?;
        Ok(())
    }

    fn audit(&self, kind: &str, payload: Value) -> Result<u64, JournalError> {
        let actor = if kind.starts_with("tool.") { "agent" } else { "system" };
        self.agent.audit.append(AuditEvent::new(Some(&self.session.id), actor, kind, payload))
    }

    /// The only way the state changes during a run: whitelist, audit, persist, notify.
    fn transition(&mut self, to: SessionState) -> Result<(), Stop> {
        let from = self.session.state;
        from.transition(to).map_err(|illegal| Stop::Fail(illegal.to_string()))?;
        self.audit("session.transition", json!({"from": from, "to": to}))?;
        tracing::debug!(session = %self.session.id, %from, %to, "transition");
        self.session.state = to;
        self.agent.journal.save_session(&self.session)?;
        let _ = self.events.send(AgentEvent::State { state: to });
        Ok(())
    }

    fn check_limits(&mut self) -> Result<(), Stop> {
        let limits = self.session.limits;
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancel);
        }
        if TokioInstant::now() >= self.deadline {
            return Err(Stop::Fail(format!(
                "the run reached its time limit of {} s; raise [limits] session_timeout_secs or split the task",
                limits.session_timeout.as_secs()
            )));
        }
        if self.session.iterations - self.start_iterations >= limits.max_iterations {
            return Err(Stop::Fail(format!(
                "the model made {} calls without giving a final answer (the limit); raise [limits] max_iterations or simplify the task",
                limits.max_iterations
            )));
        }
        let used = self.session.usage.total() - self.start_tokens;
        if used >= limits.max_tokens {
            return Err(Stop::Fail(format!(
                "the run used {used} tokens, reaching its limit of {}; raise [limits] max_tokens or split the task",
                limits.max_tokens
            )));
        }
        if !self.cost_warned && self.session.cost_usd >= 0.8 * limits.max_cost_usd {
            self.cost_warned = true;
            let message = format!(
                "this run has used {:.0} % of its cost cap (USD {:.4} of {:.2})",
                100.0 * self.session.cost_usd / limits.max_cost_usd,
                self.session.cost_usd,
                limits.max_cost_usd
            );
            self.audit("cost.warning", json!({"message": message}))?;
            let _ = self.events.send(AgentEvent::Warning { message });
        }
        Ok(())
    }

    /// Refuses a call whose estimated cost would take the run past its cap, before any request
    /// is made. The estimate is the prompt's input tokens ([`crate::AgentConfig::count_input_tokens`],
    /// else its bytes / 4), plus this session's average reply length as output tokens (exact
    /// counts come from the provider afterwards).
    fn check_cost(&mut self, request: &ChatRequest) -> Result<(), Stop> {
        let Some(price) = self.agent.config.price else { return Ok(()) };
        let cap = self.session.limits.max_cost_usd;
        let done_calls = u64::from(self.session.iterations.saturating_sub(1)).max(1);
        let estimate = price.cost(Usage {
            input_tokens: self.agent.config.count_input_tokens.unwrap_or(estimate_tokens)(request),
            output_tokens: self.session.usage.output_tokens / done_calls,
        });
        if self.session.cost_usd + estimate > cap {
            self.audit(
                "cost.refused",
                json!({"spent_usd": self.session.cost_usd, "estimate_usd": estimate, "cap_usd": cap}),
            )?;
            return Err(Stop::Fail(format!(
                "the next model call (estimated USD {estimate:.4}) would take this run past its cost cap of USD {cap:.2} (spent USD {:.4}); raise it with ARIA_MAX_COST_USD or [limits] max_cost_usd",
                self.session.cost_usd
            )));
        }
        if let Some(guard) = &self.agent.config.spend_guard {
            match guard.check(estimate) {
                Err(message) => {
                    self.audit(
                        "cost.refused",
                        json!({"estimate_usd": estimate, "message": message}),
                    )?;
                    return Err(Stop::Fail(message));
                }
                Ok(Some(message)) if !self.period_warned => {
                    self.period_warned = true;
                    self.audit("cost.warning", json!({"message": message}))?;
                    let _ = self.events.send(AgentEvent::Warning { message });
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }

    /// Validating: schema-check every call and decide what policy allows. A tool that runs
    /// what the project's files define asks when `definitions` (what this run changed) is not
    /// empty (`run/profiles.rs`).
    fn validate(
        &mut self,
        calls: Vec<ToolCall>,
        definitions: &profiles::Definitions,
    ) -> Result<Vec<Slot>, Stop> {
        let config = &self.agent.config;
        let mut slots = Vec::with_capacity(calls.len());
        for call in calls {
            // The same call as one that just failed would fail again: the model is told so.
            if let Some(answer) = self.repeated_failure(&call)? {
                slots.push(Slot { call, plan: Plan::Answered(answer) });
                continue;
            }
            let validated = self.agent.tools.validate(&call.name, &call.arguments);
            // Answered without running: a repeated read, an unjustified memory.
            let screened = match &validated {
                Ok((tool, args)) => self.screen(&call, tool.as_ref(), args)?,
                Err(_) => None,
            };
            let plan = match (validated, screened) {
                (Err(e), _) => {
                    self.audit(
                        "tool.invalid",
                        json!({"call_id": call.id, "name": call.name, "arguments": call.arguments, "error": e.to_string()}),
                    )?;
                    Plan::Answered(format!("error: {e}"))
                }
                (Ok(_), Some(answer)) => Plan::Answered(answer),
                (Ok((tool, mut args)), None) => {
                    // What the model keeps from a turn that read files stays on this machine
                    // (set here, after the schema check: the model cannot set it).
                    if call.name == crate::memory_tools::MEMORY_STORE && self.turn_read_files() {
                        args["private"] = Value::Bool(true);
                    }
                    if call.name == crate::memory_tools::MEMORY_STORE && self.outside.is_some() {
                        args["unconfirmed"] = Value::Bool(true);
                    }
                    // A job proposed after outside text says so in its question and its record.
                    if call.name == "schedule_create"
                        && let Some((tool, _, _)) = &self.outside
                    {
                        args["after_reading"] = Value::String(tool.clone());
                    }
                    // A tool that a person confirms every time asks at least like an
                    // irreversible one (and `read_only` refuses it).
                    let own = if tool.always_confirm() {
                        tool.tier(&args).max(Tier::Irreversible)
                    } else {
                        tool.tier(&args)
                    };
                    let raised = own < Tier::Irreversible
                        && tool.runs_project_definitions()
                        && !definitions.is_empty();
                    let (tier, why) = if raised {
                        self.audit_raised(&call, own, definitions)?;
                        (Tier::Irreversible, Some(definitions.raised(&call.name)))
                    } else {
                        (own, None)
                    };
                    match decide(tier, self.mode, config.dry_run, config.snapshots) {
                        Decision::Allow => Plan::Run { tool, args, tier },
                        // A session approval was given before this change: ask again.
                        Decision::Ask
                            if why.is_none()
                                && !tool.always_confirm()
                                && self.approved_earlier(&call.name, &args, tier) =>
                        {
                            Plan::Run { tool, args, tier }
                        }
                        Decision::Ask => Plan::Ask { tool, args, tier, why },
                        Decision::Refuse(reason) => {
                            self.audit_refusal(&call, &args, tier, "policy", &reason)?;
                            Plan::Answered(format!("refused: {reason}"))
                        }
                        Decision::DryRun => Plan::Dry { args, tier },
                    }
                }
            };
            slots.push(Slot { call, plan });
        }
        Ok(slots)
    }

    /// Executing: run the approved calls one by one, each audited before and after.
    async fn execute(&mut self, slots: &mut [Slot]) -> Result<(), Stop> {
        for slot in slots.iter_mut() {
            let Plan::Run { tool, args, tier } = &slot.plan else { continue };
            let (tool, args, tier) = (Arc::clone(tool), args.clone(), *tier);
            let answer = self.execute_one(&slot.call, tool, args, tier).await?;
            slot.plan = Plan::Answered(answer);
        }
        Ok(())
    }

    async fn execute_one(
        &mut self,
        call: &ToolCall,
        tool: Arc<dyn Tool>,
        args: Value,
        tier: Tier,
    ) -> Result<String, Stop> {
        // A call that asks because of what the run changed is snapshotted on its own tier.
        let own = tool.tier(&args);
        let points = match self.snapshot_before(call, &args, own).await? {
            Ok(points) => points,
            Err(refusal) => return Ok(refusal),
        };
        self.audit(
            "tool.start",
            json!({"call_id": call.id, "name": call.name, "arguments": args, "tier": tier}),
        )?;
        let _ = self.events.send(AgentEvent::ToolStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: args.clone(),
        });
        let ctx =
            ToolContext { session_id: self.session.id.clone(), dry_run: self.agent.config.dry_run };
        let timeout = tool_timeout(self.agent.config.limits.tool_timeout, tool.timeout());
        let started = Instant::now();
        let result = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => None,
            r = tokio::time::timeout(timeout, tool.call(args.clone(), &ctx)) => Some(r),
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let (outcome, answer, detail) = match result {
            None => ("cancelled", String::new(), Value::Null),
            Some(Err(_elapsed)) => (
                "timeout",
                format!(
                    "error: `{}` did not finish within {} s and was stopped",
                    call.name,
                    timeout.as_secs()
                ),
                Value::Null,
            ),
            Some(Ok(Ok(output))) => ("ok", output.content, output.details),
            Some(Ok(Err(ToolError::Refused { reason }))) => {
                self.drop_unchanged(call, points).await?;
                self.trace_tool(call, "refused", duration_ms, json!({"tier": tier}))?;
                self.audit_refusal(call, &args, tier, "guard", &reason)?;
                return Ok(format!("refused: {reason}"));
            }
            Some(Ok(Err(ToolError::Failed { message }))) => {
                ("failed", format!("error: {message}"), Value::Null)
            }
            Some(Ok(Err(ToolError::Fatal { message }))) => ("fatal", message, Value::Null),
        };
        let points = self.drop_unchanged(call, points).await?;
        if own > Tier::Read
            && outcome == "ok"
            && !self.agent.config.dry_run
            && governed::writes_files(&call.name)
        {
            self.changed = true;
        }
        if own > Tier::Read
            && points.is_empty()
            && governed::writes_files(&call.name)
            && matches!(outcome, "ok" | "failed" | "timeout")
        {
            self.note_unsnapshotted(&call.name);
        }
        // The restore point is named in the result, so the model and the user can refer to it.
        let answer = match outcome {
            "ok" | "failed" | "timeout" if !points.is_empty() => {
                format!("{answer}\n{}", crate::snapshot::result_note(&points))
            }
            _ => answer,
        };
        let span = json!({
            "tier": tier,
            "output_chars": answer.chars().count(),
            "snapshots": points.iter().map(|p| &p.id).collect::<Vec<_>>(),
        });
        self.trace_tool(call, outcome, duration_ms, span)?;
        tracing::info!(session = %self.session.id, tool = %call.name, outcome, duration_ms, "tool call");
        self.audit(
            "tool.end",
            json!({"call_id": call.id, "name": call.name, "outcome": outcome, "duration_ms": duration_ms, "output_chars": answer.chars().count(), "details": detail}),
        )?;
        let _ = self.events.send(AgentEvent::ToolFinished {
            call_id: call.id.clone(),
            name: call.name.clone(),
            outcome: outcome.to_owned(),
            summary: first_line(&answer),
        });
        match outcome {
            "cancelled" => Err(Stop::Cancel),
            "fatal" => {
                Err(Stop::Fail(format!("the tool `{}` failed fatally: {answer}", call.name)))
            }
            _ => Ok(answer),
        }
    }

    /// Records a tool call's span; `span` holds its facts (tier, output size, restore points).
    fn trace_tool(
        &self,
        call: &ToolCall,
        outcome: &str,
        duration_ms: u64,
        mut span: Value,
    ) -> Result<(), JournalError> {
        span["call_id"] = json!(call.id);
        self.agent.journal.record_trace(&TraceRecord {
            session_id: self.session.id.clone(),
            kind: TraceKind::ToolCall,
            name: call.name.clone(),
            duration_ms,
            usage: Usage::default(),
            cost_usd: 0.0,
            outcome: outcome.to_owned(),
            detail: span,
        })
    }

    /// Filtering: redact secrets, mark injected instructions, cap and wrap every result as
    /// untrusted data before any model sees it. What the filters found is audited as kinds and
    /// counts, never the text. The first flagged result taints the run (see `tainted`).
    fn filter(&mut self, slots: Vec<Slot>) -> Result<Vec<(ToolCall, String)>, Stop> {
        let max = self.agent.config.limits.max_tool_output_chars;
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            let raw = match slot.plan {
                Plan::Answered(text) => text,
                // Unreachable by construction: every Run/Ask slot was answered above.
                Plan::Run { .. } | Plan::Ask { .. } | Plan::Dry { .. } => {
                    "error: the call was not executed".to_owned()
                }
            };
            let guarded = guard_for_model(
                self.agent.redactor.as_ref(),
                aria_tools::InjectionFilter::shared(),
                &self.fence,
                &raw,
                max,
            );
            for (kind, found) in [
                ("filter.redacted", &guarded.redactions),
                ("filter.injection", &guarded.injections),
            ] {
                if !found.is_empty() {
                    let count: usize = found.values().sum();
                    self.audit(
                        kind,
                        json!({"call_id": slot.call.id, "name": slot.call.name, "count": count, "kinds": found}),
                    )?;
                }
            }
            // The user's own memories are marked like any tool output, but a false alarm on them
            // must not switch off what the user approved for the run: they never taint it.
            let users_own = slot.call.name == crate::memory_tools::MEMORY_SEARCH;
            if crate::outside::brings_outside_text(&slot.call.name) {
                let args = serde_json::from_str::<Value>(&slot.call.arguments).unwrap_or_default();
                let key = approve::approval_key(&slot.call.name, &args);
                self.outside = Some((slot.call.name.clone(), Instant::now(), key));
            }
            if !guarded.injections.is_empty() && self.tainted.is_none() && !users_own {
                self.tainted = Some(slot.call.id.clone());
                self.audit(
                    "run.tainted",
                    json!({"call_id": slot.call.id, "name": slot.call.name, "effect": "every irreversible call is asked for the rest of the run"}),
                )?;
            }
            out.push((slot.call, guarded.text));
        }
        Ok(out)
    }

    /// Updating: the results join the history, in the order of the calls.
    fn update(&mut self, results: Vec<(ToolCall, String)>) -> Result<(), Stop> {
        for (call, text) in results {
            let message = Message::tool_result(call.id, text);
            self.agent.journal.append_message(
                &self.session.id,
                &self.session.conversation_id,
                &message,
                &MessageMeta::default(),
            )?;
            self.history.push(message);
        }
        self.agent.journal.save_session(&self.session)?;
        Ok(())
    }
}

/// A deliberately simple, documented token estimate: four characters per token over every
/// message and tool schema in the request.
fn estimate_tokens(request: &ChatRequest) -> u64 {
    let messages: usize = request
        .messages
        .iter()
        .map(|m| {
            m.content.len()
                + m.tool_calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>()
        })
        .sum();
    let tools: usize =
        request.tools.iter().map(|t| t.description.len() + t.parameters.to_string().len()).sum();
    ((messages + tools) / 4) as u64
}

/// A tool that enforces a longer timeout of its own (a build or test profile) gets it, plus a
/// grace period so its own limit fires first and it can report what ran.
pub(crate) fn tool_timeout(limit: Duration, own: Option<Duration>) -> Duration {
    const GRACE: Duration = Duration::from_secs(5);
    own.map_or(limit, |own| limit.max(own.saturating_add(GRACE)))
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(120).collect();
    if line.chars().count() > 120 || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_with_a_longer_timeout_of_its_own_gets_it_plus_grace() {
        let limit = Duration::from_secs(30);
        assert_eq!(tool_timeout(limit, None), limit);
        assert_eq!(tool_timeout(limit, Some(Duration::from_secs(600))), Duration::from_secs(605));
        assert_eq!(tool_timeout(limit, Some(Duration::from_secs(10))), limit, "never shorter");
    }
}
