//! End to end through the binary: in governed mode a write runs without asking
//! because it is snapshotted first; `aria snapshots list` shows the restore point and
//! `aria rollback` undoes the writes.

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use pretty_assertions::assert_eq;

use super::harness::{Aria, code, json_of, text};

#[test]
fn a_governed_write_is_snapshotted_listed_and_rolled_back() {
    let aria = Aria::new();
    let original = std::fs::read(aria.root().join("notes.txt")).unwrap();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_write", r#"{"path":"notes.txt","content":"overwritten\n"}"#),
        MockTurn::tool_call("shell_execute", r#"{"command":"touch made.txt"}"#),
        MockTurn::text("Done."),
    ])
    .serve();
    let out = aria.run(&mock.base_url(), &["run", "--task", "rewrite my notes", "--json"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let session = json_of(&out)["session_id"].as_str().unwrap().to_owned();
    // No approver answers in `aria run`: the writes ran because they were snapshotted.
    assert_eq!(std::fs::read(aria.root().join("notes.txt")).unwrap(), b"overwritten\n");
    assert!(aria.root().join("made.txt").exists());
    assert!(aria.root().join(".git").is_dir(), "the root was initialised on its first write");

    let listed = aria.run(&mock.base_url(), &["snapshots", "list", "--json"]);
    assert_eq!(code(&listed), 0, "stderr: {}", text(&listed.stderr));
    let points = json_of(&listed);
    let points = points.as_array().unwrap();
    assert_eq!(points.len(), 2, "{points:?}");
    let ops: Vec<&str> = points.iter().map(|p| p["operation"].as_str().unwrap()).collect();
    assert_eq!(ops, ["shell_execute", "file_write"], "newest first");
    let first = &points[1];
    assert_eq!(first["session"], session.as_str());
    assert_eq!(first["targets"], serde_json::json!(["notes.txt"]));
    let id = first["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("snapshot/file_write-"), "{id}");

    // --root DIR limits the list to the repositories under DIR.
    let other = aria.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let root_flag = |dir: &std::path::Path| {
        let out = aria
            .cmd(&mock.base_url())
            .args(["--root", dir.to_str().unwrap(), "snapshots", "list", "--json"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
        json_of(&out).as_array().unwrap().len()
    };
    assert_eq!(root_flag(&aria.root()), 2);
    assert_eq!(root_flag(&other), 0);

    // The snapshot ids are in the audit log with their calls.
    let audit = aria.run(&mock.base_url(), &["audit", "list", "--json"]);
    assert!(text(&audit.stdout).contains(&id), "the snapshot was not audited");

    // Only restore points that concern a file, with --path.
    let for_made = aria.run(&mock.base_url(), &["snapshots", "list", "--path", "root/made.txt"]);
    assert_eq!(code(&for_made), 0, "stderr: {}", text(&for_made.stderr));
    assert!(text(&for_made.stdout).contains("shell_execute"), "{}", text(&for_made.stdout));

    let undone = aria.run(&mock.base_url(), &["rollback", &id]);
    assert_eq!(code(&undone), 0, "stderr: {}", text(&undone.stderr));
    let said = text(&undone.stdout);
    assert!(said.contains("restored  notes.txt") && said.contains("deleted   made.txt"), "{said}");
    assert!(said.contains("revert commit"), "{said}");
    assert_eq!(std::fs::read(aria.root().join("notes.txt")).unwrap(), original);
    assert!(!aria.root().join("made.txt").exists());

    // The undo ARIA suggests names the repository, and works as printed.
    let undo = said.split("undo this rollback with `").nth(1).unwrap().split('`').next().unwrap();
    assert!(undo.contains("--root"), "{undo}");
    let words: Vec<&str> = undo.split_whitespace().skip(1).collect();
    let redone = aria.run(&mock.base_url(), &words);
    assert_eq!(code(&redone), 0, "{undo}: {}", text(&redone.stderr));
    assert!(aria.root().join("made.txt").exists(), "the rollback was undone");
    let redo_said = text(&redone.stdout);
    let undo_again = redo_said.split("undo this rollback with `").nth(1).unwrap();
    let undo_again: Vec<&str> =
        undo_again.split('`').next().unwrap().split_whitespace().skip(1).collect();
    assert_eq!(code(&aria.run(&mock.base_url(), &undo_again)), 0);
    assert!(!aria.root().join("made.txt").exists());

    let unknown = aria.run(&mock.base_url(), &["rollback", "snapshot/nope-2020-01-01-000000"]);
    assert_eq!(code(&unknown), 1);
    assert!(text(&unknown.stderr).contains("aria snapshots list"), "{}", text(&unknown.stderr));
}

#[test]
fn aria_says_once_that_it_initialised_a_repository_and_how_to_turn_it_off() {
    let aria = Aria::new();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n[policy]\nworkflow = false\n").unwrap();
    let config = config.to_str().unwrap();
    let write = |content: &str| {
        let args = serde_json::json!({"path": "notes.txt", "content": content}).to_string();
        let mock =
            MockOpenAi::new(vec![MockTurn::tool_call("file_write", &args), MockTurn::text("ok")])
                .serve();
        let out = aria.run(&mock.base_url(), &["--config", config, "run", "--task", "write"]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let first = write("one\n");
    assert!(first.contains("initialised a git repository"), "{first}");
    assert!(first.contains("auto_init = false"), "{first}");
    let second = write("two\n");
    assert!(!second.contains("initialised a git repository"), "said twice: {second}");
}

#[test]
fn snapshots_taken_under_another_root_are_listed_and_rolled_back_without_it() {
    let aria = Aria::new();
    let other = aria.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("plan.txt"), "v1\n").unwrap();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n[policy]\nworkflow = false\n").unwrap();
    let config = config.to_str().unwrap();
    let args = serde_json::json!({"path": "plan.txt", "content": "v2\n"}).to_string();
    let mock =
        MockOpenAi::new(vec![MockTurn::tool_call("file_write", &args), MockTurn::text("ok")])
            .serve();
    let other_root = other.to_str().unwrap();
    let out = aria.run(
        &mock.base_url(),
        &["--config", config, "--root", other_root, "run", "--task", "update the plan"],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(other.join("plan.txt")).unwrap(), "v2\n");
    // No --root now: the list still shows the restore point, found through the audit log.
    let none = "http://127.0.0.1:9";
    let out = aria.run(none, &["--config", config, "snapshots", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let list = json_of(&out);
    let point = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["repository"].as_str().unwrap().ends_with("other"))
        .unwrap_or_else(|| panic!("the snapshot under the other root is not listed: {list}"));
    let id = point["id"].as_str().unwrap().to_owned();
    let out = aria.run(none, &["--config", config, "rollback", &id]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(other.join("plan.txt")).unwrap(), "v1\n");
}

#[test]
fn an_automatic_restore_is_said_and_listed_in_json() {
    if aria_tools::profiles::find_program("make").is_none() {
        panic!("this test needs make (CI installs it)");
    }
    let aria = Aria::new();
    let root = std::fs::canonicalize(aria.root()).unwrap();
    std::fs::write(root.join("notes.txt"), "keep\n").unwrap();
    std::fs::write(root.join("Makefile"), "all:\n\t@true\ntest:\n\t@grep -q keep notes.txt\n")
        .unwrap();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n").unwrap();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_write", r#"{"path":"notes.txt","content":"broken\n"}"#),
        MockTurn::text("Done."),
        MockTurn::text("I will leave it as it is."),
    ])
    .serve();
    let out = aria.run(
        &mock.base_url(),
        &["--config", config.to_str().unwrap(), "run", "--task", "rewrite notes", "--json"],
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("restored: run_tests failed"), "{stderr}");
    let result = json_of(&out);
    let restored = result["restored"].as_array().unwrap();
    assert_eq!(restored.len(), 1, "{result}");
    assert_eq!(restored[0]["check"], "run_tests");
    assert!(restored[0]["snapshot"].as_str().unwrap().starts_with("snapshot/"));
    assert!(restored[0]["files"].to_string().contains("notes.txt"), "{result}");
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "keep\n");
}

/// The governed workflow judges each check against its result before the
/// edit. A check already failing is reported, not restored; a check whose program is missing
/// could not run, and is never blamed on the edit; a check the edit broke still restores.
#[test]
fn only_a_check_the_edit_broke_restores_failing_before_or_missing_programs_are_reported() {
    if aria_tools::profiles::find_program("make").is_none() {
        panic!("this test needs make (CI installs it)");
    }
    let aria = Aria::new();
    let root = std::fs::canonicalize(aria.root()).unwrap();
    std::fs::write(root.join("notes.txt"), "keep v1\n").unwrap();
    // lint calls a program that is not installed (make: Error 127); the build fails whatever
    // the edit does; the tests pass while notes.txt says "keep".
    std::fs::write(
        root.join("Makefile"),
        "all:\n\t@echo 'the build was already broken' && false\n\
         lint:\n\t@golangci-lint run\n\
         test:\n\t@grep -q keep notes.txt\n",
    )
    .unwrap();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n").unwrap();
    let config = config.to_str().unwrap();
    let run = |content: &str, turns: Vec<MockTurn>| {
        let args = serde_json::json!({"path": "notes.txt", "content": content}).to_string();
        let mut all = vec![MockTurn::tool_call("file_write", &args)];
        all.extend(turns);
        let mock = MockOpenAi::new(all).serve();
        let out = aria
            .run(&mock.base_url(), &["--config", config, "run", "--task", "edit notes", "--json"]);
        (text(&out.stderr), json_of(&out))
    };
    let check = |result: &serde_json::Value, name: &str| {
        result["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name} in {result}"))
            .clone()
    };

    // (a) + (b): the edit keeps the tests passing; lint cannot run, the build was failing.
    let (stderr, result) = run("keep v2\n", vec![MockTurn::text("Done.\nFix: Update notes")]);
    assert_eq!(result["restored"], serde_json::json!([]), "nothing restored: {result}\n{stderr}");
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "keep v2\n");
    let lint = check(&result, "lint_project");
    assert_eq!(lint["after"], "could_not_run", "{lint}");
    assert_eq!(lint["judgement"], "could_not_run", "{lint}");
    assert_eq!(lint["note"], "could not run: golangci-lint is not installed", "{lint}");
    let build = check(&result, "build_project");
    assert_eq!((&build["before"], &build["after"]), (&"failed".into(), &"failed".into()));
    assert_eq!(build["judgement"], "already_failing", "{build}");
    assert_eq!(build["note"], "already failing before the edit");
    let tests = check(&result, "run_tests");
    assert_eq!((&tests["before"], &tests["after"]), (&"passed".into(), &"passed".into()));
    assert!(
        stderr.contains(
            "not restored: lint_project in {root}: could not run: golangci-lint is not installed"
                .replace("{root}", &root.display().to_string())
                .as_str()
        ),
        "{stderr}"
    );
    assert!(stderr.contains("not restored: build_project in"), "{stderr}");
    assert!(stderr.contains("already failing before the edit"), "{stderr}");
    assert!(!stderr.lines().any(|l| l.starts_with("restored: ")), "no restore: {stderr}");
    let answer = result["answer"].as_str().unwrap();
    assert!(answer.contains("Not committed"), "never committed with a failing check: {answer}");

    // (c): the edit breaks the tests, which passed before: restored as before.
    let (stderr, result) =
        run("broken\n", vec![MockTurn::text("Done."), MockTurn::text("I will leave it as it is.")]);
    assert!(stderr.contains("restored: run_tests failed"), "{stderr}");
    let restored = result["restored"].as_array().unwrap();
    assert_eq!(restored.len(), 1, "{result}");
    assert_eq!(restored[0]["check"], "run_tests");
    assert!(restored[0]["files"].to_string().contains("notes.txt"), "{result}");
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "keep v2\n");
    let tests = check(&result, "run_tests");
    assert_eq!((&tests["before"], &tests["after"]), (&"passed".into(), &"failed".into()));
    assert_eq!(tests["judgement"], "broken", "{tests}");
    assert_eq!(check(&result, "build_project")["judgement"], "already_failing");
}

