//! Snapshots and rollback: restore exactly the prior bytes,
//! never touch the user's HEAD, index or ignored files, serialise per repository.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::{Duration, SystemTime};

use aria_tools::snapshot::RestoredAction;
use aria_tools::{PathGuard, SensitivePatterns, SnapshotError, SnapshotOptions, Snapshots};
use git2::{IndexAddOption, Repository, Signature};
use pretty_assertions::assert_eq;
use serde_json::json;
use tempfile::TempDir;

fn snapshots(root: &Path, options: SnapshotOptions) -> Snapshots {
    let guard = PathGuard::new(&[root.to_path_buf()], SensitivePatterns::default()).unwrap();
    Snapshots::new(Arc::new(guard), options)
}

fn tmp_root() -> (TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("root");
    fs::create_dir(&root).unwrap();
    (tmp, root)
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
}

/// Commits every file in the working tree as the user would (`git add -A && git commit`).
fn commit_all(repo: &Repository, message: &str) {
    let mut index = repo.index().unwrap();
    index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
    index.update_all(["*"], None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("User", "user@example.com").unwrap();
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<_> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents).unwrap();
}

/// Every file under `root` except `.git`, with its bytes and executable bit.
fn tree_state(root: &Path) -> BTreeMap<String, (Vec<u8>, bool)> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, bool)>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_name() == ".git" {
                continue;
            }
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let exec = fs::metadata(&p).unwrap().permissions().mode() & 0o100 != 0;
                let rel = p.strip_prefix(base).unwrap().display().to_string();
                out.insert(rel, (fs::read(&p).unwrap(), exec));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// What the user's git state is: HEAD, the branch it names, and the index file's bytes.
fn user_git_state(root: &Path) -> (String, Option<String>, Vec<u8>) {
    let git = root.join(".git");
    let head = fs::read_to_string(git.join("HEAD")).unwrap();
    let repo = Repository::open(root).unwrap();
    let head_oid = repo.head().ok().and_then(|h| h.target()).map(|o| o.to_string());
    (head, head_oid, fs::read(git.join("index")).unwrap_or_default())
}

