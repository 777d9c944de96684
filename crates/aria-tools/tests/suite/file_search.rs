//! `file_search` through the `aria_api::Tool` contract, on a real tree:
//!
//! ```text
//! base/
//!   root/                          <- the allowed root
//!     .gitignore                   "ignored_dir/", "*.log"
//!     .ignore                      "skipme.txt"
//!     src/main.rs, src/lib.rs      matches
//!     app.log, ignored_dir/x.rs    matches, ignored by .gitignore
//!     skipme.txt                   match, ignored by .ignore
//!     .git/config                  match, never searched
//!     node_modules/pkg/index.js    match, never searched
//!     web/node_modules/x.js        match, never searched (at any depth)
//!     .hidden/h.txt, .hidden.txt   matches, only with hidden: true
//!     .env, config/credentials.json, keys/server.pem, config/.ssh/known_hosts
//!                                  matches in sensitive files, never searched
//!     binary.bin                   a match before a NUL byte: binary, skipped
//!     sub/.gitignore               "*.tmp"
//!     sub/a.tmp, sub/deep/c.tmp    ignored by sub/.gitignore
//!     sub/deep/b.txt               match
//!     link_out -> ../outside       symlink out of the root (directory)
//!     link_file_out -> ../outside/secret.txt
//!     link_in -> src               symlink inside: not followed either (no duplicates)
//!   outside/secret.txt             match, outside the root
//! ```

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::outcome::{failed, refused};
use aria_api::{Tier, Tool, ToolContext, ToolError, ToolOutput};
use aria_tools::{FileSearch, MAX_SEARCH_OUTPUT_BYTES, PathGuard, SensitivePatterns};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

struct Tree {
    _tmp: TempDir,
    base: PathBuf,
    root: PathBuf,
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    let w = |rel: &str, text: &str| write(&root.join(rel), text);
    w(".gitignore", "ignored_dir/\n*.log\n");
    w(".ignore", "skipme.txt\n");
    w("src/main.rs", "fn main() {\n    println!(\"NEEDLE one\");\n}\n");
    w("src/lib.rs", "// NEEDLE two\npub fn f() {}\n// needle three\n");
    w("app.log", "NEEDLE in a log\n");
    w("ignored_dir/x.rs", "NEEDLE in an ignored dir\n");
    w("skipme.txt", "NEEDLE in a .ignore'd file\n");
    w(".git/config", "NEEDLE in .git\n");
    w("node_modules/pkg/index.js", "NEEDLE in node_modules\n");
    w("web/node_modules/x.js", "NEEDLE in nested node_modules\n");
    w(".hidden/h.txt", "NEEDLE in a hidden dir\n");
    w(".hidden.txt", "NEEDLE in a hidden file\n");
    w(".env", "NEEDLE=in .env\n");
    w("config/credentials.json", "NEEDLE in credentials\n");
    w("keys/server.pem", "NEEDLE in a pem\n");
    w("config/.ssh/known_hosts", "NEEDLE in .ssh\n");
    write(&root.join("binary.bin"), b"NEEDLE before the NUL\n\x00\x01\x02 NEEDLE after\n");
    w("sub/.gitignore", "*.tmp\n");
    w("sub/a.tmp", "NEEDLE tmp\n");
    w("sub/deep/c.tmp", "NEEDLE deep tmp\n");
    w("sub/deep/b.txt", "NEEDLE deep\n");
    write(&base.join("outside/secret.txt"), "NEEDLE outside the root\n");
    symlink("../outside", root.join("link_out")).unwrap();
    symlink("../outside/secret.txt", root.join("link_file_out")).unwrap();
    symlink("src", root.join("link_in")).unwrap();
    Tree { _tmp: tmp, base, root }
}

impl Tree {
    fn tool(&self) -> FileSearch {
        let guard =
            PathGuard::new(std::slice::from_ref(&self.root), SensitivePatterns::default()).unwrap();
        FileSearch::new(Arc::new(guard))
    }
}

async fn call(tool: &FileSearch, args: Value) -> Result<ToolOutput, ToolError> {
    tool.call(args, &ToolContext::default()).await
}

async fn text(tool: &FileSearch, args: Value) -> String {
    call(tool, args).await.unwrap().content
}

// ---------------------------------------------------------------- what is searched

