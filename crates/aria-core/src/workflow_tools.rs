//! [`ToolsGovernor`]: the [`Governor`] built from `aria-tools` — the lint/build/test command
//! profiles detected or configured for the repository, `git_commit`'s commit, and the git
//! snapshots' rollback.

use std::path::Path;
use std::sync::Arc;

use aria_tools::profiles::{BUILD_PROJECT, LINT_PROJECT, RUN_TESTS};
use aria_tools::{Profiles, Snapshots, commit_in, run_profile};

use crate::snapshot::RestorePoint;
use crate::workflow::{CheckOutcome, Governor, PlannedCheck, WorkflowCommit};

/// The checks, in the order they run (seed 004 UJ-002: lint, then build/test).
pub const CHECKS: &[&str] = &[LINT_PROJECT, BUILD_PROJECT, RUN_TESTS];

/// Checks with command profiles, commits with `git_commit`, restores with snapshots.
#[derive(Debug)]
pub struct ToolsGovernor {
    profiles: Arc<Profiles>,
    snapshots: Snapshots,
}

impl ToolsGovernor {
    pub fn new(profiles: Arc<Profiles>, snapshots: Snapshots) -> Self {
        ToolsGovernor { profiles, snapshots }
    }
}

impl Governor for ToolsGovernor {
    /// Each check the repository has (a profile with nothing to run, such as a Makefile
    /// without a `lint` target, is skipped), stopping after the first failure. The workflow's
    /// own runs do not count against the model's five profile runs.
    fn check(&self, repository: &str, _session: &str) -> Vec<CheckOutcome> {
        let mut out = Vec::new();
        for name in CHECKS {
            let Ok(chosen) = self.profiles.choose(name, repository) else { continue };
            let values = Default::default();
            let outcome =
                match run_profile(&chosen.spec, &chosen.cwd, &values, self.profiles.guard()) {
                    Ok(run) => CheckOutcome {
                        profile: (*name).to_owned(),
                        command: run.command.clone(),
                        passed: run.passed(),
                        output: run.render(),
                    },
                    Err(e) => CheckOutcome {
                        profile: (*name).to_owned(),
                        command: chosen.spec.command_line(&values),
                        passed: false,
                        output: e.to_string(),
                    },
                };
            let passed = outcome.passed;
            out.push(outcome);
            if !passed {
                break;
            }
        }
        out
    }

    /// The same choice of profiles as [`ToolsGovernor::check`], described instead of run.
    fn plan(&self, repository: &str) -> Vec<PlannedCheck> {
        CHECKS
            .iter()
            .filter_map(|name| {
                let chosen = self.profiles.choose(name, repository).ok()?;
                Some(PlannedCheck {
                    profile: (*name).to_owned(),
                    command: chosen.spec.command_line(&Default::default()),
                    cwd: chosen.cwd.display().to_string(),
                    timeout_secs: chosen.spec.timeout.as_secs(),
                    network: chosen.spec.network,
                })
            })
            .collect()
    }

    fn commit(&self, repository: &str, message: &str) -> Result<WorkflowCommit, String> {
        let done = commit_in(self.profiles.guard(), Path::new(repository), message, None)
            .map_err(|e| e.to_string())?;
        Ok(WorkflowCommit { id: done.id, files: done.files.into_iter().zip(done.lines).collect() })
    }

    fn restore(&self, point: &RestorePoint, session: &str) -> Result<Vec<String>, String> {
        let rolled = self
            .snapshots
            .rollback(&point.id, Some(Path::new(&point.repository)), None, session)
            .map_err(|e| e.to_string())?;
        Ok(rolled.restored.into_iter().map(|r| r.path).collect())
    }
}
