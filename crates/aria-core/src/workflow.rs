//! The governed workflow (seed 004 UJ-002, UJ-007): after the model has changed files in a
//! repository (calls that took a snapshot) and says it is done, ARIA runs the repository's
//! checks (lint → build → test); when all pass it commits with a `Type: summary` message, and
//! when one fails it restores the snapshot automatically, tells the model what failed and lets
//! it try once more with a different fix; a second failure ends the run with a report naming
//! the snapshot. The loop only knows the [`Governor`] trait; the profiles, commit and rollback
//! behind it live in `aria-tools` and are wired in `aria-cli`.

use serde::Serialize;

use crate::snapshot::RestorePoint;

/// One check that ran (a command profile such as `lint_project`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckOutcome {
    pub profile: String,
    pub command: String,
    pub passed: bool,
    /// What the model and the user see of its output (already capped).
    pub output: String,
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
    /// Runs the repository's checks in order, stopping after the first failure. Empty when the
    /// repository has no checks (no project detected).
    fn check(&self, repository: &str, session: &str) -> Vec<CheckOutcome>;
    /// The checks [`Governor::check`] would run for the repository, in order, running none.
    fn plan(&self, repository: &str) -> Vec<PlannedCheck>;
    /// Commits every change in the repository with `message` (`Type: summary`).
    fn commit(&self, repository: &str, message: &str) -> Result<WorkflowCommit, String>;
    /// Restores the files of the restore point; returns the files it put back.
    fn restore(&self, point: &RestorePoint, session: &str) -> Result<Vec<String>, String>;
}

/// What the workflow decided for one repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Verdict {
    Committed {
        repository: String,
        snapshot: String,
        checks: Vec<CheckOutcome>,
        commit: WorkflowCommit,
    },
    RolledBack {
        repository: String,
        snapshot: String,
        failed: CheckOutcome,
        restored: Vec<String>,
    },
    /// Checks passed but the commit failed, or the restore failed: the message says which.
    Error {
        repository: String,
        snapshot: String,
        message: String,
    },
    /// The run changed a file that defines what the checks run (a Makefile, `package.json`,
    /// ...) and the user did not approve running them: nothing was run, committed or restored.
    Unchecked {
        repository: String,
        snapshot: String,
        reason: String,
    },
}

impl Verdict {
    /// Checks that failed, or a commit or restore that failed: the model gets its one retry.
    pub fn is_failure(&self) -> bool {
        matches!(self, Verdict::RolledBack { .. } | Verdict::Error { .. })
    }
}

/// Checks, then commits or restores, each repository the run snapshotted.
pub fn govern(
    governor: &dyn Governor,
    points: &[RestorePoint],
    message: &str,
    session: &str,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    for point in points {
        let (repository, snapshot) = (point.repository.clone(), point.id.clone());
        let checks = governor.check(&point.repository, session);
        if checks.is_empty() {
            // No project checks detected: nothing is committed or restored automatically.
            continue;
        }
        match checks.iter().find(|c| !c.passed).cloned() {
            None => match governor.commit(&point.repository, message) {
                Ok(commit) => out.push(Verdict::Committed { repository, snapshot, checks, commit }),
                Err(e) => out.push(Verdict::Error {
                    repository,
                    snapshot,
                    message: format!("the checks passed but the commit failed: {e}"),
                }),
            },
            Some(failed) => match governor.restore(point, session) {
                Ok(restored) => out.push(Verdict::RolledBack { repository, snapshot, failed, restored }),
                Err(e) => out.push(Verdict::Error {
                    repository,
                    snapshot: snapshot.clone(),
                    message: format!(
                        "{} failed and restoring {snapshot} failed too ({e}); restore it with `aria rollback {snapshot}`",
                        failed.profile
                    ),
                }),
            },
        }
    }
    out
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

/// The report shown to the user after the answer (UJ-007's shape).
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
                let names: Vec<&str> = checks.iter().map(|c| c.profile.as_str()).collect();
                if names.is_empty() {
                    text.push_str("Checks: none detected for this repository\n");
                } else {
                    text.push_str(&format!("Checks: all passing ({})\n", names.join(", ")));
                }
                text.push_str(&format!("Snapshot: {snapshot}\n"));
            }
            Verdict::RolledBack { repository, snapshot, failed, .. } => {
                text.push_str(&format!(
                    "❌ Rolled back in {repository}: {} failed ({}).\nChanges reverted to snapshot: {snapshot}\nError: {}\n",
                    failed.profile,
                    failed.command,
                    tail(&failed.output, 1500)
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
mod tests {
    use super::*;

    #[test]
    fn the_commit_message_comes_from_the_answer() {
        assert_eq!(
            commit_message("Done.\nFix: Resolve lint errors in auth.js"),
            "Fix: Resolve lint errors in auth.js"
        );
        assert_eq!(commit_message("I renamed it everywhere."), "Chore: I renamed it everywhere.");
        assert!(aria_tools::check_commit_message(&commit_message(&"x".repeat(300))).is_ok());
        assert_eq!(commit_message(""), "Chore: changes by ARIA");
    }
}