/// A write that failed, or changed nothing, leaves no restore point behind: ten attempts are
/// not ten snapshot branches.
#[test]
fn a_failed_or_empty_edit_leaves_no_snapshot_behind() {
    let aria = Aria::new();
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n[policy]\nworkflow = false\n").unwrap();
    let mock = MockOpenAi::new(vec![
        // Fails: the text to replace is not in the file.
        MockTurn::tool_call("file_edit", r#"{"path":"notes.txt","old":"no such text","new":"x"}"#),
        // Succeeds but changes nothing: the same text again.
        MockTurn::tool_call(
            "file_write",
            r#"{"path":"notes.txt","content":"The launch code is 4242.\n"}"#,
        ),
        // A real change keeps its point.
        MockTurn::tool_call("file_write", r#"{"path":"notes.txt","content":"changed\n"}"#),
        MockTurn::text("Done."),
    ])
    .serve();
    let out = aria.run(
        &mock.base_url(),
        &["--config", config.to_str().unwrap(), "run", "--task", "edit my notes", "--json"],
    );
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let points = json_of(&aria.run(&mock.base_url(), &["snapshots", "list", "--json"]));
    let points = points.as_array().unwrap();
    assert_eq!(points.len(), 1, "only the change that happened keeps its point: {points:?}");
    let branches = std::process::Command::new("git")
        .args(["-C", aria.root().to_str().unwrap(), "branch", "--list", "snapshot/*"])
        .output()
        .unwrap();
    assert_eq!(text(&branches.stdout).lines().count(), 1, "{}", text(&branches.stdout));
    let audit = json_of(&aria.run(&mock.base_url(), &["audit", "list", "--json"]));
    let discarded =
        audit.as_array().unwrap().iter().filter(|r| r["kind"] == "tool.snapshot_discarded").count();
    assert_eq!(discarded, 2, "each discarded point is audited");
}
