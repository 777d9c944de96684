//! Capturing the working tree as a tree object, in an index that is not the user's.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use git2::{Delta, DiffOptions, ErrorCode, Index, Oid, Repository, Signature, Time, Tree};

use super::message::{self, Fields};
use super::{BRANCH_PREFIX, Locked, Snapshot, SnapshotError, SnapshotId, hex, now_secs, time};
use crate::guard::sensitive::SensitivePatterns;

/// Index entries with a stage other than 0 are sides of a merge conflict.
const STAGE_MASK: u16 = 0x3000;

/// The tree of the working tree as it is now (see [`private_index`]).
pub(crate) fn worktree_tree(
    repo: &Repository,
    workdir: &Path,
    sensitive: &SensitivePatterns,
) -> Result<Oid, SnapshotError> {
    let mut index = private_index(repo, workdir, sensitive)?;
    index.write_tree_to(repo).map_err(|e| SnapshotError::git("write the snapshot tree", workdir, e))
}

/// An index of the working tree as it is now: the user's index is copied into a fresh
/// in-memory index (so tracked files that match `.gitignore` stay tracked), then one scan of
/// the working tree adds every file that is changed, or untracked and not ignored, and removes
/// entries whose files are gone. The user's index file is read, never written; the returned
/// index is bound to `repo` (this handle only) and lives in memory.
pub(crate) fn private_index(
    repo: &Repository,
    workdir: &Path,
    sensitive: &SensitivePatterns,
) -> Result<Index, SnapshotError> {
    let git = |action: &str| {
        let action = action.to_owned();
        move |e: git2::Error| SnapshotError::git(&action, workdir, e)
    };
    let user = repo.index().map_err(git("read the index"))?;
    let mut index = Index::new().map_err(git("create an index"))?;
    for entry in user.iter().filter(|e| e.flags & STAGE_MASK == 0) {
        index.add(&entry).map_err(git("copy the index"))?;
    }
    drop(user);
    // Binds the in-memory index to this `Repository` handle only: nothing is written to disk.
    repo.set_index(&mut index).map_err(git("use a private index"))?;
    let mut opts = DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_typechange(true)
        .ignore_submodules(true);
    let diff = repo
        .diff_index_to_workdir(Some(&index), Some(&mut opts))
        .map_err(git("scan the working tree"))?;
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for d in diff.deltas() {
        let Some(path) = d.new_file().path().or(d.old_file().path()) else { continue };
        // Sensitive files are not copied into history. Untracked directories reported whole
        // are nested repositories: they are snapshotted on their own when written.
        if is_sensitive(sensitive, path) {
            continue;
        }
        match d.status() {
            Delta::Deleted => remove.push(path.to_path_buf()),
            Delta::Untracked | Delta::Modified | Delta::Typechange | Delta::Conflicted
                if !std::fs::symlink_metadata(workdir.join(path)).is_ok_and(|m| m.is_dir()) =>
            {
                add.push(path.to_path_buf())
            }
            _ => {}
        }
    }
    drop(diff);
    for path in &remove {
        index.remove_path(path).map_err(git("record a deleted file"))?;
    }
    for path in &add {
        add_settled(&mut index, workdir, path).map_err(git("add a file from the working tree"))?;
    }
    Ok(index)
}

/// Adds `path` from the working tree, tolerating another process that writes or removes the
/// file while the snapshot reads it: libgit2 fails when a file's size changes under its read,
/// so the read is tried again a few times, and a file gone since the scan is left out of the
/// snapshot (what the tree now holds). Other failures also get the retries, then are returned.
fn add_settled(index: &mut Index, workdir: &Path, path: &Path) -> Result<(), git2::Error> {
    const TRIES: u32 = 4;
    let mut attempt = 0;
    loop {
        let error = match index.add_path(path) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if std::fs::symlink_metadata(workdir.join(path)).is_err() {
            // Gone: an untracked file stays out; a tracked one is recorded as deleted.
            return match index.get_path(path, 0) {
                Some(_) => index.remove_path(path),
                None => Ok(()),
            };
        }
        attempt += 1;
        if attempt == TRIES {
            return Err(error);
        }
        std::thread::sleep(std::time::Duration::from_millis(5 << attempt));
    }
}

