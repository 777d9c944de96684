//! Approval questions that no conversation asked (an MCP client's call on `/mcp`): recorded,
//! announced as a notification, asked with Approve / Deny buttons in the first allowlisted
//! Telegram chat that takes notifications, answerable there or through the API, and the
//! Telegram question edited to say how it ended. The channel talks to the fake Bot API
//! (`aria_testkit::telegram_mock`) on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns unwrap too

use std::sync::Arc;
use std::time::Duration;

use aria_api::{NoRedact, Tier};
use aria_core::{Agent, AgentConfig, ApprovalAnswer, ApprovalRequest, Approver, ToolRegistry};
use aria_gateway::telegram::{BotToken, Telegram, TelegramConfig, TelegramHandle};
use aria_gateway::{Approvals, Decision, Detached, Gateway, Runs, Security, Services};
use aria_store::Store;
use aria_testkit::scripted::{End, ScriptedProvider};
use aria_testkit::telegram_mock::FakeTelegram;
use pretty_assertions::assert_eq;
use serde_json::json;

const TOKEN: &str = "123456:TEST-TOKEN-detached";
const OWNER: i64 = 4242;
const OTHER: i64 = 5151;
const WAIT: Duration = Duration::from_secs(10);

struct Rig {
    tg: FakeTelegram,
    gw: Arc<Gateway>,
    detached: Detached,
    channel: Option<TelegramHandle>,
    _dir: tempfile::TempDir,
}

impl Rig {
    async fn start(timeout: Duration) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&dir.path().join("aria.db"), Arc::new(NoRedact)).unwrap());
        let runs = Arc::new(Runs::new());
        let approvals = Approvals::new(store.clone(), runs.clone(), timeout);
        let agent = Agent::new(
            Arc::new(ScriptedProvider::new(vec![], End::Fail)),
            Arc::new(ToolRegistry::new(vec![]).unwrap()),
            store.clone(),
            store.clone(),
            Arc::new(NoRedact),
            AgentConfig::new("test-model", "You are a test."),
        );
        let gw = Arc::new(Gateway::new(
            agent,
            store,
            runs,
            approvals.clone(),
            dir.path().to_path_buf(),
            Services::default(),
            Security::new(None, true, Vec::new(), 0),
        ));
        let detached = Detached::new(approvals, gw.notifications.clone());
        let tg = FakeTelegram::start(TOKEN);
        let mut config = TelegramConfig::new(BotToken::new(TOKEN), vec![OWNER, OTHER]);
        config.api_base = tg.api_base();
        config.poll_timeout = Duration::from_secs(2);
        config.edit_interval = Duration::from_millis(100);
        config.retry_base = Duration::from_millis(50);
        let channel = Some(Telegram::start(gw.clone(), config).unwrap());
        Rig { tg, gw, detached, channel, _dir: dir }
    }

    async fn until(&self, what: &str, check: impl Fn(&FakeTelegram) -> bool) {
        if !self.tg.wait_until(WAIT, check).await {
            panic!("timed out waiting for {what}; requests: {:#?}", self.tg.requests());
        }
    }

    /// Asks a question the way the MCP gate does, on a task of its own.
    fn ask(&self) -> tokio::task::JoinHandle<ApprovalAnswer> {
        let question = self.detached.ask(ApprovalRequest {
            session_id: "mcp-1-1".into(),
            tool: "python_run".into(),
            arguments: json!({"code": "print(1)"}),
            tier: Tier::Irreversible,
            reason: Some("MCP client \"editor\" asks to run this.".into()),
        });
        tokio::spawn(question)
    }

    /// The question's Telegram message id and approval id, once the outbox sent it.
    async fn asked(&self) -> (i64, String) {
        self.until("the question with buttons", |t| {
            t.calls("sendMessage")
                .iter()
                .any(|b| b.pointer("/reply_markup/inline_keyboard").is_some())
                && t.messages(OWNER).iter().any(|(_, m)| m.contains("Approve this"))
        })
        .await;
        let question = self
            .tg
            .calls("sendMessage")
            .into_iter()
            .find(|b| b.pointer("/reply_markup/inline_keyboard").is_some())
            .unwrap();
        assert_eq!(question["chat_id"], json!(OWNER), "asked in the first allowlisted chat");
        let text = question["text"].as_str().unwrap();
        assert!(text.contains("python_run") && text.contains("editor"), "{text}");
        let data =
            question["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str().unwrap();
        let id = data.strip_prefix("approve:").unwrap().to_owned();
        let message = self
            .tg
            .messages(OWNER)
            .into_iter()
            .find(|(_, m)| m.contains("Approve this"))
            .unwrap()
            .0;
        (message, id)
    }

    async fn stop(&mut self) {
        if let Some(mut channel) = self.channel.take() {
            channel.stop_polling().await;
            channel.stop(Duration::from_secs(2)).await;
        }
    }
}

