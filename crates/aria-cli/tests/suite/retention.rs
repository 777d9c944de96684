//! `[traces] keep_days` through the binary: traces older than it are deleted at the
//! end of `aria run` at most once a day, and at `aria serve` start; the sessions and their
//! audit records stay and the chain still verifies; `keep_days = 0` keeps everything. Traces
//! are aged with the sqlite3 shell, as a month passing would.

use std::time::{Duration, Instant};

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use pretty_assertions::assert_eq;

use super::daemon::Daemon;
use super::harness::{Aria, code, json_of, text};

fn sql(aria: &Aria, query: &str) -> String {
    let out = std::process::Command::new("sqlite3").arg(aria.db()).arg(query).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

fn traces_of(aria: &Aria, session: &str) -> u64 {
    sql(aria, &format!("SELECT count(*) FROM traces WHERE session_id = '{session}'"))
        .parse()
        .unwrap()
}

fn age_traces(aria: &Aria, session: &str) {
    sql(
        aria,
        &format!(
            "UPDATE traces SET created_at = '2000-01-01T00:00:00.000Z' WHERE session_id = '{session}'"
        ),
    );
}

/// A run with one tool call; its session id.
fn run(aria: &Aria) -> String {
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::text("4242."),
    ])
    .serve();
    let out = aria.run(&mock.base_url(), &["run", "--task", "read notes.txt", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    json_of(&out)["session_id"].as_str().unwrap().to_owned()
}

#[test]
fn old_traces_are_pruned_once_a_day_after_runs_and_at_serve_start_never_the_audit_log() {
    let aria = Aria::new();
    let first = run(&aria);
    assert!(traces_of(&aria, &first) >= 3, "two model calls and a tool call");
    assert_eq!(sql(&aria, "SELECT task FROM housekeeping"), "prune_traces");
    let audited =
        sql(&aria, &format!("SELECT count(*) FROM audit_log WHERE session_id = '{first}'"));

    // A month later (for these traces), within the day of the last prune: not yet.
    age_traces(&aria, &first);
    let second = run(&aria);
    assert!(traces_of(&aria, &first) > 0, "pruned at most once a day");

    // A day later: the next run prunes them, and only them.
    sql(&aria, "UPDATE housekeeping SET last_run_at = '2000-01-01T00:00:00.000Z'");
    let third = run(&aria);
    assert_eq!(traces_of(&aria, &first), 0);
    assert!(traces_of(&aria, &second) > 0 && traces_of(&aria, &third) > 0);
    let kept = sql(&aria, &format!("SELECT count(*) FROM audit_log WHERE session_id = '{first}'"));
    assert_eq!(kept, audited, "the audit log is never pruned");
    assert_eq!(sql(&aria, "SELECT count(*) FROM audit_log WHERE kind = 'traces.prune'"), "1");
    let out = aria.run("http://127.0.0.1:9", &["traces", "show", &first, "--json"]);
    assert_eq!(code(&out), 0, "the session stays: {}", text(&out.stderr));
    assert_eq!(json_of(&out)["spans"], serde_json::json!([]));
    let verify = aria.run("http://127.0.0.1:9", &["audit", "verify"]);
    assert_eq!(code(&verify), 0, "the chain verifies: {}", text(&verify.stdout));

    // The daemon prunes at start, whenever the last prune was.
    age_traces(&aria, &second);
    let daemon = Daemon::start(&aria, "http://127.0.0.1:9", &[]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while traces_of(&aria, &second) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(daemon);
    assert_eq!(traces_of(&aria, &second), 0, "pruned at serve start");
    assert!(traces_of(&aria, &third) > 0);
}

#[test]
fn keep_days_0_keeps_traces_forever() {
    let aria = Aria::new();
    let config = aria.dir.path().join("config/aria");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("aria.toml"), "[traces]\nkeep_days = 0\n").unwrap();
    let first = run(&aria);
    age_traces(&aria, &first);
    run(&aria);
    assert!(traces_of(&aria, &first) > 0);
    let shown = aria.run("http://127.0.0.1:9", &["config", "show"]);
    assert!(text(&shown.stdout).contains("[traces]\nkeep_days = 0"), "{}", text(&shown.stdout));
}
