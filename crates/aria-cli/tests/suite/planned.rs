//! Planner/executor runs and personas through the binary, against the mock OpenAI
//! server: the planner plans without tools, the executor does the steps with them, the cost cap
//! stops the planner before it is asked, and a persona rewords an answer but can neither call
//! a tool nor change a fact.

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use serde_json::{Value, json};

use super::harness::{Aria, code, json_of, text};

const NO_SERVER: &str = "http://127.0.0.1:9/v1";

/// `aria.toml` with no embedder and no memory extraction (it would take the scripted turns).
fn write_config(aria: &Aria, text: &str) {
    super::agents::write_config(aria, &format!("extract = false\n{text}"));
}

fn tools(request: &Value) -> usize {
    request["tools"].as_array().map_or(0, Vec::len)
}

fn audit_kinds(aria: &Aria) -> Vec<String> {
    json_of(&aria.run(NO_SERVER, &["audit", "list", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["kind"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_planned_task_is_planned_without_tools_and_done_with_them() {
    let aria = Aria::new();
    std::fs::write(aria.root().join("notes.txt"), "the launch is on Friday\n").unwrap();
    write_config(
        &aria,
        "[agents.lead]\nplanner = \"openai/planner-model\"\nmodels = [\"openai/exec-model\"]\n",
    );
    let mock = MockOpenAi::new(vec![
        MockTurn::text("1. Read notes.txt and say when the launch is."),
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::text("The notes say the launch is on Friday."),
        MockTurn::text("DONE: The launch is on Friday (from notes.txt)."),
    ])
    .serve();
    let out = aria
        .cmd(&mock.base_url())
        .args(["run", "--agent", "lead", "--task", "When is the launch?"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "The launch is on Friday (from notes.txt).");
    assert!(text(&out.stderr).contains("step 1: Read notes.txt"), "{}", text(&out.stderr));
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let models: Vec<&str> = requests.iter().filter_map(|r| r["model"].as_str()).collect();
    assert_eq!(models, ["planner-model", "exec-model", "exec-model", "planner-model"]);
    assert_eq!((tools(&requests[0]), tools(&requests[3])), (0, 0), "the planner has no tools");
    assert!(tools(&requests[1]) > 0, "the executor has");
    // The planner's second look saw what the step found.
    assert!(requests[3].to_string().contains("launch is on Friday"));
    let kinds = audit_kinds(&aria);
    for kind in ["plan.start", "plan.round", "plan.done", "tool.start"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} missing: {kinds:?}");
    }
    assert_eq!(code(&aria.run(NO_SERVER, &["audit", "verify"])), 0);
}

#[test]
fn a_cost_cap_of_a_cent_stops_a_priced_planner_before_it_is_asked() {
    let aria = Aria::new();
    write_config(
        &aria,
        "[limits]\nmax_cost_usd = 0.01\n\n[agents.lead]\nplanner = \"openai/gpt-4o\"\n",
    );
    let mock = MockOpenAi::new(vec![MockTurn::text("1. Anything.")]).serve();
    let out = aria
        .cmd(&mock.base_url())
        .args(["run", "--agent", "lead", "--task", "Plan a trip around the world.", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    let outcome = json_of(&out);
    assert_eq!(outcome["status"], json!("aborted"), "{outcome}");
    assert!(outcome["reason"].as_str().unwrap().contains("0.01"), "{outcome}");
    assert!(mock.requests().is_empty(), "nothing was sent");
    assert!(audit_kinds(&aria).contains(&"plan.aborted".to_owned()));
}

#[test]
fn a_confirmed_task_without_anyone_to_ask_is_not_called_done() {
    let aria = Aria::new();
    write_config(
        &aria,
        "[agents.lead]\nplanner = \"openai/planner-model\"\nconfirm_completion = true\n",
    );
    let mock = MockOpenAi::new(vec![
        MockTurn::text("1. Say hello."),
        MockTurn::text("Hello."),
        MockTurn::text("DONE: Said hello."),
    ])
    .serve();
    // stdin is not a terminal here: nobody can say yes.
    let out = aria
        .cmd(&mock.base_url())
        .args(["run", "--agent", "lead", "--task", "Say hello.", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    assert_eq!(json_of(&out)["status"], json!("aborted"));
}

fn persona_config(aria: &Aria) {
    write_config(aria, "[agents.pal]\npersona = \"friendly\"\n");
}

#[test]
fn a_persona_rewords_the_answer_but_keeps_its_facts() {
    let aria = Aria::new();
    persona_config(&aria);
    let mock = MockOpenAi::new(vec![
        MockTurn::text("The file `notes.txt` has 3 lines."),
        MockTurn::text("Good news! The file `notes.txt` has 3 lines. 😊"),
    ])
    .serve();
    let out = aria
        .cmd(&mock.base_url())
        .args(["run", "--agent", "pal", "--task", "How long are my notes?"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "Good news! The file `notes.txt` has 3 lines. 😊");
    let persona_request = &mock.requests()[1];
    assert_eq!(tools(persona_request), 0, "a persona has no tools");
    assert!(persona_request.to_string().contains("Juno"), "the shipped persona's style");

    // A rewrite that changes a fact is not used.
    let mock = MockOpenAi::new(vec![
        MockTurn::text("The file `notes.txt` has 3 lines."),
        MockTurn::text("Great! Your notes have 4 lines."),
    ])
    .serve();
    let out = aria
        .cmd(&mock.base_url())
        .args(["run", "--agent", "pal", "--task", "Again?", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = json_of(&out);
    assert_eq!(out["styled_answer"], out["answer"], "{out}");
}

#[test]
fn a_persona_cannot_cause_a_tool_call() {
    let aria = Aria::new();
    persona_config(&aria);
    let mock = MockOpenAi::new(vec![
        MockTurn::text("Nothing needed doing."),
        MockTurn::tool_call("file_write", r#"{"path":"pwned.txt","content":"x"}"#),
    ])
    .serve();
    let out = aria
        .cmd(&mock.base_url())
        .args(["run", "--agent", "pal", "--task", "Anything to do?"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "Nothing needed doing.");
    assert!(!aria.root().join("pwned.txt").exists(), "no tool ran");
    assert_eq!(mock.requests().len(), 2, "and nothing went back to the model");
    let audit = json_of(&aria.run(NO_SERVER, &["audit", "list", "--json"]));
    let restyle =
        audit.as_array().unwrap().iter().find(|r| r["kind"] == "persona.restyle").unwrap();
    assert_eq!(restyle["payload"]["outcome"], json!("kept"));
    assert!(restyle["payload"]["reason"].as_str().unwrap().contains("tool"));
    let kinds = audit_kinds(&aria);
    assert_eq!(kinds.iter().filter(|k| *k == "tool.start").count(), 0, "{kinds:?}");

    // A persona that does not exist is named before anything runs.
    write_config(&aria, "[agents.pal]\npersona = \"pirate\"\n");
    let out = aria.run(&mock.base_url(), &["run", "--agent", "pal", "--task", "x"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("personas/pirate.toml"), "{}", text(&out.stderr));
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn aria_chat_plans_and_rewords_as_its_agent_does() {
    let aria = Aria::new();
    write_config(
        &aria,
        "[agents.lead]\nplanner = \"openai/planner-model\"\npersona = \"friendly\"\n",
    );
    let mock = MockOpenAi::new(vec![
        MockTurn::text("1. Say that 2 + 2 is 4."),
        MockTurn::text("2 + 2 is 4."),
        MockTurn::text("DONE: 2 + 2 is 4."),
        MockTurn::text("Happy to help: 2 + 2 is 4! 🎉"),
    ])
    .serve();
    let out = aria
        .cmd(&mock.base_url())
        .args(["chat", "--agent", "lead", "What is 2 + 2?"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "Happy to help: 2 + 2 is 4! 🎉");
    assert!(text(&out.stderr).contains("step 1: Say that 2 + 2 is 4."), "{}", text(&out.stderr));
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(tools(&requests[3]), 0, "the persona has no tools");
}

#[test]
fn the_daemon_plans_rewords_and_asks_the_channel_to_confirm() {
    let aria = Aria::new();
    write_config(
        &aria,
        "[agents.lead]\nplanner = \"openai/planner-model\"\nconfirm_completion = true\n\n\
         [agents.pal]\npersona = \"friendly\"\n",
    );
    let mock = MockOpenAi::new(vec![
        // lead: plan, step, done, (user denies) plan again, step, done, (user approves)
        MockTurn::text("1. Say hello."),
        MockTurn::text("Hello."),
        MockTurn::text("DONE: Said hello."),
        MockTurn::text("1. Say hello louder."),
        MockTurn::text("HELLO."),
        MockTurn::text("DONE: Said HELLO."),
        // pal: the answer, then the persona's rewording
        MockTurn::text("The answer is 42."),
        MockTurn::text("Great question! The answer is 42. ✨"),
    ])
    .serve();
    let daemon = super::daemon::Daemon::start(&aria, &mock.base_url(), &[]);
    let (_, made) = daemon.json("POST", "/api/v1/conversations", Some(&json!({"agent": "lead"})));
    let id = made["id"].as_str().unwrap().to_owned();
    let mut events = super::daemon::message_events(&daemon, &id, "Greet me.");
    for decision in ["deny", "approve"] {
        let asked = events.next_named("approval");
        assert_eq!(asked["tool"], json!("confirm_completion"), "{asked}");
        let (status, body) = daemon.answer_as_person(asked["id"].as_str().unwrap(), decision);
        assert_eq!(status, 200, "{body}");
    }
    let done = events.next_named("done");
    assert_eq!(
        (done["state"].clone(), done["answer"].clone()),
        (json!("done"), json!("Said HELLO."))
    );
    let steps: Vec<&Value> =
        events.seen.iter().filter(|(n, _)| n == "plan_step").map(|(_, d)| d).collect();
    assert_eq!(steps.len(), 2, "{:?}", events.names());
    let requests = mock.requests();
    // After the "no", the planner was told and planned again.
    assert!(requests[3].to_string().contains("did not confirm"), "{}", requests[3]);
    assert_eq!(tools(&requests[0]) + tools(&requests[2]) + tools(&requests[3]), 0);

    let (_, made) = daemon.json("POST", "/api/v1/conversations", Some(&json!({"agent": "pal"})));
    let pal = made["id"].as_str().unwrap().to_owned();
    let mut events = super::daemon::message_events(&daemon, &pal, "What is the answer?");
    let done = events.next_named("done");
    assert_eq!(done["answer"], json!("Great question! The answer is 42. ✨"));
    let texts: Vec<&Value> =
        events.seen.iter().filter(|(n, _)| n == "text").map(|(_, d)| &d["delta"]).collect();
    assert_eq!(texts, [&json!("Great question! The answer is 42. ✨")], "only the reworded answer");
    assert_eq!(tools(&mock.requests()[7]), 0, "the persona has no tools");
}