/// Whether any component of `rel` is a sensitive name (`.env`, `id_rsa`, `.ssh/`, ...).
pub(crate) fn is_sensitive(sensitive: &SensitivePatterns, rel: &Path) -> bool {
    rel.components().any(|c| sensitive.matching(&c.as_os_str().to_string_lossy()).is_some())
}

/// `M path` / `A path` / `D path` for every file that differs between `from` and `to`.
pub(crate) fn changed_files(
    repo: &Repository,
    workdir: &Path,
    from: Option<&Tree<'_>>,
    to: &Tree<'_>,
) -> Result<Vec<String>, SnapshotError> {
    let mut opts = DiffOptions::new();
    opts.include_typechange(true);
    let diff = repo
        .diff_tree_to_tree(from, Some(to), Some(&mut opts))
        .map_err(|e| SnapshotError::git("compare with HEAD", workdir, e))?;
    Ok(diff
        .deltas()
        .filter_map(|d| {
            let (letter, file) = match d.status() {
                Delta::Added => ('A', d.new_file()),
                Delta::Deleted => ('D', d.old_file()),
                Delta::Modified | Delta::Typechange => ('M', d.new_file()),
                _ => return None,
            };
            file.path().map(|p| format!("{letter} {}", p.display()))
        })
        .collect())
}

/// The fixed author of snapshot commits: the user's git identity may be unset, and snapshot
/// commits are ARIA's, not theirs.
pub(crate) fn signature(secs: i64) -> Result<Signature<'static>, git2::Error> {
    Signature::new("ARIA", "aria@localhost", &Time::new(secs, 0))
}

