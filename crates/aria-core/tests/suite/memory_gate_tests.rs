//! Recall is relevance-gated, private memories stay on this machine, and
//! the model can only store what the conversation justifies.

use std::time::Duration;

use aria_api::{ChatRequest, Role, Tier};
use aria_core::{EXTRACTION_TOOL, MemoryKind, NewMemory, Provenance};
use pretty_assertions::assert_eq;

use super::harness::{Behaviour, TestTool};
use super::memory_rig::{
    FakeMemory, FnProvider, Kind, Reply, kind, mem_rig, mem_rig_with_memory_tools,
};

fn memory(content: &str, private: bool) -> NewMemory {
    NewMemory {
        content: content.into(),
        kind: MemoryKind::Fact,
        categories: vec![],
        importance: 0.5,
        confidence: 0.9,
        private,
        unconfirmed: false,
        provenance: Provenance::default(),
    }
}

fn stored(items: &[NewMemory], vectors: bool) -> FakeMemory {
    FakeMemory { items: std::sync::Mutex::new(items.to_vec()), vectors, ..FakeMemory::default() }
}

/// The memory lines of the last turn request (empty when no memory block was sent).
fn recalled(requests: &[ChatRequest]) -> String {
    let sent = requests.iter().rfind(|r| kind(r) == Kind::Turn).unwrap();
    sent.messages
        .iter()
        .filter(|m| m.role == Role::System && m.content.starts_with("Memories that may"))
        .map(|m| m.content.clone())
        .collect()
}

