use aria_testkit::openai_mock::{MockOpenAi, MockTurn, ScriptEnd};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::harness::{API_KEY, Aria, all_bytes, code, contains, json_of, text};

#[test]
fn a_multi_turn_run_reads_a_file_and_answers_from_it() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::text("The launch code is 4242."),
        // Memory extraction after the turn: nothing worth keeping.
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ])
    .serve();
    let out = aria.run(
        &mock.base_url(),
        &["run", "--task", "What is the launch code in notes.txt?", "--json"],
    );
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let result = json_of(&out);
    assert_eq!(result["state"], "done");
    assert_eq!(result["answer"], "The launch code is 4242.");
    assert_eq!(result["iterations"], 2);
    assert!(result["usage"]["input_tokens"].as_u64().unwrap() > 0);
    for key in ["session_id", "state", "answer", "iterations", "usage", "cost_usd"] {
        assert!(result.get(key).is_some(), "--json lacks {key}");
    }

    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "two turns, then the memory extraction");
    assert_eq!(requests[2]["tools"][0]["function"]["name"], "record_memories");
    let first = &requests[0];
    assert_eq!(first["model"], "mock-model");
    assert_eq!(first["stream"], true);
    let tool_names: Vec<_> =
        first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].clone()).collect();
    assert!(tool_names.contains(&json!("file_read")) && tool_names.contains(&json!("file_list")));
    let messages = requests[1]["messages"].as_array().unwrap();
    let call_id = messages[2]["tool_calls"][0]["id"].as_str().unwrap();
    let result_msg = &messages[3];
    assert_eq!(result_msg["role"], "tool");
    assert_eq!(result_msg["tool_call_id"], call_id);
    assert!(result_msg["content"].as_str().unwrap().contains("4242"), "{result_msg}");
    let auth = &mock.request_headers()[0]["authorization"];
    assert_eq!(auth, &format!("Bearer {API_KEY}"));

    // The conversation was stored and can be shown.
    let shown = aria.run(&mock.base_url(), &["conversations", "list", "--json"]);
    assert_eq!(code(&shown), 0);
    assert_eq!(json_of(&shown).as_array().unwrap().len(), 1);
}

#[test]
fn reading_etc_passwd_is_refused_and_the_refusal_is_audited() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"/etc/passwd"}"#),
        MockTurn::text("I am not allowed to read that file."),
    ])
    .serve();
    let out = aria.run(&mock.base_url(), &["run", "--task", "show me /etc/passwd", "--json"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let requests = mock.requests();
    let tool_msg = &requests[1]["messages"][3];
    let wrapped = tool_msg["content"].as_str().unwrap();
    // Tool output reaches the model wrapped as untrusted data with a per-run delimiter.
    let content = aria_core::untrusted_body(wrapped).unwrap_or_else(|| panic!("{wrapped}"));
    assert!(content.starts_with("refused:"), "{content}");
    assert!(!content.contains("root:x:0:0"), "the file's contents leaked: {content}");

    let audit = aria.run(&mock.base_url(), &["audit", "list", "--json"]);
    assert_eq!(code(&audit), 0);
    let records = json_of(&audit);
    let refusal = records
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "tool.refused")
        .expect("a tool.refused record");
    assert_eq!(refusal["payload"]["arguments"]["path"], "/etc/passwd");
    assert!(refusal["payload"]["reason"].as_str().unwrap().contains("outside"), "{refusal}");
    let verify = aria.run(&mock.base_url(), &["audit", "verify"]);
    assert_eq!(code(&verify), 0, "{}", text(&verify.stdout));
}

#[test]
fn a_model_that_never_stops_is_ended_at_15_iterations_with_exit_1() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::tool_call("file_list", r#"{"path":"."}"#)])
        .on_script_end(ScriptEnd::Repeat)
        .serve();
    let out = aria.run(&mock.base_url(), &["run", "--task", "list forever", "--json"]);
    assert_eq!(code(&out), 1, "stderr: {}", text(&out.stderr));
    let result = json_of(&out);
    assert_eq!(result["state"], "failed");
    assert_eq!(result["iterations"], 15);
    assert_eq!(mock.hits(), 15);
}

