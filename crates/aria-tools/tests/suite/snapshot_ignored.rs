//! A write to a git-ignored file is undoable like any other: the snapshot taken before it captures
//! that file's current content even though it is ignored, so `aria rollback` brings it back. The
//! other ignored files stay out of snapshots.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use aria_api::{Tool, ToolContext};
use aria_tools::{
    ApplyPatch, FileWrite, PathGuard, SensitivePatterns, ShellExecute, SnapshotOptions, Snapshots,
};
use git2::{IndexAddOption, Repository, Signature};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

struct Env {
    _tmp: TempDir,
    root: std::path::PathBuf,
    guard: Arc<PathGuard>,
    snapshots: Snapshots,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("root");
    fs::create_dir(&root).unwrap();
    let guard =
        Arc::new(PathGuard::new(&[root.to_path_buf()], SensitivePatterns::default()).unwrap());
    let snapshots = Snapshots::new(Arc::clone(&guard), SnapshotOptions::default());
    Env { _tmp: tmp, root, guard, snapshots }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn read(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(rel)).unwrap()
}

fn commit_all(repo: &Repository) {
    let mut index = repo.index().unwrap();
    index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("User", "user@example.com").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "Initial", &tree, &[]).unwrap();
}

impl Env {
    /// What the governed loop does for a recoverable write: snapshot, then run the call.
    /// Returns the restore point's id.
    async fn governed(&self, tool: &dyn Tool, args: Value) -> String {
        let points = self.snapshots.before_write(&tool.spec().name, &args, "s1").unwrap();
        assert_eq!(points.len(), 1, "{points:?}");
        tool.call(args, &ToolContext::default()).await.unwrap();
        points[0].id.0.clone()
    }

    fn file_write(&self) -> FileWrite {
        FileWrite::new(Arc::clone(&self.guard))
    }

    fn in_snapshot(&self, id: &str, rel: &str) -> bool {
        let repo = Repository::open(&self.root).unwrap();
        let commit = repo.find_branch(id, git2::BranchType::Local).unwrap();
        let tree = commit.get().peel_to_tree().unwrap();
        tree.get_path(Path::new(rel)).is_ok()
    }
}

#[tokio::test]
async fn overwriting_an_ignored_file_is_undone_by_rollback() {
    let e = env();
    let repo = Repository::init(&e.root).unwrap();
    write(&e.root, ".gitignore", "local/\nlocal/notes.txt\n*.log\n");
    write(&e.root, "src.txt", "tracked\n");
    commit_all(&repo);
    write(&e.root, "local/notes.txt", "my private notes\n");
    write(&e.root, "local/other.txt", "other ignored\n");
    write(&e.root, "build.log", "a log\n");

    let tool = e.file_write();
    let id = e.governed(&tool, json!({"path": "local/notes.txt", "content": "clobbered\n"})).await;
    assert_eq!(read(&e.root, "local/notes.txt"), "clobbered\n");
    // Only the target is captured: the rest of the ignored files stay out of the snapshot.
    assert!(e.in_snapshot(&id, "local/notes.txt"));
    assert!(!e.in_snapshot(&id, "local/other.txt"));
    assert!(!e.in_snapshot(&id, "build.log"));

    let done = e.snapshots.rollback(&id, None, None, "s1").unwrap();
    assert_eq!(read(&e.root, "local/notes.txt"), "my private notes\n", "{done:?}");
    assert_eq!(read(&e.root, "local/other.txt"), "other ignored\n");
    assert_eq!(read(&e.root, "build.log"), "a log\n");
    assert_eq!(read(&e.root, "src.txt"), "tracked\n");
    // The rollback can itself be undone: its restore point holds the clobbered content.
    let undo = done.branch.unwrap().0;
    let undone = e.snapshots.rollback(&undo, None, None, "s1").unwrap();
    assert_eq!(read(&e.root, "local/notes.txt"), "clobbered\n", "{undone:?}");
    // The user's index never learns about the ignored file.
    let index = Repository::open(&e.root).unwrap().index().unwrap();
    assert!(index.get_path(Path::new("local/notes.txt"), 0).is_none());
}

