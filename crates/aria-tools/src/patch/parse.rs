//! [`parse`]: unified diff text to a validated [`Patch`], or the first problem with its line.

use std::collections::BTreeSet;

use super::{Change, FilePatch, Hunk, HunkLine, LineKind, MAX_PATCH_BYTES, Patch};

/// Why a patch was not accepted. Every message names the patch line and says how to fix it;
/// `apply_patch` shows it to the model as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error(
        "the patch is {bytes} bytes, over the {limit}-byte limit; split it into several smaller patches"
    )]
    TooLarge { bytes: usize, limit: usize },
    #[error(
        "the patch contains no file changes; a unified diff has a `--- a/PATH` line, a `+++ b/PATH` line and `@@ -START,COUNT +START,COUNT @@` hunks"
    )]
    Empty,
    #[error(
        "line {line}: `---` is not followed by a `+++ PATH` line; every file needs both headers"
    )]
    MissingNewHeader { line: usize },
    #[error("line {line}: {why}")]
    BadPath { line: usize, why: String },
    #[error(
        "line {line}: the changes to {path} have no hunks; add `@@ -START,COUNT +START,COUNT @@` hunks after the `+++` line"
    )]
    NoHunks { line: usize, path: String },
    #[error(
        "line {line}: {text:?} is not a hunk header; write `@@ -START,COUNT +START,COUNT @@` (the counts are the number of old and new lines in the hunk)"
    )]
    BadHunkHeader { line: usize, text: String },
    #[error(
        "line {line}: a hunk header comes before any `--- a/PATH` / `+++ b/PATH` file header; name the file first (or give apply_patch the file as \"path\")"
    )]
    HunkOutsideFile { line: usize },
    #[error(
        "line {line}: a hunk header comes after text that is no hunk line; a file's hunks must follow one another, with nothing between them"
    )]
    StrayHunk { line: usize },
    #[error("line {line}: in the hunk {header} of {path}: {why}")]
    HunkBody { line: usize, path: String, header: String, why: String },
    #[error(
        "line {line}: the patch renames {from} to {to}; apply_patch does not rename files, so create the new file and delete the old one in the patch instead"
    )]
    Rename { line: usize, from: String, to: String },
    #[error("line {line}: binary patches are not supported; apply_patch edits text files only")]
    Binary { line: usize },
    #[error(
        "line {line}: `{header}` has no `---`/`+++` lines and no hunks (a mode change, rename or empty file); apply_patch only applies text hunks, so use file_write to create an empty file"
    )]
    GitWithoutContent { line: usize, header: String },
    #[error(
        "the patch changes {path} more than once; merge its hunks into one section for that file"
    )]
    Duplicate { path: String },
    #[error(
        "line {line}: the hunks of {path} overlap or are out of order; hunks must follow each other down the file"
    )]
    Overlap { line: usize, path: String },
    #[error(
        "line {line}: {path} is created (`--- /dev/null`), so its hunks may only add lines (`@@ -0,0 +1,N @@`)"
    )]
    CreateWithOldLines { line: usize, path: String },
    #[error(
        "line {line}: {path} is deleted (`+++ /dev/null`), so its hunk may only remove lines (`@@ -1,N +0,0 @@`)"
    )]
    DeleteWithNewLines { line: usize, path: String },
}

/// One line of the patch: its text without the line ending, and whether that was `\r\n`.
#[derive(Debug, Clone, Copy)]
struct Raw<'a> {
    text: &'a str,
    crlf: bool,
}

fn raw_lines(text: &str) -> Vec<Raw<'_>> {
    text.split_inclusive('\n')
        .map(|l| {
            let l = l.strip_suffix('\n').unwrap_or(l);
            match l.strip_suffix('\r') {
                Some(t) => Raw { text: t, crlf: true },
                None => Raw { text: l, crlf: false },
            }
        })
        .collect()
}

/// Parses and validates a whole unified diff. Nothing about the file system is checked here.
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    parse_for(text, None)
}

