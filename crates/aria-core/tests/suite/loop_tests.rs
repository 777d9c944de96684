use std::time::Duration;

use aria_api::{
    AuditEvent, AuditSink, Journal, JournalError, Message, MessageMeta, Role, SessionState::*,
    Tier, ToolCall,
};
use aria_core::{AgentEvent, RunError, untrusted_body};
use aria_testkit::memory::MemoryJournal;
use aria_testkit::scripted::{End, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::harness::{Behaviour, TestTool, rig, rig_with_journal};

#[tokio::test]
async fn a_final_answer_walks_the_short_path() {
    let r = rig(vec![Turn::text("Hello there")], End::Fail, vec![], |_| {});
    let (result, events) = r.run("say hi").await;
    let s = result.unwrap();
    assert_eq!(s.state, Done);
    assert_eq!(s.answer.as_deref(), Some("Hello there"));
    assert_eq!(s.iterations, 1);
    assert_eq!(s.usage.total(), 15);
    assert_eq!(r.journal.saved_states(&s.id), vec![Planning, Planning, Completing, Done]);
    assert_eq!(
        r.journal.audit_kinds(),
        vec![
            "session.start",
            "session.transition",
            "model.request",
            "model.response",
            "session.transition",
            "session.transition",
            "session.end"
        ]
    );
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Text { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello there");
    assert_eq!(r.journal.traces().len(), 1);
}

#[tokio::test]
async fn a_tool_result_goes_back_paired_with_its_call() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    let r = rig(
        vec![Turn::tool("file_read", json!({"path": "notes.txt"})), Turn::text("It says hi.")],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("what does notes.txt say?").await.0.unwrap();
    assert_eq!(s.state, Done);
    assert_eq!(s.iterations, 2);
    assert_eq!(tool.count(), 1);
    let requests = r.provider.requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1].messages;
    assert_eq!(second[0].role, Role::System);
    assert_eq!(second[1], Message::user("what does notes.txt say?"));
    assert_eq!(second[2].tool_calls[0].name, "file_read");
    assert_eq!(second[3].role, Role::Tool);
    assert_eq!(second[3].tool_call_id.as_deref(), Some("call_0_0"));
    // Tool output reaches the model wrapped as untrusted data (output.rs).
    assert_eq!(untrusted_body(&second[3].content), Some("contents of \"notes.txt\""));
    assert_eq!(requests[0].tools.len(), 1);
    let kinds = r.journal.audit_kinds();
    let start = kinds.iter().position(|k| k == "tool.start").unwrap();
    assert_eq!(kinds[start + 1], "tool.end");
    let states = r.journal.saved_states(&s.id);
    for w in [Validating, Executing, Filtering, Updating] {
        assert!(states.contains(&w), "{w} missing from {states:?}");
    }
}

#[tokio::test]
async fn invalid_arguments_go_back_to_the_model_and_nothing_runs() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    let r = rig(
        vec![
            Turn::Tools(vec![("file_read".into(), r#"{"file": "x"}"#.into())]),
            Turn::Tools(vec![("file_read".into(), "{not json".into())]),
            Turn::Tools(vec![("rm_rf".into(), "{}".into())]),
            Turn::text("giving up"),
        ],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("read x").await.0.unwrap();
    assert_eq!(tool.count(), 0, "no call may run with invalid arguments");
    assert_eq!(s.iterations, 4, "each invalid call counts as an iteration");
    let requests = r.provider.requests();
    let answer = |i: usize| requests[i].messages.last().unwrap().content.clone();
    assert!(answer(1).contains("do not match its schema"), "{}", answer(1));
    assert!(answer(2).contains("not valid JSON"), "{}", answer(2));
    assert!(answer(3).contains("no tool named `rm_rf`"), "{}", answer(3));
    assert_eq!(r.journal.audit_kinds().iter().filter(|k| *k == "tool.invalid").count(), 3);
    assert!(!r.journal.saved_states(&s.id).contains(&Executing));
}

#[tokio::test]
async fn a_model_that_never_stops_is_ended_at_the_iteration_limit() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    let r = rig(
        vec![Turn::tool("file_read", json!({"path": "a"}))],
        End::RepeatLast,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("loop forever").await.0.unwrap();
    assert_eq!(s.state, Failed);
    assert_eq!(s.iterations, 15);
    assert_eq!(r.provider.requests().len(), 15);
    assert!(s.error.unwrap().contains("15 calls"));
}

#[tokio::test]
async fn an_audit_write_failure_halts_before_the_tool_runs() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    // session.start, transition, model.request, model.response, transition(Validating),
    // transition(Executing) succeed; tool.start is the 7th write and fails.
    let r = rig_with_journal(
        vec![Turn::tool("file_read", json!({"path": "a"})), Turn::text("done")],
        End::Fail,
        vec![tool.clone()],
        |_| {},
        MemoryJournal::failing_audit_from(6),
    );
    let (result, _) = r.run("read a").await;
    assert!(matches!(result, Err(RunError::Journal(JournalError { .. }))), "{result:?}");
    assert_eq!(tool.count(), 0, "a tool must never run unaudited");
}

#[tokio::test]
async fn cancellation_ends_in_cancelled() {
    let r = rig(vec![Turn::Hang], End::Fail, vec![], |_| {});
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let s = r.run_with("hang", cancel).await.0.unwrap();
    assert_eq!(s.state, Cancelled);
    assert_eq!(r.journal.audit_kinds().last().unwrap(), "session.end");
}

#[tokio::test]
async fn the_session_time_limit_ends_a_hung_model_call() {
    let r = rig(vec![Turn::Hang], End::Fail, vec![], |c| {
        c.limits.session_timeout = Duration::from_millis(80)
    });
    let s = r.run("hang").await.0.unwrap();
    assert_eq!(s.state, Failed);
    assert!(s.error.unwrap().contains("time limit"));
}

#[tokio::test]
async fn a_slow_tool_is_stopped_at_its_timeout() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Sleep(Duration::from_secs(30)));
    let r = rig(
        vec![Turn::tool("file_read", json!({"path": "a"})), Turn::text("ok")],
        End::Fail,
        vec![tool],
        |c| c.limits.tool_timeout = Duration::from_millis(50),
    );
    let s = r.run("slow").await.0.unwrap();
    assert_eq!(s.state, Done);
    let seen = r.provider.requests()[1].messages.last().unwrap().content.clone();
    assert!(seen.contains("did not finish within"), "{seen}");
    let end = r.journal.audit_events().into_iter().find(|e| e.kind == "tool.end").unwrap();
    assert_eq!(end.payload["outcome"], "timeout");
}

#[tokio::test]
async fn the_token_limit_stops_the_run() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    // Each scripted turn uses 15 tokens; a 40-token budget allows three calls.
    let r = rig(
        vec![Turn::tool("file_read", json!({"path": "a"}))],
        End::RepeatLast,
        vec![tool],
        |c| c.limits.max_tokens = 40,
    );
    let s = r.run("spend").await.0.unwrap();
    assert_eq!(s.state, Failed);
    assert_eq!(s.iterations, 3);
    assert!(s.error.unwrap().contains("tokens"));
}

