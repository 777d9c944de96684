use std::sync::Arc;
use std::time::Duration;

use aria_api::{ChatRequest, Journal, ProviderError, Role, SessionState::*, Tier, Tool};
use aria_core::TokenCounter;
use serde_json::json;

use super::harness::{Behaviour, TestTool};
use super::memory_rig::{
    FakeMemory, FnProvider, Kind, Reply, calls_precede_results, kind, mem_rig, words_n,
};

const WINDOW: u64 = 600;
const REPLY: u32 = 50;

fn tokens(r: &ChatRequest) -> u64 {
    let c = TokenCounter::default();
    r.messages.iter().map(|m| (c.message)(&r.model, m)).sum::<u64>() + (c.tools)(&r.model, &r.tools)
}

fn small_window(c: &mut aria_core::AgentConfig) {
    c.context_window = Some(WINDOW);
    c.max_output_tokens = Some(REPLY);
}

fn summary_text(r: &ChatRequest) -> Option<&str> {
    r.messages
        .iter()
        .find(|m| m.role == Role::System && m.content.starts_with("Summary of the earlier part"))
        .map(|m| m.content.as_str())
}

/// Twelve turns of ~40-token messages in one conversation overflow a 600-token window several
/// times: every turn is answered, compaction runs, and no request exceeds the window.
#[tokio::test]
async fn a_long_conversation_keeps_working_through_compaction() {
    let provider = FnProvider::new(|r| match kind(r) {
        Kind::Summary => Reply::Text("SUMMARY: the user sent numbered notes.".into()),
        _ => Reply::Text(format!("ack {}", words_n(30))),
    });
    let rig = mem_rig(provider, FakeMemory::default(), vec![], small_window);
    let first = rig.turn(&format!("note 0 {}", words_n(30)), None).await.unwrap();
    let conversation = first.conversation_id.clone();
    for i in 1..12 {
        let s = rig.turn(&format!("note {i} {}", words_n(30)), Some(&conversation)).await.unwrap();
        assert_eq!(s.state, Done, "turn {i}: {:?}", s.error);
    }
    let turns = rig.provider.turn_requests();
    assert_eq!(turns.len(), 12);
    for r in &turns {
        assert!(tokens(r) + u64::from(REPLY) <= WINDOW, "{} tokens", tokens(r));
    }
    let summaries = rig.provider.requests().iter().filter(|r| kind(r) == Kind::Summary).count();
    assert!(summaries >= 1);
    let last = turns.last().unwrap();
    assert!(
        summary_text(last).is_some_and(|s| s.contains("SUMMARY: the user sent numbered notes."))
    );
    assert!(
        !last.messages.iter().any(|m| m.content.starts_with("note 0 ")),
        "covered by the summary"
    );
    assert!(last.messages.last().unwrap().content.starts_with("note 11 "));
    let kinds = rig.journal.audit_kinds();
    assert_eq!(kinds.iter().filter(|k| *k == "context.compacted").count(), summaries);
    let stored = rig.journal.load_summary(&conversation).unwrap().unwrap();
    assert!(stored.covers > 0);
    assert_eq!(stored.model, "test-model");
}

/// The summary is persisted: a later run (a resumed or continued conversation) starts from it
/// without summarising again, and the summary call is charged to the run that made it.
#[tokio::test]
async fn a_continued_conversation_starts_from_the_stored_summary() {
    let provider = FnProvider::new(|r| match kind(r) {
        Kind::Summary => Reply::Text("SUMMARY-XYZ".into()),
        _ => Reply::Text("ok".into()),
    });
    let rig = mem_rig(provider, FakeMemory::default(), vec![], small_window);
    let mut conversation = None;
    while rig.journal.audit_kinds().iter().all(|k| k != "context.compacted") {
        let s = rig.turn(&words_n(100), conversation.as_deref()).await.unwrap();
        assert_eq!(s.state, Done);
        conversation = Some(s.conversation_id);
    }
    let conversation = conversation.unwrap();
    let model_side = |rig: &super::memory_rig::MemRig| -> Vec<ChatRequest> {
        rig.provider.requests().into_iter().filter(|r| kind(r) != Kind::Extraction).collect()
    };
    let before = model_side(&rig).len();
    rig.turn("short question", Some(&conversation)).await.unwrap();
    let after = model_side(&rig);
    assert_eq!(after.len(), before + 1, "no second summary call");
    assert!(summary_text(&after[before]).is_some_and(|s| s.ends_with("SUMMARY-XYZ")));
    let covers = rig.journal.load_summary(&conversation).unwrap().unwrap().covers as usize;
    let all = rig.journal.conversation_messages(&conversation).unwrap();
    let sent_history: Vec<_> =
        after[before].messages.iter().filter(|m| m.role != Role::System).cloned().collect();
    // Everything after the summary up to the question (the answer came after the request).
    assert_eq!(sent_history, all[covers..all.len() - 1], "exactly the messages after the summary");
}

