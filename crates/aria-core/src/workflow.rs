//! The governed workflow: after the model has changed files in a
//! repository (calls that took a snapshot) and says it is done, ARIA runs the repository's
//! checks (lint → build → test); when all pass it commits with a `Type: summary` message, and
//! when the edit broke one it restores the snapshot automatically, tells the model what failed
//! and lets it try once more with a different fix; a second failure ends the run with a report
//! naming the snapshot. The loop only knows the [`Governor`] trait; the profiles, commit and
//! rollback behind it live in `aria-tools` and are wired in `aria-cli`.
//!
//! A check is judged against its result on the tree *before* the edit
//! (`workflow_baseline.rs` takes that baseline when the snapshot is taken, or reuses a recent
//! result for the same tree): only a check that passed before and fails after restores. One
//! that was already failing, or that could not run at all (its program is not installed, the
//! sandbox refused it), is reported as such and never blamed on the edit; the change then stays
//! in the working tree, uncommitted, since ARIA commits only when every check passes.

use serde::Serialize;

pub use crate::workflow_baseline::{Baseline, CheckMemory, baseline};

use crate::snapshot::RestorePoint;

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Exit status 0 within its time limit.
    Passed,
    /// It ran and failed (a non-zero exit status, a signal or its time limit).
    Failed,
    /// It could not run at all: its program (or one its recipe calls) is not installed, or the
    /// sandbox refused it. Says nothing about the code, so never the edit's fault.
    CouldNotRun,
}

impl CheckStatus {
    /// `passed`, `failed`, `could_not_run`: the names `--json` output uses.
    pub fn label(self) -> &'static str {
        match self {
            CheckStatus::Passed => "passed",
            CheckStatus::Failed => "failed",
            CheckStatus::CouldNotRun => "could_not_run",
        }
    }
}

/// One check that ran (a command profile such as `lint_project`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckOutcome {
    pub profile: String,
    pub command: String,
    pub status: CheckStatus,
    /// Why it could not run (`golangci-lint is not installed`); set only when `status` is
    /// [`CheckStatus::CouldNotRun`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the model and the user see of its output (already capped).
    pub output: String,
}

impl CheckOutcome {
    pub fn passed(&self) -> bool {
        self.status == CheckStatus::Passed
    }
}

/// What the workflow made of one check, comparing its result after the edit with the one
/// before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    /// It passes after the edit.
    Passed,
    /// It fails after the edit and passed before it, or its result before is not known (then
    /// the old rule holds: a failing check restores). The only judgement that restores.
    Broken,
    /// It fails after the edit and failed before it too: not the edit's fault.
    AlreadyFailing,
    /// It could not run after the edit (see [`CheckStatus::CouldNotRun`]): not the edit's
    /// fault.
    CouldNotRun,
}

/// One check's result before and after the edit, as reported to the user (`aria run --json`
/// lists these as `checks: [{check, before, after, judgement, note, ...}]`) and audited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// The profile's name (`lint_project`).
    pub check: String,
    pub command: String,
    /// Its result on the tree before the edit; `None` when not known (it did not run before
    /// the edit and no recent result for that tree was remembered).
    pub before: Option<CheckStatus>,
    pub after: CheckStatus,
    pub judgement: Judgement,
    /// The judgement in words: `already failing before the edit`, `could not run:
    /// golangci-lint is not installed`.
    pub note: String,
}

impl CheckReport {
    /// Judges `after` against the result `before` the edit.
    pub fn new(before: Option<CheckStatus>, after: &CheckOutcome) -> Self {
        let (judgement, note) = match (before, after.status) {
            (_, CheckStatus::Passed) => (Judgement::Passed, "passed".to_owned()),
            (_, CheckStatus::CouldNotRun) => (
                Judgement::CouldNotRun,
                format!(
                    "could not run: {}",
                    after.reason.as_deref().unwrap_or("the program did not start")
                ),
            ),
            (Some(CheckStatus::Failed), CheckStatus::Failed) => {
                (Judgement::AlreadyFailing, "already failing before the edit".to_owned())
            }
            (Some(CheckStatus::CouldNotRun), CheckStatus::Failed) => {
                (Judgement::Broken, "could not run before the edit, and fails after it".to_owned())
            }
            (Some(CheckStatus::Passed), CheckStatus::Failed) => {
                (Judgement::Broken, "passed before the edit and fails after it".to_owned())
            }
            (_, CheckStatus::Failed) => (
                Judgement::Broken,
                "fails after the edit (its result before the edit is not known)".to_owned(),
            ),
        };
        CheckReport {
            check: after.profile.clone(),
            command: after.command.clone(),
            before,
            after: after.status,
            judgement,
            note,
        }
    }
}

/// A check the workflow would run (`--dry-run`): the exact command line and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedCheck {
    pub profile: String,
    /// The program and its arguments, as run (no shell): `cargo clippy --all-targets`.
    pub command: String,
    /// The working directory it would run in.
    pub cwd: String,
    pub timeout_secs: u64,
    pub network: bool,
}

