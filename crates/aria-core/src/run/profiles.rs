//! Profiles after model edits: the lint, build and test profiles run
//! what the project's files define (a Makefile's recipes, `package.json` scripts, Cargo build
//! scripts, test configuration). When this run changed such a file, a call to such a tool asks
//! first, as an irreversible action, instead of running on its own tier, and so does the
//! governed workflow's check step: otherwise the model chooses, unasked, what runs — which
//! `make` through `shell_execute` already asks about.
//!
//! What the run changed is read from its restore points: each repository is compared, by
//! content, with the first snapshot this run took of it. A call that changed things without a
//! snapshot (snapshots off, or an approved irreversible command) cannot be listed, so it counts
//! as a change of everything.

use std::path::Path;

use aria_api::ToolCall;
use serde_json::{Value, json};

use super::{Run, Stop};
use crate::events::{ApprovalAnswer, ApprovalRequest};

/// The name the governed workflow's check step is asked about under.
pub(crate) const CHECKS_APPROVAL: &str = "governed_checks";

/// Why one call asks when its own tier would not.
#[derive(Debug, Clone)]
pub(super) struct Raised {
    /// Shown to the user with the question.
    pub(super) reason: String,
    /// Told to the model when the user did not approve.
    pub(super) refusal: String,
}

/// What this run changed that defines what a profile runs.
#[derive(Debug, Default)]
pub(super) struct Definitions {
    /// Changed files that define commands, relative to their repository.
    files: Vec<String>,
    /// Why changes could not be listed (a call without a snapshot, a failed comparison).
    unknown: Vec<String>,
}

impl Definitions {
    pub(super) fn is_empty(&self) -> bool {
        self.files.is_empty() && self.unknown.is_empty()
    }

    /// What changed, as the end of a sentence: "this run changed Makefile, web/package.json".
    fn changed(&self) -> String {
        let mut parts = Vec::new();
        if !self.files.is_empty() {
            parts.push(format!("this run changed {}", self.files.join(", ")));
        }
        if !self.unknown.is_empty() {
            parts.push(format!(
                "this run made changes ARIA cannot list ({})",
                self.unknown.join("; ")
            ));
        }
        parts.join(", and ")
    }

    /// Why a call to `tool` asks, for the user and for the model.
    pub(super) fn raised(&self, tool: &str) -> Raised {
        Raised { reason: self.reason(tool), refusal: self.refusal(tool) }
    }

    /// Why `tool` asks: shown to the user with the question.
    fn reason(&self, tool: &str) -> String {
        format!(
            "`{tool}` runs commands that the project's files define, and {}, so it asks before running",
            self.changed()
        )
    }

    /// What the model is told when the user did not approve.
    fn refusal(&self, tool: &str) -> String {
        format!(
            "refused: `{tool}` runs commands that the project's files define (Makefile, \
             package.json scripts, build scripts, test configuration), and {}; running it \
             needs the user's approval, which was not given. Ask the user to review that change \
             and run it themselves, or put those files back as they were",
            self.changed()
        )
    }

    /// Why the governed workflow's checks did not run, for its report.
    pub(super) fn unchecked(&self) -> String {
        format!(
            "the checks run commands that the project's files define, and {}, and the user did not approve running them",
            self.changed()
        )
    }

    /// For the audit log.
    fn details(&self) -> Value {
        json!({"files": self.files, "unknown": self.unknown})
    }
}

impl Run<'_> {
    /// Whether any of `calls` is to a tool that runs what the project's files define.
    pub(super) fn calls_profiles(&self, calls: &[ToolCall]) -> bool {
        calls
            .iter()
            .any(|c| self.agent.tools.get(&c.name).is_some_and(|t| t.runs_project_definitions()))
    }

    /// Notes a call that ran and may have changed files without a restore point.
    pub(super) fn note_unsnapshotted(&mut self, tool: &str) {
        let note = format!("`{tool}` ran without a snapshot");
        if !self.unsnapshotted.contains(&note) {
            self.unsnapshotted.push(note);
        }
    }

    /// What this run changed that defines commands: in `repository` only, or anywhere.
    pub(super) async fn changed_definitions(&self, repository: Option<&str>) -> Definitions {
        let mut found = Definitions { files: Vec::new(), unknown: self.unsnapshotted.clone() };
        let points = self
            .run_points
            .iter()
            .filter(|p| repository.is_none_or(|r| p.repository == r))
            .collect::<Vec<_>>();
        if points.is_empty() {
            return found;
        }
        let Some(snapshotter) = &self.agent.config.snapshotter else {
            found.unknown.push("no snapshotter to compare with".into());
            return found;
        };
        for point in points {
            match crate::snapshot::changed_since(snapshotter, point).await {
                Ok(paths) => {
                    let repo = Path::new(&point.repository);
                    found.files.extend(
                        paths
                            .iter()
                            .filter(|p| aria_tools::profiles::defines_commands(p))
                            .map(|p| p.strip_prefix(repo).unwrap_or(p).display().to_string()),
                    );
                }
                Err(e) => found.unknown.push(format!("{}: {e}", point.repository)),
            }
        }
        found
    }

    /// Audits that `name`'s call asks because of `definitions`.
    pub(super) fn audit_raised(
        &self,
        call: &ToolCall,
        from: aria_api::Tier,
        definitions: &Definitions,
    ) -> Result<(), Stop> {
        self.audit(
            "policy.raised",
            json!({"call_id": call.id, "name": call.name, "from": from,
                   "to": aria_api::Tier::Irreversible, "changed": definitions.details()}),
        )?;
        Ok(())
    }

    /// The governed workflow's check step for `repository`, after the run changed what the
    /// checks run: asks the user (audited); `true` when they approved.
    pub(super) async fn approve_checks(
        &self,
        repository: &str,
        checks: Vec<String>,
        definitions: &Definitions,
    ) -> Result<bool, Stop> {
        let arguments = json!({"repository": repository, "checks": checks});
        let reason = definitions.reason("the governed workflow's checks");
        self.audit(
            "policy.raised",
            json!({"name": CHECKS_APPROVAL, "arguments": arguments, "to": aria_api::Tier::Irreversible,
                   "changed": definitions.details()}),
        )?;
        let request = ApprovalRequest {
            session_id: self.session.id.clone(),
            tool: CHECKS_APPROVAL.into(),
            arguments: arguments.clone(),
            tier: aria_api::Tier::Irreversible,
            reason: Some(reason),
        };
        let answer = self.ask_user(request).await?;
        self.audit(
            "approval.answer",
            json!({"name": CHECKS_APPROVAL, "arguments": arguments, "answer": answer}),
        )?;
        Ok(answer != ApprovalAnswer::Deny)
    }
}
