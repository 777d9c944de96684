//! Git snapshots before every write, and rollback to any of them.
//!
//! [`Snapshots::snapshot`] records the whole working tree of the repository that contains a
//! path — tracked changes, staged changes and untracked files that are not ignored, plus the
//! ignored files among (or under) the paths the operation is about to write — as a
//! commit on a new branch `snapshot/<operation>-<YYYY-MM-DD-HHMMSS>`. The tree is built in a
//! *separate, in-memory* index seeded from the user's index, so the user's HEAD, index file and
//! working tree are never touched; the commit's parent is HEAD (none on an unborn branch). A root
//! that is not a repository is initialised first (a snapshot needs a repository to live in) unless
//! [`SnapshotOptions::auto_init`] is off. The commit message records the operation, session,
//! time and the files that differed from HEAD, so listing reads messages and nothing else.
//!
//! [`Snapshots::rollback`] writes the snapshot's files (or one file or directory) back into the
//! working tree and deletes files that did not exist then — only files that are tracked or
//! untracked-and-not-ignored, and the ignored files the snapshot captured because its operation
//! was about to write them (a `.gitignore` the model wrote first must not make an overwrite
//! irreversible); other ignored files are never touched. Ignored files too many or too large to
//! capture ([`capture::MAX_IGNORED_FILES`], [`capture::MAX_IGNORED_BYTES`]) fail the snapshot,
//! so the write does not run unrecoverably. It then records what it did
//! without moving any branch the user has:
//!
//! - a commit of the state just *before* the rollback (parent HEAD), so the rollback itself can
//!   be undone, and on top of it
//! - the commit "Revert: <operation> (<id>)" whose tree is the state after the rollback,
//!
//! on a new branch `snapshot/rollback-<time>`. The user's branch stays where it was: a rollback
//! restores files, it does not make commits on the user's behalf (the rollback's record is this
//! revert commit; history is only ever added to, never reset or rewritten).
//!
//! Sensitive files (`.env*`, keys, ...: the path guard's list) are never captured when untracked
//! and never written or deleted by a rollback: ARIA does not touch them, and a snapshot must not
//! copy a secret into git history.
//!
//! Snapshots and rollbacks of one repository are serialised by an advisory lock file in its git
//! directory (`aria-snapshot.lock`), across threads and processes. Snapshot branches older than
//! [`SnapshotOptions::prune_after`] are deleted after each snapshot, never the newest of a
//! repository.
//!
//! Ids are branch names (`snapshot/file_write-2026-02-25-143000`); the `snapshot/` prefix may be
//! left out, and a commit id prefix of at least 7 hex digits works too.

mod capture;
mod changes;
mod message;
mod plan;
mod restore;
mod targets;
mod time;

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use git2::{BranchType, Oid, Repository, RepositoryOpenFlags};
use serde::Serialize;

use crate::guard::path::PathGuard;
use crate::guard::sensitive::SensitivePatterns;

pub use plan::PlannedSnapshot;
pub use restore::{Restored, RestoredAction, Rollback};

/// How long snapshot branches are kept by default: 30 days (`[snapshots] prune_after_days`).
pub const DEFAULT_PRUNE_AFTER: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Prefix of every snapshot branch.
pub const BRANCH_PREFIX: &str = "snapshot/";

/// The lock file, inside the git directory, that serialises snapshots and rollbacks.
const LOCK_FILE: &str = "aria-snapshot.lock";

/// How deep [`Snapshots::repositories`] looks below a root for nested repositories.
const NESTED_REPO_DEPTH: usize = 4;

/// Settings from the `[snapshots]` config section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotOptions {
    /// Initialise a root that is not a git repository on its first write.
    pub auto_init: bool,
    /// Snapshot branches older than this are pruned (the newest per repository never is).
    pub prune_after: Duration,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        SnapshotOptions { auto_init: true, prune_after: DEFAULT_PRUNE_AFTER }
    }
}

/// A snapshot's id: its branch name, `snapshot/<operation>-<YYYY-MM-DD-HHMMSS>[-n]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct SnapshotId(pub String);