#[tokio::test]
async fn the_cost_cap_refuses_a_call_before_it_is_made_and_warns_first() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    // Input is free and each turn writes 5 output tokens at USD 30k/Mtok = USD 0.15, so the
    // estimate of the next call is exactly USD 0.15. Cap 0.35: two calls (0.30, 86 % → warning),
    // then the third (0.45 > 0.35) is refused before it is sent.
    let r = rig(
        vec![Turn::tool("file_read", json!({"path": "a"}))],
        End::RepeatLast,
        vec![tool],
        |c| {
            c.limits.max_cost_usd = 0.35;
            c.price = Some(aria_core::Price { input_per_mtok: 0.0, output_per_mtok: 30_000.0 });
        },
    );
    let (result, events) = r.run("spend").await;
    let s = result.unwrap();
    assert_eq!(s.state, Failed);
    assert_eq!(r.provider.requests().len(), 2, "the call that would cross the cap is never sent");
    assert!((s.cost_usd - 0.30).abs() < 1e-9, "{}", s.cost_usd);
    assert!(s.error.unwrap().contains("cost cap of USD 0.35"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Warning { message } if message.contains("cost cap")))
    );
    assert!(r.journal.audit_kinds().contains(&"cost.refused".to_string()));
}

#[tokio::test]
async fn a_cap_below_one_call_sends_nothing() {
    let r = rig(vec![Turn::text("expensive")], End::Fail, vec![], |c| {
        c.limits.max_cost_usd = 0.000_001;
        c.price = Some(aria_core::Price { input_per_mtok: 1_000.0, output_per_mtok: 1_000.0 });
    });
    let s = r.run("a task long enough to have a measurable token estimate").await.0.unwrap();
    assert_eq!(s.state, Failed);
    assert!(r.provider.requests().is_empty());
}

