//! `git_status`, `git_diff`, `git_log` and `git_commit` through the `aria_api::Tool` contract,
//! on real repositories made in temporary directories with git2.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aria_api::{Tool, ToolContext, ToolError, ToolOutput};
use aria_tools::{
    GitCommit, GitDiff, GitLog, GitStatus, MAX_DIFF_BYTES, PathGuard, SensitivePatterns,
};
use git2::{Repository, Signature};
use serde_json::{Value, json};
use tempfile::TempDir;

struct Root {
    _tmp: TempDir,
    base: PathBuf,
    root: PathBuf,
    guard: Arc<PathGuard>,
}

fn root() -> Root {
    let tmp = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    fs::create_dir_all(&root).unwrap();
    let guard = Arc::new(
        PathGuard::new(std::slice::from_ref(&root), SensitivePatterns::default()).unwrap(),
    );
    Root { _tmp: tmp, base, root, guard }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A repository at `dir` with `files` committed as "Feat: initial".
fn repo(dir: &Path, files: &[(&str, &str)]) -> Repository {
    fs::create_dir_all(dir).unwrap();
    let repo = Repository::init(dir).unwrap();
    {
        let mut cfg = repo.config().unwrap();
        cfg.set_str("user.name", "Tester").unwrap();
        cfg.set_str("user.email", "tester@example.invalid").unwrap();
    }
    for (rel, text) in files {
        write(&dir.join(rel), text);
    }
    commit_all(&repo, "Feat: initial");
    repo
}

fn commit_all(repo: &Repository, message: &str) -> git2::Oid {
    let mut index = repo.index().unwrap();
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
    index.update_all(["*"], None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("Tester", "tester@example.invalid").unwrap();
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents).unwrap()
}

fn stage(repo: &Repository, rel: &str) {
    let mut index = repo.index().unwrap();
    index.add_path(Path::new(rel)).unwrap();
    index.write().unwrap();
}

fn head(repo: &Repository) -> git2::Oid {
    repo.head().unwrap().target().unwrap()
}

async fn call(tool: &dyn Tool, args: Value) -> Result<ToolOutput, ToolError> {
    tool.call(args, &ToolContext::default()).await
}

fn text(r: Result<ToolOutput, ToolError>) -> String {
    match r {
        Ok(out) => out.content,
        Err(e) => panic!("expected success, got {e}"),
    }
}

/// A repository with one modified, one staged, one untracked and one deleted file.
fn dirty(r: &Root) -> Repository {
    let dir = r.root.join("proj");
    let repo = repo(&dir, &[("a.txt", "one\n"), ("b.txt", "two\n"), ("gone.txt", "bye\n")]);
    write(&dir.join("a.txt"), "one changed\n");
    write(&dir.join("b.txt"), "two staged\n");
    stage(&repo, "b.txt");
    write(&dir.join("new.txt"), "fresh\n");
    fs::remove_file(dir.join("gone.txt")).unwrap();
    repo
}

#[tokio::test]
async fn status_lists_modified_staged_untracked_and_deleted_files() {
    let r = root();
    let _repo = dirty(&r);
    let out = text(call(&GitStatus::new(r.guard.clone()), json!({"path": "proj"})).await);
    assert!(out.contains("branch: master") || out.contains("branch: main"), "{out}");
    assert!(out.contains("last commit: ") && out.contains("Feat: initial"), "{out}");
    let staged = out.split("staged (1):\n").nth(1).unwrap();
    assert!(staged.starts_with("  modified: b.txt\n"), "{out}");
    let unstaged = out.split("not staged (2):\n").nth(1).unwrap();
    assert!(unstaged.starts_with("  modified: a.txt\n  deleted: gone.txt\n"), "{out}");
    assert!(out.contains("untracked (1):\n  new.txt\n"), "{out}");
}

#[tokio::test]
async fn a_file_path_selects_its_repository_and_a_clean_one_says_so() {
    let r = root();
    repo(&r.root.join("proj"), &[("src/x.rs", "fn x() {}\n")]);
    let out = text(call(&GitStatus::new(r.guard.clone()), json!({"path": "proj/src/x.rs"})).await);
    assert!(out.starts_with(&format!("repository {}\n", r.root.join("proj").display())), "{out}");
    assert!(out.contains("working tree clean"), "{out}");
}

#[tokio::test]
async fn a_root_with_several_repositories_lists_each_and_single_repo_tools_ask_which() {
    let r = root();
    repo(&r.root.join("alpha"), &[("a.txt", "a\n")]);
    repo(&r.root.join("group/beta"), &[("b.txt", "b\n")]);
    write(&r.root.join("group/beta/b.txt"), "b changed\n");
    write(&r.root.join("notes/plain.txt"), "not a repo\n");
    let out = text(call(&GitStatus::new(r.guard.clone()), json!({"path": "."})).await);
    assert!(out.starts_with("2 git repositories under"), "{out}");
    let alpha = out.find(&format!("repository {}", r.root.join("alpha").display())).unwrap();
    let beta = out.find(&format!("repository {}", r.root.join("group/beta").display())).unwrap();
    assert!(alpha < beta, "{out}");
    assert!(out[beta..].contains("modified: b.txt"), "{out}");
    assert!(out[alpha..beta].contains("working tree clean"), "{out}");

    let err = call(&GitDiff::new(r.guard.clone()), json!({"path": "."})).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("holds 2 git repositories") && msg.contains("alpha"), "{msg}");

    let none = call(&GitStatus::new(r.guard.clone()), json!({"path": "notes"})).await.unwrap_err();
    assert!(none.to_string().contains("not inside a git repository"), "{none}");
}

