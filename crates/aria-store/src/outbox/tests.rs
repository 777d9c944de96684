use std::sync::Arc;

use aria_api::NoRedact;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn store() -> Store {
    Store::open_in_memory(Arc::new(NoRedact)).unwrap()
}

const TG: &str = "telegram";

#[test]
fn a_message_is_sent_once_and_a_recorded_success_never_goes_back() {
    let s = store();
    let id = s.outbox_send(TG, 42, &json!({"text": "hi"}), 1_000).unwrap();
    let due = s.outbox_due(TG, 1_000, 10).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(
        (due[0].id, due[0].state, due[0].payload.clone()),
        (id, OutboxState::Pending, json!({"text": "hi"}))
    );
    assert!(s.outbox_due(TG, 999, 10).unwrap().is_empty(), "not due before its time");
    assert!(s.outbox_mark_sent(id, Some(7), 1_001).unwrap());
    assert!(!s.outbox_mark_sent(id, Some(8), 1_002).unwrap(), "a second success is refused");
    assert_eq!(s.outbox_mark_retry(id, 5_000, "late").unwrap(), OutboxState::Sent);
    let item = s.outbox_item(id).unwrap().unwrap();
    assert_eq!((item.state, item.message_id, item.attempts), (OutboxState::Sent, Some(7), 1));
    assert!(s.outbox_due(TG, i64::MAX, 10).unwrap().is_empty());
    assert_eq!(s.outbox_waiting(TG).unwrap(), 0);
}

#[test]
fn failures_back_off_and_an_unknown_outcome_gets_exactly_one_more_try() {
    let s = store();
    let id = s.outbox_send(TG, 1, &json!({"text": "a"}), 0).unwrap();
    assert_eq!(s.outbox_mark_retry(id, 500, "502").unwrap(), OutboxState::Pending);
    assert!(s.outbox_due(TG, 499, 10).unwrap().is_empty());
    assert_eq!(s.outbox_due(TG, 500, 10).unwrap().len(), 1);
    assert_eq!(s.outbox_mark_unknown(id, 600, "timed out").unwrap(), OutboxState::Unknown);
    let again = s.outbox_due(TG, 600, 10).unwrap();
    assert_eq!((again[0].state, again[0].attempts), (OutboxState::Unknown, 2));
    assert_eq!(s.outbox_mark_unknown(id, 700, "timed out").unwrap(), OutboxState::Failed);
    assert!(s.outbox_due(TG, i64::MAX, 10).unwrap().is_empty(), "never in a loop");

    let other = s.outbox_send(TG, 1, &json!({"text": "b"}), 0).unwrap();
    s.outbox_mark_unknown(other, 0, "timed out").unwrap();
    assert_eq!(s.outbox_mark_retry(other, 0, "502").unwrap(), OutboxState::Failed);
}

#[test]
fn a_chat_keeps_its_order_and_other_chats_are_not_held_up() {
    let s = store();
    let first = s.outbox_send(TG, 1, &json!({"text": "1"}), 0).unwrap();
    let second = s.outbox_send(TG, 1, &json!({"text": "2"}), 0).unwrap();
    let elsewhere = s.outbox_send(TG, 2, &json!({"text": "x"}), 0).unwrap();
    s.outbox_mark_retry(first, 10_000, "429").unwrap();
    let due: Vec<i64> = s.outbox_due(TG, 0, 10).unwrap().iter().map(|i| i.id).collect();
    assert_eq!(due, [elsewhere], "the second waits behind the first");
    s.outbox_mark_sent(first, Some(1), 10_000).unwrap();
    let due: Vec<i64> = s.outbox_due(TG, 10_000, 10).unwrap().iter().map(|i| i.id).collect();
    assert_eq!(due, [second, elsewhere]);
    assert!(s.outbox_due("other", 10_000, 10).unwrap().is_empty());
}

