//! With nothing configured, ARIA works on the project it is started in: the current directory
//! is the root (said once), the home directory and `/` are refused as implicit roots for work
//! on files, and `aria serve` started there falls back to its workspace.

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};

use super::daemon::Daemon;
use super::harness::{Aria, code, json_of, text};

#[test]
fn started_in_a_project_aria_works_there_and_says_so() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_list", r#"{"path":"."}"#),
        MockTurn::text("There is one file, notes.txt."),
    ])
    .serve();
    let out = aria
        .cmd(&mock.base_url())
        .env_remove("ARIA_ROOTS")
        .current_dir(aria.root())
        .args(["run", "--task", "What is in this directory?", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert_eq!(json_of(&out)["state"], "done");
    let said = text(&out.stderr);
    let line = format!("working in {} (the current directory;", aria.root().display());
    assert_eq!(said.matches(&line).count(), 1, "said once: {said}");
    // The listing the model got is the project's, not an empty workspace's.
    let requests = mock.requests();
    let listing = requests[1]["messages"][3]["content"].as_str().unwrap();
    assert!(listing.contains("notes.txt"), "{listing}");
    assert!(!aria.home().join("workspace").exists(), "no workspace was made");
}

#[test]
fn started_in_home_or_at_slash_a_run_is_refused_with_the_fix() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![MockTurn::text("never asked")]).serve();
    for cwd in [aria.dir.path().to_path_buf(), std::path::PathBuf::from("/")] {
        let out = aria
            .cmd(&mock.base_url())
            .env_remove("ARIA_ROOTS")
            .current_dir(&cwd)
            .args(["run", "--task", "What is in this directory?"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{}: stderr: {}", cwd.display(), text(&out.stderr));
        let said = text(&out.stderr);
        assert!(said.contains("cd into a project directory") && said.contains("--root"), "{said}");
        assert!(said.contains(&cwd.display().to_string()), "{said}");
    }
    assert!(mock.requests().is_empty(), "no model call was made");
    // An explicit --root still works from the home directory.
    let mock = MockOpenAi::new(vec![MockTurn::text("Hello.")]).serve();
    let root = aria.root().display().to_string();
    let out = aria
        .cmd(&mock.base_url())
        .env_remove("ARIA_ROOTS")
        .args(["--root", &root, "run", "--task", "Say hello"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("working in"), "no note for an explicit root");
}

#[test]
fn serve_started_in_home_falls_back_to_the_workspace_and_says_so() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![]).serve();
    let mut cmd = aria.cmd(&mock.base_url());
    cmd.env_remove("ARIA_ROOTS");
    let daemon = Daemon::start_from(&aria, cmd, &[]);
    let said = daemon.started.join("\n");
    let line = format!("working in {}", aria.home().join("workspace").display());
    assert!(said.contains(&line) && said.contains("is your home directory"), "{said}");
    let (status, health) = daemon.json("GET", "/api/v1/health", None);
    assert_eq!(status, 200, "{health}");
}

