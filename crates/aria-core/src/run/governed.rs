//! The governed workflow's place in the loop ([`crate::workflow`]): the restore point taken
//! before each recoverable write, with the checks' results on that tree (the baseline,
//! `workflow_baseline.rs`) when it starts a repository's round of edits, and, when the model
//! answers without tool calls after snapshotted writes, check, then commit, restore or keep
//! (or, in a dry run, the plan of it all).

use aria_api::{Message, MessageMeta, Tier, ToolCall};
use serde_json::{Value, json};

use super::{Run, Stop};
use crate::AgentEvent;
use crate::workflow::{self, Verdict};

/// What happens to a final answer.
pub(super) enum Governed {
    /// No snapshotted writes, or no governor: the answer stands.
    Nothing,
    /// Checks ran; the answer is completed with this report.
    Report(String),
    /// The checks failed the first time; the model was told (in the history) and gets one
    /// more attempt.
    Retry,
}

impl Run<'_> {
    /// Remembers the first restore point per repository since the last check, and for the
    /// whole run. Returns the points that start a round of edits (the first since the last
    /// check in their repository).
    /// Keeps the restore points of `call` that guard a change, and discards those the call
    /// changed nothing after (a failed edit, an edit to the same text): no empty snapshot is
    /// left behind. A point whose changes cannot be listed is kept. Audited as
    /// `tool.snapshot_discarded`.
    pub(super) async fn drop_unchanged(
        &mut self,
        call: &ToolCall,
        points: Vec<crate::RestorePoint>,
    ) -> Result<Vec<crate::RestorePoint>, Stop> {
        let Some(snapshotter) = self.agent.config.snapshotter.clone() else { return Ok(points) };
        let mut kept = Vec::with_capacity(points.len());
        for point in points {
            let unchanged = matches!(
                crate::snapshot::changed_since(&snapshotter, &point).await,
                Ok(files) if files.is_empty()
            );
            if !unchanged {
                kept.push(point);
                continue;
            }
            match crate::snapshot::discard(&snapshotter, &point).await {
                Ok(()) => {
                    self.points.retain(|p| p.id != point.id);
                    self.run_points.retain(|p| p.id != point.id);
                    self.audit(
                        "tool.snapshot_discarded",
                        json!({"call_id": call.id, "name": call.name, "snapshot": point.id, "repository": point.repository, "reason": "the call changed no file"}),
                    )?;
                }
                Err(e) => {
                    tracing::warn!(snapshot = %point.id, "an empty snapshot stays: {e}");
                    kept.push(point);
                }
            }
        }
        Ok(kept)
    }

    pub(super) fn remember_points(
        &mut self,
        points: &[crate::RestorePoint],
    ) -> Vec<crate::RestorePoint> {
        let mut first = Vec::new();
        for p in points {
            if !self.points.iter().any(|q| q.repository == p.repository) {
                self.points.push(p.clone());
                first.push(p.clone());
            }
            if !self.run_points.iter().any(|q| q.repository == p.repository) {
                self.run_points.push(p.clone());
            }
        }
        first
    }

    /// Before the first edit of a round in `point`'s repository (the snapshot just taken, the
    /// write not yet run): each check's result on that tree, run now or remembered, for
    /// [`workflow::govern`] to judge the results after the edit against. Audited as
    /// `workflow.baseline`. When this run already changed what the checks run, they do not run
    /// here without the user's approval (the check step asks): only remembered results count.
    async fn take_baseline(&mut self, point: &crate::RestorePoint) -> Result<(), Stop> {
        let Some(governor) = self.agent.config.governor.clone() else { return Ok(()) };
        let may_run = if self.changed_definitions(Some(&point.repository)).await.is_empty() {
            Ok(())
        } else {
            Err("this run changed files that define what the checks run (or made changes ARIA \
                 cannot list), so they do not run before the edit without the user's approval"
                .to_owned())
        };
        let memory = std::sync::Arc::clone(&self.agent.check_memory);
        let (repository, session) = (point.repository.clone(), self.session.id.clone());
        tracing::info!(%repository, "checking the tree before the edit");
        let taken = tokio::task::spawn_blocking(move || {
            workflow::baseline(governor.as_ref(), &memory, &repository, &session, may_run)
        })
        .await
        .map_err(|e| Stop::Fail(format!("the governed workflow stopped unexpectedly ({e})")))?;
        let Some(taken) = taken else { return Ok(()) };
        let checks: Vec<Value> = taken
            .checks
            .iter()
            .map(|c| {
                json!({
                    "check": c.profile,
                    "command": c.command,
                    "status": c.status,
                    "reason": c.reason,
                })
            })
            .collect();
        self.audit(
            "workflow.baseline",
            json!({
                "repository": taken.repository,
                "snapshot": point.id,
                "state": taken.state,
                "reused": taken.reused,
                "not_run": taken.not_run,
                "checks": checks,
            }),
        )?;
        self.baselines.retain(|b| b.repository != taken.repository);
        self.baselines.push(taken);
        Ok(())
    }

    pub(super) async fn governed(&mut self, answer: &str) -> Result<Governed, Stop> {
        if self.agent.config.dry_run {
            return Ok(match self.dry_run_plan(answer).await? {
                Some(plan) => Governed::Report(plan),
                None => Governed::Nothing,
            });
        }
        let Some(governor) = self.agent.config.governor.clone() else {
            return Ok(Governed::Nothing);
        };
        if self.points.is_empty() {
            return Ok(Governed::Nothing);
        }
        let points = std::mem::take(&mut self.points);
        let mut baselines = std::mem::take(&mut self.baselines);
        let message = workflow::commit_message(answer);
        let mut verdicts = Vec::new();
        for point in points {
            // The checks run what the repository's files define: if this run changed those,
            // the user decides whether they run (`run/profiles.rs`).
            let changed = self.changed_definitions(Some(&point.repository)).await;
            if !changed.is_empty() {
                let checks = planned_checks(&governor, &point.repository).await?;
                if !self.approve_checks(&point.repository, checks, &changed).await? {
                    verdicts.push(Verdict::Unchecked {
                        repository: point.repository.clone(),
                        snapshot: point.id.clone(),
                        reason: changed.unchecked(),
                    });
                    continue;
                }
            }
            let before = baselines
                .iter()
                .position(|b| b.repository == point.repository)
                .map(|i| baselines.swap_remove(i));
            let (governor, message, session) =
                (governor.clone(), message.clone(), self.session.id.clone());
            let memory = std::sync::Arc::clone(&self.agent.check_memory);
            let done = tokio::task::spawn_blocking(move || {
                workflow::govern(
                    governor.as_ref(),
                    &memory,
                    &point,
                    before.as_ref(),
                    &message,
                    &session,
                )
            })
            .await
            .map_err(|e| Stop::Fail(format!("the governed workflow stopped unexpectedly ({e})")))?;
            verdicts.extend(done);
        }
        for v in &verdicts {
            let kind = match v {
                Verdict::Committed { .. } => "workflow.commit",
                Verdict::RolledBack { .. } => "workflow.rollback",
                Verdict::Kept { .. } => "workflow.kept",
                Verdict::Error { .. } => "workflow.error",
                Verdict::Unchecked { .. } => "workflow.unchecked",
            };
            self.audit(kind, json!(v))?;
            if let Verdict::Committed { repository, snapshot, checks, .. }
            | Verdict::RolledBack { repository, snapshot, checks, .. }
            | Verdict::Kept { repository, snapshot, checks } = v
            {
                let _ = self.events.send(AgentEvent::Checked {
                    repository: repository.clone(),
                    snapshot: snapshot.clone(),
                    checks: checks.clone(),
                });
            }
            if let Verdict::RolledBack { repository, snapshot, failed, restored, .. } = v {
                let _ = self.events.send(AgentEvent::Restored {
                    check: failed.profile.clone(),
                    snapshot: snapshot.clone(),
                    repository: repository.clone(),
                    files: restored.clone(),
                });
            }
        }
        let failed = verdicts.iter().any(Verdict::is_failure);
        if failed && !self.retried {
            self.retried = true;
            let prompt = workflow::retry_prompt(&verdicts);
            let message = Message::user(prompt);
            self.agent.journal.append_message(
                &self.session.id,
                &self.session.conversation_id,
                &message,
                &MessageMeta::default(),
            )?;
            self.history.push(message);
            return Ok(Governed::Retry);
        }
        Ok(Governed::Report(workflow::report(&verdicts)))
    }

    /// Before a recoverable write: snapshot what it may change and audit the restore points.
    /// `Ok(Ok(points))`: the restore points taken (none when nothing needed one);
    /// `Ok(Err(answer))`: the snapshot failed (or snapshots are on with no snapshotter), so
    /// the call must not run and `answer` tells the model why.
    pub(super) async fn snapshot_before(
        &mut self,
        call: &ToolCall,
        args: &Value,
        tier: Tier,
    ) -> Result<Result<Vec<crate::RestorePoint>, String>, Stop> {
        let config = &self.agent.config;
        // `memory_store` writes ARIA's own store (undone with `aria memories forget`), never a
        // file under a root: there is nothing to snapshot, and no repository to create.
        if tier != Tier::RecoverableWrite || config.dry_run || !writes_files(&call.name) {
            return Ok(Ok(Vec::new()));
        }
        let taken = match &config.snapshotter {
            Some(s) => crate::snapshot::take(s, &call.name, args, &self.session.id).await,
            None if config.snapshots => Err(crate::snapshot::SnapshotFailed(
                "snapshots are on but no snapshotter is installed (a bug in ARIA's setup)".into(),
            )),
            // Snapshots are off: the policy asked the user before this write.
            None => return Ok(Ok(Vec::new())),
        };
        match taken {
            Ok(points) => {
                let first = self.remember_points(&points);
                self.audit(
                    "tool.snapshot",
                    json!({"call_id": call.id, "name": call.name, "snapshots": points}),
                )?;
                for point in &first {
                    self.take_baseline(point).await?;
                }
                Ok(Ok(points))
            }
            Err(e) => {
                self.trace_tool(call, "snapshot_failed", 0, json!({"error": e.0}))?;
                self.audit(
                    "tool.snapshot_failed",
                    json!({"call_id": call.id, "name": call.name, "error": e.0}),
                )?;
                Ok(Err(format!(
                    "error: not run: the snapshot that makes this change undoable failed, so \
                     nothing was changed: {e}"
                )))
            }
        }
    }
}

/// The command lines of the checks the governor would run for `repository` (for the question).
async fn planned_checks(
    governor: &std::sync::Arc<dyn workflow::Governor>,
    repository: &str,
) -> Result<Vec<String>, Stop> {
    let (governor, repository) = (governor.clone(), repository.to_owned());
    let plan = tokio::task::spawn_blocking(move || governor.plan(&repository))
        .await
        .map_err(|e| Stop::Fail(format!("the governed workflow stopped unexpectedly ({e})")))?;
    Ok(plan.into_iter().map(|c| format!("{}: {} (in {})", c.profile, c.command, c.cwd)).collect())
}

pub(super) use crate::snapshot::writes_files;