#[tokio::test]
async fn only_plain_text_files_that_no_rule_excludes_are_searched() {
    let t = tree();
    let out =
        call(&t.tool(), json!({"pattern": "NEEDLE", "case_insensitive": true})).await.unwrap();
    assert_eq!(
        out.content,
        "src/lib.rs:1: // NEEDLE two\n\
         src/lib.rs:3: // needle three\n\
         src/main.rs:2:     println!(\"NEEDLE one\");\n\
         sub/deep/b.txt:1: NEEDLE deep"
    );
    assert_eq!(out.details["matched_lines"], json!(4));
    assert_eq!(out.details["matched_files"], json!(3));
    assert_eq!(out.details["binary_files"], json!(1));
    assert_eq!(out.details["path"], json!(t.root.to_str().unwrap()));
}

#[tokio::test]
async fn hidden_true_adds_hidden_files_but_never_git_or_secrets() {
    let t = tree();
    let out = text(&t.tool(), json!({"pattern": "NEEDLE", "hidden": true})).await;
    assert!(out.contains(".hidden/h.txt:1: NEEDLE in a hidden dir"), "{out}");
    assert!(out.contains(".hidden.txt:1: NEEDLE in a hidden file"), "{out}");
    for never in [".git", "node_modules", ".env", "credentials", ".pem", ".ssh", "outside"] {
        assert!(!out.contains(never), "{never} leaked:\n{out}");
    }
}

#[tokio::test]
async fn gitignore_and_ignore_files_are_honoured_without_a_git_repository() {
    let t = tree();
    let out = text(&t.tool(), json!({"pattern": "NEEDLE"})).await;
    for ignored in ["app.log", "ignored_dir", "skipme.txt", "a.tmp", "c.tmp"] {
        assert!(!out.contains(ignored), "{ignored} should be ignored:\n{out}");
    }
    // The same files are there to be found when ignore files are out of the picture.
    fs::remove_file(t.root.join(".gitignore")).unwrap();
    fs::remove_file(t.root.join(".ignore")).unwrap();
    let out = text(&t.tool(), json!({"pattern": "NEEDLE"})).await;
    for found in ["app.log:1:", "ignored_dir/x.rs:1:", "skipme.txt:1:"] {
        assert!(out.contains(found), "{found} missing:\n{out}");
    }
}

#[tokio::test]
async fn ignore_files_above_a_subdirectory_start_still_apply() {
    let t = tree();
    write(&t.root.join("sub/deep/x.log"), "NEEDLE log in deep\n");
    let tool = t.tool();
    // sub/.gitignore (*.tmp) and the root's (*.log) both sit above the start.
    assert_eq!(
        text(&tool, json!({"pattern": "NEEDLE", "path": "sub/deep"})).await,
        "sub/deep/b.txt:1: NEEDLE deep"
    );
    assert_eq!(
        text(&tool, json!({"pattern": "NEEDLE", "path": "sub"})).await,
        "sub/deep/b.txt:1: NEEDLE deep"
    );
    // A file named as the path is searched even if a rule would skip it in a walk.
    assert_eq!(
        text(&tool, json!({"pattern": "NEEDLE", "path": "sub/deep/c.tmp"})).await,
        "sub/deep/c.tmp:1: NEEDLE deep tmp"
    );
}

#[tokio::test]
async fn git_and_node_modules_are_skipped_even_when_everything_else_is_included() {
    let t = tree();
    let out = text(&t.tool(), json!({"pattern": "NEEDLE", "hidden": true, "glob": "*"})).await;
    assert!(!out.contains(".git/") && !out.contains("node_modules"), "{out}");
    assert!(out.contains(".hidden.txt"), "{out}");
}

#[tokio::test]
async fn sensitive_files_are_never_opened_even_when_named_by_glob() {
    let t = tree();
    let tool = t.tool();
    for glob in [".env", "*.pem", "credentials*", "**/.ssh/*"] {
        let out = text(&tool, json!({"pattern": "NEEDLE", "hidden": true, "glob": glob})).await;
        assert!(out.starts_with("No matches"), "{glob}: {out}");
    }
    // Naming one as the path is refused by the path guard with its reason.
    let reason = refused(call(&tool, json!({"pattern": "x", "path": ".env"})).await);
    assert!(reason.contains("sensitive file"), "{reason}");
    let reason = refused(call(&tool, json!({"pattern": "x", "path": "config/.ssh"})).await);
    assert!(reason.contains("sensitive file"), "{reason}");
}

#[tokio::test]
async fn a_binary_file_contributes_no_lines_even_before_its_nul_byte() {
    let t = tree();
    let out =
        call(&t.tool(), json!({"pattern": "before the NUL", "path": "binary.bin"})).await.unwrap();
    assert_eq!(
        out.content,
        format!(
            "No matches for \"before the NUL\" in {} (1 files searched).\n(1 binary files were not searched.)",
            t.root.join("binary.bin").display()
        )
    );
}

