//! `aria serve` as a process: started, used over HTTP, killed with SIGKILL mid-run and started
//! again, stopped with SIGTERM mid-run, refused twice on one home, refused off loopback, and
//! locked by a token.

use std::time::Duration;

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use serde_json::json;

use super::daemon::{Daemon, new_conversation, stream_message};
use super::harness::{Aria, code, json_of, text};

#[test]
fn kill_9_mid_run_then_restart_marks_it_interrupted_and_it_resumes_over_http() {
    let aria = Aria::new();
    let stalled = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::Stall,
    ])
    .serve();
    let mut daemon = Daemon::start(&aria, &stalled.base_url(), &[]);
    let conversation = new_conversation(&daemon);
    let _follower = stream_message(&daemon, &conversation, "read notes.txt and tell me the code");
    assert!(
        stalled.wait_for_hits_blocking(2, Duration::from_secs(20)),
        "the run reached its second call"
    );
    std::thread::sleep(Duration::from_millis(100));
    // While it runs, the CLI works beside it and sees the run as running.
    let listed = json_of(&aria.run(&stalled.base_url(), &["sessions", "list", "--json"]));
    assert_eq!(listed[0]["interrupted"], false, "{listed}");
    assert!(listed[0]["status"].as_str().unwrap().starts_with("running"), "{listed}");
    daemon.child.kill().unwrap(); // SIGKILL
    daemon.child.wait().unwrap();

    let fresh = MockOpenAi::new(vec![MockTurn::text("The code is 4242.")]).serve();
    let daemon = Daemon::start(&aria, &fresh.base_url(), &[]);
    let (status, runs) = daemon.json("GET", "/api/v1/runs", None);
    assert_eq!(status, 200);
    let run = &runs["items"][0];
    assert_eq!(
        (run["interrupted"].clone(), run["running"].clone()),
        (json!(true), json!(false)),
        "{run}"
    );
    let id = run["id"].as_str().unwrap().to_owned();
    let listed = json_of(&aria.run(&fresh.base_url(), &["sessions", "list", "--json"]));
    assert_eq!(listed[0]["interrupted"], true, "the CLI agrees: {listed}");

    let (status, reply) =
        daemon.json("POST", &format!("/api/v1/runs/{id}/resume"), Some(&json!({})));
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["state"], "done", "{reply}");
    assert_eq!(reply["answer"], "The code is 4242.");
    let (_, again) = daemon.json("POST", &format!("/api/v1/runs/{id}/resume"), Some(&json!({})));
    assert_eq!(again["error"]["code"], "conflict", "a finished run is not resumed twice: {again}");
    drop(daemon);
    let verify = aria.run(&fresh.base_url(), &["audit", "verify"]);
    assert_eq!(code(&verify), 0, "the chain verifies: {}", text(&verify.stdout));
}

#[test]
fn sigterm_mid_run_stops_within_the_grace_and_leaves_the_run_resumable() {
    let aria = Aria::new();
    std::fs::create_dir_all(aria.dir.path().join("config/aria")).unwrap();
    std::fs::write(
        aria.dir.path().join("config/aria/aria.toml"),
        "[server]\nshutdown_grace_secs = 1\n",
    )
    .unwrap();
    let stalled = MockOpenAi::new(vec![MockTurn::Stall]).serve();
    let mut daemon = Daemon::start(&aria, &stalled.base_url(), &[]);
    let conversation = new_conversation(&daemon);
    let follower = stream_message(&daemon, &conversation, "hello");
    assert!(stalled.wait_for_hits_blocking(1, Duration::from_secs(20)));
    daemon.signal("TERM");
    let status = daemon.wait_exit(Duration::from_secs(15)).expect("the daemon stops");
    assert!(status.success(), "{status:?}: {}", daemon.said());
    let heard = follower.join().unwrap();
    assert!(heard.contains("event: error") && heard.contains("interrupted"), "{heard}");
    assert!(!heard.contains("event: done"), "{heard}");
    let listed = json_of(&aria.run(&stalled.base_url(), &["sessions", "list", "--json"]));
    assert_eq!(listed[0]["interrupted"], true, "{listed}");
}

#[test]
fn one_daemon_per_home_and_none_off_loopback_without_token_and_insecure() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![]).serve();
    let daemon = Daemon::start(&aria, &mock.base_url(), &[]);
    let second = aria.run(&mock.base_url(), &["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(code(&second), 2);
    assert!(text(&second.stderr).contains("already running"), "{}", text(&second.stderr));
    drop(daemon);

    // The daemon made its token on its first start; off loopback it still needs --insecure.
    assert!(aria.home().join("api-token").exists());
    let still = aria.run(&mock.base_url(), &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(code(&still), 2);
    assert!(text(&still.stderr).contains("--insecure"), "{}", text(&still.stderr));
    let bad = aria.run(&mock.base_url(), &["serve", "--listen", "localhost"]);
    assert_eq!(code(&bad), 2);
    assert!(text(&bad.stderr).contains("ADDR:PORT"), "{}", text(&bad.stderr));
}

#[test]
fn a_new_token_is_private_and_then_required() {
    use std::os::unix::fs::PermissionsExt;
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("hi")]).serve();
    let made = aria.run(&mock.base_url(), &["serve", "--new-token"]);
    assert_eq!(code(&made), 0);
    let token = text(&made.stdout).trim().to_owned();
    let file = aria.home().join("api-token");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    let daemon = Daemon::start(&aria, &mock.base_url(), &[]);
    assert_eq!(daemon.request("GET", "/api/v1/health", None, &[]).0, 200, "health needs no token");
    let none = [("Authorization", "")];
    assert_eq!(daemon.request("GET", "/api/v1/conversations", None, &none).0, 401);
    let wrong =
        daemon.request("GET", "/api/v1/conversations", None, &[("Authorization", "Bearer nope")]);
    assert_eq!(wrong.0, 401);
    // Strangers without the token use up their own budget, never the owner's.
    let refused: Vec<u16> =
        (0..650).map(|_| daemon.request("GET", "/api/v1/conversations", None, &none).0).collect();
    assert_eq!(refused.last(), Some(&429), "the refusals are rate-limited too");
    let bearer = format!("Bearer {token}");
    let right = daemon.request("GET", "/api/v1/conversations", None, &[("Authorization", &bearer)]);
    assert_eq!(right.0, 200, "{}", right.1);
}
