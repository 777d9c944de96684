//! [`PathGuard`]: turns a path the model wrote into a real path inside the allowed roots, or
//! says exactly why not.
//!
//! Resolution happens in user space, one component at a time (see `walk.rs`), so that every
//! symlink on the way is judged by where it really lands, and `..` is applied to real
//! directories the way the kernel applies it. The result is a canonical path with no symlinks
//! left in it; tools then open *that* path, never the text the model sent.
//!
//! Beyond the roots and the sensitive names, two more rules: files that configure ARIA or git
//! are protected for writes (`protected.rs`), whatever the sensitive-file patterns say; and
//! ARIA's own directories ([`AriaDir`]) are refused for reads and writes when a root contains
//! them.
//!
//! The remaining gap — something on disk changing between this check and the `open` — is
//! narrowed in [`PathGuard::read_text`] (no-follow open, then a device+inode comparison), not
//! closed. Closing it needs `openat2(RESOLVE_BENEATH)` on a directory handle held per root,
//! which is planned for `aria-sandbox` (the only crate allowed `unsafe`).

use std::ffi::OsStr;
use std::fmt;
use std::fs::{self, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use crate::guard::lexical::{self, Seg};
use crate::guard::protected;
use crate::guard::sensitive::SensitivePatterns;
use crate::guard::walk::{Mode, Walker};

/// A guard could not be built from the configuration.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error(
        "no roots were given; ARIA needs at least one directory it may work in: pass --root DIR or set ARIA_ROOTS"
    )]
    NoRoots,
    #[error("the root {} cannot be used: {source}; create it or fix --root / ARIA_ROOTS", root.display())]
    RootUnavailable {
        root: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the root {} is not a directory; give a directory with --root or ARIA_ROOTS", root.display())]
    RootNotDirectory { root: PathBuf },
    #[error(
        "the sensitive-file pattern {pattern:?} is invalid because {why}; fix it in the configuration"
    )]
    BadPattern { pattern: String, why: &'static str },
}

fn show(roots: &[PathBuf]) -> String {
    roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// Why a path was refused. Every message says which rule fired and what to do instead; the
/// tools send it to the model verbatim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    #[error(
        "the path is empty; give a file name relative to the first root, or \".\" for the root itself"
    )]
    Empty,
    #[error(
        "the path \"{input}\" contains a control character at byte {position}; names with control characters are not supported, so rename the file or give another path"
    )]
    ControlCharacter { input: String, position: usize },
    #[error(
        "the path {input:?} contains the percent escape \"{sequence}\"; paths are taken literally and never URL-decoded, so write the plain characters instead"
    )]
    EncodedSequence { input: String, sequence: String },
    #[error(
        "the path {input:?} contains {why} ({character:?}); write a plain path with '/' between names"
    )]
    OddCharacter { input: String, character: char, why: &'static str },
    #[error(
        "the path {input:?} starts with '~', which ARIA does not expand; give an absolute path (such as {}/...) or a path relative to that root", root.display()
    )]
    Tilde { input: String, root: PathBuf },
    #[error(
        "the {what} is {length} bytes long, over the limit of {limit} bytes; give a shorter path"
    )]
    TooLong { length: usize, limit: usize, what: &'static str },
    #[error(
        "{input} climbs out of the root {} with '..'; give a path that stays inside the allowed roots ({})", root.display(), show(roots)
    )]
    EscapesRoot { input: String, root: PathBuf, roots: Vec<PathBuf> },
    #[error(
        "{} is outside the allowed roots ({}); add a root with --root or ARIA_ROOTS", real.display(), show(roots)
    )]
    OutsideRoots { input: String, real: PathBuf, roots: Vec<PathBuf> },
    #[error(
        "{} is a symlink to {}, which is outside the allowed roots ({}); ARIA does not follow links out of the roots, so copy the file into a root or add its directory as a root", link.display(), target.display(), show(roots)
    )]
    SymlinkEscape { input: String, link: PathBuf, target: PathBuf, roots: Vec<PathBuf> },
    #[error(
        "{input} goes through more than {limit} symlinks (probably a loop); fix the links or give the real path"
    )]
    SymlinkLoop { input: String, limit: u32 },
    #[error(
        "{} is a symlink to {}, which does not exist; ARIA does not create files through symlinks, so remove the link or give the target path itself", link.display(), target.display()
    )]
    DanglingSymlink { input: String, link: PathBuf, target: PathBuf },
    #[error(
        "the path {input:?} is a Windows path ({form}); ARIA works with POSIX paths: write it with '/' between names, relative to the root {} or absolute under it", root.display()
    )]
    WindowsPath { input: String, form: &'static str, root: PathBuf },
    #[error(
        "{path} is a sensitive file (the name \"{component}\" matches the pattern \"{pattern}\"); ARIA does not read or write secrets files, so if this file is safe, change the sensitive-file patterns in the configuration"
    )]
    Sensitive { path: String, component: String, pattern: String },
    #[error(
        "{path} is protected for writes ({rule}): {why}. Files that configure ARIA or git would let the model change its own protections, and the git directory holds history no snapshot can restore, so ARIA's tools never write them; if this change is wanted, make it yourself"
    )]
    Protected { path: String, rule: &'static str, why: &'static str },
    #[error(
        "{path} is inside {what} {}, which lies within the root {}; ARIA's tools never read or write ARIA's own database, logs and configuration, even inside a root, so work elsewhere in the root or choose roots that do not contain {}", dir.display(), root.display(), dir.display()
    )]
    AriaOwn { path: String, what: &'static str, dir: PathBuf, root: PathBuf },
}

