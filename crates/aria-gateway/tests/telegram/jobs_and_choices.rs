//! Telegram: scheduled jobs from the chat (`/schedule`, `/notify`, `/heartbeat`) and questions
//! with a choice of answers (`ask_user`).

use pretty_assertions::assert_eq;

use super::*;

/// Sends a command and waits for the chat's next message; returns its text.
async fn ask(h: &Harness, chat: i64, text: &str) -> String {
    let before = h.tg.messages(chat).len();
    h.tg.push_message(chat, chat, text);
    h.until(text, |t| t.messages(chat).len() > before).await;
    h.texts(chat).remove(before)
}

fn scheduler(h: &Harness) -> Arc<aria_scheduler::scheduler::Scheduler> {
    use aria_scheduler::scheduler::{Scheduler, SchedulerConfig, SystemClock};
    let scheduler = Arc::new(Scheduler::new(
        h.gw.store.clone(),
        Arc::new(SystemClock),
        Arc::new(aria_gateway::jobs::JobRunner { gateway: h.gw.clone() }),
        h.gw.notifications.clone(),
        SchedulerConfig::default(),
    ));
    h.gw.notifications.set_scheduler(&scheduler);
    scheduler
}

#[tokio::test]
async fn schedule_commands_add_list_edit_run_and_delete_jobs() {
    let mut h = Harness::start(vec![]).await;
    let _scheduler = scheduler(&h);
    let store = h.gw.store.clone();
    let added = ask(&h, CHAT, r#"/schedule add tea "0 16 * * 1-5" Time for tea"#).await;
    assert!(added.starts_with("Scheduled.\ntea  0 16 * * 1-5"), "{added}");
    let tea = store.job("tea").unwrap().unwrap();
    assert_eq!(tea.action, json!({"kind": "notify", "message": "Time for tea"}));
    assert_eq!(tea.created_by, "user");
    ask(&h, CHAT, "/schedule add news @daily ask: What happened overnight?").await;
    let news = store.job("news").unwrap().unwrap();
    assert_eq!(news.action, json!({"kind": "agent", "prompt": "What happened overnight?"}));
    assert_eq!(news.cron, "@daily");

    let refused = ask(&h, CHAT, r#"/schedule add bad "61 * * * *" x"#).await;
    assert!(refused.starts_with("⚠️") && refused.contains("61"), "{refused}");
    let unquoted = ask(&h, CHAT, "/schedule add bad 0 9 * * * x").await;
    assert!(unquoted.contains("quotes"), "{unquoted}");
    let taken = ask(&h, CHAT, "/schedule add tea @hourly again").await;
    assert!(taken.contains("exists already"), "{taken}");
    assert!(store.job("bad").unwrap().is_none());

    let list = ask(&h, CHAT, "/schedule").await;
    assert!(list.contains("\nnews  @daily") && list.contains("notify: Time for tea"), "{list}");
    assert_eq!(ask(&h, CHAT, "/schedule list").await, list);

    ask(&h, CHAT, "/schedule disable tea").await;
    assert!(!store.job("tea").unwrap().unwrap().enabled);
    let shown = ask(&h, CHAT, "/schedule show tea").await;
    assert!(shown.contains("next: disabled") && shown.contains("last run: never ran"), "{shown}");
    ask(&h, CHAT, "/schedule enable tea").await;
    ask(&h, CHAT, r#"/schedule edit tea "30 16 * * *""#).await;
    let tea = store.job("tea").unwrap().unwrap();
    assert!(tea.enabled);
    assert_eq!(tea.cron, "30 16 * * *");

    // Run now: the notification reaches the chat (it takes them), the run is in the history.
    let running = ask(&h, CHAT, "/schedule run tea").await;
    assert_eq!(running, "Running tea now; its result follows.");
    h.until("the run's notification", |t| {
        t.messages(CHAT)
            .iter()
            .any(|(_, text)| text.starts_with("Job tea (") && text.ends_with("): Time for tea"))
    })
    .await;
    let history = ask(&h, CHAT, "/schedule history tea").await;
    assert!(history.contains("  ok"), "{history}");

    assert_eq!(ask(&h, CHAT, "/schedule delete tea").await, "Deleted tea.");
    assert!(store.job("tea").unwrap().is_none());
    let gone = ask(&h, CHAT, "/schedule show tea").await;
    assert!(gone.starts_with("⚠️") && gone.contains("no job named tea"), "{gone}");
    let usage = ask(&h, CHAT, "/schedule frobnicate").await;
    assert!(usage.contains("/schedule add NAME"), "{usage}");
    h.stop().await;
}

#[tokio::test]
async fn notify_off_stops_pushes_to_that_chat_but_keeps_the_record() {
    let mut h = Harness::start(vec![]).await;
    let state = ask(&h, CHAT, "/notify").await;
    assert!(state.starts_with("Notifications are on in this chat."), "{state}");
    assert!(state.contains("[notify] enabled = true"), "{state}");
    ask(&h, CHAT, "/notify off").await;
    assert!(ask(&h, CHAT, "/notify").await.starts_with("Notifications are off"));
    let before = h.tg.messages(CHAT).len();

    let stored =
        h.gw.notifications.publish("completed", Some("tea"), None, "Tea is ready").unwrap();
    assert_eq!(stored.pushed, ["telegram", "web"], "the group still takes them");
    h.until("the group's notification", |t| {
        t.messages(GROUP).iter().any(|(_, text)| text == "Tea is ready")
    })
    .await;
    assert_eq!(h.tg.messages(CHAT).len(), before, "nothing reached the chat that said off");
    let recorded = h.gw.store.notifications(10, None).unwrap();
    assert_eq!(recorded[0].text, "Tea is ready");

    ask(&h, CHAT, "/notify on").await;
    h.gw.notifications.publish("completed", Some("tea"), None, "Second pot");
    h.until("the chat's notification", |t| {
        t.messages(CHAT).iter().any(|(_, text)| text == "Second pot")
    })
    .await;
    let wrong = ask(&h, CHAT, "/notify maybe").await;
    assert!(wrong.starts_with("⚠️"), "{wrong}");
    h.stop().await;
}

#[tokio::test]
async fn heartbeat_answers_now_and_status_shows_the_last_tick() {
    let mut h = Harness::start(vec![]).await;
    let store = h.gw.store.clone();
    let status = ask(&h, CHAT, "/status").await;
    assert!(status.contains("last scheduler tick: the scheduler is not running"), "{status}");
    let missing = ask(&h, CHAT, "/heartbeat off").await;
    assert!(missing.starts_with("⚠️") && missing.contains("[schedule] heartbeat"), "{missing}");

    store
        .job_create(&aria_store::NewJob {
            name: "heartbeat".into(),
            cron: "0 9 * * *".into(),
            tz: "UTC".into(),
            action: json!({"kind": "heartbeat"}),
            enabled: true,
            created_by: "system".into(),
            roots: vec![],
        })
        .unwrap();
    let beat = ask(&h, CHAT, "/heartbeat").await;
    let (seq, hash) = store.audit_head().unwrap().expect("the job's creation was audited");
    assert!(beat.starts_with("💓 Heartbeat"), "{beat}");
    assert!(beat.contains(&format!("Audit chain head: {seq}:{hash}")), "{beat}");

    let off = ask(&h, CHAT, "/heartbeat off").await;
    assert!(off.starts_with("The heartbeat is off"), "{off}");
    assert!(!store.job("heartbeat").unwrap().unwrap().enabled);
    ask(&h, CHAT, "/heartbeat on").await;
    assert!(store.job("heartbeat").unwrap().unwrap().enabled);

    let scheduler = scheduler(&h);
    scheduler.tick().unwrap();
    let tick = scheduler.last_tick().unwrap().strftime("%Y-%m-%d %H:%M:%S UTC").to_string();
    let status = ask(&h, CHAT, "/status").await;
    assert!(status.contains(&format!("last scheduler tick: {tick}")), "{status}");
    h.stop().await;
}

fn ask_which() -> Turn {
    Turn::tool("ask_user", json!({"question": "Which file?", "options": ["a.txt", "b.txt"]}))
}

/// The `ask_user` question in the chat: its Telegram id (once sent and recorded) and the
/// callback data of each option.
async fn choice_asked(h: &Harness) -> (i64, Vec<String>) {
    h.until("the choice question", |t| {
        t.messages(CHAT).iter().any(|(_, m)| m.starts_with("❓ Which file?"))
    })
    .await;
    let question = h
        .sends(CHAT)
        .into_iter()
        .find(|b| b["text"].as_str().is_some_and(|t| t.starts_with("❓")))
        .unwrap();
    let data: Vec<String> = question["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[0]["callback_data"].as_str().unwrap().to_owned())
        .collect();
    assert!(data.iter().all(|d| d.len() <= 64), "Telegram's limit: {data:?}");
    let message_id =
        h.tg.messages(CHAT).into_iter().find(|(_, m)| m.starts_with("❓")).map(|(id, _)| id);
    question_sent(h).await;
    (message_id.unwrap(), data)
}

fn chosen(h: &Harness) -> Vec<Value> {
    h.gw.store
        .audit_list(None)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "tool.end" && r.payload["name"] == "ask_user")
        .map(|r| r.payload["details"].clone())
        .collect()
}

#[tokio::test]
async fn a_choice_pressed_in_time_is_the_tools_answer() {
    let script = vec![ask_which(), Turn::text("Then b.txt it is.")];
    let mut h = Harness::choosing(script, Duration::from_secs(20), Duration::from_secs(600)).await;
    h.tg.push_message(CHAT, CHAT, "clean up the file");
    let (message_id, data) = choice_asked(&h).await;
    // A press from someone who is not on the allowlist, or from a chat not on it (a forwarded
    // message keeps its buttons), changes nothing.
    h.tg.push_callback(CHAT, 999, message_id, &data[0]);
    h.tg.push_callback(7777, 7777, message_id, &data[0]);
    // One with made-up data is not ARIA's; the real one for b.txt answers.
    h.tg.push_callback(CHAT, CHAT, message_id, "choose:nope:0");
    h.tg.push_callback(CHAT, CHAT, message_id, &data[1]);
    h.until("the answer", |t| t.messages(CHAT).iter().any(|(_, m)| m.contains("b.txt it is")))
        .await;
    assert_eq!(chosen(&h), [json!({"chosen": "b.txt"})]);
    let question = h.tg.text_of(CHAT, message_id).unwrap();
    assert!(question.contains("✅ b.txt"), "{question}");
    let refused: Vec<_> =
        h.gw.store
            .audit_list(None)
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == "telegram.refused")
            .collect();
    assert_eq!(refused.len(), 2, "the strangers' presses are audited");
    h.stop().await;
}

#[tokio::test]
async fn an_unanswered_choice_is_postponed_recalled_and_cancelled_and_a_late_press_goes_on() {
    let script = vec![
        ask_which(),
        Turn::text("I will wait for your choice."),
        Turn::text("Going on with a.txt."),
        ask_which(),
        Turn::text("Waiting again."),
    ];
    let mut h =
        Harness::choosing(script, Duration::from_millis(300), Duration::from_millis(800)).await;
    h.tg.push_message(CHAT, CHAT, "clean up the file");
    let (message_id, data) = choice_asked(&h).await;
    h.until("the run goes on without it", |t| {
        t.messages(CHAT).iter().any(|(_, m)| m.contains("wait for your choice"))
    })
    .await;
    assert_eq!(chosen(&h), [json!({"postponed": true})]);
    // Pressed late (before the cancel): the choice is the chat's next message.
    h.tg.push_callback(CHAT, CHAT, message_id, &data[0]);
    h.until("a new run with the choice", |t| {
        t.messages(CHAT).iter().any(|(_, m)| m.contains("Going on with a.txt"))
    })
    .await;
    let tasks: Vec<String> =
        h.gw.store
            .audit_list(None)
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == "session.start")
            .map(|r| r.payload["task"].as_str().unwrap_or_default().to_owned())
            .collect();
    assert!(tasks.iter().any(|t| t.starts_with("I choose: a.txt")), "{tasks:?}");
    assert!(h.tg.text_of(CHAT, message_id).unwrap().contains("✅ a.txt"));

    // A second question nobody answers: recalled after the wait, then cancelled.
    h.tg.push_message(CHAT, CHAT, "and the other one?");
    h.until("the reminder", |t| {
        t.messages(CHAT).iter().any(|(_, m)| m.starts_with("Still waiting for your choice"))
    })
    .await;
    let second = h.tg.messages(CHAT).into_iter().rfind(|(_, m)| m.starts_with("❓")).unwrap().0;
    let second_data: Vec<String> = h
        .sends(CHAT)
        .into_iter()
        .rfind(|b| b["text"].as_str().is_some_and(|t| t.starts_with("❓")))
        .unwrap()["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[0]["callback_data"].as_str().unwrap().to_owned())
        .collect();
    assert_ne!(second_data, data, "each question has its own ids");
    h.until("the cancel", |t| {
        t.text_of(CHAT, second).is_some_and(|m| m.contains("Cancelled: no choice came"))
    })
    .await;
    let cancel =
        h.tg.calls("editMessageText").into_iter().rfind(|b| b["message_id"] == second).unwrap();
    assert_eq!(cancel["reply_markup"], json!({"inline_keyboard": []}), "the buttons are gone");
    // A press on the cancelled question (an old client still shows the buttons) is stale.
    let runs_before = h.gw.store.audit_list(None).unwrap().len();
    h.tg.push_callback(CHAT, CHAT, second, &second_data[1]);
    h.until("the stale press answered", |t| {
        t.calls("answerCallbackQuery")
            .iter()
            .any(|b| b["text"] == "This question is no longer open.")
    })
    .await;
    let started = h.gw.store.audit_list(None).unwrap();
    assert!(
        !started[runs_before..].iter().any(|r| r.kind == "session.start"),
        "a stale press starts nothing"
    );
    assert!(h.tg.text_of(CHAT, second).unwrap().contains("Cancelled"), "and changes nothing");
    h.stop().await;
}