/// A repository with every kind of change a user may have in flight.
fn dirty_repo(root: &Path) -> Repository {
    let repo = Repository::init(root).unwrap();
    write(root, ".gitignore", b"*.log\nbuild/\n");
    write(root, "modified.txt", b"committed\n");
    write(root, "staged.txt", b"committed\n");
    write(root, "deleted.txt", b"committed\n");
    write(root, "src/lib.rs", b"fn main() {}\n");
    write(root, "bin.dat", &[0u8, 159, 146, 150, 255, 0, 1]);
    commit_all(&repo, "Initial");
    // Staged, then changed again in the working tree.
    write(root, "staged.txt", b"staged\n");
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("staged.txt")).unwrap();
    index.write().unwrap();
    write(root, "staged.txt", b"staged then edited\n");
    write(root, "modified.txt", b"modified, not staged\n");
    fs::remove_file(root.join("deleted.txt")).unwrap();
    write(root, "untracked.txt", b"new file\n");
    write(root, "dir/untracked/deep.txt", b"deep\n");
    write(root, "ignored.log", b"ignored before\n");
    write(root, "build/out.o", b"object\n");
    write(root, "bin.dat", &(0..=255u8).cycle().take(70_000).collect::<Vec<u8>>());
    write(root, "tool.sh", b"#!/bin/sh\n");
    fs::set_permissions(root.join("tool.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    repo
}

#[test]
fn rollback_restores_exactly_the_dirty_tree_and_leaves_head_and_index_alone() {
    let (_tmp, root) = tmp_root();
    let _repo = dirty_repo(&root);
    let s = snapshots(&root, SnapshotOptions::default());
    let before_files = tree_state(&root);
    let before_git = user_git_state(&root);

    let snap = s.snapshot(&root.join("modified.txt"), "file_write", "session-1").unwrap();
    assert!(snap.id.0.starts_with("snapshot/file_write-"), "{}", snap.id);
    assert_eq!(user_git_state(&root), before_git, "taking a snapshot changed HEAD or the index");
    assert_eq!(tree_state(&root), before_files, "taking a snapshot changed the working tree");
    let mut changed = snap.files_changed.clone();
    changed.sort();
    assert_eq!(
        changed,
        [
            "A dir/untracked/deep.txt",
            "A tool.sh",
            "A untracked.txt",
            "D deleted.txt",
            "M bin.dat",
            "M modified.txt",
            "M staged.txt"
        ]
    );

    // The operation (and then some) changes the tree.
    write(&root, "modified.txt", b"overwritten by the model\n");
    write(&root, "staged.txt", b"also overwritten\n");
    fs::remove_file(root.join("untracked.txt")).unwrap();
    fs::remove_file(root.join("bin.dat")).unwrap();
    write(&root, "deleted.txt", b"resurrected\n");
    write(&root, "brand/new/file.txt", b"created by the operation\n");
    write(&root, "ignored.log", b"ignored after\n");
    fs::set_permissions(root.join("tool.sh"), fs::Permissions::from_mode(0o644)).unwrap();

    let done = s.rollback(&snap.id.0, None, None, "cli").unwrap();

    let mut expected = before_files.clone();
    // Ignored files are never touched by a rollback.
    expected.insert("ignored.log".into(), (b"ignored after\n".to_vec(), false));
    assert_eq!(tree_state(&root), expected);
    assert!(!root.join("brand").exists(), "directories emptied by the rollback are removed");
    assert_eq!(user_git_state(&root), before_git, "the rollback changed HEAD or the index");
    let actions: Vec<(String, RestoredAction)> =
        done.restored.iter().map(|r| (r.path.clone(), r.action)).collect();
    assert_eq!(
        actions,
        [
            ("bin.dat".to_owned(), RestoredAction::Written),
            ("brand/new/file.txt".to_owned(), RestoredAction::Deleted),
            ("deleted.txt".to_owned(), RestoredAction::Deleted),
            ("modified.txt".to_owned(), RestoredAction::Written),
            ("staged.txt".to_owned(), RestoredAction::Written),
            ("tool.sh".to_owned(), RestoredAction::Written),
            ("untracked.txt".to_owned(), RestoredAction::Written),
        ]
    );

    // The revert commit is recorded on a snapshot branch, on top of the pre-rollback state.
    let repo = Repository::open(&root).unwrap();
    let revert = repo.find_commit(done.revert_commit.as_deref().unwrap().parse().unwrap()).unwrap();
    assert_eq!(
        revert.summary().unwrap(),
        Some(format!("Revert: file_write ({})", snap.id).as_str())
    );
    let snap_commit = repo.find_commit(snap.commit.parse().unwrap()).unwrap();
    assert_eq!(revert.tree_id(), snap_commit.tree_id(), "the revert records the restored tree");
    let branch = done.branch.clone().unwrap();
    assert!(branch.0.starts_with("snapshot/rollback-"));
    let tip = repo.revparse_single(&format!("refs/heads/{branch}")).unwrap();
    assert_eq!(tip.id(), revert.id());
    let pre = revert.parent(0).unwrap();
    assert_eq!(pre.parent_id(0).unwrap().to_string(), before_git.1.clone().unwrap());
    let pre_file = pre.tree().unwrap().get_path(Path::new("modified.txt")).unwrap();
    let pre_blob = repo.find_blob(pre_file.id()).unwrap();
    assert_eq!(pre_blob.content(), b"overwritten by the model\n");
}

#[test]
fn a_rollback_can_itself_be_rolled_back() {
    let (_tmp, root) = tmp_root();
    let repo = Repository::init(&root).unwrap();
    write(&root, "a.txt", b"one\n");
    commit_all(&repo, "Initial");
    let s = snapshots(&root, SnapshotOptions::default());
    let snap = s.snapshot(&root, "file_write", "s").unwrap();
    write(&root, "a.txt", b"two\n");
    let undo = s.rollback(&snap.id.0, None, None, "cli").unwrap();
    assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"one\n");
    let listed = s.list(None, None).unwrap();
    assert_eq!(
        listed[0].id,
        undo.branch.clone().unwrap(),
        "the rollback is the newest restore point"
    );
    assert_eq!(listed[0].operation, "rollback");
    s.rollback(&undo.branch.unwrap().0, None, None, "cli").unwrap();
    assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"two\n");
}