#[tokio::test]
async fn tool_output_is_redacted_and_capped_before_the_model_sees_it() {
    let big = format!("key sk-test-SECRET {}", "x".repeat(500));
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Output(big));
    let r = rig(
        vec![Turn::tool("file_read", json!({"path": "a"})), Turn::text("ok")],
        End::Fail,
        vec![tool],
        |c| c.limits.max_tool_output_chars = 100,
    );
    r.run("leak").await.0.unwrap();
    let seen = r.provider.requests()[1].messages.last().unwrap().content.clone();
    assert!(!seen.contains("sk-test-SECRET"), "{seen}");
    let body = untrusted_body(&seen).unwrap_or_else(|| panic!("not wrapped: {seen}"));
    assert!(body.starts_with("key [REDACTED:test]"), "{seen}");
    assert!(body.contains("output truncated"), "{seen}");
    let redacted = r.journal.audit_events().into_iter().find(|e| e.kind == "filter.redacted");
    let redacted = redacted.expect("a filter.redacted audit record");
    assert_eq!(redacted.payload["kinds"], json!({"test": 1}));
    assert!(!redacted.payload.to_string().contains("sk-test-SECRET"));
}

#[tokio::test]
async fn a_guard_refusal_is_audited_and_shown_to_the_model() {
    let tool = TestTool::new(
        "file_read",
        Tier::Read,
        Behaviour::Refuse("/etc/passwd is outside the allowed roots".into()),
    );
    let r = rig(
        vec![
            Turn::tool("file_read", json!({"path": "/etc/passwd"})),
            Turn::text("I can't read that."),
        ],
        End::Fail,
        vec![tool],
        |_| {},
    );
    let s = r.run("read /etc/passwd").await.0.unwrap();
    assert_eq!(s.state, Done);
    let refusal = r.journal.audit_events().into_iter().find(|e| e.kind == "tool.refused").unwrap();
    assert_eq!(refusal.payload["arguments"]["path"], "/etc/passwd");
    assert_eq!(refusal.payload["by"], "guard");
    let seen = r.provider.requests()[1].messages.last().unwrap().content.clone();
    let body = untrusted_body(&seen).unwrap_or_else(|| panic!("not wrapped: {seen}"));
    assert!(body.starts_with("refused: /etc/passwd is outside"), "{seen}");
}

#[tokio::test]
async fn a_secret_in_the_task_never_reaches_the_model() {
    let r = rig(vec![Turn::text("noted")], End::Fail, vec![], |_| {});
    r.run("my key is sk-test-SECRET, keep it").await.0.unwrap();
    let sent = &r.provider.requests()[0].messages[1].content;
    assert_eq!(sent, "my key is [REDACTED:test], keep it");
}

#[tokio::test]
async fn a_fatal_tool_error_fails_the_run() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Fatal);
    let r = rig(
        vec![Turn::tool("file_read", json!({"path": "a"}))],
        End::RepeatLast,
        vec![tool],
        |_| {},
    );
    let s = r.run("x").await.0.unwrap();
    assert_eq!(s.state, Failed);
    assert!(s.error.unwrap().contains("failed fatally"));
    assert_eq!(r.provider.requests().len(), 1);
}

