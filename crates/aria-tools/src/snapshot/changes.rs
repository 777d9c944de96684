//! What changed in a repository since one of its snapshots: the agent asks before a command
//! profile runs when this run changed a file that defines what the profile runs (otherwise
//! the model could choose, unasked, what a profile runs by editing its recipe first).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use git2::{BranchType, Delta, DiffOptions, Repository};

use super::{BRANCH_PREFIX, SnapshotError, Snapshots, capture, push_unique, unknown, workdir_of};

impl Snapshots {
    /// The id of the working tree of the repository at `repository` as a snapshot taken now
    /// would record it (the hex id of that tree object): equal ids mean the same content of
    /// every file a snapshot captures (tracked, staged, and untracked but not ignored;
    /// sensitive files left out). A snapshot's commit has exactly this tree, so the id read
    /// right after a snapshot is the snapshot's (unless the snapshot also captured ignored
    /// files its operation was about to write, which this id leaves out). The governed workflow keys check results by
    /// it. Writes the tree object (no ref, no commit) and touches nothing else; takes the
    /// repository's lock while it reads.
    pub fn state_id(&self, repository: &Path) -> Result<String, SnapshotError> {
        let locked = self.open(repository, false)?;
        let tree = capture::worktree_tree(&locked.repo, &locked.workdir, &locked.sensitive)?;
        Ok(tree.to_string())
    }

    /// The files of `repository` that differ now from the snapshot `id` (its branch name, with
    /// or without `snapshot/`), as absolute paths: changed, added or deleted since it was
    /// taken, by content. Ignored files are not in snapshots, so an ignored file (not inside
    /// an ignored directory) counts when its inode changed since the snapshot's second: a
    /// `GNUmakefile` listed in `.gitignore` is still seen. Reads only; takes no lock.
    pub fn changed_since(
        &self,
        id: &str,
        repository: &Path,
    ) -> Result<Vec<PathBuf>, SnapshotError> {
        let what = |action: &str| {
            let repository = repository.to_path_buf();
            let action = action.to_owned();
            move |e: git2::Error| SnapshotError::Git {
                action,
                repository,
                message: e.message().to_owned(),
            }
        };
        let repo = Repository::open(repository).map_err(what("open the repository"))?;
        let workdir = workdir_of(&repo)?;
        let branch = if id.starts_with(BRANCH_PREFIX) {
            id.to_owned()
        } else {
            format!("{BRANCH_PREFIX}{id}")
        };
        let commit = repo
            .find_branch(&branch, BranchType::Local)
            .and_then(|b| b.get().peel_to_commit())
            .map_err(|_| unknown(id, Some(repository)))?;
        let taken = commit.time().seconds();
        let tree = commit.tree().map_err(what("read the snapshot"))?;
        let mut opts = DiffOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(true)
            .recurse_ignored_dirs(false)
            .include_typechange(true);
        let diff = repo
            .diff_tree_to_workdir(Some(&tree), Some(&mut opts))
            .map_err(what("compare the working tree with the snapshot"))?;
        let mut changed = Vec::new();
        for delta in diff.deltas() {
            for file in [delta.new_file(), delta.old_file()] {
                let Some(rel) = file.path() else { continue };
                let path = workdir.join(rel);
                if delta.status() == Delta::Ignored && !changed_after(&path, taken) {
                    continue;
                }
                push_unique(&mut changed, path);
            }
        }
        Ok(changed)
    }
}

/// Whether `path` is a file whose inode changed at or after `secs` (Unix time). The change
/// time cannot be set back from user space, unlike the modification time.
fn changed_after(path: &Path, secs: i64) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.ctime() >= secs)
}