#[test]
fn rolling_back_one_file_leaves_the_others_alone() {
    let (_tmp, root) = tmp_root();
    let repo = Repository::init(&root).unwrap();
    write(&root, "a.txt", b"a1\n");
    write(&root, "b.txt", b"b1\n");
    commit_all(&repo, "Initial");
    fs::set_permissions(root.join("a.txt"), fs::Permissions::from_mode(0o600)).unwrap();
    let s = snapshots(&root, SnapshotOptions::default());
    let snap = s.snapshot(&root.join("a.txt"), "apply_patch", "s").unwrap();
    write(&root, "a.txt", b"a2\n");
    write(&root, "b.txt", b"b2\n");
    write(&root, "c.txt", b"c2\n");

    let done = s.rollback(&snap.id.0, None, Some(Path::new("a.txt")), "cli").unwrap();
    assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"a1\n");
    let mode = fs::metadata(root.join("a.txt")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a private file stays private");
    assert_eq!(fs::read(root.join("b.txt")).unwrap(), b"b2\n");
    assert_eq!(fs::read(root.join("c.txt")).unwrap(), b"c2\n");
    assert_eq!(done.restored.len(), 1);

    // Rolling back a file created after the snapshot deletes it, and only it.
    let done = s.rollback(&snap.id.0, None, Some(&root.join("c.txt")), "cli").unwrap();
    assert_eq!(done.restored[0].action, RestoredAction::Deleted);
    assert!(!root.join("c.txt").exists());
    assert_eq!(fs::read(root.join("b.txt")).unwrap(), b"b2\n");

    // Nothing left to restore: no commit.
    let again = s.rollback(&snap.id.0, None, Some(Path::new("a.txt")), "cli").unwrap();
    assert!(again.restored.is_empty() && again.revert_commit.is_none());
}

#[test]
fn a_root_that_is_not_a_repository_is_initialised_unless_configured_not_to() {
    let (_tmp, root) = tmp_root();
    write(&root, "notes/today.md", b"buy milk\n");
    let off = snapshots(&root, SnapshotOptions { auto_init: false, ..SnapshotOptions::default() });
    let err = off.snapshot(&root.join("notes/today.md"), "file_write", "s").unwrap_err();
    assert!(matches!(err, SnapshotError::NotARepository { .. }), "{err}");
    assert!(err.to_string().contains("auto_init"), "{err}");
    assert!(!root.join(".git").exists());

    let s = snapshots(&root, SnapshotOptions::default());
    let snap = s.snapshot(&root.join("notes/today.md"), "file_write", "s").unwrap();
    let repo = Repository::open(&root).unwrap();
    assert!(repo.head_detached().is_ok() && repo.head().is_err(), "HEAD stays unborn");
    assert_eq!(snap.files_changed, ["A notes/today.md"]);
    assert_eq!(repo.find_commit(snap.commit.parse().unwrap()).unwrap().parent_count(), 0);

    write(&root, "notes/today.md", b"buy milk and eggs\n");
    write(&root, "notes/new.md", b"new\n");
    s.rollback(&snap.id.0, None, None, "cli").unwrap();
    assert_eq!(fs::read(root.join("notes/today.md")).unwrap(), b"buy milk\n");
    assert!(!root.join("notes/new.md").exists());
}

