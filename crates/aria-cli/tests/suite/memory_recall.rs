//! Remembering across conversations, through the binary: "My favorite color is blue" in one
//! conversation is extracted into long-term memory; "What's my favorite color?" in a new
//! conversation is answered with that memory in the request.

use std::sync::Arc;

use aria_api::NoRedact;
use aria_store::{MemoryStatus, Store};
use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::harness::{Aria, code, json_of, text};

const BLUE: &str = r#"{"memories":[{"content":"The user's favorite color is blue.","kind":"preference","categories":["profile","colors"],"importance":0.7,"confidence":0.95}]}"#;

fn messages(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap_or("").to_owned())
        })
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn a_favorite_color_told_once_is_remembered_in_a_new_conversation() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::text("Noted: blue."),
        MockTurn::tool_call("record_memories", BLUE),
        MockTurn::text("Your favorite color is blue."),
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ])
    .serve();

    let first =
        aria.run(&mock.base_url(), &["run", "--task", "My favorite color is blue", "--json"]);
    assert_eq!(code(&first), 0, "stderr: {}", text(&first.stderr));
    let first = json_of(&first);
    assert_eq!(first["answer"], "Noted: blue.");

    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "the turn, then the extraction before the process exited");
    assert!(tool_names(&requests[0]).contains(&"memory_search".to_owned()));
    assert!(tool_names(&requests[0]).contains(&"memory_store".to_owned()));
    assert_eq!(tool_names(&requests[1]), ["record_memories"]);
    assert!(messages(&requests[1])[1].1.contains("My favorite color is blue"));

    let store = Store::open(&aria.db(), Arc::new(NoRedact)).unwrap();
    let stored = store.memory_list(&[MemoryStatus::Active], 10, 0).unwrap();
    assert_eq!(stored.len(), 1);
    let m = &stored[0];
    assert_eq!(m.content, "The user's favorite color is blue.");
    assert_eq!(m.kind.as_str(), "preference");
    assert_eq!(m.provenance.conversation_id.as_deref(), first["conversation_id"].as_str());
    assert_eq!(m.provenance.extracted_by.as_deref(), Some("mock-model"));
    assert_eq!(m.provenance.message_ids.len(), 2, "the user's message and the answer");
    assert!(m.provenance.extracted_at.is_some());
    let audit = store.audit_list(None).unwrap();
    let write = audit.iter().find(|r| r.kind == "memory.store").expect("the write is audited");
    assert_eq!(write.session_id.as_deref(), first["session_id"].as_str());
    assert!(audit.iter().any(|r| r.kind == "memory.extraction"));
    drop(store);

    let second =
        aria.run(&mock.base_url(), &["run", "--task", "What's my favorite color?", "--json"]);
    assert_eq!(code(&second), 0, "stderr: {}", text(&second.stderr));
    let second = json_of(&second);
    assert_ne!(second["conversation_id"], first["conversation_id"], "a new conversation");
    assert_eq!(second["answer"], "Your favorite color is blue.");

    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    let sent = messages(&requests[2]);
    assert_eq!(sent.last().unwrap(), &("user".to_owned(), "What's my favorite color?".to_owned()));
    let recalled: Vec<_> = sent
        .iter()
        .filter(|(role, content)| {
            role == "system" && content.contains("The user's favorite color is blue.")
        })
        .collect();
    assert!(!recalled.is_empty(), "the memory is in the request: {sent:#?}");
    assert!(
        !sent.iter().any(|(role, c)| role != "system" && c.contains("My favorite color is blue")),
        "it came from memory, not from the old conversation"
    );
}

#[test]
fn dry_run_extracts_nothing() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("Noted.")]).serve();
    let out = aria.run(
        &mock.base_url(),
        &["--dry-run", "run", "--task", "My favorite color is blue", "--json"],
    );
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert_eq!(mock.requests().len(), 1, "no extraction call in a dry run");
}

#[test]
fn extraction_can_be_switched_off_in_the_config() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("Noted.")]).serve();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n").unwrap();
    let out = aria.run(
        &mock.base_url(),
        &[
            "--config",
            config.to_str().unwrap(),
            "run",
            "--task",
            "My favorite color is blue",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert_eq!(mock.requests().len(), 1, "no extraction call");
}
