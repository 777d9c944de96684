//! Profiles after model edits: once the run changed a file that defines
//! what a profile runs (here a Makefile), `run_tests` and the governed workflow's checks ask
//! first; after a change to an ordinary file they run as before. Real parts: `file_write`, git
//! snapshots, the `run_tests` profile detected from the Makefile, `make` in the sandbox.

use std::fs;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use aria_api::{ApprovalMode, SessionRecord, Tool};
use aria_core::{
    Agent, AgentConfig, ApprovalAnswer, ApprovalRequest, Approver, ToolRegistry, ToolsGovernor,
};
use aria_testkit::memory::MemoryJournal;
use aria_testkit::scripted::{End, ScriptedProvider, Turn};
use aria_tools::{FileWrite, PathGuard, Profiles, SensitivePatterns, SnapshotOptions, Snapshots};
use futures::future::BoxFuture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::harness::TestRedactor;

/// The project's own test target leaves `tests-ran`; the model's leaves `model-ran`.
const MAKEFILE: &str = "all:\n\t@true\ntest:\n\t@echo ok > tests-ran\n";
const MODEL_MAKEFILE: &str = "all:\n\t@true\ntest:\n\t@echo pwned > model-ran\n";

struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    guard: Arc<PathGuard>,
}

fn project() -> Project {
    if aria_tools::profiles::find_program("make").is_none() {
        panic!("this test needs make (CI installs it)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    fs::write(root.join("Makefile"), MAKEFILE).unwrap();
    fs::write(root.join("app.txt"), "v1\n").unwrap();
    fs::write(root.join(".gitignore"), "tests-ran\nmodel-ran\nGNUmakefile\n").unwrap();
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

/// Answers every question the same way and keeps what it was asked.
struct Recorder {
    answer: ApprovalAnswer,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Approver for Recorder {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        self.asked.lock().unwrap().push(request);
        let answer = self.answer;
        Box::pin(async move { answer })
    }
}

struct Ran {
    session: SessionRecord,
    provider: ScriptedProvider,
    journal: Arc<MemoryJournal>,
}

async fn run(
    p: &Project,
    turns: Vec<Turn>,
    approver: Option<Arc<Recorder>>,
    governed: bool,
) -> Ran {
    let provider = ScriptedProvider::new(turns, End::Fail);
    let journal = Arc::new(MemoryJournal::new());
    let profiles = Arc::new(Profiles::new(p.guard.clone(), &Default::default()).unwrap());
    let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(FileWrite::new(p.guard.clone()))];
    tools.extend(profiles.tools());
    let mut config = AgentConfig::new("test-model", "You are a test.")
        .with_snapshotter(Arc::new(Snapshots::new(p.guard.clone(), SnapshotOptions::default())));
    config.mode = ApprovalMode::Governed;
    if governed {
        let snapshots = Snapshots::new(p.guard.clone(), SnapshotOptions::default());
        config.governor = Some(Arc::new(ToolsGovernor::new(profiles, snapshots)));
    }
    let mut agent = Agent::new(
        Arc::new(provider.clone()),
        Arc::new(ToolRegistry::new(tools).unwrap()),
        journal.clone(),
        journal.clone(),
        Arc::new(TestRedactor),
        config,
    );
    if let Some(a) = approver {
        agent = agent.with_approver(a);
    }
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let session = agent.run("change it", None, &tx, CancellationToken::new()).await.unwrap();
    Ran { session, provider, journal }
}

fn write(path: &str, content: &str) -> Turn {
    Turn::tool("file_write", json!({"path": path, "content": content}))
}

fn run_tests() -> Turn {
    Turn::tool("run_tests", json!({"path": "."}))
}

/// What the model was told about its `run_tests` call.
fn run_tests_result(r: &Ran) -> String {
    let last = r.provider.requests().last().unwrap().clone();
    last.messages.iter().rev().find(|m| m.role == aria_api::Role::Tool).unwrap().content.clone()
}

#[tokio::test]
async fn after_the_model_writes_the_makefile_run_tests_asks_and_is_denied_without_an_approver() {
    let p = project();
    let turns = vec![write("Makefile", MODEL_MAKEFILE), run_tests(), Turn::text("Done.")];
    let r = run(&p, turns, None, false).await;
    assert!(!p.root.join("model-ran").exists(), "the model's Makefile ran unasked");
    let told = run_tests_result(&r);
    assert!(
        told.contains("refused: `run_tests` runs commands that the project's files define"),
        "{told}"
    );
    assert!(told.contains("this run changed Makefile"), "{told}");
    let events = r.journal.audit_events();
    let raised = events.iter().find(|e| e.kind == "policy.raised").expect("the raise is audited");
    assert_eq!(raised.payload["name"], "run_tests");
    assert_eq!(raised.payload["from"], "recoverable-write");
    assert_eq!(raised.payload["changed"]["files"], json!(["Makefile"]));
    let answer = events.iter().find(|e| e.kind == "approval.answer").unwrap();
    assert_eq!(answer.payload["answer"], "deny");
    assert_eq!(r.session.answer.as_deref(), Some("Done."));
}

#[tokio::test]
async fn after_a_write_to_an_ordinary_file_run_tests_runs_without_asking() {
    let p = project();
    let approver = Arc::new(Recorder { answer: ApprovalAnswer::Deny, asked: Mutex::new(vec![]) });
    let turns = vec![write("app.txt", "v2\n"), run_tests(), Turn::text("Done.")];
    let r = run(&p, turns, Some(approver.clone()), false).await;
    assert!(approver.asked.lock().unwrap().is_empty(), "nothing needed asking");
    assert!(p.root.join("tests-ran").exists(), "{}", run_tests_result(&r));
    assert!(!r.journal.audit_kinds().contains(&"policy.raised".to_owned()));
}

#[tokio::test]
async fn an_approved_run_after_a_makefile_change_runs_and_the_question_says_why() {
    let p = project();
    let approver = Arc::new(Recorder { answer: ApprovalAnswer::Once, asked: Mutex::new(vec![]) });
    let turns = vec![write("Makefile", MODEL_MAKEFILE), run_tests(), Turn::text("Done.")];
    let r = run(&p, turns, Some(approver.clone()), false).await;
    assert!(p.root.join("model-ran").exists(), "approved, so it ran: {}", run_tests_result(&r));
    let asked = approver.asked.lock().unwrap();
    assert_eq!(asked.len(), 1, "only run_tests asked (file_write is snapshotted)");
    assert_eq!(asked[0].tool, "run_tests");
    assert_eq!(asked[0].tier, aria_api::Tier::Irreversible);
    let why = asked[0].reason.clone().unwrap();
    assert!(why.contains("this run changed Makefile"), "{why}");
}

#[tokio::test]
async fn an_ignored_makefile_the_model_creates_counts_too() {
    // make prefers GNUmakefile; this one is in .gitignore, so snapshots never hold it.
    let p = project();
    let turns = vec![write("GNUmakefile", MODEL_MAKEFILE), run_tests(), Turn::text("Done.")];
    let r = run(&p, turns, None, false).await;
    assert!(!p.root.join("model-ran").exists(), "the model's GNUmakefile ran unasked");
    let told = run_tests_result(&r);
    assert!(told.contains("this run changed GNUmakefile"), "{told}");
}

#[tokio::test]
async fn the_governed_check_step_asks_too_and_a_denial_leaves_the_change_uncommitted() {
    let p = project();
    let turns = vec![write("Makefile", MODEL_MAKEFILE), Turn::text("Fix: New test target")];
    let r = run(&p, turns, None, true).await;
    let answer = r.session.answer.unwrap();
    assert!(!p.root.join("model-ran").exists(), "the checks ran the model's Makefile: {answer}");
    assert!(answer.contains("⚠️ Not checked or committed"), "{answer}");
    assert!(answer.contains("this run changed Makefile"), "{answer}");
    assert!(answer.contains("aria rollback snapshot/file_write-"), "{answer}");
    let repo = git2::Repository::open(&p.root).unwrap();
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(head.message().unwrap(), "Feat: start", "nothing was committed");
    assert_eq!(
        fs::read_to_string(p.root.join("Makefile")).unwrap(),
        MODEL_MAKEFILE,
        "nor restored"
    );
    let kinds = r.journal.audit_kinds();
    assert!(kinds.contains(&"workflow.unchecked".to_owned()), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "workflow.commit" || k == "workflow.rollback"), "{kinds:?}");
}

#[tokio::test]
async fn the_governed_check_step_runs_the_checks_once_approved() {
    let p = project();
    let approver = Arc::new(Recorder { answer: ApprovalAnswer::Once, asked: Mutex::new(vec![]) });
    let turns = vec![write("Makefile", MODEL_MAKEFILE), Turn::text("Fix: New test target")];
    let r = run(&p, turns, Some(approver.clone()), true).await;
    let answer = r.session.answer.unwrap();
    assert!(answer.contains("✅ Committed"), "{answer}");
    assert!(p.root.join("model-ran").exists());
    let asked = approver.asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].tool, "governed_checks");
    assert_eq!(asked[0].arguments["repository"], json!(p.root.display().to_string()));
    let checks = asked[0].arguments["checks"].to_string();
    assert!(checks.contains("run_tests: make test"), "{checks}");
}
