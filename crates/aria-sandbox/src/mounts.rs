//! The filesystem a sandboxed program sees, planned in the parent as a list of mount
//! operations ([`MountPlan`]) and carried out in the child ([`MountPlan::apply`]) with nothing
//! but system calls on prepared C strings (no allocation after `fork`).
//!
//! The new root is an empty tmpfs, mounted read-only once built. Into it go:
//! - the system's runtime directories read-only (`/usr`, `/bin`, `/sbin`, `/lib*`; a merged-usr
//!   link stays a link), and the few `/etc` files programs need (users, name service, loader
//!   cache, alternatives, certificates) — never `/etc/shadow`, never `$HOME`, `/root`, `/var`
//!   or `/run`;
//! - a private `/tmp` (a tmpfs of its own, gone with the run), a minimal `/dev` (null, zero, full, random,
//!   urandom, a private `/dev/shm`), and a fresh `/proc` of the run's PID namespace;
//! - each root at its own path, read-only or read-write, `noexec` when only the named program
//!   may run; then `.git` and other protected paths read-only on top, and masked paths
//!   (sensitive files, `$ARIA_HOME`) covered by an empty read-only file or directory.
//!
//! When only the named program may run, the system's program directories (`/usr/bin`, …) are
//! mounted `noexec` too, and the program itself (and its helpers) bound back executable: the
//! dynamic loader then cannot map another program from there (`ld.so /bin/sh`).

use std::collections::BTreeSet;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The system directories shown read-only, when present.
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// Directories that hold programs rather than libraries: `noexec` unless any program may run.
const PROGRAM_DIRS: &[&str] = &[
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/usr/games",
    "/usr/libexec",
    "/bin",
    "/sbin",
];

/// `/etc` entries programs need to start and name users, resolve names, find libraries and
/// certificates. Bound read-only when present (a link is resolved and its target bound).
const ETC_ENTRIES: &[&str] = &[
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "gai.conf",
    "services",
    "protocols",
    "localtime",
    "timezone",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "gitconfig",
    "mime.types",
    "magic",
    "magic.mime",
    "os-release",
    "debian_version",
    "lsb-release",
    "locale.alias",
    "locale.conf",
    "terminfo",
    "inputrc",
    "mke2fs.conf",
    "python3",
    "perl",
];

/// `/etc` entries shown only with the network grant.
const ETC_NETWORK: &[&str] = &["resolv.conf"];

/// Device nodes bound into the private `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// How one path is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flags {
    pub(crate) read_only: bool,
    pub(crate) noexec: bool,
}

impl Flags {
    const DEVICE: Flags = Flags { read_only: false, noexec: true };
}

/// One step of the child's filesystem setup. Paths are absolute in the *host's* view;
/// destinations are prefixed with the new root's mount point.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Dir(CString),
    File(CString),
    Symlink {
        target: CString,
        at: CString,
    },
    Bind {
        src: CString,
        dst: CString,
        flags: libc::c_ulong,
    },
    Tmpfs {
        dst: CString,
        flags: libc::c_ulong,
        data: CString,
    },
    Proc {
        dst: CString,
    },
    /// Remount the new root read-only (after every mount point exists).
    SealRoot,
}

/// What the system looks like, probed once: which system directories exist, which are links.
#[derive(Debug)]
struct Layout {
    /// `(path, Some(link target))` for a link, `(path, None)` for a real directory.
    system: Vec<(PathBuf, Option<PathBuf>)>,
    /// Canonical program directories that exist as real directories.
    program_dirs: Vec<PathBuf>,
}

