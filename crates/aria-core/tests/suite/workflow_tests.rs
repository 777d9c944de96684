//! The governed workflow end to end with a scripted model and real parts: `file_write` in a
//! git repository, git snapshots before the write, the `run_tests` profile detected from a
//! Makefile, `git_commit` when the checks pass and automatic restore when they fail.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aria_api::{ApprovalMode, Tool};
use aria_core::{Agent, AgentConfig, ToolRegistry, ToolsGovernor};
use aria_testkit::memory::MemoryJournal;
use aria_testkit::scripted::{End, ScriptedProvider, Turn};
use aria_tools::{FileWrite, PathGuard, Profiles, SensitivePatterns, SnapshotOptions, Snapshots};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::harness::TestRedactor;

struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    guard: Arc<PathGuard>,
}

/// A committed repository whose `make test` passes only when `app.txt` says "good".
fn project() -> Project {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    fs::write(
        root.join("Makefile"),
        "all:\n\t@true\ntest:\n\t@grep -q good app.txt || (echo 'app.txt is not good' && false)\n",
    )
    .unwrap();
    fs::write(root.join("app.txt"), "good v1\n").unwrap();
    let repo = git2::Repository::init(&root).unwrap();
    let mut index = repo.index().unwrap();
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("Tester", "tester@example.invalid").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "Feat: start", &tree, &[]).unwrap();
    let guard = Arc::new(
        PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap(),
    );
    Project { _tmp: tmp, root, guard }
}

async fn run(p: &Project, turns: Vec<Turn>) -> (aria_api::SessionRecord, ScriptedProvider) {
    let (session, provider, _, _) = run_with(p, turns, false).await;
    (session, provider)
}

async fn run_with(
    p: &Project,
    turns: Vec<Turn>,
    dry_run: bool,
) -> (aria_api::SessionRecord, ScriptedProvider, Arc<MemoryJournal>, String) {
    let provider = ScriptedProvider::new(turns, End::Fail);
    let journal = Arc::new(MemoryJournal::new());
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(FileWrite::new(p.guard.clone()))];
    let snapshots = Snapshots::new(p.guard.clone(), SnapshotOptions::default());
    let profiles = Arc::new(Profiles::new(p.guard.clone(), &Default::default()).unwrap());
    let mut config = AgentConfig::new("test-model", "You are a test.")
        .with_snapshotter(Arc::new(Snapshots::new(p.guard.clone(), SnapshotOptions::default())));
    config.mode = ApprovalMode::Governed;
    config.dry_run = dry_run;
    config.governor = Some(Arc::new(ToolsGovernor::new(profiles, snapshots)));
    let agent = Agent::new(
        Arc::new(provider.clone()),
        Arc::new(ToolRegistry::new(tools).unwrap()),
        journal.clone(),
        journal.clone(),
        Arc::new(TestRedactor),
        config,
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let session = agent.run("update app.txt", None, &tx, CancellationToken::new()).await.unwrap();
    let mut streamed = String::new();
    while let Ok(event) = rx.try_recv() {
        if let aria_core::AgentEvent::Text { delta } = event {
            streamed.push_str(&delta);
        }
    }
    (session, provider, journal, streamed)
}

fn head_message(root: &Path) -> String {
    let repo = git2::Repository::open(root).unwrap();
    let c = repo.head().unwrap().peel_to_commit().unwrap();
    c.message().unwrap().to_owned()
}

fn write(text: &str) -> Turn {
    Turn::tool("file_write", json!({"path": "app.txt", "content": text}))
}

