use std::borrow::Cow;
use std::sync::Mutex;

use aria_api::{Redact, Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use aria_testkit::memory::MemoryJournal;
use aria_testkit::scripted::{End, ScriptedProvider, Turn};
use pretty_assertions::assert_eq;

use super::*;
use crate::{AgentConfig, ToolRegistry};

/// Reads a "file": `bad` fails, anything else answers with its contents.
#[derive(Debug)]
struct Probe(ToolSpec, Tier);

impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn tier(&self, _args: &Value) -> Tier {
        self.1
    }
    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            match args["path"].as_str() {
                Some("bad") => Err(ToolError::failed("no such file: bad")),
                path => Ok(ToolOutput::text(format!("contents of {}", path.unwrap_or("?")))),
            }
        })
    }
}

fn probe(name: &str, tier: Tier) -> Arc<dyn Tool> {
    let spec = ToolSpec {
        name: name.into(),
        description: "reads a file".into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": false
        }),
    };
    Arc::new(Probe(spec, tier))
}

/// Replaces the marker key, like the real outbound filter does with API keys.
#[derive(Debug)]
struct HideKey;
impl Redact for HideKey {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if text.contains("sk-test-SECRET") {
            Cow::Owned(text.replace("sk-test-SECRET", "[REDACTED:key]"))
        } else {
            Cow::Borrowed(text)
        }
    }
}

struct Rig {
    planner: Planner,
    planner_script: ScriptedProvider,
    executor: Agent,
    journal: Arc<MemoryJournal>,
}

fn rig(planner_turns: Vec<Turn>, executor_turns: Vec<Turn>) -> Rig {
    let planner_script = ScriptedProvider::new(planner_turns, End::Fail);
    let journal = Arc::new(MemoryJournal::new());
    let tools = match ToolRegistry::new(vec![
        probe("probe", Tier::Read),
        probe("wipe", Tier::Irreversible),
    ]) {
        Ok(tools) => Arc::new(tools),
        Err(e) => panic!("{e}"),
    };
    let executor = Agent::new(
        Arc::new(ScriptedProvider::new(executor_turns, End::Fail)),
        tools,
        journal.clone(),
        journal.clone(),
        Arc::new(HideKey),
        AgentConfig::new("local-model", "You are the executor."),
    );
    let planner = Planner {
        provider: Arc::new(planner_script.clone()),
        model: "cloud-planner".into(),
        price: None,
        max_output_tokens: 500,
    };
    Rig { planner, planner_script, executor, journal }
}

impl Rig {
    async fn go(
        &self,
        goal: &str,
        settings: &PlanSettings,
        confirmer: Option<&dyn Confirmer>,
    ) -> (PlanOutcome, Vec<AgentEvent>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let outcome = plan_and_execute(
            &self.planner,
            &self.executor,
            goal,
            None,
            settings,
            confirmer,
            &tx,
            CancellationToken::new(),
        )
        .await
        .unwrap();
        drop(tx);
        let mut events = Vec::new();
        while let Some(event) = rx.recv().await {
            events.push(event);
        }
        (outcome, events)
    }

    /// The user message of every planner request.
    fn planner_saw(&self) -> Vec<String> {
        let requests = self.planner_script.requests();
        for request in &requests {
            assert!(request.tools.is_empty(), "the planner was offered tools");
            assert_eq!(request.messages.len(), 2);
        }
        requests.iter().map(|r| r.messages[1].content.clone()).collect()
    }

    fn audit(&self, kind: &str) -> Vec<Value> {
        self.journal
            .audit_events()
            .into_iter()
            .filter(|e| e.kind == kind)
            .inspect(|e| assert_eq!(e.actor, "planner"))
            .map(|e| e.payload)
            .collect()
    }
}

fn read(path: &str) -> Turn {
    Turn::tool("probe", json!({"path": path}))
}