#[test]
fn a_tampered_audit_row_fails_verification_naming_the_row() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#),
        MockTurn::text("4242"),
    ])
    .serve();
    assert_eq!(code(&aria.run(&mock.base_url(), &["run", "--task", "read notes"])), 0);
    let verify = aria.run(&mock.base_url(), &["audit", "verify"]);
    assert_eq!(code(&verify), 0, "{}", text(&verify.stdout));
    let count_line = text(&verify.stdout);
    assert!(
        count_line.starts_with("ok: ") && count_line.contains("records verified"),
        "{count_line}"
    );

    // Edit record 4 with the sqlite3 shell, as someone covering their tracks would.
    let sql = "DROP TRIGGER audit_log_no_update; \
               UPDATE audit_log SET payload = '{\"iteration\":99}' WHERE seq = 4;";
    let edit = std::process::Command::new("sqlite3")
        .arg(aria.db())
        .arg(sql)
        .output()
        .expect("the sqlite3 shell is installed");
    assert!(edit.status.success(), "{}", text(&edit.stderr));

    let verify = aria.run(&mock.base_url(), &["audit", "verify"]);
    assert_eq!(code(&verify), 1);
    let said = text(&verify.stdout);
    assert!(said.contains("record 4"), "{said}");
    assert!(text(&verify.stderr).contains("triggers"), "the missing trigger is reported");
}

#[test]
fn an_exported_bundle_verifies_offline_and_detects_edits() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("hello")]).serve();
    let out = aria.run(&mock.base_url(), &["run", "--task", "hi", "--json"]);
    let id = json_of(&out)["session_id"].as_str().unwrap().to_owned();
    let bundle = aria.dir.path().join("bundle.json");
    let export = aria.run(
        &mock.base_url(),
        &[
            "audit",
            "export",
            "--session-id",
            &id,
            "--format",
            "json",
            "-o",
            bundle.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&export), 0, "{}", text(&export.stderr));
    let ok = aria.run(&mock.base_url(), &["audit", "verify", "--file", bundle.to_str().unwrap()]);
    assert_eq!(code(&ok), 0, "{}", text(&ok.stdout));
    let ok_session = aria.run(&mock.base_url(), &["audit", "verify", "--session-id", &id]);
    assert_eq!(code(&ok_session), 0, "{}", text(&ok_session.stdout));

    let edited = std::fs::read_to_string(&bundle).unwrap().replacen("\"hi\"", "\"bye\"", 1);
    std::fs::write(&bundle, edited).unwrap();
    let bad = aria.run(&mock.base_url(), &["audit", "verify", "--file", bundle.to_str().unwrap()]);
    assert_eq!(code(&bad), 1, "{}", text(&bad.stdout));
    assert!(text(&bad.stdout).contains("record 1"), "{}", text(&bad.stdout));

    let as_text =
        aria.run(&mock.base_url(), &["audit", "export", "--session-id", &id, "--format", "text"]);
    assert!(text(&as_text.stdout).contains("session.start"));
}

#[test]
fn the_api_key_never_appears_in_logs_the_audit_log_or_the_database() {
    let aria = Aria::new();
    std::fs::write(aria.root().join("config.txt"), format!("api_key = {API_KEY}\n")).unwrap();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"config.txt"}"#),
        MockTurn::text("done"),
    ])
    .serve();
    let task = format!("my key is {API_KEY}; read config.txt");
    let out = aria
        .cmd(&mock.base_url())
        .args(["run", "--task", &task])
        .env("ARIA_LOG", "debug")
        .env("ARIA_LOG_FILE", "debug")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let key = API_KEY.as_bytes();
    assert!(!contains(&out.stderr, key), "stderr leaked the key");
    assert!(!contains(&out.stdout, key), "stdout leaked the key");
    let files = all_bytes(&aria.home());
    assert!(files.iter().any(|(p, _)| p.ends_with("aria.jsonl")), "a JSON log file is written");
    for (path, bytes) in &files {
        assert!(!contains(bytes, key), "{} contains the API key", path.display());
    }
    // Nor did the model see it, from the task or from the file.
    for request in mock.requests() {
        assert!(!request.to_string().contains(API_KEY), "a request body leaked the key");
    }
    let audit = aria.run(&mock.base_url(), &["audit", "list", "--json"]);
    assert!(!contains(&audit.stdout, key));
    assert!(text(&audit.stdout).contains("[REDACTED"), "redaction is visible in the audit log");
}

