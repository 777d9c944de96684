//! The real `aria serve` with its Telegram channel, against the fake Bot API on loopback: the
//! token and the API base come from `$ARIA_HOME/.env`, the allowlist from `aria.toml`.

use std::time::Duration;

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use aria_testkit::telegram_mock::FakeTelegram;

use super::daemon::Daemon;
use super::harness::{Aria, code, json_of, text};

const TOKEN: &str = "987654:E2E-token-never-printed";
const CHAT: i64 = 4242;
const STRANGER: i64 = 777;

fn configure(aria: &Aria, tg: &FakeTelegram, allowlist: &str) {
    std::fs::create_dir_all(aria.home()).unwrap();
    std::fs::write(
        aria.home().join(".env"),
        format!("TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_API_BASE={}\n", tg.api_base()),
    )
    .unwrap();
    let config = aria.dir.path().join("config/aria");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("aria.toml"), format!("[telegram]\n{allowlist}")).unwrap();
}

#[test]
fn aria_serve_answers_an_allowlisted_chat_on_telegram_and_stops_cleanly() {
    let aria = Aria::new();
    let tg = FakeTelegram::start(TOKEN);
    configure(&aria, &tg, &format!("allowed_chat_ids = [{CHAT}]\n"));
    let model = MockOpenAi::new(vec![MockTurn::text("Hello from **ARIA** <3")]).serve();
    let mut daemon = Daemon::start(&aria, &model.base_url(), &[]);
    tg.push_message(STRANGER, STRANGER, "let me in");
    tg.push_message(CHAT, CHAT, "hi");
    let answered = tg.wait_until_blocking(Duration::from_secs(30), |t| {
        t.messages(CHAT).iter().any(|(_, m)| m == "Hello from ARIA <3")
    });
    assert!(answered, "no answer; requests: {:#?}\nsaid: {}", tg.requests(), daemon.said());
    let sent = tg.calls("sendMessage");
    assert!(sent.iter().all(|b| b["chat_id"] == CHAT), "only the allowed chat: {sent:#?}");
    let shown: Vec<_> = sent.iter().chain(&tg.calls("editMessageText")).cloned().collect();
    assert!(
        shown.iter().any(|b| b["text"].as_str().unwrap().contains("<b>ARIA</b> &lt;3")),
        "HTML, escaped: {shown:#?}"
    );
    assert!(!tg.commands().is_empty(), "the command menu is registered");

    daemon.signal("TERM");
    let status = daemon.wait_exit(Duration::from_secs(20)).expect("it stops");
    let said = daemon.said();
    assert!(status.success(), "{status:?}: {said}");
    assert!(said.contains("Telegram: polling"), "{said}");
    assert!(!said.contains("E2E-token"), "the token is never printed: {said}");
    let polls = tg.calls("getUpdates").len();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(tg.calls("getUpdates").len(), polls, "no polling after the daemon stopped");

    let chats = aria.run(&model.base_url(), &["telegram", "chats", "--json"]);
    assert_eq!(code(&chats), 0, "{}", text(&chats.stderr));
    let chats = json_of(&chats);
    let by_id = |id: i64| chats.as_array().unwrap().iter().find(|c| c["chat_id"] == id).cloned();
    let stranger = by_id(STRANGER).expect("the stranger is listed");
    assert_eq!(
        (stranger["in_allowlist"].clone(), stranger["refused"].clone()),
        (false.into(), 1.into())
    );
    assert_eq!(by_id(CHAT).unwrap()["in_allowlist"], true);
    let audit = aria.run(&model.base_url(), &["audit", "list", "--json"]);
    assert!(text(&audit.stdout).contains("telegram.refused"));
    assert!(!text(&audit.stdout).contains("E2E-token"));
}

