//! `schedule_create` through the real agent loop: the scripted model asks for a job the way a
//! model would after "every weekday at 9 check my repo and tell me what changed", and a person
//! is asked first — shown the schedule and the next three runs — whatever was pre-approved.

use std::sync::{Arc, Mutex};

use aria_api::{NoRedact, SessionState};
use aria_core::{Agent, AgentConfig, ApprovalAnswer, ApprovalRequest, Approver, ToolRegistry};
use aria_scheduler::tool::{SCHEDULE_CREATE, ScheduleCreate};
use aria_store::Store;
use aria_testkit::scripted::{End, ScriptedProvider, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// `futures::future::BoxFuture`, spelled out (this crate does not depend on `futures`).
type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// Gives one answer and keeps every question.
struct Person(ApprovalAnswer, Arc<Mutex<Vec<ApprovalRequest>>>);
impl Approver for Person {
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<ApprovalAnswer> {
        self.1.lock().unwrap().push(request);
        let answer = self.0;
        Box::pin(async move { answer })
    }
}

struct Ran {
    store: Arc<Store>,
    provider: ScriptedProvider,
    asked: Vec<ApprovalRequest>,
}

/// One run in which the model calls `schedule_create` once, then answers; `--yes` given.
async fn run(answer: Option<ApprovalAnswer>) -> Ran {
    let store = Arc::new(Store::open_in_memory(Arc::new(NoRedact)).unwrap());
    let provider = ScriptedProvider::new(
        vec![
            Turn::tool(
                SCHEDULE_CREATE,
                json!({
                    "name": "repo-check",
                    "cron": "0 9 * * 1-5",
                    "tz": "Europe/Berlin",
                    "prompt": "check my repo and tell me what changed",
                }),
            ),
            Turn::text("done"),
        ],
        End::Fail,
    );
    let tool = ScheduleCreate::new(store.clone(), vec!["/home/u/repo".into()]);
    let registry = ToolRegistry::new(vec![Arc::new(tool) as Arc<dyn aria_api::Tool>]).unwrap();
    let mut config = AgentConfig::new("test-model", "You are a test.");
    // Pre-approval does not stand in for the person this tool wants asked.
    config.preapproval = aria_core::Preapproval::new(&[], true).unwrap();
    let mut agent = Agent::new(
        Arc::new(provider.clone()),
        Arc::new(registry),
        store.clone(),
        store.clone(),
        Arc::new(NoRedact),
        config,
    );
    let asked = Arc::new(Mutex::new(Vec::new()));
    if let Some(answer) = answer {
        agent = agent.with_approver(Arc::new(Person(answer, asked.clone())));
    }
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let task = "every weekday at 9 check my repo and tell me what changed";
    let session = agent.run(task, None, &tx, CancellationToken::new()).await.unwrap();
    assert_eq!(session.state, SessionState::Done);
    let asked = asked.lock().unwrap().clone();
    Ran { store, provider, asked }
}

/// What the model was told about its call.
fn tool_result(ran: &Ran) -> String {
    ran.provider.requests()[1].messages.last().unwrap().content.clone()
}

#[tokio::test]
async fn denied_the_job_is_not_created() {
    let ran = run(Some(ApprovalAnswer::Deny)).await;
    assert_eq!(ran.asked.len(), 1, "asked first, despite --yes");
    let question = &ran.asked[0];
    assert_eq!(question.tool, SCHEDULE_CREATE);
    let shown = question.reason.as_deref().unwrap_or_default();
    assert!(shown.contains("schedule: 0 9 * * 1-5 in Europe/Berlin"), "{shown}");
    assert!(shown.contains("action: agent: check my repo and tell me what changed"), "{shown}");
    let next = shown.lines().find_map(|l| l.strip_prefix("next runs: ")).unwrap();
    let fires: Vec<&str> = next.split(", ").collect();
    assert_eq!(fires.len(), 3, "{shown}");
    for fire in fires {
        // 09:00 Berlin time, with the offset of that date (+01:00 in winter, +02:00 in summer).
        assert!(fire.ends_with("T09:00:00+01:00") || fire.ends_with("T09:00:00+02:00"), "{fire}");
    }
    assert!(ran.store.jobs().unwrap().is_empty(), "nothing created");
    assert!(tool_result(&ran).contains("did not approve"), "{}", tool_result(&ran));
}

#[tokio::test]
async fn nobody_to_ask_means_no_job_even_with_yes() {
    let ran = run(None).await;
    assert!(ran.store.jobs().unwrap().is_empty());
    assert!(tool_result(&ran).contains("did not approve"), "{}", tool_result(&ran));
}

#[tokio::test]
async fn approved_the_job_is_created_by_the_agent() {
    let ran = run(Some(ApprovalAnswer::Once)).await;
    assert_eq!(ran.asked.len(), 1);
    let job = ran.store.job("repo-check").unwrap().expect("created");
    assert_eq!(
        (job.cron.as_str(), job.tz.as_str(), job.created_by.as_str()),
        ("0 9 * * 1-5", "Europe/Berlin", "agent")
    );
    assert_eq!(
        job.action,
        json!({"kind": "agent", "prompt": "check my repo and tell me what changed"})
    );
    assert_eq!(job.roots, ["/home/u/repo"]);
    let told = tool_result(&ran);
    assert!(told.contains("Created the job repo-check"), "{told}");
    assert_eq!(told.matches("T09:00:00+0").count(), 3, "the next three runs: {told}");
}