fn layout() -> &'static Layout {
    static LAYOUT: OnceLock<Layout> = OnceLock::new();
    LAYOUT.get_or_init(|| {
        let mut system = Vec::new();
        for dir in SYSTEM_DIRS {
            let p = Path::new(dir);
            match p.symlink_metadata() {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(t) = std::fs::read_link(p) {
                        system.push((p.to_path_buf(), Some(t)));
                    }
                }
                Ok(m) if m.is_dir() => system.push((p.to_path_buf(), None)),
                _ => {}
            }
        }
        let mut program_dirs: Vec<PathBuf> = Vec::new();
        for dir in PROGRAM_DIRS {
            let p = Path::new(dir);
            let is_real_dir = p.symlink_metadata().is_ok_and(|m| m.is_dir());
            if is_real_dir && !program_dirs.iter().any(|d| d == p) {
                program_dirs.push(p.to_path_buf());
            }
        }
        Layout { system, program_dirs }
    })
}

/// Whether `path` (absolute, normalised) is one of the system directories (or `/`, `/etc`,
/// `/proc`, …), which can never be a root: the sandbox mounts those itself, read-only.
pub fn is_system_path(path: &Path) -> bool {
    const EXACT: &[&str] = &["/", "/etc", "/proc", "/sys", "/dev", "/run", "/var", "/boot"];
    EXACT.iter().any(|p| path == Path::new(p))
        || SYSTEM_DIRS.iter().any(|d| path == Path::new(d) || Path::new(d).starts_with(path))
        || PROGRAM_DIRS.iter().any(|d| path == Path::new(d))
}

/// The inputs of a plan: canonical paths, checked by the caller.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// The empty directory the new root's tmpfs is mounted on.
    pub(crate) new_root: &'a Path,
    /// An empty file and an empty directory, bound over masked paths.
    pub(crate) empty_file: &'a Path,
    pub(crate) empty_dir: &'a Path,
    pub(crate) roots: &'a [PathBuf],
    pub(crate) roots_writable: bool,
    /// `Some(files)`: only these may be executed (program, interpreter, helpers).
    pub(crate) exec_only: Option<&'a [PathBuf]>,
    pub(crate) read_only: &'a [PathBuf],
    pub(crate) masked: &'a [PathBuf],
    pub(crate) extra_read: &'a [PathBuf],
    pub(crate) extra_write: &'a [PathBuf],
    pub(crate) network: bool,
}

/// The prepared steps.
#[derive(Debug)]
pub(crate) struct MountPlan {
    pub(crate) ops: Vec<Op>,
    /// The new root's mount point, for `pivot_root`.
    pub(crate) new_root: CString,
    /// What each op does, for error messages (same order as `ops`).
    pub(crate) labels: Vec<String>,
}

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path contains a NUL byte"))
}

struct PlanBuilder<'a> {
    root: &'a Path,
    ops: Vec<Op>,
    labels: Vec<String>,
    made: BTreeSet<PathBuf>,
}

