//! Rollback: write a snapshot's files back, delete what did not exist then, record the revert.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use git2::{Delta, DiffOptions, FileMode, Index, IndexEntry, IndexTime, Oid, Repository, Tree};
use serde::Serialize;

use super::capture;
use super::message::{self, Fields};
use super::{Locked, Snapshot, SnapshotError, SnapshotId, hex, now_secs};

/// What a rollback did to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoredAction {
    /// Written back with the snapshot's bytes (it was changed or deleted since).
    Written,
    /// Deleted: it did not exist in the snapshot.
    Deleted,
}

/// One file a rollback touched, relative to the repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restored {
    pub path: String,
    pub action: RestoredAction,
}

/// The outcome of [`super::Snapshots::rollback`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rollback {
    /// The restore point that was rolled back to.
    pub snapshot: SnapshotId,
    pub operation: String,
    pub repository: PathBuf,
    /// Every file written or deleted, in path order; empty when the tree already matched.
    pub restored: Vec<Restored>,
    /// The "Revert: ..." commit (hex); `None` when nothing had to change.
    pub revert_commit: Option<String>,
    /// The branch holding the revert commit, whose restore point is the state before the
    /// rollback (so the rollback can be undone); `None` when nothing had to change.
    pub branch: Option<SnapshotId>,
}

/// Whether `rel` (a file or directory, relative to the working tree) concerns snapshot `s`: it
/// was a target or among the changed files, or its content there differs from the file now.
pub(crate) fn concerns(
    repo: &Repository,
    workdir: &Path,
    s: &Snapshot,
    rel: &Path,
) -> Result<bool, SnapshotError> {
    let under = |p: &str| Path::new(p).starts_with(rel);
    if s.targets.iter().any(|t| under(t))
        || s.files_changed.iter().any(|c| c.get(2..).is_some_and(under))
    {
        return Ok(true);
    }
    let git = |e| SnapshotError::git("read a snapshot", workdir, e);
    let oid = Oid::from_str(&s.commit).map_err(git)?;
    let tree = repo.find_commit(oid).and_then(|c| c.tree()).map_err(git)?;
    let then = tree.get_path(rel).ok().map(|e| e.id());
    let on_disk = workdir.join(rel);
    let now = match fs::symlink_metadata(&on_disk) {
        Ok(meta) if meta.is_file() => {
            Some(Oid::hash_file(git2::ObjectType::Blob, &on_disk).map_err(git)?)
        }
        // A directory (compare as "present"), a symlink or nothing.
        Ok(meta) if meta.is_dir() => then,
        Ok(_) => None,
        Err(_) => None,
    };
    Ok(then != now)
}