/// A commit the workflow made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkflowCommit {
    pub id: String,
    /// Files changed and how many lines of each (added + removed).
    pub files: Vec<(String, usize)>,
}

/// Checks, commits and restores one repository. Blocking: the loop calls it off the runtime.
pub trait Governor: Send + Sync + std::fmt::Debug {
    /// Runs the repository's checks in order, as the tree is now; after each, `go_on` says
    /// whether to run the next. Empty when the repository has no checks (no project
    /// detected). A check that cannot run at all is reported as
    /// [`CheckStatus::CouldNotRun`], never as failed.
    fn check(
        &self,
        repository: &str,
        session: &str,
        go_on: &mut dyn FnMut(&CheckOutcome) -> bool,
    ) -> Vec<CheckOutcome>;
    /// The checks [`Governor::check`] would run for the repository, in order, running none.
    fn plan(&self, repository: &str) -> Vec<PlannedCheck>;
    /// Commits every change in the repository with `message` (`Type: summary`).
    fn commit(&self, repository: &str, message: &str) -> Result<WorkflowCommit, String>;
    /// Restores the files of the restore point; returns the files it put back.
    fn restore(&self, point: &RestorePoint, session: &str) -> Result<Vec<String>, String>;
    /// An id of the repository's files as they are now (equal ids, equal content), under
    /// which check results are remembered and reused ([`CheckMemory`]). The default, `None`,
    /// says it cannot tell, so no result is ever reused.
    fn state(&self, repository: &str) -> Option<String> {
        let _ = repository;
        None
    }
}

/// What the workflow decided for one repository. Each verdict that ran checks lists them,
/// judged against their results before the edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Every check passed: the change was committed.
    Committed {
        repository: String,
        snapshot: String,
        checks: Vec<CheckReport>,
        commit: WorkflowCommit,
    },
    /// The edit broke a check (`failed`: it passed before and fails now): the snapshot was
    /// restored.
    RolledBack {
        repository: String,
        snapshot: String,
        failed: CheckOutcome,
        restored: Vec<String>,
        checks: Vec<CheckReport>,
    },
    /// No check was broken by the edit, but not all pass: some were already failing before
    /// it or could not run. Nothing was restored or committed; the change stays in the
    /// working tree.
    Kept { repository: String, snapshot: String, checks: Vec<CheckReport> },
    /// Checks passed but the commit failed, or the restore failed: the message says which.
    Error { repository: String, snapshot: String, message: String },
    /// The run changed a file that defines what the checks run (a Makefile, `package.json`,
    /// ...) and the user did not approve running them: nothing was run, committed or restored.
    Unchecked { repository: String, snapshot: String, reason: String },
}

impl Verdict {
    /// Checks that failed, or a commit or restore that failed: the model gets its one retry.
    pub fn is_failure(&self) -> bool {
        matches!(self, Verdict::RolledBack { .. } | Verdict::Error { .. })
    }

    /// The checks that ran, judged (empty when none ran).
    pub fn checks(&self) -> &[CheckReport] {
        match self {
            Verdict::Committed { checks, .. }
            | Verdict::RolledBack { checks, .. }
            | Verdict::Kept { checks, .. } => checks,
            Verdict::Error { .. } | Verdict::Unchecked { .. } => &[],
        }
    }
}

/// Checks the repository of `point` after the edit, judging each check against `before`
/// (its results before the edit, when known), then commits (all pass), restores (the edit
/// broke one: checks stop at the first) or keeps the change uncommitted (the others). The
/// results are remembered under the tree's state for the next baseline. `None` when the
/// repository has no checks: nothing is committed or restored automatically.
pub fn govern(
    governor: &dyn Governor,
    memory: &CheckMemory,
    point: &RestorePoint,
    before: Option<&Baseline>,
    message: &str,
    session: &str,
) -> Option<Verdict> {
    let (repository, snapshot) = (point.repository.clone(), point.id.clone());
    let was = |profile: &str| before.and_then(|b| b.status_of(profile));
    let state = governor.state(&repository);
    let outcomes = governor.check(&repository, session, &mut |after| {
        CheckReport::new(was(&after.profile), after).judgement != Judgement::Broken
    });
    if outcomes.is_empty() {
        return None;
    }
    if let Some(state) = &state {
        memory.remember(&repository, state, &outcomes, std::time::Instant::now());
    }
    let checks: Vec<CheckReport> =
        outcomes.iter().map(|o| CheckReport::new(was(&o.profile), o)).collect();
    let broken = checks.iter().position(|c| c.judgement == Judgement::Broken);
    if let Some(i) = broken {
        let failed = outcomes[i].clone();
        return Some(match governor.restore(point, session) {
            Ok(restored) => Verdict::RolledBack { repository, snapshot, failed, restored, checks },
            Err(e) => Verdict::Error {
                repository,
                snapshot: snapshot.clone(),
                message: format!(
                    "{} failed and restoring {snapshot} failed too ({e}); restore it with `aria rollback {snapshot}`",
                    failed.profile
                ),
            },
        });
    }
    if checks.iter().any(|c| c.judgement != Judgement::Passed) {
        return Some(Verdict::Kept { repository, snapshot, checks });
    }
    Some(match governor.commit(&repository, message) {
        Ok(commit) => Verdict::Committed { repository, snapshot, checks, commit },
        Err(e) => Verdict::Error {
            repository,
            snapshot,
            message: format!("the checks passed but the commit failed: {e}"),
        },
    })
}