impl PathRefusal {
    /// The message for the user or the model: which rule fired, and what to do.
    pub fn reason(&self) -> String {
        self.to_string()
    }

    /// A short stable name of the rule, for audit records and metrics.
    pub fn rule(&self) -> &'static str {
        match self {
            PathRefusal::Empty => "empty",
            PathRefusal::ControlCharacter { .. } => "control-character",
            PathRefusal::EncodedSequence { .. } => "encoded-sequence",
            PathRefusal::OddCharacter { .. } => "odd-character",
            PathRefusal::Tilde { .. } => "tilde",
            PathRefusal::TooLong { .. } => "too-long",
            PathRefusal::EscapesRoot { .. } => "escapes-root",
            PathRefusal::OutsideRoots { .. } => "outside-roots",
            PathRefusal::SymlinkEscape { .. } => "symlink-escape",
            PathRefusal::SymlinkLoop { .. } => "symlink-loop",
            PathRefusal::DanglingSymlink { .. } => "dangling-symlink",
            PathRefusal::WindowsPath { .. } => "windows-path",
            PathRefusal::Sensitive { .. } => "sensitive",
            PathRefusal::Protected { .. } => "protected",
            PathRefusal::AriaOwn { .. } => "aria-own",
        }
    }
}

fn link_note(via: &Option<PathBuf>) -> String {
    match via {
        Some(link) => format!(" (it is where the symlink {} points)", link.display()),
        None => String::new(),
    }
}

/// Why a path could not be resolved. Only [`PathError::Refused`] is a guard decision; the other
/// outcomes are ordinary failures the model can act on.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error(transparent)]
    Refused(#[from] PathRefusal),
    #[error("{} does not exist{}; check the name or list the directory", path.display(), link_note(via_link))]
    NotFound { requested: String, path: PathBuf, via_link: Option<PathBuf> },
    #[error("{} is not a directory, so \"{requested}\" cannot be inside it; check the path", path.display())]
    NotADirectory { requested: String, path: PathBuf },
    #[error("could not inspect {}: {source}; check its permissions", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl PathError {
    /// The guard's refusal, if this is one.
    pub fn refusal(&self) -> Option<&PathRefusal> {
        match self {
            PathError::Refused(r) => Some(r),
            _ => None,
        }
    }
}

/// What kind of file system object a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    Other,
}

impl FileKind {
    pub(crate) fn of(meta: &Metadata) -> Self {
        let t = meta.file_type();
        if t.is_file() {
            FileKind::File
        } else if t.is_dir() {
            FileKind::Dir
        } else if t.is_symlink() {
            FileKind::Symlink
        } else if t.is_fifo() {
            FileKind::Fifo
        } else if t.is_socket() {
            FileKind::Socket
        } else if t.is_char_device() {
            FileKind::CharDevice
        } else if t.is_block_device() {
            FileKind::BlockDevice
        } else {
            FileKind::Other
        }
    }

    /// A word for messages ("a FIFO", "a directory").
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::File => "regular file",
            FileKind::Dir => "directory",
            FileKind::Symlink => "symlink",
            FileKind::Fifo => "FIFO (named pipe)",
            FileKind::Socket => "socket",
            FileKind::CharDevice => "character device",
            FileKind::BlockDevice => "block device",
            FileKind::Other => "special file",
        }
    }
}

/// Identity of an existing file at resolution time, used to notice a swap before reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) kind: FileKind,
    pub(crate) len: u64,
}

