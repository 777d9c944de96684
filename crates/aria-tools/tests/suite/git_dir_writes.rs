//! Nothing inside a git directory is written by ARIA's tools: `.git/HEAD`, the index, objects,
//! refs, `info/exclude`... A write there can destroy the repository's history, and a git snapshot
//! cannot capture `.git` itself, so the "undo with: aria rollback" the write promised could not
//! work. Reads stay allowed.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext};
use aria_tools::{
    ApplyPatch, FileWrite, PathError, PathGuard, PathRefusal, Resolved, SensitivePatterns,
    ShellExecute,
};
use git2::Repository;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture::fixture;
use super::outcome::refused;
use super::write_snapshot::tree;

fn refusal(result: Result<Resolved, PathError>) -> PathRefusal {
    match result {
        Err(PathError::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// No sensitive patterns at all: the protection must not depend on them.
fn unguarded(root: &Path) -> PathGuard {
    PathGuard::new(&[root.to_path_buf()], SensitivePatterns::from_globs(&[]).unwrap()).unwrap()
}

/// A real repository in the root, with one commit, a pack file, a symlink to `.git` and a
/// second working tree whose `.git` is a file pointing to a git directory elsewhere in the root.
fn repo_root(root: &Path) {
    let repo = Repository::init(root).unwrap();
    write(&root.join("README.md"), "hello\n");
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("README.md")).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("U", "u@example.com").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[]).unwrap();
    write(&root.join(".git/objects/pack/pack-0123abcd.pack"), "PACK");
    symlink(".git", root.join("dotgit")).unwrap();
    // `git init --separate-git-dir=store/wt.git wt`: `wt/.git` is a file naming the gitdir.
    Repository::init_bare(root.join("store/wt.git")).unwrap();
    write(&root.join("wt/.git"), &format!("gitdir: {}\n", root.join("store/wt.git").display()));
}

const INSIDE_GIT: &[&str] = &[
    ".git",
    ".git/HEAD",
    ".git/index",
    ".git/packed-refs",
    ".git/description",
    ".git/info/exclude",
    ".git/refs/heads/main",
    ".git/refs/heads/new-branch",
    ".git/objects/pack/pack-0123abcd.pack",
    ".git/objects/pack/pack-new.idx",
    ".git/objects/ab/cdef0123",
    ".git/logs/HEAD",
    ".git/new-dir/deeper/file",
    ".GIT/HEAD",
    ".Git/Index",
    "./.git/HEAD",
    "wt/../.git/HEAD",
    "missing/../.git/HEAD",
    "dotgit/HEAD",
    "dotgit/objects/pack/x.pack",
    "vendor/lib/.git/HEAD",
    "wt/.git",
    "store/wt.git/HEAD",
    "store/wt.git/refs/heads/main",
    "store/wt.git/objects/pack/p.pack",
];

#[test]
fn every_path_inside_a_git_directory_is_refused_for_writes() {
    let fx = fixture();
    repo_root(&fx.root);
    let g = unguarded(&fx.root);
    for input in INSIDE_GIT {
        let r = refusal(g.resolve_for_create(input));
        assert!(matches!(r, PathRefusal::Protected { .. }), "{input}: {r:?}");
        let reason = r.reason();
        assert!(reason.contains("protected for writes"), "{input}: {reason}");
        assert!(reason.contains("git directory"), "{input}: {reason}");
    }
    let abs = fx.abs(".git/HEAD");
    assert!(matches!(refusal(g.resolve_for_create(&abs)), PathRefusal::Protected { .. }));
    for input in [".git/HEAD", ".git/index", "dotgit/HEAD", "wt/.git", "store/wt.git/HEAD"] {
        let r = refusal(g.resolve_existing_for_write(input));
        assert!(matches!(r, PathRefusal::Protected { .. }), "{input}: {r:?}");
    }
    // Reading stays allowed, and so does everything next to the git directory.
    for input in [".git/HEAD", ".git/index", "dotgit/HEAD", "store/wt.git/HEAD", "wt/.git"] {
        assert!(g.resolve_existing(input).is_ok(), "{input} is readable");
    }
    for input in ["README.md", ".gitignore", ".gitattributes", ".github/x.yml", "wt/file.txt"] {
        let r = g.resolve_for_create(input);
        assert!(r.is_ok(), "{input}: {r:?}");
    }
}

#[tokio::test]
async fn file_write_refuses_every_file_in_the_git_directory_and_writes_nothing() {
    let fx = fixture();
    repo_root(&fx.root);
    let before = tree(&fx.base);
    let tool = FileWrite::new(Arc::new(unguarded(&fx.root)));
    for path in [
        ".git/objects/pack/pack-0123abcd.pack",
        ".git/HEAD",
        ".git/index",
        ".git/info/exclude",
        ".git/refs/heads/main",
        "store/wt.git/HEAD",
    ] {
        let args = json!({"path": path, "content": "x"});
        let reason = refused(tool.call(args, &ToolContext::default()).await);
        assert!(reason.contains("git directory"), "{path}: {reason}");
        let dry = ToolContext { dry_run: true, ..ToolContext::default() };
        assert!(tool.call(json!({"path": path, "content": "x"}), &dry).await.is_err(), "{path}");
    }
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn apply_patch_refuses_to_create_change_or_delete_files_in_the_git_directory() {
    let fx = fixture();
    repo_root(&fx.root);
    let before = tree(&fx.base);
    let tool = ApplyPatch::new(Arc::new(unguarded(&fx.root)));
    let head = fs::read_to_string(fx.root.join(".git/HEAD")).unwrap();
    let head = head.trim_end();
    let patches = [
        format!("--- a/.git/HEAD\n+++ b/.git/HEAD\n@@ -1 +1 @@\n-{head}\n+ref: refs/heads/evil\n"),
        "--- /dev/null\n+++ b/.git/info/exclude\n@@ -0,0 +1 @@\n+*\n".to_owned(),
        format!("--- a/.git/HEAD\n+++ /dev/null\n@@ -1 +0,0 @@\n-{head}\n"),
    ];
    for patch in patches {
        let reason = refused(tool.call(json!({ "patch": patch }), &ToolContext::default()).await);
        assert!(reason.contains("git directory"), "{patch}: {reason}");
    }
    assert_eq!(tree(&fx.base), before);
}

#[tokio::test]
async fn shell_commands_that_name_the_git_directory_as_written_are_refused() {
    let fx = fixture();
    repo_root(&fx.root);
    let before = tree(&fx.base);
    let tool = ShellExecute::new(Arc::new(unguarded(&fx.root)));
    for command in [
        "echo x > .git/HEAD",
        "echo x >> .git/info/exclude",
        "printf x > dotgit/index",
        "cd .git && echo x > HEAD",
        "rm -rf .git",
        "mv .git x",
        "cp README.md .git/HEAD",
        "touch .git/objects/pack/new.pack",
    ] {
        let out = tool.call(json!({ "command": command }), &ToolContext::default()).await;
        let reason = refused(out);
        assert!(reason.contains("git directory"), "{command}: {reason}");
    }
    assert_eq!(tree(&fx.base), before);
}

/// What the classifier cannot see (git itself writing its directory) the sandbox stops: `.git`
/// is mounted read-only even for write-tier commands.
#[tokio::test]
async fn a_write_tier_command_cannot_modify_the_git_directory_in_the_sandbox() {
    let fx = fixture();
    repo_root(&fx.root);
    let tool = ShellExecute::new(Arc::new(unguarded(&fx.root)));
    let command = "git switch -c evil";
    assert_eq!(tool.tier(&json!({ "command": command })), Tier::RecoverableWrite);
    let head = fs::read(fx.root.join(".git/HEAD")).unwrap();
    let git_before = tree(&fx.root.join(".git"));
    let out = tool.call(json!({ "command": command }), &ToolContext::default()).await;
    assert_eq!(fs::read(fx.root.join(".git/HEAD")).unwrap(), head, "{out:?}");
    assert_eq!(tree(&fx.root.join(".git")), git_before, "{out:?}");
    assert!(!fx.root.join(".git/refs/heads/evil").exists(), "{out:?}");
    let content = out.map(|o| o.content).unwrap_or_else(|e| e.to_string());
    assert!(content.contains("Read-only file system"), "{content}");
    // A git directory elsewhere in the root (named by a `.git` file) is read-only too.
    let head = fs::read(fx.root.join("store/wt.git/HEAD")).unwrap();
    let command = "cd wt && git symbolic-ref HEAD refs/heads/evil";
    let out = tool.call(json!({ "command": command }), &ToolContext::default()).await;
    assert_eq!(fs::read(fx.root.join("store/wt.git/HEAD")).unwrap(), head, "{out:?}");
}