#[tokio::test]
async fn paths_outside_the_roots_are_refused() {
    let r = root();
    repo(&r.base.join("outside"), &[("x.txt", "x\n")]);
    let outside = r.base.join("outside");
    for tool in [
        Box::new(GitStatus::new(r.guard.clone())) as Box<dyn Tool>,
        Box::new(GitLog::new(r.guard.clone())),
        Box::new(GitDiff::new(r.guard.clone())),
    ] {
        let err =
            call(tool.as_ref(), json!({"path": outside.to_str().unwrap()})).await.unwrap_err();
        assert!(matches!(err, ToolError::Refused { .. }), "{err}");
    }
    let climb = call(&GitStatus::new(r.guard.clone()), json!({"path": "../outside"})).await;
    assert!(matches!(climb, Err(ToolError::Refused { .. })), "{climb:?}");
}

#[tokio::test]
async fn a_repository_whose_git_directory_is_outside_the_roots_is_refused() {
    let r = root();
    repo(&r.base.join("real"), &[("x.txt", "x\n")]);
    let work = r.root.join("linked");
    fs::create_dir_all(&work).unwrap();
    fs::write(work.join(".git"), format!("gitdir: {}\n", r.base.join("real/.git").display()))
        .unwrap();
    let err = call(&GitStatus::new(r.guard.clone()), json!({"path": "linked"})).await.unwrap_err();
    assert!(matches!(err, ToolError::Refused { .. }), "{err}");
    assert!(err.to_string().contains("outside the allowed roots"), "{err}");
}

#[tokio::test]
async fn diff_shows_unstaged_staged_and_commit_to_commit_changes() {
    let r = root();
    let repo = dirty(&r);
    let diff = GitDiff::new(r.guard.clone());
    let unstaged = text(call(&diff, json!({"path": "proj"})).await);
    assert!(unstaged.contains("-one\n+one changed\n"), "{unstaged}");
    assert!(unstaged.contains("-bye\n"), "{unstaged}");
    assert!(!unstaged.contains("two staged"), "{unstaged}");

    let staged = text(call(&diff, json!({"path": "proj", "staged": true})).await);
    assert!(staged.contains("-two\n+two staged\n"), "{staged}");
    assert!(!staged.contains("one changed"), "{staged}");
    assert!(staged.contains("1 files changed, 1 insertions(+), 1 deletions(-)"), "{staged}");

    let first = head(&repo);
    commit_all(&repo, "Fix: everything");
    let between = text(
        call(
            &diff,
            json!({"path": "proj", "from": first.to_string(), "to": "HEAD", "paths": ["a.txt"]}),
        )
        .await,
    );
    assert!(between.contains("+one changed\n"), "{between}");
    assert!(!between.contains("two staged"), "paths filter: {between}");

    let bad = call(&diff, json!({"path": "proj", "from": "no-such-branch"})).await.unwrap_err();
    assert!(bad.to_string().contains("was not found"), "{bad}");
    let to_only = call(&diff, json!({"path": "proj", "to": "HEAD"})).await.unwrap_err();
    assert!(to_only.to_string().contains("\"to\" needs \"from\""), "{to_only}");
    let climb = call(&diff, json!({"path": "proj", "paths": ["../x"]})).await.unwrap_err();
    assert!(climb.to_string().contains("relative to the repository"), "{climb}");
}