#[tokio::test]
async fn a_two_step_plan_runs_in_one_conversation_then_is_done() {
    let rig = rig(
        vec![
            Turn::text("Sure, here is the plan:\n1. Read a.txt\n2) Summarize it\nGood luck!"),
            Turn::text("DONE: a.txt was read and summarized"),
        ],
        vec![read("a.txt"), Turn::text("a.txt holds the contents"), Turn::text("summary: fine")],
    );
    let (outcome, events) = rig.go("summarize a.txt", &PlanSettings::default(), None).await;

    assert_eq!(
        outcome.status,
        PlanStatus::Done { summary: "a.txt was read and summarized".into() }
    );
    assert_eq!(outcome.rounds, 2);
    let texts: Vec<&str> = outcome.steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(texts, vec!["Read a.txt", "Summarize it"]);
    assert_eq!(outcome.steps[0].last_tool_ok, Some(true));
    assert_eq!(outcome.steps[1].last_tool_ok, None);
    assert!(outcome.steps.iter().all(|s| s.state == SessionState::Done));
    // One conversation: the second step was started in the first step's.
    let conversations: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Started { conversation_id, .. } => Some(conversation_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(conversations.len(), 2);
    assert_eq!(conversations[0], conversations[1]);
    assert_eq!(outcome.conversation_id.as_deref(), Some(conversations[0].as_str()));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolFinished { outcome, .. } if outcome == "ok"))
    );

    let saw = rig.planner_saw();
    assert_eq!(saw.len(), 2);
    assert!(saw[0].starts_with("Goal: summarize a.txt"), "{}", saw[0]);
    assert!(saw[1].contains("1. Read a.txt\n2. Summarize it"), "{}", saw[1]);
    assert!(saw[1].contains("Result: a.txt holds the contents"), "{}", saw[1]);
    assert!(saw[1].contains("its last tool call succeeded"), "{}", saw[1]);
    assert_eq!(rig.audit("plan.start")[0]["planner_model"], "cloud-planner");
    assert_eq!(rig.audit("plan.round")[0]["steps"], json!(["Read a.txt", "Summarize it"]));
    assert_eq!(rig.audit("plan.done").len(), 1);
}

#[tokio::test]
async fn the_cost_cap_aborts_before_any_planner_request() {
    let mut rig = rig(vec![Turn::text("1. never")], vec![]);
    rig.planner.price = Some(Price { input_per_mtok: 3.0, output_per_mtok: 15.0 });
    let settings = PlanSettings { cost_cap_usd: 0.01, ..PlanSettings::default() };
    let goal = "organize my notes ".repeat(5_000);
    let (outcome, _) = rig.go(&goal, &settings, None).await;

    let PlanStatus::Aborted { reason } = &outcome.status else { panic!("{:?}", outcome.status) };
    assert!(reason.contains("cost cap of USD 0.01"), "{reason}");
    assert!(reason.contains("raise the plan's cost cap"), "{reason}");
    assert_eq!(rig.planner_script.requests().len(), 0);
    assert_eq!(outcome.rounds, 0);
    assert_eq!(rig.audit("plan.aborted").len(), 1);
}

#[tokio::test]
async fn a_priced_planner_is_charged_by_its_reported_usage() {
    let mut rig = rig(
        vec![Turn::text("1. Read a"), Turn::text("DONE")],
        vec![read("a"), Turn::text("read a")],
    );
    rig.planner.price = Some(Price { input_per_mtok: 1_000.0, output_per_mtok: 1_000.0 });
    let (outcome, _) = rig.go("read a", &PlanSettings::default(), None).await;
    assert_eq!(outcome.status, PlanStatus::Done { summary: String::new() });
    // Two calls of 10 + 5 tokens (the script's usage) at USD 1,000 per million.
    assert!((outcome.planner_cost_usd - 0.03).abs() < 1e-9, "{}", outcome.planner_cost_usd);
}

/// Answers from a queue and remembers what it was asked.
struct Queue(Mutex<Vec<Confirmation>>, Mutex<Vec<String>>);

