//! `aria schedule …` end to end through the binary: the pure `preview` calculator (its
//! contract: `{"fires": [...]}`, exit 2 on a bad expression or zone) and the job commands.

use std::process::Output;
use std::sync::Arc;

use aria_api::NoRedact;
use aria_store::{Claim, Store};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::harness::{Aria, code, json_of, text};

const NO_SERVER: &str = "http://127.0.0.1:9/v1";
const TG_TOKEN: &str = "987654:schedule-test-token";
const CHAT: i64 = 4242;

fn schedule(aria: &Aria, args: &[&str]) -> Output {
    let mut full = vec!["schedule"];
    full.extend_from_slice(args);
    let out = aria.run(NO_SERVER, &full);
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    out
}

fn ok(out: &Output) -> String {
    assert_eq!(code(out), 0, "stdout:\n{}\nstderr:\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn preview_prints_fires_across_a_dst_gap_as_json() {
    let aria = Aria::new();
    let out = schedule(
        &aria,
        &[
            "preview",
            "--cron",
            "30 2 * * *",
            "--tz",
            "Europe/Berlin",
            "--after",
            "2026-03-28T00:00:00+01:00",
            "--count",
            "3",
            "--json",
        ],
    );
    ok(&out);
    assert_eq!(
        json_of(&out),
        json!({"fires": ["2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]})
    );
    // --after is exclusive; --count defaults to 5; the repeated hour runs a wildcard job twice.
    let out = schedule(
        &aria,
        &[
            "preview",
            "--cron",
            "15 * * * *",
            "--tz",
            "America/New_York",
            "--after",
            "2026-11-01T05:00:00Z",
            "--json",
        ],
    );
    ok(&out);
    assert_eq!(
        json_of(&out)["fires"],
        json!([
            "2026-11-01T01:15:00-04:00",
            "2026-11-01T01:15:00-05:00",
            "2026-11-01T02:15:00-05:00",
            "2026-11-01T03:15:00-05:00",
            "2026-11-01T04:15:00-05:00",
        ])
    );
    // Without --json: one instant a line.
    let out = schedule(
        &aria,
        &[
            "preview",
            "--cron",
            "@daily",
            "--tz",
            "UTC",
            "--after",
            "2026-01-01T00:00:00Z",
            "--count",
            "2",
        ],
    );
    assert_eq!(ok(&out), "2026-01-02T00:00:00+00:00\n2026-01-03T00:00:00+00:00\n");
}

#[test]
fn preview_exits_2_with_a_message_on_a_bad_expression_zone_or_instant() {
    let aria = Aria::new();
    for (args, needle) in [
        (vec!["--cron", "61 * * * *"], "minute 0-59"),
        (vec!["--cron", "* * * *"], "five"),
        (vec!["--cron", "0 0 30 2 *"], "never fires"),
        (vec!["--cron", "@hourly", "--tz", "Mars/Olympus"], "IANA"),
        (vec!["--cron", "@hourly", "--after", "tomorrow"], "RFC 3339"),
    ] {
        let mut full = vec!["preview"];
        full.extend(args.iter().copied());
        full.push("--json");
        let out = schedule(&aria, &full);
        assert_eq!(code(&out), 2, "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(needle), "{args:?}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn jobs_are_added_listed_shown_toggled_and_deleted() {
    let aria = Aria::new();
    let out = schedule(
        &aria,
        &[
            "add",
            "standup",
            "--cron",
            "0 9 * * MON-FRI",
            "--tz",
            "Europe/Berlin",
            "--message",
            "Stand up!",
        ],
    );
    assert!(ok(&out).contains("Added job standup"), "{}", text(&out.stdout));
    assert_eq!(text(&out.stdout).matches("next: ").count(), 3, "shows the next three fires");
    let root = aria.root();
    let out = aria.run(
        NO_SERVER,
        &[
            "--root",
            root.to_str().unwrap(),
            "schedule",
            "add",
            "digest",
            "--cron",
            "@daily",
            "--tz",
            "UTC",
            "--prompt",
            "What changed?",
        ],
    );
    ok(&out);
    // Same name again, or a bad expression: exit 2, nothing added.
    let dup = schedule(&aria, &["add", "standup", "--cron", "@daily", "--message", "x"]);
    assert_eq!(code(&dup), 2);
    assert!(text(&dup.stderr).contains("exists already"), "{}", text(&dup.stderr));
    assert_eq!(
        code(&schedule(&aria, &["add", "bad", "--cron", "99 * * * *", "--message", "x"])),
        2
    );
    // Exactly one action.
    assert_eq!(code(&schedule(&aria, &["add", "none", "--cron", "@daily"])), 2);

    let out = schedule(&aria, &["list", "--json"]);
    ok(&out);
    let list = json_of(&out);
    let names: Vec<&str> =
        list.as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["digest", "standup"]);
    assert_eq!(list[0]["action"], json!({"kind": "agent", "prompt": "What changed?"}));
    assert_eq!(list[0]["roots"], json!([root.to_str().unwrap()]));
    assert_eq!(list[1]["action"], json!({"kind": "notify", "message": "Stand up!"}));
    assert!(
        list[1]["next_run"].as_str().unwrap().ends_with("T09:00:00+01:00")
            || list[1]["next_run"].as_str().unwrap().ends_with("T09:00:00+02:00")
    );

    ok(&schedule(&aria, &["disable", "standup"]));
    let shown = json_of(&schedule(&aria, &["show", "standup", "--json"]));
    assert_eq!(shown["enabled"], json!(false));
    assert!(ok(&schedule(&aria, &["list"])).contains("disabled"));
    ok(&schedule(&aria, &["enable", "standup"]));
    assert!(ok(&schedule(&aria, &["show", "standup"])).contains("enabled:  yes"));
    assert_eq!(code(&schedule(&aria, &["enable", "nope"])), 2);

    let out =
        ok(&schedule(&aria, &["edit", "digest", "--cron", "0 8 * * *", "--message", "Coffee"]));
    assert!(out.contains("Changed job digest (0 8 * * * in UTC, notify: Coffee)"), "{out}");
    assert_eq!(code(&schedule(&aria, &["edit", "digest"])), 2, "nothing to change");
    assert_eq!(code(&schedule(&aria, &["edit", "digest", "--tz", "Nowhere/Else"])), 2);
    assert_eq!(code(&schedule(&aria, &["edit", "nope", "--cron", "@daily"])), 2);

    ok(&schedule(&aria, &["delete", "digest"]));
    assert_eq!(code(&schedule(&aria, &["show", "digest"])), 2);

    // Every change is in the audit log.
    let store = Store::open(&aria.db(), Arc::new(NoRedact)).unwrap();
    let kinds: Vec<String> = store.audit_list(None).unwrap().into_iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        ["job.create", "job.create", "job.disable", "job.enable", "job.edit", "job.delete"]
    );
}

#[test]
fn history_lists_runs_newest_first() {
    let aria = Aria::new();
    ok(&schedule(&aria, &["add", "j", "--cron", "0 * * * *", "--tz", "UTC", "--message", "hi"]));
    assert!(ok(&schedule(&aria, &["history", "j"])).contains("has not run yet"));
    {
        let store = Store::open(&aria.db(), Arc::new(NoRedact)).unwrap();
        let id = store.job("j").unwrap().unwrap().id;
        for (slot, outcome) in [("2026-01-01T10:00:00Z", "ok"), ("2026-01-01T11:00:00Z", "failed")]
        {
            assert_eq!(store.job_claim_slot(id, slot, slot, "test", 2).unwrap(), Claim::Claimed);
            store.job_finish_slot(id, slot, slot, outcome, Some("detail"), None).unwrap();
        }
    }
    let out = schedule(&aria, &["history", "j", "--json"]);
    ok(&out);
    let runs = json_of(&out);
    assert_eq!(runs[0]["slot"], json!("2026-01-01T11:00:00Z"));
    assert_eq!(runs[0]["outcome"], json!("failed"));
    assert_eq!(runs[1]["missed"], json!(2));
    let plain = ok(&schedule(&aria, &["history", "j"]));
    assert!(plain.starts_with("2026-01-01T11:00:00Z  failed (2 missed before): detail"), "{plain}");
    assert_eq!(code(&schedule(&aria, &["history", "nope"])), 2);
}

/// `aria serve` runs due jobs: a reminder (its message is the notification) and an agent task
/// (a run in a new conversation; its answer is the notification), each slot once. Waits for
/// the next minute boundary, so this test takes up to a minute.
#[test]
fn serve_runs_due_notify_and_agent_jobs() {
    use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
    use std::time::{Duration, Instant};

    let aria = Aria::new();
    let tg = aria_testkit::telegram_mock::FakeTelegram::start(TG_TOKEN);
    std::fs::create_dir_all(aria.home()).unwrap();
    let env = format!("TELEGRAM_BOT_TOKEN={TG_TOKEN}\nTELEGRAM_API_BASE={}\n", tg.api_base());
    std::fs::write(aria.home().join(".env"), env).unwrap();
    let config = aria.dir.path().join("config/aria");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("aria.toml"), format!("[telegram]\nallowed_chat_ids = [{CHAT}]\n"))
        .unwrap();
    let mock = MockOpenAi::new(vec![MockTurn::text("Nothing changed today.")]).serve();
    ok(&schedule(
        &aria,
        &["add", "remind", "--cron", "* * * * *", "--tz", "UTC", "--message", "Drink water"],
    ));
    ok(&schedule(
        &aria,
        &["add", "digest", "--cron", "* * * * *", "--tz", "UTC", "--prompt", "What changed?"],
    ));
    let daemon = super::daemon::Daemon::start(&aria, &mock.base_url(), &[]);
    let store = Store::open(&aria.db(), Arc::new(NoRedact)).unwrap();
    let first_run = |name: &str| {
        let id = store.job(name).unwrap().unwrap().id;
        store.job_history(id, 10).unwrap().into_iter().last().filter(|r| r.finished_at.is_some())
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while (first_run("remind").is_none() || first_run("digest").is_none())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(250));
    }
    // Both notifications reach the allowlisted chat within 10 s of the runs.
    let told = tg.wait_until_blocking(Duration::from_secs(10), |t| {
        let said = t.messages(CHAT);
        ["Drink water", "Nothing changed today."]
            .iter()
            .all(|needle| said.iter().any(|(_, m)| m.contains(needle)))
    });
    assert!(told, "Telegram was told: {:#?}", tg.messages(CHAT));
    drop(daemon);
    let remind = first_run("remind").expect("the reminder ran within 90 s");
    assert_eq!(
        (remind.outcome.as_deref(), remind.detail.as_deref()),
        (Some("ok"), Some("Drink water"))
    );
    assert!(remind.slot.ends_with(":00Z"), "a slot is a whole minute: {}", remind.slot);
    let digest = first_run("digest").expect("the agent job ran within 90 s");
    assert_eq!(
        (digest.outcome.as_deref(), digest.detail.as_deref()),
        (Some("ok"), Some("Nothing changed today.")),
        "{digest:?}"
    );
    assert!(digest.session_id.is_some(), "the agent run's session is recorded");
    let kinds: Vec<String> = store.audit_list(None).unwrap().into_iter().map(|r| r.kind).collect();
    assert!(kinds.iter().filter(|k| *k == "job.claim").count() >= 2, "{kinds:?}");
}

/// A claim left open by a daemon that died is reported as interrupted when `aria serve`
/// starts again, and that slot is not run.
#[test]
fn serve_reports_a_run_left_open_by_a_dead_daemon_as_interrupted() {
    use std::time::{Duration, Instant};

    let aria = Aria::new();
    ok(&schedule(&aria, &["add", "j", "--cron", "0 0 1 1 *", "--tz", "UTC", "--message", "hi"]));
    {
        let store = Store::open(&aria.db(), Arc::new(NoRedact)).unwrap();
        let id = store.job("j").unwrap().unwrap().id;
        let slot = "2026-01-01T00:00:00Z";
        assert_eq!(store.job_claim_slot(id, slot, slot, "pid 1", 0).unwrap(), Claim::Claimed);
    }
    let mut daemon = super::daemon::Daemon::start(&aria, NO_SERVER, &[]);
    let store = Store::open(&aria.db(), Arc::new(NoRedact)).unwrap();
    let id = store.job("j").unwrap().unwrap().id;
    let deadline = Instant::now() + Duration::from_secs(20);
    let outcome = loop {
        let run = store.job_history(id, 1).unwrap().remove(0);
        if run.outcome.is_some() || Instant::now() > deadline {
            break run.outcome;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(outcome.as_deref(), Some("interrupted"));
    std::thread::sleep(Duration::from_millis(200));
    let said = daemon.said();
    assert!(said.contains("1 scheduled run(s) were interrupted"), "{said}");
    daemon.signal("TERM");
    assert!(daemon.wait_exit(Duration::from_secs(20)).expect("it stops").success());
    assert_eq!(store.job_history(id, 10).unwrap().len(), 1, "the slot was not run again");
}

/// `aria schedule run NAME`: the job runs now, once, in this process; it is recorded and told
/// like a scheduled run and exits 0 (1 when it failed or was skipped, 2 for no such job).
#[test]
fn run_now_runs_reminders_heartbeats_and_digests() {
    let aria = Aria::new();
    let root = aria.root();
    let root_arg = root.to_str().unwrap();
    ok(&schedule(&aria, &["add", "tea", "--cron", "0 16 * * *", "--message", "Tea time"]));
    let out = ok(&schedule(&aria, &["run", "tea"]));
    assert!(out.contains("Job tea") && out.contains("Tea time"), "{out}");
    let history = json_of(&schedule(&aria, &["history", "tea", "--json"]));
    assert_eq!(history.as_array().unwrap().len(), 1);
    assert_eq!(history[0]["outcome"], json!("ok"));
    assert_eq!(code(&schedule(&aria, &["run", "nope"])), 2);

    ok(&schedule(&aria, &["add", "beat", "--cron", "@daily", "--heartbeat"]));
    let out = ok(&schedule(&aria, &["run", "beat"]));
    assert!(out.contains("Heartbeat") && out.contains("Audit chain head: "), "{out}");
    assert!(out.contains("jobs: 1 ran (1 ok"), "the tea run counts: {out}");

    let add = |args: &[&str]| {
        let mut full = vec!["--root", root_arg, "schedule", "add"];
        full.extend_from_slice(args);
        aria.run(NO_SERVER, &full)
    };
    ok(&add(&["changes", "--cron", "@daily", "--digest"]));
    std::fs::write(root.join("notes.md"), "new").unwrap();
    let out = aria.run(NO_SERVER, &["--root", root_arg, "schedule", "run", "changes"]);
    assert!(ok(&out).contains("notes.md"), "{}", text(&out.stdout));
    let shown = json_of(&schedule(&aria, &["show", "changes", "--json"]));
    assert_eq!(shown["action"]["kind"], json!("digest"));

    // A directory outside the roots, --path without a job that uses one, a cap without a
    // prompt, two actions: exit 2, nothing added.
    let outside = aria.dir.path().to_str().unwrap().to_owned();
    for bad in [
        vec!["x1", "--cron", "@daily", "--digest", "--path", outside.as_str()],
        vec!["x2", "--cron", "@daily", "--message", "m", "--path", root_arg],
        vec!["x3", "--cron", "@daily", "--message", "m", "--max-cost-usd", "1"],
        vec!["x4", "--cron", "@daily", "--message", "m", "--heartbeat"],
    ] {
        let out = add(&bad);
        assert_eq!(code(&out), 2, "{bad:?}: {}", text(&out.stderr));
    }
    let names = json_of(&schedule(&aria, &["list", "--json"]));
    assert_eq!(names.as_array().unwrap().len(), 3);
}

/// A scheduled agent run that the day's cap would not allow is skipped and told, with no
/// request to the model; one that fits runs.
#[test]
fn run_now_skips_an_agent_job_the_daily_cap_does_not_allow() {
    use aria_testkit::openai_mock::{MockOpenAi, MockTurn};

    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("All quiet.")]).serve();
    let run = |args: &[&str]| {
        let mut full = vec!["schedule"];
        full.extend_from_slice(args);
        aria.cmd(&mock.base_url())
            .env("ARIA_MODEL", "gpt-4o")
            .env("ARIA_MAX_DAILY_COST_USD", "0.05")
            .args(&full)
            .output()
            .unwrap()
    };
    ok(&run(&["add", "big", "--cron", "@daily", "--prompt", "Check", "--max-cost-usd", "0.5"]));
    let out = run(&["run", "big"]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("was skipped"), "{}", text(&out.stdout));
    assert_eq!(mock.hits(), 0, "a skipped run makes no request");
    let history = json_of(&schedule(&aria, &["history", "big", "--json"]));
    assert_eq!(history[0]["outcome"], json!("skipped"));

    ok(&run(&["add", "small", "--cron", "@daily", "--prompt", "Check", "--max-cost-usd", "0.04"]));
    let out = ok(&run(&["run", "small"]));
    assert!(out.contains("All quiet."), "{out}");
}