#[tokio::test]
async fn passing_checks_commit_the_change_with_a_type_summary_message() {
    if aria_tools::profiles::find_program("make").is_none() {
        panic!("this test needs make (CI installs it)");
    }
    let p = project();
    let (session, _) =
        run(&p, vec![write("good v2\n"), Turn::text("Updated.\nFix: Bump app.txt to v2")]).await;
    let answer = session.answer.unwrap();
    assert!(answer.contains("✅ Committed"), "{answer}");
    assert!(answer.contains("- app.txt (2 lines)"), "{answer}");
    assert!(answer.contains("Checks: all passing (build_project, run_tests)"), "{answer}");
    assert!(answer.contains("Snapshot: snapshot/"), "{answer}");
    assert_eq!(head_message(&p.root), "Fix: Bump app.txt to v2");
    assert_eq!(fs::read_to_string(p.root.join("app.txt")).unwrap(), "good v2\n");
}

#[tokio::test]
async fn a_failing_test_profile_restores_the_bytes_allows_one_retry_then_reports_the_snapshot() {
    if aria_tools::profiles::find_program("make").is_none() {
        panic!("this test needs make (CI installs it)");
    }
    let p = project();
    let turns = vec![
        write("bad v2\n"),
        Turn::text("Fix: Try one"),
        write("still bad\n"),
        Turn::text("Fix: Try two"),
    ];
    let (session, provider) = run(&p, turns).await;
    let answer = session.answer.unwrap();
    assert_eq!(fs::read(p.root.join("app.txt")).unwrap(), b"good v1\n", "restored to the bytes");
    assert_eq!(head_message(&p.root), "Feat: start", "nothing was committed");
    assert!(answer.contains("❌ Rolled back"), "{answer}");
    assert!(answer.contains("run_tests failed"), "{answer}");
    assert!(answer.contains("Changes reverted to snapshot: snapshot/"), "{answer}");
    // Each write's result named its restore point; the report names the last attempt's.
    let named: Vec<String> = provider
        .requests()
        .last()
        .unwrap()
        .messages
        .iter()
        .filter(|m| m.role == aria_api::Role::Tool)
        .filter_map(|m| {
            let line = m.content.lines().find(|l| l.starts_with("snapshot: "))?;
            let id = line.strip_prefix("snapshot: ")?.split(' ').next()?.to_owned();
            assert!(line.ends_with(&format!("(undo with: aria rollback {id})")), "{line}");
            Some(id)
        })
        .collect();
    assert_eq!(named.len(), 2, "both writes named their snapshot");
    assert!(named.iter().all(|id| id.starts_with("snapshot/file_write-")), "{named:?}");
    assert!(
        answer.contains(&format!("Changes reverted to snapshot: {}\n", named[1])),
        "the report names the snapshot the model was told about: {answer}"
    );
    assert!(answer.contains("app.txt is not good"), "the error is shown: {answer}");
    // The model was told after the first failure and got exactly one more attempt.
    let requests = provider.requests();
    let told = requests
        .iter()
        .filter(|r| r.messages.iter().any(|m| m.content.starts_with("[ARIA governed workflow]")))
        .count();
    assert_eq!(requests.len(), 4, "two attempts of write + answer");
    assert!(told >= 2, "the retry prompt reached the model");
}