impl Confirmer for Queue {
    fn confirm(&self, _goal: &str, summary: &str) -> BoxFuture<'_, Confirmation> {
        self.1.lock().unwrap().push(summary.to_owned());
        let answer = self.0.lock().unwrap().remove(0);
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn a_no_from_the_user_sends_it_back_to_planning_with_the_reason() {
    let rig = rig(
        vec![
            Turn::text("1. Read a"),
            Turn::text("DONE: read a"),
            Turn::text("1. Read b"),
            Turn::text("DONE: read a and b"),
        ],
        vec![read("a"), Turn::text("a read"), read("b"), Turn::text("b read")],
    );
    let confirmer = Queue(
        Mutex::new(vec![Confirmation::No { reason: "b is missing".into() }, Confirmation::Yes]),
        Mutex::default(),
    );
    let settings =
        PlanSettings { confirm_completion: true, max_rounds: 4, ..PlanSettings::default() };
    let (outcome, _) = rig.go("read a and b", &settings, Some(&confirmer)).await;

    assert_eq!(outcome.status, PlanStatus::Done { summary: "read a and b".into() });
    assert_eq!(*confirmer.1.lock().unwrap(), vec!["read a", "read a and b"]);
    let saw = rig.planner_saw();
    assert_eq!(saw.len(), 4);
    assert!(saw[2].contains("The user says the goal is not met yet: b is missing"), "{}", saw[2]);
    assert!(!saw[3].contains("b is missing"), "told once: {}", saw[3]);
    assert_eq!(
        rig.audit("plan.confirm"),
        vec![
            json!({"answer": "no", "reason": "b is missing"}),
            json!({"answer": "yes", "reason": null})
        ]
    );
}

#[tokio::test]
async fn completion_to_confirm_without_a_confirmer_is_not_done() {
    let rig = rig(
        vec![Turn::text("1. Read a"), Turn::text("DONE: read a")],
        vec![read("a"), Turn::text("a read")],
    );
    let settings = PlanSettings { confirm_completion: true, ..PlanSettings::default() };
    let (outcome, _) = rig.go("read a", &settings, None).await;
    assert!(matches!(outcome.status, PlanStatus::Aborted { .. }), "{:?}", outcome.status);
}

#[tokio::test]
async fn done_after_a_failed_last_tool_call_is_refused_and_the_planner_told() {
    let rig = rig(
        vec![Turn::text("1. Read bad"), Turn::text("DONE: all good"), Turn::text("DONE: really")],
        vec![read("bad"), Turn::text("I could not read it")],
    );
    let (outcome, _) = rig.go("read bad", &PlanSettings::default(), None).await;

    let PlanStatus::GaveUp { reason } = &outcome.status else { panic!("{:?}", outcome.status) };
    assert!(reason.contains("within 3 planning rounds"), "{reason}");
    assert_eq!(outcome.steps[0].last_tool_ok, Some(false));
    let saw = rig.planner_saw();
    assert_eq!(saw.len(), 3);
    assert!(saw[1].contains("its last tool call FAILED"), "{}", saw[1]);
    assert!(
        saw[2].contains(
            "You said DONE, but the goal cannot count as met: the last tool call of the last step (`probe`) ended failed"
        ),
        "{}",
        saw[2]
    );
    assert_eq!(rig.audit("plan.gave_up").len(), 1);
}

#[tokio::test]
async fn done_after_an_invalid_tool_call_is_refused() {
    let rig = rig(
        vec![Turn::text("1. Read a"), Turn::text("DONE: ok")],
        vec![Turn::tool("probe", json!({"file": "a"})), Turn::text("could not")],
    );
    let settings = PlanSettings { max_rounds: 2, ..PlanSettings::default() };
    let (outcome, _) = rig.go("read a", &settings, None).await;
    let PlanStatus::GaveUp { reason } = &outcome.status else { panic!("{:?}", outcome.status) };
    assert!(
        reason.contains("tool calls with invalid arguments in the last round: `probe`"),
        "{reason}"
    );
}

#[tokio::test]
async fn done_before_any_step_is_refused() {
    let rig = rig(vec![Turn::text("done: nothing to do")], vec![]);
    let settings = PlanSettings { max_rounds: 1, ..PlanSettings::default() };
    let (outcome, _) = rig.go("anything", &settings, None).await;
    let PlanStatus::GaveUp { reason } = &outcome.status else { panic!("{:?}", outcome.status) };
    assert!(reason.contains("no step has been carried out yet"), "{reason}");
}

#[tokio::test]
async fn a_secret_in_a_step_answer_never_reaches_the_planner() {
    let rig = rig(
        vec![Turn::text("1. Find the key"), Turn::text("DONE: found it")],
        vec![read("env"), Turn::text("The key is sk-test-SECRET, in env.")],
    );
    let (outcome, _) = rig.go("find my key sk-test-SECRET", &PlanSettings::default(), None).await;
    assert!(matches!(outcome.status, PlanStatus::Done { .. }), "{:?}", outcome.status);
    let saw = rig.planner_saw();
    assert!(saw[1].contains("The key is [REDACTED:key], in env."), "{}", saw[1]);
    for request in rig.planner_script.requests() {
        let text = serde_json::to_string(&request).unwrap();
        assert!(!text.contains("sk-test-SECRET"), "{text}");
    }
    let start = &rig.audit("plan.start")[0];
    assert!(!start.to_string().contains("sk-test-SECRET"));
}

#[tokio::test]
async fn an_answer_in_neither_form_gets_one_reminder_then_gives_up() {
    let rig = rig(vec![Turn::text("Let me think."), Turn::text("Still thinking.")], vec![]);
    let (outcome, _) = rig.go("x", &PlanSettings::default(), None).await;
    let PlanStatus::GaveUp { reason } = &outcome.status else { panic!("{:?}", outcome.status) };
    assert!(reason.contains("neither DONE nor a numbered plan"), "{reason}");
    assert!(rig.planner_saw()[1].contains("Your last answer was neither"));
}

#[tokio::test]
async fn a_planner_failure_gives_up_with_its_reason() {
    let rig = rig(vec![], vec![]);
    let (outcome, _) = rig.go("x", &PlanSettings::default(), None).await;
    let PlanStatus::GaveUp { reason } = &outcome.status else { panic!("{:?}", outcome.status) };
    assert!(reason.starts_with("the planner failed"), "{reason}");
}

#[tokio::test]
async fn done_after_a_denied_call_is_refused() {
    // No approver: an irreversible call is denied.
    let rig = rig(
        vec![Turn::text("1. Wipe a"), Turn::text("DONE: wiped")],
        vec![Turn::tool("wipe", json!({"path": "a"})), Turn::text("I was not allowed")],
    );
    let settings = PlanSettings { max_rounds: 2, ..PlanSettings::default() };
    let (outcome, events) = rig.go("wipe a", &settings, None).await;
    assert!(events.iter().any(|e| matches!(e, AgentEvent::Denied { .. })));
    let PlanStatus::GaveUp { reason } = &outcome.status else { panic!("{:?}", outcome.status) };
    assert!(reason.contains("denied or refused in the last round: `wipe`"), "{reason}");
}

#[derive(Debug)]
struct DailyCapReached;
impl crate::SpendGuard for DailyCapReached {
    fn check(&self, _estimate_usd: f64) -> Result<Option<String>, String> {
        Err("the daily cap of USD 5.00 is reached; raise [limits] daily_usd".into())
    }
}

#[tokio::test]
async fn the_spend_guard_aborts_before_any_planner_request() {
    let mut rig = rig(vec![Turn::text("1. never")], vec![]);
    rig.executor.config.spend_guard = Some(Arc::new(DailyCapReached));
    let (outcome, _) = rig.go("x", &PlanSettings::default(), None).await;
    assert_eq!(
        outcome.status,
        PlanStatus::Aborted {
            reason: "the daily cap of USD 5.00 is reached; raise [limits] daily_usd".into()
        }
    );
    assert_eq!(rig.planner_script.requests().len(), 0);
}

#[tokio::test]
async fn a_hanging_planner_is_cancelled() {
    let rig = rig(vec![Turn::Hang], vec![]);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let settings = PlanSettings::default();
    let run = plan_and_execute(
        &rig.planner,
        &rig.executor,
        "x",
        None,
        &settings,
        None,
        &tx,
        cancel.clone(),
    );
    let (outcome, ()) = tokio::join!(run, async { cancel.cancel() });
    assert_eq!(outcome.unwrap().status, PlanStatus::Cancelled);
    assert_eq!(rig.audit("plan.cancelled").len(), 1);
}

#[test]
fn planner_replies_are_parsed_robustly() {
    assert_eq!(parse_reply("DONE: it works", 8), Reply::Done("it works".into()));
    assert_eq!(parse_reply("  **done** - fine", 8), Reply::Done("fine".into()));
    assert_eq!(parse_reply("Done", 8), Reply::Done(String::new()));
    assert_eq!(parse_reply("Donald should 1. x", 8), Reply::Neither);
    assert_eq!(
        parse_reply("Plan:\n1. one\n   2) two\nnot a step\n3.5 no\n10. ten", 8),
        Reply::Steps(vec!["one".into(), "two".into(), "ten".into()])
    );
    let long: String = (1..=12).map(|i| format!("{i}. step {i}\n")).collect();
    let Reply::Steps(steps) = parse_reply(&long, 8) else { panic!("no steps") };
    assert_eq!(steps.len(), 8);
    assert_eq!(parse_reply("", 8), Reply::Neither);
    assert_eq!(parse_reply("1.\n2. ", 8), Reply::Neither);
}