/// A path the guard approved: real, absolute, free of symlinks, inside `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    requested: String,
    path: PathBuf,
    root: PathBuf,
    pub(crate) found: Option<Found>,
}

impl Resolved {
    /// The text the caller asked for.
    pub fn requested(&self) -> &str {
        &self.requested
    }
    /// The canonical path to use for the actual file operation.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// The (canonical) root the path lies in; the innermost one when roots nest.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The path relative to its root (empty for the root itself).
    pub fn relative(&self) -> &Path {
        self.path.strip_prefix(&self.root).unwrap_or(Path::new(""))
    }
    /// Whether the path existed when it was resolved.
    pub fn exists(&self) -> bool {
        self.found.is_some()
    }
    /// What it was when resolved; `None` if it did not exist.
    pub fn kind(&self) -> Option<FileKind> {
        self.found.map(|f| f.kind)
    }
    /// Its size in bytes when resolved; `None` if it did not exist.
    pub fn size(&self) -> Option<u64> {
        self.found.map(|f| f.len)
    }
}

impl fmt::Display for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.path.display().fmt(f)
    }
}

/// One of ARIA's own directories (or files), which its tools never read or write even when a
/// root contains it (`--root ~`). A root *inside* one (the default `$ARIA_HOME/workspace`) is
/// used as usual.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AriaDir {
    /// `$ARIA_HOME`: the database, the audit anchor, logs, `.env`.
    Data,
    /// The configuration directory (`~/.config/aria`).
    Config,
    /// A configuration file named by `--config` or `$ARIA_CONFIG`.
    ConfigFile,
}

impl AriaDir {
    /// Its name in messages.
    pub fn describe(self) -> &'static str {
        match self {
            AriaDir::Data => "ARIA's data directory",
            AriaDir::Config => "ARIA's configuration directory",
            AriaDir::ConfigFile => "ARIA's configuration file",
        }
    }
}

/// Confines file access to a set of root directories and refuses sensitive files.
#[derive(Debug, Clone)]
pub struct PathGuard {
    /// Canonical roots; the first is where relative paths start.
    roots: Vec<PathBuf>,
    /// The roots as configured (absolute, symlinks not resolved), for recognising absolute
    /// inputs written through a symlinked root.
    given: Vec<PathBuf>,
    sensitive: SensitivePatterns,
    /// ARIA's own directories, real paths (see [`PathGuard::with_aria_dir`]).
    aria_dirs: Vec<(AriaDir, PathBuf)>,
}

impl PathGuard {
    /// Builds a guard. Every root must exist and be a directory; roots are canonicalised.
    pub fn new(roots: &[PathBuf], sensitive: SensitivePatterns) -> Result<PathGuard, GuardError> {
        if roots.is_empty() {
            return Err(GuardError::NoRoots);
        }
        let mut real = Vec::with_capacity(roots.len());
        let mut given = Vec::with_capacity(roots.len());
        for root in roots {
            let canonical = fs::canonicalize(root)
                .map_err(|source| GuardError::RootUnavailable { root: root.clone(), source })?;
            if !canonical.is_dir() {
                return Err(GuardError::RootNotDirectory { root: root.clone() });
            }
            let absolute = std::path::absolute(root).unwrap_or_else(|_| canonical.clone());
            if !real.contains(&canonical) {
                real.push(canonical);
                given.push(absolute);
            }
        }
        Ok(PathGuard { roots: real, given, sensitive, aria_dirs: Vec::new() })
    }

    /// Tells the guard where one of ARIA's own directories is, so that a root containing it
    /// (`--root ~`) does not expose it: every path in it is refused, for reads and writes. The
    /// path need not exist yet (creating it is refused too); symlinks in it are resolved.
    pub fn with_aria_dir(mut self, which: AriaDir, path: &Path) -> PathGuard {
        let real = real_or_absolute(path);
        if !self.aria_dirs.iter().any(|(_, p)| *p == real) {
            self.aria_dirs.push((which, real));
        }
        self
    }

    /// ARIA's own directories that lie inside `root` (or are it), as real paths: what a walk
    /// over `root` must skip.
    pub fn aria_dirs_within(&self, root: &Path) -> Vec<PathBuf> {
        self.aria_dirs.iter().filter(|(_, d)| d.starts_with(root)).map(|(_, d)| d.clone()).collect()
    }

    /// The canonical roots, first one first.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The sensitive-file patterns in force.
    pub fn sensitive(&self) -> &SensitivePatterns {
        &self.sensitive
    }

