//! The Telegram channel against the fake Bot API (`aria_testkit::telegram_mock`): a gateway
//! whose agent plays a script, the channel polling the fake on a loopback port, updates pushed
//! into the fake and the requests the channel made read back from it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns unwrap too

use std::sync::Arc;
use std::time::Duration;

use aria_api::{ChatEvent, ChatRequest, ChatStream, FinishReason, NoRedact, Provider, Tool, Usage};
use aria_core::{Agent, AgentConfig, ToolRegistry};
use aria_gateway::telegram::{BotToken, CHANNEL, Telegram, TelegramConfig, TelegramHandle};
use aria_gateway::{Approvals, Gateway, Runs, Security, Services};
use aria_store::{OutboxState, Store};
use aria_testkit::scripted::{End, ScriptedProvider, Turn};
use aria_testkit::telegram_mock::{FakeTelegram, Fault};
use aria_testkit::tools::DeleteTool;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const TOKEN: &str = "123456:TEST-TOKEN-never-shown";
const CHAT: i64 = 4242;
const GROUP: i64 = -1001;
const STRANGER: i64 = 999;
const WAIT: Duration = Duration::from_secs(10);

mod jobs_and_choices;

mod boundaries;

/// A model that streams its answer slowly, piece by piece.
#[derive(Debug)]
struct Slow {
    pieces: Vec<String>,
    gap: Duration,
}

impl Provider for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn stream(&self, _request: ChatRequest) -> ChatStream {
        let mut events: Vec<ChatEvent> =
            self.pieces.iter().map(|t| ChatEvent::TextDelta { text: t.clone() }).collect();
        events.push(ChatEvent::Usage { usage: Usage { input_tokens: 1, output_tokens: 1 } });
        events.push(ChatEvent::Finished { reason: FinishReason::Stop });
        let gap = self.gap;
        Box::pin(futures::stream::unfold(events.into_iter(), move |mut rest| async move {
            let next = rest.next()?;
            tokio::time::sleep(gap).await;
            Some((Ok(next), rest))
        }))
    }
}

struct Harness {
    tg: FakeTelegram,
    /// The snapshots service's only root.
    root: std::path::PathBuf,
    gw: Arc<Gateway>,
    tool: Arc<DeleteTool>,
    channel: Option<TelegramHandle>,
    config: TelegramConfig,
    _dir: tempfile::TempDir,
}

impl Harness {
    async fn start(script: Vec<Turn>) -> Harness {
        Harness::with(Arc::new(ScriptedProvider::new(script, End::Fail)), Duration::from_secs(30))
            .await
    }

    async fn with(model: Arc<dyn Provider>, approval_timeout: Duration) -> Harness {
        Harness::configured(model, approval_timeout, aria_api::ApprovalMode::Governed).await
    }

    /// A daemon whose agent runs in `mode`.
    async fn configured(
        model: Arc<dyn Provider>,
        approval_timeout: Duration,
        mode: aria_api::ApprovalMode,
    ) -> Harness {
        Harness::build(model, approval_timeout, mode, None, None).await
    }

    /// A daemon whose agent runs a model on this machine and recalls `memory`, a private one.
    async fn remembering(script: Vec<Turn>, memory: &str) -> Harness {
        let model = Arc::new(ScriptedProvider::new(script, End::Fail));
        let mode = aria_api::ApprovalMode::Governed;
        Harness::build(model, Duration::from_secs(30), mode, None, Some(memory)).await
    }

    /// A daemon whose agent also has `ask_user`, with these waits (for a press, then for the
    /// reminder and again for the cancel).
    async fn choosing(script: Vec<Turn>, wait: Duration, reminder: Duration) -> Harness {
        let model = Arc::new(ScriptedProvider::new(script, End::Fail));
        let mode = aria_api::ApprovalMode::Governed;
        Harness::build(model, Duration::from_secs(30), mode, Some((wait, reminder)), None).await
    }