#[tokio::test]
async fn a_provider_error_fails_the_run_with_its_message() {
    let r = rig(
        vec![Turn::Fail(aria_api::ProviderError::Auth { message: "invalid key".into() })],
        End::Fail,
        vec![],
        |_| {},
    );
    let s = r.run("x").await.0.unwrap();
    assert_eq!(s.state, Failed);
    let error = s.error.unwrap();
    assert!(error.contains("invalid key") && error.contains("API key"), "{error}");
    assert_eq!(r.journal.traces()[0].outcome, "auth");
}

#[tokio::test]
async fn an_interrupted_session_resumes_and_in_flight_calls_are_marked() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    let r =
        rig(vec![Turn::text("Finished after the crash.")], End::Fail, vec![tool.clone()], |_| {});
    // Build the state a crash during Executing leaves behind.
    let journal = &r.journal;
    let s = journal
        .create_session(&aria_api::NewSession {
            conversation_id: None,
            task: "read a".into(),
            provider: "scripted".into(),
            // Another model than the agent's: a resume may change it, and says so.
            model: "old-model".into(),
            limits: Default::default(),
        })
        .unwrap();
    let call =
        ToolCall { id: "c9".into(), name: "file_read".into(), arguments: r#"{"path":"a"}"#.into() };
    journal
        .append_message(
            &s.id,
            &s.conversation_id,
            &Message::user("read a"),
            &MessageMeta::default(),
        )
        .unwrap();
    journal
        .append_message(
            &s.id,
            &s.conversation_id,
            &Message::assistant("", vec![call]),
            &MessageMeta::default(),
        )
        .unwrap();
    let mut crashed = s.clone();
    crashed.state = Executing;
    crashed.iterations = 1;
    journal.save_session(&crashed).unwrap();
    journal.append(AuditEvent::new(Some(&s.id), "agent", "tool.start", json!({}))).unwrap();

    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let done = r.agent.resume(&s.id, &tx, CancellationToken::new()).await.unwrap();
    assert_eq!(done.state, Done);
    assert_eq!(done.iterations, 2);
    assert_eq!(tool.count(), 0, "an interrupted call is never silently re-run");
    let resume = r.journal.audit_events().into_iter().find(|e| e.kind == "session.resume").unwrap();
    let agent_model = r.agent.config().model.clone();
    assert_eq!(resume.payload["changed"]["model"], json!(["old-model", agent_model]));
    assert_eq!(done.model, agent_model);
    let sent = &r.provider.requests()[0].messages;
    let marker = sent.last().unwrap();
    assert_eq!(marker.tool_call_id.as_deref(), Some("c9"));
    assert!(marker.content.contains("interrupted"), "{}", marker.content);
    assert!(r.journal.audit_kinds().contains(&"session.resume".to_string()));

    // A finished session cannot be resumed.
    let again = r.agent.resume(&s.id, &tx, CancellationToken::new()).await;
    assert!(matches!(again, Err(RunError::NotResumable { .. })));
    let unknown = r.agent.resume("nope", &tx, CancellationToken::new()).await;
    assert!(matches!(unknown, Err(RunError::UnknownSession(_))));
}

#[tokio::test]
async fn a_tool_selection_offers_the_fitting_tools_plus_those_called() {
    let tools = ["file_read", "git_log", "web_fetch"]
        .map(|n| TestTool::new(n, Tier::Read, Behaviour::Echo))
        .to_vec();
    let r = rig(
        vec![Turn::tool("web_fetch", json!({"path": "."})), Turn::text("Done.")],
        End::Fail,
        tools,
        |c| c.tool_selection = Some(std::sync::Arc::new(aria_core::ToolSelection::new(1, None))),
    );
    let s = r.run("read notes.txt").await.0.unwrap();
    assert_eq!(s.state, Done);
    let offered = |i: usize| -> Vec<String> {
        r.provider.requests()[i].tools.iter().map(|t| t.name.clone()).collect()
    };
    // The core file tool, and one ranked tool (a tie, broken by the registry's order).
    assert_eq!(offered(0), ["file_read", "git_log"]);
    // The model called a tool it was not shown (validation allows every registered tool): it
    // is offered from then on, so its call and result make sense to the model.
    assert_eq!(offered(1), ["file_read", "git_log", "web_fetch"]);
    let kinds = r.journal.audit_kinds();
    assert_eq!(kinds.iter().filter(|k| *k == "tools.selected").count(), 1, "{kinds:?}");
}

