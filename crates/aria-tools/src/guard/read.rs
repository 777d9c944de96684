//! Reading an approved path as text: [`PathGuard::read_text`].
//!
//! Between [`PathGuard::resolve_existing`] and the read, the file could be swapped (for a
//! symlink to a secret, a FIFO that blocks forever, a bigger file). The read therefore:
//! 1. refuses anything that was not a regular file when resolved (a FIFO is never opened);
//! 2. opens the resolved path relative to its root's directory handle with
//!    [`aria_sandbox::open_beneath`] (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` on
//!    Linux, a component-by-component `openat(O_NOFOLLOW)` walk elsewhere), non-blocking: any
//!    component swapped for a symlink, or a path leading out of the root, fails to open, and a
//!    swapped-in FIFO cannot block;
//! 3. compares device and inode of the opened handle with those seen at resolution time (a
//!    different regular file moved into place);
//! 4. re-checks the size from the handle and reads at most `max_bytes + 1` bytes.
//!
//! Hard links are the one thing a path check cannot see: a hard link inside a root to a file
//! outside it is, to the kernel, a file inside the root.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use aria_sandbox::{OpenMode, open_beneath};

use crate::guard::path::{FileKind, PathGuard, Resolved};

/// Largest file [`PathGuard::read_text`] is normally asked to read (10 MiB).
pub const DEFAULT_MAX_READ_BYTES: u64 = 10 * 1024 * 1024;

/// How much of the start of a file is searched for a NUL byte to call it binary.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Why a resolved path could not be read as text.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{} does not exist (any more); list its directory to see what is there", path.display())]
    NotFound { path: PathBuf },
    #[error("{} is a directory, not a file; list it instead", path.display())]
    IsADirectory { path: PathBuf },
    #[error("{} is a {}, not a regular file; only regular files can be read", path.display(), kind.describe())]
    NotRegular { path: PathBuf, kind: FileKind },
    #[error(
        "{} is {size} bytes, over the {max} bytes read limit; read a smaller file, or split it with a command first", path.display()
    )]
    TooLarge { path: PathBuf, size: u64, max: u64 },
    #[error(
        "{} looks like a binary file (a NUL byte at offset {offset}); only text files can be read, so use a tool made for this file type", path.display()
    )]
    Binary { path: PathBuf, offset: usize },
    #[error(
        "{} is not UTF-8 text (first invalid byte at offset {offset}); it may be binary or in another encoding, so convert it to UTF-8 first", path.display()
    )]
    NotUtf8 { path: PathBuf, offset: usize },
    #[error(
        "{} changed between the path check and the read (replaced, moved or turned into a link); try again, and if this repeats, something is rewriting the file", path.display()
    )]
    Changed { path: PathBuf },
    #[error("could not read {}: {source}; check its permissions", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ReadError {
    /// Whether this is a guard decision (audited as a refusal) rather than a plain failure.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            ReadError::NotRegular { .. }
                | ReadError::TooLarge { .. }
                | ReadError::Binary { .. }
                | ReadError::NotUtf8 { .. }
                | ReadError::Changed { .. }
        )
    }

    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::NotFound { path }
            | ReadError::IsADirectory { path }
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Binary { path, .. }
            | ReadError::NotUtf8 { path, .. }
            | ReadError::Changed { path }
            | ReadError::Io { path, .. } => path,
        }
    }
}

impl PathGuard {
    /// Reads a resolved regular file of at most `max_bytes` bytes as UTF-8 text (usually
    /// [`DEFAULT_MAX_READ_BYTES`]). Blocking: call it from `spawn_blocking` in async code.
    pub fn read_text(&self, resolved: &Resolved, max_bytes: u64) -> Result<String, ReadError> {
        let path = resolved.path().to_path_buf();
        let Some(found) = resolved.found else {
            return Err(ReadError::NotFound { path });
        };
        match found.kind {
            FileKind::File => {}
            FileKind::Dir => return Err(ReadError::IsADirectory { path }),
            kind => return Err(ReadError::NotRegular { path, kind }),
        }
        if found.len > max_bytes {
            return Err(ReadError::TooLarge { path, size: found.len, max: max_bytes });
        }
        let file = open_in_root(resolved)?;
        let meta =
            file.metadata().map_err(|source| ReadError::Io { path: path.clone(), source })?;
        if (meta.dev(), meta.ino()) != (found.dev, found.ino) {
            return Err(ReadError::Changed { path });
        }
        if !meta.is_file() {
            return Err(ReadError::NotRegular { path, kind: FileKind::of(&meta) });
        }
        if meta.len() > max_bytes {
            return Err(ReadError::TooLarge { path, size: meta.len(), max: max_bytes });
        }
        // The file may still grow after fstat: read one byte past the limit to notice.
        let cap = usize::try_from(meta.len()).unwrap_or(0);
        let mut bytes = Vec::with_capacity(cap);
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| ReadError::Io { path: path.clone(), source })?;
        let read = bytes.len() as u64;
        if read > max_bytes {
            return Err(ReadError::TooLarge { path, size: read, max: max_bytes });
        }
        let sniff = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
        if let Some(offset) = sniff.iter().position(|b| *b == 0) {
            return Err(ReadError::Binary { path, offset });
        }
        String::from_utf8(bytes)
            .map_err(|e| ReadError::NotUtf8 { path, offset: e.utf8_error().valid_up_to() })
    }
}

fn open_in_root(resolved: &Resolved) -> Result<File, ReadError> {
    let path = resolved.path();
    open_beneath(resolved.root(), resolved.relative(), OpenMode::ReadNonBlocking).map_err(
        |source| match source.kind() {
            io::ErrorKind::NotFound => ReadError::NotFound { path: path.to_path_buf() },
            // ELOOP: a component became a symlink; EXDEV: the path now leads out of the root;
            // InvalidInput: the path is no longer a plain relative one. All: it changed.
            io::ErrorKind::InvalidInput => ReadError::Changed { path: path.to_path_buf() },
            _ if matches!(source.raw_os_error(), Some(libc::ELOOP | libc::EXDEV)) => {
                ReadError::Changed { path: path.to_path_buf() }
            }
            _ => ReadError::Io { path: path.to_path_buf(), source },
        },
    )
}