    async fn build(
        model: Arc<dyn Provider>,
        approval_timeout: Duration,
        mode: aria_api::ApprovalMode,
        choice: Option<(Duration, Duration)>,
        private_memory: Option<&str>,
    ) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        // The daemon's store redacts as `aria serve`'s does (the secret filter).
        let redactor = Arc::new(aria_tools::SecretRedactor::new(Vec::new()));
        let store = Arc::new(Store::open(&dir.path().join("aria.db"), redactor).unwrap());
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        let guard = Arc::new(
            aria_tools::PathGuard::new(std::slice::from_ref(&root), Default::default()).unwrap(),
        );
        let snapshots = aria_tools::Snapshots::new(guard, aria_tools::SnapshotOptions::default());
        let runs = Arc::new(Runs::new());
        let approvals = Approvals::new(store.clone(), runs.clone(), approval_timeout);
        let tool = Arc::new(DeleteTool::default());
        let choices = Arc::new(aria_gateway::choices::Choices::default());
        let mut tools: Vec<Arc<dyn Tool>> = vec![tool.clone()];
        if choice.is_some() {
            tools.push(Arc::new(aria_gateway::choices::AskUser::new(choices.clone())));
        }
        let mut config = AgentConfig::new("test-model", "You are a test.");
        config.approval_timeout = approval_timeout;
        config.mode = mode;
        config.local_model = private_memory.is_some();
        let agent = Agent::new(
            model,
            Arc::new(ToolRegistry::new(tools).unwrap()),
            store.clone(),
            store.clone(),
            Arc::new(NoRedact),
            config,
        )
        .with_approver(Arc::new(approvals.clone()));
        let agent = match private_memory {
            Some(text) => agent.with_memory(boundaries::recalling(&store, text)),
            None => agent,
        };
        let gw = Arc::new(Gateway::new(
            agent,
            store,
            runs,
            approvals,
            dir.path().to_path_buf(),
            Services {
                config: json!({"caps": {"per_day_usd": 2.0, "per_month_usd": null}}),
                snapshots: Some(Arc::new(snapshots)),
                choices: Some(choices),
                ..Services::default()
            },
            Security::new(None, true, Vec::new(), 0),
        ));
        let tg = FakeTelegram::start(TOKEN);
        let mut config = TelegramConfig::new(BotToken::new(TOKEN), vec![CHAT, GROUP]);
        config.api_base = tg.api_base();
        config.poll_timeout = Duration::from_secs(2);
        config.edit_interval = Duration::from_millis(100);
        config.retry_base = Duration::from_millis(50);
        if let Some((wait, reminder)) = choice {
            config.choice_wait = wait;
            config.choice_reminder = reminder;
        }
        let mut h = Harness { tg, root, gw, tool, channel: None, config, _dir: dir };
        h.restart();
        h
    }

    /// Starts the channel (again).
    fn restart(&mut self) {
        assert!(self.channel.is_none());
        self.channel = Some(Telegram::start(self.gw.clone(), self.config.clone()).unwrap());
    }

    async fn stop(&mut self) {
        if let Some(mut channel) = self.channel.take() {
            // As `aria serve` stops it: polling first, then the rest.
            channel.stop_polling().await;
            channel.stop(Duration::from_secs(2)).await;
        }
    }

    /// Waits until `check` holds, or fails the test saying what was waited for.
    async fn until(&self, what: &str, check: impl Fn(&FakeTelegram) -> bool) {
        if !self.tg.wait_until(WAIT, check).await {
            panic!("timed out waiting for {what}; requests: {:#?}", self.tg.requests());
        }
    }

    /// The texts of the bot's messages in a chat, oldest first.
    fn texts(&self, chat: i64) -> Vec<String> {
        self.tg.messages(chat).into_iter().map(|(_, t)| t).collect()
    }

    /// The sendMessage bodies to a chat.
    fn sends(&self, chat: i64) -> Vec<Value> {
        self.tg.calls("sendMessage").into_iter().filter(|b| b["chat_id"] == chat).collect()
    }
}

/// Waits until a question with buttons is recorded as sent (Telegram's message id is how a
/// press is matched to it).
async fn question_sent(h: &Harness) {
    h.until("the question recorded as sent", |_| {
        h.gw.store
            .outbox_items(CHANNEL, CHAT)
            .unwrap()
            .iter()
            .any(|r| r.payload.get("reply_markup").is_some() && r.state == OutboxState::Sent)
    })
    .await;
}

fn has_buttons(body: &Value) -> bool {
    body.pointer("/reply_markup/inline_keyboard").is_some()
}

// -----------------------------------------------------------------------------------------------

