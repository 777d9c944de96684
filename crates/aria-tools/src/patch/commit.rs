//! Writing a set of file changes all or nothing, strictly beneath the roots.
//!
//! [`observe`] records what a target is before its new content is computed (its identity, and
//! its text when it has some); [`commit`] then, for every target:
//! 1. opens the target's directory beneath its root with [`BeneathDir`] (one
//!    `openat(O_NOFOLLOW)` per component; missing directories of new files are made there),
//!    and checks that the target is still exactly what was observed;
//! 2. writes the new content to a temp file in that directory (`O_EXCL | O_NOFOLLOW`), with the
//!    old file's permission bits, and syncs it;
//! 3. only when every temp file is written, renames each over its target (`renameat`, which
//!    replaces a name and never follows it), then removes the files to delete.
//!
//! If a rename or removal fails, the targets already changed are put back from the observed
//! text (created files are removed, deleted ones re-created), so a multi-file patch lands whole
//! or not at all. Directories created for new files in step 1 are left in place.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use aria_sandbox::{BeneathDir, EntryStat};

use crate::guard::path::{FileKind, PathGuard, Resolved};
use crate::guard::read::ReadError;

/// Why a set of changes was not (fully) written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(
        "{} changed on disk while the change was being prepared (edited, replaced, created or turned into a link); read it again and retry", path.display()
    )]
    Changed { path: PathBuf },
    #[error("{} is a {}, not a regular file; only regular files can be written", path.display(), kind.describe())]
    NotRegular { path: PathBuf, kind: FileKind },
    #[error("{} is a directory; give a file path inside it", path.display())]
    IsADirectory { path: PathBuf },
    #[error("could not {op} {}: {source}; check the permissions and free space there. Nothing was changed", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "could not {op} {}: {source}. The files already changed were put back, so nothing was changed", path.display()
    )]
    RolledBack {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "could not {op} {}: {source}, and putting back the files already changed failed too ({}); check these files by hand", path.display(), unrestored.join(", ")
    )]
    Inconsistent {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
        unrestored: Vec<String>,
    },
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// What a target was when observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Before {
    /// `None`: the target did not exist.
    pub stat: Option<EntryStat>,
    /// Its text, when it existed and was UTF-8 text within the read limit; what a failed
    /// commit restores.
    pub text: Option<String>,
    /// Why there is no text although the file exists (binary, too large, ...).
    pub unreadable: Option<String>,
}

/// One change: the approved target, what it was, and what it becomes (`None`: delete it).
#[derive(Debug, Clone)]
pub struct Planned {
    pub target: Resolved,
    pub before: Before,
    pub after: Option<String>,
}

fn split(target: &Resolved) -> Result<(&Path, &OsStr), WriteError> {
    let rel = target.relative();
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(WriteError::IsADirectory { path: target.path().to_path_buf() }),
    }
}

fn io_err<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> WriteError + 'p {
    move |source| WriteError::Io { op, path: path.to_path_buf(), source }
}

/// Records what `target` is now and reads its text (at most `max_bytes`). A target that is
/// not a regular file is refused.
pub fn observe(guard: &PathGuard, target: &Resolved, max_bytes: u64) -> Result<Before, WriteError> {
    let path = target.path();
    let (parent, name) = split(target)?;
    let stat = match BeneathDir::open(target.root(), parent, false) {
        Ok(dir) => dir.stat(name).map_err(io_err("inspect", path))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err("open the directory of", path)(e)),
    };
    let Some(st) = stat else {
        if target.exists() {
            return Err(WriteError::Changed { path: path.to_path_buf() });
        }
        return Ok(Before { stat: None, text: None, unreadable: None });
    };
    if st.is_dir() {
        return Err(WriteError::IsADirectory { path: path.to_path_buf() });
    }
    if !st.is_file() {
        let kind = if st.is_symlink() { FileKind::Symlink } else { FileKind::Other };
        return Err(WriteError::NotRegular { path: path.to_path_buf(), kind });
    }
    if target.size().is_none() {
        // Created since the path was resolved.
        return Err(WriteError::Changed { path: path.to_path_buf() });
    }
    let (text, unreadable) = match guard.read_text(target, max_bytes) {
        Ok(text) => (Some(text), None),
        Err(
            e @ (ReadError::Binary { .. } | ReadError::NotUtf8 { .. } | ReadError::TooLarge { .. }),
        ) => (None, Some(e.to_string())),
        Err(ReadError::Changed { path }) => return Err(WriteError::Changed { path }),
        Err(e) => return Err(e.into()),
    };
    let dir = BeneathDir::open(target.root(), parent, false)
        .map_err(io_err("open the directory of", path))?;
    if dir.stat(name).map_err(io_err("inspect", path))? != Some(st) {
        return Err(WriteError::Changed { path: path.to_path_buf() });
    }
    Ok(Before { stat: Some(st), text, unreadable })
}

/// A target opened for the commit, with its temp file once written.
struct Open<'p> {
    plan: &'p Planned,
    dir: BeneathDir,
    name: OsString,
    temp: Option<OsString>,
}

