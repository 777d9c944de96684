use std::sync::Arc;

use aria_api::{Journal, Limits, Message, MessageMeta, NewSession, NoRedact};
use serde_json::json;

use super::*;

fn store() -> Store {
    Store::open_in_memory(Arc::new(NoRedact)).unwrap()
}

fn session_in(store: &Store, conversation: &str, task: &str) -> String {
    let s = store
        .create_session(&NewSession {
            conversation_id: Some(conversation.to_owned()),
            task: task.to_owned(),
            provider: "p".into(),
            model: "m".into(),
            limits: Limits::default(),
        })
        .unwrap();
    store
        .append_message(&s.id, conversation, &Message::user(task), &MessageMeta::default())
        .unwrap();
    s.id
}

fn approval(id: &str, session: &str) -> StoredApproval {
    StoredApproval {
        id: id.into(),
        session_id: session.into(),
        tool: "shell_execute".into(),
        arguments: json!({"command": "rm notes.txt"}),
        tier: "irreversible".into(),
        reason: None,
        channel: "web".into(),
        status: "pending".into(),
        created_at: crate::store::now_rfc3339(),
        answered_at: None,
        answered_by: None,
    }
}

#[test]
fn an_empty_conversation_takes_its_title_from_its_first_task_and_keeps_a_given_one() {
    let store = store();
    let empty = store.create_conversation("  ").unwrap();
    assert_eq!((empty.title.as_str(), empty.message_count), ("", 0));
    let named = store.create_conversation("Trip   plans").unwrap();
    assert_eq!(named.title, "Trip plans");
    session_in(&store, &empty.id, "What is in notes.txt?");
    session_in(&store, &named.id, "Book a train");
    let (first, _) = store.get_conversation(&empty.id).unwrap().unwrap();
    assert_eq!(first.title, "What is in notes.txt?");
    let (second, messages) = store.get_conversation(&named.id).unwrap().unwrap();
    assert_eq!((second.title.as_str(), messages.len()), ("Trip plans", 1));
}

#[test]
fn pages_count_all_matches_and_search_reads_titles_and_messages_literally() {
    let store = store();
    let mut ids = Vec::new();
    for i in 0..5 {
        let c = store.create_conversation(&format!("chat {i}")).unwrap();
        session_in(&store, &c.id, if i == 3 { "the 100% plan_b" } else { "hello" });
        ids.push(c.id);
    }
    let page = store.conversation_page(None, 2, 1).unwrap();
    assert_eq!(page.total, 5);
    assert_eq!(page.items.len(), 2);
    let found = store.conversation_page(Some("100%"), 10, 0).unwrap();
    assert_eq!((found.total, found.items[0].id.as_str()), (1, ids[3].as_str()));
    // `_` and `%` are literal: "plan_b" does not match "planXb".
    assert_eq!(store.conversation_page(Some("n_b"), 10, 0).unwrap().total, 1);
    assert_eq!(store.conversation_page(Some("an%b"), 10, 0).unwrap().total, 0);
    assert_eq!(store.conversation_page(Some("CHAT 4"), 10, 0).unwrap().total, 1);
    assert_eq!(store.conversation_page(Some("nothing like it"), 10, 0).unwrap().items, vec![]);
}

#[test]
fn rename_and_delete_report_unknown_ids_and_delete_removes_everything_but_the_audit_log() {
    let store = store();
    assert_eq!(store.rename_conversation("nope", "x").unwrap(), None);
    assert!(!store.delete_conversation("nope").unwrap());
    let c = store.create_conversation("").unwrap();
    let session = session_in(&store, &c.id, "task");
    store.approval_insert(&approval("a1", &session)).unwrap();
    store
        .audit_append(aria_api::AuditEvent::new(Some(&session), "user", "session.start", json!({})))
        .unwrap();
    assert_eq!(store.rename_conversation(&c.id, " new  name ").unwrap().unwrap().title, "new name");
    assert!(store.delete_conversation(&c.id).unwrap());
    assert!(store.get_conversation(&c.id).unwrap().is_none());
    assert!(store.session(&session).unwrap().is_none());
    assert!(store.approval("a1").unwrap().is_none());
    assert_eq!(store.audit_for_session(&session).unwrap().len(), 1);
    assert!(!store.delete_conversation(&c.id).unwrap());
}

#[test]
fn an_approval_is_settled_once_and_pending_ones_are_interrupted_on_restart() {
    let store = store();
    store.approval_insert(&approval("a1", "s")).unwrap();
    store.approval_insert(&approval("a2", "s")).unwrap();
    assert_eq!(store.approvals_pending().unwrap().len(), 2);
    let settled = store.approval_settle("a1", "approved").unwrap().unwrap();
    assert_eq!(settled.status, "approved");
    assert!(settled.answered_at.is_some());
    assert_eq!(settled.arguments, json!({"command": "rm notes.txt"}));
    assert_eq!(store.approval_settle("a1", "denied").unwrap(), None, "settled once");
    let interrupted = store.approvals_interrupt_pending().unwrap();
    assert_eq!(interrupted.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["a2"]);
    assert_eq!(interrupted[0].status, "interrupted");
    assert!(store.approvals_pending().unwrap().is_empty());
}

#[test]
fn approval_arguments_are_redacted_and_stay_json() {
    #[derive(Debug)]
    struct Hide;
    impl aria_api::Redact for Hide {
        fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
            text.replace("hunter2", "[REDACTED:password]").into()
        }
    }
    let store = Store::open_in_memory(Arc::new(Hide)).unwrap();
    let mut a = approval("a1", "s");
    a.arguments = json!({"command": "login --password hunter2"});
    store.approval_insert(&a).unwrap();
    let read = store.approval("a1").unwrap().unwrap();
    assert_eq!(read.arguments, json!({"command": "login --password [REDACTED:password]"}));
}
