//! `file_insert` through the `aria_api::Tool` contract: lines added at the end or next to a
//! named line with the rest of the file kept, a Markdown list kept a list, and refusals that
//! change nothing anywhere.

use std::fs;
use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolOutput};
use aria_tools::FileInsert;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::fixture::{Fixture, fixture};
use super::outcome::{failed, refused};
use super::write_snapshot::tree;

fn insert_tool(fx: &Fixture) -> FileInsert {
    FileInsert::new(Arc::new(fx.guard()))
}

async fn call(tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
    tool.call(args, &ToolContext::default()).await
}

#[test]
fn the_spec_is_the_public_contract() {
    let fx = fixture();
    let tool = insert_tool(&fx);
    assert_eq!(tool.spec().name, "file_insert");
    assert_eq!(tool.spec().parameters["required"], json!(["path", "text"]));
    assert_eq!(tool.spec().parameters["additionalProperties"], json!(false));
    assert!(tool.spec().description.len() < 600, "too long for a model");
    assert_eq!(tool.tier(&json!({})), Tier::RecoverableWrite);
}

#[tokio::test]
async fn a_line_appended_to_a_markdown_list_becomes_an_item_and_nothing_else_changes() {
    let fx = fixture();
    let path = fx.root.join("TODO.md");
    fs::write(&path, "# Todo\n\n- write docs\n- fix tests").unwrap();
    let out = call(&insert_tool(&fx), json!({"path": "TODO.md", "text": "release 1.0"})).await;
    let out = out.unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "# Todo\n\n- write docs\n- fix tests\n- release 1.0\n"
    );
    assert!(out.content.contains("written as a list item"), "{}", out.content);
    assert!(out.content.contains("\n+- release 1.0"), "{}", out.content);
    // The last line gained its line break, so the diff counts it too.
    assert_eq!((&out.details["added"], &out.details["removed"]), (&json!(2), &json!(1)));
}

#[tokio::test]
async fn lines_go_after_the_named_line_and_a_dry_run_writes_nothing() {
    let fx = fixture();
    let path = fx.root.join("app.py");
    fs::write(&path, "import os\n\nprint(os.getcwd())\n").unwrap();
    let before = tree(&fx.base);
    let ctx = ToolContext { dry_run: true, ..ToolContext::default() };
    let args = json!({"path": "app.py", "text": "import sys", "after": "import os"});
    let dry = insert_tool(&fx).call(args.clone(), &ctx).await.unwrap();
    assert!(dry.content.starts_with("Dry run: would edit"), "{}", dry.content);
    assert_eq!(tree(&fx.base), before);
    call(&insert_tool(&fx), args).await.unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "import os\nimport sys\n\nprint(os.getcwd())\n");
}

#[tokio::test]
async fn a_missing_anchor_or_file_fails_with_what_to_do_and_refusals_write_nothing() {
    let fx = fixture();
    fs::write(fx.root.join("list.txt"), "a\nb\n").unwrap();
    let before = tree(&fx.base);
    let tool = insert_tool(&fx);
    let missing =
        failed(call(&tool, json!({"path": "list.txt", "text": "x", "before": "zzz"})).await);
    assert!(missing.contains("\"before\" is not in the file"), "{missing}");
    let no_file = failed(call(&tool, json!({"path": "nope.txt", "text": "x"})).await);
    assert!(no_file.contains("nope.txt does not exist"), "{no_file}");
    for path in ["../outside/secret.txt", ".env", "config/.ssh/known_hosts", "link_file_out"] {
        let reason = refused(call(&tool, json!({"path": path, "text": "x"})).await);
        assert!(!reason.is_empty(), "{path}");
    }
    assert_eq!(tree(&fx.base), before);
}
