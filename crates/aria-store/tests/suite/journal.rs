use aria_api::{
    Journal, Limits, Message, MessageMeta, NewSession, SessionState, ToolCall, TraceKind,
    TraceRecord, Usage,
};
use aria_store::{ConversationSummary, Store};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::helpers::*;

fn new_session(conversation_id: Option<&str>, task: &str) -> NewSession {
    NewSession {
        conversation_id: conversation_id.map(str::to_owned),
        task: task.to_owned(),
        provider: "ollama".to_owned(),
        model: "qwen3:4b".to_owned(),
        limits: Limits { max_iterations: 7, ..Limits::default() },
    }
}

fn is_uuid_v7(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok_and(|u| u.get_version_num() == 7)
}

#[test]
fn a_new_session_starts_a_conversation_titled_from_the_task() {
    let store = memory_store();
    let task =
        "Summarise   the README\nand then list every TODO in the source tree, grouped by crate";
    let s = store.create_session(&new_session(None, task)).unwrap();
    assert!(is_uuid_v7(&s.id) && is_uuid_v7(&s.conversation_id), "{} {}", s.id, s.conversation_id);
    assert_eq!(s.state, SessionState::Idle);
    assert_eq!((s.iterations, s.usage, s.cost_usd), (0, Usage::default(), 0.0));
    assert_eq!(s.limits.max_iterations, 7);
    let convs = store.list_conversations(10).unwrap();
    assert_eq!(convs.len(), 1);
    assert_eq!(convs[0].id, s.conversation_id);
    assert_eq!(convs[0].title, "Summarise the README and then list every TODO in the source…");
    assert_eq!(convs[0].title.chars().count(), 60);
    assert_eq!(convs[0].message_count, 0);
    // The stored record is the returned one.
    assert_eq!(store.load_session(&s.id).unwrap(), Some(s));
}

#[test]
fn short_and_empty_tasks_make_sensible_titles() {
    let store = memory_store();
    store.create_session(&new_session(None, "  hi  ")).unwrap();
    store.create_session(&new_session(None, " \n ")).unwrap();
    let mut titles: Vec<String> =
        store.list_conversations(10).unwrap().into_iter().map(|c| c.title).collect();
    titles.sort();
    assert_eq!(titles, ["(untitled)", "hi"]);
}

#[test]
fn continuing_a_conversation_reuses_it_and_an_unknown_one_is_named() {
    let store = memory_store();
    let first = store.create_session(&new_session(None, "one")).unwrap();
    let second = store.create_session(&new_session(Some(&first.conversation_id), "two")).unwrap();
    assert_eq!(second.conversation_id, first.conversation_id);
    assert_ne!(second.id, first.id);
    assert_eq!(store.list_conversations(10).unwrap().len(), 1);

    let err = store.create_session(&new_session(Some("nope-123"), "x")).unwrap_err();
    assert!(err.message.contains("nope-123"), "{err}");
    // A prefix of a real id is not accepted either.
    let prefix = &first.conversation_id[..8];
    assert!(store.create_session(&new_session(Some(prefix), "x")).is_err());
    assert_eq!(store.list_sessions(10).unwrap().len(), 2, "failed creates leave nothing behind");
}

#[test]
fn save_session_overwrites_the_mutable_fields() {
    let store = memory_store();
    let mut s = store.create_session(&new_session(None, "task")).unwrap();
    s.state = SessionState::Failed;
    s.iterations = 4;
    s.usage = Usage { input_tokens: 1200, output_tokens: 345 };
    s.cost_usd = 0.0125;
    s.error = Some("the model timed out".to_owned());
    s.answer = Some("partial".to_owned());
    store.save_session(&s).unwrap();
    let loaded = store.load_session(&s.id).unwrap().unwrap();
    assert!(loaded.updated_at >= s.updated_at);
    assert_eq!(
        loaded,
        aria_api::SessionRecord { updated_at: loaded.updated_at.clone(), ..s.clone() }
    );

    let ghost = aria_api::SessionRecord { id: "ghost".to_owned(), ..s };
    let err = store.save_session(&ghost).unwrap_err();
    assert!(err.message.contains("ghost"), "{err}");
    assert_eq!(store.load_session("ghost").unwrap(), None);
}