/// [`parse`], with the file that hunks before any `---`/`+++` headers change (`apply_patch`'s
/// `path`): a patch of bare `@@` hunks is a patch of `path`. Whether a patch with headers names
/// `path` is the caller's to check, on the resolved files (one file has many spellings).
pub fn parse_for(text: &str, path: Option<&str>) -> Result<Patch, ParseError> {
    if text.len() > MAX_PATCH_BYTES {
        return Err(ParseError::TooLarge { bytes: text.len(), limit: MAX_PATCH_BYTES });
    }
    let lines = raw_lines(text);
    let mut files = Vec::new();
    let mut git: Option<GitBlock> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].text;
        if line.starts_with("diff --git ") {
            if let Some(block) = git.take() {
                block.finish()?;
            }
            git = Some(GitBlock { line: i + 1, header: line.to_owned(), ..GitBlock::default() });
        } else if let Some(block) = git.as_mut().filter(|_| line.starts_with("rename from ")) {
            block.rename_from = Some(line["rename from ".len()..].to_owned());
        } else if line.starts_with("GIT binary patch") || is_binary_notice(line) {
            return Err(ParseError::Binary { line: i + 1 });
        } else if line.starts_with("--- ") {
            let (file, next) = parse_file(&lines, i)?;
            if let Some(from) = git.as_ref().and_then(|b| b.rename_from.clone()) {
                let to = file.alternative.unwrap_or(file.path);
                return Err(ParseError::Rename { line: i + 1, from, to });
            }
            if let Some(block) = git.as_mut() {
                block.has_content = true;
            }
            files.push(file);
            i = next;
            continue;
        } else if line.starts_with("@@") {
            match path {
                Some(path) if files.is_empty() && git.is_none() => {
                    let (file, next) = parse_hunks(&lines, i, clean(path), Change::Modify, None)?;
                    files.push(file);
                    i = next;
                    continue;
                }
                // `path` was given: its hunks were read, and text came between them.
                Some(_) => return Err(ParseError::StrayHunk { line: i + 1 }),
                None => return Err(ParseError::HunkOutsideFile { line: i + 1 }),
            }
        }
        i += 1;
    }
    if let Some(block) = git {
        block.finish()?;
    }
    if files.is_empty() {
        return Err(ParseError::Empty);
    }
    let mut seen = BTreeSet::new();
    for f in &files {
        if !seen.insert(f.path.as_str()) {
            return Err(ParseError::Duplicate { path: f.path.clone() });
        }
    }
    Ok(Patch { files })
}

/// A path as written, without a leading `./`.
fn clean(path: &str) -> &str {
    path.strip_prefix("./").unwrap_or(path)
}

fn is_binary_notice(line: &str) -> bool {
    line.starts_with("Binary files ") && line.ends_with(" differ")
}

/// A `diff --git` section, remembered to refuse what it describes without text hunks.
#[derive(Debug, Default)]
struct GitBlock {
    line: usize,
    header: String,
    rename_from: Option<String>,
    has_content: bool,
}

impl GitBlock {
    fn finish(self) -> Result<(), ParseError> {
        if self.has_content {
            return Ok(());
        }
        Err(ParseError::GitWithoutContent { line: self.line, header: self.header })
    }
}

/// Parses the file section starting at the `---` line `start`; returns it and the index of the
/// first line after it.
fn parse_file(lines: &[Raw<'_>], start: usize) -> Result<(FilePatch, usize), ParseError> {
    let old = header_path(lines[start].text, "--- ", start + 1)?;
    let Some(new_line) = lines.get(start + 1).filter(|l| l.text.starts_with("+++ ")) else {
        return Err(ParseError::MissingNewHeader { line: start + 1 });
    };
    let new = header_path(new_line.text, "+++ ", start + 2)?;
    let (path, change, alternative) = file_identity(&old, &new, start + 1)?;
    let (file, next) = parse_hunks(lines, start + 2, &path, change, alternative)?;
    if file.hunks.is_empty() {
        return Err(ParseError::NoHunks { line: start + 1, path });
    }
    Ok((file, next))
}

/// Reads the hunks of one file from line index `i` on (none if line `i` is no hunk header);
/// returns the file and the index of the first line after them.
fn parse_hunks(
    lines: &[Raw<'_>],
    mut i: usize,
    path: &str,
    change: Change,
    alternative: Option<String>,
) -> Result<(FilePatch, usize), ParseError> {
    let mut hunks: Vec<Hunk> = Vec::new();
    while let Some(line) = lines.get(i).filter(|l| l.text.starts_with("@@")) {
        let header = hunk_header(line.text, i + 1)?;
        let mut hunk = header.clone();
        i = match hunk_body(lines, i + 1, &mut hunk, path) {
            Ok(next) => next,
            Err(strict) => {
                hunk = header;
                recount(lines, i + 1, &mut hunk).ok_or(strict)?
            }
        };
        hunks.push(hunk);
    }
    validate(path, change, &hunks)?;
    Ok((FilePatch { path: path.to_owned(), alternative, change, hunks }, i))
}

const DEV_NULL: &str = "/dev/null";

/// Which file a `---`/`+++` pair names and what happens to it.
fn file_identity(
    old: &str,
    new: &str,
    line: usize,
) -> Result<(String, Change, Option<String>), ParseError> {
    match (old == DEV_NULL, new == DEV_NULL) {
        (true, true) => Err(ParseError::BadPath {
            line,
            why: "both `---` and `+++` are /dev/null; name the file on one side".to_owned(),
        }),
        (true, false) => Ok((strip_prefix(new, "b/").to_owned(), Change::Create, None)),
        (false, true) => Ok((strip_prefix(old, "a/").to_owned(), Change::Delete, None)),
        (false, false) if old == new => Ok((old.to_owned(), Change::Modify, None)),
        (false, false) => match (old.split_once('/'), new.split_once('/')) {
            // `a/x` and `b/x`, or `old/x` and `new/x` from `diff -ru old new`.
            (Some((_, o)), Some((_, n))) if o == n && !o.is_empty() => {
                Ok((o.to_owned(), Change::Modify, None))
            }
            // Two names (`x.orig` and `x`, `a/x.from` and `b/x.to`): GNU patch patches the
            // one that exists; so does apply_patch (a git rename is refused before this).
            _ => Ok((
                strip_prefix(old, "a/").to_owned(),
                Change::Modify,
                Some(strip_prefix(new, "b/").to_owned()),
            )),
        },
    }
}

fn strip_prefix<'a>(path: &'a str, prefix: &str) -> &'a str {
    match path.strip_prefix(prefix) {
        Some(rest) if !rest.is_empty() => rest,
        _ => path,
    }
}