#[tokio::test]
async fn symlinks_are_not_followed_out_of_the_root_or_inside_it() {
    let t = tree();
    let tool = t.tool();
    let out = text(&tool, json!({"pattern": "outside the root", "hidden": true})).await;
    assert!(out.starts_with("No matches"), "{out}");
    // link_in -> src would duplicate src's hits if it were followed.
    let out = text(&tool, json!({"pattern": "NEEDLE one"})).await;
    assert_eq!(out, "src/main.rs:2:     println!(\"NEEDLE one\");");
    // Naming the links as the path is refused: they lead out of the root.
    let reason = refused(call(&tool, json!({"pattern": "x", "path": "link_out"})).await);
    assert!(reason.contains("outside the allowed roots"), "{reason}");
    let reason = refused(call(&tool, json!({"pattern": "x", "path": "link_file_out"})).await);
    assert!(reason.contains("outside the allowed roots"), "{reason}");
}

#[tokio::test]
async fn paths_outside_the_roots_are_refused() {
    let t = tree();
    let tool = t.tool();
    let outside = t.base.join("outside");
    for path in ["../outside", outside.to_str().unwrap(), "/etc", "sub/../../outside"] {
        let reason = refused(call(&tool, json!({"pattern": "NEEDLE", "path": path})).await);
        assert!(
            reason.contains("outside the allowed roots") || reason.contains("climbs out"),
            "{path}: {reason}"
        );
    }
    let message = failed(call(&tool, json!({"pattern": "NEEDLE", "path": "nope"})).await);
    assert!(message.contains("does not exist"), "{message}");
}

// ---------------------------------------------------------------- patterns and options

#[tokio::test]
async fn a_bad_regex_is_a_clear_failure() {
    let t = tree();
    let message = failed(call(&t.tool(), json!({"pattern": "println!("})).await);
    assert!(message.contains("\"println!(\" is not a valid regular expression"), "{message}");
    assert!(message.contains("unclosed group"), "{message}");
    // The same text as a fixed string finds the line.
    let out = text(&t.tool(), json!({"pattern": "println!(", "fixed_strings": true})).await;
    assert_eq!(out, "src/main.rs:2:     println!(\"NEEDLE one\");");
}

#[tokio::test]
async fn a_bad_glob_is_a_clear_failure() {
    let t = tree();
    let message = failed(call(&t.tool(), json!({"pattern": "x", "glob": "src/{a,b"})).await);
    assert!(message.contains("the glob \"src/{a,b\" is invalid"), "{message}");
}

#[tokio::test]
async fn globs_select_and_exclude_files() {
    let t = tree();
    let tool = t.tool();
    // A glob narrows: skipme.txt (.ignore) and .hidden.txt stay skipped although they match.
    let out = text(&tool, json!({"pattern": "NEEDLE", "glob": "*.txt"})).await;
    assert_eq!(out, "sub/deep/b.txt:1: NEEDLE deep");
    let out = text(&tool, json!({"pattern": "NEEDLE", "glob": "!*.rs"})).await;
    assert_eq!(out, "sub/deep/b.txt:1: NEEDLE deep");
    let out = text(&tool, json!({"pattern": "NEEDLE", "glob": "src/**/*.rs"})).await;
    assert_eq!(out, "src/lib.rs:1: // NEEDLE two\nsrc/main.rs:2:     println!(\"NEEDLE one\");");
}

#[tokio::test]
async fn case_is_respected_unless_asked_otherwise() {
    let t = tree();
    let out = text(&t.tool(), json!({"pattern": "needle", "path": "src"})).await;
    assert_eq!(out, "src/lib.rs:3: // needle three");
}

// ---------------------------------------------------------------- bounds and order

fn many_files(root: &Path, files: usize, lines: usize) {
    for f in 0..files {
        let body: String = (0..lines).map(|l| format!("hit {f} {l}\n")).collect();
        write(&root.join(format!("many/d{}/f{f:03}.txt", f % 7)), body);
    }
}

#[tokio::test]
async fn output_is_bounded_and_says_how_many_more() {
    let t = tree();
    many_files(&t.root, 60, 10);
    let out = call(&t.tool(), json!({"pattern": "^hit", "path": "many"})).await.unwrap();
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines.len(), 201, "{}", out.content);
    assert_eq!(
        lines[200],
        "… 400 more matching lines not shown (600 matching lines in 60 files in all). Narrow \
         the search: a more specific pattern, a subdirectory as \"path\", or a \"glob\" such as \
         \"*.rs\"."
    );
    assert_eq!(out.details["shown"], json!(200));
    let out = text(&t.tool(), json!({"pattern": "^hit", "path": "many", "max_results": 3})).await;
    assert_eq!(
        out.lines().take(3).collect::<Vec<_>>(),
        [
            "many/d0/f000.txt:1: hit 0 0",
            "many/d0/f000.txt:2: hit 0 1",
            "many/d0/f000.txt:3: hit 0 2"
        ]
    );
}