#[test]
fn messages_round_trip_with_tool_calls_in_order() {
    let store = memory_store();
    let s = store.create_session(&new_session(None, "read a file")).unwrap();
    let call = ToolCall {
        id: "call_1".into(),
        name: "fs.read".into(),
        arguments: "{\"path\": \"a\"".into(),
    };
    let messages = vec![
        Message::system("you are aria"),
        Message::user("read a"),
        Message::assistant("", vec![call.clone(), ToolCall { id: "call_2".into(), ..call }]),
        Message::tool_result("call_1", "contents\nof a"),
        Message::assistant("done", vec![]),
    ];
    let usage = Usage { input_tokens: 50, output_tokens: 7 };
    let mut ids = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let meta = if i == 2 {
            MessageMeta { model: Some("qwen3:4b".into()), usage: Some(usage) }
        } else {
            MessageMeta::default()
        };
        ids.push(store.append_message(&s.id, &s.conversation_id, m, &meta).unwrap());
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(store.conversation_messages(&s.conversation_id).unwrap(), messages);

    let (summary, stored) = store.get_conversation(&s.conversation_id).unwrap().unwrap();
    assert_eq!(summary.message_count, 5);
    assert!(summary.updated_at >= summary.created_at);
    assert_eq!(stored.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    assert_eq!(stored[2].model.as_deref(), Some("qwen3:4b"));
    assert_eq!(stored[2].usage, Some(usage));
    assert_eq!((stored[0].model.clone(), stored[0].usage), (None, None));
    assert!(stored.iter().all(|m| m.session_id.as_deref() == Some(s.id.as_str())));
    assert_eq!(store.get_conversation("unknown").unwrap(), None);
    assert!(store.conversation_messages("unknown").unwrap_err().message.contains("unknown"));
}

#[test]
fn appending_bumps_the_conversation_and_checks_ownership() {
    let store = memory_store();
    let a = store.create_session(&new_session(None, "a")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let b = store.create_session(&new_session(None, "b")).unwrap();
    let order = |store: &Store| -> Vec<String> {
        store
            .list_conversations(10)
            .unwrap()
            .into_iter()
            .map(|c: ConversationSummary| c.title)
            .collect()
    };
    assert_eq!(order(&store), ["b", "a"]);
    std::thread::sleep(std::time::Duration::from_millis(5));
    store
        .append_message(&a.id, &a.conversation_id, &Message::user("more"), &MessageMeta::default())
        .unwrap();
    assert_eq!(order(&store), ["a", "b"], "the conversation with the newest message comes first");
    assert_eq!(store.list_conversations(1).unwrap().len(), 1);

    let err = store
        .append_message(&a.id, &b.conversation_id, &Message::user("x"), &MessageMeta::default())
        .unwrap_err();
    assert!(err.message.contains(&a.id) && err.message.contains(&b.conversation_id), "{err}");
    let err = store
        .append_message("nope", &a.conversation_id, &Message::user("x"), &MessageMeta::default())
        .unwrap_err();
    assert!(err.message.contains("nope"), "{err}");
    assert_eq!(store.conversation_messages(&b.conversation_id).unwrap(), vec![]);
}

#[test]
fn unfinished_sessions_are_the_interrupted_ones() {
    let store = memory_store();
    let mut expected = Vec::new();
    for state in SessionState::ALL {
        let mut s = store.create_session(&new_session(None, state.as_str())).unwrap();
        s.state = state;
        store.save_session(&s).unwrap();
        if !state.is_terminal() && state != SessionState::Idle {
            expected.push(state.as_str().to_owned());
        }
    }
    let mut got: Vec<String> =
        store.unfinished_sessions().unwrap().into_iter().map(|s| s.task).collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
    assert_eq!(got.len(), 7);
}

#[test]
fn list_sessions_is_newest_first_and_limited() {
    let store = memory_store();
    let ids: Vec<String> = (0..5)
        .map(|i| store.create_session(&new_session(None, &format!("t{i}"))).unwrap().id)
        .collect();
    let listed: Vec<String> = store.list_sessions(3).unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(listed, [ids[4].clone(), ids[3].clone(), ids[2].clone()]);
}

#[test]
fn traces_round_trip_per_session() {
    let store = memory_store();
    let s = store.create_session(&new_session(None, "t")).unwrap();
    let other = store.create_session(&new_session(None, "u")).unwrap();
    let model = TraceRecord {
        session_id: s.id.clone(),
        kind: TraceKind::ModelCall,
        name: "qwen3:4b".into(),
        duration_ms: 1234,
        usage: Usage { input_tokens: 10, output_tokens: 2 },
        cost_usd: 0.001,
        outcome: "ok".into(),
        detail: json!({"finish": "tool_calls", "retries": 0}),
    };
    let tool = TraceRecord {
        kind: TraceKind::ToolCall,
        name: "fs.read".into(),
        outcome: "refused".into(),
        usage: Usage::default(),
        cost_usd: 0.0,
        ..model.clone()
    };
    store.record_trace(&model).unwrap();
    store.record_trace(&TraceRecord { session_id: other.id.clone(), ..model.clone() }).unwrap();
    store.record_trace(&tool).unwrap();
    let got: Vec<TraceRecord> =
        store.traces_for_session(&s.id).unwrap().into_iter().map(|t| t.trace).collect();
    assert_eq!(got, vec![model.clone(), tool]);
    let err = store.record_trace(&TraceRecord { session_id: "gone".into(), ..model }).unwrap_err();
    assert!(err.message.contains("gone"), "{err}");
}

#[test]
fn every_stored_text_is_redacted_not_only_audit_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aria.db");
    let store = Store::open(&path, std::sync::Arc::new(Hide("sk-live-1234"))).unwrap();
    let mut s = store.create_session(&new_session(None, "use key sk-live-1234 please")).unwrap();
    assert_eq!(s.task, "use key [REDACTED] please");
    let call = aria_api::ToolCall {
        id: "c1".into(),
        name: "file_read".into(),
        arguments: r#"{"path":"sk-live-1234.txt"}"#.into(),
    };
    let message = Message::assistant("the key is sk-live-1234", vec![call]);
    store.append_message(&s.id, &s.conversation_id, &message, &MessageMeta::default()).unwrap();
    s.answer = Some("answer sk-live-1234".into());
    s.error = Some("error sk-live-1234".into());
    store.save_session(&s).unwrap();
    store
        .record_trace(&aria_api::TraceRecord {
            session_id: s.id.clone(),
            kind: aria_api::TraceKind::ToolCall,
            name: "file_read".into(),
            duration_ms: 1,
            usage: Default::default(),
            cost_usd: 0.0,
            outcome: "ok".into(),
            detail: json!({"note": "sk-live-1234"}),
        })
        .unwrap();
    let back = store.conversation_messages(&s.conversation_id).unwrap();
    assert_eq!(back[0].content, "the key is [REDACTED]");
    assert_eq!(back[0].tool_calls[0].arguments, r#"{"path":"[REDACTED].txt"}"#);
    drop(store);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend(std::fs::read(dir.path().join("aria.db-wal")).unwrap_or_default());
    assert!(
        !bytes.windows(12).any(|w| w == b"sk-live-1234"),
        "the secret reached the database file"
    );
}