/// Restores `only` (or everything) from `snapshot` in the locked repository.
pub(crate) fn rollback(
    locked: &Locked,
    snapshot: &Snapshot,
    only: Option<&Path>,
    session: &str,
) -> Result<Rollback, SnapshotError> {
    let (repo, workdir) = (&locked.repo, locked.workdir.as_path());
    let git = |action: &'static str| move |e| SnapshotError::git(action, workdir, e);
    let target_oid = Oid::from_str(&snapshot.commit).map_err(git("read the snapshot"))?;
    let target =
        repo.find_commit(target_oid).and_then(|c| c.tree()).map_err(git("read the snapshot"))?;
    let mut index = capture::private_index(repo, workdir, &locked.sensitive)?;
    // The snapshot captured the ignored files its operation was about to write; their current
    // content goes into the pre-rollback state too, so that undoing the rollback restores them.
    let targets: Vec<PathBuf> = snapshot
        .targets
        .iter()
        .map(PathBuf::from)
        .filter(|t| only.is_none_or(|o| t.starts_with(o) || o.starts_with(t)))
        .collect();
    // Too many to capture: the rollback still runs (it is what the user asked for); only its
    // own undo misses them.
    if let Err(e) = capture::add_ignored_targets(&mut index, workdir, &locked.sensitive, &targets) {
        tracing::warn!(repository = %workdir.display(), error = %e, "the state before the rollback leaves out ignored files");
    }
    let before_id = index.write_tree_to(repo).map_err(git("write the working tree's tree"))?;
    let before = repo.find_tree(before_id).map_err(git("read the working tree"))?;
    let restored = apply(locked, &mut index, &before, &target, only)?;
    let mut outcome = Rollback {
        snapshot: snapshot.id.clone(),
        operation: snapshot.operation.clone(),
        repository: workdir.to_path_buf(),
        restored,
        revert_commit: None,
        branch: None,
    };
    if outcome.restored.is_empty() {
        return Ok(outcome);
    }
    let secs = now_secs(SystemTime::now());
    let head = capture::head_commit(repo).map_err(git("read HEAD"))?;
    let head_tree = match &head {
        Some(c) => Some(c.tree().map_err(git("read HEAD's tree"))?),
        None => None,
    };
    let changed = capture::changed_files(repo, workdir, head_tree.as_ref(), &before)?;
    let pre = message::snapshot_message(&Fields {
        operation: "rollback",
        session,
        time: secs,
        targets: &[],
        changed: &changed,
    });
    let parents: Vec<&git2::Commit<'_>> = head.iter().collect();
    let pre_oid = capture::commit(repo, workdir, before_id, &parents, &pre, secs)?;
    let pre_commit = repo.find_commit(pre_oid).map_err(git("read the pre-rollback commit"))?;
    // The index now holds exactly what was written and deleted: no second scan needed.
    let after_id = index.write_tree_to(repo).map_err(git("write the restored tree"))?;
    let lines: Vec<String> = outcome
        .restored
        .iter()
        .map(|r| match r.action {
            RestoredAction::Written => format!("W {}", r.path),
            RestoredAction::Deleted => format!("D {}", r.path),
        })
        .collect();
    let msg = message::revert_message(&snapshot.operation, &snapshot.id, session, secs, &lines);
    let revert = capture::commit(repo, workdir, after_id, &[&pre_commit], &msg, secs)?;
    let branch = capture::new_branch(repo, workdir, "rollback", secs, revert)?;
    tracing::info!(repository = %workdir.display(), snapshot = %snapshot.id, files = outcome.restored.len(), %branch, "rollback done");
    outcome.revert_commit = Some(hex(revert));
    outcome.branch = Some(branch);
    Ok(outcome)
}

/// Makes the working tree match `target` where it differs from `before` (limited to `only`):
/// deletions first, so a directory can replace a file and a file a directory.
fn apply(
    locked: &Locked,
    index: &mut Index,
    before: &Tree<'_>,
    target: &Tree<'_>,
    only: Option<&Path>,
) -> Result<Vec<Restored>, SnapshotError> {
    let (repo, workdir) = (&locked.repo, locked.workdir.as_path());
    let git = |e| SnapshotError::git("compare the snapshot with the working tree", workdir, e);
    let mut opts = DiffOptions::new();
    opts.include_typechange(true);
    if let Some(p) = only.filter(|p| !p.as_os_str().is_empty()) {
        opts.pathspec(p).disable_pathspec_match(true);
    }
    let diff = repo.diff_tree_to_tree(Some(before), Some(target), Some(&mut opts)).map_err(git)?;
    let mut deletes: Vec<PathBuf> = Vec::new();
    let mut writes: Vec<(PathBuf, Oid, FileMode)> = Vec::new();
    for d in diff.deltas() {
        let (old, new) = (d.old_file(), d.new_file());
        // Sensitive files are left exactly as they are (see the module docs).
        let touches_sensitive = [old.path(), new.path()]
            .into_iter()
            .flatten()
            .any(|p| capture::is_sensitive(&locked.sensitive, p));
        if touches_sensitive {
            continue;
        }
        let removes_old = matches!(d.status(), Delta::Deleted | Delta::Typechange);
        if removes_old
            && let Some(p) = old.path()
            && old.mode() != FileMode::Commit
        {
            deletes.push(p.to_path_buf());
        }
        if matches!(d.status(), Delta::Added | Delta::Modified | Delta::Typechange)
            && let Some(p) = new.path()
            && new.mode() != FileMode::Commit
        {
            writes.push((p.to_path_buf(), new.id(), new.mode()));
        }
    }
    let mut restored = Vec::with_capacity(deletes.len() + writes.len());
    for rel in &deletes {
        let path = checked(workdir, rel)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(SnapshotError::io("delete", &path, e)),
        }
        remove_empty_parents(workdir, &path);
        index.remove_path(rel).map_err(git)?;
        if !writes.iter().any(|(w, _, _)| w == rel) {
            restored.push(Restored {
                path: rel.display().to_string(),
                action: RestoredAction::Deleted,
            });
        }
    }
    for (rel, oid, mode) in &writes {
        write_one(repo, workdir, rel, *oid, *mode)?;
        index.add(&entry(rel, *oid, *mode)).map_err(git)?;
        restored
            .push(Restored { path: rel.display().to_string(), action: RestoredAction::Written });
    }
    restored.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(restored)
}

