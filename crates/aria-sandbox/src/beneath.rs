//! Opening a file strictly beneath a root directory, without following any symlink: the
//! time-of-check/time-of-use gap between the path guard's check and the open is closed by the
//! kernel (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), with a component-by-component
//! `openat(O_NOFOLLOW)` walk as the fallback on kernels without `openat2` (before Linux 5.6).
//!
//! The path guard hands out real, symlink-free paths, so refusing every symlink here loses
//! nothing: if one appears, something changed on disk since the check.
//!
//! Writes go through [`BeneathDir`]: the target's directory is opened beneath the root (one
//! `openat(O_DIRECTORY | O_NOFOLLOW)` per component, creating missing directories with
//! `mkdirat` on the way), and the new content is written to a temp file created in that
//! directory (`O_EXCL | O_NOFOLLOW`) and `renameat`-ed over the target.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// A directory opened beneath a root without following any symlink on the way. Everything
/// done through it (stat, create a temp file, rename, remove) is relative to the handle and
/// never follows a symlink in the final name either, so a path swapped after the path guard's
/// check cannot redirect a write out of the root. This is what atomic file replacement needs:
/// write a temp file next to the target, then `renameat` it over the target.
#[derive(Debug)]
pub struct BeneathDir {
    fd: OwnedFd,
}

/// What `fstatat(AT_SYMLINK_NOFOLLOW)` says about one directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryStat {
    pub dev: u64,
    pub ino: u64,
    /// The full `st_mode` (type and permission bits).
    pub mode: u32,
    pub len: u64,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i128,
}

impl EntryStat {
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }
    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }
    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }
    /// The permission bits (`mode & 0o7777`).
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }
}

/// One plain name: not empty, not `.`/`..`, no `/` and no NUL.
fn entry_name(name: &OsStr) -> io::Result<CString> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{:?} is not a plain file name", name),
        ));
    }
    cstring(bytes)
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