/// The path of a `--- ` / `+++ ` line: git's C-style quoting undone, a `diff -u` timestamp
/// (after a tab) dropped.
fn header_path(text: &str, marker: &str, line: usize) -> Result<String, ParseError> {
    let rest = &text[marker.len()..];
    let path = if rest.starts_with('"') {
        unquote(rest).ok_or_else(|| ParseError::BadPath {
            line,
            why: format!("the quoted path in {text:?} is not closed or has a bad escape"),
        })?
    } else {
        rest.split('\t').next().unwrap_or("").trim_end().to_owned()
    };
    if path.is_empty() {
        return Err(ParseError::BadPath { line, why: format!("{text:?} names no file") });
    }
    Ok(path)
}

/// Undoes git's quoting of a path (`"a/t\303\244b.txt"`): `\\ \" \t \n \r` and octal bytes.
fn unquote(s: &str) -> Option<String> {
    let body = s.strip_prefix('"')?;
    let mut out = Vec::new();
    let mut bytes = body.bytes();
    loop {
        match bytes.next()? {
            b'"' => break,
            b'\\' => match bytes.next()? {
                b'\\' => out.push(b'\\'),
                b'"' => out.push(b'"'),
                b't' => out.push(b'\t'),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                d @ b'0'..=b'3' => {
                    let mut v = u32::from(d - b'0');
                    for _ in 0..2 {
                        let d = bytes.next()?;
                        if !(b'0'..=b'7').contains(&d) {
                            return None;
                        }
                        v = v * 8 + u32::from(d - b'0');
                    }
                    out.push(u8::try_from(v).ok()?);
                }
                _ => return None,
            },
            b => out.push(b),
        }
    }
    String::from_utf8(out).ok()
}

/// `@@ -a[,b] +c[,d] @@ optional section text`.
fn hunk_header(text: &str, line: usize) -> Result<Hunk, ParseError> {
    let bad = || ParseError::BadHunkHeader { line, text: text.to_owned() };
    let rest = text.strip_prefix("@@ -").ok_or_else(bad)?;
    let (ranges, _) = rest.split_once(" @@").ok_or_else(bad)?;
    let (old, new) = ranges.split_once(" +").ok_or_else(bad)?;
    let (old_start, old_len) = range(old).ok_or_else(bad)?;
    let (new_start, new_len) = range(new).ok_or_else(bad)?;
    if (old_start == 0 && old_len != 0) || (new_start == 0 && new_len != 0) {
        return Err(bad());
    }
    Ok(Hunk { old_start, old_len, new_start, new_len, patch_line: line, lines: Vec::new() })
}

fn range(s: &str) -> Option<(usize, usize)> {
    let num = |t: &str| {
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        t.parse::<usize>().ok()
    };
    match s.split_once(',') {
        Some((start, len)) => Some((num(start)?, num(len)?)),
        None => Some((num(s)?, 1)),
    }
}