#[test]
fn without_an_allowlist_the_channel_stays_off_and_says_why_while_the_rest_serves() {
    let aria = Aria::new();
    let tg = FakeTelegram::start(TOKEN);
    configure(&aria, &tg, "");
    let model = MockOpenAi::new(vec![]).serve();
    let daemon = Daemon::start(&aria, &model.base_url(), &[]);
    let (status, _) = daemon.json("GET", "/api/v1/health", None);
    assert_eq!(status, 200);
    std::thread::sleep(Duration::from_millis(300));
    let said = daemon.said();
    assert_eq!(said.matches("the Telegram channel is off").count(), 1, "{said}");
    assert!(said.contains("allowed_chat_ids"), "{said}");
    assert!(tg.requests().is_empty(), "nothing asked of Telegram");

    // How the first chat id is found: write to the bot, then list who is waiting.
    tg.push_message(CHAT, CHAT, "hello?");
    let chats = aria.run(&model.base_url(), &["telegram", "chats", "--json"]);
    assert_eq!(code(&chats), 0, "{}", text(&chats.stderr));
    let chats = json_of(&chats);
    assert_eq!(chats[0]["chat_id"], CHAT, "{chats}");
    assert_eq!(
        (chats[0]["waiting"].clone(), chats[0]["in_allowlist"].clone()),
        (1.into(), false.into())
    );
    assert_eq!(tg.unconfirmed(), 1, "listing confirms nothing: the channel still gets it");
    let listed = aria.run(&model.base_url(), &["telegram", "chats"]);
    assert!(text(&listed.stdout).contains(&CHAT.to_string()), "{}", text(&listed.stdout));
    assert!(
        !text(&listed.stdout).contains("E2E-token") && !text(&listed.stderr).contains("E2E-token")
    );
}

#[test]
fn agent_in_a_chat_switches_to_a_new_conversation_with_that_agent() {
    let aria = Aria::new();
    let tg = FakeTelegram::start(TOKEN);
    configure(&aria, &tg, &format!("allowed_chat_ids = [{CHAT}]\n"));
    let model = MockOpenAi::new(vec![MockTurn::text("Found it.")]).serve();
    let daemon = Daemon::start(&aria, &model.base_url(), &[]);
    let said = |needle: &str| {
        tg.wait_until_blocking(Duration::from_secs(30), |t| {
            t.messages(CHAT).iter().any(|(_, m)| m.contains(needle))
        })
    };
    tg.push_message(CHAT, CHAT, "/agent");
    assert!(said("talks to the agent default"), "{:#?}\n{}", tg.requests(), daemon.said());
    tg.push_message(CHAT, CHAT, "/agent nosuch");
    assert!(said("no agent named nosuch"), "{:#?}", tg.requests());
    tg.push_message(CHAT, CHAT, "/agent researcher");
    assert!(said("now talking to the agent researcher"), "{:#?}", tg.requests());
    tg.push_message(CHAT, CHAT, "what is in the notes?");
    assert!(said("Found it."), "{:#?}\n{}", tg.requests(), daemon.said());
    let request = &model.requests()[0];
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"file_read") && !offered.contains(&"file_write"), "{offered:?}");
    assert!(request.to_string().contains("running as the agent \\\"researcher\\\""));
    tg.push_message(CHAT, CHAT, "/agent");
    assert!(said("talks to the agent researcher"), "{:#?}", tg.requests());
}

#[test]
fn a_planned_task_is_confirmed_in_the_chat_that_started_it() {
    let aria = Aria::new();
    let tg = FakeTelegram::start(TOKEN);
    configure(
        &aria,
        &tg,
        &format!(
            "allowed_chat_ids = [{CHAT}]\n\n[agents.lead]\nplanner = \"openai/planner-model\"\n\
             confirm_completion = true\n\n[memory]\nextract = false\nembedder = \"none\"\n"
        ),
    );
    let model = MockOpenAi::new(vec![
        MockTurn::text("1. Say hello."),
        MockTurn::text("Hello."),
        MockTurn::text("DONE: Said hello."),
    ])
    .serve();
    let daemon = Daemon::start(&aria, &model.base_url(), &[]);
    tg.push_message(CHAT, CHAT, "/agent lead");
    tg.push_message(CHAT, CHAT, "Greet me.");
    let asked = tg.wait_until_blocking(Duration::from_secs(30), |t| {
        t.messages(CHAT).iter().any(|(_, m)| m.starts_with("Is this done?"))
    });
    if !asked {
        let audit = aria.run(&model.base_url(), &["audit", "list"]);
        panic!("no question: {}\n{}", text(&audit.stdout), daemon.said());
    }
    let (message, text) =
        tg.messages(CHAT).into_iter().find(|(_, m)| m.starts_with("Is this done?")).unwrap();
    assert!(text.contains("Said hello.") && text.contains("Goal: Greet me."), "{text}");
    let sent = tg.calls("sendMessage");
    let question = sent
        .iter()
        .find(|b| b["text"].as_str().is_some_and(|t| t.starts_with("Is this done?")))
        .unwrap();
    let buttons = &question["reply_markup"]["inline_keyboard"][0];
    assert_eq!(
        (buttons[0]["text"].as_str(), buttons[1]["text"].as_str()),
        (Some("Yes, done"), Some("Not yet"))
    );
    let approve = buttons[0]["callback_data"].as_str().unwrap().to_owned();
    tg.push_callback(CHAT, CHAT, message, &approve);
    let done = tg.wait_until_blocking(Duration::from_secs(30), |t| {
        t.messages(CHAT).iter().any(|(_, m)| m == "Said hello.")
    });
    assert!(done, "{:#?}\n{}", tg.messages(CHAT), daemon.said());
}