#[tokio::test]
async fn only_allowlisted_chats_are_served_and_refusals_are_audited_and_counted() {
    let mut h = Harness::start(vec![Turn::text("hello to you")]).await;
    h.tg.push_message(STRANGER, STRANGER, "let me in");
    h.tg.push_message(GROUP, STRANGER, "/status");
    h.tg.push_message(CHAT, CHAT, "hello");
    h.until("the answer", |t| t.messages(CHAT).iter().any(|(_, m)| m == "hello to you")).await;
    assert!(h.sends(STRANGER).is_empty(), "a stranger gets no answer");
    assert!(h.sends(GROUP).is_empty(), "a group command needs an allowed user");
    let refused: Vec<Value> =
        h.gw.store
            .audit_list(None)
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == "telegram.refused")
            .map(|r| r.payload)
            .collect();
    assert_eq!(
        refused,
        [
            json!({"chat_id": STRANGER, "user_id": STRANGER, "what": "message"}),
            json!({"chat_id": GROUP, "user_id": STRANGER, "what": "command"}),
        ]
    );
    assert_eq!(h.gw.store.channel_refused(CHANNEL).unwrap(), 2);
    let chats = h.gw.store.channel_chats(CHANNEL, 10).unwrap();
    assert!(chats.iter().any(|c| c.chat_id == STRANGER && !c.allowed));
    // The count shows on /status.
    h.tg.push_message(CHAT, CHAT, "/status");
    h.until("/status", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("uptime"))).await;
    let status = h.texts(CHAT).into_iter().find(|m| m.contains("uptime")).unwrap();
    assert!(status.contains("not on the allowlist): 2"), "{status}");
    assert!(status.contains("outbox: "), "{status}");
    // The token is in no request body, log of the fake aside (it is the URL's).
    for r in h.tg.requests() {
        assert!(!r.body.to_string().contains("TEST-TOKEN"), "{r:?}");
    }
    h.stop().await;
}

#[tokio::test]
async fn an_answer_streams_into_one_message_edited_as_text_arrives() {
    let pieces: Vec<String> = (0..8).map(|i| format!("part{i} ")).collect();
    let full = pieces.concat().trim_end().to_owned();
    let slow = Slow { pieces, gap: Duration::from_millis(150) };
    let mut h = Harness::with(Arc::new(slow), Duration::from_secs(30)).await;
    h.tg.push_message(CHAT, CHAT, "talk slowly");
    h.until("the whole answer", |t| t.messages(CHAT).iter().any(|(_, m)| *m == full)).await;
    let sends = h.sends(CHAT);
    assert_eq!(sends.len(), 1, "one message, edited: {sends:#?}");
    assert!(
        sends[0]["text"].as_str().unwrap().len() < full.len(),
        "the first words went out early"
    );
    let edits = h.tg.calls("editMessageText");
    assert!(edits.len() >= 2, "edited as text arrived: {edits:#?}");
    assert!(edits.len() <= 8, "edits are throttled: {}", edits.len());
    assert!(!h.tg.calls("sendChatAction").is_empty(), "typing shown while waiting");
    assert_eq!(h.texts(CHAT), [full]);
    h.stop().await;
}