#[test]
fn edits_wait_for_their_message_and_queued_edits_merge() {
    let s = store();
    let msg = s.outbox_send(TG, 5, &json!({"text": "a"}), 0).unwrap();
    let e1 = s.outbox_edit(TG, 5, msg, &json!({"text": "ab"}), 0).unwrap();
    let e2 = s.outbox_edit(TG, 5, msg, &json!({"text": "abc"}), 0).unwrap();
    assert_eq!(e1, e2, "a queued edit takes the newer text");
    let due = s.outbox_due(TG, 0, 10).unwrap();
    assert_eq!(due.iter().map(|i| i.id).collect::<Vec<_>>(), [msg]);
    s.outbox_mark_sent(msg, Some(99), 0).unwrap();
    let due = s.outbox_due(TG, 0, 10).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(
        (due[0].kind, due[0].edit_of, due[0].target_message_id, due[0].payload.clone()),
        (OutboxKind::Edit, Some(msg), Some(99), json!({"text": "abc"}))
    );
    s.outbox_mark_retry(e1, 0, "502").unwrap();
    let e3 = s.outbox_edit(TG, 5, msg, &json!({"text": "abcd"}), 0).unwrap();
    assert_ne!(e3, e1, "an edit already tried is not rewritten");
    assert_eq!(s.outbox_waiting(TG).unwrap(), 2);
}

#[test]
fn sends_are_counted_per_chat_for_the_rate_limit() {
    let s = store();
    for i in 0..3 {
        let id = s.outbox_send(TG, 1, &json!({"text": i}), 0).unwrap();
        s.outbox_mark_sent(id, Some(i), 1_000 * i).unwrap();
        s.outbox_edit(TG, 1, id, &json!({"text": "e"}), 0).unwrap();
    }
    assert_eq!(s.outbox_sent_since(TG, 1, 0).unwrap(), 3);
    assert_eq!(s.outbox_sent_since(TG, 1, 1_000).unwrap(), 2);
    assert_eq!(s.outbox_sent_since(TG, 2, 0).unwrap(), 0);
    let waiting = s.outbox_send(TG, 3, &json!({"text": "later"}), 0).unwrap();
    s.outbox_defer(waiting, 60_000).unwrap();
    let in_chat_3 = |now| {
        s.outbox_due(TG, now, 10)
            .unwrap()
            .into_iter()
            .filter(|i| i.chat_id == 3)
            .collect::<Vec<_>>()
    };
    assert!(in_chat_3(59_999).is_empty());
    let due = in_chat_3(60_000);
    assert_eq!((due[0].id, due[0].attempts), (waiting, 0), "deferring is not an attempt");
}

#[test]
fn channel_state_and_chats_persist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aria.db");
    {
        let s = Store::open(&path, Arc::new(NoRedact)).unwrap();
        assert_eq!(s.channel_state(TG, "offset").unwrap(), None);
        s.set_channel_state(TG, "offset", "10").unwrap();
        s.set_channel_state(TG, "offset", "11").unwrap();
        s.channel_chat_seen(TG, 7, Some("Ann"), true).unwrap();
        s.channel_chat_seen(TG, 7, None, true).unwrap();
        s.channel_chat_seen(TG, -100, Some("a group"), false).unwrap();
        s.set_channel_chat_conversation(TG, 7, "conv-1").unwrap();
        s.outbox_send(TG, 7, &json!({"text": "queued"}), 0).unwrap();
    }
    let s = Store::open(&path, Arc::new(NoRedact)).unwrap();
    assert_eq!(s.channel_state(TG, "offset").unwrap().as_deref(), Some("11"));
    assert_eq!(s.channel_chat_conversation(TG, 7).unwrap().as_deref(), Some("conv-1"));
    assert_eq!(s.channel_chat_conversation(TG, 8).unwrap(), None);
    let chats = s.channel_chats(TG, 10).unwrap();
    let ann = chats.iter().find(|c| c.chat_id == 7).unwrap();
    assert_eq!(
        (ann.title.as_deref(), ann.messages, ann.refused, ann.allowed),
        (Some("Ann"), 2, 0, true)
    );
    let group = chats.iter().find(|c| c.chat_id == -100).unwrap();
    assert_eq!((group.messages, group.refused, group.allowed), (0, 1, false));
    assert_eq!(s.channel_refused(TG).unwrap(), 1);
    assert_eq!(s.outbox_waiting(TG).unwrap(), 1, "a queued message survives a restart");
}

