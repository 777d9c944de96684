//! The search behind `file_search`: ripgrep's own parallel walker (`ignore`) feeding ripgrep's
//! line searcher (`grep-searcher`), with every file opened beneath its root.
//!
//! Three things differ from running `rg`, all on purpose:
//! - each file is opened relative to a handle on its directory, and that handle was opened
//!   beneath the root one component at a time ([`aria_sandbox::BeneathDir`]): no symlink is
//!   followed anywhere on the way, so a directory swapped for a link mid-walk cannot lead the
//!   search out of the root. A thread keeps the handle of the directory it is in (the walker
//!   hands a thread a whole directory at a time), so this costs one `openat` per file, less
//!   than opening the full path;
//! - entries the path guard would refuse (sensitive names such as `.env` or `.ssh/`, ARIA's own
//!   directories when the root contains them) and the `.git` and `node_modules` directories are
//!   pruned by the walker's filter, hidden or not;
//! - hits go into a bounded top-K per thread (the smallest `keep` by path, then line), so
//!   memory stays flat however many lines match while the totals stay exact.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use aria_sandbox::{BeneathDir, OpenMode};
use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::gitignore::Gitignore;
use ignore::overrides::Override;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

use crate::guard::sensitive::SensitivePatterns;

/// Widest line shown, in characters; longer lines are cut around the first match.
pub const MAX_LINE_CHARS: usize = 200;

/// Characters kept before the match when a long line is cut.
const CONTEXT_BEFORE: usize = 60;

/// A text file this small that matched nothing has its text kept (see
/// [`Outcome::unmatched_texts`]).
pub(crate) const SHOWN_WHOLE_BYTES: u64 = 2048;
/// Most unmatched texts kept.
pub(crate) const SHOWN_WHOLE_FILES: usize = 3;

/// Directories never searched, hidden files included or not.
const ALWAYS_SKIPPED: &[&str] = &[".git", "node_modules"];

/// What to search and how. Built by the tool from checked arguments.
#[derive(Debug)]
pub(crate) struct Query {
    pub(crate) matcher: RegexMatcher,
    /// Canonical start (a directory or a regular file), inside `root`.
    pub(crate) start: PathBuf,
    /// The canonical root that contains `start`; files are opened beneath it.
    pub(crate) root: PathBuf,
    /// Hit paths are shown relative to this directory when they are inside it, else absolute.
    pub(crate) shown_from: PathBuf,
    pub(crate) hidden: bool,
    /// Only files matching this glob are searched; it narrows, never widens: ignored, hidden
    /// and sensitive files stay skipped (unlike `rg -g`, whose globs override ignore files).
    pub(crate) glob: Option<Override>,
    /// Ignore files of the directories between `root` and `start`, deepest first: the walker
    /// reads no ignore file above `start`, so these are applied by the entry filter.
    pub(crate) ancestor_ignores: Vec<Gitignore>,
    pub(crate) sensitive: SensitivePatterns,
    /// ARIA's own directories inside `root` (real paths), never searched.
    pub(crate) aria_dirs: Vec<PathBuf>,
    /// How many hits to keep (the smallest by path, then line).
    pub(crate) keep: usize,
    /// Walker threads; 0 lets `ignore` choose (the available parallelism, at most 12).
    pub(crate) threads: usize,
    /// When to stop searching and report what was found so far.
    pub(crate) deadline: Option<Instant>,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) path: Arc<Path>,
    pub(crate) line: u64,
    pub(crate) text: String,
}

impl Ord for Hit {
    fn cmp(&self, other: &Self) -> Ordering {
        self.path.cmp(&other.path).then(self.line.cmp(&other.line))
    }
}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What a search found.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// The first hits by path, then line; at most `keep`.
    pub(crate) hits: Vec<Hit>,
    /// Matching lines in all (shown or not).
    pub(crate) matched_lines: u64,
    pub(crate) matched_files: u64,
    pub(crate) searched_files: u64,
    /// Files skipped because they contain a NUL byte.
    pub(crate) binary_files: u64,
    /// Entries that could not be listed, opened or read.
    pub(crate) unreadable: u64,
    pub(crate) first_error: Option<String>,
    /// The deadline passed: the totals are lower bounds.
    pub(crate) stopped_early: bool,
    /// The shown path and text of the first few text files of at most [`SHOWN_WHOLE_BYTES`]
    /// that matched nothing: when they are all a search covered, the tool shows them (a small
    /// model searches a short file for a phrase of the question, finds nothing and gives up).
    pub(crate) unmatched_texts: Vec<(Arc<Path>, String)>,
}