#[tokio::test]
async fn long_lines_are_cut_and_total_output_stays_under_the_byte_bound() {
    let t = tree();
    let line = format!("{}NEEDLE{}\n", "x".repeat(3000), "y".repeat(3000));
    write(&t.root.join("wide/w.txt"), line.repeat(1000));
    let out =
        text(&t.tool(), json!({"pattern": "NEEDLE", "path": "wide", "max_results": 1000})).await;
    assert!(out.len() <= MAX_SEARCH_OUTPUT_BYTES + 400, "{}", out.len());
    let first = out.lines().next().unwrap();
    assert!(first.starts_with("wide/w.txt:1: …") && first.contains("NEEDLE"), "{first}");
    assert!(first.chars().count() < 240, "{first}");
    assert!(out.lines().last().unwrap().contains("more matching lines not shown"), "{out}");
}

#[tokio::test]
async fn results_are_sorted_by_path_then_line_whatever_the_thread_schedule() {
    let t = tree();
    many_files(&t.root, 120, 3);
    let guard =
        PathGuard::new(std::slice::from_ref(&t.root), SensitivePatterns::default()).unwrap();
    let tool = FileSearch::new(Arc::new(guard)).with_threads(4);
    let args = json!({"pattern": "^hit 1", "path": "many", "max_results": 1000});
    let first = text(&tool, args.clone()).await;
    let mut sorted: Vec<(String, u64)> = first
        .lines()
        .map(|l| {
            let mut parts = l.splitn(3, ':');
            (parts.next().unwrap().to_owned(), parts.next().unwrap().parse().unwrap())
        })
        .collect();
    let as_printed = sorted.clone();
    sorted.sort_by(|a, b| Path::new(&a.0).cmp(Path::new(&b.0)).then(a.1.cmp(&b.1)));
    assert_eq!(as_printed, sorted);
    // Files 1, 10-19 and 100-119: 31 files, 3 lines each.
    assert_eq!(as_printed.len(), 93);
    for _ in 0..5 {
        assert_eq!(text(&tool, args.clone()).await, first);
    }
}

#[tokio::test]
async fn names_with_control_characters_cannot_forge_result_lines() {
    let t = tree();
    write(&t.root.join("evil\nsrc/main.rs:1: fake"), "NEEDLE real\n");
    let out = text(&t.tool(), json!({"pattern": "NEEDLE real"})).await;
    assert_eq!(out, "evil\\nsrc/main.rs:1: fake:1: NEEDLE real");
}

#[tokio::test]
async fn a_search_out_of_time_stops_and_says_its_results_are_incomplete() {
    let t = tree();
    let guard =
        PathGuard::new(std::slice::from_ref(&t.root), SensitivePatterns::default()).unwrap();
    let tool = FileSearch::new(Arc::new(guard)).with_time_budget(Duration::ZERO);
    let out = call(&tool, json!({"pattern": "NEEDLE"})).await.unwrap();
    assert!(out.content.contains("The search stopped after 0 s"), "{}", out.content);
    assert_eq!(out.details["stopped_early"], json!(true));
}

// ---------------------------------------------------------------- contract

#[test]
fn spec_and_tier_are_the_public_contract() {
    let t = tree();
    let tool = t.tool();
    let spec = tool.spec();
    assert_eq!(spec.name, "file_search");
    assert_eq!(spec.parameters["properties"]["pattern"]["type"], json!("string"));
    assert_eq!(spec.parameters["properties"]["path"]["type"], json!("string"));
    assert_eq!(spec.parameters["required"], json!(["pattern"]));
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
    assert!(spec.description.contains(t.root.to_str().unwrap()), "{}", spec.description);
    assert!(spec.description.len() < 600, "too long for a model: {}", spec.description);
    assert_eq!(tool.tier(&json!({"pattern": "x"})), Tier::Read);
}

#[tokio::test]
async fn a_second_root_is_searched_by_absolute_path_and_shown_absolute() {
    let t = tree();
    let second = t.base.join("second");
    write(&second.join("notes.md"), "NEEDLE in the second root\n");
    let guard =
        PathGuard::new(&[t.root.clone(), second.clone()], SensitivePatterns::default()).unwrap();
    let tool = FileSearch::new(Arc::new(guard));
    let out = text(&tool, json!({"pattern": "NEEDLE", "path": second.to_str().unwrap()})).await;
    assert_eq!(out, format!("{}:1: NEEDLE in the second root", second.join("notes.md").display()));
}

