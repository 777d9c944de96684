//! Telegram: what the user approves is what runs (the whole call reaches them before the
//! buttons do; hidden characters are shown), secrets never leave, and an answer quoting a
//! private memory stays on this machine.

use pretty_assertions::assert_eq;

use super::*;

/// A command of about 4 KB whose dangerous part is at the very end.
fn long_command() -> String {
    format!("{}; rm -rf important", "echo harmless-looking-padding ".repeat(140))
}

/// The index of the first request for `method` whose body satisfies `check`.
fn position(h: &Harness, method: &str, check: impl Fn(&Value) -> bool) -> Option<usize> {
    h.tg.requests().iter().position(|r| r.method == method && !r.faulted && check(&r.body))
}

#[tokio::test]
async fn a_long_command_reaches_the_user_whole_before_it_can_be_approved() {
    let command = long_command();
    assert!(command.len() > 4_000);
    let script = vec![
        Turn::tool("file_delete", json!({"path": "notes", "command": command})),
        Turn::text("all done"),
    ];
    let mut h = Harness::start(script).await;
    // The first upload fails: the question must wait for the file, not go out without it.
    h.tg.fail_next("sendDocument", Fault::Status(502), 1);
    h.tg.push_message(CHAT, CHAT, "clean up");
    h.until("the question", |t| t.calls("sendMessage").iter().any(has_buttons)).await;
    let documents = h.tg.documents(CHAT);
    assert_eq!(documents.len(), 1, "{documents:#?}");
    let (document_id, name, content) = &documents[0];
    assert!(name.starts_with("approval-") && name.ends_with(".txt"), "{name}");
    assert!(content.contains(&command), "the file holds the whole command: {content}");
    assert!(content.contains("file_delete"), "{content}");
    // The buttons came after the file was delivered, in a later message.
    let uploaded = position(&h, "sendDocument", |_| true).unwrap();
    let asked = position(&h, "sendMessage", has_buttons).unwrap();
    assert!(uploaded < asked, "the file went first: {:#?}", h.tg.requests());
    let question = h.sends(CHAT).into_iter().find(has_buttons).unwrap();
    let text = question["text"].as_str().unwrap();
    assert!(text.contains("rm -rf important"), "the question quotes the end: {text}");
    assert!(text.contains("in the file"), "{text}");
    assert!(!text.contains("more characters"), "nothing is said to be left out: {text}");
    question_sent(&h).await;
    let (message_id, _) =
        h.tg.messages(CHAT)
            .into_iter()
            .find(|(_, t)| t.starts_with("Approve this"))
            .expect("the question is shown");
    assert!(*document_id < message_id);
    let data = question["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str().unwrap();
    h.tg.push_callback(CHAT, CHAT, message_id, data);
    h.until("the answer", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("all done"))).await;
    assert_eq!(h.tool.calls(), 1);
    h.stop().await;
}

#[tokio::test]
async fn without_the_whole_command_there_is_nothing_to_approve() {
    let command = long_command();
    let script = vec![
        Turn::tool("file_delete", json!({"path": "notes", "command": command})),
        Turn::text("all done"),
    ];
    let model = Arc::new(ScriptedProvider::new(script, End::Fail));
    let mut h = Harness::with(model, Duration::from_secs(2)).await;
    // Telegram refuses the file for good: the question with its buttons is never sent.
    h.tg.fail_next("sendDocument", Fault::BadRequest("Bad Request: file is too big".into()), 1);
    h.tg.push_message(CHAT, CHAT, "clean up");
    h.until("the run's end", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("all done")))
        .await;
    assert!(!h.tg.calls("sendMessage").iter().any(has_buttons), "{:#?}", h.tg.requests());
    assert_eq!(h.tool.calls(), 0, "unanswered, so denied");
    h.stop().await;
}

#[tokio::test]
async fn a_right_to_left_override_is_shown_not_obeyed() {
    let script = vec![
        Turn::tool("file_delete", json!({"path": "notes", "command": "echo \u{202E}fr- mr"})),
        Turn::text("all done"),
    ];
    let mut h = Harness::start(script).await;
    h.tg.push_message(CHAT, CHAT, "clean up");
    h.until("the question", |t| t.calls("sendMessage").iter().any(has_buttons)).await;
    let question = h.sends(CHAT).into_iter().find(has_buttons).unwrap();
    let text = question["text"].as_str().unwrap();
    assert!(text.contains("echo ⟨U+202E⟩fr- mr"), "{text}");
    assert!(!text.contains('\u{202E}'), "{text}");
    assert!(h.tg.documents(CHAT).is_empty(), "a short call needs no file");
    h.stop().await;
}

// --- secrets and private memories ------------------------------------------------------------

/// A memory backend that recalls every memory of the store (as a full-text match), with
/// `text` stored first as a private memory.
pub(super) fn recalling(store: &Arc<Store>, text: &str) -> Arc<dyn aria_core::MemoryBackend> {
    let new = aria_store::NewMemory {
        id: None,
        content: text.to_owned(),
        kind: aria_store::MemoryKind::Fact,
        categories: Vec::new(),
        importance: 0.9,
        confidence: 0.9,
        verified: true,
        private: true,
        unconfirmed: false,
        provenance: aria_store::Provenance::default(),
    };
    let by = aria_store::Writer { actor: "user", session_id: None };
    store.memory_insert(&new, None, by).unwrap();
    Arc::new(RecallAll(store.clone()))
}

