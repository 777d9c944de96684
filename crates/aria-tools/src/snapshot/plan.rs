//! What [`Snapshots::before_write`] would do for a call, without doing it: the dry run's
//! answer to "what restore point would this write get?". Nothing is initialised, locked,
//! committed or pruned; only repositories are discovered.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{
    BRANCH_PREFIX, SnapshotError, Snapshots, canonical, capture, ceiling_of, discover,
    nearest_existing, parent_or_self, targets,
};

/// A snapshot a write would take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedSnapshot {
    /// The working tree that would be snapshotted.
    pub repository: PathBuf,
    /// The root is not a git repository yet: it would be initialised first.
    pub initialise: bool,
    /// The branch the restore point would get, with the time of the write left as a pattern:
    /// `snapshot/file_write-<YYYY-MM-DD-HHMMSS>`.
    pub branch: String,
    /// Paths the call is about to write (absolute), when known.
    pub targets: Vec<PathBuf>,
}

impl Snapshots {
    /// The snapshots [`Snapshots::before_write`] would take for `tool(args)`, one per
    /// repository, changing nothing. Fails as the real snapshot would: a path outside the
    /// roots, or a root that is not a repository while `auto_init` is off.
    pub fn plan_write(
        &self,
        tool: &str,
        args: &serde_json::Value,
    ) -> Result<Vec<PlannedSnapshot>, SnapshotError> {
        let branch = format!("{BRANCH_PREFIX}{}-<YYYY-MM-DD-HHMMSS>", capture::slug(tool));
        let mut out: Vec<PlannedSnapshot> = Vec::new();
        for (dir, written) in targets::write_targets(&self.guard, tool, args) {
            let (repository, initialise) = self.would_open(&dir)?;
            match out.iter_mut().find(|p| p.repository == repository) {
                Some(p) => p.targets.extend(written),
                None => out.push(PlannedSnapshot {
                    repository,
                    initialise,
                    branch: branch.clone(),
                    targets: written,
                }),
            }
        }
        Ok(out)
    }

    /// The working tree [`Snapshots::open`] would use for `path`, and whether it would have
    /// to initialise the root first.
    fn would_open(&self, path: &Path) -> Result<(PathBuf, bool), SnapshotError> {
        let real = canonical(&nearest_existing(&super::absolute(path, self.first_root())));
        let root = self.root_containing(&real)?.to_path_buf();
        let start = if real.is_dir() { real.clone() } else { parent_or_self(&real) };
        match discover(&start, &ceiling_of(&root)) {
            Ok(repo) => Ok((super::workdir_of(&repo)?, false)),
            Err(e) if e.code() == git2::ErrorCode::NotFound && self.options.auto_init => {
                Ok((root, true))
            }
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                Err(SnapshotError::NotARepository { path: real })
            }
            Err(e) => Err(SnapshotError::git("open the repository", &start, e)),
        }
    }
}