/// Runs a file_delete call up to its approval question; returns the question's message id
/// and the approval id.
async fn asked(h: &Harness) -> (i64, String) {
    h.tg.push_message(CHAT, CHAT, "delete old.txt");
    h.until("the approval question", |t| {
        t.calls("sendMessage").iter().any(has_buttons) && !t.messages(CHAT).is_empty()
    })
    .await;
    let question = h.sends(CHAT).into_iter().find(has_buttons).unwrap();
    let data = question["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    let id = data.strip_prefix("approve:").unwrap().to_owned();
    assert!(question["text"].as_str().unwrap().contains("file_delete"), "{question}");
    assert!(question["text"].as_str().unwrap().contains("old.txt"), "{question}");
    // Its Telegram id, once the outbox recorded it.
    let mut message_id = None;
    for _ in 0..100 {
        message_id =
            h.tg.messages(CHAT)
                .into_iter()
                .find(|(_, text)| text.contains("Approve this"))
                .map(|(id, _)| id);
        if message_id.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Pressed only once the outbox recorded it as sent (Telegram's id is how a press is matched).
    question_sent(h).await;
    (message_id.unwrap(), id)
}

fn delete_then_answer() -> Vec<Turn> {
    vec![Turn::tool("file_delete", json!({"path": "old.txt"})), Turn::text("all done")]
}

#[tokio::test]
async fn an_approved_call_runs_and_the_question_says_so() {
    let mut h = Harness::start(delete_then_answer()).await;
    let (message, id) = asked(&h).await;
    // A press on another message, and one from a stranger's chat, change nothing.
    h.tg.push_callback(CHAT, CHAT, message + 1000, &format!("approve:{id}"));
    h.tg.push_callback(STRANGER, STRANGER, message, &format!("approve:{id}"));
    h.until("the stale press answered", |t| t.calls("answerCallbackQuery").len() >= 2).await;
    assert_eq!(h.tool.calls(), 0);
    let notes = h.tg.calls("answerCallbackQuery");
    assert_eq!(notes[0]["text"], "This question is no longer open.");
    h.tg.push_callback(CHAT, CHAT, message, &format!("approve:{id}"));
    h.until("the answer", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("all done"))).await;
    assert_eq!(h.tool.calls(), 1);
    h.until("the question edited", |t| {
        t.text_of(CHAT, message).is_some_and(|m| m.starts_with("✅ Approved"))
    })
    .await;
    assert_eq!(h.tg.calls("answerCallbackQuery").last().unwrap()["text"], "Approved.");
    let answered = h.gw.store.approval(&id).unwrap().unwrap();
    assert_eq!(answered.answered_by.as_deref(), Some(format!("telegram:{CHAT}").as_str()));
    let all = h.texts(CHAT).join("\n");
    assert!(all.contains("🔧 file_delete old.txt"), "{all}");
    h.stop().await;
}

#[tokio::test]
async fn a_denied_call_does_not_run() {
    let mut h = Harness::start(delete_then_answer()).await;
    let (message, id) = asked(&h).await;
    h.tg.push_callback(CHAT, CHAT, message, &format!("deny:{id}"));
    h.until("the question edited", |t| {
        t.text_of(CHAT, message).is_some_and(|m| m.starts_with("❌ Denied"))
    })
    .await;
    h.until("the answer", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("all done"))).await;
    assert_eq!(h.tool.calls(), 0);
    h.stop().await;
}

#[tokio::test]
async fn an_unanswered_question_times_out_as_denied_and_says_so() {
    let model = Arc::new(ScriptedProvider::new(delete_then_answer(), End::Fail));
    let mut h = Harness::with(model, Duration::from_secs(1)).await;
    let (message, id) = asked(&h).await;
    h.until("the question edited", |t| {
        t.text_of(CHAT, message).is_some_and(|m| m.contains("No answer in time"))
    })
    .await;
    assert_eq!(h.tool.calls(), 0);
    // A late press is refused.
    h.tg.push_callback(CHAT, CHAT, message, &format!("approve:{id}"));
    h.until("the late press answered", |t| !t.calls("answerCallbackQuery").is_empty()).await;
    assert_eq!(h.tg.calls("answerCallbackQuery")[0]["text"], "This question is no longer open.");
    assert_eq!(h.tool.calls(), 0);
    h.stop().await;
}

#[tokio::test]
async fn long_answers_split_and_markup_is_escaped_or_falls_back_to_plain_text() {
    let paragraph = "1 < 2 && 3 > 2, said <b>nobody</b> & **everyone** in `x<y`. ".repeat(12);
    let answer = vec![paragraph.trim_end().to_owned(); 8].join("\n\n");
    let mut h = Harness::start(vec![Turn::Text(answer.clone())]).await;
    h.tg.push_message(CHAT, CHAT, "a long one");
    h.until("two parts", |t| t.messages(CHAT).len() >= 2).await;
    h.until("the end", |t| t.messages(CHAT).last().is_some_and(|(_, m)| m.ends_with("in x<y.")))
        .await;
    let shown = h.texts(CHAT);
    for part in &shown {
        assert!(part.encode_utf16().count() <= 4096);
        assert!(part.starts_with("1 < 2 && 3 > 2, said <b>nobody</b> & everyone"), "{part:.80}");
    }
    let joined = shown.join("\n\n");
    assert_eq!(joined, answer.replace("**everyone**", "everyone").replace("`x<y`", "x<y"));

    // Markup Telegram refuses is sent again as plain text.
    h.tg.fail_next(
        "sendMessage",
        Fault::BadRequest("can't parse entities: unsupported start tag".into()),
        1,
    );
    h.tg.push_message(CHAT, CHAT, "/help");
    h.until("the help", |t| t.messages(CHAT).iter().any(|(_, m)| m.starts_with("Commands:"))).await;
    let last = h.sends(CHAT).pop().unwrap();
    assert!(last.get("parse_mode").is_none(), "{last}");
    assert!(last.get("aria_plain").is_none(), "{last}");
    h.stop().await;
}

#[tokio::test]
async fn a_restart_while_polling_neither_loses_nor_repeats_an_update() {
    let mut h = Harness::start(vec![]).await;
    h.tg.push_message(CHAT, CHAT, "/help");
    h.until("the first answer", |t| t.messages(CHAT).len() == 1).await;
    // Stopped in the middle of a long poll; updates arrive while it is down.
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.stop().await;
    h.tg.push_message(CHAT, CHAT, "/help");
    h.tg.push_message(CHAT, CHAT, "/cost");
    h.restart();
    h.until("both answers", |t| t.messages(CHAT).len() == 3).await;
    // And once more, with nothing new: nothing is answered again.
    h.stop().await;
    h.restart();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let texts = h.texts(CHAT);
    assert_eq!(texts.len(), 3, "{texts:#?}");
    assert!(texts[2].starts_with("Spend today"), "{}", texts[2]);
    assert_eq!(h.tg.unconfirmed(), 0);
    h.stop().await;
}

#[tokio::test]
async fn the_outbox_retries_after_429_and_502_and_never_duplicates() {
    let mut h = Harness::start(vec![]).await;
    h.tg.fail_next("sendMessage", Fault::TooManyRequests { retry_after: 1 }, 1);
    h.tg.fail_next("sendMessage", Fault::Status(502), 1);
    h.tg.push_message(CHAT, CHAT, "/cost");
    h.until("the answer recorded as sent", |t| {
        t.messages(CHAT).len() == 1
            && h.gw.store.outbox_items(CHANNEL, CHAT).unwrap()[0].state == OutboxState::Sent
    })
    .await;
    let calls = h.tg.calls("sendMessage");
    assert_eq!(calls.len(), 3, "429, 502, then sent");
    let rows = h.gw.store.outbox_items(CHANNEL, CHAT).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].state, rows[0].attempts), (OutboxState::Sent, 3));
    // A restart does not send a recorded success again.
    h.stop().await;
    h.restart();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(h.tg.calls("sendMessage").len(), 3);

    // A cut connection after delivery is an unknown outcome: tried once more, flagged, no loop.
    h.tg.fail_next("sendMessage", Fault::Drop { delivered: true }, 1);
    h.tg.fail_next("sendMessage", Fault::Drop { delivered: false }, 1);
    h.tg.push_message(CHAT, CHAT, "/help");
    h.until("the row settled", |_| {
        h.gw.store
            .outbox_items(CHANNEL, CHAT)
            .unwrap()
            .last()
            .is_some_and(|r| r.state == OutboxState::Failed)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.tg.calls("sendMessage").len(), 5, "exactly one more try");
    let row = h.gw.store.outbox_items(CHANNEL, CHAT).unwrap().pop().unwrap();
    assert_eq!(row.attempts, 2);
    let error = row.error.unwrap();
    assert!(error.contains("Telegram could not be reached"), "{error}");
    assert!(!error.contains("TEST-TOKEN"), "{error}");
    h.stop().await;
}

