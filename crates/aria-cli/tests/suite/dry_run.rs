//! `--dry-run` of the governed workflow through the binary: the output shows the
//! text a write would put in the file, the restore point it would get, the exact lint/build/test
//! commands and the commit, and afterwards the tree and the git refs are byte for byte as they
//! were.

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};
use pretty_assertions::assert_eq;

use super::harness::{Aria, all_bytes, code, text};

#[test]
fn a_dry_run_shows_the_patch_and_the_profile_commands_and_changes_nothing() {
    if aria_tools::profiles::find_program("make").is_none() {
        panic!("this test needs make (CI installs it)");
    }
    let aria = Aria::new();
    let root = std::fs::canonicalize(aria.root()).unwrap();
    std::fs::write(root.join("Makefile"), "all:\n\t@true\ntest:\n\t@grep -q v notes.txt\n")
        .unwrap();
    // A real run first: the root becomes a repository (snapshot), the checks pass, and the
    // workflow commits, so the dry run below has a HEAD, refs and an index to leave alone.
    let config = aria.dir.path().join("aria.toml");
    std::fs::write(&config, "[memory]\nextract = false\n").unwrap();
    let config = config.to_str().unwrap();
    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call("file_write", r#"{"path":"notes.txt","content":"v1 plans\n"}"#),
        MockTurn::text("Feat: Start the notes"),
    ])
    .serve();
    let out = aria.run(&mock.base_url(), &["--config", config, "run", "--task", "start notes"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("✅ Committed"), "{}", text(&out.stdout));
    let before = all_bytes(&root);
    assert!(before.iter().any(|(p, _)| p.ends_with(".git/HEAD")), "the root is a repository");

    let mock = MockOpenAi::new(vec![
        MockTurn::tool_call(
            "file_write",
            r#"{"path":"notes.txt","content":"v2 secret plans\nline two\n"}"#,
        ),
        MockTurn::text("Done.\nFix: Rewrite the notes"),
    ])
    .serve();
    let out = aria.run(&mock.base_url(), &["--config", config, "--dry-run", "chat", "rewrite"]);
    assert_eq!(code(&out), 0, "stderr: {}", text(&out.stderr));
    let mut after = all_bytes(&root);
    let mut before = before;
    before.sort();
    after.sort();
    assert!(before == after, "the dry run changed the tree or the git refs");
    assert_eq!(std::fs::read(root.join("notes.txt")).unwrap(), b"v1 plans\n");

    let shown = text(&out.stdout);
    let root = root.display();
    for want in [
        "🔍 Dry run: nothing was changed".to_owned(),
        "   | write notes.txt (25 bytes):\n   | v2 secret plans\n   | line two\n".to_owned(),
        format!("Snapshot first: snapshot/file_write-<YYYY-MM-DD-HHMMSS> in {root}\n"),
        format!("1. build_project: `make` in {root} (timeout"),
        format!("2. run_tests: `make test` in {root} (timeout"),
        "All pass → commit \"Fix: Rewrite the notes\"".to_owned(),
    ] {
        assert!(shown.contains(&want), "missing {want:?} in:\n{shown}");
    }
    assert!(
        text(&out.stderr).contains("· file_write not executed (dry run)"),
        "{}",
        text(&out.stderr)
    );

    // The decisions are in the audit log.
    let audit = aria.run(&mock.base_url(), &["--config", config, "audit", "list", "--json"]);
    let audit = text(&audit.stdout);
    assert!(audit.contains("workflow.dry_run") && audit.contains("make test"), "{audit}");
}
