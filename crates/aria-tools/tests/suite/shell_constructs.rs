//! The shell constructs models write, run end to end without a shell: heredocs and
//! here-strings as standard input, `cd`, `$(…)`, builtins evaluated inside ARIA, `[ … ]`,
//! `export`/`unset`, and `$TMPDIR`; and the dangerous inner commands that are never run.

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
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    fs::create_dir_all(root.join("sub/deeper")).unwrap();
    fs::create_dir_all(base.join("outside")).unwrap();
    fs::write(base.join("outside/secret.txt"), "outside\n").unwrap();
    fs::write(root.join("fruits.txt"), "pear\napple\nfig\napple\n").unwrap();
    fs::write(root.join("sub/inner.txt"), "inner\n").unwrap();
    fs::write(root.join("list.txt"), "fruits.txt\nsub/inner.txt\n").unwrap();
    let guard = PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap();
    Env { _tmp: tmp, root, tool: ShellExecute::new(Arc::new(guard)) }
}

async fn run(tool: &ShellExecute, command: &str) -> Result<ToolOutput, ToolError> {
    tool.call(json!({ "command": command }), &ToolContext::default()).await
}

async fn stdout(tool: &ShellExecute, command: &str) -> String {
    let out = run(tool, command).await.unwrap_or_else(|e| panic!("{command}: {e:?}"));
    out.content
}

fn tier(tool: &ShellExecute, command: &str) -> Tier {
    tool.tier(&json!({ "command": command }))
}

#[tokio::test]
async fn a_heredoc_writes_a_file_literally() {
    let e = env();
    let line = "cat > notes.md <<'EOF'\n# Notes\ncost: $5 `not run` $(rm -rf .)\nEOF";
    assert_eq!(tier(&e.tool, line), Tier::RecoverableWrite);
    assert_eq!(stdout(&e.tool, line).await, "exit status: 0\n");
    let written = fs::read_to_string(e.root.join("notes.md")).unwrap();
    assert_eq!(written, "# Notes\ncost: $5 `not run` $(rm -rf .)\n");
    assert!(e.root.join("fruits.txt").exists());
    // Unquoted delimiter without expansions, `<<-` and commands after the delimiter.
    let out = stdout(&e.tool, "cat <<EOF\nplain\nEOF\necho after").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\nplain\nafter\n");
    let out = stdout(&e.tool, "sort <<-EOF\n\tpear\n\tapple\n\tEOF").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\napple\npear\n");
}

#[tokio::test]
async fn a_heredoc_that_would_expand_is_refused_with_the_form_that_works() {
    let e = env();
    let reason = refused(run(&e.tool, "cat > f.txt <<EOF\n$HOME\nEOF").await);
    assert!(reason.contains("<<'EOF'"), "{reason}");
    assert!(!e.root.join("f.txt").exists());
}

#[tokio::test]
async fn a_literal_here_string_is_standard_input() {
    let e = env();
    let out = stdout(&e.tool, "grep -c apple <<< 'apple pie'").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\n1\n");
    let reason = refused(run(&e.tool, "grep x <<< \"$s\"").await);
    assert!(reason.contains("<<< 'text'"), "{reason}");
}

#[tokio::test]
async fn cd_moves_the_later_commands_and_stays_inside_the_root() {
    let e = env();
    let sub = e.root.join("sub");
    let out = stdout(&e.tool, "cd sub && pwd && cat inner.txt").await;
    assert_eq!(out, format!("exit status: 0\n--- stdout ---\n{}\ninner\n", sub.display()));
    let out = stdout(&e.tool, "(cd sub/deeper && pwd)").await;
    assert!(out.contains("sub/deeper\n"), "{out}");
    // Writes and redirects are judged and opened from the new directory.
    stdout(&e.tool, "cd sub && cat > made.txt <<'EOF'\nhere\nEOF").await;
    assert_eq!(fs::read_to_string(sub.join("made.txt")).unwrap(), "here\n");
    stdout(&e.tool, "cd sub && touch touched.txt").await;
    assert!(sub.join("touched.txt").exists());
    assert!(!e.root.join("touched.txt").exists());
    for line in [
        "cd .. && ls",
        "cd /etc && ls",
        "cd missing && ls",
        "cd fruits.txt && ls",
        "cd sub && cat ../../outside/secret.txt",
        "cd sub && ls > ../../outside/x.txt",
        "ls || cd sub",
    ] {
        assert!(run(&e.tool, line).await.is_err(), "{line} ran");
    }
    // A `cd` that did not run stops the line: nothing runs in a directory nobody checked.
    let out = stdout(&e.tool, "false && cd sub; touch stray.txt").await;
    assert!(out.contains("stopped"), "{out}");
    assert!(!e.root.join("stray.txt").exists() && !sub.join("stray.txt").exists());
}