#[tokio::test]
async fn commands_bypass_the_model_and_are_registered() {
    let mut h = Harness::start(vec![]).await;
    h.until("the menu", |t| !t.commands().is_empty()).await;
    let names: Vec<String> =
        h.tg.commands().iter().map(|c| c["command"].as_str().unwrap().to_owned()).collect();
    assert_eq!(
        names,
        [
            "start",
            "help",
            "new",
            "status",
            "health",
            "logs",
            "cancel",
            "cost",
            "memory",
            "forget",
            "mode",
            "agent",
            "snapshots",
            "rollback",
            "schedule",
            "notify",
            "heartbeat"
        ]
    );
    h.tg.push_message(CHAT, CHAT, "/new");
    h.until("/new", |t| t.messages(CHAT).len() == 1).await;
    let first = h.gw.store.channel_chat_conversation(CHANNEL, CHAT).unwrap().unwrap();
    h.tg.push_message(CHAT, CHAT, "/new@aria_test_bot");
    h.until("/new again", |t| t.messages(CHAT).len() == 2).await;
    let second = h.gw.store.channel_chat_conversation(CHANNEL, CHAT).unwrap().unwrap();
    assert_ne!(first, second);
    h.tg.push_message(CHAT, CHAT, "/new@another_bot");
    h.tg.push_message(CHAT, CHAT, "/cancel");
    h.tg.push_message(CHAT, CHAT, "/memory");
    h.tg.push_message(CHAT, CHAT, "/snapshots");
    h.tg.push_message(CHAT, CHAT, "/nonsense");
    h.until("four answers", |t| t.messages(CHAT).len() == 6).await;
    let texts = h.texts(CHAT);
    assert_eq!(
        texts[2], "Nothing is running in this chat.",
        "a command for another bot is not ours"
    );
    assert_eq!(h.gw.store.channel_chat_conversation(CHANNEL, CHAT).unwrap().unwrap(), second);
    assert!(texts[3].contains("/memory QUERY"), "{}", texts[3]);
    assert_eq!(texts[4], "No restore points yet.");
    assert!(texts[5].starts_with("There is no command /nonsense."), "{}", texts[5]);
    h.stop().await;
}

