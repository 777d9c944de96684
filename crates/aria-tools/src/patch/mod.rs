//! Unified diffs for `apply_patch`: a parser that validates a whole patch before anything is
//! touched ([`parse`]), and a pure function that applies one file's hunks to its current text
//! ([`apply_file`]). No I/O here: the tool resolves paths through the path guard, reads the
//! files, calls these, and writes the results atomically.
//!
//! What is accepted is what `git diff` and `diff -u` produce: several files per patch, `a/` and
//! `b/` prefixes, `/dev/null` for created and deleted files, `\ No newline at end of file`,
//! CRLF lines, and git's extended headers (`diff --git`, `index`, `new file mode`, ...), which
//! are read past. Renames, binary patches and mode-only changes are refused with a reason.
//!
//! Hunks are applied like `patch` without fuzz: the context and removed lines must match the
//! file exactly (line endings aside); a hunk that does not match where its header says is
//! looked for elsewhere and used only if it matches at exactly one place.

mod apply;
pub mod commit;
mod diff;
pub mod locate;
mod parse;

#[cfg(test)]
mod apply_tests;
#[cfg(test)]
mod commit_tests;
#[cfg(test)]
mod parse_tests;

pub use apply::{Applied, ApplyError, apply_file};
pub use diff::{MAX_EDIT_DISTANCE, line_counts, unified_diff};
pub use parse::{ParseError, parse, parse_for};

/// Largest patch `apply_patch` accepts (50 KB).
pub const MAX_PATCH_BYTES: usize = 50 * 1024;

/// A parsed, validated patch: at least one file, each path named once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub files: Vec<FilePatch>,
}

/// What a file patch does to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `--- /dev/null`: the file must not exist yet.
    Create,
    /// `+++ /dev/null`: every line of the file is removed and the file deleted.
    Delete,
    /// Both sides name the same file.
    Modify,
}

impl Change {
    /// One letter, as `git status --short` shows it.
    pub fn letter(self) -> char {
        match self {
            Change::Create => 'A',
            Change::Delete => 'D',
            Change::Modify => 'M',
        }
    }
}

/// The changes to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// The file's path as the patch names it, prefixes (`a/`, `b/`) removed.
    pub path: String,
    /// The `+++` name when it differs from the `---` one (`x.orig` / `x`): like GNU patch, the
    /// one of the two that exists is patched, the `---` name first.
    pub alternative: Option<String>,
    pub change: Change,
    pub hunks: Vec<Hunk>,
}

impl FilePatch {
    /// Lines added and removed by all hunks.
    pub fn counts(&self) -> (usize, usize) {
        let mut added = 0;
        let mut removed = 0;
        for line in self.hunks.iter().flat_map(|h| &h.lines) {
            match line.kind {
                LineKind::Add => added += 1,
                LineKind::Remove => removed += 1,
                LineKind::Context => {}
            }
        }
        (added, removed)
    }
}

/// One `@@ -old_start,old_len +new_start,new_len @@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    /// 1-based line of the `@@` header in the patch text.
    pub patch_line: usize,
    pub lines: Vec<HunkLine>,
}

impl Hunk {
    /// The header as `@@ -1,3 +1,4 @@`.
    pub fn header(&self) -> String {
        format!("@@ -{},{} +{},{} @@", self.old_start, self.old_len, self.new_start, self.new_len)
    }

    /// The hunk as it appears in a patch (header and body), for error messages.
    pub fn render(&self) -> String {
        let mut out = self.header();
        for line in &self.lines {
            out.push('\n');
            out.push(line.kind.prefix());
            out.push_str(&line.text);
            if line.no_newline {
                out.push_str("\n\\ No newline at end of file");
            }
        }
        out
    }
}

/// Whether a hunk line is kept, removed or added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Remove,
    Add,
}

impl LineKind {
    pub fn prefix(self) -> char {
        match self {
            LineKind::Context => ' ',
            LineKind::Remove => '-',
            LineKind::Add => '+',
        }
    }
}

/// One line of a hunk body, without its prefix and line ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkLine {
    pub kind: LineKind,
    pub text: String,
    /// The patch line ended in `\r\n`.
    pub crlf: bool,
    /// Followed by `\ No newline at end of file`.
    pub no_newline: bool,
}