/// After a correct result, small models repeat the same call instead of answering.
/// The repeat is not run; the model is told to answer from the result it has.
#[tokio::test]
async fn an_identical_repeated_call_is_answered_with_a_note_not_run_again() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    let r = rig(
        vec![
            Turn::tool("file_read", json!({"path": "notes.txt"})),
            Turn::tool("file_read", json!({"path": "notes.txt"})),
            Turn::tool("file_read", json!({"path": "other.txt"})),
            Turn::text("It says hi."),
        ],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("what does notes.txt say?").await.0.unwrap();
    assert_eq!(s.state, Done);
    assert_eq!(tool.count(), 2, "the repeat was not run; a different call was");
    let third = &r.provider.requests()[2].messages;
    let note = third.last().unwrap();
    assert_eq!(note.role, Role::Tool);
    assert!(note.content.contains("you already have this result"), "{}", note.content);
    assert!(r.journal.audit_kinds().contains(&"tool.repeated".to_string()));
}

/// A task that asks for a change to files does not end `done` when nothing changed.
#[tokio::test]
async fn a_change_that_did_not_happen_fails_the_run_with_the_models_answer() {
    let r =
        rig(vec![Turn::text("Here is how you could rename it: ...")], End::Fail, vec![], |_| {});
    let s = r.run("Rename multiply to mul in calc.py").await.0.unwrap();
    assert_eq!(s.state, Failed);
    let error = s.error.unwrap();
    assert!(
        error.contains("no change was made") && error.contains("how you could rename"),
        "{error}"
    );
    assert!(r.journal.audit_kinds().contains(&"run.unfulfilled".to_string()));

    // The same task with a write that succeeded is done; a question about the file is too.
    let write = TestTool::new("file_write", Tier::RecoverableWrite, Behaviour::Echo);
    let r = rig(
        vec![Turn::tool("file_write", json!({"path": "calc.py"})), Turn::text("Renamed.")],
        End::Fail,
        vec![write.clone()],
        |c| c.preapproval = aria_core::Preapproval::new(&["file_write".to_owned()], false).unwrap(),
    );
    assert_eq!(r.run("Rename multiply to mul in calc.py").await.0.unwrap().state, Done);
    assert_eq!(write.count(), 1);
    let r = rig(vec![Turn::text("It multiplies.")], End::Fail, vec![], |_| {});
    assert_eq!(r.run("What does calc.py do?").await.0.unwrap().state, Done);
    // A question whose words include a verb of change is a question all the same.
    for question in
        ["What does the add function in calc.py return?", "how does remove_item in cart.py work"]
    {
        let r = rig(vec![Turn::text("The sum.")], End::Fail, vec![], |_| {});
        let s = r.run(question).await.0.unwrap();
        assert_eq!(s.state, Done, "{question}: {:?}", s.error);
    }

    // When the write was denied, the failure says so rather than blaming the model.
    let write = TestTool::new("file_write", Tier::Irreversible, Behaviour::Echo);
    let r = rig(
        vec![Turn::tool("file_write", json!({"path": "calc.py"})), Turn::text("I could not.")],
        End::Fail,
        vec![write.clone()],
        |_| {},
    );
    let s = r.run("Rename multiply to mul in calc.py").await.0.unwrap();
    assert_eq!((s.state, write.count()), (Failed, 0));
    let error = s.error.unwrap();
    assert!(error.contains("1 call(s) that needed approval were denied"), "{error}");
    assert!(!error.contains("larger model"), "{error}");
}

