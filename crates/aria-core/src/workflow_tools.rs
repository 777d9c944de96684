//! [`ToolsGovernor`]: the [`Governor`] built from `aria-tools` — the lint/build/test command
//! profiles detected or configured for the repository, `git_commit`'s commit, and the git
//! snapshots' rollback.

use std::path::Path;
use std::sync::Arc;

use aria_tools::profiles::{
    BUILD_PROJECT, Chosen, LINT_PROJECT, ProfileRun, RUN_TESTS, find_program,
};
use aria_tools::{Profiles, Snapshots, commit_in, run_profile};

use crate::snapshot::RestorePoint;
use crate::workflow::{CheckOutcome, CheckStatus, Governor, PlannedCheck, WorkflowCommit};

/// The checks, in the order they run: lint, then build, then test (the quickest to fail first).
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

    /// Runs one chosen check. A program that is not installed, a sandbox that will not start
    /// it, or a recipe that calls a missing program (exit status 127 or 126, `make`'s
    /// `Error 127`) is [`CheckStatus::CouldNotRun`], not a failure.
    fn run_one(&self, name: &str, chosen: &Chosen) -> CheckOutcome {
        let values = Default::default();
        let command = chosen.spec.command_line(&values);
        if find_program(&chosen.spec.program).is_none() {
            return CheckOutcome {
                profile: name.to_owned(),
                command,
                status: CheckStatus::CouldNotRun,
                reason: Some(format!("{} is not installed", chosen.spec.program)),
                output: String::new(),
            };
        }
        match run_profile(&chosen.spec, &chosen.cwd, &values, self.profiles.guard()) {
            Ok(run) => {
                let missing = if run.passed() { None } else { could_not_run(&run) };
                let status = match (run.passed(), &missing) {
                    (true, _) => CheckStatus::Passed,
                    (false, Some(_)) => CheckStatus::CouldNotRun,
                    (false, None) => CheckStatus::Failed,
                };
                CheckOutcome {
                    profile: name.to_owned(),
                    output: run.render(),
                    command: run.command,
                    status,
                    reason: missing,
                }
            }
            Err(e) => CheckOutcome {
                profile: name.to_owned(),
                command,
                status: CheckStatus::CouldNotRun,
                reason: Some(e.to_string()),
                output: e.to_string(),
            },
        }
    }
}

/// Why a failed run is one that could not run at all, if it is: the shell's exit status 127
/// (command not found) or 126 (found, not executable: permission denied, or refused by the
/// sandbox), directly or as `make`'s `Error 127`/`Error 126` from a recipe. Names the program
/// when the output does (`golangci-lint is not installed`).
pub(crate) fn could_not_run(run: &ProfileRun) -> Option<String> {
    if run.timed_out {
        return None;
    }
    let text = format!("{}\n{}", run.stderr, run.stdout);
    let from_make = |code: &str| {
        text.lines().any(|l| {
            let l = l.trim_end();
            l.starts_with("make") && l.contains("***") && l.ends_with(&format!("Error {code}"))
        })
    };
    let code = match run.exit_code {
        Some(c @ (126 | 127)) => c,
        _ if from_make("127") => 127,
        _ if from_make("126") => 126,
        _ => return None,
    };
    let program = missing_program(&text, code);
    Some(match (code, program) {
        (127, Some(p)) => format!("{p} is not installed"),
        (127, None) => "a program it runs is not installed (exit status 127)".to_owned(),
        (_, Some(p)) => format!("{p} could not be executed (permission denied)"),
        (_, None) => {
            "a program it runs could not be executed (exit status 126: permission denied, or \
             refused by the sandbox)"
                .to_owned()
        }
    })
}