#[tokio::test]
async fn snapshots_are_listed_and_rollback_restores_a_file_and_is_audited() {
    let mut h = Harness::start(vec![]).await;
    let notes = h.root.join("notes.txt");
    std::fs::write(&notes, "version 1\n").unwrap();
    let snapshots = h.gw.services.snapshots.clone().unwrap();
    let taken = snapshots.snapshot(&notes, "file_write", "session-1").unwrap();
    std::fs::write(&notes, "version 2\n").unwrap();
    h.tg.push_message(CHAT, CHAT, "/snapshots");
    h.until("the list", |t| t.messages(CHAT).len() == 1).await;
    let listed = h.texts(CHAT).remove(0);
    assert!(listed.contains(&taken.id.0), "{listed}");
    h.tg.push_message(CHAT, CHAT, "/rollback");
    h.tg.push_message(CHAT, CHAT, "/rollback snapshot/no-such-thing");
    h.tg.push_message(CHAT, CHAT, &format!("/rollback {}", taken.id.0));
    h.until("three answers", |t| t.messages(CHAT).len() == 4).await;
    let texts = h.texts(CHAT);
    assert!(texts[1].contains("Name the restore point"), "{}", texts[1]);
    assert!(texts[2].starts_with("⚠️"), "an unknown id is an error: {}", texts[2]);
    assert!(
        texts[3].starts_with("Rolled back to") && texts[3].contains("notes.txt"),
        "{}",
        texts[3]
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "version 1\n");
    let audited = h.gw.store.audit_list(None).unwrap();
    let rollback = audited.iter().find(|r| r.kind == "snapshot.rollback").expect("audited");
    assert_eq!(
        (rollback.actor.as_str(), &rollback.payload["channel"]),
        ("user", &json!("telegram"))
    );
    h.stop().await;
}

#[tokio::test]
async fn past_the_per_chat_limit_messages_wait_and_are_merged() {
    let model = Arc::new(ScriptedProvider::new(vec![], End::Fail));
    let mut h = Harness::with(model, Duration::from_secs(30)).await;
    h.stop().await;
    h.config.max_per_minute = 2;
    h.restart();
    for _ in 0..5 {
        h.tg.push_message(CHAT, CHAT, "/cost");
    }
    h.until("two sent, the rest merged into one waiting message", |_| {
        h.gw.store.outbox_waiting(CHANNEL).unwrap() == 1
            && h.gw.store.outbox_items(CHANNEL, CHAT).unwrap().len() == 3
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.texts(CHAT).len(), 2, "the limit holds");
    let rows = h.gw.store.outbox_items(CHANNEL, CHAT).unwrap();
    let waiting = rows.iter().find(|r| r.state == OutboxState::Pending).unwrap();
    assert_eq!(waiting.payload["text"].as_str().unwrap().matches("Spend today").count(), 3);
    assert_eq!(waiting.attempts, 0, "waiting for the limit is not a failed attempt");
    h.stop().await;
}

#[tokio::test]
async fn documents_and_photos_are_saved_in_the_inbox_and_given_to_the_model_voice_is_kept() {
    let model = ScriptedProvider::new(vec![Turn::text("Got it.")], End::RepeatLast);
    let mut h = Harness::with(Arc::new(model.clone()), Duration::from_secs(30)).await;
    // Without an inbox, files are not taken, and the chat hears how to allow them.
    let id = h.tg.add_file(b"buy milk\n");
    h.tg.push_file(CHAT, CHAT, "document", &id, "todo.txt", None);
    h.until("the refusal", |t| t.messages(CHAT).len() == 1).await;
    assert!(h.texts(CHAT)[0].contains("[telegram] inbox"), "{}", h.texts(CHAT)[0]);
    assert!(model.requests().is_empty());

    h.stop().await;
    let inbox = h.root.join("inbox");
    h.config.inbox = Some(inbox.clone());
    h.restart();
    h.tg.push_file(CHAT, CHAT, "document", &id, "../../todo list.txt", Some("what is on it?"));
    h.until("the answer", |t| t.messages(CHAT).iter().any(|(_, m)| m == "Got it.")).await;
    let saved: Vec<_> = std::fs::read_dir(&inbox).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(saved.len(), 1);
    assert!(saved[0].file_name().unwrap().to_str().unwrap().ends_with("-_.._todo_list.txt"));
    assert_eq!(std::fs::read(&saved[0]).unwrap(), b"buy milk\n");
    let asked = format!("{:?}", model.requests()[0].messages.last().unwrap());
    assert!(asked.contains(&saved[0].display().to_string()), "{asked}");
    assert!(asked.contains("what is on it?"), "{asked}");

    let voice = h.tg.add_file(b"OggS...");
    h.tg.push_file(CHAT, CHAT, "voice", &voice, "", None);
    h.until("the voice note kept", |t| {
        t.messages(CHAT).iter().any(|(_, m)| m.starts_with("Saved your voice message"))
    })
    .await;
    assert_eq!(std::fs::read_dir(&inbox).unwrap().count(), 2);
    assert_eq!(model.requests().len(), 1, "a voice note is not sent to the model");
    let saved: Vec<Value> =
        h.gw.store
            .audit_list(None)
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == "telegram.file_saved")
            .map(|r| r.payload)
            .collect();
    assert_eq!(saved.len(), 2, "{saved:?}");
    assert_eq!(
        (saved[0]["kind"].clone(), saved[0]["bytes"].clone()),
        (json!("document"), json!(9))
    );
    h.stop().await;
}