#[tokio::test]
async fn diff_hides_the_lines_of_sensitive_files_and_caps_long_output() {
    let r = root();
    let dir = r.root.join("proj");
    let repo = repo(&dir, &[(".env", "TOKEN=old\n"), ("big.txt", "start\n")]);
    write(&dir.join(".env"), "TOKEN=supersecretvalue\n");
    let line = "x".repeat(99);
    write(&dir.join("big.txt"), &format!("{line}\n").repeat(2000));
    let out = text(call(&GitDiff::new(r.guard.clone()), json!({"path": "proj"})).await);
    assert!(!out.contains("supersecretvalue"), "{out}");
    assert!(out.contains("[.env changed; it is a sensitive file, so its lines are not shown]"));
    assert!(out.contains("[diff truncated: showing"), "no truncation note");
    assert!(out.len() < MAX_DIFF_BYTES + 1024, "{}", out.len());
    assert!(
        out.contains("2 files changed, 2001 insertions(+), 2 deletions(-)"),
        "stats: {}",
        &out[..200]
    );
    let refused =
        call(&GitDiff::new(r.guard.clone()), json!({"path": "proj", "paths": [".env"]})).await;
    assert!(matches!(refused, Err(ToolError::Refused { .. })), "{refused:?}");
    drop(repo);
}

#[tokio::test]
async fn log_lists_newest_first_and_honours_the_limit() {
    let r = root();
    let dir = r.root.join("proj");
    let repo = repo(&dir, &[("a.txt", "1\n")]);
    for i in 2..=4 {
        write(&dir.join("a.txt"), &format!("{i}\n"));
        commit_all(&repo, &format!("Fix: change {i}"));
    }
    let out = text(call(&GitLog::new(r.guard.clone()), json!({"path": "proj", "limit": 2})).await);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].contains("2 latest commits"), "{out}");
    assert!(lines[1].ends_with("Tester Fix: change 4"), "{out}");
    assert!(lines[2].ends_with("Tester Fix: change 3"), "{out}");
    assert!(lines[1].starts_with(&head(&repo).to_string()[..10]), "{out}");
    let all = text(call(&GitLog::new(r.guard.clone()), json!({"path": "proj"})).await);
    assert!(all.contains("4 latest commits") && all.contains("Feat: initial"), "{all}");
    let bad = call(&GitLog::new(r.guard.clone()), json!({"path": "proj", "limit": 0})).await;
    assert!(bad.is_err());
}

#[tokio::test]
async fn commit_refuses_a_message_without_a_known_type_and_changes_nothing() {
    let r = root();
    let repo = dirty(&r);
    let before = head(&repo);
    let index_before = fs::read(r.root.join("proj/.git/index")).unwrap();
    for message in ["fixed stuff", "Bugfix: stuff", "Fix:", "WIP: later"] {
        let err =
            call(&GitCommit::new(r.guard.clone()), json!({"path": "proj", "message": message}))
                .await
                .unwrap_err();
        assert!(matches!(err, ToolError::Refused { .. }), "{message}: {err}");
        assert!(err.to_string().contains("Type: summary"), "{message}: {err}");
    }
    assert_eq!(head(&repo), before);
    assert_eq!(fs::read(r.root.join("proj/.git/index")).unwrap(), index_before);
}