/// The program a shell or `make` said it could not find (127) or execute (126):
/// `make: golangci-lint: No such file or directory`, `sh: 1: eslint: not found`,
/// `bash: line 1: tsc: command not found`, `env: 'jest': No such file or directory`.
fn missing_program(text: &str, code: i32) -> Option<String> {
    let endings: &[&str] = if code == 127 {
        &[": command not found", ": not found", ": No such file or directory"]
    } else {
        &[": Permission denied"]
    };
    text.lines().find_map(|line| {
        let line = line.trim_end();
        let head = endings.iter().find_map(|e| line.strip_suffix(e))?;
        // `make: golangci-lint` → `golangci-lint`; the shell's own prefixes go with it.
        let name = head.rsplit(": ").next()?.trim().trim_matches(|c| c == '\'' || c == '"');
        let plausible = !name.is_empty()
            && !name.contains(char::is_whitespace)
            && head.contains(": ")
            && !name.starts_with("line ");
        plausible.then(|| name.to_owned())
    })
}

impl Governor for ToolsGovernor {
    /// Each check the repository has (a profile with nothing to run, such as a Makefile
    /// without a `lint` target, is skipped), while `go_on` says so. The workflow's own runs do
    /// not count against the model's five profile runs.
    fn check(
        &self,
        repository: &str,
        _session: &str,
        go_on: &mut dyn FnMut(&CheckOutcome) -> bool,
    ) -> Vec<CheckOutcome> {
        let mut out = Vec::new();
        for name in CHECKS {
            let Ok(chosen) = self.profiles.choose(name, repository) else { continue };
            let outcome = self.run_one(name, &chosen);
            let next = go_on(&outcome);
            out.push(outcome);
            if !next {
                break;
            }
        }
        out
    }

    fn state(&self, repository: &str) -> Option<String> {
        match self.snapshots.state_id(Path::new(repository)) {
            Ok(id) => Some(id),
            Err(e) => {
                tracing::warn!(%repository, error = %e, "cannot tell the tree's state: check results are not reused");
                None
            }
        }
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    fn run(exit: i32, stdout: &str, stderr: &str) -> ProfileRun {
        ProfileRun {
            profile: "lint_project".into(),
            command: "/usr/bin/make lint".into(),
            cwd: PathBuf::from("/repo"),
            exit_code: Some(exit),
            signal: None,
            timed_out: false,
            stdout: stdout.into(),
            stderr: stderr.into(),
            stdout_truncated: false,
            stderr_truncated: false,
            elapsed: Duration::from_millis(5),
        }
    }

    #[test]
    fn a_recipe_calling_a_missing_program_could_not_run() {
        // GNU make running `golangci-lint run` when it is not installed.
        let make = run(
            2,
            "golangci-lint run\n",
            "make: golangci-lint: No such file or directory\nmake: *** [Makefile:2: lint] Error 127\n",
        );
        assert_eq!(could_not_run(&make).as_deref(), Some("golangci-lint is not installed"));
        for (stderr, program) in [
            ("sh: 1: eslint: not found\n", "eslint"),
            ("bash: line 1: tsc: command not found\n", "tsc"),
            ("/bin/sh: golangci-lint: command not found\n", "golangci-lint"),
            ("env: 'jest': No such file or directory\n", "jest"),
        ] {
            let shell = run(127, "", stderr);
            assert_eq!(
                could_not_run(&shell),
                Some(format!("{program} is not installed")),
                "{stderr}"
            );
        }
        let unnamed = could_not_run(&run(127, "", "")).unwrap();
        assert!(unnamed.contains("not installed (exit status 127)"), "{unnamed}");
        let refused = could_not_run(&run(126, "", "make: ./lint.sh: Permission denied\n"));
        assert_eq!(refused.as_deref(), Some("./lint.sh could not be executed (permission denied)"));
    }

    #[test]
    fn an_ordinary_failure_is_a_failure() {
        // A test that fails on a missing file is the code's problem, not a missing program.
        let test = run(
            1,
            "",
            "cat: fixtures/a.txt: No such file or directory\nmake: *** [Makefile:4: test] Error 1\n",
        );
        assert_eq!(could_not_run(&test), None);
        assert_eq!(could_not_run(&run(2, "", "error[E0425]: cannot find value `x`\n")), None);
        let mut slow = run(127, "", "sh: 1: x: not found\n");
        slow.timed_out = true;
        assert_eq!(could_not_run(&slow), None, "a timeout is a failure");
    }
}
