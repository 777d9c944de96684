//! The governed workflow's place in the loop ([`crate::workflow`]): when the model answers
//! without tool calls after snapshotted writes, check, then commit or restore.

use aria_api::{Message, MessageMeta};
use serde_json::json;

use super::{Run, Stop};
use crate::workflow::{self, Verdict};

/// What happens to a final answer.
pub(super) enum Governed {
    /// No snapshotted writes, no governor, or a dry run: the answer stands.
    Nothing,
    /// Checks ran; the answer is completed with this report.
    Report(String),
    /// The checks failed the first time; the model was told (in the history) and gets one
    /// more attempt.
    Retry,
}

impl Run<'_> {
    /// Remembers the first restore point per repository since the last check.
    pub(super) fn remember_points(&mut self, points: &[crate::RestorePoint]) {
        for p in points {
            if !self.points.iter().any(|q| q.repository == p.repository) {
                self.points.push(p.clone());
            }
        }
    }

    pub(super) async fn governed(&mut self, answer: &str) -> Result<Governed, Stop> {
        let Some(governor) = self.agent.config.governor.clone() else {
            return Ok(Governed::Nothing);
        };
        if self.points.is_empty() || self.agent.config.dry_run {
            return Ok(Governed::Nothing);
        }
        let points = std::mem::take(&mut self.points);
        let message = workflow::commit_message(answer);
        let session = self.session.id.clone();
        let verdicts = tokio::task::spawn_blocking(move || {
            workflow::govern(governor.as_ref(), &points, &message, &session)
        })
        .await
        .map_err(|e| Stop::Fail(format!("the governed workflow stopped unexpectedly ({e})")))?;
        for v in &verdicts {
            let kind = match v {
                Verdict::Committed { .. } => "workflow.commit",
                Verdict::RolledBack { .. } => "workflow.rollback",
                Verdict::Error { .. } => "workflow.error",
            };
            self.audit(kind, json!(v))?;
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
}
