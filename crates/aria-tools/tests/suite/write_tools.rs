//! `file_write` and `apply_patch` through the `aria_api::Tool` contract: what lands on disk,
//! what the model is told, and that refusals and failures change nothing anywhere.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolOutput};
use aria_tools::{ApplyPatch, FileWrite, MAX_WRITE_BYTES};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::fixture::{Fixture, fixture};
use super::outcome::{failed, refused};
use super::write_snapshot::tree;

fn write_tool(fx: &Fixture) -> FileWrite {
    FileWrite::new(Arc::new(fx.guard()))
}

fn patch_tool(fx: &Fixture) -> ApplyPatch {
    ApplyPatch::new(Arc::new(fx.guard()))
}

async fn call(tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
    tool.call(args, &ToolContext::default()).await
}

async fn dry(tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
    tool.call(args, &ToolContext { dry_run: true, ..ToolContext::default() }).await
}

// ---------------------------------------------------------------- specs (public contract)

#[test]
fn specs_are_the_public_contract() {
    let fx = fixture();
    let (w, p) = (write_tool(&fx), patch_tool(&fx));
    assert_eq!(w.spec().name, "file_write");
    assert_eq!(w.spec().parameters["required"], json!(["path", "content"]));
    assert_eq!(p.spec().name, "apply_patch");
    assert_eq!(p.spec().parameters["required"], json!(["patch"]));
    assert_eq!(p.spec().parameters["properties"]["path"]["type"], "string");
    for spec in [w.spec(), p.spec()] {
        assert_eq!(spec.parameters["additionalProperties"], json!(false));
        assert!(spec.description.contains(fx.root.to_str().unwrap()), "{}", spec.description);
        assert!(spec.description.len() < 700, "too long for a model: {}", spec.description);
    }
    assert!(w.spec().description.contains("over 10 MB"), "{}", w.spec().description);
    assert!(p.spec().description.contains("50 KB"), "{}", p.spec().description);
    assert_eq!(w.tier(&json!({})), Tier::RecoverableWrite);
    assert_eq!(p.tier(&json!({})), Tier::RecoverableWrite);
}

// ---------------------------------------------------------------- file_write

#[tokio::test]
async fn file_write_creates_a_file_and_its_directories() {
    let fx = fixture();
    let out = call(&write_tool(&fx), json!({"path": "docs/new/todo.md", "content": "one\ntwo\n"}))
        .await
        .unwrap();
    let path = fx.root.join("docs/new/todo.md");
    assert_eq!(fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    assert_eq!(
        out.content,
        format!(
            "Created {} (8 bytes, 2 lines). Missing parent directories were created.",
            path.display()
        )
    );
    assert_eq!(out.details["action"], json!("created"));
    assert_eq!(out.details["bytes"], json!(8));
}

#[tokio::test]
async fn file_write_replaces_keeping_permissions_and_says_what_changed() {
    let fx = fixture();
    let path = fx.root.join("notes.txt");
    fs::write(&path, "a\nb\nc\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let out = call(&write_tool(&fx), json!({"path": "notes.txt", "content": "a\nB\nc\nd\n"}))
        .await
        .unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "a\nB\nc\nd\n");
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o640);
    assert_eq!(
        out.content,
        format!(
            "Replaced {} (8 bytes, 4 lines). It had 6 bytes, 3 lines; +2 -1 lines, first change at line 2.",
            path.display()
        )
    );
    assert_eq!(
        (out.details["added"].clone(), out.details["removed"].clone()),
        (json!(2), json!(1))
    );
}

#[tokio::test]
async fn file_write_with_the_same_content_writes_nothing() {
    let fx = fixture();
    let path = fx.root.join("notes.txt");
    let ino = fs::metadata(&path).unwrap().ino();
    let out =
        call(&write_tool(&fx), json!({"path": "notes.txt", "content": "notes"})).await.unwrap();
    assert!(out.content.ends_with("already has exactly this content; nothing was written."));
    assert_eq!(fs::metadata(&path).unwrap().ino(), ino);
}