#[tokio::test]
async fn a_read_only_substitution_runs_first_and_its_output_is_data() {
    let e = env();
    let out = stdout(&e.tool, "echo \"apples: $(grep -c apple fruits.txt)\"").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\napples: 2\n");
    let out = stdout(&e.tool, "wc -l $(cat list.txt)").await;
    assert!(out.contains("4 fruits.txt") && out.contains("1 sub/inner.txt"), "{out}");
    let out = stdout(&e.tool, "echo `echo a  b`-x").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\na b-x\n");
    // Output that looks like shell stays data.
    fs::write(e.root.join("evil.txt"), "; touch pwned.txt $(touch pwned2.txt)\n").unwrap();
    let out = stdout(&e.tool, "echo \"$(cat evil.txt)\" $(cat evil.txt)").await;
    assert!(out.contains("; touch pwned.txt $(touch pwned2.txt)"), "{out}");
    assert!(!e.root.join("pwned.txt").exists() && !e.root.join("pwned2.txt").exists());
    // A write-tier outer command runs on the substituted arguments.
    fs::write(e.root.join("names.txt"), "one.txt two.txt\n").unwrap();
    assert_eq!(tier(&e.tool, "touch $(cat names.txt)"), Tier::RecoverableWrite);
    stdout(&e.tool, "touch $(cat names.txt)").await;
    assert!(e.root.join("one.txt").exists() && e.root.join("two.txt").exists());
}

#[tokio::test]
async fn dangerous_inner_commands_are_never_run() {
    let e = env();
    for line in [
        "echo $(rm -rf fruits.txt)",
        "echo \"$(rm fruits.txt)\"",
        "ls `rm fruits.txt`",
        "echo $(curl -s http://127.0.0.1:9/x.sh)",
        "echo $(touch made.txt)",
        "echo $(echo $(rm fruits.txt))",
        "sudo $(touch made.txt)",
    ] {
        assert_eq!(tier(&e.tool, line), Tier::Blocked, "{line}");
        let reason = refused(run(&e.tool, line).await);
        assert!(reason.contains("own step"), "{line}: {reason}");
        assert!(e.root.join("fruits.txt").exists(), "{line} ran rm");
        assert!(!e.root.join("made.txt").exists(), "{line} ran touch");
    }
    // A substituted path is checked like a written one.
    fs::write(e.root.join("where.txt"), "../outside/secret.txt\n").unwrap();
    assert!(run(&e.tool, "cat $(cat where.txt)").await.is_err());
    // What a substitution reads outside the roots asks, like a read written directly.
    assert_eq!(tier(&e.tool, "echo $(cat ../outside/secret.txt)"), Tier::Irreversible);
}

#[tokio::test]
async fn builtins_run_without_a_program() {
    let e = env();
    let out = stdout(&e.tool, "command -v sort && type cd").await;
    assert!(out.contains("/sort\n") && out.contains("cd is a shell builtin\n"), "{out}");
    let out = stdout(&e.tool, "command -v no-such-program-aria || echo missing").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\nmissing\n");
    let out = stdout(&e.tool, "[ -f fruits.txt ] && echo file; test -d sub && echo dir").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\nfile\ndir\n");
    let out = stdout(&e.tool, "[ -f missing ] || echo none").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\nnone\n");
    let out = stdout(&e.tool, "printf '%s-%s\\n' a b; echo -n x; echo y").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\na-b\nxy\n");
    let out = stdout(&e.tool, "true && false || echo recovered").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\nrecovered\n");
}

#[tokio::test]
async fn export_and_unset_change_the_environment_of_the_rest_of_the_line() {
    let e = env();
    let out = stdout(&e.tool, "export LC_ALL=C && printenv LC_ALL").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\nC\n");
    let out = stdout(&e.tool, "export LC_ALL=C; unset LC_ALL; printenv LC_ALL || echo unset").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\nunset\n");
    for line in ["export PAGER=less && git log", "export GIT_DIR=x", "export NODE_OPTIONS=x"] {
        assert!(tier(&e.tool, line) >= Tier::Irreversible, "{line}");
    }
}

#[tokio::test]
async fn tmpdir_is_the_private_tmp_of_the_child() {
    let e = env();
    let out = run(&e.tool, "rm -rf \"$TMPDIR/aria-x\"").await.unwrap();
    assert!(out.content.starts_with("exit status: 0\n"), "{}", out.content);
    let out = stdout(&e.tool, "echo $TMPDIR").await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\n/tmp\n");
}

#[tokio::test]
async fn a_for_loop_over_literal_words_runs_its_body_per_word() {
    let e = env();
    let line = "for f in fruits.txt sub/inner.txt; do wc -l < \"$f\"; done; echo done";
    let out = stdout(&e.tool, line).await;
    assert_eq!(out, "exit status: 0\n--- stdout ---\n4\n1\ndone\n");
    stdout(&e.tool, "for n in a b; do touch \"$n.txt\"; done").await;
    assert!(e.root.join("a.txt").exists() && e.root.join("b.txt").exists());
    let reason = refused(run(&e.tool, "for f in *.txt; do cat $f; done").await);
    assert!(reason.contains("literal words"), "{reason}");
}