#[tokio::test]
async fn health_and_resources_report_each_check() {
    let mut h = Harness::start(vec![]).await;
    h.tg.push_message(CHAT, CHAT, "/health");
    h.until("/health", |t| t.messages(CHAT).len() == 1).await;
    let health = h.texts(CHAT).remove(0);
    assert!(health.starts_with("healthy\n"), "{health}");
    // The status collector's checks, as GET /health shows them.
    let schema =
        format!("database: writable, schema {}", aria_store::Store::supported_schema_version());
    for check in [schema.as_str(), "disk: ", "scheduler: ", "outbox: ", "jobs: ", "models: "] {
        assert!(health.contains(check), "{check}: {health}");
    }
    h.tg.push_message(CHAT, CHAT, "/status resources");
    h.until("/status resources", |t| t.messages(CHAT).len() == 2).await;
    let resources = h.texts(CHAT).remove(1);
    for line in ["CPU: ", "RSS: ", "database: ", "logs: ", "snapshots: 0", "event-loop lag: "] {
        assert!(resources.contains(line), "{line}: {resources}");
    }
    assert!(!resources.contains("database: in memory"), "{resources}");
    h.tg.push_message(CHAT, CHAT, "/logs");
    h.until("/logs without a file", |t| t.messages(CHAT).len() == 3).await;
    assert_eq!(h.texts(CHAT)[2], "There is no log file (logging to a file is off).");
    let logs = h.gw.data_dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let now = time::OffsetDateTime::now_utc();
    let at =
        |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).unwrap();
    let line = |t, level: &str, m: &str| {
        json!({"timestamp": at(t), "level": level, "fields": {"message": m}, "target": "x"})
            .to_string()
    };
    let lines = [
        line(now - time::Duration::hours(3), "ERROR", "too old"),
        line(now, "INFO", "not a warning"),
        line(now, "WARN", "getUpdates failed"),
    ];
    std::fs::write(logs.join("aria.jsonl"), lines.join("\n") + "\nnot json\n").unwrap();
    h.tg.push_message(CHAT, CHAT, "/logs 2");
    h.tg.push_message(CHAT, CHAT, "/logs soon");
    h.until("/logs 2", |t| t.messages(CHAT).len() == 5).await;
    let texts = h.texts(CHAT);
    assert!(
        texts[3].contains("(1)") && texts[3].contains("WARN getUpdates failed"),
        "{}",
        texts[3]
    );
    assert!(!texts[3].contains("too old") && !texts[3].contains("not a warning"), "{}", texts[3]);
    assert!(texts[4].starts_with("⚠️") && texts[4].contains("/logs 6"), "{}", texts[4]);
    h.stop().await;
}