/// A repository at `root` with `top.txt`, and one nested at `projects/inner` with `lib.rs`,
/// each committed; returns the outer repository and the inner one's directory.
fn nested_repos(root: &Path) -> (Repository, PathBuf) {
    let outer = Repository::init(root).unwrap();
    write(root, "top.txt", b"top\n");
    commit_all(&outer, "Initial");
    let inner_dir = root.join("projects/inner");
    let inner = Repository::init(&inner_dir).unwrap();
    write(&inner_dir, "lib.rs", b"inner\n");
    commit_all(&inner, "Initial");
    (outer, inner_dir)
}

#[test]
fn the_repository_that_contains_the_written_path_is_snapshotted() {
    let (_tmp, root) = tmp_root();
    let (outer, inner_dir) = nested_repos(&root);
    write(&inner_dir, "lib.rs", b"inner changed\n");

    let s = snapshots(&root, SnapshotOptions::default());
    let taken = s
        .before_write("file_write", &json!({"path": "projects/inner/lib.rs", "content": "x"}), "s")
        .unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].repository, inner_dir);
    assert_eq!(taken[0].targets, ["lib.rs"]);
    assert_eq!(taken[0].files_changed, ["M lib.rs"]);

    // The outer repository's snapshot does not fold the nested repository in.
    let outer_snap = s.snapshot(&root.join("top.txt"), "file_write", "s").unwrap();
    assert_eq!(outer_snap.repository, root);
    let tree = outer.find_commit(outer_snap.commit.parse().unwrap()).unwrap().tree().unwrap();
    assert!(tree.get_path(Path::new("projects/inner/lib.rs")).is_err());

    // Listing finds both repositories' restore points; ids resolve across them.
    let ids: Vec<_> = s.list(None, None).unwrap().into_iter().map(|s| s.repository).collect();
    assert!(ids.contains(&inner_dir) && ids.contains(&root), "{ids:?}");
    // Two repositories may have a snapshot of the same name (same operation, same second):
    // the id is then ambiguous, and naming the repository (or a commit id) resolves it.
    if outer_snap.id == taken[0].id {
        let err = s.find(&taken[0].id.0, None).unwrap_err();
        assert!(err.to_string().contains("--root"), "{err}");
    }
    write(&inner_dir, "lib.rs", b"model wrote this\n");
    s.rollback(&taken[0].id.0, Some(&inner_dir), None, "cli").unwrap();
    assert_eq!(fs::read(inner_dir.join("lib.rs")).unwrap(), b"inner changed\n");
}

#[test]
fn a_patch_snapshots_the_repositories_of_the_files_it_names() {
    let (_tmp, root) = tmp_root();
    let (_outer, inner_dir) = nested_repos(&root);
    let s = snapshots(&root, SnapshotOptions::default());

    // Only the nested repository: one snapshot there, naming both files.
    let patch = "--- a/projects/inner/lib.rs\n+++ b/projects/inner/lib.rs\n@@ -1 +1 @@\n-inner\n+patched\n\
                 --- /dev/null\n+++ b/projects/inner/new.rs\n@@ -0,0 +1 @@\n+new\n";
    let taken = s.before_write("apply_patch", &json!({ "patch": patch }), "s").unwrap();
    assert_eq!(taken.len(), 1, "{taken:?}");
    assert_eq!(taken[0].repository, inner_dir);
    assert_eq!(taken[0].targets, ["lib.rs", "new.rs"]);
    let planned = s.plan_write("apply_patch", &json!({ "patch": patch })).unwrap();
    assert_eq!(planned.len(), 1);
    assert_eq!(planned[0].repository, inner_dir);

    // Files in both repositories: one snapshot in each.
    let both = "--- a/top.txt\n+++ b/top.txt\n@@ -1 +1 @@\n-top\n+TOP\n\
                --- a/projects/inner/lib.rs\n+++ b/projects/inner/lib.rs\n@@ -1 +1 @@\n-inner\n+x\n";
    let taken = s.before_write("apply_patch", &json!({ "patch": both }), "s").unwrap();
    let mut repos: Vec<_> = taken.iter().map(|t| t.repository.clone()).collect();
    repos.sort();
    assert_eq!(repos, [root.clone(), inner_dir.clone()]);

    // A patch that does not parse names no file: the roots are snapshotted, as for any call
    // whose targets are unknown (the tool then refuses the patch).
    let taken = s.before_write("apply_patch", &json!({"patch": "not a diff"}), "s").unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].repository, root);
}