impl Outcome {
    fn merge(&mut self, other: Local) {
        self.hits.extend(other.heap.into_vec());
        self.matched_lines += other.out.matched_lines;
        self.matched_files += other.out.matched_files;
        self.searched_files += other.out.searched_files;
        self.binary_files += other.out.binary_files;
        self.unreadable += other.out.unreadable;
        self.stopped_early |= other.out.stopped_early;
        for text in other.out.unmatched_texts {
            if self.unmatched_texts.len() < SHOWN_WHOLE_FILES {
                self.unmatched_texts.push(text);
            }
        }
        if self.first_error.is_none() {
            self.first_error = other.out.first_error;
        }
    }
}

/// Runs the search. Blocking: call it from `spawn_blocking`.
pub(crate) fn search(query: &Query) -> Outcome {
    let mut walk = WalkBuilder::new(&query.start);
    walk.threads(query.threads)
        .follow_links(false)
        .hidden(!query.hidden)
        // Ignore files are honoured with or without a `.git` directory, and none above the
        // start is read by the walker (the ones inside the root come through the filter).
        .require_git(false)
        .parents(false)
        .git_global(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true);
    let filter = EntryFilter {
        sensitive: query.sensitive.clone(),
        aria_dirs: query.aria_dirs.clone(),
        ancestors: query.ancestor_ignores.clone(),
        glob: query.glob.clone(),
    };
    walk.filter_entry(move |entry| filter.keep(entry));

    let shared =
        Shared { query, stop: AtomicBool::new(false), result: Mutex::new(Outcome::default()) };
    walk.build_parallel().visit(&mut VisitorBuilder { shared: &shared });

    let mut outcome = shared.result.into_inner().unwrap_or_else(|p| p.into_inner());
    outcome.hits.sort_unstable();
    outcome.hits.truncate(query.keep);
    outcome
}

/// Which walked entries may be searched or descended into.
struct EntryFilter {
    sensitive: SensitivePatterns,
    aria_dirs: Vec<PathBuf>,
    ancestors: Vec<Gitignore>,
    glob: Option<Override>,
}

impl EntryFilter {
    fn keep(&self, entry: &DirEntry) -> bool {
        if entry.depth() == 0 {
            // The start itself: the guard has approved it already.
            return true;
        }
        let name = entry.file_name().to_string_lossy();
        if ALWAYS_SKIPPED.contains(&name.as_ref()) || self.sensitive.matching(&name).is_some() {
            return false;
        }
        if self.aria_dirs.iter().any(|d| entry.path().starts_with(d)) {
            return false;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if !is_dir
            && let Some(glob) = &self.glob
            && glob.matched(entry.path(), false).is_ignore()
        {
            return false;
        }
        for ignores in &self.ancestors {
            let m = ignores.matched(entry.path(), is_dir);
            if m.is_ignore() {
                return false;
            }
            if m.is_whitelist() {
                return true;
            }
        }
        true
    }
}

struct Shared<'q> {
    query: &'q Query,
    stop: AtomicBool,
    result: Mutex<Outcome>,
}

struct VisitorBuilder<'s> {
    shared: &'s Shared<'s>,
}

impl<'s> ParallelVisitorBuilder<'s> for VisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        let searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        Box::new(Visitor { shared: self.shared, searcher, local: Local::default(), dir: None })
    }
}

/// One walker thread's findings, merged into the shared outcome when the thread ends.
#[derive(Default)]
struct Local {
    /// Max-heap: the top is the largest hit kept, the first to go.
    heap: BinaryHeap<Hit>,
    out: Outcome,
}

impl Local {
    fn error(&mut self, what: String) {
        self.out.unreadable += 1;
        if self.out.first_error.is_none() {
            self.out.first_error = Some(what);
        }
    }
}

struct Visitor<'s> {
    shared: &'s Shared<'s>,
    searcher: Searcher,
    local: Local,
    /// The directory (relative to the root) this thread last opened a file in, and its handle.
    dir: Option<(PathBuf, BeneathDir)>,
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let local = std::mem::take(&mut self.local);
        let mut result = self.shared.result.lock().unwrap_or_else(|p| p.into_inner());
        result.merge(local);
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.stop.load(AtomicOrdering::Relaxed) {
            return WalkState::Quit;
        }
        if let Some(deadline) = self.shared.query.deadline
            && Instant::now() >= deadline
        {
            self.shared.stop.store(true, AtomicOrdering::Relaxed);
            self.local.out.stopped_early = true;
            return WalkState::Quit;
        }
        match entry {
            Ok(entry) => {
                // Symlinks are not followed (their type is "symlink", not file), and FIFOs,
                // sockets and devices are never opened.
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    self.search_file(entry.path());
                }
            }
            Err(err) => self.local.error(err.to_string()),
        }
        WalkState::Continue
    }
}