impl PlanBuilder<'_> {
    fn inside(&self, host: &Path) -> PathBuf {
        let rel = host.strip_prefix("/").unwrap_or(host);
        self.root.join(rel)
    }

    fn push(&mut self, op: Op, label: String) {
        self.ops.push(op);
        self.labels.push(label);
    }

    /// Makes the directories leading to `host` (not `host` itself) in the new root.
    fn parents(&mut self, host: &Path) -> io::Result<()> {
        let mut chain: Vec<&Path> = host.ancestors().skip(1).collect();
        chain.reverse();
        for dir in chain {
            if dir == Path::new("/") || !self.made.insert(dir.to_path_buf()) {
                continue;
            }
            let at = self.inside(dir);
            self.push(Op::Dir(cstr(&at)?), format!("create the mount point {}", dir.display()));
        }
        Ok(())
    }

    /// Shows host `src` at `dst` (host view), a directory or a file.
    fn bind(&mut self, src: &Path, dst: &Path, flags: Flags) -> io::Result<()> {
        self.parents(dst)?;
        let at = self.inside(dst);
        let is_dir = src.is_dir();
        if self.made.insert(dst.to_path_buf()) {
            let op = if is_dir { Op::Dir(cstr(&at)?) } else { Op::File(cstr(&at)?) };
            self.push(op, format!("create the mount point {}", dst.display()));
        }
        let mut f = libc::MS_NOSUID;
        if flags != Flags::DEVICE {
            f |= libc::MS_NODEV;
        }
        if flags.read_only {
            f |= libc::MS_RDONLY;
        }
        if flags.noexec {
            f |= libc::MS_NOEXEC;
        }
        let what = if flags.read_only { "read-only" } else { "writable" };
        self.push(
            Op::Bind { src: cstr(src)?, dst: cstr(&at)?, flags: f },
            format!("show {} {what} at {}", src.display(), dst.display()),
        );
        Ok(())
    }

    fn tmpfs(&mut self, dst: &Path, flags: libc::c_ulong, data: &str) -> io::Result<()> {
        self.parents(dst)?;
        let at = self.inside(dst);
        if self.made.insert(dst.to_path_buf()) {
            self.push(Op::Dir(cstr(&at)?), format!("create the mount point {}", dst.display()));
        }
        let data = CString::new(data).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        self.push(
            Op::Tmpfs { dst: cstr(&at)?, flags, data },
            format!("mount a tmpfs at {}", dst.display()),
        );
        Ok(())
    }

    fn symlink(&mut self, target: &Path, at_host: &Path) -> io::Result<()> {
        self.parents(at_host)?;
        if self.made.insert(at_host.to_path_buf()) {
            let at = self.inside(at_host);
            self.push(
                Op::Symlink { target: cstr(target)?, at: cstr(&at)? },
                format!("link {} to {}", at_host.display(), target.display()),
            );
        }
        Ok(())
    }
}

impl MountPlan {
    pub(crate) fn new(req: &Request<'_>) -> io::Result<MountPlan> {
        let mut b = base(req.new_root, req.network)?;
        let sys = Flags { read_only: true, noexec: false };
        if let Some(allowed) = req.exec_only {
            let noexec = Flags { read_only: true, noexec: true };
            for dir in &layout().program_dirs {
                b.bind(dir, dir, noexec)?;
            }
            for file in allowed {
                let in_program_dir = layout().program_dirs.iter().any(|d| file.starts_with(d));
                if in_program_dir {
                    b.bind(file, file, sys)?;
                }
            }
        }
        let user_noexec = req.exec_only.is_some();
        let mut tmp_flags = libc::MS_NOSUID | libc::MS_NODEV;
        if user_noexec {
            tmp_flags |= libc::MS_NOEXEC;
        }
        b.tmpfs(Path::new("/tmp"), tmp_flags, "mode=1777,size=1g")?;
        for dir in req.extra_read {
            b.bind(dir, dir, Flags { read_only: true, noexec: false })?;
        }
        for dir in req.extra_write {
            b.bind(dir, dir, Flags { read_only: false, noexec: false })?;
        }
        let root_flags = Flags { read_only: !req.roots_writable, noexec: user_noexec };
        for root in req.roots {
            b.bind(root, root, root_flags)?;
        }
        for path in req.read_only {
            if path.symlink_metadata().is_ok() {
                b.bind(path, path, Flags { read_only: true, noexec: user_noexec })?;
            }
        }
        for path in req.masked {
            let Ok(meta) = path.symlink_metadata() else { continue };
            let cover = if meta.is_dir() { req.empty_dir } else { req.empty_file };
            if meta.file_type().is_symlink() {
                // A link is not followed by a bind mount's destination lookup in a useful
                // way; a masked link keeps pointing where it did, and its target is either
                // outside the sandbox or masked itself.
                continue;
            }
            b.bind(cover, path, Flags { read_only: true, noexec: true })?;
        }
        b.push(Op::SealRoot, "make the new root read-only".into());
        Ok(MountPlan { ops: b.ops, new_root: cstr(req.new_root)?, labels: b.labels })
    }
}

