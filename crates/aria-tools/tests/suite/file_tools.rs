//! `file_read` and `file_list` through the `aria_api::Tool` contract, as the agent loop sees them.

use std::fs;
use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError};
use aria_tools::{FileList, FileRead, PathGuard};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::fixture::{Fixture, fixture};
use super::outcome::{failed, refused};

fn tools(fx: &Fixture) -> (FileRead, FileList) {
    let g = Arc::new(fx.guard());
    (FileRead::new(g.clone()), FileList::new(g))
}

async fn call(tool: &dyn Tool, args: Value) -> Result<aria_api::ToolOutput, ToolError> {
    tool.call(args, &ToolContext::default()).await
}

// ---------------------------------------------------------------- specs (public contract)

#[test]
fn specs_are_the_public_contract() {
    let fx = fixture();
    let (read, list) = tools(&fx);
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string", "description": read.spec().parameters["properties"]["path"]["description"]}},
        "required": ["path"],
        "additionalProperties": false
    });
    assert_eq!(read.spec().name, "file_read");
    assert_eq!(read.spec().parameters, schema);
    assert_eq!(list.spec().name, "file_list");
    assert_eq!(list.spec().parameters["required"], json!(["path"]));
    assert_eq!(list.spec().parameters["additionalProperties"], json!(false));
    assert_eq!(list.spec().parameters["properties"]["path"]["type"], json!("string"));
    for spec in [read.spec(), list.spec()] {
        assert!(spec.description.contains(fx.root.to_str().unwrap()), "{}", spec.description);
        assert!(spec.description.len() < 600, "too long for a model: {}", spec.description);
    }
}

#[test]
fn both_are_read_tier() {
    let fx = fixture();
    let (read, list) = tools(&fx);
    assert_eq!(read.tier(&json!({"path": "x"})), Tier::Read);
    assert_eq!(list.tier(&json!({"path": "."})), Tier::Read);
}

// ---------------------------------------------------------------- file_read

#[tokio::test]
async fn file_read_returns_text_and_audit_details() {
    let fx = fixture();
    let (read, _) = tools(&fx);
    let out = call(&read, json!({"path": "link_in/b.txt"})).await.unwrap();
    assert_eq!(out.content, "hello");
    assert_eq!(out.details, json!({"path": fx.root.join("a/b.txt").to_str().unwrap(), "bytes": 5}));
}

#[tokio::test]
async fn file_read_refusals_are_refused() {
    let fx = fixture();
    let (read, _) = tools(&fx);
    assert!(refused(call(&read, json!({"path": ".env"})).await).contains("sensitive"));
    assert!(refused(call(&read, json!({"path": "/etc/passwd"})).await).contains("outside"));
    assert!(refused(call(&read, json!({"path": "link_file_out"})).await).contains("symlink"));
    fs::write(fx.root.join("bin"), b"\x7fELF\0\0").unwrap();
    assert!(refused(call(&read, json!({"path": "bin"})).await).contains("binary"));
}

#[tokio::test]
async fn file_read_failures_say_what_to_do() {
    let fx = fixture();
    let (read, _) = tools(&fx);
    let m = failed(call(&read, json!({"path": "a/nope.txt"})).await);
    assert!(m.contains("a/nope.txt") && m.contains("holds: b.txt"), "{m}");
    let m = failed(call(&read, json!({"path": "a"})).await);
    assert!(m.contains("directory") && m.contains("file_list"), "{m}");
    let m = failed(call(&read, json!({})).await);
    assert!(m.contains("path"), "{m}");
    let m = failed(call(&read, json!({"path": 7})).await);
    assert!(m.contains("path"), "{m}");
    let m = failed(call(&read, json!({"path": "x", "mode": "rw"})).await);
    assert!(m.contains("mode"), "{m}");
}

#[tokio::test]
async fn file_read_respects_its_size_limit() {
    let fx = fixture();
    let read = FileRead::new(Arc::new(fx.guard())).with_max_bytes(3);
    let r = refused(call(&read, json!({"path": "notes.txt"})).await);
    assert!(r.contains("5 bytes") && r.contains("3 bytes"), "{r}");
}