#[test]
fn a_shell_write_snapshots_the_repositories_of_the_paths_it_writes() {
    let (_tmp, root) = tmp_root();
    let s = snapshots(&root, SnapshotOptions::default());
    let taken =
        s.before_write("shell_execute", &json!({"command": "touch made.txt"}), "s").unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].targets, ["made.txt"]);
    assert!(root.join(".git").is_dir(), "the root was initialised on its first write");
}

#[test]
fn concurrent_snapshots_of_one_repository_are_serialised() {
    let (_tmp, root) = tmp_root();
    let repo = Repository::init(&root).unwrap();
    write(&root, "a.txt", b"a\n");
    commit_all(&repo, "Initial");
    let s = snapshots(&root, SnapshotOptions::default());

    // While someone holds the repository's lock, a snapshot waits for it.
    let lock = fs::File::create(root.join(".git/aria-snapshot.lock")).unwrap();
    lock.lock().unwrap();
    let (tx, rx) = mpsc::channel();
    let waiting = {
        let (s, root) = (s.clone(), root.clone());
        std::thread::spawn(move || {
            let r = s.snapshot(&root, "file_write", "waiting");
            tx.send(()).unwrap();
            r
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(rx.try_recv().is_err(), "the snapshot ran while the lock was held");
    lock.unlock().unwrap();
    rx.recv().unwrap();
    waiting.join().unwrap().unwrap();

    // Many at once, in the same second: all succeed with distinct branches and valid commits.
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let (s, root) = (s.clone(), root.clone());
            std::thread::spawn(move || {
                write(&root, &format!("t{i}.txt"), format!("{i}\n").as_bytes());
                s.snapshot(&root, "file_write", &format!("thread-{i}")).unwrap()
            })
        })
        .collect();
    let taken: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut ids: Vec<_> = taken.iter().map(|t| t.id.0.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 8);
    for t in &taken {
        let commit = repo.find_commit(t.commit.parse().unwrap()).unwrap();
        assert!(commit.tree().unwrap().get_path(Path::new("a.txt")).is_ok());
    }
    assert_eq!(s.list(None, None).unwrap().len(), 9);
}

#[test]
fn old_snapshots_are_pruned_but_never_the_newest() {
    let (_tmp, root) = tmp_root();
    let s = snapshots(&root, SnapshotOptions::default());
    write(&root, "a.txt", b"a\n");
    s.snapshot(&root, "file_write", "s").unwrap();
    s.snapshot(&root, "apply_patch", "s").unwrap();
    let newest = s.snapshot(&root, "shell_execute", "s").unwrap();
    // Nothing is 30 days old yet.
    assert!(s.prune(SystemTime::now()).unwrap().is_empty());
    let later = SystemTime::now() + Duration::from_secs(31 * 24 * 3600);
    assert_eq!(s.prune(later).unwrap().len(), 2);
    let left: Vec<_> = s.list(None, None).unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(left, [newest.id]);
}

#[test]
fn list_filters_by_path_and_unknown_ids_say_how_to_find_one() {
    let (_tmp, root) = tmp_root();
    let repo = Repository::init(&root).unwrap();
    write(&root, "a.txt", b"a\n");
    write(&root, "b.txt", b"b\n");
    commit_all(&repo, "Initial");
    let s = snapshots(&root, SnapshotOptions::default());
    let for_a = s.before_write("file_write", &json!({"path": "a.txt"}), "s").unwrap();
    write(&root, "a.txt", b"a changed\n");
    let listed = s.list(None, Some(Path::new("a.txt"))).unwrap();
    assert_eq!(listed.iter().map(|l| &l.id).collect::<Vec<_>>(), [&for_a[0].id]);
    assert!(s.list(None, Some(Path::new("b.txt"))).unwrap().is_empty());

    // Ids work with or without the prefix, or as a commit prefix.
    let short = for_a[0].id.0.trim_start_matches("snapshot/");
    assert_eq!(s.find(short, None).unwrap().id, for_a[0].id);
    assert_eq!(s.find(&for_a[0].commit[..10], None).unwrap().id, for_a[0].id);

    let err = s.rollback("snapshot/nope-2020-01-01-000000", None, None, "cli").unwrap_err();
    assert!(err.to_string().contains("aria snapshots list"), "{err}");
}

#[test]
fn sensitive_files_are_never_copied_into_a_snapshot_nor_touched_by_a_rollback() {
    let (_tmp, root) = tmp_root();
    let repo = Repository::init(&root).unwrap();
    write(&root, "server.key", b"committed key\n");
    write(&root, "a.txt", b"a\n");
    commit_all(&repo, "Initial");
    write(&root, ".env", b"API_KEY=sk-secret-1\n");
    write(&root, "server.key", b"rotated key\n");
    let s = snapshots(&root, SnapshotOptions::default());
    let snap = s.snapshot(&root.join("a.txt"), "file_write", "s").unwrap();
    let tree = repo.find_commit(snap.commit.parse().unwrap()).unwrap().tree().unwrap();
    assert!(tree.get_path(Path::new(".env")).is_err(), "an untracked secret went into history");

    write(&root, ".env", b"API_KEY=sk-secret-2\n");
    write(&root, "server.key", b"rotated again\n");
    write(&root, "a.txt", b"changed\n");
    let done = s.rollback(&snap.id.0, None, None, "cli").unwrap();
    assert_eq!(done.restored.len(), 1, "{:?}", done.restored);
    assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"a\n");
    assert_eq!(fs::read(root.join(".env")).unwrap(), b"API_KEY=sk-secret-2\n");
    assert_eq!(fs::read(root.join("server.key")).unwrap(), b"rotated again\n");
}