#[test]
fn deleting_the_newest_audit_records_is_caught_by_the_anchor() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("hello")]).serve();
    assert_eq!(code(&aria.run(&mock.base_url(), &["run", "--task", "hi"])), 0);
    let sql = "DROP TRIGGER audit_log_no_delete; DELETE FROM audit_log WHERE seq >= 5;";
    let edit =
        std::process::Command::new("sqlite3").arg(aria.db()).arg(sql).output().expect("sqlite3");
    assert!(edit.status.success(), "{}", text(&edit.stderr));
    let verify = aria.run(&mock.base_url(), &["audit", "verify"]);
    assert_eq!(code(&verify), 1, "{}", text(&verify.stdout));
    assert!(text(&verify.stdout).contains("deleted"), "{}", text(&verify.stdout));
}

#[test]
fn ids_accept_a_unique_prefix_like_git_and_cost_days_0_is_today() {
    let aria = Aria::new();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n").unwrap();
    let config = config.to_str().unwrap();
    let mut ids = Vec::new();
    for answer in ["one", "two"] {
        let mock = MockOpenAi::new(vec![MockTurn::text(answer)]).serve();
        let out =
            aria.run(&mock.base_url(), &["--config", config, "run", "--task", "hi", "--json"]);
        assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
        let r = json_of(&out);
        ids.push((
            r["session_id"].as_str().unwrap().to_owned(),
            r["conversation_id"].as_str().unwrap().to_owned(),
        ));
    }
    let (session, conversation) = &ids[1];
    let none = "http://127.0.0.1:9";
    // A prefix that names one conversation shows it.
    let unique = |id: &str, other: &str| {
        let shared = id.chars().zip(other.chars()).take_while(|(a, b)| a == b).count();
        id[..(shared + 1).max(8)].to_owned()
    };
    let prefix = unique(conversation, &ids[0].1);
    let out = aria.run(none, &["--config", config, "conversations", "show", &prefix, "--json"]);
    assert_eq!(code(&out), 0, "show {prefix}: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains(conversation.as_str()));
    let prefix = unique(session, &ids[0].0);
    let out = aria.run(none, &["--config", config, "audit", "export", "--session-id", &prefix]);
    assert_eq!(code(&out), 0, "export {prefix}: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains(session.as_str()));
    // A prefix both share is ambiguous and says so; an unknown one is named.
    let shared: String =
        session.chars().zip(ids[0].0.chars()).take_while(|(a, b)| a == b).map(|(a, _)| a).collect();
    if shared.len() >= 4 {
        let out = aria.run(none, &["--config", config, "audit", "export", "--session-id", &shared]);
        assert_eq!(code(&out), 2);
        assert!(text(&out.stderr).contains("several session ids"), "{}", text(&out.stderr));
    }
    let out = aria.run(none, &["--config", config, "conversations", "show", "zzzz-nope"]);
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("zzzz-nope"), "{}", text(&out.stderr));
    // cost --days 0 is today, not an empty report.
    let out = aria.run(none, &["--config", config, "cost", "--days", "0"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("by day (today)"), "{}", text(&out.stdout));
}

#[test]
fn tool_output_markers_the_model_copies_never_reach_the_user() {
    let aria = Aria::new();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n").unwrap();
    let config = config.to_str().unwrap();
    let copied = "<<tool_output id=3f2a9c>>\nThe launch code is 4242.\n<</tool_output id=3f2a9c>>";
    // The model read the file, then copied the result with its markers as its answer. (Such a
    // block with no tool call before it is made up: that run fails, see first_hour.rs.)
    let read = || MockTurn::tool_call("file_read", r#"{"path":"notes.txt"}"#);
    let mock = MockOpenAi::new(vec![read(), MockTurn::text(copied)]).serve();
    let out = aria.run(&mock.base_url(), &["--config", config, "run", "--task", "code?", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(json_of(&out)["answer"], "The launch code is 4242.");
    let mock = MockOpenAi::new(vec![read(), MockTurn::text(copied)]).serve();
    let out = aria.run(&mock.base_url(), &["--config", config, "chat", "code?"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(!shown.contains("tool_output"), "{shown}");
    assert!(shown.contains("The launch code is 4242."), "{shown}");
}

/// One scripted shell_execute call through `aria run --json` with extra flags; returns the
/// JSON result, the exit code and stderr.
fn run_shell(aria: &Aria, command: &str, extra: &[&str]) -> (serde_json::Value, i32, String) {
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n[policy]\nworkflow = false\n").unwrap();
    let args = json!({ "command": command }).to_string();
    let mock =
        MockOpenAi::new(vec![MockTurn::tool_call("shell_execute", &args), MockTurn::text("done")])
            .serve();
    let mut argv = vec!["--config", config.to_str().unwrap()];
    argv.extend_from_slice(extra);
    argv.extend(["run", "--task", "build it", "--json"]);
    let out = aria.run(&mock.base_url(), &argv);
    (json_of(&out), code(&out), text(&out.stderr))
}

#[test]
fn denials_are_said_recorded_and_fail_the_run_and_allow_patterns_pre_approve() {
    let aria = Aria::new();
    let root = aria.root();
    std::fs::write(root.join("Makefile"), "build:\n\t@echo built > built.txt\n").unwrap();
    // No terminal: an irreversible command is denied, loudly, and the run exits 1.
    let (result, exit, stderr) = run_shell(&aria, "make build", &[]);
    assert_eq!(exit, 1, "{stderr}");
    assert_eq!(result["state"], "done");
    let denied = result["denied"].as_array().unwrap();
    assert_eq!(denied.len(), 1, "{result}");
    assert_eq!(denied[0]["tool"], "shell_execute");
    assert!(stderr.contains("denied: shell_execute"), "{stderr}");
    assert!(stderr.contains("--allow \"make build\""), "the fix is named: {stderr}");
    assert!(!root.join("built.txt").exists());
    // Pre-approved by a command prefix: it runs, nothing is denied, exit 0.
    let (result, exit, stderr) = run_shell(&aria, "make build", &["--allow", "make"]);
    assert_eq!(exit, 0, "{stderr}");
    assert_eq!(result["denied"], json!([]));
    assert!(root.join("built.txt").exists(), "{stderr}");
    // A line with one command the pattern does not cover is still denied.
    let (result, exit, _) =
        run_shell(&aria, "make build; python3 -c 'print(1)'", &["--allow", "make"]);
    assert_eq!(exit, 1);
    assert_eq!(result["denied"].as_array().unwrap().len(), 1);
    // --yes approves for this run and says so.
    std::fs::remove_file(root.join("built.txt")).unwrap();
    let (result, exit, stderr) = run_shell(&aria, "make build", &["--yes"]);
    assert_eq!(exit, 0, "{stderr}");
    assert_eq!(result["denied"], json!([]));
    assert!(stderr.contains("--yes"), "{stderr}");
    assert!(root.join("built.txt").exists());
    // Blocked stays blocked whatever is allowed.
    let (_, _, stderr) = run_shell(&aria, "sudo make build", &["--yes", "--allow", "sudo"]);
    assert!(!stderr.contains("denied: "), "blocked is refused, not asked: {stderr}");
}

#[test]
fn agents_md_in_a_root_reaches_the_model_as_marked_project_notes() {
    let aria = Aria::new();
    std::fs::write(
        aria.root().join("AGENTS.md"),
        "# Conventions\nRun `make check` before saying a change is done.\nThe deploy key is ghp_R8x2mQ7vL4kN9pZ3wT6yB1cF5hJ0dS2aE4gU.\n",
    )
    .unwrap();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n").unwrap();
    let config = config.to_str().unwrap();
    let mock = MockOpenAi::new(vec![MockTurn::text("ok")]).serve();
    let out = aria.run(&mock.base_url(), &["--config", config, "run", "--task", "hi"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let system = mock.requests()[0]["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(system.contains("<<project_notes>>") && system.contains("make check"), "{system}");
    assert!(
        !system.contains("ghp_R8x2mQ7vL4kN9pZ3wT6yB1cF5hJ0dS2aE4gU"),
        "a secret in the notes: {system}"
    );
    let doctor = text(&aria.run("http://127.0.0.1:9", &["--config", config, "doctor"]).stdout);
    assert!(doctor.contains("project notes") && doctor.contains("AGENTS.md"), "{doctor}");
}

/// Interactive `aria chat` with `input` on a pipe as its standard input.
fn piped_chat(
    aria: &Aria,
    base_url: &str,
    config: &std::path::Path,
    input: &str,
) -> std::process::Output {
    use std::io::Write;
    let mut child = aria
        .cmd(base_url)
        .args(["--config", config.to_str().unwrap(), "chat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn chat_commands_stay_local_and_undo_rolls_back_the_conversations_last_change() {
    let aria = Aria::new();
    let root = aria.root();
    std::fs::write(root.join("notes.txt"), "original\n").unwrap();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n[policy]\nworkflow = false\n").unwrap();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_write", r#"{"path":"notes.txt","content":"changed\n"}"#),
        MockTurn::text("Changed it."),
    ])
    .serve();
    let input = "/help\n/tools\n/bogus\n/mode\n/cost\nchange the notes\n/undo\n/exit\n";
    let out = piped_chat(&aria, &mock.base_url(), &config, input);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    for want in ["/undo", "memory_store", "unknown command /bogus", "mode governed", "spent today"]
    {
        assert!(stderr.contains(want), "{want} missing:\n{stderr}");
    }
    // Only the one real message went to the model (a tool call and the answer).
    assert_eq!(mock.requests().len(), 2, "a command reached the model");
    assert!(stderr.contains("undone:"), "{stderr}");
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "original\n");
}

/// Interactive chat fed from a pipe has no one to approve: a denial there fails the command
/// (exit 1), as in one-shot commands.
#[test]
fn piped_interactive_chat_exits_1_after_a_denial() {
    let aria = Aria::new();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n[policy]\nworkflow = false\n").unwrap();
    let args = json!({ "command": "make test" }).to_string();
    let mock =
        MockOpenAi::new(vec![MockTurn::tool_call("shell_execute", &args), MockTurn::text("ok")])
            .serve();
    let out = piped_chat(&aria, &mock.base_url(), &config, "run the tests\n/exit\n");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("denied: shell_execute"), "{stderr}");
    assert_eq!(code(&out), 1, "{stderr}");
}

#[test]
fn ask_user_without_a_person_tells_the_model_to_pick_the_safest_option() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("ask_user", r#"{"question":"Which file?","options":["a","b"]}"#),
        MockTurn::text("Nobody to ask, so I changed nothing."),
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ])
    .serve();
    // An order that names no file, so that changing nothing is no failure here.
    let out = aria.run(&mock.base_url(), &["run", "--task", "Tidy up my notes", "--json"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let requests = mock.requests();
    let result = &requests[1]["messages"].as_array().unwrap()[3];
    assert_eq!(result["role"], "tool");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("Nobody can be asked here (no person is attached to this run)"),
        "{content}"
    );
    assert!(content.contains("Pick the safest option"), "{content}");
}

/// `aria run "task"` is `aria run --task "task"`; giving both, or neither, is a usage error.
/// A run whose model answers nothing and changes nothing fails (exit 1) and says why.
#[test]
fn the_task_may_be_given_as_the_argument_and_an_empty_answer_fails() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::text("Hello there."),
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ])
    .serve();
    let out = aria.run(&mock.base_url(), &["run", "Say hello.", "--json"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert_eq!(json_of(&out)["answer"], "Hello there.");
    let said = mock.requests()[0]["messages"].to_string();
    assert!(said.contains("Say hello."), "{said}");

    for usage in [&["run", "--task", "a", "b"][..], &["run"][..], &["run", "a", "--resume", "x"]] {
        let out = aria.run(&mock.base_url(), usage);
        assert_eq!(code(&out), 2, "{usage:?}: {}", text(&out.stderr));
    }

    let mock = MockOpenAi::new(vec![MockTurn::text("")]).serve();
    let out = aria.run(&mock.base_url(), &["run", "What is 17 times 23?", "--json"]);
    assert_eq!(code(&out), 1, "stderr: {}", text(&out.stderr));
    let result = json_of(&out);
    assert_eq!(result["state"], "failed");
    let all = format!("{result}{}", text(&out.stderr));
    assert!(all.contains("without an answer"), "{all}");
}