#[tokio::test]
async fn writing_gitignore_first_does_not_make_the_next_overwrite_irreversible() {
    let e = env();
    let repo = Repository::init(&e.root).unwrap();
    write(&e.root, "README.md", "readme\n");
    commit_all(&repo);
    write(&e.root, "draft.txt", "the only copy of my draft\n");

    let tool = e.file_write();
    let first = e.governed(&tool, json!({"path": ".gitignore", "content": "draft.txt\n"})).await;
    let second = e.governed(&tool, json!({"path": "draft.txt", "content": ""})).await;
    assert_eq!(read(&e.root, "draft.txt"), "");

    e.snapshots.rollback(&second, None, None, "s1").unwrap();
    assert_eq!(read(&e.root, "draft.txt"), "the only copy of my draft\n");
    assert_eq!(read(&e.root, ".gitignore"), "draft.txt\n");

    // Back to before both: the draft as it was, no .gitignore.
    write(&e.root, "draft.txt", "clobbered again\n");
    e.snapshots.rollback(&first, None, None, "s1").unwrap();
    assert_eq!(read(&e.root, "draft.txt"), "the only copy of my draft\n");
    assert!(!e.root.join(".gitignore").exists());
}

#[tokio::test]
async fn patches_and_shell_writes_to_ignored_files_are_undone_too() {
    let e = env();
    let repo = Repository::init(&e.root).unwrap();
    write(&e.root, ".gitignore", "*.local\n");
    commit_all(&repo);
    write(&e.root, "a.local", "one\n");
    write(&e.root, "b.local", "bee\n");

    let patch = ApplyPatch::new(Arc::clone(&e.guard));
    let id = e
        .governed(
            &patch,
            json!({"patch": "--- a/a.local\n+++ b/a.local\n@@ -1 +1 @@\n-one\n+two\n"}),
        )
        .await;
    assert_eq!(read(&e.root, "a.local"), "two\n");
    e.snapshots.rollback(&id, None, None, "s1").unwrap();
    assert_eq!(read(&e.root, "a.local"), "one\n");

    let shell = ShellExecute::new(Arc::clone(&e.guard));
    let id = e.governed(&shell, json!({"command": "echo gone > b.local"})).await;
    assert_eq!(read(&e.root, "b.local"), "gone\n");
    e.snapshots.rollback(&id, None, None, "s1").unwrap();
    assert_eq!(read(&e.root, "b.local"), "bee\n");
}

#[tokio::test]
async fn ignored_files_too_many_to_capture_fail_the_snapshot_so_the_write_does_not_run() {
    let e = env();
    let repo = Repository::init(&e.root).unwrap();
    write(&e.root, ".gitignore", "cache/\n");
    write(&e.root, "a.txt", "a\n");
    commit_all(&repo);
    for i in 0..1001 {
        write(&e.root, &format!("cache/f{i}"), "x");
    }
    // `cp a.txt cache/` may overwrite any of them: they cannot all be captured.
    let args = json!({"command": "cp a.txt cache/"});
    let err = e.snapshots.before_write("shell_execute", &args, "s1").unwrap_err().to_string();
    assert!(err.contains("git-ignored files"), "{err}");
    assert!(err.contains("could not be undone"), "{err}");
    // A few ignored files under a directory target are captured and restored.
    let e = env();
    let repo = Repository::init(&e.root).unwrap();
    write(&e.root, ".gitignore", "cache/\n");
    write(&e.root, "f0", "new\n");
    commit_all(&repo);
    write(&e.root, "cache/f0", "old\n");
    let shell = ShellExecute::new(Arc::clone(&e.guard));
    let id = e.governed(&shell, json!({"command": "cp f0 cache/"})).await;
    assert_eq!(read(&e.root, "cache/f0"), "new\n");
    e.snapshots.rollback(&id, None, None, "s1").unwrap();
    assert_eq!(read(&e.root, "cache/f0"), "old\n");
}
