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
    let provider = ScriptedProvider::new(turns, End::Fail);
    let journal = Arc::new(MemoryJournal::new());
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(FileWrite::new(p.guard.clone()))];
    let snapshots = Snapshots::new(p.guard.clone(), SnapshotOptions::default());
    let profiles = Arc::new(Profiles::new(p.guard.clone(), &Default::default()).unwrap());
    let mut config = AgentConfig::new("test-model", "You are a test.")
        .with_snapshotter(Arc::new(Snapshots::new(p.guard.clone(), SnapshotOptions::default())));
    config.mode = ApprovalMode::Governed;
    config.governor = Some(Arc::new(ToolsGovernor::new(profiles, snapshots)));
    let agent = Agent::new(
        Arc::new(provider.clone()),
        Arc::new(ToolRegistry::new(tools).unwrap()),
        journal.clone(),
        journal,
        Arc::new(TestRedactor),
        config,
    );
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let session = agent.run("update app.txt", None, &tx, CancellationToken::new()).await.unwrap();
    (session, provider)
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