#[test]
fn a_question_that_names_a_verb_of_change_is_answered_not_failed() {
    let aria = Aria::new();
    std::fs::write(aria.root().join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_read", r#"{"path":"calc.py"}"#),
        MockTurn::text("It returns the sum of a and b."),
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ])
    .serve();
    let task = "What does the add function in calc.py return?";
    let out = aria.run(&mock.base_url(), &["run", "--task", task, "--json"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let result = json_of(&out);
    assert_eq!(result["state"], "done", "{result}");
    assert_eq!(result["answer"], "It returns the sum of a and b.");
    // The model was never told to make a change.
    for request in mock.requests() {
        assert!(!request.to_string().contains("asks for a change"), "{request}");
    }
    // A change request that changes nothing still fails, as before.
    let mock = MockOpenAi::new(vec![
        MockTurn::text("Use sed to rename it."),
        MockTurn::text("Use sed to rename it."),
    ])
    .serve();
    let out = aria.run(&mock.base_url(), &["run", "--task", "Rename add to plus in calc.py"]);
    assert_eq!(code(&out), 1, "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("asked for a change"), "{}", text(&out.stderr));
}

#[test]
fn a_tool_call_written_as_text_is_made_or_fails_the_run_and_stats_count_it() {
    let aria = Aria::new();
    // Prose, then the call: the stream's own recogniser passes it on as text; the loop makes it.
    let mock = MockOpenAi::new(vec![
        MockTurn::text(
            "I will read the file now.\n```json\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"notes.txt\"}}\n```",
        ),
        MockTurn::text("The launch code is 4242."),
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ])
    .serve();
    let out = aria.run(&mock.base_url(), &["run", "--task", "What is in notes.txt?", "--json"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert_eq!(json_of(&out)["answer"], "The launch code is 4242.");
    let requests = mock.requests();
    let result = requests[1]["messages"][3].clone();
    assert_eq!(result["role"], "tool", "{result}");
    assert!(result["content"].as_str().unwrap().contains("4242"), "{result}");

    // A tool that is not there, and a tool result the model made up, twice (the model is told
    // after the first): failed, never done.
    for written in [
        "Calling it:\n{\"name\": \"read_notes\", \"arguments\": {\"file\": \"notes.txt\"}}",
        "<tool_output id=7>\nThe launch code is 4242.\n</tool_output>",
    ] {
        let mock = MockOpenAi::new(vec![MockTurn::text(written), MockTurn::text(written)]).serve();
        let out = aria.run(&mock.base_url(), &["run", "--task", "What is in notes.txt?", "--json"]);
        assert_eq!(code(&out), 1, "{written}: stderr: {}", text(&out.stderr));
        let result = json_of(&out);
        assert_eq!(result["state"], "failed", "{result}");
        let said = format!("{}{}", text(&out.stderr), result);
        assert!(said.contains("wrote a tool call as text"), "{said}");
    }
    let audit = json_of(&aria.run("http://127.0.0.1:9", &["audit", "list", "--json"]));
    let kinds: Vec<&str> =
        audit.as_array().unwrap().iter().filter_map(|r| r["kind"].as_str()).collect();
    assert!(kinds.contains(&"model.text_call"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "model.text_call_refused").count(), 4);

    let stats = json_of(&aria.run("http://127.0.0.1:9", &["stats", "--json"]));
    assert_eq!(stats["runs_by_state"]["failed"], 2, "{stats}");
    let rate = stats["success_rate"].as_f64().unwrap();
    assert!((rate - 1.0 / 3.0).abs() < 1e-9, "{stats}");
}

#[test]
fn a_failed_call_repeated_as_it_was_is_not_run_again() {
    let aria = Aria::new();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call(
            "file_edit",
            r#"{"path":"notes.txt","old":"The launch code is 4243.","new":"The launch code is 4343."}"#,
        ),
        // The same call, keys in another order and spaced otherwise.
        MockTurn::tool_call(
            "file_edit",
            r#"{ "new": "The launch code is 4343.", "old": "The launch code is 4243.", "path": "notes.txt" }"#,
        ),
        MockTurn::tool_call(
            "file_edit",
            r#"{"path":"notes.txt","old":"The launch code is 4242.","new":"The launch code is 4343."}"#,
        ),
        MockTurn::text("Changed the launch code to 4343."),
        MockTurn::tool_call("record_memories", r#"{"memories":[]}"#),
    ])
    .serve();
    let task = "Change the launch code in notes.txt to 4343";
    let out = aria.run(&mock.base_url(), &["run", "--task", task, "--json"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let notes = std::fs::read_to_string(aria.root().join("notes.txt")).unwrap();
    assert_eq!(notes, "The launch code is 4343.\n");
    let requests = mock.requests();
    let answer = |i: usize| {
        let messages = requests[i]["messages"].as_array().unwrap();
        let content = messages.last().unwrap()["content"].as_str().unwrap().to_owned();
        aria_core::untrusted_body(&content).map(str::to_owned).unwrap_or(content)
    };
    let first = answer(1);
    assert!(first.starts_with("error:"), "{first}");
    let note = answer(2);
    assert_eq!(
        note,
        format!(
            "this exact call just failed with: {}; change it (different arguments or another tool)",
            first.trim()
        )
    );
    let audit = json_of(&aria.run(&mock.base_url(), &["audit", "list", "--json"]));
    let repeats: Vec<_> =
        audit.as_array().unwrap().iter().filter(|r| r["kind"] == "tool.repeated_failure").collect();
    assert_eq!(repeats.len(), 1, "{audit}");
    assert_eq!(repeats[0]["payload"]["name"], "file_edit", "{}", repeats[0]);
}