#[test]
fn waiting_messages_merge_only_when_untried_unedited_and_of_one_chat() {
    let s = store();
    let a = s.outbox_send(TG, 1, &json!({"text": "a"}), 0).unwrap();
    let b = s.outbox_send(TG, 1, &json!({"text": "b"}), 0).unwrap();
    let c = s.outbox_send(TG, 1, &json!({"text": "c"}), 0).unwrap();
    let edited = s.outbox_send(TG, 1, &json!({"text": "d"}), 0).unwrap();
    s.outbox_edit(TG, 1, edited, &json!({"text": "d2"}), 0).unwrap();
    let other = s.outbox_send(TG, 2, &json!({"text": "x"}), 0).unwrap();
    assert!(!s.outbox_merge(a, &[edited], &json!({})).unwrap(), "an edited message stays");
    assert!(!s.outbox_merge(a, &[other], &json!({})).unwrap(), "another chat's stays");
    assert!(!s.outbox_merge(edited, &[b], &json!({})).unwrap(), "an edit would undo the merge");
    assert!(s.outbox_merge(a, &[b, c], &json!({"text": "a\n\nb\n\nc"})).unwrap());
    let rows = s.outbox_items(TG, 1).unwrap();
    assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), [a, edited, edited + 1]);
    assert_eq!(rows[0].payload, json!({"text": "a\n\nb\n\nc"}));
    s.outbox_mark_retry(a, 0, "429").unwrap();
    let late = s.outbox_send(TG, 1, &json!({"text": "e"}), 0).unwrap();
    assert!(!s.outbox_merge(late, &[a], &json!({})).unwrap(), "a row already tried stays");
    assert!(s.outbox_oldest_waiting(TG).unwrap().is_some());
    assert_eq!(s.outbox_oldest_waiting("none").unwrap(), None);
}

/// Replaces the word `ghp_SECRET` (a stand-in for the real secret filter).
#[derive(Debug)]
struct HideToken;

impl aria_api::Redact for HideToken {
    fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if text.contains("ghp_SECRET") {
            std::borrow::Cow::Owned(text.replace("ghp_SECRET", "[REDACTED:token]"))
        } else {
            std::borrow::Cow::Borrowed(text)
        }
    }
}

#[test]
fn no_stored_copy_holds_a_secret_sends_edits_and_merges_alike() {
    let s = Store::open_in_memory(Arc::new(HideToken)).unwrap();
    let payload = |t: &str| json!({"text": format!("<b>{t}</b>"), "aria_plain": t});
    let first = s.outbox_send(TG, 1, &payload("key ghp_SECRET"), 0).unwrap();
    s.outbox_send(TG, 1, &payload("more"), 0).unwrap();
    s.outbox_edit(TG, 1, first, &payload("now ghp_SECRET again"), 0).unwrap();
    let doc = json!({"aria_document": {"filename": "a.txt", "content": "x ghp_SECRET"}});
    s.outbox_send(TG, 1, &doc, 0).unwrap();
    let raw = |s: &Store| -> Vec<String> {
        s.conn()
            .prepare("SELECT payload FROM outbox")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let rows = raw(&s);
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|p| !p.contains("ghp_SECRET")), "{rows:#?}");
    assert!(rows[0].contains("key [REDACTED:token]"), "{rows:#?}");
    let keep = s.outbox_send(TG, 2, &payload("a"), 0).unwrap();
    let absorbed = s.outbox_send(TG, 2, &payload("b"), 0).unwrap();
    assert!(s.outbox_merge(keep, &[absorbed], &payload("ghp_SECRET merged")).unwrap());
    assert!(raw(&s).iter().all(|p| !p.contains("ghp_SECRET")));
}
