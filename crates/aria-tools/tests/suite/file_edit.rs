//! `file_edit` through the `aria_api::Tool` contract: the change on disk and the diff the model
//! is shown, text that is missing or not unique, and refusals that change nothing anywhere.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolOutput};
use aria_tools::FileEdit;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::fixture::{Fixture, fixture};
use super::outcome::{failed, refused};
use super::write_snapshot::tree;

fn edit_tool(fx: &Fixture) -> FileEdit {
    FileEdit::new(Arc::new(fx.guard()))
}

async fn call(tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
    tool.call(args, &ToolContext::default()).await
}

#[test]
fn the_spec_is_the_public_contract() {
    let fx = fixture();
    let tool = edit_tool(&fx);
    assert_eq!(tool.spec().name, "file_edit");
    assert_eq!(tool.spec().parameters["required"], json!(["path", "old", "new"]));
    assert_eq!(tool.spec().parameters["additionalProperties"], json!(false));
    assert!(tool.spec().description.contains(fx.root.to_str().unwrap()));
    assert!(tool.spec().description.len() < 700, "too long for a model");
    assert_eq!(tool.tier(&json!({})), Tier::RecoverableWrite);
}

#[tokio::test]
async fn a_line_added_after_another_keeps_the_rest_and_permissions_and_shows_the_diff() {
    let fx = fixture();
    let path = fx.root.join("shopping.txt");
    fs::write(&path, "milk\neggs\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let args = json!({"path": "shopping.txt", "old": "eggs\n", "new": "eggs\nbread\n"});
    let out = call(&edit_tool(&fx), args).await.unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "milk\neggs\nbread\n");
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o640);
    assert!(out.content.starts_with(&format!("Edited {} (+1 -0 lines):", path.display())));
    assert!(out.content.contains("\n+bread"), "{}", out.content);
    assert_eq!(
        (out.details["added"].clone(), out.details["removed"].clone()),
        (json!(1), json!(0))
    );
}

#[tokio::test]
async fn a_dry_run_changes_nothing() {
    let fx = fixture();
    let before = tree(&fx.base);
    let ctx = ToolContext { dry_run: true, ..ToolContext::default() };
    let args = json!({"path": "notes.txt", "old": "notes", "new": "NOTES"});
    let out = edit_tool(&fx).call(args, &ctx).await.unwrap();
    assert!(out.content.starts_with("Dry run: would edit"), "{}", out.content);
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn missing_or_repeated_text_fails_with_what_to_do_and_writes_nothing() {
    let fx = fixture();
    fs::write(fx.root.join("calc.py"), "def multiply(a, b):\n    return a * b\n\nx = 1\nx = 1\n")
        .unwrap();
    let before = tree(&fx.base);
    let tool = edit_tool(&fx);
    let missing = failed(
        call(
            &tool,
            json!({"path": "calc.py", "old": "def multiply(x, y):", "new": "def mul(x, y):"}),
        )
        .await,
    );
    assert!(missing.contains("nearest line is line 1: \"def multiply(a, b):\""), "{missing}");
    let twice =
        failed(call(&tool, json!({"path": "calc.py", "old": "x = 1", "new": "x = 2"})).await);
    assert!(twice.contains("occurs 2 times (at lines 4, 5)"), "{twice}");
    let no_file = failed(call(&tool, json!({"path": "calc2.py", "old": "a", "new": "b"})).await);
    assert!(no_file.contains("calc.py"), "names what the directory holds: {no_file}");
    let binary = fx.root.join("blob.bin");
    fs::write(&binary, b"\x00\x01\x02text").unwrap();
    let before_binary = tree(&fx.base);
    let not_text =
        failed(call(&tool, json!({"path": "blob.bin", "old": "text", "new": "t"})).await);
    assert!(not_text.contains("cannot be edited as text"), "{not_text}");
    assert_eq!(tree(&fx.base), before_binary);
    fs::remove_file(&binary).unwrap();
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn refusals_write_nothing_anywhere() {
    let fx = fixture();
    let before = tree(&fx.base);
    let tool = edit_tool(&fx);
    let outside = fx.outside.join("secret.txt");
    for path in [
        "../outside/secret.txt",
        outside.to_str().unwrap(),
        ".env",
        ".env.local",
        "config/.ssh/known_hosts",
        "server.PEM",
        "link_to_env",
        "link_file_out",
    ] {
        let reason = refused(call(&tool, json!({"path": path, "old": "SECRET", "new": "x"})).await);
        assert!(!reason.is_empty(), "{path}");
    }
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn a_copy_without_its_indentation_edits_the_method_and_says_how_it_was_found() {
    let fx = fixture();
    let path = fx.root.join("cart.py");
    fs::write(&path, "class Cart:\n    def total(self):\n        return sum(self.items)\n")
        .unwrap();
    let args = json!({
        "path": "cart.py",
        "old": "def total(self):\nreturn sum(self.items)",
        "new": "def total(self):\nreturn round(sum(self.items), 2)"
    });
    // Copied flat, line for line: each new line takes the indentation of the line it replaces.
    call(&edit_tool(&fx), args).await.unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "class Cart:\n    def total(self):\n        return round(sum(self.items), 2)\n"
    );
    // Flat, with a line more than it replaces: there is no telling where it goes, so it fails.
    let args = json!({
        "path": "cart.py",
        "old": "def total(self):\nreturn round(sum(self.items), 2)",
        "new": "def total(self):\nitems = self.items\nreturn sum(items)"
    });
    let why = failed(call(&edit_tool(&fx), args).await);
    assert!(why.contains("indentation"), "{why}");
    fs::write(&path, "class Cart:\n    def total(self):\n        return sum(self.items)\n")
        .unwrap();
    let args = json!({
        "path": "cart.py",
        "old": "def total(self):\n    return sum(self.items)",
        "new": "def total(self):\n    return round(sum(self.items), 2)"
    });
    let out = call(&edit_tool(&fx), args).await.unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "class Cart:\n    def total(self):\n        return round(sum(self.items), 2)\n"
    );
    assert!(out.content.contains("matched ignoring indentation"), "{}", out.content);
}