/// An index entry for a file just written from a blob (no stat data: it is never compared).
fn entry(rel: &Path, id: Oid, mode: FileMode) -> IndexEntry {
    let path = rel.as_os_str().as_encoded_bytes().to_vec();
    let zero = IndexTime::new(0, 0);
    IndexEntry {
        ctime: zero,
        mtime: zero,
        dev: 0,
        ino: 0,
        mode: u32::try_from(i32::from(mode)).unwrap_or(0o100644),
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path,
    }
}

/// `workdir/rel`, refusing when a directory on the way is a symlink (a write must not leave
/// the working tree through one).
fn checked(workdir: &Path, rel: &Path) -> Result<PathBuf, SnapshotError> {
    let mut cur = workdir.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for (i, part) in parts.iter().enumerate() {
        let std::path::Component::Normal(name) = part else {
            return Err(SnapshotError::Unsafe {
                path: workdir.join(rel),
                reason: "the path is not a plain relative path".into(),
            });
        };
        cur.push(name);
        let last = i + 1 == parts.len();
        if !last && fs::symlink_metadata(&cur).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(SnapshotError::Unsafe {
                path: workdir.join(rel),
                reason: format!(
                    "{} is a symbolic link; remove it and roll back again",
                    cur.display()
                ),
            });
        }
    }
    Ok(cur)
}

fn write_one(
    repo: &Repository,
    workdir: &Path,
    rel: &Path,
    oid: Oid,
    mode: FileMode,
) -> Result<(), SnapshotError> {
    let path = checked(workdir, rel)?;
    let blob = repo
        .find_blob(oid)
        .map_err(|e| SnapshotError::git("read a file from the snapshot", workdir, e))?;
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| SnapshotError::io("create the directory", parent, e))?;
    }
    // A symlink or directory in the way is replaced; a regular file is overwritten in place.
    match fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => {
            fs::remove_file(&path).map_err(|e| SnapshotError::io("replace", &path, e))?
        }
        Ok(m) if m.is_dir() => fs::remove_dir(&path)
            .map_err(|e| SnapshotError::io("replace the directory", &path, e))?,
        _ => {}
    }
    if mode == FileMode::Link {
        let target = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(blob.content());
        return std::os::unix::fs::symlink(target, &path)
            .map_err(|e| SnapshotError::io("create the symbolic link", &path, e));
    }
    fs::write(&path, blob.content()).map_err(|e| SnapshotError::io("write", &path, e))?;
    // Git records only the executable bit: keep the file's other bits (a 0600 file stays
    // private) and set execute where read is allowed, as git does.
    let current = fs::metadata(&path)
        .map_err(|e| SnapshotError::io("read the permissions of", &path, e))?
        .permissions()
        .mode()
        & 0o7777;
    let bits = executable_bits(current, mode == FileMode::BlobExecutable);
    if bits != current {
        fs::set_permissions(&path, fs::Permissions::from_mode(bits))
            .map_err(|e| SnapshotError::io("set the permissions of", &path, e))?;
    }
    Ok(())
}

/// `mode` with execute set where read is (executable) or cleared everywhere (not).
fn executable_bits(mode: u32, executable: bool) -> u32 {
    if executable { mode | ((mode & 0o444) >> 2) } else { mode & !0o111 }
}

/// Removes directories left empty by a deletion, up to (not including) the working tree.
fn remove_empty_parents(workdir: &Path, file: &Path) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == workdir || !d.starts_with(workdir) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

#[cfg(test)]
mod tests {
    use super::executable_bits;

    #[test]
    fn only_the_executable_bits_change() {
        assert_eq!(executable_bits(0o644, true), 0o755);
        assert_eq!(executable_bits(0o600, true), 0o700);
        assert_eq!(executable_bits(0o755, false), 0o644);
        assert_eq!(executable_bits(0o700, false), 0o600);
        assert_eq!(executable_bits(0o640, false), 0o640);
    }
}