#[derive(Debug)]
struct RecallAll(Arc<Store>);

impl aria_core::MemoryBackend for RecallAll {
    fn search<'a>(
        &'a self,
        _query: &'a str,
        scope: aria_core::SearchScope,
    ) -> aria_core::MemoryFuture<'a, Vec<aria_core::MemoryHit>> {
        Box::pin(async move {
            let all = self.0.memory_list(&[aria_store::MemoryStatus::Active], 50, 0).unwrap();
            Ok(all
                .into_iter()
                .filter(|m| scope.private || !m.private)
                .map(|m| aria_core::MemoryHit {
                    id: m.id,
                    content: m.content,
                    kind: aria_core::MemoryKind::Fact,
                    categories: m.categories,
                    confidence: 0.9,
                    score: 1.0,
                    similarity: None,
                    text_match: true,
                    private: m.private,
                })
                .collect())
        })
    }

    fn profile(&self, _private: bool) -> aria_core::MemoryFuture<'_, Vec<aria_core::MemoryHit>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn remember(
        &self,
        _memory: aria_core::NewMemory,
    ) -> aria_core::MemoryFuture<'_, aria_core::Stored> {
        Box::pin(async { Err(aria_core::MemoryError::Invalid("read-only in this test".into())) })
    }
}

const GITHUB_TOKEN: &str = "ghp_R8x2Kq9LmZ4vT7nB1cW5yH3jF6dP0sA2eG8u";
const AWS_KEY: &str = "AKIAQ7RTZ2MXWB4NKD5P";

#[tokio::test]
async fn secrets_in_an_answer_reach_neither_telegram_nor_the_outbox() {
    // The token arrives in pieces, the way a model streams it: no prefix of it may leave
    // before the whole of it can be recognised.
    let answer = format!("The token is {GITHUB_TOKEN} and the key is {AWS_KEY} - keep them safe.");
    let pieces: Vec<String> =
        answer.as_bytes().chunks(9).map(|c| String::from_utf8(c.to_vec()).unwrap()).collect();
    let slow = Slow { pieces, gap: Duration::from_millis(40) };
    let mut h = Harness::with(Arc::new(slow), Duration::from_secs(30)).await;
    h.tg.push_message(CHAT, CHAT, "what is my token?");
    h.until("the whole answer", |t| t.messages(CHAT).iter().any(|(_, m)| m.ends_with("safe.")))
        .await;
    let shown = h.texts(CHAT).join("\n");
    assert!(shown.contains("The token is [REDACTED:"), "{shown}");
    for r in h.tg.requests() {
        let body = r.body.to_string();
        assert!(!body.contains("ghp_") && !body.contains("AKIA"), "a secret left: {body}");
    }
    for row in h.gw.store.outbox_items(CHANNEL, CHAT).unwrap() {
        let stored = row.payload.to_string();
        assert!(!stored.contains("ghp_") && !stored.contains("AKIA"), "stored raw: {stored}");
    }
    h.stop().await;
}

#[tokio::test]
async fn a_notification_quoting_a_secret_is_redacted_everywhere_it_goes() {
    let mut h = Harness::start(vec![]).await;
    let text = format!("The nightly job found {GITHUB_TOKEN} in a log.");
    let stored = h.gw.notifications.publish("job_completed", Some("nightly"), None, &text).unwrap();
    assert!(!stored.text.contains("ghp_"), "{}", stored.text);
    h.until("the notification", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("nightly")))
        .await;
    assert!(h.texts(CHAT).iter().all(|m| !m.contains("ghp_")), "{:?}", h.texts(CHAT));
    h.stop().await;
}

const PRIVATE: &str = "The user's bank PIN is 4711 and the safe code is 0815.";

#[tokio::test]
async fn an_answer_quoting_a_private_memory_stays_on_this_machine() {
    let answer = "Of course: your bank PIN is 4711, and the safe code is 0815.";
    let mut h = Harness::remembering(vec![Turn::text(answer)], PRIVATE).await;
    h.tg.push_message(CHAT, CHAT, "what are my codes?");
    h.until("the reply", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("🔒"))).await;
    // Wait for the run to end, then look at everything Telegram got.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let conversation = h.gw.store.channel_chat_conversation(CHANNEL, CHAT).unwrap().unwrap();
    let shown = h.texts(CHAT).join("\n");
    assert!(shown.contains("private memory"), "{shown}");
    assert!(shown.contains(&format!("#/c/{conversation}")), "{shown}");
    assert!(shown.contains(&format!("aria conversations show {conversation}")), "{shown}");
    for r in h.tg.requests() {
        assert!(!r.body.to_string().contains("4711"), "the private answer left: {:?}", r.body);
    }
    // The answer itself is kept on this machine, in the conversation.
    let messages = h.gw.store.stored_messages(&conversation).unwrap();
    assert!(messages.iter().any(|m| format!("{:?}", m.message).contains("PIN is 4711")));
    h.stop().await;
}

#[tokio::test]
async fn an_answer_that_does_not_quote_the_private_memory_is_sent() {
    let mut h =
        Harness::remembering(vec![Turn::text("Your codes are in your notebook.")], PRIVATE).await;
    h.tg.push_message(CHAT, CHAT, "what are my codes?");
    h.until("the answer", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("notebook"))).await;
    assert!(h.texts(CHAT).iter().all(|m| !m.contains("🔒")));
    h.stop().await;
}
