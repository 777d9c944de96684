//! The governed workflow's decisions with a fake governor: which check results restore, which
//! are reported as not the edit's fault, and when a remembered result stands in for a run.

use std::sync::Mutex;
use std::time::Instant;

use pretty_assertions::assert_eq;

use super::*;
use crate::workflow_baseline::FRESH_FOR;

use CheckStatus::{CouldNotRun, Failed, Passed};

/// A repository whose checks end as the test says; the test changes them between the
/// baseline and the check after the edit, as an edit would.
#[derive(Debug)]
struct Fake {
    /// Each check and how it ends on the tree as it is now.
    checks: Mutex<Vec<(&'static str, CheckStatus)>>,
    /// The tree's state id (`None`: the governor cannot tell).
    state: Mutex<Option<String>>,
    /// Every check run, in order.
    ran: Mutex<Vec<String>>,
    restored: Mutex<Vec<String>>,
    committed: Mutex<Vec<String>>,
}

impl Fake {
    fn new(checks: &[(&'static str, CheckStatus)]) -> Self {
        Fake {
            checks: Mutex::new(checks.to_vec()),
            state: Mutex::new(Some("tree-before".into())),
            ran: Mutex::new(Vec::new()),
            restored: Mutex::new(Vec::new()),
            committed: Mutex::new(Vec::new()),
        }
    }

    /// The edit: the checks now end as `checks` say, on a tree with another state.
    fn edit(&self, checks: &[(&'static str, CheckStatus)]) {
        *self.checks.lock().unwrap() = checks.to_vec();
        *self.state.lock().unwrap() = Some("tree-after".into());
        self.ran.lock().unwrap().clear();
    }

    fn ran(&self) -> Vec<String> {
        self.ran.lock().unwrap().clone()
    }
}

fn outcome(name: &str, status: CheckStatus) -> CheckOutcome {
    CheckOutcome {
        profile: name.to_owned(),
        command: format!("make {name}"),
        status,
        reason: (status == CouldNotRun).then(|| "golangci-lint is not installed".to_owned()),
        output: format!("{name}: {}", status.label()),
    }
}

impl Governor for Fake {
    fn check(
        &self,
        _repository: &str,
        _session: &str,
        go_on: &mut dyn FnMut(&CheckOutcome) -> bool,
    ) -> Vec<CheckOutcome> {
        let mut out = Vec::new();
        for (name, status) in self.checks.lock().unwrap().clone() {
            self.ran.lock().unwrap().push(name.to_owned());
            let o = outcome(name, status);
            let next = go_on(&o);
            out.push(o);
            if !next {
                break;
            }
        }
        out
    }

    fn plan(&self, repository: &str) -> Vec<PlannedCheck> {
        let checks = self.checks.lock().unwrap();
        checks
            .iter()
            .map(|(name, _)| PlannedCheck {
                profile: (*name).to_owned(),
                command: format!("make {name}"),
                cwd: repository.to_owned(),
                timeout_secs: 60,
                network: false,
            })
            .collect()
    }

    fn commit(&self, _repository: &str, message: &str) -> Result<WorkflowCommit, String> {
        self.committed.lock().unwrap().push(message.to_owned());
        Ok(WorkflowCommit { id: "c0ffee1234".into(), files: vec![("Makefile".into(), 2)] })
    }

    fn restore(&self, point: &RestorePoint, _session: &str) -> Result<Vec<String>, String> {
        self.restored.lock().unwrap().push(point.id.clone());
        Ok(vec!["Makefile".into()])
    }

    fn state(&self, _repository: &str) -> Option<String> {
        self.state.lock().unwrap().clone()
    }
}

fn point() -> RestorePoint {
    RestorePoint { id: "snapshot/file_write-1".into(), repository: "/repo".into() }
}

/// Baseline on the tree as the fake is now, then `edit`, then govern: the verdict.
fn before_and_after(
    fake: &Fake,
    memory: &CheckMemory,
    after: &[(&'static str, CheckStatus)],
) -> Verdict {
    let before = baseline(fake, memory, "/repo", "s1", Ok(())).unwrap();
    fake.edit(after);
    govern(fake, memory, &point(), Some(&before), "Fix: Makefile", "s1").unwrap()
}

fn judgements(v: &Verdict) -> Vec<(String, Option<CheckStatus>, CheckStatus, Judgement)> {
    v.checks().iter().map(|c| (c.check.clone(), c.before, c.after, c.judgement)).collect()
}

#[test]
fn a_check_failing_before_and_after_the_edit_is_reported_not_restored() {
    let fake = Fake::new(&[("lint_project", Failed), ("run_tests", Passed)]);
    let v = before_and_after(
        &fake,
        &CheckMemory::default(),
        &[("lint_project", Failed), ("run_tests", Passed)],
    );
    assert!(matches!(v, Verdict::Kept { .. }), "{v:?}");
    assert!(!v.is_failure(), "not the edit's fault: no retry for the model");
    assert_eq!(
        judgements(&v),
        [
            ("lint_project".into(), Some(Failed), Failed, Judgement::AlreadyFailing),
            ("run_tests".into(), Some(Passed), Passed, Judgement::Passed),
        ]
    );
    assert_eq!(v.checks()[0].note, "already failing before the edit");
    assert!(fake.restored.lock().unwrap().is_empty(), "nothing restored");
    assert!(fake.committed.lock().unwrap().is_empty(), "a failing check is never committed");
    assert_eq!(fake.ran(), ["lint_project", "run_tests"], "the later checks still ran");
    let text = report(std::slice::from_ref(&v));
    assert!(text.contains("⚠️ Not committed in /repo"), "{text}");
    assert!(
        text.contains("- lint_project (make lint_project): already failing before the edit"),
        "{text}"
    );
    assert!(text.contains("Passing: run_tests"), "{text}");
    assert!(text.contains("aria rollback snapshot/file_write-1"), "{text}");
}

#[test]
fn a_check_that_could_not_run_never_restores_whatever_it_did_before() {
    for before in [Passed, Failed, CouldNotRun] {
        let fake = Fake::new(&[("lint_project", before), ("run_tests", Passed)]);
        let v = before_and_after(
            &fake,
            &CheckMemory::default(),
            &[("lint_project", CouldNotRun), ("run_tests", Passed)],
        );
        assert!(matches!(v, Verdict::Kept { .. }), "before {before:?}: {v:?}");
        assert_eq!(v.checks()[0].judgement, Judgement::CouldNotRun);
        assert_eq!(v.checks()[0].note, "could not run: golangci-lint is not installed");
        assert!(fake.restored.lock().unwrap().is_empty(), "before {before:?}: restored");
        assert!(fake.committed.lock().unwrap().is_empty());
        let text = report(std::slice::from_ref(&v));
        assert!(text.contains("could not run: golangci-lint is not installed"), "{text}");
    }
}

#[test]
fn a_check_the_edit_broke_restores_and_stops_the_checks_there() {
    let fake =
        Fake::new(&[("lint_project", Failed), ("build_project", Passed), ("run_tests", Passed)]);
    let v = before_and_after(
        &fake,
        &CheckMemory::default(),
        &[("lint_project", Failed), ("build_project", Failed), ("run_tests", Failed)],
    );
    let Verdict::RolledBack { failed, restored, .. } = &v else { panic!("{v:?}") };
    assert_eq!(failed.profile, "build_project");
    assert_eq!(restored, &["Makefile"]);
    assert_eq!(*fake.restored.lock().unwrap(), ["snapshot/file_write-1"]);
    assert!(v.is_failure(), "the model gets its retry");
    assert_eq!(fake.ran(), ["lint_project", "build_project"], "run_tests is not run after it");
    assert_eq!(
        judgements(&v),
        [
            ("lint_project".into(), Some(Failed), Failed, Judgement::AlreadyFailing),
            ("build_project".into(), Some(Passed), Failed, Judgement::Broken),
        ]
    );
    let text = report(std::slice::from_ref(&v));
    assert!(
        text.contains(
            "❌ Rolled back in /repo: build_project failed (make build_project): it passed \
             before the edit and fails after it."
        ),
        "{text}"
    );
    assert!(text.contains("- lint_project (make lint_project): already failing"), "{text}");
}

#[test]
fn without_a_result_before_the_edit_a_failing_check_still_restores() {
    let fake = Fake::new(&[("run_tests", Failed)]);
    let v = govern(&fake, &CheckMemory::default(), &point(), None, "Fix: x", "s1").unwrap();
    assert!(matches!(v, Verdict::RolledBack { .. }), "{v:?}");
    assert_eq!(
        v.checks()[0].note,
        "fails after the edit (its result before the edit is not known)"
    );
    // A check that could not run before and fails now: the edit made it run, so it counts.
    let fake = Fake::new(&[("run_tests", CouldNotRun)]);
    let v = before_and_after(&fake, &CheckMemory::default(), &[("run_tests", Failed)]);
    assert!(matches!(v, Verdict::RolledBack { .. }), "{v:?}");
}

#[test]
fn passing_checks_commit_even_one_the_edit_fixed() {
    let fake = Fake::new(&[("lint_project", Failed), ("run_tests", Passed)]);
    let v = before_and_after(
        &fake,
        &CheckMemory::default(),
        &[("lint_project", Passed), ("run_tests", Passed)],
    );
    assert!(matches!(v, Verdict::Committed { .. }), "{v:?}");
    assert_eq!(*fake.committed.lock().unwrap(), ["Fix: Makefile"]);
    assert!(report(&[v]).contains("Checks: all passing (lint_project, run_tests)"));
}

#[test]
fn no_checks_means_no_verdict_and_no_baseline() {
    let fake = Fake::new(&[]);
    assert_eq!(baseline(&fake, &CheckMemory::default(), "/repo", "s1", Ok(())), None);
    assert_eq!(govern(&fake, &CheckMemory::default(), &point(), None, "Fix: x", "s1"), None);
}

#[test]
fn a_baseline_reuses_results_remembered_for_the_same_tree() {
    let memory = CheckMemory::default();
    let fake = Fake::new(&[("lint_project", Failed), ("run_tests", Passed)]);
    let first = baseline(&fake, &memory, "/repo", "s1", Ok(())).unwrap();
    assert!(!first.reused);
    assert_eq!(fake.ran(), ["lint_project", "run_tests"]);
    fake.ran.lock().unwrap().clear();
    // The same tree again (a restore put it back): nothing runs.
    let again = baseline(&fake, &memory, "/repo", "s1", Ok(())).unwrap();
    assert!(again.reused);
    assert_eq!(again.checks, first.checks);
    assert!(fake.ran().is_empty(), "ran {:?}", fake.ran());
    // Even when the checks may not run now.
    let refused = baseline(&fake, &memory, "/repo", "s1", Err("no".into())).unwrap();
    assert!(refused.reused && refused.not_run.is_none());
    // Another repository with the same tree id is another tree.
    baseline(&fake, &memory, "/other", "s1", Ok(())).unwrap();
    assert_eq!(fake.ran(), ["lint_project", "run_tests"]);
}

#[test]
fn the_results_after_a_commit_are_the_next_edits_baseline() {
    let memory = CheckMemory::default();
    let fake = Fake::new(&[("run_tests", Passed)]);
    let v = before_and_after(&fake, &memory, &[("run_tests", Passed)]);
    assert!(matches!(v, Verdict::Committed { .. }));
    fake.ran.lock().unwrap().clear();
    // The next round starts on the tree just checked ("tree-after").
    let next = baseline(&fake, &memory, "/repo", "s1", Ok(())).unwrap();
    assert!(next.reused);
    assert_eq!(next.state.as_deref(), Some("tree-after"));
    assert!(fake.ran().is_empty());
}

#[test]
fn a_baseline_runs_again_when_the_tree_or_the_governor_cannot_tell_or_may_not_run() {
    let memory = CheckMemory::default();
    let fake = Fake::new(&[("run_tests", Passed)]);
    *fake.state.lock().unwrap() = None;
    baseline(&fake, &memory, "/repo", "s1", Ok(())).unwrap();
    let again = baseline(&fake, &memory, "/repo", "s1", Ok(())).unwrap();
    assert!(!again.reused);
    assert_eq!(fake.ran(), ["run_tests", "run_tests"], "no state, no reuse");
    // Nothing remembered and the checks may not run: every result before is unknown.
    let refused = baseline(&fake, &memory, "/repo", "s1", Err("definitions changed".into()));
    let refused = refused.unwrap();
    assert!(refused.checks.is_empty());
    assert_eq!(refused.not_run.as_deref(), Some("definitions changed"));
    assert_eq!(fake.ran().len(), 2, "nothing ran");
    assert_eq!(refused.status_of("run_tests"), None);
}

#[test]
fn remembered_results_go_stale_and_could_not_run_is_never_remembered() {
    let memory = CheckMemory::default();
    let now = Instant::now();
    memory.remember(
        "/repo",
        "t1",
        &[outcome("lint_project", CouldNotRun), outcome("run_tests", Failed)],
        now,
    );
    assert_eq!(memory.recall("/repo", "t1", "lint_project", now), None);
    assert_eq!(memory.recall("/repo", "t1", "run_tests", now), Some(outcome("run_tests", Failed)));
    assert_eq!(memory.recall("/repo", "t2", "run_tests", now), None);
    let later = now + FRESH_FOR;
    assert_eq!(memory.recall("/repo", "t1", "run_tests", later), None, "stale");
}

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