/// A small model searched notes.txt for a phrase of the question, found nothing and
/// answered "No matches". The empty result says what to try next.
#[tokio::test]
async fn no_match_in_text_files_suggests_a_single_word_or_reading_the_file() {
    let t = tree();
    // More text files than are ever shown whole.
    write(&t.root.join("docs/a.md"), "a\n");
    write(&t.root.join("docs/b.md"), "b\n");
    let out = text(&t.tool(), json!({"pattern": "meeting moved to", "path": "."})).await;
    assert!(out.starts_with("No matches for \"meeting moved to\""), "{out}");
    assert!(out.contains("one distinctive word") && out.contains("file_read"), "{out}");
}

/// A small model searched config.toml for `port=\d+`, found nothing (the file says
/// `port = 8088`) and answered "No matches". A search that covered only a few short text files
/// and matched nothing shows their text.
#[tokio::test]
async fn no_match_in_a_few_short_files_shows_their_text() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    write(&root.join("config.toml"), "[server]\nport = 8088\n");
    let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    let tool = FileSearch::new(Arc::new(guard));
    let out = text(&tool, json!({"pattern": "port=\\d+"})).await;
    assert!(out.starts_with("No matches for \"port=\\\\d+\""), "{out}");
    assert!(out.ends_with("answer from it:\n--- config.toml\n[server]\nport = 8088"), "{out}");
    assert!(!out.contains("one distinctive word"), "{out}");

    // Three short files: all shown, sorted by path.
    write(&root.join("b/notes.txt"), "no newline at the end");
    write(&root.join("a.md"), "# A\n");
    let out = text(&tool, json!({"pattern": "absent"})).await;
    let a = out.find("--- a.md\n# A\n--- b/notes.txt\nno newline at the end\n--- config.toml");
    assert!(a.is_some(), "{out}");

    // A fourth file: too many to show, the advice instead.
    write(&root.join("d.txt"), "d\n");
    let out = text(&tool, json!({"pattern": "absent"})).await;
    assert!(!out.contains("---") && out.contains("one distinctive word"), "{out}");

    // A long file is never shown whole.
    let long = "filler line\n".repeat(200);
    write(&root.join("d.txt"), &long);
    let out = text(&tool, json!({"pattern": "absent", "path": "d.txt"})).await;
    assert!(!out.contains("filler") && out.contains("one distinctive word"), "{out}");

    // A match shows only the matching lines.
    let out = text(&tool, json!({"pattern": "8088"})).await;
    assert_eq!(out, "config.toml:2: port = 8088");
}

/// Sensitive and binary files are never shown whole: the search skips them, and a skipped
/// file means the texts are not all it covered.
#[tokio::test]
async fn whole_texts_never_include_skipped_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    write(&root.join(".env"), "TOKEN=abc\n");
    write(&root.join("blob.bin"), b"abc\0def");
    write(&root.join("notes.txt"), "plain\n");
    let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    let tool = FileSearch::new(Arc::new(guard));
    let out = text(&tool, json!({"pattern": "zzz", "hidden": true})).await;
    assert!(!out.contains("TOKEN") && !out.contains("def"), "{out}");
    assert!(out.contains("--- notes.txt\nplain"), "{out}");
}

/// Models end patterns with a line break (`moved to: (.*)\n`); a line search matches to the
/// end of the line anyway. One inside a pattern cannot match and says why.
#[tokio::test]
async fn a_final_line_break_in_the_pattern_is_dropped() {
    let t = tree();
    for pattern in ["NEEDLE one\"\\);\\n", "NEEDLE one\"\\);\\r\\n", "NEEDLE one\"\\);\n"] {
        let out = text(&t.tool(), json!({"pattern": pattern, "path": "src"})).await;
        assert_eq!(out, "src/main.rs:2:     println!(\"NEEDLE one\");", "{pattern:?}");
    }
    // An escaped backslash then `n` is text, not a line break.
    write(&t.root.join("src/win.txt"), "C:\\new\n");
    let out = text(&t.tool(), json!({"pattern": "C:\\\\n", "path": "src"})).await;
    assert_eq!(out, "src/win.txt:1: C:\\new");
    let m = failed(call(&t.tool(), json!({"pattern": "one\\ntwo"})).await);
    assert!(m.contains("one line"), "{m}");
    let m = failed(call(&t.tool(), json!({"pattern": "\\n"})).await);
    assert!(m.contains("only a line break"), "{m}");
}