#[tokio::test]
async fn commit_with_files_commits_only_those_on_the_current_branch() {
    let r = root();
    let repo = dirty(&r);
    let before = head(&repo);
    let out = text(
        call(
            &GitCommit::new(r.guard.clone()),
            json!({"path": "proj", "message": "Fix: Update a and drop gone", "files": ["a.txt", "gone.txt"]}),
        )
        .await,
    );
    assert!(out.starts_with("committed "), "{out}");
    let commit = repo.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(commit.parent_id(0).unwrap(), before, "a new commit on top of HEAD");
    assert_eq!(commit.message().unwrap(), "Fix: Update a and drop gone");
    let tree = commit.tree().unwrap();
    let a = tree.get_path(Path::new("a.txt")).unwrap().to_object(&repo).unwrap();
    assert_eq!(a.as_blob().unwrap().content(), b"one changed\n");
    assert!(tree.get_path(Path::new("gone.txt")).is_err(), "deletion committed");
    // b.txt was staged by the user before: git semantics commit the index, so it goes too;
    // new.txt was not named and stays untracked.
    assert!(tree.get_path(Path::new("new.txt")).is_err());
    let status = text(call(&GitStatus::new(r.guard.clone()), json!({"path": "proj"})).await);
    assert!(status.contains("untracked (1):\n  new.txt"), "{status}");
}

#[tokio::test]
async fn commit_without_files_takes_every_change_but_never_a_secrets_file() {
    let r = root();
    let dir = r.root.join("proj");
    let repo = repo(&dir, &[("a.txt", "a\n")]);
    write(&dir.join("a.txt"), "a2\n");
    write(&dir.join("new/b.txt"), "b\n");
    write(&dir.join(".env"), "KEY=value\n");
    let out = call(
        &GitCommit::new(r.guard.clone()),
        json!({"path": "proj/a.txt", "message": "feat: add b"}),
    )
    .await
    .unwrap();
    assert_eq!(out.details["files"], json!(["a.txt", "new/b.txt"]));
    assert_eq!(out.details["skipped"], json!([".env"]));
    assert!(out.content.contains("not committed (sensitive files): .env"), "{}", out.content);
    let tree = repo.head().unwrap().peel_to_tree().unwrap();
    assert!(tree.get_path(Path::new(".env")).is_err());
    let again =
        call(&GitCommit::new(r.guard.clone()), json!({"path": "proj", "message": "feat: again"}))
            .await
            .unwrap_err();
    assert!(again.to_string().contains("nothing to commit"), "{again}");
}

#[tokio::test]
async fn commit_never_touches_snapshot_branches_nor_a_detached_head() {
    let r = root();
    let dir = r.root.join("proj");
    let repo = repo(&dir, &[("a.txt", "a\n")]);
    let base = head(&repo);
    let snap = repo
        .branch("snapshot/edit-2026-01-01-000000", &repo.find_commit(base).unwrap(), false)
        .unwrap();
    let snap_target = snap.get().target().unwrap();
    write(&dir.join("a.txt"), "changed\n");
    let tool = GitCommit::new(r.guard.clone());
    text(call(&tool, json!({"path": "proj", "message": "Fix: a"})).await);
    let snap_after = repo.find_reference("refs/heads/snapshot/edit-2026-01-01-000000").unwrap();
    assert_eq!(snap_after.target().unwrap(), snap_target, "snapshot branch moved");

    repo.set_head("refs/heads/snapshot/edit-2026-01-01-000000").unwrap();
    write(&dir.join("a.txt"), "again\n");
    let err = call(&tool, json!({"path": "proj", "message": "Fix: a"})).await.unwrap_err();
    assert!(err.to_string().contains("snapshot branch"), "{err}");
    assert_eq!(
        repo.find_reference("refs/heads/snapshot/edit-2026-01-01-000000")
            .unwrap()
            .target()
            .unwrap(),
        snap_target
    );

    repo.set_head_detached(base).unwrap();
    let err = call(&tool, json!({"path": "proj", "message": "Fix: a"})).await.unwrap_err();
    assert!(err.to_string().contains("detached"), "{err}");
    assert_eq!(head(&repo), base);
}

