//! `if/elif/else` run end to end without a shell: the conditions run first, the branch is
//! chosen by their exit status, the parts that do not run leave no trace, and every part
//! counts for the tier.

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use super::outcome::refused;
use aria_api::{Tier, Tool, ToolContext, ToolError, ToolOutput};
use aria_tools::{PathGuard, SensitivePatterns, ShellExecute};
use pretty_assertions::assert_eq;
use serde_json::json;

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    tool: ShellExecute,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap().join("root");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("x"), "present\n").unwrap();
    fs::write(root.join("fruits.txt"), "pear\napple\nfig\n").unwrap();
    let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    Env { _tmp: tmp, root, tool: ShellExecute::new(Arc::new(guard)) }
}

async fn run(tool: &ShellExecute, command: &str) -> Result<ToolOutput, ToolError> {
    tool.call(json!({ "command": command }), &ToolContext::default()).await
}

async fn out(tool: &ShellExecute, command: &str) -> String {
    run(tool, command).await.unwrap_or_else(|e| panic!("{command}: {e:?}")).content
}

#[tokio::test]
async fn the_condition_picks_the_branch() {
    let e = env();
    let line = "if [ -f x ]; then echo yes; else echo no; fi";
    assert_eq!(e.tool.tier(&json!({ "command": line })), Tier::Read);
    assert_eq!(out(&e.tool, line).await, "exit status: 0\n--- stdout ---\nyes\n");
    let line = "if [ -f missing ]; then echo yes; else echo no; fi";
    assert_eq!(out(&e.tool, line).await, "exit status: 0\n--- stdout ---\nno\n");
    // A program as the condition, its output kept, its status deciding.
    let line = "if grep apple fruits.txt; then echo found; fi";
    assert_eq!(out(&e.tool, line).await, "exit status: 0\n--- stdout ---\napple\nfound\n");
    let line = "if grep -q kiwi fruits.txt; then echo found; fi";
    assert_eq!(out(&e.tool, line).await, "exit status: 0\n");
}

#[tokio::test]
async fn elif_chains_written_over_several_lines_run_the_first_true_arm() {
    let e = env();
    let line = "if test -d nowhere\nthen\n  echo one\nelif test -d src && test -f x\nthen\n  \
                echo two\n  echo two-b\nelse\n  echo three\nfi\necho after";
    assert_eq!(out(&e.tool, line).await, "exit status: 0\n--- stdout ---\ntwo\ntwo-b\nafter\n");
}

#[tokio::test]
async fn only_the_chosen_branch_writes_and_every_file_is_the_one_checked() {
    let e = env();
    let line = "if false; then echo one > one.txt; elif true; then echo two > two.txt; else \
                echo three > three.txt; fi; echo four > four.txt";
    assert_eq!(e.tool.tier(&json!({ "command": line })), Tier::RecoverableWrite);
    assert_eq!(out(&e.tool, line).await, "exit status: 0\n");
    assert_eq!(fs::read_to_string(e.root.join("two.txt")).unwrap(), "two\n");
    assert_eq!(fs::read_to_string(e.root.join("four.txt")).unwrap(), "four\n");
    assert!(!e.root.join("one.txt").exists() && !e.root.join("three.txt").exists());
}

#[tokio::test]
async fn the_status_of_an_if_is_its_branch_or_zero() {
    let e = env();
    assert_eq!(out(&e.tool, "if false; then echo a; fi").await, "exit status: 0\n");
    assert_eq!(out(&e.tool, "if false; then echo a; else false; fi").await, "exit status: 1\n");
    let line = "if true; then false; fi || echo failed";
    assert_eq!(out(&e.tool, line).await, "exit status: 0\n--- stdout ---\nfailed\n");
    let line = "test -f missing && if true; then echo no; fi; echo end";
    assert_eq!(out(&e.tool, line).await, "exit status: 0\n--- stdout ---\nend\n");
}

#[tokio::test]
async fn ifs_nest_and_run_inside_for_loops() {
    let e = env();
    let line = "for f in x missing fruits.txt; do if [ -f \"$f\" ]; then if grep -q apple \
                \"$f\"; then echo \"$f: apple\"; else echo \"$f: file\"; fi; else echo \"$f: \
                none\"; fi; done";
    assert_eq!(
        out(&e.tool, line).await,
        "exit status: 0\n--- stdout ---\nx: file\nmissing: none\nfruits.txt: apple\n"
    );
}

#[tokio::test]
async fn what_an_if_cannot_do_is_refused_with_the_form_that_works() {
    let e = env();
    let reason = refused(run(&e.tool, "if true; then cd src; fi; ls").await);
    assert!(reason.contains("cd DIR && if"), "{reason}");
    let reason = refused(run(&e.tool, "if true; then ls; else rm -rf /; fi").await);
    assert!(reason.contains("/"), "{reason}");
    assert!(e.root.join("x").exists());
    let reason = refused(run(&e.tool, "while true; do ls; done").await);
    assert!(reason.contains("for x in a b c"), "{reason}");
    // `cd` before the `if` is fine: the whole `if` runs in that directory.
    fs::write(e.root.join("src/lib.rs"), "").unwrap();
    let line = "cd src && if [ -f lib.rs ]; then echo here; fi";
    assert_eq!(out(&e.tool, line).await, "exit status: 0\n--- stdout ---\nhere\n");
}

#[tokio::test]
async fn a_dry_run_shows_the_parts_of_an_if() {
    let e = env();
    let ctx = ToolContext { dry_run: true, ..ToolContext::default() };
    let line = "if [ -f x ]; then touch y; else echo no; fi";
    let shown = e.tool.call(json!({ "command": line }), &ctx).await.unwrap().content;
    assert_eq!(
        shown,
        "dry run (tier recoverable-write): nothing was run\nrun: if\n  run: [ -f x ]\nthen\n  \
         run: touch y\nelse\n  run: echo no\nfi"
    );
    assert!(!e.root.join("y").exists());
}