#[tokio::test]
async fn file_write_dry_run_changes_nothing() {
    let fx = fixture();
    let before = tree(&fx.base);
    let w = write_tool(&fx);
    let out = dry(&w, json!({"path": "x/y/z.txt", "content": "hi\n"})).await.unwrap();
    assert_eq!(
        out.content,
        format!(
            "Dry run: would create {} (3 bytes, 1 lines). Missing parent directories would be created. Nothing was written.",
            fx.root.join("x/y/z.txt").display()
        )
    );
    let out = dry(&w, json!({"path": "a/b.txt", "content": "HELLO\n"})).await.unwrap();
    assert!(out.content.starts_with("Dry run: would replace"), "{}", out.content);
    assert!(out.content.contains("+1 -1 lines, first change at line 1"), "{}", out.content);
    assert_eq!(out.details["dry_run"], json!(true));
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn file_write_refusals_write_nothing_anywhere() {
    let fx = fixture();
    let before = tree(&fx.base);
    let w = write_tool(&fx);
    let outside = fx.outside.join("new.txt");
    for path in [
        "../outside/new.txt",
        outside.to_str().unwrap(),
        "link_out/new.txt",
        "link_file_out",
        "dangling",
        ".env",
        ".env.production",
        "config/.ssh/authorized_keys",
        "keys/server.key",
        "link_to_env",
        "sneaky.txt",
        "new/../../outside/x",
        "%2e%2e/x",
    ] {
        let reason = refused(call(&w, json!({"path": path, "content": "pwned"})).await);
        assert!(!reason.is_empty(), "{path}");
    }
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn file_write_failures_say_what_to_do() {
    let fx = fixture();
    let w = write_tool(&fx);
    let msg = failed(call(&w, json!({"path": "a", "content": "x"})).await);
    assert!(msg.contains("is a directory"), "{msg}");
    let msg = failed(call(&w, json!({"path": "a.txt"})).await);
    assert!(msg.contains("\"content\" is missing"), "{msg}");
    let big = "x".repeat(MAX_WRITE_BYTES as usize + 1);
    let msg = failed(call(&w, json!({"path": "big.txt", "content": big})).await);
    assert!(msg.contains("over the 10 MB limit"), "{msg}");
    assert!(!fx.root.join("big.txt").exists());
}

#[tokio::test]
async fn file_write_through_a_symlink_inside_the_root_writes_its_target() {
    let fx = fixture();
    call(&write_tool(&fx), json!({"path": "link_file_in", "content": "via link"})).await.unwrap();
    assert_eq!(fs::read_to_string(fx.root.join("notes.txt")).unwrap(), "via link");
    assert!(fs::symlink_metadata(fx.root.join("link_file_in")).unwrap().file_type().is_symlink());
}

// ---------------------------------------------------------------- apply_patch

const MULTI: &str = "\
diff --git a/a/b.txt b/a/b.txt
--- a/a/b.txt
+++ b/a/b.txt
@@ -1 +1,2 @@
-hello
+hello, world
+second line
--- /dev/null
+++ b/src/new.rs
@@ -0,0 +1,2 @@
+fn main() {}
+// end
--- a/notes.txt
+++ /dev/null
@@ -1 +0,0 @@
-notes
\\ No newline at end of file
";

#[tokio::test]
async fn apply_patch_modifies_creates_and_deletes() {
    let fx = fixture();
    let out = call(&patch_tool(&fx), json!({ "patch": MULTI })).await.unwrap();
    assert_eq!(
        out.content,
        "Applied the patch to 3 files:\n  M a/b.txt (+2 -1)\n  A src/new.rs (+2 -0)\n  D notes.txt (+0 -1)"
    );
    // b.txt had no final newline; the replaced last line gets one as the patch says.
    assert_eq!(fs::read_to_string(fx.root.join("a/b.txt")).unwrap(), "hello, world\nsecond line\n");
    assert_eq!(fs::read_to_string(fx.root.join("src/new.rs")).unwrap(), "fn main() {}\n// end\n");
    assert!(!fx.root.join("notes.txt").exists());
    assert_eq!(
        out.details["files"][2],
        json!({"path": fx.abs("notes.txt"), "change": "D", "added": 0, "removed": 1})
    );
}

/// A small model "renamed" a function with a hunk whose '+' line repeated its '-'
/// line; it applied, changed nothing and the run ended `done`. Such a patch fails and says why.
#[tokio::test]
async fn a_patch_that_changes_nothing_fails() {
    let fx = fixture();
    let path = fx.root.join("a/b.txt");
    fs::write(&path, "def multiply(a, b):\n    return a * b\n").unwrap();
    let ino = fs::metadata(&path).unwrap().ino();
    let patch = "--- a/a/b.txt\n+++ b/a/b.txt\n@@ -1,2 +1,2 @@\n def multiply(a, b):\n-    return a * b\n+    return a * b\n";
    let m = failed(call(&patch_tool(&fx), json!({ "patch": patch })).await);
    assert!(m.contains("changes nothing in a/b.txt") && m.contains("'+' lines"), "{m}");
    assert_eq!(fs::metadata(&path).unwrap().ino(), ino);
    // The same hunk with a real change applies.
    let patch = patch.replace("+    return a * b", "+    return b * a");
    call(&patch_tool(&fx), json!({ "patch": patch })).await.unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "def multiply(a, b):\n    return b * a\n");
}

#[tokio::test]
async fn apply_patch_dry_run_reports_counts_and_changes_nothing() {
    let fx = fixture();
    let before = tree(&fx.base);
    let out = dry(&patch_tool(&fx), json!({ "patch": MULTI })).await.unwrap();
    assert_eq!(
        out.content,
        "Dry run: the patch applies cleanly and would change 3 files:\n  M a/b.txt (+2 -1)\n  A src/new.rs (+2 -0)\n  D notes.txt (+0 -1)\nNothing was written."
    );
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn a_mismatch_in_one_file_changes_no_file() {
    let fx = fixture();
    fs::write(fx.root.join("list.txt"), "one\ntwo\nthree\n").unwrap();
    let before = tree(&fx.base);
    let patch = "--- a/a/b.txt\n+++ b/a/b.txt\n@@ -1 +1 @@\n-hello\n\\ No newline at end of file\n+bye\n--- a/list.txt\n+++ b/list.txt\n@@ -2,2 +2,2 @@\n-TWO\n+2\n three\n";
    let msg = failed(call(&patch_tool(&fx), json!({ "patch": patch })).await);
    assert!(msg.starts_with("hunk 1 of list.txt does not match the file."), "{msg}");
    assert!(msg.contains("Lines 2-3 of the file are:\n     2 | two\n     3 | three"), "{msg}");
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn a_refused_path_anywhere_in_the_patch_changes_nothing() {
    let fx = fixture();
    let before = tree(&fx.base);
    for bad in ["../outside/secret.txt", "link_out/secret.txt", ".env", "link_file_out"] {
        let patch = format!(
            "--- a/a/b.txt\n+++ b/a/b.txt\n@@ -1 +1 @@\n-hello\n\\ No newline at end of file\n+bye\n--- a/{bad}\n+++ b/{bad}\n@@ -1 +1 @@\n-top secret\n+pwned\n"
        );
        let reason = refused(call(&patch_tool(&fx), json!({ "patch": patch })).await);
        assert!(!reason.is_empty());
        let create = format!("--- /dev/null\n+++ b/{bad}\n@@ -0,0 +1 @@\n+pwned\n");
        assert!(call(&patch_tool(&fx), json!({ "patch": create })).await.is_err(), "{bad}");
    }
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn apply_patch_keeps_crlf_and_finds_shifted_hunks() {
    let fx = fixture();
    let path = fx.root.join("win.txt");
    fs::write(&path, "header\r\nextra\r\nalpha\r\nbeta\r\ngamma\r\n").unwrap();
    let patch = "--- a/win.txt\n+++ b/win.txt\n@@ -2,3 +2,3 @@\n alpha\n-beta\n+BETA\n gamma\n";
    let out = call(&patch_tool(&fx), json!({ "patch": patch })).await.unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "header\r\nextra\r\nalpha\r\nBETA\r\ngamma\r\n");
    assert!(
        out.content.contains("hunk 1 matched 1 lines below where its header said"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn apply_patch_refuses_what_it_cannot_do_cleanly() {
    let fx = fixture();
    let p = patch_tool(&fx);
    let cases = [
        ("--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+x\n", "already exists"),
        ("--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-a\n+b\n", "does not exist"),
        (
            "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-notes\n\\ No newline at end of file\n+n\n--- a/link_file_in\n+++ b/link_file_in\n@@ -1 +1 @@\n-notes\n\\ No newline at end of file\n+m\n",
            "are the same file",
        ),
        ("not a patch", "the patch was not applied: the patch contains no file changes"),
    ];
    for (patch, expected) in cases {
        let msg = failed(call(&p, json!({ "patch": patch })).await);
        assert!(msg.contains(expected), "{patch:?}: {msg}");
    }
    fs::write(fx.root.join("bin.dat"), b"a\0b\n").unwrap();
    let msg = failed(
        call(&p, json!({"patch": "--- a/bin.dat\n+++ b/bin.dat\n@@ -1 +1 @@\n-a\n+b\n"})).await,
    );
    assert!(msg.contains("bin.dat cannot be patched") && msg.contains("binary"), "{msg}");
    let huge = format!("--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+{}\n", "y".repeat(60 * 1024));
    let msg = failed(call(&p, json!({ "patch": huge })).await);
    assert!(msg.contains("over the 51200-byte limit"), "{msg}");
}

#[tokio::test]
async fn apply_patch_takes_the_forms_other_tools_write() {
    let fx = fixture();
    // `diff -u x.orig x`: the `---` name does not exist, the `+++` one does (GNU patch's choice).
    fs::write(fx.root.join("x"), "one\ntwo\n").unwrap();
    let patch = "--- x.orig\t2024-05-01 10:00:00.000000000 +0200\n+++ x  \n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n";
    call(&patch_tool(&fx), json!({ "patch": patch })).await.unwrap();
    assert_eq!(fs::read_to_string(fx.root.join("x")).unwrap(), "one\nTWO\n");
    // Subversion's and Mercurial's headers, a CRLF patch on a CRLF file.
    fs::write(fx.root.join("w.txt"), "a\r\nb\r\n").unwrap();
    let patch = "Index: w.txt\r\n===================================================================\r\n--- w.txt\t(revision 3)\r\n+++ w.txt\t(working copy)\r\n@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+B\r\n";
    call(&patch_tool(&fx), json!({ "patch": patch })).await.unwrap();
    assert_eq!(fs::read_to_string(fx.root.join("w.txt")).unwrap(), "a\r\nB\r\n");
    fs::write(fx.root.join("h.txt"), "x\n").unwrap();
    let patch = "diff -r 1a2b3c4d5e6f h.txt\n--- a/h.txt\tThu Jan 01 00:00:00 1970 +0000\n+++ b/h.txt\tThu Jan 01 00:00:00 1970 +0000\n@@ -1 +1 @@\n-x\n+y\n";
    call(&patch_tool(&fx), json!({ "patch": patch })).await.unwrap();
    assert_eq!(fs::read_to_string(fx.root.join("h.txt")).unwrap(), "y\n");
    // Neither name exists: an error naming the first, nothing written.
    let patch = "--- nope.orig\n+++ nope\n@@ -1 +1 @@\n-a\n+b\n";
    assert!(call(&patch_tool(&fx), json!({ "patch": patch })).await.is_err());
    assert!(!fx.root.join("nope").exists());
}

/// The 1.5B model wrote `@@ -1,2 +1,3 @@\nmilk\neggs\n+bread` for "add the line
/// 'bread' at the end of shopping.txt": no file headers, context without its leading space.
/// With `path` the hunks are that file's; the bare context lines must still match the file.
#[tokio::test]
async fn a_headerless_patch_changes_the_path_given_with_it() {
    let fx = fixture();
    let p = patch_tool(&fx);
    let list = fx.root.join("shopping.txt");
    fs::write(&list, "milk\neggs\n").unwrap();
    let hunk = "@@ -1,2 +1,3 @@\nmilk\neggs\n+bread";
    // Without `path`, the error says how to name the file; nothing is written.
    let msg = failed(call(&p, json!({ "patch": hunk })).await);
    assert!(msg.contains("give apply_patch the file as \"path\""), "{msg}");
    assert_eq!(fs::read_to_string(&list).unwrap(), "milk\neggs\n");
    // Bare context that does not match the file changes nothing either.
    let wrong = "@@ -1,2 +1,3 @@\nmilk\nham\n+bread";
    let msg = failed(call(&p, json!({ "patch": wrong, "path": "shopping.txt" })).await);
    assert!(msg.contains("ham"), "{msg}");
    assert_eq!(fs::read_to_string(&list).unwrap(), "milk\neggs\n");
    let out = call(&p, json!({ "patch": hunk, "path": "shopping.txt" })).await.unwrap();
    assert_eq!(out.content, "Applied the patch to 1 file:\n  M shopping.txt (+1 -0)");
    assert_eq!(fs::read_to_string(&list).unwrap(), "milk\neggs\nbread\n");
    // A patch with headers for another file than `path`: refused, nothing written.
    let headed = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-notes\n+n\n";
    let msg = failed(call(&p, json!({ "patch": headed, "path": "shopping.txt" })).await);
    assert!(
        msg.contains("\"path\" is shopping.txt, but the patch's headers name notes.txt"),
        "{msg}"
    );
    // The same file named two ways (an absolute header, a relative `path`) is one file.
    let absolute =
        format!("--- {0}\n+++ {0}\n@@ -3 +3 @@\n-bread\n+rye bread\n", fx.abs("shopping.txt"));
    call(&p, json!({ "patch": absolute, "path": "./shopping.txt" })).await.unwrap();
    assert_eq!(fs::read_to_string(&list).unwrap(), "milk\neggs\nrye bread\n");
    // `path` goes through the path guard like every other name.
    let outside = json!({ "patch": "@@ -1 +1 @@\n-x\n+y\n", "path": "/etc/hostname" });
    match call(&p, outside).await {
        Err(ToolError::Refused { reason }) => assert!(reason.contains("outside"), "{reason}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    for bad in [json!(5), json!(""), json!("a\nb")] {
        let msg = failed(call(&p, json!({ "patch": hunk, "path": bad })).await);
        assert!(msg.contains("\"path\" must be a file name on one line"), "{msg}");
    }
}