#[tokio::test]
async fn a_dry_run_commit_says_what_it_would_commit_and_changes_nothing() {
    let r = root();
    let repo = dirty(&r);
    let before = head(&repo);
    let index_before = fs::read(r.root.join("proj/.git/index")).unwrap();
    let ctx = ToolContext { dry_run: true, ..ToolContext::default() };
    let out = GitCommit::new(r.guard.clone())
        .call(json!({"path": "proj", "message": "Fix: all"}), &ctx)
        .await
        .unwrap();
    assert!(out.content.starts_with("dry run: would commit 4 files"), "{}", out.content);
    assert_eq!(head(&repo), before);
    assert_eq!(fs::read(r.root.join("proj/.git/index")).unwrap(), index_before);
}

#[tokio::test]
async fn the_first_commit_of_an_empty_repository_works() {
    let r = root();
    let dir = r.root.join("fresh");
    fs::create_dir_all(&dir).unwrap();
    let repo = Repository::init(&dir).unwrap();
    write(&dir.join("readme.md"), "hi\n");
    let log = text(call(&GitLog::new(r.guard.clone()), json!({"path": "fresh"})).await);
    assert!(log.contains("has no commits yet"), "{log}");
    text(
        call(&GitCommit::new(r.guard.clone()), json!({"path": "fresh", "message": "Docs: readme"}))
            .await,
    );
    let commit = repo.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(commit.parent_count(), 0);
    assert_eq!(commit.summary().unwrap(), Some("Docs: readme"));
}

/// What one combined libgit2 status says, sorted into the tool's sections (the reference the
/// tool's two-threaded status must match).
fn reference_sections(repo: &Repository) -> [Vec<String>; 4] {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(false).exclude_submodules(true);
    let (mut staged, mut unstaged, mut untracked, mut conflicted) =
        (vec![], vec![], vec![], vec![]);
    let word = |s: git2::Status, index: bool| -> Option<&'static str> {
        let (new, modified, deleted, typechange) = if index {
            (
                git2::Status::INDEX_NEW,
                git2::Status::INDEX_MODIFIED,
                git2::Status::INDEX_DELETED,
                git2::Status::INDEX_TYPECHANGE,
            )
        } else {
            (
                git2::Status::empty(),
                git2::Status::WT_MODIFIED,
                git2::Status::WT_DELETED,
                git2::Status::WT_TYPECHANGE,
            )
        };
        [(new, "new:"), (modified, "modified:"), (deleted, "deleted:"), (typechange, "typechange:")]
            .into_iter()
            .find(|(flag, _)| !flag.is_empty() && s.contains(*flag))
            .map(|(_, w)| w)
    };
    for e in repo.statuses(Some(&mut opts)).unwrap().iter() {
        let (s, path) = (e.status(), e.path().unwrap().to_owned());
        if s.is_conflicted() {
            conflicted.push(path);
        } else if s.is_wt_new() {
            untracked.push(path);
        } else {
            if let Some(w) = word(s, true) {
                staged.push(format!("{w} {path}"));
            }
            if let Some(w) = word(s, false) {
                unstaged.push(format!("{w} {path}"));
            }
        }
    }
    [staged, unstaged, untracked, conflicted]
}

#[tokio::test]
async fn status_matches_one_combined_libgit2_status_on_a_messy_tree_and_writes_nothing() {
    // With and without a conflict (staged changes then come with it or not).
    for conflict in [true, false] {
        messy_status_matches(conflict).await;
    }
}