/// HEAD's tree, `None` on an unborn branch.
pub(crate) fn head_commit(repo: &Repository) -> Result<Option<git2::Commit<'_>>, git2::Error> {
    match repo.head() {
        Ok(head) => head.peel_to_commit().map(Some),
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Branch-name safe form of an operation: lower-case letters, digits, `_` and `-`.
pub(super) fn slug(operation: &str) -> String {
    let s: String = operation
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' })
        .collect::<String>()
        .to_ascii_lowercase();
    let s = s.trim_matches('-').to_owned();
    if s.is_empty() { "write".to_owned() } else { s }
}

/// Points a new branch `snapshot/<operation>-<stamp>[-n]` at `commit`, never overwriting one.
pub(crate) fn new_branch(
    repo: &Repository,
    workdir: &Path,
    operation: &str,
    secs: i64,
    commit: Oid,
) -> Result<SnapshotId, SnapshotError> {
    let base = format!("{BRANCH_PREFIX}{}-{}", slug(operation), time::stamp(secs));
    for n in 1..1000 {
        let name = if n == 1 { base.clone() } else { format!("{base}-{n}") };
        match repo.reference(&format!("refs/heads/{name}"), commit, false, "aria snapshot") {
            Ok(_) => return Ok(SnapshotId(name)),
            Err(e) if e.code() == ErrorCode::Exists => continue,
            Err(e) => return Err(SnapshotError::git("create the snapshot branch", workdir, e)),
        }
    }
    Err(SnapshotError::Git {
        action: "create the snapshot branch".into(),
        repository: workdir.to_path_buf(),
        message: format!("999 branches named {base}-n exist already"),
    })
}

/// Commits `tree` with `parents` (no ref is updated: HEAD stays where it is).
pub(crate) fn commit(
    repo: &Repository,
    workdir: &Path,
    tree: Oid,
    parents: &[&git2::Commit<'_>],
    message: &str,
    secs: i64,
) -> Result<Oid, SnapshotError> {
    let git = |e| SnapshotError::git("write the snapshot commit", workdir, e);
    let sig = signature(secs).map_err(git)?;
    let tree = repo.find_tree(tree).map_err(git)?;
    repo.commit(None, &sig, &sig, message, &tree, parents).map_err(git)
}

/// The most git-ignored files one snapshot captures because the operation is about to write
/// them (a directory target may hold many).
pub(crate) const MAX_IGNORED_FILES: usize = 1000;

/// The most bytes of git-ignored files one snapshot captures.
pub(crate) const MAX_IGNORED_BYTES: u64 = 256 * 1024 * 1024;

/// Adds to `index` the files at or under `targets` (relative to the working tree) that exist
/// and are not in it yet: the ones `.gitignore` (or `info/exclude`) keeps out of the scan. An
/// operation about to overwrite such a file must find it in the snapshot, or rollback could not
/// restore it. Sensitive files, git directories and nested repositories stay out. Fails, so the
/// write does not run, when the ignored files are too many or too large to capture.
pub(crate) fn add_ignored_targets(
    index: &mut Index,
    workdir: &Path,
    sensitive: &SensitivePatterns,
    targets: &[PathBuf],
) -> Result<(), SnapshotError> {
    let mut found: Vec<(PathBuf, u64)> = Vec::new();
    for rel in targets {
        collect_uncaptured(index, workdir, sensitive, rel, &mut found, rel)?;
    }
    let bytes: u64 = found.iter().map(|(_, len)| len).sum();
    if bytes > MAX_IGNORED_BYTES {
        return Err(too_much(workdir, targets, format!("{bytes} bytes of them")));
    }
    for (rel, _) in &found {
        index.add_path(rel).map_err(|e| {
            SnapshotError::git("add an ignored file about to be written", workdir, e)
        })?;
    }
    Ok(())
}

fn too_much(workdir: &Path, targets: &[PathBuf], what: String) -> SnapshotError {
    let shown = targets.first().map(|t| workdir.join(t)).unwrap_or_else(|| workdir.to_path_buf());
    SnapshotError::Unsafe {
        path: shown,
        reason: format!(
            "it holds git-ignored files the operation may overwrite ({what}; a snapshot \
             captures at most {MAX_IGNORED_FILES} files and {MAX_IGNORED_BYTES} bytes of \
             them), so the change could not be undone; write fewer or smaller files, or \
             make this change yourself"
        ),
    }
}

/// The files at or below `rel` that exist and are not in `index` (walks directories without
/// following links, not into `.git` or nested repositories).
fn collect_uncaptured(
    index: &Index,
    workdir: &Path,
    sensitive: &SensitivePatterns,
    rel: &Path,
    found: &mut Vec<(PathBuf, u64)>,
    target: &Path,
) -> Result<(), SnapshotError> {
    if rel.as_os_str().is_empty()
        || is_sensitive(sensitive, rel)
        || rel.components().any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
    {
        return Ok(());
    }
    let path = workdir.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&path) else { return Ok(()) };
    if meta.is_dir() {
        if path.join(".git").exists() {
            return Ok(());
        }
        let entries = std::fs::read_dir(&path).map_err(|e| SnapshotError::io("list", &path, e))?;
        let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
        names.sort();
        for name in names {
            collect_uncaptured(index, workdir, sensitive, &rel.join(name), found, target)?;
        }
        return Ok(());
    }
    if !(meta.is_file() || meta.file_type().is_symlink()) || index.get_path(rel, 0).is_some() {
        return Ok(());
    }
    found.push((rel.to_path_buf(), meta.len()));
    if found.len() > MAX_IGNORED_FILES {
        return Err(too_much(workdir, &[target.to_path_buf()], "too many".into()));
    }
    Ok(())
}

/// A snapshot of the locked repository (see the module docs).
pub(crate) fn take(
    locked: &Locked,
    operation: &str,
    session: &str,
    targets: &[PathBuf],
) -> Result<Snapshot, SnapshotError> {
    let (repo, workdir) = (&locked.repo, locked.workdir.as_path());
    let secs = now_secs(SystemTime::now());
    let git = |action: &'static str| move |e| SnapshotError::git(action, workdir, e);
    let relative: Vec<PathBuf> =
        targets.iter().filter_map(|t| super::relative_to(workdir, t)).collect();
    let mut index = private_index(repo, workdir, &locked.sensitive)?;
    add_ignored_targets(&mut index, workdir, &locked.sensitive, &relative)?;
    let tree_id = index.write_tree_to(repo).map_err(git("write the snapshot tree"))?;
    drop(index);
    let head = head_commit(repo).map_err(git("read HEAD"))?;
    let tree = repo.find_tree(tree_id).map_err(git("read the snapshot tree"))?;
    let head_tree = match &head {
        Some(c) => Some(c.tree().map_err(git("read HEAD's tree"))?),
        None => None,
    };
    let changed = changed_files(repo, workdir, head_tree.as_ref(), &tree)?;
    let targets: Vec<String> = relative.iter().map(|p| p.display().to_string()).collect();
    let message = message::snapshot_message(&Fields {
        operation,
        session,
        time: secs,
        targets: &targets,
        changed: &changed,
    });
    let parents: Vec<&git2::Commit<'_>> = head.iter().collect();
    let oid = commit(repo, workdir, tree_id, &parents, &message, secs)?;
    let id = new_branch(repo, workdir, operation, secs, oid)?;
    tracing::info!(repository = %workdir.display(), %id, files_changed = changed.len(), "snapshot taken");
    Ok(Snapshot {
        id,
        commit: hex(oid),
        repository: workdir.to_path_buf(),
        operation: operation.to_owned(),
        session: session.to_owned(),
        time: secs,
        files_changed: changed,
        targets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with `kept.txt` and `gone.txt` in a private index, then `gone.txt` removed
    /// from the working tree, as another process might between the scan and the add.
    fn repo_with_a_removed_file() -> (tempfile::TempDir, Repository, Index) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        for name in ["kept.txt", "gone.txt"] {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        let mut index = Index::new().unwrap();
        repo.set_index(&mut index).unwrap();
        for name in ["kept.txt", "gone.txt"] {
            index.add_path(Path::new(name)).unwrap();
        }
        std::fs::remove_file(dir.path().join("gone.txt")).unwrap();
        (dir, repo, index)
    }

    #[test]
    fn a_file_removed_before_it_is_read_is_recorded_as_deleted_or_left_out() {
        let (dir, _repo, mut index) = repo_with_a_removed_file();
        // Tracked, now gone: the snapshot records the deletion.
        add_settled(&mut index, dir.path(), Path::new("gone.txt")).unwrap();
        assert!(index.get_path(Path::new("gone.txt"), 0).is_none());
        // Never tracked and gone: nothing to record, no error.
        add_settled(&mut index, dir.path(), Path::new("never.txt")).unwrap();
        assert!(index.get_path(Path::new("never.txt"), 0).is_none());
        // A file that is there is added as usual.
        std::fs::write(dir.path().join("kept.txt"), "changed").unwrap();
        add_settled(&mut index, dir.path(), Path::new("kept.txt")).unwrap();
        assert!(index.get_path(Path::new("kept.txt"), 0).is_some());
    }

    #[test]
    fn a_file_that_cannot_be_read_still_fails_after_the_retries() {
        let (dir, _repo, mut index) = repo_with_a_removed_file();
        // A directory where a file is expected exists but is no file: libgit2 refuses it.
        std::fs::create_dir(dir.path().join("gone.txt")).unwrap();
        assert!(add_settled(&mut index, dir.path(), Path::new("gone.txt")).is_err());
    }
}