    /// Resolves a path that must exist, for reading or listing.
    pub fn resolve_existing(&self, input: &str) -> Result<Resolved, PathError> {
        self.resolve(input, Mode::Existing, Access::Read)
    }

    /// Resolves a path that must exist, for changing or deleting it: like
    /// [`PathGuard::resolve_existing`], and files protected for writes (`.env*`, `aria.toml`,
    /// `AGENTS.md`, `ARIA.md`, anything in a git directory) are refused.
    pub fn resolve_existing_for_write(&self, input: &str) -> Result<Resolved, PathError> {
        self.resolve(input, Mode::Existing, Access::Write)
    }

    /// Resolves a path to write, which may not exist yet (creating or replacing a file): the
    /// deepest existing ancestor is resolved like [`PathGuard::resolve_existing`], the new part
    /// must be plain names, and files protected for writes are refused.
    pub fn resolve_for_create(&self, input: &str) -> Result<Resolved, PathError> {
        self.resolve(input, Mode::Create, Access::Write)
    }

    /// Why writing an already resolved path would be refused, if it would: the protection
    /// for files that configure ARIA or git (for `aria check path`, which resolves for reading).
    pub fn write_refusal(&self, resolved: &Resolved) -> Option<PathRefusal> {
        self.check_protected(resolved.requested(), resolved.path(), resolved.root()).err()
    }

    /// Where relative paths start. `new` refuses an empty root list and `roots` is private, so
    /// index 0 always exists.
    fn first_root(&self) -> &Path {
        &self.roots[0]
    }

    /// The innermost root containing `real`, if any.
    pub(crate) fn root_of(&self, real: &Path) -> Option<&PathBuf> {
        self.roots.iter().filter(|r| real.starts_with(r)).max_by_key(|r| r.as_os_str().len())
    }