async fn messy_status_matches(conflict: bool) {
    let r = root();
    let dir = r.root.join("proj");
    let files = [
        ("a.txt", "a\n"),
        ("both.txt", "both\n"),
        ("c.txt", "base\n"),
        ("gone.txt", "bye\n"),
        ("unstaged_gone.txt", "bye\n"),
        ("sub/keep.txt", "keep\n"),
        (".gitignore", "*.log\n"),
    ];
    let repo = repo(&dir, &files);
    // A conflicted merge: `other` and HEAD both change c.txt.
    let base = repo.head().unwrap().peel_to_commit().unwrap();
    let sig = Signature::now("Tester", "tester@example.invalid").unwrap();
    let mut tb = repo.treebuilder(Some(&base.tree().unwrap())).unwrap();
    tb.insert("c.txt", repo.blob(b"theirs\n").unwrap(), 0o100644).unwrap();
    let theirs_tree = repo.find_tree(tb.write().unwrap()).unwrap();
    let theirs = repo
        .commit(Some("refs/heads/other"), &sig, &sig, "Fix: theirs", &theirs_tree, &[&base])
        .unwrap();
    write(&dir.join("c.txt"), "ours\n");
    commit_all(&repo, "Fix: ours");
    if conflict {
        repo.merge(&[&repo.find_annotated_commit(theirs).unwrap()], None, None).unwrap();
    }
    write(&dir.join("sub/keep.txt"), "keep staged\n");
    stage(&repo, "sub/keep.txt");
    // Every other kind of change, some on the same file in both halves.
    write(&dir.join("a.txt"), "a changed\n");
    write(&dir.join("both.txt"), "both staged\n");
    stage(&repo, "both.txt");
    write(&dir.join("both.txt"), "both staged then changed\n");
    write(&dir.join("added.txt"), "added\n");
    stage(&repo, "added.txt");
    let mut index = repo.index().unwrap();
    index.remove_path(Path::new("gone.txt")).unwrap();
    index.write().unwrap();
    fs::remove_file(dir.join("gone.txt")).unwrap();
    fs::remove_file(dir.join("unstaged_gone.txt")).unwrap();
    write(&dir.join("new.txt"), "new\n");
    write(&dir.join("newdir/x.txt"), "x\n");
    write(&dir.join("debug.log"), "ignored\n");
    let index_before = fs::read(dir.join(".git/index")).unwrap();
    let objects = |dir: &Path| {
        let mut all = vec![];
        for d in fs::read_dir(dir.join(".git/objects")).unwrap() {
            let d = d.unwrap().path();
            if d.is_dir() {
                all.extend(fs::read_dir(&d).unwrap().map(|f| f.unwrap().path()));
            }
        }
        all.sort();
        all
    };
    let objects_before = objects(&dir);

    let out = text(call(&GitStatus::new(r.guard.clone()), json!({"path": "proj"})).await);
    let [staged, unstaged, untracked, conflicted] = reference_sections(&repo);
    assert!(!staged.is_empty() && !unstaged.is_empty() && !untracked.is_empty());
    let want_conflicts: &[&str] = if conflict { &["c.txt"] } else { &[] };
    assert_eq!(conflicted, want_conflicts);
    assert!(staged.contains(&"new: added.txt".to_owned()), "{staged:?}");
    assert!(staged.contains(&"deleted: gone.txt".to_owned()), "{staged:?}");
    assert!(staged.contains(&"modified: sub/keep.txt".to_owned()), "{staged:?}");
    assert!(unstaged.contains(&"modified: both.txt".to_owned()), "{unstaged:?}");
    assert!(staged.contains(&"modified: both.txt".to_owned()), "{staged:?}");
    for (title, items) in [
        ("staged", staged),
        ("not staged", unstaged),
        ("untracked", untracked),
        ("conflicted", conflicted),
    ] {
        if items.is_empty() {
            assert!(!out.contains(&format!("{title} (")), "{out}");
            continue;
        }
        let mut want = format!("{title} ({}):\n", items.len());
        for item in items {
            want.push_str(&format!("  {item}\n"));
        }
        assert!(out.contains(&want), "expected\n{want}in\n{out}");
    }
    assert!(!out.contains("debug.log"), "{out}");
    assert_eq!(fs::read(dir.join(".git/index")).unwrap(), index_before, "status wrote the index");
    assert_eq!(objects(&dir), objects_before, "status wrote objects into the repository");
}

/// ARIA's private copies of the index under `.git/aria/`.
fn status_caches(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir.join(".git/aria")) else { return vec![] };
    entries.map(|e| e.unwrap().path()).collect()
}