impl Visitor<'_> {
    /// Opens `relative` (a file below the root) through the handle of its directory, never
    /// following a symlink, without blocking on a FIFO.
    fn open(&mut self, relative: &Path) -> io::Result<File> {
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file below the root"));
        };
        let cached = matches!(&self.dir, Some((dir, _)) if dir == parent);
        if !cached {
            let handle = BeneathDir::open(&self.shared.query.root, parent, false)?;
            self.dir = Some((parent.to_path_buf(), handle));
        }
        match &self.dir {
            Some((_, handle)) => handle.open_file(name, OpenMode::ReadNonBlocking),
            None => Err(io::Error::other("no directory handle")),
        }
    }

    fn search_file(&mut self, path: &Path) {
        let query = self.shared.query;
        let Ok(relative) = path.strip_prefix(&query.root) else {
            self.local.error(format!("{} is not inside the root", path.display()));
            return;
        };
        let file = match self.open(relative) {
            Ok(file) => file,
            Err(e) => {
                self.local.error(format!("{}: {e}", path.display()));
                return;
            }
        };
        let size = match file.metadata() {
            Ok(meta) if meta.is_file() => meta.len(),
            // Swapped for something else since the walker saw it: not searched.
            Ok(_) => return,
            Err(e) => {
                self.local.error(format!("{}: {e}", path.display()));
                return;
            }
        };
        let shown = match path.strip_prefix(&query.shown_from) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel,
            _ => path,
        };
        // A file whose path sorts after every kept hit cannot add hits once the heap is full.
        let full = self.local.heap.len() >= query.keep;
        let want = match self.local.heap.peek() {
            Some(top) if full && shown >= &*top.path => 0,
            _ => query.keep,
        };
        let mut sink =
            FileSink { matcher: &query.matcher, want, lines: Vec::new(), count: 0, binary: false };
        self.local.out.searched_files += 1;
        if let Err(e) = self.searcher.search_file(&query.matcher, &file, &mut sink) {
            self.local.error(format!("{}: {e}", path.display()));
            return;
        }
        if sink.binary {
            self.local.out.binary_files += 1;
            return;
        }
        if sink.count == 0 {
            if size <= SHOWN_WHOLE_BYTES
                && self.local.out.unmatched_texts.len() < SHOWN_WHOLE_FILES
                && let Some(text) = whole_text(&file, size)
            {
                self.local.out.unmatched_texts.push((Arc::from(shown), text));
            }
            return;
        }
        self.local.out.matched_files += 1;
        self.local.out.matched_lines += sink.count;
        if sink.lines.is_empty() {
            return;
        }
        let shown: Arc<Path> = Arc::from(shown);
        for (line, text) in sink.lines {
            self.local.heap.push(Hit { path: Arc::clone(&shown), line, text });
            if self.local.heap.len() > query.keep {
                self.local.heap.pop();
            }
        }
    }
}

/// The text of a small file already searched (read again from its start), if it is still
/// UTF-8 text of at most `size` bytes.
fn whole_text(file: &File, size: u64) -> Option<String> {
    use std::os::unix::fs::FileExt as _;
    let mut buf = vec![0; usize::try_from(size).ok()? + 1];
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    // Grown since the search: not the text that was searched.
    if filled > usize::try_from(size).ok()? {
        return None;
    }
    buf.truncate(filled);
    if buf.contains(&0) {
        return None;
    }
    String::from_utf8(buf).ok()
}

/// Collects one file's matching lines: all are counted, the first `want` are kept.
struct FileSink<'m> {
    matcher: &'m RegexMatcher,
    want: usize,
    lines: Vec<(u64, String)>,
    count: u64,
    binary: bool,
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            self.count += 1;
            if self.lines.len() < self.want {
                self.lines.push((first + i as u64, shown_line(line, self.matcher)));
            }
        }
        Ok(true)
    }

    /// A NUL byte: the file is binary, stop searching it and drop what it matched so far.
    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A matching line as the model sees it: line terminator removed, invalid UTF-8 replaced,
/// control characters escaped (so one hit stays one output line), and at most
/// [`MAX_LINE_CHARS`] characters, cut around the first match when the line is longer.
pub(crate) fn shown_line(raw: &[u8], matcher: &RegexMatcher) -> String {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = String::from_utf8_lossy(raw);
    let chars = text.chars().count();
    if chars <= MAX_LINE_CHARS {
        return escape(text.chars());
    }
    let at = match matcher.find(raw) {
        Ok(Some(m)) => String::from_utf8_lossy(&raw[..m.start()]).chars().count(),
        _ => 0,
    };
    let start = at.saturating_sub(CONTEXT_BEFORE).min(chars - MAX_LINE_CHARS);
    let end = start + MAX_LINE_CHARS;
    let mut out = String::with_capacity(MAX_LINE_CHARS + 8);
    if start > 0 {
        out.push('…');
    }
    out.push_str(&escape(text.chars().skip(start).take(MAX_LINE_CHARS)));
    if end < chars {
        out.push('…');
    }
    out
}

fn escape(chars: impl Iterator<Item = char>) -> String {
    let mut out = String::new();
    for c in chars {
        if c.is_control() && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