/// What leaves for Telegram from the real daemon: a key in an answer arrives redacted and is
/// stored nowhere raw; an answer quoting a private memory (the model is on loopback, so it
/// was recalled) is kept on this machine, with a pointer to the conversation.
#[test]
fn secrets_and_private_memories_stay_off_telegram() {
    const KEY: &str = "ghp_R8x2Kq9LmZ4vT7nB1cW5yH3jF6dP0sA2eG8u";
    let aria = Aria::new();
    let tg = FakeTelegram::start(TOKEN);
    configure(&aria, &tg, &format!("allowed_chat_ids = [{CHAT}]\n"));
    let config = aria.dir.path().join("config/aria/aria.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml.push_str("\n[memory]\nembedder = \"none\"\nextract = false\n");
    std::fs::write(&config, toml).unwrap();
    let add = aria.run(
        "http://127.0.0.1:9/v1",
        &["memories", "add", "The user's bank PIN is 4711 and the safe code is 0815", "--private"],
    );
    assert_eq!(code(&add), 0, "{}", text(&add.stderr));
    let model = MockOpenAi::new(vec![
        MockTurn::text(format!("Your token is {KEY} - keep it safe.")),
        MockTurn::text("Of course: your bank PIN is 4711 and the safe code is 0815."),
    ])
    .serve();
    let mut daemon = Daemon::start(&aria, &model.base_url(), &[]);
    tg.push_message(CHAT, CHAT, "what is my token?");
    let redacted = tg.wait_until_blocking(Duration::from_secs(30), |t| {
        t.messages(CHAT).iter().any(|(_, m)| m.contains("keep it safe"))
    });
    assert!(redacted, "no answer: {:#?}\n{}", tg.requests(), daemon.said());
    tg.push_message(CHAT, CHAT, "what is my bank PIN?");
    let withheld = tg.wait_until_blocking(Duration::from_secs(30), |t| {
        t.messages(CHAT).iter().any(|(_, m)| m.contains("private memory"))
    });
    assert!(withheld, "{:#?}\n{}", tg.messages(CHAT), daemon.said());
    let first = model.requests()[1].to_string();
    assert!(first.contains("PIN is 4711"), "the private memory was recalled: {first}");
    for r in tg.requests() {
        let body = r.body.to_string();
        assert!(!body.contains("ghp_"), "a key left: {body}");
        assert!(!body.contains("4711"), "the private answer left: {body}");
    }
    let pointer = tg.messages(CHAT).into_iter().find(|(_, m)| m.contains("🔒")).unwrap().1;
    assert!(pointer.contains("aria conversations show "), "{pointer}");
    assert!(pointer.contains("http://127.0.0.1:") && pointer.contains("/#/c/"), "{pointer}");
    daemon.signal("TERM");
    daemon.wait_exit(Duration::from_secs(20)).expect("it stops");
    for (path, bytes) in super::harness::all_bytes(&aria.home()) {
        assert!(!super::harness::contains(&bytes, KEY.as_bytes()), "raw key in {path:?}");
    }
}
