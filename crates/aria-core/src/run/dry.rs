//! `--dry-run` in the loop ([`crate::workflow_dry_run`]): each call the policy held back is
//! described and audited with the restore point it would get; after the final answer, the
//! governed workflow's checks, commit and restore are planned, audited and reported. Nothing
//! runs: no tool, no snapshot, no profile, no commit.

use aria_api::Tier;
use serde_json::json;

use super::{Plan, Run, Slot, Stop};
use crate::events::AgentEvent;
use crate::workflow;
use crate::workflow_dry_run::{DryRunPlan, DryWrite, RepositoryPlan, dry_run_report};

impl Run<'_> {
    /// Validating, in a dry run: answers every [`Plan::Dry`] slot with what it would do.
    pub(super) async fn describe_dry(&mut self, slots: &mut [Slot]) -> Result<(), Stop> {
        for slot in slots.iter_mut() {
            let Plan::Dry { args, tier } = &slot.plan else { continue };
            let (args, tier) = (args.clone(), *tier);
            let call = &slot.call;
            let mut write = DryWrite::new(&call.name, tier.as_str(), &args);
            if tier == Tier::RecoverableWrite
                && let Some(s) = &self.agent.config.snapshotter
            {
                write.snapshots =
                    crate::snapshot::plan(s, &call.name, &args).await.map_err(|e| e.0);
            }
            let (snapshots, snapshot_error) = write.snapshot_fields();
            self.audit(
                "tool.dry_run",
                json!({"call_id": call.id, "name": call.name, "arguments": args, "tier": tier,
                       "snapshots": snapshots, "snapshot_error": snapshot_error}),
            )?;
            let mut answer = format!(
                "[dry run] not executed: `{}` with {} ({} action); nothing was changed",
                call.name,
                args,
                tier.as_str()
            );
            if let Ok(points) = &write.snapshots {
                for p in points {
                    answer.push_str(&format!(
                        "\nwould snapshot {} first ({})",
                        p.repository, p.branch
                    ));
                }
            }
            let _ = self.events.send(AgentEvent::ToolFinished {
                call_id: call.id.clone(),
                name: call.name.clone(),
                outcome: "dry_run".into(),
                summary: "not executed (dry run)".into(),
            });
            self.dry.push(write);
            slot.plan = Plan::Answered(answer);
        }
        Ok(())
    }

    /// After the final answer of a dry run that held back changes: the whole plan, audited as
    /// `workflow.dry_run`, as the text appended to the answer. `None` when nothing was held
    /// back.
    pub(super) async fn dry_run_plan(&mut self, answer: &str) -> Result<Option<String>, Stop> {
        if self.dry.is_empty() {
            return Ok(None);
        }
        let writes = std::mem::take(&mut self.dry);
        let workflow = match self.agent.config.governor.clone() {
            None => None,
            Some(governor) => {
                // The first restore point per repository, as `remember_points` keeps them.
                let mut firsts: Vec<(String, String)> = Vec::new();
                for p in writes.iter().filter_map(|w| w.snapshots.as_ref().ok()).flatten() {
                    if !firsts.iter().any(|(r, _)| *r == p.repository) {
                        firsts.push((p.repository.clone(), p.branch.clone()));
                    }
                }
                let message = workflow::commit_message(answer);
                let planned = tokio::task::spawn_blocking(move || {
                    firsts
                        .into_iter()
                        .map(|(repository, snapshot)| RepositoryPlan {
                            checks: governor.plan(&repository),
                            repository,
                            snapshot,
                            commit_message: message.clone(),
                        })
                        .collect::<Vec<_>>()
                })
                .await
                .map_err(|e| {
                    Stop::Fail(format!("planning the dry run stopped unexpectedly ({e})"))
                })?;
                Some(planned)
            }
        };
        let plan = DryRunPlan { writes, workflow };
        self.audit("workflow.dry_run", json!(plan))?;
        Ok(Some(dry_run_report(&plan)))
    }
}