/// A small model guessed `example.txt` and, told only that it does not exist,
/// invented its content. The failure names what the directory holds.
#[tokio::test]
async fn file_read_of_a_missing_name_lists_the_directory() {
    let fx = fixture();
    let (read, list) = tools(&fx);
    let m = failed(call(&read, json!({"path": "a/nope.txt"})).await);
    assert!(m.contains("does not exist"), "{m}");
    assert!(m.ends_with(&format!("{} holds: b.txt, c/", fx.root.join("a").display())), "{m}");
    let m = failed(call(&read, json!({"path": "example.txt"})).await);
    assert!(m.contains("notes.txt") && m.contains("a/") && m.contains("link_out"), "{m}");
    // A missing parent: no listing, the usual advice.
    let m = failed(call(&read, json!({"path": "x/y/z.txt"})).await);
    assert!(!m.contains("holds:") && m.contains("file_list"), "{m}");
    // Nothing outside the roots is listed: a refusal stays a refusal.
    assert!(!refused(call(&read, json!({"path": "link_out/nope.txt"})).await).contains("holds"));
    assert!(!refused(call(&read, json!({"path": "../outside/nope"})).await).contains("secret"));
    // An empty directory says so; file_list names what exists too.
    let m = failed(call(&read, json!({"path": "a/c/nope"})).await);
    assert!(m.contains("empty"), "{m}");
    let m = failed(call(&list, json!({"path": "a/nope"})).await);
    assert!(m.contains("holds: b.txt, c/"), "{m}");
    // Many names are cut.
    for i in 0..40 {
        fs::write(fx.root.join(format!("a/c/f{i:02}")), "").unwrap();
    }
    let m = failed(call(&read, json!({"path": "a/c/nope"})).await);
    assert!(m.contains("f00, f01") && m.contains("… and 10 more") && !m.contains("f39"), "{m}");
}

// ---------------------------------------------------------------- file_list

/// A model listed a file it meant to read. It gets the file's line, as `ls FILE`
/// prints, and what shows the text.
#[tokio::test]
async fn file_list_of_a_file_shows_its_entry() {
    let fx = fixture();
    let (_, list) = tools(&fx);
    let out = call(&list, json!({"path": "notes.txt"})).await.unwrap();
    assert_eq!(
        out.content,
        "notes.txt  (5 bytes)\n(notes.txt is a file, not a directory: file_read shows its text.)"
    );
    assert_eq!(out.details["entries"], json!(1));
    assert_eq!(out.details["file"], json!(true));
    // Through a link inside the root: the file it resolves to.
    let out = call(&list, json!({"path": "link_in/b.txt"})).await.unwrap();
    assert!(out.content.starts_with("b.txt  (5 bytes)\n"), "{}", out.content);
}

#[tokio::test]
async fn file_list_formats_entries() {
    let fx = fixture();
    let (_, list) = tools(&fx);
    let out = call(&list, json!({"path": "."})).await.unwrap();
    let base = fx.base.display();
    let expected = [
        ".env  (8 bytes) (sensitive: not readable)".to_owned(),
        ".env.local  (3 bytes) (sensitive: not readable)".to_owned(),
        "a/".to_owned(),
        "config/".to_owned(),
        "dangling -> ../outside/nope (outside the roots: not readable)".to_owned(),
        "dangling_in -> a/nope (missing)".to_owned(),
        format!("link_abs_in -> {}/root/a", base),
        "link_file_in -> notes.txt".to_owned(),
        "link_file_out -> ../outside/secret.txt (outside the roots: not readable)".to_owned(),
        "link_in -> a".to_owned(),
        "link_out -> ../outside (outside the roots: not readable)".to_owned(),
        "link_to_env -> .env (sensitive: not readable)".to_owned(),
        "loop1 -> loop2 (not readable: symlink loop)".to_owned(),
        "loop2 -> loop1 (not readable: symlink loop)".to_owned(),
        "notes.txt  (5 bytes)".to_owned(),
        "server.PEM  (3 bytes) (sensitive: not readable)".to_owned(),
        format!("sneaky.txt -> {}/home/.ssh/id_rsa (outside the roots: not readable)", base),
    ]
    .join("\n");
    assert_eq!(out.content, expected);
    assert_eq!(out.details["path"], json!(fx.root.to_str().unwrap()));
    assert_eq!(out.details["entries"], json!(17));
    assert_eq!(out.details["truncated"], json!(false));
}