#[tokio::test]
async fn touched_files_are_hashed_once_into_a_private_stat_cache_never_into_the_users_index() {
    let r = root();
    let dir = r.root.join("proj");
    let repo = repo(&dir, &[("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")]);
    // Every file touched, none changed: the index's stat data no longer matches.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(10);
    for f in ["a.txt", "b.txt", "c.txt"] {
        fs::File::options().write(true).open(dir.join(f)).unwrap().set_modified(later).unwrap();
    }
    let user_index = fs::read(dir.join(".git/index")).unwrap();
    let tool = GitStatus::new(r.guard.clone());
    let out = text(call(&tool, json!({"path": "proj"})).await);
    assert!(out.contains("working tree clean"), "{out}");
    assert_eq!(
        fs::read(dir.join(".git/index")).unwrap(),
        user_index,
        "the user's index was written"
    );
    // The private copy holds the refreshed stat data, so the next status hashes nothing.
    let caches = status_caches(&dir);
    assert_eq!(caches.len(), 1, "{caches:?}");
    let cached = git2::Index::open(&caches[0]).unwrap();
    let entry = cached.get_path(Path::new("a.txt"), 0).unwrap();
    let mtime = fs::metadata(dir.join("a.txt")).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(i64::from(entry.mtime.seconds()), mtime.mtime(), "the stat cache was refreshed");
    let user = git2::Index::open(&dir.join(".git/index")).unwrap();
    assert_ne!(
        i64::from(user.get_path(Path::new("a.txt"), 0).unwrap().mtime.seconds()),
        mtime.mtime()
    );
    assert!(text(call(&tool, json!({"path": "proj"})).await).contains("working tree clean"));

    // The user stages a change: the copy is of an older index and is replaced, not used.
    write(&dir.join("b.txt"), "b staged\n");
    stage(&repo, "b.txt");
    // A change of the same size, in the same second as the last status: still seen.
    write(&dir.join("c.txt"), "C\n");
    let out = text(call(&tool, json!({"path": "proj"})).await);
    assert!(out.contains("staged (1):\n  modified: b.txt\n"), "{out}");
    assert!(out.contains("not staged (1):\n  modified: c.txt\n"), "{out}");
    assert_eq!(status_caches(&dir).len(), 1, "the stale copy is removed");
}

/// History is a read path too. Sensitive files committed in the past (at
/// the top and in subdirectories, added, changed, deleted) never show their lines, whichever
/// two sides are compared.
#[tokio::test]
async fn diff_never_shows_sensitive_files_from_history() {
    let r = root();
    let dir = r.root.join("proj");
    let repo = repo(
        &dir,
        &[
            (".env", "TOKEN=history-secret-one\n"),
            ("config/.env.production", "DB_PASS=history-secret-two\n"),
            ("deploy/server.pem", "history-secret-three\n"),
            (".ssh/id_rsa", "history-secret-four\n"),
            ("app.txt", "v1\n"),
        ],
    );
    let first = head(&repo);
    write(&dir.join(".env"), "TOKEN=history-secret-five\n");
    write(&dir.join("config/.env.production"), "DB_PASS=history-secret-six\n");
    fs::remove_file(dir.join("deploy/server.pem")).unwrap();
    write(&dir.join("credentials.json"), "{\"k\": \"history-secret-seven\"}\n");
    write(&dir.join("app.txt"), "v2\n");
    let second = commit_all(&repo, "Feat: second");
    // And a staged change on top.
    write(&dir.join(".env"), "TOKEN=history-secret-eight\n");
    stage(&repo, ".env");
    let diff = GitDiff::new(r.guard.clone());
    let (first, second) = (first.to_string(), second.to_string());
    for args in [
        json!({"path": "proj", "from": first, "to": second}),
        json!({"path": "proj", "from": second, "to": first}),
        json!({"path": "proj", "from": first}),
        json!({"path": "proj", "from": "HEAD~1", "to": "HEAD"}),
        json!({"path": "proj", "staged": true}),
        json!({"path": "proj"}),
    ] {
        let out = text(call(&diff, args.clone()).await);
        assert!(!out.contains("history-secret"), "{args}: {out}");
        if args.get("staged").is_none() && args.get("from").is_some() {
            assert!(out.contains("+v2") || out.contains("-v2"), "{args}: {out}");
            for hidden in [".env", "config/.env.production", "credentials.json"] {
                assert!(
                    out.contains(&format!("[{hidden} changed; it is a sensitive file")),
                    "{args}: {hidden}: {out}"
                );
            }
        }
    }
    let staged = text(call(&diff, json!({"path": "proj", "staged": true})).await);
    assert!(staged.contains("[.env changed; it is a sensitive file"), "{staged}");
}
