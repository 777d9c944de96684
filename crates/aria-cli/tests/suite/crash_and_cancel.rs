use std::process::Stdio;
use std::time::Duration;

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};

use super::harness::{Aria, code, json_of, text};

fn wait_exit(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn kill_9_mid_run_leaves_a_clean_store_and_the_run_resumes() {
    let aria = Aria::new();
    let stalled = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::Stall,
    ])
    .serve();
    let mut child = aria
        .cmd(&stalled.base_url())
        .args(["run", "--task", "read notes.txt and tell me the code"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        stalled.wait_for_hits_blocking(2, Duration::from_secs(20)),
        "the run reached its second model call"
    );
    std::thread::sleep(Duration::from_millis(100));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let verify = aria.run(&stalled.base_url(), &["audit", "verify"]);
    assert_eq!(code(&verify), 0, "the chain verifies after kill -9: {}", text(&verify.stdout));
    let sessions = json_of(&aria.run(&stalled.base_url(), &["sessions", "list", "--json"]));
    let session = &sessions[0];
    assert_eq!(session["interrupted"], true, "{session}");
    assert_eq!(session["state"], "planning");
    let id = session["id"].as_str().unwrap().to_owned();

    let fresh = MockOpenAi::new(vec![MockTurn::text("The code is 4242.")]).serve();
    let note = aria.run(&fresh.base_url(), &["run", "--task", "unrelated", "--json"]);
    assert!(
        text(&note.stderr).contains(&format!("aria run --resume {id}")),
        "{}",
        text(&note.stderr)
    );

    let fresh = MockOpenAi::new(vec![MockTurn::text("The code is 4242.")]).serve();
    let resumed = aria.run(&fresh.base_url(), &["run", "--resume", &id, "--json"]);
    assert_eq!(code(&resumed), 0, "{}", text(&resumed.stderr));
    let result = json_of(&resumed);
    assert_eq!(result["session_id"], id.as_str());
    assert_eq!(result["state"], "done");
    assert_eq!(result["answer"], "The code is 4242.");
    // The resumed request carries the history, including the file read before the crash.
    let history = fresh.requests()[0]["messages"].to_string();
    assert!(history.contains("4242") && history.contains("read notes.txt"), "{history}");
    let verify = aria.run(&fresh.base_url(), &["audit", "verify", "--session-id", &id]);
    assert_eq!(code(&verify), 0, "{}", text(&verify.stdout));
}

#[test]
fn ctrl_c_cancels_the_run_with_exit_130() {
    let aria = Aria::new();
    let stalled = MockOpenAi::new(vec![MockTurn::Stall]).serve();
    let child = aria
        .cmd(&stalled.base_url())
        .args(["run", "--task", "wait", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(stalled.wait_for_hits_blocking(1, Duration::from_secs(20)));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut child = child;
    let status = wait_exit(&mut child, Duration::from_secs(20)).expect("aria exits after SIGINT");
    assert_eq!(status.code(), Some(130));
    let out = child.wait_with_output().unwrap();
    let result = json_of(&out);
    assert_eq!(result["state"], "cancelled");
}

#[test]
fn a_resumed_run_works_in_its_own_roots_and_mode() {
    let aria = Aria::new();
    let other = aria.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "The code is 77.\n").unwrap();
    let other_root = other.to_str().unwrap().to_owned();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n[policy]\nworkflow = false\n").unwrap();
    let config = config.to_str().unwrap().to_owned();
    let stalled = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::Stall,
    ])
    .serve();
    let mut child = aria
        .cmd(&stalled.base_url())
        .args(["--config", &config, "--root", &other_root, "run", "--task", "copy the code"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(stalled.wait_for_hits_blocking(2, Duration::from_secs(20)));
    std::thread::sleep(Duration::from_millis(100));
    child.kill().unwrap();
    child.wait().unwrap();
    let sessions = json_of(&aria.run(&stalled.base_url(), &["sessions", "list", "--json"]));
    let id = sessions[0]["id"].as_str().unwrap().to_owned();

    // Another root, or another mode, on resume: refused, naming both.
    let none = "http://127.0.0.1:9";
    let wrong_root = aria.root();
    let out = aria.run(
        none,
        &["--config", &config, "--root", wrong_root.to_str().unwrap(), "run", "--resume", &id],
    );
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&other_root), "{}", text(&out.stderr));
    let out = aria.run(none, &["--config", &config, "--mode", "read_only", "run", "--resume", &id]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("governed mode"), "{}", text(&out.stderr));
    // A stricter mode from the environment is not quietly overridden either, and a real run
    // cannot be resumed as a dry run (it would end `done` without its changes).
    let out = aria
        .cmd(none)
        .env("ARIA_MODE", "read_only")
        .args(["--config", &config, "run", "--resume", &id])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("now says read_only"), "{}", text(&out.stderr));
    let out = aria.run(none, &["--config", &config, "--dry-run", "run", "--resume", &id]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("was a real run"), "{}", text(&out.stderr));

    // The command ARIA suggests, as is: the remaining write lands in the run's own root.
    let fresh = MockOpenAi::new(vec![
        MockTurn::tool_call("file_write", r#"{"path":"code.txt","content":"77\n"}"#),
        MockTurn::text("Copied."),
    ])
    .serve();
    let resumed =
        aria.run(&fresh.base_url(), &["--config", &config, "run", "--resume", &id, "--json"]);
    assert_eq!(code(&resumed), 0, "{}", text(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(other.join("code.txt")).unwrap(), "77\n");
    assert!(!aria.root().join("code.txt").exists(), "the write went to the default root");
}