#[tokio::test]
async fn file_list_of_an_empty_directory_says_so() {
    let fx = fixture();
    let (_, list) = tools(&fx);
    let out = call(&list, json!({"path": "a/c"})).await.unwrap();
    assert_eq!(out.content, "(empty directory)");
}

#[tokio::test]
async fn file_list_caps_at_1000_entries() {
    let fx = fixture();
    let dir = fx.root.join("many");
    fs::create_dir(&dir).unwrap();
    for i in 0..1005 {
        fs::write(dir.join(format!("f{i:04}")), "").unwrap();
    }
    let (_, list) = tools(&fx);
    let out = call(&list, json!({"path": "many"})).await.unwrap();
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines.len(), 1001);
    assert_eq!(lines[0], "f0000  (0 bytes)");
    assert_eq!(lines[999], "f0999  (0 bytes)");
    assert_eq!(lines[1000], "… and 5 more");
    assert_eq!(out.details["entries"], json!(1005));
    assert_eq!(out.details["truncated"], json!(true));
}

#[tokio::test]
async fn file_list_errors() {
    let fx = fixture();
    let (_, list) = tools(&fx);
    let m = failed(call(&list, json!({"path": "nope"})).await);
    assert!(m.contains("nope"), "{m}");
    assert!(refused(call(&list, json!({"path": ".."})).await).contains(".."));
    assert!(refused(call(&list, json!({"path": "link_out"})).await).contains("symlink"));
    assert!(refused(call(&list, json!({"path": "config/.ssh"})).await).contains("sensitive"));
}

#[tokio::test]
async fn registry_lists_exactly_the_builtin_tools() {
    let fx = fixture();
    let tools = aria_tools::builtin_tools(Arc::new(fx.guard()));
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(
        names,
        [
            "file_read",
            "file_list",
            "file_search",
            "file_write",
            "file_edit",
            "file_insert",
            "apply_patch",
            "shell_execute",
            "system_info",
            "python_run",
            "web_fetch",
            "git_status",
            "git_diff",
            "git_log",
            "git_commit"
        ]
    );
    let out = tools[0].call(json!({"path": "notes.txt"}), &ToolContext::default()).await.unwrap();
    assert_eq!(out.content, "notes");
}

#[test]
fn guard_is_shareable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PathGuard>();
    assert_send_sync::<aria_tools::SecretRedactor>();
}

#[tokio::test]
async fn system_info_reports_this_machine_and_the_roots_free_space() {
    let fx = fixture();
    let info = aria_tools::SystemInfo::new(Arc::new(fx.guard()));
    let out = info.call(json!({}), &ToolContext::default()).await.unwrap();
    let text = &out.content;
    let cores = std::thread::available_parallelism().unwrap().get();
    assert!(text.contains(&format!("· {cores} cores ·")), "{text}");
    assert!(
        text.contains(&format!("  {}: ", fx.root.display())) && text.contains(" free of "),
        "{text}"
    );
    // This test's own process is alive, so the process table is not empty.
    assert!(out.details["processes"].as_u64().unwrap() > 0, "{}", out.details);
    assert!(out.details["memory_total_bytes"].as_u64().unwrap() > 0, "{}", out.details);
    let err = info.call(json!({"verbose": true}), &ToolContext::default()).await.unwrap_err();
    assert!(err.to_string().contains("no arguments"), "{err}");
}