/// Small models describe the call ("you can use the `file_read` tool") instead of
/// making it. Told once, in the run's context only, they call it.
#[tokio::test]
async fn a_described_call_gets_one_nudge_and_then_runs() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    let r = rig(
        vec![
            Turn::text("You can use the `file_read` tool to read notes.txt."),
            Turn::tool("file_read", json!({"path": "notes.txt"})),
            Turn::text("It says hi."),
        ],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("what does notes.txt say?").await.0.unwrap();
    assert_eq!((s.state, s.answer.as_deref()), (Done, Some("It says hi.")));
    assert_eq!(tool.count(), 1);
    let nudge = r.provider.requests()[1].messages.last().unwrap().content.clone();
    assert!(nudge.contains("did not call it"), "{nudge}");
    assert!(r.journal.audit_kinds().contains(&"model.nudged".to_string()));

    // Only once a run; and an answer after a call is never nudged.
    let r = rig(
        vec![
            Turn::text("You can use the `file_read` tool."),
            Turn::text("You can use the `file_read` tool."),
        ],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("how would I read a file?").await.0.unwrap();
    assert_eq!(s.state, Done);
    assert_eq!(r.provider.requests().len(), 2);
}

/// After a tool result (or a denied call) a small model may answer nothing at all.
/// Asked once, it answers; an empty answer with no tool called is not asked again.
#[tokio::test]
async fn an_empty_answer_after_a_tool_call_is_asked_for_once() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    let r = rig(
        vec![
            Turn::tool("file_read", json!({"path": "code.txt"})),
            Turn::text(""),
            Turn::text("The code is 4242."),
        ],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("what is the code in code.txt?").await.0.unwrap();
    assert_eq!((s.state, s.answer.as_deref()), (Done, Some("The code is 4242.")));
    let asked = r.provider.requests()[2].messages.last().unwrap().content.clone();
    assert!(asked.contains("Your answer was empty"), "{asked}");
    assert!(r.journal.audit_kinds().contains(&"model.nudged".to_string()));

    // Twice empty: asked once only. No tool called: not asked.
    let r = rig(
        vec![Turn::tool("file_read", json!({"path": "a"})), Turn::text(" "), Turn::text("")],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("read a").await.0.unwrap();
    assert_eq!(r.provider.requests().len(), 3);
    // Still nothing: the run fails and says why, it does not end `done` with no answer.
    assert_eq!(s.state, Failed);
    assert!(s.error.as_deref().unwrap_or("").contains("without an answer"), "{:?}", s.error);
    assert!(r.journal.audit_kinds().contains(&"run.unfulfilled".to_string()));
    let r = rig(vec![Turn::text("")], End::Fail, vec![tool.clone()], |_| {});
    let s = r.run("say nothing").await.0.unwrap();
    assert_eq!(r.provider.requests().len(), 1);
    assert_eq!(s.state, Failed);

    // A run that changed a file may end without words.
    let write = TestTool::new("file_write", Tier::RecoverableWrite, Behaviour::Echo);
    let r = rig(
        vec![Turn::tool("file_write", json!({"path": "a"})), Turn::text(""), Turn::text("")],
        End::Fail,
        vec![tool, write.clone()],
        |c| c.preapproval = aria_core::Preapproval::new(&["file_write".to_owned()], false).unwrap(),
    );
    let s = r.run("write x to a").await.0.unwrap();
    assert_eq!((s.state, write.count()), (Done, 1), "{:?}", s.error);
}

/// A small model searched for a phrase, found nothing, and answered anyway (the
/// tool's "No matches" line, or a guess). It is told once; an answer after a result that holds
/// it is an answer.
#[tokio::test]
async fn an_answer_right_after_a_search_that_found_nothing_is_pointed_out_once() {
    let nothing = "No matches for \"moved to\" in /r/notes.txt (1 files searched).";
    let search = TestTool::new("file_search", Tier::Read, Behaviour::Output(nothing.to_owned()));
    let r = rig(
        vec![
            Turn::tool("file_search", json!({"path": "notes.txt"})),
            Turn::text(nothing),
            Turn::text("It moved to Thursday."),
        ],
        End::Fail,
        vec![search.clone()],
        |c| c.tool_selection = Some(std::sync::Arc::new(aria_core::ToolSelection::new(4, None))),
    );
    let s = r.run("What day was the meeting moved to? Check notes.txt.").await.0.unwrap();
    assert_eq!(s.answer.as_deref(), Some("It moved to Thursday."));
    let note = r.provider.requests()[2].messages.last().unwrap().content.clone();
    assert!(note.contains("failed or found nothing"), "{note}");

    // A model shown every tool (a large one) is not second-guessed.
    let r = rig(
        vec![Turn::tool("file_search", json!({"path": "notes.txt"})), Turn::text(nothing)],
        End::Fail,
        vec![search],
        |_| {},
    );
    r.run("What day was the meeting moved to? Check notes.txt.").await.0.unwrap();
    assert_eq!(r.provider.requests().len(), 2);

    let read =
        TestTool::new("file_read", Tier::Read, Behaviour::Output("The code is 4242.".into()));
    let r = rig(
        vec![Turn::tool("file_read", json!({"path": "code.txt"})), Turn::text("The code is 4242.")],
        End::Fail,
        vec![read],
        |c| c.tool_selection = Some(std::sync::Arc::new(aria_core::ToolSelection::new(4, None))),
    );
    let s = r.run("Read code.txt and tell me the code.").await.0.unwrap();
    assert_eq!((s.state, r.provider.requests().len()), (Done, 2), "a quoted answer is an answer");
}

/// A call described after another call is pointed out too (once a run).
#[tokio::test]
async fn a_call_described_after_a_tool_result_is_pointed_out() {
    let tool = TestTool::new("file_search", Tier::Read, Behaviour::Echo);
    let r = rig(
        vec![
            Turn::tool("file_search", json!({"path": "src/main.rs"})),
            Turn::text("To find it, you can use the `file_search` function with the pattern TODO."),
            Turn::tool("file_search", json!({"path": "."})),
            Turn::text("util.py"),
        ],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("Which file contains the word TODO?").await.0.unwrap();
    assert_eq!((s.state, s.answer.as_deref(), tool.count()), (Done, Some("util.py"), 2));
    let note = r.provider.requests()[2].messages.last().unwrap().content.clone();
    assert!(note.contains("You described calling `file_search`"), "{note}");
}

/// A model that explains a change (a `sed` line) instead of making it is told once,
/// naming the tools that change files; if it still does not, the run fails.
#[tokio::test]
async fn a_change_explained_instead_of_made_is_pointed_out_once() {
    let write = TestTool::new("file_write", Tier::RecoverableWrite, Behaviour::Echo);
    let approve = |c: &mut aria_core::AgentConfig| {
        c.preapproval = aria_core::Preapproval::new(&["file_write".to_owned()], false).unwrap()
    };
    let r = rig(
        vec![
            Turn::text("Run: sed -i 's/8088/9090/' config.toml"),
            Turn::tool("file_write", json!({"path": "config.toml"})),
            Turn::text("Changed."),
        ],
        End::Fail,
        vec![write.clone()],
        approve,
    );
    let s = r.run("Change the port in config.toml from 8088 to 9090.").await.0.unwrap();
    assert_eq!((s.state, write.count()), (Done, 1));
    let note = r.provider.requests()[1].messages.last().unwrap().content.clone();
    assert!(
        note.starts_with("[ARIA] No file has changed") && note.contains("`file_write`"),
        "{note}"
    );
    assert!(r.journal.audit_kinds().contains(&"model.nudged".to_string()));

    // Told once only: a second explanation fails the run.
    let write = TestTool::new("file_write", Tier::RecoverableWrite, Behaviour::Echo);
    let r = rig(
        vec![Turn::text("Use sed."), Turn::text("Really, use sed.")],
        End::Fail,
        vec![write.clone()],
        approve,
    );
    let s = r.run("Change the port in config.toml from 8088 to 9090.").await.0.unwrap();
    assert_eq!((s.state, write.count(), r.provider.requests().len()), (Failed, 0, 2));
    assert!(s.error.unwrap().contains("Really, use sed"));
}

/// A change asked for and not made fails the run even when the model was told something on the
/// way (ARIA's note is not the task).
#[tokio::test]
async fn a_change_not_made_fails_the_run_after_a_note_too() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    let r = rig(
        vec![
            Turn::text("You can use the `file_read` tool to read calc.py."),
            Turn::text("I renamed it."),
        ],
        End::Fail,
        vec![tool],
        |_| {},
    );
    let s = r.run("Rename multiply to mul in calc.py").await.0.unwrap();
    assert_eq!(s.state, Failed);
    assert!(s.error.unwrap().contains("no change was made"));
}

/// Small models retry a call that just failed exactly as it was. The repeat is not run (nor a
/// third one); the model is told the error and to change the call. A changed call runs.
#[tokio::test]
async fn a_failed_call_repeated_as_it_was_is_answered_with_its_error_not_run_again() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Refuse("no such file".into()));
    let r = rig(
        vec![
            Turn::tool("file_read", json!({"path": "a.txt"})),
            Turn::tool("file_read", json!({"path": "a.txt"})),
            Turn::tool("file_read", json!({"path": "a.txt"})),
            Turn::tool("file_read", json!({"path": "b.txt"})),
            Turn::text("Neither file can be read."),
        ],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("what does a.txt say?").await.0.unwrap();
    assert_eq!(s.state, Done);
    assert_eq!(tool.count(), 2, "the first call and the changed one ran; the repeats did not");
    let requests = r.provider.requests();
    let first_error = requests[1].messages.last().unwrap().content.clone();
    assert!(first_error.contains("no such file"), "{first_error}");
    for step in [2, 3] {
        let note = requests[step].messages.last().unwrap();
        assert_eq!(note.role, Role::Tool);
        let body = aria_core::untrusted_body(&note.content).unwrap_or(&note.content);
        assert!(body.starts_with("this exact call just failed with: "), "{body}");
        assert!(body.contains("no such file"), "{body}");
        assert!(body.ends_with("change it (different arguments or another tool)"), "{body}");
        assert!(!body.contains("just failed with: this exact call"), "not nested: {body}");
    }
    let kinds = r.journal.audit_kinds();
    assert_eq!(kinds.iter().filter(|k| *k == "tool.repeated_failure").count(), 2, "{kinds:?}");
}

/// Whatever the backend, a final answer that is a call of an offered tool is made; one naming
/// a tool that is not there fails the run; an agent with no tools answers with such JSON freely.
#[tokio::test]
async fn a_call_written_as_the_answers_text_is_made_or_fails_the_run() {
    let tool = TestTool::new("file_read", Tier::Read, Behaviour::Echo);
    let written = "Reading it.\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}";
    let r = rig(
        vec![Turn::text(written), Turn::text("It is a.")],
        End::Fail,
        vec![tool.clone()],
        |_| {},
    );
    let s = r.run("what is in a.txt?").await.0.unwrap();
    assert_eq!((s.state, s.answer.as_deref()), (Done, Some("It is a.")));
    assert_eq!(tool.count(), 1);
    assert!(r.journal.audit_kinds().contains(&"model.text_call".to_owned()));

    // Written as text twice: told once, then failed.
    let undeclared = r#"{"name": "read_everything", "arguments": {}}"#;
    let turns = vec![Turn::text(undeclared), Turn::text(undeclared)];
    let r = rig(turns, End::Fail, vec![tool.clone()], |_| {});
    let s = r.run("what is in a.txt?").await.0.unwrap();
    assert_eq!(s.state, Failed);
    assert!(s.error.unwrap().contains("wrote a tool call as text"));
    assert!(r.journal.audit_kinds().contains(&"model.nudged".to_owned()));

    // Told once, the model calls the tool and answers from it: done.
    let made_up = "<tool_output id=7>\nIt is b.\n</tool_output>";
    let turns = vec![
        Turn::text(made_up),
        Turn::Tools(vec![("file_read".into(), r#"{"path": "a.txt"}"#.into())]),
        Turn::text("It is a."),
    ];
    let r = rig(turns, End::Fail, vec![tool.clone()], |_| {});
    let s = r.run("what is in a.txt?").await.0.unwrap();
    assert_eq!((s.state, s.answer.as_deref()), (Done, Some("It is a.")));

    let r = rig(vec![Turn::text(undeclared)], End::Fail, vec![], |_| {});
    assert_eq!(r.run("show me a tool call as JSON").await.0.unwrap().state, Done);
}