fn texts(tg: &FakeTelegram, chat: i64) -> Vec<String> {
    tg.messages(chat).into_iter().map(|(_, t)| t).collect()
}

#[tokio::test]
async fn a_question_is_answered_with_the_telegram_button_and_edited_to_say_so() {
    let mut rig = Rig::start(Duration::from_secs(30)).await;
    let answer = rig.ask();
    let (message, id) = rig.asked().await;
    // Recorded, pending, on the MCP channel.
    let pending = rig.gw.store.approvals_pending().unwrap();
    assert_eq!((pending[0].id.as_str(), pending[0].channel.as_str()), (id.as_str(), "mcp"));
    // The other chat hears about it as a notification, without buttons.
    rig.until("the other chat's notice", |t| !t.messages(OTHER).is_empty()).await;
    assert!(
        texts(&rig.tg, OTHER)[0].contains("POST /api/v1/approvals/"),
        "{:?}",
        texts(&rig.tg, OTHER)
    );

    rig.tg.push_callback(OWNER, OWNER, message, &format!("approve:{id}"));
    assert_eq!(tokio::time::timeout(WAIT, answer).await.unwrap().unwrap(), ApprovalAnswer::Once);
    rig.until("the question edited", |t| {
        t.text_of(OWNER, message).is_some_and(|m| m.starts_with("✅ Approved"))
    })
    .await;
    assert_eq!(rig.gw.store.notifications_since("approval", "2000-01-01T00:00:00Z").unwrap(), 1);
    rig.stop().await;
}

#[tokio::test]
async fn a_question_answered_through_the_api_or_not_at_all_is_edited_too() {
    let mut rig = Rig::start(Duration::from_secs(30)).await;
    let answer = rig.ask();
    let (message, id) = rig.asked().await;
    let person = aria_gateway::security::Identity::web_session();
    rig.gw.approvals.answer(&id, Decision::Deny, &person).unwrap();
    assert_eq!(tokio::time::timeout(WAIT, answer).await.unwrap().unwrap(), ApprovalAnswer::Deny);
    rig.until("the question edited as denied", |t| {
        t.text_of(OWNER, message).is_some_and(|m| m.starts_with("❌ Denied"))
    })
    .await;

    // Nobody answers: the asker gives up (the gate's approval timeout), the question expires.
    let waiting = rig.ask();
    rig.until("a second question", |t| {
        t.calls("sendMessage")
            .iter()
            .filter(|b| b.pointer("/reply_markup/inline_keyboard").is_some())
            .count()
            == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    waiting.abort();
    let _ = waiting.await;
    rig.until("the second question edited as expired", |t| {
        t.messages(OWNER).iter().any(|(_, m)| m.starts_with("⌛ No answer in time"))
    })
    .await;
    assert_eq!(rig.gw.store.approval(&id).unwrap().unwrap().status, "denied");
    assert!(rig.gw.store.approvals_pending().unwrap().is_empty(), "the second one expired");
    rig.stop().await;
}
