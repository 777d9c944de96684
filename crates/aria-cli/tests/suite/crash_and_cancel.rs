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