/// The commit message: the first line of the answer that reads `Type: summary`, else
/// `Chore: ` and the answer's first line (cut to fit).
pub fn commit_message(answer: &str) -> String {
    if let Some(line) =
        answer.lines().map(str::trim).find(|l| aria_tools::check_commit_message(l).is_ok())
    {
        return line.to_owned();
    }
    let first = answer.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("changes by ARIA");
    let summary: String = first.chars().take(80).collect();
    format!("Chore: {summary}")
}

/// The report shown to the user after the answer: per repository, what was committed,
/// restored or left uncommitted, with the checks and the snapshot.
pub fn report(verdicts: &[Verdict]) -> String {
    let mut text = String::new();
    for v in verdicts {
        match v {
            Verdict::Committed { repository, snapshot, checks, commit } => {
                text.push_str(&format!(
                    "✅ Committed {} in {repository}\nFiles changed: {}\n",
                    &commit.id[..commit.id.len().min(10)],
                    commit.files.len()
                ));
                for (file, lines) in &commit.files {
                    text.push_str(&format!("- {file} ({lines} lines)\n"));
                }
                let names: Vec<&str> = checks.iter().map(|c| c.check.as_str()).collect();
                if names.is_empty() {
                    text.push_str("Checks: none detected for this repository\n");
                } else {
                    text.push_str(&format!("Checks: all passing ({})\n", names.join(", ")));
                }
                text.push_str(&format!("Snapshot: {snapshot}\n"));
            }
            Verdict::RolledBack { repository, snapshot, failed, checks, .. } => {
                let why = checks
                    .iter()
                    .find(|c| c.judgement == Judgement::Broken)
                    .map_or(String::new(), |c| format!(": it {}", c.note));
                text.push_str(&format!(
                    "❌ Rolled back in {repository}: {} failed ({}){why}.\nChanges reverted to snapshot: {snapshot}\nError: {}\n",
                    failed.profile,
                    failed.command,
                    tail(&failed.output, 1500)
                ));
                not_the_edits_fault(checks, &mut text);
            }
            Verdict::Kept { repository, snapshot, checks } => {
                text.push_str(&format!(
                    "⚠️ Not committed in {repository}: the edit broke no check, but not all \
                     pass:\n"
                ));
                not_the_edits_fault(checks, &mut text);
                let passing: Vec<&str> = checks
                    .iter()
                    .filter(|c| c.judgement == Judgement::Passed)
                    .map(|c| c.check.as_str())
                    .collect();
                if !passing.is_empty() {
                    text.push_str(&format!("Passing: {}\n", passing.join(", ")));
                }
                text.push_str(&format!(
                    "Nothing was restored. The changes are in the working tree, uncommitted: \
                     review them and commit, or undo them with `aria rollback {snapshot}`.\n"
                ));
            }
            Verdict::Error { repository, snapshot, message } => {
                text.push_str(&format!("❌ {repository}: {message} (snapshot {snapshot})\n"));
            }
            Verdict::Unchecked { repository, snapshot, reason } => {
                text.push_str(&format!(
                    "⚠️ Not checked or committed in {repository}: {reason}.\nThe changes are in \
                     the working tree, uncommitted: review them, run the checks yourself and \
                     commit, or undo them with `aria rollback {snapshot}`.\n"
                ));
            }
        }
    }
    text
}

/// What the model is told after a failed attempt, so it may try one different fix.
pub fn retry_prompt(verdicts: &[Verdict]) -> String {
    format!(
        "[ARIA governed workflow] Your changes did not pass the project's checks, so they were \
         rolled back automatically:\n{}\nYou may try ONE different fix now (the same fix will \
         fail again), or answer without changing files.",
        report(verdicts)
    )
}

/// One line per check that failed or could not run without being the edit's fault.
fn not_the_edits_fault(checks: &[CheckReport], text: &mut String) {
    for c in checks {
        if matches!(c.judgement, Judgement::AlreadyFailing | Judgement::CouldNotRun) {
            text.push_str(&format!("- {} ({}): {}\n", c.check, c.command, c.note));
        }
    }
}

fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests;
