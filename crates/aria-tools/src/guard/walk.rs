//! The component-by-component walk behind [`PathGuard`](crate::PathGuard) resolution.
//!
//! Rules, applied at every step:
//! - `cur` is always a real directory path (no symlinks), so `..` means the real parent, as it
//!   does for the kernel after it has followed a link.
//! - Once the walk is inside a root it may not leave it, neither by `..` ([`EscapesRoot`]) nor by
//!   a symlink ([`SymlinkEscape`]). An absolute input may pass outside the roots *before* it first
//!   reaches one (`/home/u/link-to-root/...`); only where it lands matters then.
//! - Every symlink is resolved by a nested walk of its target under the same rules, with one hop
//!   budget for the whole resolution.
//! - Nothing is reported about the disk outside the roots: a missing file or an unreadable
//!   directory there is [`OutsideRoots`], never "not found".
//!
//! [`EscapesRoot`]: PathRefusal::EscapesRoot
//! [`SymlinkEscape`]: PathRefusal::SymlinkEscape
//! [`OutsideRoots`]: PathRefusal::OutsideRoots

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::guard::lexical::{self, Seg};
use crate::guard::path::{PathError, PathRefusal, join_segs};

/// Most symlinks followed while resolving one path (Linux uses 40 too).
pub(crate) const MAX_SYMLINK_HOPS: u32 = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Existing,
    Create,
}

/// Where a walk ended: `real` is the deepest existing real path; `missing_from` is the index of
/// the first segment that does not exist, if any.
#[derive(Debug)]
pub(crate) struct Walked {
    pub(crate) real: PathBuf,
    pub(crate) missing_from: Option<usize>,
}

pub(crate) struct Walker<'g> {
    roots: &'g [PathBuf],
    input: &'g str,
    mode: Mode,
    hops: u32,
}

impl<'g> Walker<'g> {
    pub(crate) fn new(roots: &'g [PathBuf], input: &'g str, mode: Mode) -> Self {
        Walker { roots, input, mode, hops: 0 }
    }

    fn inside(&self, p: &Path) -> bool {
        self.roots.iter().any(|r| p.starts_with(r))
    }

    fn outside(&self, real: PathBuf) -> PathError {
        PathRefusal::OutsideRoots { input: self.input.to_owned(), real, roots: self.roots.to_vec() }
            .into()
    }

    /// An ordinary failure at `at`, or [`PathRefusal::OutsideRoots`] if `at` is outside the roots
    /// (so that nothing is revealed about the disk there).
    fn fail_at(&self, at: &Path, err: PathError) -> PathError {
        if self.inside(at) { err } else { self.outside(at.to_path_buf()) }
    }

    /// Walks `segs` starting from the real directory `start`.
    pub(crate) fn walk(&mut self, start: PathBuf, segs: &[Seg<'_>]) -> Result<Walked, PathError> {
        let mut cur = start;
        let mut entered = self.inside(&cur);
        for (i, seg) in segs.iter().enumerate() {
            match *seg {
                Seg::Cur => {}
                Seg::Parent => {
                    let up = cur.parent().map_or_else(|| cur.clone(), Path::to_path_buf);
                    if entered && !self.inside(&up) {
                        let root = self
                            .roots
                            .iter()
                            .filter(|r| cur.starts_with(r))
                            .min_by_key(|r| r.as_os_str().len())
                            .cloned()
                            .unwrap_or_else(|| cur.clone());
                        return Err(PathRefusal::EscapesRoot {
                            input: self.input.to_owned(),
                            root,
                            roots: self.roots.to_vec(),
                        }
                        .into());
                    }
                    cur = up;
                }
                Seg::Name(name) => {
                    let cand = cur.join(name);
                    let meta = match fs::symlink_metadata(&cand) {
                        Ok(m) => m,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            if !self.inside(&cur) {
                                return Err(self.outside(join_segs(&cur, &segs[i..])));
                            }
                            return Ok(Walked { real: cur, missing_from: Some(i) });
                        }
                        Err(source) => {
                            let err = PathError::Io { path: cand.clone(), source };
                            return Err(self.fail_at(&cur, err));
                        }
                    };
                    let is_dir = if meta.file_type().is_symlink() {
                        cur = self.follow(&cur, &cand, entered)?;
                        fs::metadata(&cur).is_ok_and(|m| m.is_dir())
                    } else {
                        cur = cand;
                        meta.is_dir()
                    };
                    if i + 1 < segs.len() && !is_dir {
                        let err = PathError::NotADirectory {
                            requested: self.input.to_owned(),
                            path: cur.clone(),
                        };
                        return Err(self.fail_at(&cur, err));
                    }
                }
            }
            entered |= self.inside(&cur);
        }
        Ok(Walked { real: cur, missing_from: None })
    }

    /// Resolves the symlink `link` (found in the real directory `dir`) to a real path.
    fn follow(&mut self, dir: &Path, link: &Path, entered: bool) -> Result<PathBuf, PathError> {
        self.hops += 1;
        if self.hops > MAX_SYMLINK_HOPS {
            return Err(PathRefusal::SymlinkLoop {
                input: self.input.to_owned(),
                limit: MAX_SYMLINK_HOPS,
            }
            .into());
        }
        let target = fs::read_link(link).map_err(|source| {
            self.fail_at(dir, PathError::Io { path: link.to_path_buf(), source })
        })?;
        let start = if target.is_absolute() { PathBuf::from("/") } else { dir.to_path_buf() };
        let segs = lexical::segments(target.as_os_str());
        let escape = |input: &str, roots: &[PathBuf], target: PathBuf| -> PathError {
            PathRefusal::SymlinkEscape {
                input: input.to_owned(),
                link: link.to_path_buf(),
                target,
                roots: roots.to_vec(),
            }
            .into()
        };
        match self.walk(start, &segs) {
            Ok(Walked { real, missing_from: None }) => {
                if entered && !self.inside(&real) {
                    return Err(escape(self.input, self.roots, real));
                }
                Ok(real)
            }
            Ok(Walked { real, missing_from: Some(i) }) => {
                let dest = join_segs(&real, &segs[i..]);
                Err(match self.mode {
                    Mode::Existing => PathError::NotFound {
                        requested: self.input.to_owned(),
                        path: dest,
                        via_link: Some(link.to_path_buf()),
                    },
                    Mode::Create => PathRefusal::DanglingSymlink {
                        input: self.input.to_owned(),
                        link: link.to_path_buf(),
                        target: dest,
                    }
                    .into(),
                })
            }
            Err(PathError::Refused(
                PathRefusal::EscapesRoot { .. } | PathRefusal::OutsideRoots { .. },
            )) if entered => Err(escape(self.input, self.roots, normalize(&dir.join(&target)))),
            Err(e) => Err(e),
        }
    }
}

/// Lexical clean-up of a path, for messages only (never used to decide anything).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