/// The part of every plan that depends only on the machine: the new root, the system
/// directories, `/etc`, `/dev` and `/proc`. Probing them costs dozens of `stat` and
/// `readlink` calls, so it is planned once per process (per network setting) and copied.
fn base(new_root: &Path, network: bool) -> io::Result<PlanBuilder<'_>> {
    type Cached = (PathBuf, Vec<Op>, Vec<String>, BTreeSet<PathBuf>);
    static CACHE: [OnceLock<Cached>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = &CACHE[usize::from(network)];
    if let Some((root, ops, labels, made)) = slot.get()
        && root == new_root
    {
        return Ok(PlanBuilder {
            root: new_root,
            ops: ops.clone(),
            labels: labels.clone(),
            made: made.clone(),
        });
    }
    let mut b =
        PlanBuilder { root: new_root, ops: Vec::new(), labels: Vec::new(), made: BTreeSet::new() };
    b.push(
        Op::Tmpfs {
            dst: cstr(new_root)?,
            flags: libc::MS_NOSUID | libc::MS_NODEV,
            data: CString::new("mode=0755,size=1m").unwrap_or_default(),
        },
        "mount the new root".into(),
    );
    let sys = Flags { read_only: true, noexec: false };
    for (dir, link) in &layout().system {
        match link {
            Some(target) => b.symlink(target, dir)?,
            None => b.bind(dir, dir, sys)?,
        }
    }
    etc(&mut b, network)?;
    dev(&mut b)?;
    b.parents(Path::new("/proc/x"))?;
    let proc_at = b.inside(Path::new("/proc"));
    b.push(Op::Proc { dst: cstr(&proc_at)? }, "mount /proc".into());
    let _ = slot.set((new_root.to_path_buf(), b.ops.clone(), b.labels.clone(), b.made.clone()));
    Ok(b)
}

fn etc(b: &mut PlanBuilder<'_>, network: bool) -> io::Result<()> {
    let network_entries = if network { ETC_NETWORK } else { &[] };
    for name in ETC_ENTRIES.iter().chain(network_entries) {
        let host = Path::new("/etc").join(name);
        if host.symlink_metadata().is_err() {
            continue;
        }
        // A link (localtime, resolv.conf, os-release) is shown as what it points to, since its
        // target may lie outside what the sandbox shows.
        let Ok(real) = host.canonicalize() else { continue };
        b.bind(&real, &host, Flags { read_only: true, noexec: true })?;
    }
    Ok(())
}

