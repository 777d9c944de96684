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