impl BeneathDir {
    /// Opens the directory `relative` beneath `root` (an empty `relative` is the root itself),
    /// one component at a time with `O_DIRECTORY | O_NOFOLLOW`: a symlink anywhere below the
    /// root fails with `ELOOP`/`ENOTDIR`. With `create`, missing directories are made on the
    /// way (`mkdirat`, mode 0o777 less the umask), so they can only appear inside the root.
    pub fn open(root: &Path, relative: &Path, create: bool) -> io::Result<BeneathDir> {
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
        let root =
            std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(root)?;
        let mut dir = BeneathDir { fd: OwnedFd::from(root) };
        for name in names {
            dir = match dir.open_subdir(name) {
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    dir.mkdir(name)?;
                    dir.open_subdir(name)?
                }
                other => other?,
            };
        }
        Ok(dir)
    }

    fn open_subdir(&self, name: &OsStr) -> io::Result<BeneathDir> {
        let c = entry_name(name)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: `self.fd` is an open directory descriptor and `c` a NUL-terminated name,
        // both alive for the call.
        let fd = unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags) };
        Ok(BeneathDir { fd: owned(libc::c_long::from(fd))? })
    }

    fn mkdir(&self, name: &OsStr) -> io::Result<()> {
        let c = entry_name(name)?;
        // SAFETY: as in `open_subdir`.
        let rc = unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) };
        match check(rc) {
            // Someone made it between our open and mkdir: opening it decides whether it is usable.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        }
    }

    /// The entry `name` without following a symlink; `None` if it does not exist.
    // The `stat` field types differ between platforms, so the casts are needed somewhere.
    #[allow(clippy::unnecessary_cast)]
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<EntryStat>> {
        let c = entry_name(name)?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `c` is NUL-terminated, `st` points to writable memory of the right size, and
        // the kernel fills it completely when the call succeeds (checked before reading it).
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                st.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if let Err(e) = check(rc) {
            return if e.kind() == io::ErrorKind::NotFound { Ok(None) } else { Err(e) };
        }
        // SAFETY: fstatat returned 0, so it initialised `st`.
        let st = unsafe { st.assume_init() };
        Ok(Some(EntryStat {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            mode: st.st_mode as u32,
            len: st.st_size as u64,
            mtime_ns: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
        }))
    }

    /// Opens the file `name` in this directory, never through a symlink (`O_NOFOLLOW`).
    pub fn open_file(&self, name: &OsStr, mode: OpenMode) -> io::Result<File> {
        let c = entry_name(name)?;
        let flags = mode.flags() | libc::O_NOFOLLOW;
        // SAFETY: as in `open_subdir`; the mode argument is read only with O_CREAT.
        let fd =
            unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o666 as libc::c_uint) };
        owned(libc::c_long::from(fd)).map(File::from)
    }

    /// Creates a new, empty, uniquely named file next to `hint` (`.{hint}.{pid}.{n}.aria-tmp`,
    /// mode 0o666 less the umask) with `O_EXCL | O_NOFOLLOW`, and returns it with its name.
    pub fn create_temp(&self, hint: &OsStr) -> io::Result<(File, OsString)> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut stem: Vec<u8> = hint.as_bytes().iter().copied().filter(|b| *b != b'/').collect();
        stem.truncate(200);
        let flags = libc::O_WRONLY
            | libc::O_CREAT
            | libc::O_EXCL
            | libc::O_NOFOLLOW
            | libc::O_CLOEXEC
            | libc::O_NOCTTY;
        let mut last = io::Error::other("no temporary name was free");
        for _ in 0..64 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let mut name = b".".to_vec();
            name.extend_from_slice(&stem);
            name.extend_from_slice(format!(".{}.{n}.aria-tmp", std::process::id()).as_bytes());
            let name = OsString::from_vec(name);
            let c = entry_name(&name)?;
            // SAFETY: as in `open_subdir`.
            let fd = unsafe {
                libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o666 as libc::c_uint)
            };
            match owned(libc::c_long::from(fd)) {
                Ok(fd) => return Ok((File::from(fd), name)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// `renameat(from, to)` within this directory: atomically replaces `to` (if `to` is a
    /// symlink, the link itself is replaced, never its target).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (entry_name(from)?, entry_name(to)?);
        let dir = self.fd.as_raw_fd();
        // SAFETY: both names are NUL-terminated and alive for the call; `dir` is open.
        check(unsafe { libc::renameat(dir, f.as_ptr(), dir, t.as_ptr()) })
    }

    /// Removes the file (or symlink) `name` from this directory (`unlinkat`).
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let c = entry_name(name)?;
        // SAFETY: as in `open_subdir`.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) })
    }

    /// Flushes the directory entry changes (after a rename) to disk.
    pub fn sync(&self) -> io::Result<()> {
        let dup = self.fd.try_clone()?;
        File::from(dup).sync_all()
    }
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

    fn name(s: &str) -> &std::ffi::OsStr {
        std::ffi::OsStr::new(s)
    }

    #[test]
    fn a_dir_handle_creates_parents_and_replaces_a_file_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let d = BeneathDir::open(dir.path(), Path::new("x/y"), true).unwrap();
        assert!(dir.path().join("x/y").is_dir());
        d.open_file(name("f.txt"), OpenMode::Write).unwrap().write_all(b"old").unwrap();
        let before = d.stat(name("f.txt")).unwrap().unwrap();
        assert!(before.is_file() && !before.is_dir() && !before.is_symlink());
        assert_eq!(before.len, 3);
        let (mut tmp, tmp_name) = d.create_temp(name("f.txt")).unwrap();
        assert!(tmp_name.to_str().unwrap().starts_with(".f.txt."), "{tmp_name:?}");
        tmp.write_all(b"new!").unwrap();
        d.rename(&tmp_name, name("f.txt")).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("x/y/f.txt")).unwrap(), "new!");
        assert_eq!(d.stat(&tmp_name).unwrap(), None);
        assert_ne!(d.stat(name("f.txt")).unwrap().unwrap().ino, before.ino);
        d.remove_file(name("f.txt")).unwrap();
        assert!(!dir.path().join("x/y/f.txt").exists());
        d.sync().unwrap();
    }

    #[test]
    fn temp_names_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let d = BeneathDir::open(dir.path(), Path::new(""), false).unwrap();
        let (_a, a) = d.create_temp(name("f")).unwrap();
        let (_b, b) = d.create_temp(name("f")).unwrap();
        assert_ne!(a, b);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_dir_handle_never_goes_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        for (rel, create) in [("out", false), ("out", true), ("out/new", true), ("../x", true)] {
            let r = BeneathDir::open(dir.path(), Path::new(rel), create);
            assert!(r.is_err(), "{rel} was opened");
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_final_name_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("t");
        std::fs::write(&target, "outside").unwrap();
        symlink(&target, dir.path().join("link")).unwrap();
        let d = BeneathDir::open(dir.path(), Path::new(""), false).unwrap();
        assert!(d.stat(name("link")).unwrap().unwrap().is_symlink());
        assert!(d.open_file(name("link"), OpenMode::Write).is_err());
        let (mut tmp, tmp_name) = d.create_temp(name("link")).unwrap();
        tmp.write_all(b"inside").unwrap();
        d.rename(&tmp_name, name("link")).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "outside");
        assert_eq!(std::fs::read_to_string(dir.path().join("link")).unwrap(), "inside");
        for bad in ["", ".", "..", "a/b"] {
            assert!(d.stat(name(bad)).is_err(), "{bad:?}");
            assert!(d.remove_file(name(bad)).is_err(), "{bad:?}");
        }
    }
}