#[tokio::test]
async fn a_question_about_a_huge_call_still_fits_one_message() {
    let huge = "x".repeat(10_000);
    let script = vec![Turn::tool("file_delete", json!({"path": huge})), Turn::text("ok")];
    let mut h = Harness::start(script).await;
    h.tg.push_message(CHAT, CHAT, "delete it");
    h.until("the question shown", |t| {
        t.messages(CHAT).iter().any(|(_, m)| m.starts_with("Approve this"))
    })
    .await;
    let question = h.texts(CHAT).into_iter().find(|m| m.starts_with("Approve this")).unwrap();
    assert!(question.chars().count() < 4096);
    // Nothing is left out: the whole call went first, as a file.
    assert!(!question.contains("more characters"), "{question}");
    let documents = h.tg.documents(CHAT);
    assert_eq!(documents.len(), 1);
    assert!(documents[0].2.contains(&"x".repeat(10_000)));
    h.stop().await;
}

#[tokio::test]
async fn a_chat_in_read_only_mode_changes_nothing_and_is_not_asked() {
    let mut h = Harness::start(delete_then_answer()).await;
    h.tg.push_message(CHAT, CHAT, "/mode");
    h.tg.push_message(CHAT, CHAT, "/mode reckless");
    h.tg.push_message(CHAT, CHAT, "/mode read_only");
    h.until("three answers", |t| t.messages(CHAT).len() == 3).await;
    let texts = h.texts(CHAT);
    assert!(texts[0].starts_with("This chat runs in governed mode"), "{}", texts[0]);
    assert!(texts[1].starts_with("⚠️ there is no mode `reckless`"), "{}", texts[1]);
    assert_eq!(texts[2], "This chat now runs in read_only mode until the daemon restarts.");
    h.tg.push_message(CHAT, CHAT, "delete old.txt");
    h.until("the answer", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("all done"))).await;
    assert_eq!(h.tool.calls(), 0);
    assert!(!h.tg.calls("sendMessage").iter().any(has_buttons), "nobody is asked");
    let answer = h.texts(CHAT).pop().unwrap();
    assert!(
        answer.contains("⛔ file_delete not run") && answer.contains("read_only"),
        "{:#?}",
        h.texts(CHAT)
    );
    let started = h.gw.store.audit_list(None).unwrap();
    let start = started.iter().find(|r| r.kind == "session.start").unwrap();
    assert_eq!(start.payload["mode"], "read_only");
    h.stop().await;
}

#[tokio::test]
async fn a_chat_may_choose_a_stricter_mode_than_the_daemons_never_a_looser_one() {
    let model = Arc::new(ScriptedProvider::new(vec![], End::Fail));
    let mut h =
        Harness::configured(model, Duration::from_secs(30), aria_api::ApprovalMode::Supervised)
            .await;
    h.tg.push_message(CHAT, CHAT, "/mode governed");
    h.tg.push_message(CHAT, CHAT, "/mode supervised");
    h.tg.push_message(CHAT, CHAT, "/mode read_only");
    h.tg.push_message(CHAT, CHAT, "/mode");
    h.until("four answers", |t| t.messages(CHAT).len() == 4).await;
    let texts = h.texts(CHAT);
    assert!(
        texts[0]
            .starts_with("⚠️ the daemon runs in supervised mode and a chat can only be stricter"),
        "{}",
        texts[0]
    );
    assert_eq!(texts[1], "This chat now runs in supervised mode until the daemon restarts.");
    assert_eq!(texts[2], "This chat now runs in read_only mode until the daemon restarts.");
    assert!(
        texts[3].starts_with("This chat runs in read_only mode (the daemon's: supervised)"),
        "{}",
        texts[3]
    );
    h.stop().await;
}

#[tokio::test]
async fn a_message_still_waiting_when_the_channel_stops_is_sent_after_a_restart() {
    let mut h = Harness::start(vec![]).await;
    h.config.retry_base = Duration::from_secs(2);
    h.stop().await;
    h.restart();
    h.tg.fail_next("sendMessage", Fault::Status(502), 1);
    h.tg.push_message(CHAT, CHAT, "/cost");
    h.until("the first try failed", |_| {
        h.gw.store.outbox_items(CHANNEL, CHAT).unwrap().first().is_some_and(|r| r.attempts == 1)
    })
    .await;
    h.stop().await;
    assert!(h.tg.messages(CHAT).is_empty());
    assert_eq!(h.gw.store.outbox_waiting(CHANNEL).unwrap(), 1, "kept in the outbox");
    h.restart();
    h.until("sent by the new channel", |t| t.messages(CHAT).len() == 1).await;
    assert_eq!(h.tg.calls("sendMessage").len(), 2);
    h.stop().await;
}

// -----------------------------------------------------------------------------------------------
// Scheduled jobs and notifications
// -----------------------------------------------------------------------------------------------