impl fmt::Display for SnapshotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One restore point, as `aria snapshots list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    pub id: SnapshotId,
    /// The commit holding the restore point's tree (hex).
    pub commit: String,
    /// The working tree of the repository it belongs to.
    pub repository: PathBuf,
    pub operation: String,
    pub session: String,
    /// Seconds since the Unix epoch, UTC.
    pub time: i64,
    /// Files that differed from HEAD when it was taken (`M path`, `A path`, `D path`).
    pub files_changed: Vec<String>,
    /// Paths the operation said it was about to write, relative to the repository, if known.
    pub targets: Vec<String>,
}

impl Snapshot {
    /// The time as RFC 3339 UTC, e.g. `2026-02-25T14:30:00Z`.
    pub fn time_rfc3339(&self) -> String {
        time::rfc3339(self.time)
    }
}

/// Why a snapshot, list or rollback failed. Every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path} is not inside any allowed root ({roots}); snapshots are taken only there")]
    OutsideRoots { path: PathBuf, roots: String },
    #[error(
        "{path} is not in a git repository and automatic initialisation is off \
         ([snapshots] auto_init = false); run `git init` there, or turn auto_init on"
    )]
    NotARepository { path: PathBuf },
    #[error("the repository at {path} has no working tree (bare); ARIA snapshots need one")]
    Bare { path: PathBuf },
    #[error(
        "there is no snapshot `{id}`{where_}; `aria snapshots list` shows the ids of the \
         restore points (add --root DIR for another root)"
    )]
    Unknown { id: String, where_: String },
    #[error(
        "`{id}` matches several snapshots ({matches}); name the repository with --root DIR, \
         or give the commit id"
    )]
    Ambiguous { id: String, matches: String },
    #[error("{path} is outside the repository {repository} of snapshot {id}")]
    PathOutsideRepository { path: PathBuf, repository: PathBuf, id: String },
    #[error("refusing to write {path}: {reason}")]
    Unsafe { path: PathBuf, reason: String },
    #[error("git failed to {action} in {repository}: {message}")]
    Git { action: String, repository: PathBuf, message: String },
    #[error("cannot {action} {path}: {source}")]
    Io { action: String, path: PathBuf, source: std::io::Error },
}

impl SnapshotError {
    fn git(action: &str, repository: &Path, e: git2::Error) -> Self {
        SnapshotError::Git {
            action: action.to_owned(),
            repository: repository.to_path_buf(),
            message: e.message().to_owned(),
        }
    }
    fn io(action: &str, path: &Path, source: std::io::Error) -> Self {
        SnapshotError::Io { action: action.to_owned(), path: path.to_path_buf(), source }
    }
}

/// Takes snapshots of, lists and restores the repositories under the path guard's roots.
#[derive(Debug, Clone)]
pub struct Snapshots {
    guard: Arc<PathGuard>,
    options: SnapshotOptions,
}

/// An open repository with its working tree, under its lock while this lives.
pub(crate) struct Locked {
    pub(crate) repo: Repository,
    pub(crate) workdir: PathBuf,
    /// Files ARIA never touches are neither captured nor restored.
    pub(crate) sensitive: SensitivePatterns,
    _lock: File,
}

impl Snapshots {
    pub fn new(guard: Arc<PathGuard>, options: SnapshotOptions) -> Self {
        Snapshots { guard, options }
    }

    pub fn options(&self) -> SnapshotOptions {
        self.options
    }

    pub fn guard(&self) -> &PathGuard {
        &self.guard
    }

    /// Snapshots the repository containing `path` (a file or directory inside a root, existing
    /// or not; the innermost repository wins when they nest). `operation` names what is about
    /// to happen (`file_write`, `shell_execute`, ...); `session` is recorded with it.
    pub fn snapshot(
        &self,
        path: &Path,
        operation: &str,
        session: &str,
    ) -> Result<Snapshot, SnapshotError> {
        self.snapshot_targets(path, operation, session, &[])
    }

    /// Like [`Snapshots::snapshot`], recording `targets` (absolute paths the operation is about
    /// to write) in the commit message, so `aria snapshots list --path` finds it.
    pub fn snapshot_targets(
        &self,
        path: &Path,
        operation: &str,
        session: &str,
        targets: &[PathBuf],
    ) -> Result<Snapshot, SnapshotError> {
        let locked = self.open(path, self.options.auto_init)?;
        let snapshot = capture::take(&locked, operation, session, targets)?;
        if let Err(e) = prune_locked(&locked, self.options.prune_after, SystemTime::now()) {
            tracing::warn!(repository = %locked.workdir.display(), error = %e, "pruning old snapshots failed");
        }
        Ok(snapshot)
    }

    /// The restore points of every repository under `root` (every root when `None`), newest
    /// first. With `path`, only those at which that file differs from the working tree now,
    /// or that changed or targeted it.
    pub fn list(
        &self,
        root: Option<&Path>,
        path: Option<&Path>,
    ) -> Result<Vec<Snapshot>, SnapshotError> {
        let mut all = Vec::new();
        for repo_dir in self.repositories(root)? {
            let repo = open_repo(&repo_dir)?;
            let workdir = workdir_of(&repo)?;
            for snapshot in message::read_all(&repo, &workdir)? {
                let keep = match path {
                    None => true,
                    Some(p) => match relative_to(&workdir, &absolute(p, self.first_root())) {
                        Some(rel) => restore::concerns(&repo, &workdir, &snapshot, &rel)?,
                        None => false,
                    },
                };
                if keep {
                    all.push(snapshot);
                }
            }
        }
        all.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| b.id.cmp(&a.id)));
        Ok(all)
    }

    /// Finds the restore point `id` under `root` (every root when `None`).
    pub fn find(&self, id: &str, root: Option<&Path>) -> Result<Snapshot, SnapshotError> {
        let want = id.trim();
        let full = if want.starts_with(BRANCH_PREFIX) {
            want.to_owned()
        } else {
            format!("{BRANCH_PREFIX}{want}")
        };
        let is_hex = want.len() >= 7 && want.chars().all(|c| c.is_ascii_hexdigit());
        let matches: Vec<Snapshot> = self
            .list(root, None)?
            .into_iter()
            .filter(|s| s.id.0 == full || (is_hex && s.commit.starts_with(&want.to_lowercase())))
            .collect();
        match matches.len() {
            1 => Ok(matches.into_iter().next().ok_or_else(|| unknown(id, root))?),
            0 => Err(unknown(id, root)),
            _ => Err(SnapshotError::Ambiguous {
                id: id.to_owned(),
                matches: matches
                    .iter()
                    .map(|s| format!("{} in {}", s.id, s.repository.display()))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Restores the files of snapshot `id` (all of them, or only `path`: a file or directory)
    /// into the working tree, then records the revert commit. See the module docs.
    pub fn rollback(
        &self,
        id: &str,
        root: Option<&Path>,
        path: Option<&Path>,
        session: &str,
    ) -> Result<Rollback, SnapshotError> {
        let snapshot = self.find(id, root)?;
        let locked = self.open(&snapshot.repository, false)?;
        let only = match path {
            None => None,
            Some(p) => {
                let abs = absolute(p, self.first_root());
                Some(relative_to(&locked.workdir, &abs).ok_or_else(|| {
                    SnapshotError::PathOutsideRepository {
                        path: abs.clone(),
                        repository: locked.workdir.clone(),
                        id: snapshot.id.0.clone(),
                    }
                })?)
            }
        };
        restore::rollback(&locked, &snapshot, only.as_deref(), session)
    }

    /// Deletes the snapshot `id` of the repository at `repository` (a restore point that turned
    /// out to guard nothing: the call it was taken for changed no file). A snapshot that is no
    /// longer there is no error.
    pub fn discard(&self, id: &str, repository: &Path) -> Result<(), SnapshotError> {
        if !id.starts_with("snapshot/") {
            return Err(SnapshotError::git(
                "discard a snapshot",
                repository,
                git2::Error::from_str(&format!("`{id}` is not a snapshot branch")),
            ));
        }
        let locked = self.open(repository, false)?;
        match locked.repo.find_branch(id, BranchType::Local) {
            Ok(mut branch) => branch
                .delete()
                .map_err(|e| SnapshotError::git("discard a snapshot", &locked.workdir, e)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(()),
            Err(e) => Err(SnapshotError::git("find a snapshot branch", &locked.workdir, e)),
        }
    }

    /// Deletes snapshot branches older than the configured age in every repository under the
    /// roots, keeping the newest of each. Returns the deleted ids.
    pub fn prune(&self, now: SystemTime) -> Result<Vec<SnapshotId>, SnapshotError> {
        let mut deleted = Vec::new();
        for repo_dir in self.repositories(None)? {
            let locked = self.open(&repo_dir, false)?;
            deleted.extend(prune_locked(&locked, self.options.prune_after, now)?);
        }
        Ok(deleted)
    }

    /// Snapshots every repository a tool call may write, before it runs (the agent loop's
    /// hook): for a call with a `path` argument, the repository containing that path; for
    /// `shell_execute`, the repositories of the paths it writes, and for `apply_patch`, those of
    /// the files it names, or every root when they are not all known; otherwise every root.
    pub fn before_write(
        &self,
        tool: &str,
        args: &serde_json::Value,
        session: &str,
    ) -> Result<Vec<Snapshot>, SnapshotError> {
        // One snapshot per repository, however many of its files the call writes.
        let mut groups: Vec<(PathBuf, Vec<PathBuf>)> = Vec::new();
        for (dir, written) in targets::write_targets(&self.guard, tool, args) {
            let key = self.repository_of(&dir).unwrap_or(dir);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, all)) => all.extend(written),
                None => groups.push((key, written)),
            }
        }
        groups
            .iter()
            .map(|(dir, written)| self.snapshot_targets(dir, tool, session, written))
            .collect()
    }

    /// The working trees of the repositories at or under `root` (every root when `None`):
    /// the one containing the root (not above it) and nested ones a few levels down.
    pub fn repositories(&self, root: Option<&Path>) -> Result<Vec<PathBuf>, SnapshotError> {
        let roots: Vec<PathBuf> = match root {
            Some(r) => {
                let real = fs::canonicalize(r).map_err(|e| SnapshotError::io("open", r, e))?;
                self.root_containing(&real)?;
                vec![real]
            }
            None => self.guard.roots().to_vec(),
        };
        let mut found = Vec::new();
        for root in &roots {
            if let Some(ceiling) = self.root_containing(root).ok().map(ceiling_of)
                && let Ok(repo) = discover(root, &ceiling)
                && let Some(wd) = repo.workdir()
            {
                push_unique(&mut found, canonical(wd));
            }
            nested_repositories(root, NESTED_REPO_DEPTH, &mut found);
        }
        Ok(found)
    }

    /// The working tree of the repository containing `path` (not above its root), if any.
    fn repository_of(&self, path: &Path) -> Option<PathBuf> {
        let real = canonical(&nearest_existing(path));
        let root = self.root_containing(&real).ok()?;
        let start = if real.is_dir() { real.clone() } else { parent_or_self(&real) };
        discover(&start, &ceiling_of(root)).ok()?.workdir().map(canonical)
    }

    fn first_root(&self) -> &Path {
        // `PathGuard::new` refuses an empty root list, so there is always a first root.
        self.guard.roots().first().map(PathBuf::as_path).unwrap_or(Path::new("/"))
    }

    fn root_containing(&self, real: &Path) -> Result<&Path, SnapshotError> {
        self.guard
            .roots()
            .iter()
            .filter(|r| real.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())
            .map(PathBuf::as_path)
            .ok_or_else(|| SnapshotError::OutsideRoots {
                path: real.to_path_buf(),
                roots: self
                    .guard
                    .roots()
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Opens (or, with `init`, creates) the repository containing `path` — never one above the
    /// root that contains it — and takes its lock.
    pub(crate) fn open(&self, path: &Path, init: bool) -> Result<Locked, SnapshotError> {
        let existing = nearest_existing(&absolute(path, self.first_root()));
        let real =
            fs::canonicalize(&existing).map_err(|e| SnapshotError::io("open", &existing, e))?;
        let root = self.root_containing(&real)?.to_path_buf();
        let start = if real.is_dir() { real.clone() } else { parent_or_self(&real) };
        let repo = match discover(&start, &ceiling_of(&root)) {
            Ok(repo) => repo,
            Err(e) if e.code() == git2::ErrorCode::NotFound && init => {
                let repo = Repository::init(&root)
                    .map_err(|e| SnapshotError::git("initialise a repository", &root, e))?;
                // Said once: the next write finds the repository.
                tracing::warn!(
                    "initialised a git repository in {} so that ARIA's changes there can be undone \
                     (`aria snapshots list`, `aria rollback ID`); set [snapshots] auto_init = false \
                     to stop ARIA from doing this",
                    root.display()
                );
                repo
            }
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                return Err(SnapshotError::NotARepository { path: real });
            }
            Err(e) => return Err(SnapshotError::git("open the repository", &start, e)),
        };
        let workdir = workdir_of(&repo)?;
        let lock_path = repo.path().join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| SnapshotError::io("open the lock file", &lock_path, e))?;
        lock.lock().map_err(|e| SnapshotError::io("lock", &lock_path, e))?;
        Ok(Locked { repo, workdir, sensitive: self.guard.sensitive().clone(), _lock: lock })
    }
}

fn unknown(id: &str, root: Option<&Path>) -> SnapshotError {
    SnapshotError::Unknown {
        id: id.to_owned(),
        where_: root.map(|r| format!(" under {}", r.display())).unwrap_or_default(),
    }
}

/// Discovery stops at the parent of the root: a repository above the roots (a dotfiles repo
/// in the home directory) is never written to.
fn ceiling_of(root: &Path) -> PathBuf {
    root.parent().map(Path::to_path_buf).unwrap_or_else(|| root.to_path_buf())
}

fn discover(start: &Path, ceiling: &Path) -> Result<Repository, git2::Error> {
    Repository::open_ext(start, RepositoryOpenFlags::empty(), [ceiling])
}

fn open_repo(workdir: &Path) -> Result<Repository, SnapshotError> {
    Repository::open(workdir).map_err(|e| SnapshotError::git("open the repository", workdir, e))
}

pub(crate) fn workdir_of(repo: &Repository) -> Result<PathBuf, SnapshotError> {
    repo.workdir()
        .map(canonical)
        .ok_or_else(|| SnapshotError::Bare { path: repo.path().to_path_buf() })
}

fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn push_unique(list: &mut Vec<PathBuf>, p: PathBuf) {
    if !list.contains(&p) {
        list.push(p);
    }
}

fn parent_or_self(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_else(|| p.to_path_buf())
}

fn nearest_existing(p: &Path) -> PathBuf {
    let mut cur = p.to_path_buf();
    while fs::symlink_metadata(&cur).is_err() {
        match cur.parent() {
            Some(parent) => cur = parent.to_path_buf(),
            None => break,
        }
    }
    cur
}

fn absolute(p: &Path, base: &Path) -> PathBuf {
    if p.is_absolute() { p.to_path_buf() } else { base.join(p) }
}

/// `path` relative to `workdir`, resolving symlinks in its existing part; `None` when outside.
pub(crate) fn relative_to(workdir: &Path, path: &Path) -> Option<PathBuf> {
    let existing = nearest_existing(path);
    let rest = path.strip_prefix(&existing).ok()?.to_path_buf();
    let real = canonical(&existing).join(rest);
    real.strip_prefix(workdir).ok().map(Path::to_path_buf)
}

/// Directories holding a `.git` below `dir`, down to `depth` levels, skipping hidden and
/// dependency directories.
fn nested_repositories(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    if depth == 0 {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "node_modules" || name == "target" {
            continue;
        }
        let Ok(kind) = entry.file_type() else { continue };
        if !kind.is_dir() {
            continue;
        }
        let path = entry.path();
        if path.join(".git").exists() {
            push_unique(found, canonical(&path));
        }
        nested_repositories(&path, depth - 1, found);
    }
}

fn now_secs(now: SystemTime) -> i64 {
    now.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// Deletes this repository's snapshot branches older than `age`, never the newest one.
fn prune_locked(
    locked: &Locked,
    age: Duration,
    now: SystemTime,
) -> Result<Vec<SnapshotId>, SnapshotError> {
    let mut all = message::read_all(&locked.repo, &locked.workdir)?;
    all.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| b.id.cmp(&a.id)));
    let cutoff = now_secs(now) - age.as_secs() as i64;
    let mut deleted = Vec::new();
    for old in all.iter().skip(1).filter(|s| s.time < cutoff) {
        let name = old.id.0.as_str();
        let mut branch = locked
            .repo
            .find_branch(name, BranchType::Local)
            .map_err(|e| SnapshotError::git("find a snapshot branch", &locked.workdir, e))?;
        branch
            .delete()
            .map_err(|e| SnapshotError::git("delete an old snapshot branch", &locked.workdir, e))?;
        deleted.push(old.id.clone());
    }
    Ok(deleted)
}

/// The commit id as hex.
pub(crate) fn hex(oid: Oid) -> String {
    oid.to_string()
}
