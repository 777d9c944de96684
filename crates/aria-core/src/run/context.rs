//! Planning's first half: the request for the next model call, built by [`crate::context`]
//! from the system prompt, the user's profile and recalled memories, the conversation summary
//! and the recent messages; and compaction when history outgrows its budget.
//!
//! Nothing here fails a turn except the store or a cancellation: memory that cannot be
//! searched is left out, a summary that cannot be written falls back to truncation.

use std::time::{Duration, Instant};

use aria_api::{ChatRequest, HistorySummary, Role, Tier, TraceKind, TraceRecord, Usage};
use serde_json::{Value, json};
use tokio::time::Instant as TokioInstant;

use super::{Run, Stop};
use crate::compaction::{check_summary, summary_request};
use crate::context::{Assembled, Budget, Parts, assemble, compaction_cut};
use crate::memory::{MemoryHit, SearchScope};
use crate::memory_policy::relevant;

/// How long recalling memories for a request may take before it is skipped.
const RECALL_TIMEOUT: Duration = Duration::from_secs(15);

/// The profile and the memories recalled for this run's user message.
#[derive(Debug, Default)]
pub(super) struct Recall {
    pub profile: Vec<MemoryHit>,
    pub memories: Vec<MemoryHit>,
}

impl Run<'_> {
    /// The request for the next model call.
    pub(super) async fn build_request(&mut self) -> Result<ChatRequest, Stop> {
        if self.recall.is_none() {
            self.summary = self.agent.journal.load_summary(&self.session.conversation_id)?;
            let recall = self.recall().await?;
            self.recall = Some(recall);
        }
        let tools = self.offered_tools().await?;
        let mut assembled = self.assemble(&tools);
        if assembled.needs_compaction() && !self.compaction_failed && self.compact().await? {
            assembled = self.assemble(&tools);
        }
        if assembled.dropped > 0 {
            self.audit(
                "context.truncated",
                json!({
                    "dropped_messages": assembled.dropped,
                    "history_tokens": assembled.history_tokens,
                    "history_budget": assembled.history_budget,
                }),
            )?;
        }
        let config = &self.agent.config;
        Ok(ChatRequest {
            model: config.model.clone(),
            messages: assembled.messages,
            tools,
            max_tokens: config.max_output_tokens,
            temperature: config.temperature,
        })
    }

    /// Every tool, or the ones [`crate::ToolSelection`] picks for the user's message (chosen
    /// once per run, audited as `tools.selected`), plus any tool called since that message.
    async fn offered_tools(&mut self) -> Result<Vec<aria_api::ToolSpec>, Stop> {
        let mut all = self.agent.tools.specs();
        let Some(selection) = self.agent.config.tool_selection.clone() else { return Ok(all) };
        let withheld: Vec<String> =
            all.iter().filter(|t| self.only_deniable(&t.name)).map(|t| t.name.clone()).collect();
        all.retain(|t| !withheld.contains(&t.name));
        // Calls made since the user's message (this run's, or an interrupted run's on resume).
        let called: Vec<String> = self
            .history
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .flat_map(|m| m.tool_calls.iter().map(|c| c.name.clone()))
            .collect();
        if let Some(offered) = &mut self.offered {
            for spec in all.iter().filter(|t| called.contains(&t.name)) {
                if !offered.iter().any(|o| o.name == spec.name) {
                    offered.push(spec.clone());
                }
            }
            return Ok(offered.clone());
        }
        let query = self.user_message();
        // A question (by its form: "what…?", "show me…") is answered by reading: the tools
        // that change things are not ranked for it ("What did the last commit change?" shares
        // a word with git_commit's name, not with git_log's), though any stays callable.
        if aria_api::classify_request(&query) == aria_api::RequestKind::Question {
            let reads = |name: &str| {
                self.agent
                    .tools
                    .get(name)
                    .is_none_or(|t| t.tier(&json!({})) == aria_api::Tier::Read)
            };
            all.retain(|t| reads(&t.name) || called.contains(&t.name));
        }
        let chosen = selection.select(&query, &all, &called).await;
        self.audit(
            "tools.selected",
            json!({
                "offered": chosen.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
                "of": all.len(),
                "max": selection.max(),
                "ranked_by": chosen.ranked_by,
                "withheld": withheld,
            }),
        )?;
        self.offered = Some(chosen.tools.clone());
        Ok(chosen.tools)
    }

    /// Whether every call of `tool` would need approval in this run while no one can give it
    /// (`aria run`, a command without a terminal) and nothing approves it in advance: offered,
    /// it could only be denied, and a small model shown it picks it (`python_run` to edit a
    /// file). Still callable: a call is decided as any other.
    fn only_deniable(&self, name: &str) -> bool {
        let config = &self.agent.config;
        if self.agent.approver.is_some() {
            return false;
        }
        let Some(tool) = self.agent.tools.get(name) else { return false };
        let least = if tool.always_confirm() {
            Tier::Irreversible
        } else {
            tool.min_tier().max(Tier::Read)
        };
        let decision = crate::policy::decide(least, self.mode, config.dry_run, config.snapshots);
        decision == crate::policy::Decision::Ask
            && config.preapproval.approves(name, &json!({}), least).is_none()
    }

    /// The text of the latest user message (what this run answers).
    fn user_message(&self) -> String {
        self.history
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.clone())
            .unwrap_or_default()
    }

    fn covered(&self) -> usize {
        self.summary
            .as_ref()
            .map_or(0, |s| usize::try_from(s.covers).unwrap_or(usize::MAX).min(self.history.len()))
    }

    fn assemble(&self, tools: &[aria_api::ToolSpec]) -> Assembled {
        let config = &self.agent.config;
        let recall = self.recall.as_ref();
        let parts = Parts {
            model: &config.model,
            system_prompt: &config.system_prompt,
            profile: recall.map_or(&[][..], |r| &r.profile),
            memories: recall.map_or(&[][..], |r| &r.memories),
            summary: self.summary.as_ref().map(|s| s.text.as_str()),
            history: &self.history[self.covered()..],
            tools,
        };
        let budget = Budget::new(config.context_window, config.max_output_tokens);
        assemble(&parts, budget, config.token_counter, &self.fence)
    }

    /// The profile and the memories for the current user message: only relevant ones
    /// ([`crate::relevant`]), at most [`crate::AgentConfig::memory_search_limit`], private ones
    /// only for a model on this machine. Failures are logged and audited, and the run goes on
    /// without them.
    async fn recall(&mut self) -> Result<Recall, Stop> {
        let Some(memory) = self.agent.memory.clone() else { return Ok(Recall::default()) };
        let query = self.user_message();
        let config = &self.agent.config;
        let scope = SearchScope { limit: config.memory_search_limit, private: config.local_model };
        let floor = config.recall_min_similarity;
        let mut below_floor = 0;
        let started = Instant::now();
        let work = async {
            let mut profile = memory.profile(scope.private).await?;
            profile.retain(|hit| scope.private || !hit.private);
            let mut memories = if query.trim().is_empty() {
                Vec::new()
            } else {
                memory.search(&query, scope).await?
            };
            let found = memories.len();
            memories.retain(|hit| relevant(hit, floor) && (scope.private || !hit.private));
            below_floor = found - memories.len();
            Ok::<_, crate::memory::MemoryError>(Recall { profile, memories })
        };
        let result = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(Stop::Cancel),
            r = tokio::time::timeout(RECALL_TIMEOUT, work) => r,
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let recall = match result {
            Ok(Ok(recall)) => recall,
            Ok(Err(e)) => {
                self.trace_recall(duration_ms, "failed", json!({}))?;
                return self.no_recall(e.to_string());
            }
            Err(_) => {
                self.trace_recall(duration_ms, "timeout", json!({}))?;
                return self.no_recall(format!(
                    "memory search took longer than {} s",
                    RECALL_TIMEOUT.as_secs()
                ));
            }
        };
        let found = json!({
            "memories": recall.memories.len(),
            "profile": recall.profile.len(),
            "not_relevant": below_floor,
        });
        self.trace_recall(duration_ms, "ok", found)?;
        self.audit(
            "context.memories",
            json!({
                "profile": recall.profile.iter().map(|m| &m.id).collect::<Vec<_>>(),
                "memories": recall.memories.iter().map(|m| &m.id).collect::<Vec<_>>(),
                "not_relevant": below_floor,
                "min_similarity": floor,
                "private_allowed": scope.private,
            }),
        )?;
        Ok(recall)
    }

    /// The recall's span of the run's trace.
    fn trace_recall(&self, duration_ms: u64, outcome: &str, detail: Value) -> Result<(), Stop> {
        self.agent.journal.record_trace(&TraceRecord {
            session_id: self.session.id.clone(),
            kind: TraceKind::MemoryRecall,
            name: "memory".into(),
            duration_ms,
            usage: Usage::default(),
            cost_usd: 0.0,
            outcome: outcome.to_owned(),
            detail,
        })?;
        Ok(())
    }

    fn no_recall(&mut self, reason: String) -> Result<Recall, Stop> {
        tracing::warn!(session = %self.session.id, "answering without long-term memory: {reason}");
        self.audit("context.memories_unavailable", json!({"reason": reason}))?;
        Ok(Recall::default())
    }

    /// Summarises the oldest [`crate::context::COMPACT_SHARE`] of the history with one model
    /// call and stores the summary. `Ok(false)`: it could not (the caller truncates instead).
    async fn compact(&mut self) -> Result<bool, Stop> {
        let covered = self.covered();
        let model = self.agent.config.model.clone();
        let counter = self.agent.config.token_counter;
        let Some(cut) = compaction_cut(&self.history[covered..], &model, counter) else {
            return Ok(false);
        };
        let previous = self.summary.as_ref().map(|s| s.text.as_str());
        let request = summary_request(&model, previous, &self.history[covered..covered + cut]);
        match self.check_cost(&request) {
            Ok(()) => {}
            Err(Stop::Fail(reason)) => return self.compaction_failed(reason),
            Err(other) => return Err(other),
        }
        let remaining = self.deadline.saturating_duration_since(TokioInstant::now());
        let timeout = self.agent.config.summary_timeout.min(remaining);
        let started = Instant::now();
        let call = self.agent.provider.complete(request);
        let result = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(Stop::Cancel),
            r = tokio::time::timeout(timeout, call) => r,
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let response = match result {
            Err(_) => {
                self.trace_model(
                    model,
                    Usage::default(),
                    0.0,
                    "timeout",
                    duration_ms,
                    compaction(),
                )?;
                let reason = format!("the summary took longer than {} s", timeout.as_secs());
                return self.compaction_failed(reason);
            }
            Ok(Err(e)) => {
                self.trace_model(
                    model,
                    Usage::default(),
                    0.0,
                    e.kind(),
                    duration_ms,
                    compaction(),
                )?;
                return self.compaction_failed(format!("the summary call failed: {e}"));
            }
            Ok(Ok(response)) => response,
        };
        let cost = self.agent.config.price.map_or(0.0, |p| p.cost(response.usage));
        self.session.usage.add(response.usage);
        self.session.cost_usd += cost;
        self.trace_model(model.clone(), response.usage, cost, "ok", duration_ms, compaction())?;
        let text = match check_summary(&response.text, response.tool_calls.len()) {
            Ok(text) => self.agent.redactor.redact(&text).into_owned(),
            Err(e) => return self.compaction_failed(e.to_string()),
        };
        let summary = HistorySummary { text, covers: (covered + cut) as u64, model };
        let persisted = match self
            .agent
            .journal
            .save_summary(&self.session.conversation_id, &summary)
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(session = %self.session.id, "the summary is used but not kept: {e}");
                false
            }
        };
        self.audit(
            "context.compacted",
            json!({
                "summarised_messages": cut,
                "covers": summary.covers,
                "summary_chars": summary.text.chars().count(),
                "model": summary.model,
                "usage": response.usage,
                "persisted": persisted,
            }),
        )?;
        self.agent.journal.save_session(&self.session)?;
        self.summary = Some(summary);
        Ok(true)
    }

    fn compaction_failed(&mut self, reason: String) -> Result<bool, Stop> {
        tracing::warn!(session = %self.session.id, "compaction failed, truncating instead: {reason}");
        self.compaction_failed = true;
        self.audit("context.compaction_failed", json!({"reason": reason, "fallback": "truncate"}))?;
        Ok(false)
    }
}

/// What a compaction call's span says it was for.
fn compaction() -> Value {
    json!({"purpose": "compaction"})
}