/// Reads the body of `hunk` from line index `i`, exactly as many lines as its header counts
/// (plus `\ No newline` markers); returns the index after it.
fn hunk_body(
    lines: &[Raw<'_>],
    mut i: usize,
    hunk: &mut Hunk,
    path: &str,
) -> Result<usize, ParseError> {
    let (mut old_left, mut new_left) = (hunk.old_len, hunk.new_len);
    let err = |line: usize, hunk: &Hunk, why: String| ParseError::HunkBody {
        line,
        path: path.to_owned(),
        header: hunk.header(),
        why,
    };
    while old_left > 0 || new_left > 0 {
        let Some(raw) = lines.get(i) else {
            let why = format!(
                "the patch ends with {old_left} old and {new_left} new lines of the hunk still missing; fix the counts in the header or add the lines"
            );
            return Err(err(i, hunk, why));
        };
        let (kind, text) = match raw.text.as_bytes().first() {
            Some(b' ') => (LineKind::Context, &raw.text[1..]),
            Some(b'-') => (LineKind::Remove, &raw.text[1..]),
            Some(b'+') => (LineKind::Add, &raw.text[1..]),
            Some(b'\\') => {
                mark_no_newline(hunk).map_err(|why| err(i + 1, hunk, why))?;
                i += 1;
                continue;
            }
            // An empty context line whose leading space was trimmed by an editor.
            None if old_left > 0 && new_left > 0 => (LineKind::Context, ""),
            // A context line that lost its leading space (models write `milk` for ` milk`):
            // the header says context is still to come, and like every context line it must
            // match the file where the hunk is applied.
            Some(_) if old_left > 0 && new_left > 0 => (LineKind::Context, raw.text),
            _ => {
                let why = format!(
                    "{:?} is not a hunk line, but the header says {old_left} old and {new_left} new lines are still to come; every hunk line starts with ' ', '-' or '+', and the counts in the header must match",
                    raw.text
                );
                return Err(err(i + 1, hunk, why));
            }
        };
        let (takes_old, takes_new) = match kind {
            LineKind::Context => (1, 1),
            LineKind::Remove => (1, 0),
            LineKind::Add => (0, 1),
        };
        if old_left < takes_old || new_left < takes_new {
            let why = format!(
                "{:?} is one line more than the header's counts allow; fix the counts (old lines = context + removed, new lines = context + added)",
                raw.text
            );
            return Err(err(i + 1, hunk, why));
        }
        old_left -= takes_old;
        new_left -= takes_new;
        hunk.lines.push(HunkLine {
            kind,
            text: text.to_owned(),
            crlf: raw.crlf,
            no_newline: false,
        });
        i += 1;
    }
    if lines.get(i).is_some_and(|l| l.text.starts_with('\\')) {
        mark_no_newline(hunk).map_err(|why| err(i + 1, hunk, why))?;
        i += 1;
    }
    if let Some(extra) = lines.get(i).filter(|l| looks_like_hunk_line(lines, i, l.text)) {
        let why = format!(
            "{:?} comes after the last line the header counts ({} old, {} new); fix the counts (old lines = context + removed, new lines = context + added)",
            extra.text, hunk.old_len, hunk.new_len
        );
        return Err(err(i + 1, hunk, why));
    }
    Ok(i)
}

/// Reads the body of `hunk` from line index `i` when its header's counts do not fit it, as
/// `git apply --recount` does: every line that starts with ' ', '-' or '+' (or is empty: a
/// context line whose space was trimmed) up to the next hunk or file header belongs to it,
/// and the counts are taken from those lines. Models and hand edits often get the counts wrong
/// (`@@ -1,2 +1,2 @@` over two context lines, one removed and one added); the lines themselves
/// still have to match the file where the hunk is applied, so nothing is guessed beyond the
/// counts. Empty lines at the end are separators, not context. `None` (the strict error then
/// stands) when the lines found change nothing, or when a `\ No newline` marker comes first.
fn recount(lines: &[Raw<'_>], mut i: usize, hunk: &mut Hunk) -> Option<usize> {
    hunk.lines.clear();
    while let Some(raw) = lines.get(i) {
        let text = raw.text;
        if starts_a_section(lines, i) {
            break;
        }
        if text == "-- " {
            // A mail signature ends the patch, unless more changes follow (then it is the
            // removed line "- ", and where the hunk ends is a guess: refuse).
            if changes_follow(lines, i + 1) {
                return None;
            }
            break;
        }
        let kind = match text.as_bytes().first() {
            Some(b' ') | None => LineKind::Context,
            Some(b'-') => LineKind::Remove,
            Some(b'+') => LineKind::Add,
            Some(b'\\') => {
                mark_no_newline(hunk).ok()?;
                i += 1;
                continue;
            }
            // Text that is no hunk line: the end of the patch, unless changes follow (a
            // context line that lost its leading space: the rest would be dropped; refuse).
            Some(_) if changes_follow(lines, i + 1) => return None,
            Some(_) => break,
        };
        let body = text.get(1..).unwrap_or("");
        hunk.lines.push(HunkLine {
            kind,
            text: body.to_owned(),
            crlf: raw.crlf,
            no_newline: false,
        });
        i += 1;
    }
    while hunk
        .lines
        .last()
        .is_some_and(|l| l.kind == LineKind::Context && l.text.is_empty() && !l.no_newline)
    {
        hunk.lines.pop();
    }
    let count = |kind: LineKind| hunk.lines.iter().filter(|l| l.kind == kind).count();
    let (context, removed, added) =
        (count(LineKind::Context), count(LineKind::Remove), count(LineKind::Add));
    if removed + added == 0 {
        return None;
    }
    hunk.old_len = context + removed;
    hunk.new_len = context + added;
    // `@@ -0,0 …` is a creation's header: it cannot have old lines, whatever the body says.
    if hunk.old_start == 0 && hunk.old_len != 0 {
        return None;
    }
    if hunk.new_start == 0 && hunk.new_len != 0 {
        return None;
    }
    Some(i)
}

/// Whether line `i` starts the next hunk (`@@`) or the next file (`diff …`, or a `---` line
/// followed by a `+++` line).
fn starts_a_section(lines: &[Raw<'_>], i: usize) -> bool {
    let Some(text) = lines.get(i).map(|l| l.text) else { return false };
    text.starts_with("@@") || text.starts_with("diff ") || file_headers_at(lines, i)
}

/// Whether line `i` and the next are a file's `---` / `+++` headers.
fn file_headers_at(lines: &[Raw<'_>], i: usize) -> bool {
    lines.get(i).is_some_and(|l| l.text.starts_with("--- "))
        && lines.get(i + 1).is_some_and(|l| l.text.starts_with("+++ "))
}

/// Whether a line from index `i` on, before the next hunk or file header, adds or removes a
/// line: then the text before it is inside a hunk, not after it.
fn changes_follow(lines: &[Raw<'_>], i: usize) -> bool {
    for (j, raw) in lines.iter().enumerate().skip(i) {
        let text = raw.text;
        if starts_a_section(lines, j) {
            return false;
        }
        if text.starts_with(['+', '-']) && text != "-- " {
            return true;
        }
    }
    false
}

/// A line right after a complete hunk that would be part of it if the counts were larger (the
/// next file's `---`/`+++` headers and a mail signature's `-- ` are not).
fn looks_like_hunk_line(lines: &[Raw<'_>], i: usize, text: &str) -> bool {
    let hunkish = text.starts_with([' ', '-', '+']);
    hunkish && !file_headers_at(lines, i) && text != "-- "
}

fn mark_no_newline(hunk: &mut Hunk) -> Result<(), String> {
    match hunk.lines.last_mut() {
        Some(last) => {
            last.no_newline = true;
            Ok(())
        }
        None => Err("`\\ No newline at end of file` comes before any line of the hunk".to_owned()),
    }
}

/// Per-file rules: creations only add, deletions only remove, hunks in order.
fn validate(path: &str, change: Change, hunks: &[Hunk]) -> Result<(), ParseError> {
    let mut prev_end = 0;
    for h in hunks {
        let line = h.patch_line;
        match change {
            Change::Create if h.old_len != 0 => {
                return Err(ParseError::CreateWithOldLines { line, path: path.to_owned() });
            }
            Change::Delete if h.new_len != 0 => {
                return Err(ParseError::DeleteWithNewLines { line, path: path.to_owned() });
            }
            _ => {}
        }
        // Lines before the hunk's first old line (a pure insertion goes after `old_start`).
        let begin = if h.old_len == 0 { h.old_start } else { h.old_start - 1 };
        if begin < prev_end {
            return Err(ParseError::Overlap { line, path: path.to_owned() });
        }
        prev_end = begin + h.old_len;
    }
    Ok(())
}