fn plain() -> FnProvider {
    FnProvider::new(|r| match kind(r) {
        Kind::Extraction => Reply::Tool(EXTRACTION_TOOL, r#"{"memories":[]}"#.into()),
        _ => Reply::Text("ok".into()),
    })
}

#[tokio::test]
async fn recall_sends_only_memories_close_to_the_message() {
    let items = [
        memory("The user's favorite tea is jasmine green tea", false),
        memory("The user has a cat named Miso", false),
        memory("The user deploys on Fridays", false),
    ];
    let rig = mem_rig(plain(), stored(&items, true), vec![], |c| c.extract_memories = false);
    rig.turn("Which green tea should I buy?", None).await.unwrap();
    let sent = recalled(&rig.provider.requests());
    assert!(sent.contains("jasmine green tea"), "{sent}");
    assert!(!sent.contains("Miso") && !sent.contains("Fridays"), "{sent}");
    let audit = rig.journal.audit_events();
    let recall = audit.iter().find(|e| e.kind == "context.memories").unwrap();
    assert_eq!(recall.payload["memories"], serde_json::json!(["m0"]));
    assert_eq!(recall.payload["not_relevant"], 2);

    // "Say hello in one word" is close to nothing: no memory rides along.
    let rig = mem_rig(plain(), stored(&items, true), vec![], |c| c.extract_memories = false);
    rig.turn("Say hello in one word", None).await.unwrap();
    assert_eq!(recalled(&rig.provider.requests()), "");
}

#[tokio::test]
async fn recall_is_capped_at_the_configured_number() {
    let items: Vec<NewMemory> =
        (0..12).map(|i| memory(&format!("The user owns green tea tin {i}"), false)).collect();
    let rig = mem_rig(plain(), stored(&items, true), vec![], |c| {
        c.extract_memories = false;
        c.memory_search_limit = 3;
    });
    rig.turn("green tea tin", None).await.unwrap();
    let sent = recalled(&rig.provider.requests());
    assert_eq!(sent.matches("green tea tin").count(), 3, "{sent}");
}

#[tokio::test]
async fn private_memories_reach_only_a_model_on_this_machine() {
    let items = [memory("The salary review with Dana is in March", true)];
    for local in [false, true] {
        let rig = mem_rig(plain(), stored(&items, true), vec![], |c| {
            c.extract_memories = false;
            c.local_model = local;
        });
        rig.turn("When is the salary review with Dana?", None).await.unwrap();
        let sent = recalled(&rig.provider.requests());
        assert_eq!(sent.contains("salary review"), local, "local model: {local}: {sent}");
        let recall = rig.journal.audit_events();
        let recall = recall.iter().find(|e| e.kind == "context.memories").unwrap();
        assert_eq!(recall.payload["private_allowed"], local);
    }
}

#[tokio::test]
async fn memory_search_leaves_private_memories_out_for_a_remote_model() {
    let items = [memory("Dana's salary review is in March", true)];
    let provider = FnProvider::new(|r| {
        let last = r.messages.last().unwrap();
        if last.role == Role::Tool {
            Reply::Text(format!("found: {}", last.content))
        } else {
            Reply::Tool("memory_search", r#"{"query":"salary review"}"#.into())
        }
    });
    let rig = mem_rig_with_memory_tools(provider, stored(&items, false), vec![], |c| {
        c.extract_memories = false
    });
    let s = rig.turn("what do you know about salary reviews?", None).await.unwrap();
    let answer = s.answer.unwrap();
    assert!(answer.contains("no memories match") && !answer.contains("March"), "{answer}");
}

/// No extraction; `memory_store` approved in advance (as `--allow memory_store` does).
fn allow_memory_store(c: &mut aria_core::AgentConfig) {
    c.extract_memories = false;
    c.preapproval = aria_core::Preapproval::new(&["memory_store".to_owned()], false).unwrap();
}

/// A provider that calls `memory_store` with `content` once, then answers with its result. A
/// task that starts with "read notes" reads `notes.md` first.
fn stores(content: &'static str) -> FnProvider {
    FnProvider::new(move |r| {
        if kind(r) == Kind::Extraction {
            return Reply::Tool(EXTRACTION_TOOL, r#"{"memories":[]}"#.into());
        }
        let results = r.messages.iter().filter(|m| m.role == Role::Tool).count();
        let reads_first =
            r.messages.iter().any(|m| m.role == Role::User && m.content.starts_with("read notes"));
        match (reads_first, results) {
            (true, 0) => Reply::Tool("file_read", r#"{"path":"notes.md"}"#.into()),
            (false, 0) | (true, 1) => {
                Reply::Tool("memory_store", serde_json::json!({ "content": content }).to_string())
            }
            _ => Reply::Text(format!("result: {}", r.messages.last().unwrap().content)),
        }
    })
}

#[tokio::test]
async fn memory_store_refuses_what_the_conversation_does_not_justify() {
    let rig = mem_rig_with_memory_tools(
        stores("The user's long-term memory (their profile, from earlier conversations)"),
        FakeMemory::default(),
        vec![],
        allow_memory_store,
    );
    let s = rig.turn("Say hello in one word", None).await.unwrap();
    let answer = s.answer.unwrap();
    assert!(answer.contains("refused: nothing in the conversation supports"), "{answer}");
    assert!(rig.memory.items.lock().unwrap().is_empty());
    let refusal = rig.journal.audit_events();
    let refusal = refusal.iter().find(|e| e.kind == "tool.refused").unwrap();
    assert_eq!(refusal.payload["by"], "memory");

    // What the user said is stored.
    let rig = mem_rig_with_memory_tools(
        stores("The user drinks jasmine tea every morning."),
        FakeMemory::default(),
        vec![],
        allow_memory_store,
    );
    let s = rig.turn("I drink jasmine tea every morning", None).await.unwrap();
    let answer = s.answer.unwrap();
    assert!(answer.contains("remembered"), "{answer}");
    let items = rig.memory.items.lock().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert!(!items[0].private);
}

#[tokio::test]
async fn what_the_model_keeps_from_a_turn_that_read_a_file_is_private() {
    let file = TestTool::new(
        "file_read",
        Tier::Read,
        Behaviour::Output("Deploy key rotation is every 90 days.".into()),
    );
    let rig = mem_rig_with_memory_tools(
        stores("Deploy key rotation is every 90 days."),
        FakeMemory::default(),
        vec![file],
        allow_memory_store,
    );
    let s = rig.turn("read notes.md and remember the rotation policy", None).await.unwrap();
    let answer = s.answer.unwrap();
    assert!(answer.contains("remembered"), "{answer}");
    let items = rig.memory.items.lock().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert!(items[0].private, "kept from a file: private");
}

#[tokio::test]
async fn extraction_drops_junk_and_marks_memories_from_a_file_turn_private() {
    const ITEMS: &str = r#"{"memories":[
        {"content":"The user's long-term memory (their profile, from earlier conversations).","kind":"fact","categories":[],"importance":0.5,"confidence":0.9},
        {"content":"The user's team deploys on Fridays.","kind":"fact","categories":[],"importance":0.5,"confidence":0.9}]}"#;
    let provider = FnProvider::new(|r| match kind(r) {
        Kind::Extraction => Reply::Tool(EXTRACTION_TOOL, ITEMS.into()),
        _ => match r.messages.last().unwrap() {
            m if m.role == Role::Tool => Reply::Text("Your team deploys on Fridays.".into()),
            _ => Reply::Tool("file_read", r#"{"path":"TEAM.md"}"#.into()),
        },
    });
    let file = TestTool::new("file_read", Tier::Read, Behaviour::Output("deploys: Fridays".into()));
    let rig = mem_rig(provider, FakeMemory::default(), vec![file], |_| {});
    rig.turn("When does my team deploy? Check TEAM.md", None).await.unwrap();
    assert!(rig.agent.finish_background(Duration::from_secs(10)).await);
    let items = rig.memory.items.lock().unwrap().clone();
    assert_eq!(items.len(), 1, "the restated framing was dropped: {items:?}");
    assert_eq!(items[0].content, "The user's team deploys on Fridays.");
    assert!(items[0].private);
    let audit = rig.journal.audit_events();
    let extraction = audit.iter().find(|e| e.kind == "memory.extraction").unwrap();
    assert_eq!(extraction.payload["unjustified"], 1);
    assert_eq!(extraction.payload["private"], true);
}