impl Open<'_> {
    fn path(&self) -> &Path {
        self.plan.target.path()
    }
}

/// Where a test makes the commit fail: before the `n`-th rename or removal.
pub(crate) type FailHook<'h> = &'h mut dyn FnMut(usize) -> io::Result<()>;

/// Writes every planned change, all or nothing (see the module docs).
pub fn commit(plans: &[Planned]) -> Result<(), WriteError> {
    commit_with(plans, &mut |_| Ok(()))
}

pub(crate) fn commit_with(plans: &[Planned], fail: FailHook<'_>) -> Result<(), WriteError> {
    let mut open = Vec::with_capacity(plans.len());
    for plan in plans {
        let path = plan.target.path();
        let (parent, name) = split(&plan.target)?;
        let create = plan.before.stat.is_none() && plan.after.is_some();
        let dir = BeneathDir::open(plan.target.root(), parent, create).map_err(|e| {
            if e.raw_os_error().is_some_and(|c| c == libc::ELOOP || c == libc::ENOTDIR) {
                WriteError::Changed { path: path.to_path_buf() }
            } else {
                io_err("open the directory of", path)(e)
            }
        })?;
        if dir.stat(name).map_err(io_err("inspect", path))? != plan.before.stat {
            return Err(WriteError::Changed { path: path.to_path_buf() });
        }
        open.push(Open { plan, dir, name: name.to_owned(), temp: None });
    }
    if let Err(e) = write_temps(&mut open) {
        remove_temps(&open);
        return Err(e);
    }
    let mut done: Vec<usize> = Vec::new();
    // Replacements and creations first, deletions last: a failed deletion leaves nothing
    // half-written that the restore could not put back from memory.
    let order: Vec<usize> = (0..open.len())
        .filter(|&i| open[i].plan.after.is_some())
        .chain((0..open.len()).filter(|&i| open[i].plan.after.is_none()))
        .collect();
    for (step, i) in order.into_iter().enumerate() {
        let o = &open[i];
        let result = fail(step).and_then(|()| match &o.temp {
            Some(temp) => o.dir.rename(temp, &o.name),
            None => o.dir.remove_file(&o.name),
        });
        if let Err(source) = result {
            let op = if o.temp.is_some() { "replace" } else { "delete" };
            let path = o.path().to_path_buf();
            remove_temps(&open);
            let unrestored = restore(&open, &done);
            return Err(if unrestored.is_empty() {
                WriteError::RolledBack { op, path, source }
            } else {
                WriteError::Inconsistent { op, path, source, unrestored }
            });
        }
        open[i].temp = None;
        done.push(i);
    }
    for o in &open {
        // The changes are made; a failed directory sync only weakens crash durability.
        if let Err(e) = o.dir.sync() {
            tracing::warn!(path = %o.path().display(), error = %e, "could not sync the directory");
        }
    }
    Ok(())
}

fn write_temps(open: &mut [Open<'_>]) -> Result<(), WriteError> {
    for o in open.iter_mut() {
        let Some(content) = &o.plan.after else { continue };
        let path = o.plan.target.path();
        let (file, temp) =
            o.dir.create_temp(&o.name).map_err(io_err("create a temporary file next to", path))?;
        o.temp = Some(temp);
        write_file(file, content.as_bytes(), o.plan.before.stat.map(|s| s.permissions()))
            .map_err(io_err("write a temporary file next to", path))?;
    }
    Ok(())
}

fn write_file(mut file: std::fs::File, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    file.write_all(bytes)?;
    if let Some(mode) = mode {
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    file.sync_all()
}

fn remove_temps(open: &[Open<'_>]) {
    for o in open {
        if let Some(temp) = &o.temp
            && let Err(e) = o.dir.remove_file(temp)
        {
            tracing::warn!(path = %o.path().display(), error = %e, "could not remove a temp file");
        }
    }
}

/// Puts the targets in `done` back as they were; returns the paths that could not be.
fn restore(open: &[Open<'_>], done: &[usize]) -> Vec<String> {
    let mut failed = Vec::new();
    for &i in done.iter().rev() {
        let o = &open[i];
        let result = match (&o.plan.before.stat, &o.plan.before.text) {
            (None, _) => o.dir.remove_file(&o.name),
            (Some(st), Some(text)) => put_back(&o.dir, &o.name, text, st.permissions()),
            (Some(_), None) => Err(io::Error::other("its old content was not text")),
        };
        if let Err(e) = result {
            tracing::error!(path = %o.path().display(), error = %e, "could not restore");
            failed.push(o.path().display().to_string());
        }
    }
    failed
}

fn put_back(dir: &BeneathDir, name: &OsStr, text: &str, mode: u32) -> io::Result<()> {
    let (file, temp) = dir.create_temp(name)?;
    let written =
        write_file(file, text.as_bytes(), Some(mode)).and_then(|()| dir.rename(&temp, name));
    if written.is_err() {
        let _ = dir.remove_file(&temp);
    }
    written
}