/// Every file under `dir`, `.git` (refs, index, objects) included, with its bytes.
fn every_byte(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_dry_run_shows_the_content_snapshot_check_commands_and_commit_and_changes_nothing() {
    if aria_tools::profiles::find_program("make").is_none() {
        panic!("this test needs make (CI installs it)");
    }
    let p = project();
    let before = every_byte(&p.root);
    let (session, provider, journal, streamed) = run_with(
        &p,
        vec![write("good v2\nsecond line\n"), Turn::text("Updated.\nFix: Bump app.txt to v2")],
        true,
    )
    .await;
    let answer = session.answer.unwrap();
    assert_eq!(streamed, answer, "the plan is streamed to front ends that show the text");
    assert_eq!(every_byte(&p.root), before, "a dry run changed the tree or the git refs");
    let root = p.root.display();
    for want in [
        "🔍 Dry run: nothing was changed".to_owned(),
        "   | write app.txt (20 bytes):\n   | good v2\n   | second line\n".to_owned(),
        format!("Snapshot first: snapshot/file_write-<YYYY-MM-DD-HHMMSS> in {root}\n"),
        format!("1. build_project: `make` in {root} (timeout"),
        format!("2. run_tests: `make test` in {root} (timeout"),
        "All pass → commit \"Fix: Bump app.txt to v2\"".to_owned(),
        "One that passed before fails → restore snapshot/file_write-<YYYY-MM-DD-HHMMSS> \
         automatically"
            .to_owned(),
        "One already failing before, or that cannot run (program missing) → reported".to_owned(),
    ] {
        assert!(answer.contains(&want), "missing {want:?} in:\n{answer}");
    }
    assert!(!answer.contains("lint_project"), "a Makefile without `lint` has no lint check");
    // The model was told the write did not happen and which snapshot it would have had.
    let told = provider.requests()[1].messages.last().unwrap().content.clone();
    assert!(told.contains("[dry run] not executed") && told.contains("would snapshot"), "{told}");
    // The decisions are audited: the held-back call with its planned snapshot, then the plan.
    let events = journal.audit_events();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert!(!kinds.contains(&"tool.start") && !kinds.contains(&"tool.snapshot"), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k.starts_with("workflow.") && *k != "workflow.dry_run"));
    let call = events.iter().find(|e| e.kind == "tool.dry_run").unwrap();
    assert_eq!(call.payload["snapshots"][0]["repository"], json!(root.to_string()));
    let plan = events.iter().find(|e| e.kind == "workflow.dry_run").unwrap();
    let checks = &plan.payload["workflow"][0]["checks"];
    assert_eq!(checks[1]["command"], "make test", "{}", plan.payload);
    assert_eq!(plan.payload["workflow"][0]["commit_message"], "Fix: Bump app.txt to v2");
}

#[tokio::test]
async fn a_dry_run_without_changes_adds_no_plan() {
    let p = project();
    let (session, _, journal, _) = run_with(&p, vec![Turn::text("Nothing to do.")], true).await;
    assert_eq!(session.answer.as_deref(), Some("Nothing to do."));
    assert!(!journal.audit_kinds().contains(&"workflow.dry_run".to_owned()));
}

#[tokio::test]
async fn a_test_already_failing_before_the_edit_is_kept_uncommitted_and_the_baseline_audited() {
    if aria_tools::profiles::find_program("make").is_none() {
        panic!("this test needs make (CI installs it)");
    }
    let p = project();
    fs::write(p.root.join("app.txt"), "bad v1\n").unwrap();
    let (session, provider, journal, _) =
        run_with(&p, vec![write("bad v2\n"), Turn::text("Fix: Bump app.txt to v2")], false).await;
    let answer = session.answer.unwrap();
    assert_eq!(fs::read(p.root.join("app.txt")).unwrap(), b"bad v2\n", "not restored");
    assert_eq!(head_message(&p.root), "Feat: start", "not committed");
    assert!(answer.contains("⚠️ Not committed in"), "{answer}");
    assert!(answer.contains("make test): already failing before the edit"), "{answer}");
    assert_eq!(provider.requests().len(), 2, "not the edit's fault: no retry");
    let events = journal.audit_events();
    let base = events.iter().find(|e| e.kind == "workflow.baseline").unwrap();
    assert_eq!(base.payload["reused"], json!(false));
    let statuses: Vec<(String, String)> = base.payload["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["check"].as_str().unwrap().into(), c["status"].as_str().unwrap().into()))
        .collect();
    assert_eq!(
        statuses,
        [("build_project".into(), "passed".into()), ("run_tests".into(), "failed".into())]
    );
    // The baseline ran before the write: its record comes before the write's start.
    let at = |kind: &str| events.iter().position(|e| e.kind == kind).unwrap();
    assert!(at("workflow.baseline") < at("tool.start"));
    let kept = events.iter().find(|e| e.kind == "workflow.kept").unwrap();
    assert_eq!(kept.payload["Kept"]["checks"][1]["judgement"], json!("already_failing"));
}
