//! Opening a file strictly beneath a root directory, without following any symlink: the
//! time-of-check/time-of-use gap between the path guard's check and the open is closed by the
//! kernel (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), with a component-by-component
//! `openat(O_NOFOLLOW)` walk as the fallback on kernels without `openat2` (before Linux 5.6).
//!
//! The path guard hands out real, symlink-free paths, so refusing every symlink here loses
//! nothing: if one appears, something changed on disk since the check.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// How [`open_beneath`] opens its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    Read,
    /// Read, and never block in `open` (a FIFO swapped in after a check cannot hang the caller).
    ReadNonBlocking,
    /// Create if missing, truncate (`>`).
    Write,
    /// Create if missing, append (`>>`).
    Append,
}

impl OpenMode {
    fn flags(self) -> libc::c_int {
        let base = libc::O_CLOEXEC | libc::O_NOCTTY;
        match self {
            OpenMode::Read => base | libc::O_RDONLY,
            OpenMode::ReadNonBlocking => base | libc::O_RDONLY | libc::O_NONBLOCK,
            OpenMode::Write => base | libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            OpenMode::Append => base | libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND,
        }
    }
}

/// Opens `relative` beneath `root`. Refuses absolute paths, `.`/`..` components and any
/// symlink on the way (`ELOOP` / `EXDEV` from the kernel, `InvalidInput` here).
pub fn open_beneath(root: &Path, relative: &Path, mode: OpenMode) -> io::Result<File> {
    let mut names = Vec::new();
    for c in relative.components() {
        match c {
            Component::Normal(n) => names.push(n),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a plain relative path", relative.display()),
                ));
            }
        }
    }
    if names.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty relative path"));
    }
    let dir = File::open(root)?;
    match openat2(dir.as_raw_fd(), relative, mode) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => walk(dir, &names, mode),
        other => other,
    }
}

fn cstring(p: &[u8]) -> io::Result<CString> {
    CString::new(p).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))
}

/// Wraps a descriptor the kernel just returned.
fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("descriptor out of range"))?;
    // SAFETY: `fd` was just returned by a successful open call and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `struct open_how` of openat2(2) (libc's is `non_exhaustive`, so it cannot be built here).
#[cfg(target_os = "linux")]
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

#[cfg(target_os = "linux")]
fn openat2(dir: RawFd, relative: &Path, mode: OpenMode) -> io::Result<File> {
    let path = cstring(relative.as_os_str().as_bytes())?;
    let how = OpenHow {
        flags: mode.flags() as u64,
        mode: if matches!(mode, OpenMode::Read | OpenMode::ReadNonBlocking) { 0 } else { 0o666 },
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: `path` is a NUL-terminated string and `how` a valid open_how, both alive for
    // the call; the size passed is the struct's size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    owned(fd).map(File::from)
}

#[cfg(not(target_os = "linux"))]
fn openat2(_dir: RawFd, _relative: &Path, _mode: OpenMode) -> io::Result<File> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// The fallback: one `openat(O_NOFOLLOW)` per component.
fn walk(dir: File, names: &[&std::ffi::OsStr], mode: OpenMode) -> io::Result<File> {
    let mut current = OwnedFd::from(dir);
    let last = names.len() - 1;
    for (i, name) in names.iter().enumerate() {
        let c = cstring(name.as_bytes())?;
        let flags = if i == last {
            mode.flags() | libc::O_NOFOLLOW
        } else {
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC
        };
        // SAFETY: `current` is an open directory descriptor and `c` a NUL-terminated name,
        // both alive for the call.
        let fd =
            unsafe { libc::openat(current.as_raw_fd(), c.as_ptr(), flags, 0o666 as libc::c_uint) };
        current = owned(libc::c_long::from(fd))?;
    }
    Ok(File::from(current))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn opens_creates_and_appends_beneath_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let rel = Path::new("sub/f.txt");
        open_beneath(dir.path(), rel, OpenMode::Write).unwrap().write_all(b"a").unwrap();
        open_beneath(dir.path(), rel, OpenMode::Append).unwrap().write_all(b"b").unwrap();
        let mut s = String::new();
        open_beneath(dir.path(), rel, OpenMode::Read).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "ab");
    }

    #[test]
    fn symlinks_and_climbing_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        symlink(outside.path().join("x"), dir.path().join("file_link")).unwrap();
        for rel in ["out/x", "file_link", "../x", "/etc/passwd", "."] {
            let r = open_beneath(dir.path(), Path::new(rel), OpenMode::Write);
            assert!(r.is_err(), "{rel} was opened");
        }
        assert!(!outside.path().join("x").exists());
        let names = [std::ffi::OsStr::new("out"), std::ffi::OsStr::new("x")];
        let r = walk(File::open(dir.path()).unwrap(), &names, OpenMode::Write);
        assert!(r.is_err(), "the fallback followed a symlink");
        assert!(!outside.path().join("x").exists());
    }
}