fn dev(b: &mut PlanBuilder<'_>) -> io::Result<()> {
    let dev = Path::new("/dev");
    b.tmpfs(dev, libc::MS_NOSUID | libc::MS_NOEXEC, "mode=0755,size=64k")?;
    for name in DEVICES {
        let host = dev.join(name);
        if host.exists() {
            b.bind(&host, &host, Flags::DEVICE)?;
        }
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        b.symlink(Path::new(target), &dev.join(name))?;
    }
    b.tmpfs(
        &dev.join("shm"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        "mode=1777,size=64m",
    )
}

/// Carries out the plan in the child. Returns the index of the op that failed and the error.
/// Only system calls on data prepared in the parent: safe between `fork` and `exec`.
impl MountPlan {
    pub(crate) fn apply(&self) -> Result<(), (usize, io::Error)> {
        // SAFETY: literal C strings and null pointers, which mount(2) accepts here.
        let private = unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        };
        if private != 0 {
            return Err((usize::MAX, io::Error::last_os_error()));
        }
        for (i, op) in self.ops.iter().enumerate() {
            apply_op(op, &self.new_root).map_err(|e| (i, e))?;
        }
        Ok(())
    }

    /// Makes the new root `/` (moved over the old one, then `chroot`), then enters `cwd`.
    ///
    /// The old root stays mounted underneath, unreachable: the program has no capabilities to
    /// unmount or `chroot` again. `pivot_root` plus a lazy unmount would also drop it, but that
    /// unmount waits for an RCU grace period (milliseconds on a busy machine) on every run.
    pub(crate) fn pivot(&self, cwd: &CString) -> io::Result<()> {
        let null = std::ptr::null::<libc::c_char>();
        // SAFETY: C strings owned by the plan or literals; the calls take no other memory.
        unsafe {
            check(libc::chdir(self.new_root.as_ptr()))?;
            check(libc::mount(c".".as_ptr(), c"/".as_ptr(), null, libc::MS_MOVE, null.cast()))?;
            check(libc::chroot(c".".as_ptr()))?;
            check(libc::chdir(cwd.as_ptr()))?;
        }
        Ok(())
    }
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r != 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn apply_op(op: &Op, new_root: &CString) -> io::Result<()> {
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: every pointer is a NUL-terminated C string owned by the plan (or a literal), or
    // null where the system call allows it; the stack buffers are valid for the kernel to fill.
    unsafe {
        match op {
            Op::Dir(p) => {
                if libc::mkdir(p.as_ptr(), 0o755) != 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
                Ok(())
            }
            Op::File(p) => {
                let fd = libc::open(
                    p.as_ptr(),
                    libc::O_CREAT | libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                    0o644,
                );
                if fd < 0 {
                    let e = io::Error::last_os_error();
                    // An existing file (or a read-only parent holding one) is a fine mount point.
                    return match e.raw_os_error() {
                        Some(
                            libc::EEXIST
                            | libc::EROFS
                            | libc::EACCES
                            | libc::EISDIR
                            | libc::ETXTBSY,
                        ) => Ok(()),
                        _ => Err(e),
                    };
                }
                libc::close(fd);
                Ok(())
            }
            Op::Symlink { target, at } => {
                if libc::symlink(target.as_ptr(), at.as_ptr()) != 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
                Ok(())
            }
            Op::Bind { src, dst, flags } => {
                check(libc::mount(src.as_ptr(), dst.as_ptr(), null, libc::MS_BIND, null.cast()))?;
                // Flags the source mount already has (nosuid, nodev, noexec, ro, atime
                // settings) are kept: a user namespace may not clear them, and dropping them
                // would widen access.
                // glibc fills f_flag from statfs(2)'s f_flags (no /proc/mounts parsing on
                // kernels since 2.6.36, which set ST_VALID).
                let mut st: libc::statvfs = std::mem::zeroed();
                let mut keep: libc::c_ulong = 0;
                if libc::statvfs(dst.as_ptr(), &mut st) == 0 {
                    let f = st.f_flag as libc::c_ulong;
                    for (st_flag, ms_flag) in [
                        (libc::ST_RDONLY, libc::MS_RDONLY),
                        (libc::ST_NOSUID, libc::MS_NOSUID),
                        (libc::ST_NODEV, libc::MS_NODEV),
                        (libc::ST_NOEXEC, libc::MS_NOEXEC),
                        (libc::ST_NOATIME, libc::MS_NOATIME),
                        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
                        (libc::ST_RELATIME, libc::MS_RELATIME),
                    ] {
                        if f & st_flag as libc::c_ulong != 0 {
                            keep |= ms_flag;
                        }
                    }
                }
                check(libc::mount(
                    null,
                    dst.as_ptr(),
                    null,
                    libc::MS_REMOUNT | libc::MS_BIND | flags | keep,
                    null.cast(),
                ))
            }
            Op::Tmpfs { dst, flags, data } => check(libc::mount(
                c"tmpfs".as_ptr(),
                dst.as_ptr(),
                c"tmpfs".as_ptr(),
                *flags,
                data.as_ptr().cast(),
            )),
            Op::Proc { dst } => check(libc::mount(
                c"proc".as_ptr(),
                dst.as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                null.cast(),
            )),
            Op::SealRoot => check(libc::mount(
                null,
                new_root.as_ptr(),
                null,
                libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
                null.cast(),
            )),
        }
    }
}