/// Every file under `dir` including `.git` (refs, index, objects), as bytes.
fn every_byte(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn planning_a_write_names_the_repository_and_branch_and_changes_nothing() {
    let (_tmp, root) = tmp_root();
    let inner_dir = root.join("projects/inner");
    let inner = Repository::init(&inner_dir).unwrap();
    write(&inner_dir, "lib.rs", b"inner\n");
    commit_all(&inner, "Initial");
    write(&root, "notes.md", b"loose\n");
    let before = every_byte(&root);

    let s = snapshots(&root, SnapshotOptions::default());
    let args = json!({"path": "projects/inner/lib.rs", "content": "x"});
    let planned = s.plan_write("file_write", &args).unwrap();
    assert_eq!(planned.len(), 1);
    assert_eq!(planned[0].repository, inner_dir);
    assert!(!planned[0].initialise);
    assert_eq!(planned[0].branch, "snapshot/file_write-<YYYY-MM-DD-HHMMSS>");
    assert_eq!(planned[0].targets, [inner_dir.join("lib.rs")]);

    // A root that is not a repository would be initialised; the plan says so and does not.
    let loose = s.plan_write("file_write", &json!({"path": "notes.md", "content": "y"})).unwrap();
    assert_eq!(loose.len(), 1);
    assert_eq!(loose[0].repository, root);
    assert!(loose[0].initialise);
    let off = snapshots(&root, SnapshotOptions { auto_init: false, ..SnapshotOptions::default() });
    let err =
        off.plan_write("file_write", &json!({"path": "notes.md", "content": "y"})).unwrap_err();
    assert!(matches!(err, SnapshotError::NotARepository { .. }), "{err}");

    // The plan matches what the real hook then takes.
    assert_eq!(every_byte(&root), before, "planning wrote nothing, not even a lock file");
    let taken = s.before_write("file_write", &args, "s").unwrap();
    assert_eq!(taken[0].repository, planned[0].repository);
    assert!(taken[0].id.0.starts_with("snapshot/file_write-"), "{}", taken[0].id);
}

/// What changed since a snapshot (a profile asks first once the run changed its Makefile):
/// tracked, new and deleted files by content, and ignored files whose inode changed after it
/// (an ignored file untouched since is not listed).
#[test]
fn changed_since_lists_what_differs_from_the_snapshot() {
    let (_tmp, root) = tmp_root();
    let repo = Repository::init(&root).unwrap();
    write(&root, "Makefile", b"test:\n\t@true\n");
    write(&root, "app.txt", b"v1\n");
    write(&root, "old.txt", b"x\n");
    write(&root, ".gitignore", b"*.local\nbuild/\n");
    write(&root, "before.local", b"untouched\n");
    write(&root, "build/Makefile", b"generated\n");
    commit_all(&repo, "Feat: start");
    // The ignored file above must be older than the snapshot's second.
    std::thread::sleep(Duration::from_millis(1100));
    let s = snapshots(&root, SnapshotOptions::default());
    let taken = s.snapshot(&root.join("app.txt"), "file_write", "s1").unwrap();
    assert!(s.changed_since(&taken.id.0, &root).unwrap().is_empty(), "nothing changed yet");
    write(&root, "Makefile", b"test:\n\t@echo changed\n");
    write(&root, "new.mk", b"x:\n");
    fs::remove_file(root.join("old.txt")).unwrap();
    write(&root, "GNUmakefile.local", b"ignored but new\n");
    let mut changed: Vec<String> = s
        .changed_since(&taken.id.0, &root)
        .unwrap()
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    changed.sort();
    assert_eq!(changed, ["GNUmakefile.local", "Makefile", "new.mk", "old.txt"]);
    // The id without its prefix works too; an unknown one says how to find one.
    let short = taken.id.0.trim_start_matches("snapshot/");
    assert_eq!(s.changed_since(short, &root).unwrap().len(), 4);
    let err = s.changed_since("snapshot/nope", &root).unwrap_err();
    assert!(err.to_string().contains("aria snapshots list"), "{err}");
}

#[test]
fn the_state_id_is_the_snapshot_tree_and_follows_the_content() {
    let (_tmp, root) = tmp_root();
    let repo = dirty_repo(&root);
    let s = snapshots(&root, SnapshotOptions::default());
    let before = s.state_id(&root).unwrap();
    let taken = s.snapshot(&root.join("modified.txt"), "file_write", "s1").unwrap();
    let tree = repo.find_commit(git2::Oid::from_str(&taken.commit).unwrap()).unwrap().tree_id();
    assert_eq!(before, tree.to_string(), "the id is the tree a snapshot records");
    assert_eq!(s.state_id(&root).unwrap(), before, "reading it again changes nothing");
    // An ignored file is not part of the state; a change to a captured file is.
    write(&root, "ignored.log", b"ignored after\n");
    assert_eq!(s.state_id(&root).unwrap(), before);
    write(&root, "untracked.txt", b"changed\n");
    let changed = s.state_id(&root).unwrap();
    assert_ne!(changed, before);
    // Putting the bytes back gives the same id again.
    write(&root, "untracked.txt", b"new file\n");
    assert_eq!(s.state_id(&root).unwrap(), before);
}
