use std::time::Duration;

use aria_api::{ApprovalMode, ProviderError, Role, SessionState::*};
use aria_core::{EXTRACTION_TOOL, MemoryHit, MemoryKind};
use pretty_assertions::assert_eq;

use super::memory_rig::{FakeMemory, FnProvider, Kind, Reply, kind, mem_rig};

const BLUE: &str = r#"{"memories":[{"content":"The user's favorite color is blue.","kind":"preference","categories":["colors"],"importance":0.6,"confidence":0.95},{"content":"","kind":"fact","categories":[],"importance":2,"confidence":0.5}]}"#;

fn answers_from_memory() -> FnProvider {
    FnProvider::new(|r| match kind(r) {
        Kind::Extraction if r.messages[1].content.contains("favorite color is blue") => {
            Reply::Tool(EXTRACTION_TOOL, BLUE.into())
        }
        Kind::Extraction => Reply::Tool(EXTRACTION_TOOL, r#"{"memories":[]}"#.into()),
        _ => {
            let knows = r.messages.iter().any(|m| {
                m.role == Role::System && m.content.contains("The user's favorite color is blue.")
            });
            Reply::Text(if knows { "Your favorite color is blue." } else { "Noted." }.into())
        }
    })
}

/// Remembering across conversations, inside the agent: one conversation says it, the next one is
/// answered from memory.
#[tokio::test]
async fn a_preference_told_in_one_conversation_answers_the_next() {
    let rig = mem_rig(answers_from_memory(), FakeMemory::default(), vec![], |_| {});
    let first = rig.turn("My favorite color is blue", None).await.unwrap();
    assert_eq!(first.answer.as_deref(), Some("Noted."));
    assert!(rig.agent.finish_background(Duration::from_secs(10)).await);

    let items = rig.memory.items.lock().unwrap().clone();
    assert_eq!(items.len(), 1, "the invalid item was ignored");
    let m = &items[0];
    assert_eq!(m.content, "The user's favorite color is blue.");
    assert_eq!(m.kind, MemoryKind::Preference);
    assert_eq!(m.provenance.session_id.as_deref(), Some(first.id.as_str()));
    assert_eq!(m.provenance.conversation_id.as_deref(), Some(first.conversation_id.as_str()));
    assert_eq!(m.provenance.model.as_deref(), Some("test-model"));
    assert_eq!(m.provenance.message_ids, [1, 2], "the user's message and the answer");
    assert!(m.provenance.extracted_at.as_deref().is_some_and(|t| t.ends_with('Z')));
    let events = rig.journal.audit_events();
    let extraction = events.iter().find(|e| e.kind == "memory.extraction").unwrap();
    assert_eq!(extraction.payload["stored"], 1);
    assert_eq!(extraction.payload["rejected"], 1);
    assert_eq!(extraction.payload["ids"], serde_json::json!(["m0"]));

    let second = rig.turn("What's my favorite color?", None).await.unwrap();
    assert_eq!(second.answer.as_deref(), Some("Your favorite color is blue."));
    let sent = rig.provider.turn_requests().last().unwrap().clone();
    let memory_block = &sent.messages[1];
    assert_eq!(memory_block.role, Role::System);
    assert!(memory_block.content.starts_with("Memories that may be relevant"));
    assert!(memory_block.content.contains("<<tool_output id="), "fenced as data");
    assert_eq!(sent.messages.last().unwrap().content, "What's my favorite color?");
    assert!(rig.journal.audit_events().iter().any(
        |e| e.kind == "context.memories" && e.payload["memories"] == serde_json::json!(["m0"])
    ));
}

#[tokio::test]
async fn telling_it_twice_updates_instead_of_duplicating() {
    let rig = mem_rig(answers_from_memory(), FakeMemory::default(), vec![], |_| {});
    rig.turn("My favorite color is blue", None).await.unwrap();
    rig.turn("Again: my favorite color is blue", None).await.unwrap();
    assert!(rig.agent.finish_background(Duration::from_secs(10)).await);
    assert_eq!(rig.memory.items.lock().unwrap().len(), 1);
    let outcomes: Vec<_> = rig
        .journal
        .audit_events()
        .into_iter()
        .filter(|e| e.kind == "memory.extraction")
        .map(|e| (e.payload["stored"].clone(), e.payload["updated"].clone()))
        .collect();
    assert_eq!(outcomes, [(1.into(), 0.into()), (0.into(), 1.into())]);
}

#[tokio::test]
async fn no_extraction_in_dry_run_read_only_or_when_switched_off() {
    let tweaks: [fn(&mut aria_core::AgentConfig); 3] =
        [|c| c.dry_run = true, |c| c.mode = ApprovalMode::ReadOnly, |c| c.extract_memories = false];
    for tweak in tweaks {
        let rig = mem_rig(answers_from_memory(), FakeMemory::default(), vec![], tweak);
        let s = rig.turn("My favorite color is blue", None).await.unwrap();
        assert_eq!(s.state, Done);
        assert!(rig.agent.finish_background(Duration::from_secs(10)).await);
        assert!(rig.provider.requests().iter().all(|r| kind(r) != Kind::Extraction));
        assert!(rig.memory.items.lock().unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_failing_extraction_is_logged_and_the_answer_stands() {
    let provider = FnProvider::new(|r| match kind(r) {
        Kind::Extraction => Reply::Fail(ProviderError::Http { status: 500, body: "x".into() }),
        _ => Reply::Text("Noted.".into()),
    });
    let rig = mem_rig(provider, FakeMemory::default(), vec![], |_| {});
    let s = rig.turn("My favorite color is blue", None).await.unwrap();
    assert_eq!((s.state, s.answer.as_deref()), (Done, Some("Noted.")));
    assert!(rig.agent.finish_background(Duration::from_secs(10)).await);
    assert!(rig.memory.items.lock().unwrap().is_empty());
    let trace = rig.journal.traces().into_iter().last().unwrap();
    assert_eq!(trace.outcome, "http");
    assert_eq!(trace.detail["purpose"], "memory_extraction");
}

#[tokio::test]
async fn a_junk_extraction_stores_nothing() {
    let provider = FnProvider::new(|r| match kind(r) {
        Kind::Extraction => Reply::Text("I think the user likes blue.".into()),
        _ => Reply::Text("Noted.".into()),
    });
    let rig = mem_rig(provider, FakeMemory::default(), vec![], |_| {});
    rig.turn("My favorite color is blue", None).await.unwrap();
    assert!(rig.agent.finish_background(Duration::from_secs(10)).await);
    assert!(rig.memory.items.lock().unwrap().is_empty());
    let e = rig.journal.audit_events().into_iter().find(|e| e.kind == "memory.extraction").unwrap();
    assert_eq!((e.payload["stored"].clone(), e.payload["rejected"].clone()), (0.into(), 1.into()));
}

#[tokio::test]
async fn a_secret_in_an_extracted_memory_is_redacted_before_it_is_stored() {
    let provider = FnProvider::new(|r| {
        match kind(r) {
        Kind::Extraction => Reply::Tool(
            EXTRACTION_TOOL,
            r#"{"memories":[{"content":"The user's key is sk-test-SECRET.","kind":"fact","categories":[],"importance":0.5,"confidence":0.9}]}"#.into(),
        ),
        _ => Reply::Text("ok".into()),
    }
    });
    let rig = mem_rig(provider, FakeMemory::default(), vec![], |_| {});
    rig.turn("remember my key", None).await.unwrap();
    assert!(rig.agent.finish_background(Duration::from_secs(10)).await);
    let items = rig.memory.items.lock().unwrap().clone();
    assert_eq!(items[0].content, "The user's key is [REDACTED:test].");
}

#[tokio::test]
async fn memory_that_cannot_be_searched_leaves_the_turn_unharmed() {
    let memory = FakeMemory { fail_search: true, ..FakeMemory::default() };
    let rig = mem_rig(answers_from_memory(), memory, vec![], |c| c.extract_memories = false);
    let s = rig.turn("What's my favorite color?", None).await.unwrap();
    assert_eq!((s.state, s.answer.as_deref()), (Done, Some("Noted.")));
    let e = rig
        .journal
        .audit_events()
        .into_iter()
        .find(|e| e.kind == "context.memories_unavailable")
        .unwrap();
    assert!(e.payload["reason"].as_str().unwrap().contains("embedder is down"));
}

#[tokio::test]
async fn profile_entries_above_half_confidence_come_right_after_the_system_prompt() {
    let profile = vec![
        MemoryHit {
            id: "p1".into(),
            content: "The user's name is Ada.".into(),
            kind: MemoryKind::Fact,
            categories: vec!["profile".into()],
            confidence: 0.9,
            score: 0.0,
            similarity: None,
            text_match: false,
            private: false,
        },
        MemoryHit {
            id: "p2".into(),
            content: "The user might like jazz.".into(),
            kind: MemoryKind::Preference,
            categories: vec!["profile".into()],
            confidence: 0.4,
            score: 0.0,
            similarity: None,
            text_match: false,
            private: false,
        },
    ];
    let memory = FakeMemory { profile: std::sync::Mutex::new(profile), ..FakeMemory::default() };
    let rig = mem_rig(answers_from_memory(), memory, vec![], |c| c.extract_memories = false);
    rig.turn("hello", None).await.unwrap();
    let sent = rig.provider.turn_requests()[0].clone();
    assert_eq!(sent.messages[0].content, "You are a test.");
    assert!(sent.messages[1].content.contains("The user's name is Ada."));
    assert!(!sent.messages.iter().any(|m| m.content.contains("jazz")));
}