    fn resolve(&self, input: &str, mode: Mode, access: Access) -> Result<Resolved, PathError> {
        lexical::check(input, self.first_root())?;
        let segs = lexical::segments(OsStr::new(input));
        self.check_requested_names(input, &segs)?;

        let start = if input.starts_with('/') {
            PathBuf::from("/")
        } else {
            self.first_root().to_path_buf()
        };
        let mut walker = Walker::new(&self.roots, input, mode);
        let mut walked = walker.walk(start, &segs)?;
        let mut walked_segs: &[Seg<'_>] = &segs;
        let (path, exists) = loop {
            let Some(i) = walked.missing_from else { break (walked.real, true) };
            let rest = &walked_segs[i..];
            if mode == Mode::Existing {
                let path = join_segs(&walked.real, rest);
                return Err(PathError::NotFound {
                    requested: input.to_owned(),
                    path,
                    via_link: None,
                });
            }
            // Below a directory that does not exist nothing exists, so nothing there is a
            // symlink: `.` and `..` are judged by the text. A `..` that climbs back out of
            // the new part lands on `walked.real`, a real directory: walk on from there.
            match new_part(rest) {
                NewPart::Names(names) => break (join_segs(&walked.real, &names), false),
                NewPart::BackAt(j) => {
                    walked_segs = &rest[j..];
                    walked = walker.walk(walked.real, walked_segs)?;
                }
            }
        };
        let Some(root) = self.root_of(&path).cloned() else {
            return Err(PathRefusal::OutsideRoots {
                input: input.to_owned(),
                real: path,
                roots: self.roots.clone(),
            }
            .into());
        };
        self.check_real_names(input, &path, &root)?;
        self.check_aria_dirs(input, &path, &root)?;
        if access == Access::Write {
            self.check_protected(input, &path, &root)?;
        }
        let found = if exists {
            let meta = fs::symlink_metadata(&path)
                .map_err(|source| PathError::Io { path: path.clone(), source })?;
            Some(Found {
                dev: meta.dev(),
                ino: meta.ino(),
                kind: FileKind::of(&meta),
                len: meta.len(),
            })
        } else {
            None
        };
        Ok(Resolved { requested: input.to_owned(), path, root, found })
    }

    /// Sensitive names in the path as written. For an absolute path, the part naming a root is
    /// skipped: a root is the user's explicit choice even if its own name looks sensitive.
    fn check_requested_names(&self, input: &str, segs: &[Seg<'_>]) -> Result<(), PathRefusal> {
        let skip = if input.starts_with('/') {
            self.roots
                .iter()
                .chain(&self.given)
                .map(|r| root_prefix_len(r, segs))
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        for seg in &segs[skip..] {
            if let Seg::Name(name) = seg
                && let Some(pattern) = self.sensitive.matching(&name.to_string_lossy())
            {
                return Err(PathRefusal::Sensitive {
                    path: input.to_owned(),
                    component: name.to_string_lossy().into_owned(),
                    pattern: pattern.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Sensitive names in the real path below its root (catches links to sensitive files).
    fn check_real_names(&self, input: &str, real: &Path, root: &Path) -> Result<(), PathRefusal> {
        let below = real.strip_prefix(root).unwrap_or(real);
        for comp in below.components() {
            let name = comp.as_os_str().to_string_lossy();
            if let Some(pattern) = self.sensitive.matching(&name) {
                return Err(PathRefusal::Sensitive {
                    path: format!("{input} (really {})", real.display()),
                    component: name.into_owned(),
                    pattern: pattern.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Which of ARIA's own directories the real path `real` (inside `root`, its innermost root)
    /// lies in, if one lies inside `root`. A root inside one of them is used as usual.
    fn aria_dir_in(&self, real: &Path, root: &Path) -> Option<&(AriaDir, PathBuf)> {
        self.aria_dirs.iter().find(|(_, dir)| dir.starts_with(root) && real.starts_with(dir))
    }

    /// Whether the real path `real` is off limits as part of ARIA's own directories (for
    /// marking entries in listings).
    pub fn is_aria_own(&self, real: &Path) -> bool {
        self.root_of(real).is_some_and(|root| self.aria_dir_in(real, root).is_some())
    }

    fn check_aria_dirs(&self, input: &str, real: &Path, root: &Path) -> Result<(), PathRefusal> {
        match self.aria_dir_in(real, root) {
            None => Ok(()),
            Some((which, dir)) => Err(PathRefusal::AriaOwn {
                path: input.to_owned(),
                what: which.describe(),
                dir: dir.clone(),
                root: root.to_path_buf(),
            }),
        }
    }

    /// Files that configure ARIA or git, judged by the real path (links cannot lead around it).
    fn check_protected(&self, input: &str, real: &Path, root: &Path) -> Result<(), PathRefusal> {
        match protected::protection(real, root) {
            None => Ok(()),
            Some(p) => {
                let path = if Path::new(input) == real {
                    input.to_owned()
                } else {
                    format!("{input} (really {})", real.display())
                };
                Err(PathRefusal::Protected { path, rule: p.rule, why: p.why })
            }
        }
    }
}

/// The part of a path below its deepest existing directory, judged by its text.
#[derive(Debug, PartialEq, Eq)]
enum NewPart<'a> {
    /// It stays below the missing directory: these names, `.` and `..` applied.
    Names(Vec<Seg<'a>>),
    /// A `..` at this index (or just before it) climbs back to the existing directory: the
    /// segments from this index on are walked from there.
    BackAt(usize),
}

/// `rest` starts with a name that does not exist. Applies `.` and `..` to it lexically until a
/// `..` climbs back above that name.
fn new_part<'a>(rest: &[Seg<'a>]) -> NewPart<'a> {
    let mut names = Vec::with_capacity(rest.len());
    for (j, seg) in rest.iter().enumerate() {
        match seg {
            Seg::Cur => {}
            Seg::Name(_) => names.push(*seg),
            Seg::Parent => {
                if names.pop().is_none() {
                    return NewPart::BackAt(j);
                }
                if names.is_empty() {
                    return NewPart::BackAt(j + 1);
                }
            }
        }
    }
    NewPart::Names(names)
}

/// Whether a resolution is for reading or for writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// `path` made absolute with symlinks resolved as far as it exists (the rest appended as
/// written), so that it compares with the guard's real paths.
fn real_or_absolute(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut missing = Vec::new();
    loop {
        if let Ok(mut real) = fs::canonicalize(existing) {
            real.extend(missing.iter().rev());
            return real;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// How many leading segments spell out `root` (0 if they do not).
fn root_prefix_len(root: &Path, segs: &[Seg<'_>]) -> usize {
    let mut n = 0;
    for comp in root.components() {
        match comp {
            Component::RootDir => {}
            Component::Normal(name) => match segs.get(n) {
                Some(Seg::Name(s)) if *s == name => n += 1,
                _ => return 0,
            },
            _ => return 0,
        }
    }
    n
}

/// `base` joined with the segments, textually (for messages and not-yet-existing paths).
pub(crate) fn join_segs(base: &Path, segs: &[Seg<'_>]) -> PathBuf {
    let mut p = base.to_path_buf();
    for s in segs {
        match s {
            Seg::Cur => p.push("."),
            Seg::Parent => p.push(".."),
            Seg::Name(n) => p.push(n),
        }
    }
    p
}