async fn summariser_fails_but_the_turn_answers(reply: fn() -> Reply) {
    let provider = FnProvider::new(move |r| match kind(r) {
        Kind::Summary => reply(),
        _ => Reply::Text("still here".into()),
    });
    let rig = mem_rig(provider, FakeMemory::default(), vec![], |c| {
        small_window(c);
        c.summary_timeout = Duration::from_millis(200);
    });
    let mut conversation = None;
    for _ in 0..8 {
        let s = rig.turn(&words_n(100), conversation.as_deref()).await.unwrap();
        assert_eq!(s.state, Done, "{:?}", s.error);
        assert_eq!(s.answer.as_deref(), Some("still here"));
        conversation = Some(s.conversation_id);
    }
    let kinds = rig.journal.audit_kinds();
    assert!(kinds.iter().any(|k| k == "context.compaction_failed"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "context.truncated"));
    assert!(!kinds.iter().any(|k| k == "context.compacted"));
    for r in rig.provider.turn_requests() {
        assert!(tokens(&r) + u64::from(REPLY) <= WINDOW);
    }
    assert_eq!(rig.journal.load_summary(conversation.as_deref().unwrap()).unwrap(), None);
}

#[tokio::test]
async fn a_failing_summariser_falls_back_to_truncation() {
    summariser_fails_but_the_turn_answers(|| {
        Reply::Fail(ProviderError::Http { status: 500, body: "boom".into() })
    })
    .await;
}

#[tokio::test]
async fn an_empty_summary_falls_back_to_truncation() {
    summariser_fails_but_the_turn_answers(|| Reply::Text("   ".into())).await;
}

#[tokio::test]
async fn a_summariser_that_never_answers_falls_back_to_truncation() {
    summariser_fails_but_the_turn_answers(|| Reply::Hang).await;
}

/// A run whose tool results fill the window: every request keeps each tool result right after
/// the call it answers, however much is summarised or dropped.
#[tokio::test]
async fn tool_calls_and_their_results_stay_together() {
    let big = TestTool::new("file_read", Tier::Read, Behaviour::Output(words_n(120)));
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = calls.clone();
    let provider = FnProvider::new(move |r| match kind(r) {
        Kind::Summary => Reply::Fail(ProviderError::Http { status: 503, body: "no".into() }),
        _ if r.messages.last().is_some_and(|m| m.role == Role::User) => {
            counter.store(0, std::sync::atomic::Ordering::SeqCst);
            Reply::Tool("file_read", json!({"path": "a"}).to_string())
        }
        _ => {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n < 1 {
                Reply::Tool("file_read", json!({"path": "b"}).to_string())
            } else {
                Reply::Text("done".into())
            }
        }
    });
    let tools: Vec<Arc<dyn Tool>> = vec![big];
    let rig = mem_rig(provider, FakeMemory::default(), tools, |c| {
        c.context_window = Some(900);
        c.max_output_tokens = Some(REPLY);
    });
    let mut conversation = None;
    for _ in 0..5 {
        let s = rig.turn("read the files", conversation.as_deref()).await.unwrap();
        assert_eq!(s.state, Done, "{:?}", s.error);
        conversation = Some(s.conversation_id);
    }
    let turns = rig.provider.turn_requests();
    assert!(rig.journal.audit_kinds().iter().any(|k| k == "context.truncated"));
    for r in &turns {
        assert!(calls_precede_results(&r.messages), "{:#?}", r.messages);
        assert!(tokens(r) + u64::from(REPLY) <= 900);
    }
}
