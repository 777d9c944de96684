//! [`apply_file`]: one file's hunks applied to its current text, exactly or not at all.

use std::fmt::Write as _;

use super::{Change, FilePatch, Hunk, LineKind};

/// How many lines of the file are shown around a failed hunk, and how long each may be.
const SHOW_EXTRA_LINES: usize = 2;
const SHOW_LINE_CHARS: usize = 200;

/// The result of applying one file's hunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The new content (empty for a deleted file).
    pub text: String,
    pub added: usize,
    pub removed: usize,
    /// Hunks found away from where their header said: (1-based hunk number, offset in lines).
    pub offsets: Vec<(usize, isize)>,
}

/// Why a file's hunks do not apply to its current content. The messages show the hunk and
/// what the file really has there, so the model can make a new patch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error(
        "hunk {number} of {path} does not match the file. The hunk:\n{hunk}\n{found}\nRead the file again and make the patch against its current content (context and '-' lines must match exactly)."
    )]
    Mismatch { path: String, number: usize, hunk: String, found: String },
    #[error(
        "hunk {number} of {path} matches the file at {} places (lines {}), and its header's line {expected} is not one of them; add more context lines so it matches one place only",
        candidates.len(), list(candidates)
    )]
    Ambiguous { path: String, number: usize, expected: usize, candidates: Vec<usize> },
    #[error(
        "the patch deletes {path} but removes only {removed} of its {lines} lines; a deletion must remove every line (or change the file instead of deleting it)"
    )]
    DeleteIncomplete { path: String, removed: usize, lines: usize },
}

fn list(v: &[usize]) -> String {
    let shown: Vec<String> = v.iter().take(10).map(|n| n.to_string()).collect();
    let more = if v.len() > 10 { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}

/// A line of the file: its text and its ending (`"\n"`, `"\r\n"` or `""` for a last line
/// without one).
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    text: &'a str,
    eol: &'a str,
}

fn split(text: &str) -> Vec<Line<'_>> {
    text.split_inclusive('\n')
        .map(|l| {
            if let Some(t) = l.strip_suffix("\r\n") {
                Line { text: t, eol: "\r\n" }
            } else if let Some(t) = l.strip_suffix('\n') {
                Line { text: t, eol: "\n" }
            } else {
                Line { text: l, eol: "" }
            }
        })
        .collect()
}

/// Applies `patch`'s hunks to `old` (the file's current text; empty for a file to create).
pub fn apply_file(old: &str, patch: &FilePatch) -> Result<Applied, ApplyError> {
    let lines = split(old);
    // New lines take the file's own line ending; a new file takes the patch's.
    let style = match lines.iter().find(|l| !l.eol.is_empty()) {
        Some(l) => l.eol,
        None if patch.hunks.iter().flat_map(|h| &h.lines).any(|l| l.crlf) => "\r\n",
        None => "\n",
    };
    let mut out: Vec<Line<'_>> = Vec::with_capacity(lines.len());
    let mut cursor = 0;
    let mut last_offset: isize = 0;
    let mut offsets = Vec::new();
    for (i, hunk) in patch.hunks.iter().enumerate() {
        let at = locate(&lines, cursor, hunk, last_offset)
            .map_err(|miss| miss.into_error(patch, i, &lines))?;
        let nominal = nominal_start(hunk);
        let offset = at as isize - nominal as isize;
        if offset != 0 {
            offsets.push((i + 1, offset));
        }
        last_offset = offset;
        out.extend_from_slice(&lines[cursor..at]);
        let mut idx = at;
        for hl in &hunk.lines {
            match hl.kind {
                LineKind::Context => {
                    let eol = if hl.no_newline { "" } else { lines[idx].eol };
                    out.push(Line { text: lines[idx].text, eol });
                    idx += 1;
                }
                LineKind::Remove => idx += 1,
                LineKind::Add => {
                    let eol = if hl.no_newline { "" } else { style };
                    out.push(Line { text: &hl.text, eol });
                }
            }
        }
        cursor = at + hunk.old_len;
    }
    out.extend_from_slice(&lines[cursor..]);
    let (added, removed) = patch.counts();
    if patch.change == Change::Delete && !out.is_empty() {
        return Err(ApplyError::DeleteIncomplete {
            path: patch.path.clone(),
            removed,
            lines: lines.len(),
        });
    }
    let mut text = String::with_capacity(old.len() + 64);
    let last = out.len().saturating_sub(1);
    for (i, line) in out.iter().enumerate() {
        text.push_str(line.text);
        // Only the last line may lack an ending (lines added after one that had none).
        text.push_str(if line.eol.is_empty() && i != last { style } else { line.eol });
    }
    Ok(Applied { text, added, removed, offsets })
}

/// Where the hunk's old lines start (0-based) if the header is right.
fn nominal_start(hunk: &Hunk) -> usize {
    if hunk.old_len == 0 { hunk.old_start } else { hunk.old_start - 1 }
}

/// Why [`locate`] found no place for a hunk.
enum Miss {
    NotFound { expected: usize },
    Ambiguous { expected: usize, candidates: Vec<usize> },
}

impl Miss {
    fn into_error(self, patch: &FilePatch, index: usize, lines: &[Line<'_>]) -> ApplyError {
        let hunk = &patch.hunks[index];
        match self {
            Miss::NotFound { expected } => ApplyError::Mismatch {
                path: patch.path.clone(),
                number: index + 1,
                hunk: hunk.render(),
                found: found_at(lines, expected, hunk.old_len),
            },
            Miss::Ambiguous { expected, candidates } => ApplyError::Ambiguous {
                path: patch.path.clone(),
                number: index + 1,
                expected: expected + 1,
                candidates: candidates.into_iter().map(|c| c + 1).collect(),
            },
        }
    }
}

/// What the file has where the hunk was expected.
fn found_at(lines: &[Line<'_>], expected: usize, len: usize) -> String {
    if expected >= lines.len() {
        return format!(
            "The file has only {} lines, so nothing is at line {}.",
            lines.len(),
            expected + 1
        );
    }
    let end = (expected + len + SHOW_EXTRA_LINES).min(lines.len());
    let mut s = format!("Lines {}-{} of the file are:", expected + 1, end);
    for (n, line) in lines.iter().enumerate().take(end).skip(expected) {
        let text: String = line.text.chars().take(SHOW_LINE_CHARS).collect();
        let _ = write!(s, "\n{:>6} | {text}", n + 1);
    }
    s
}

/// The 0-based line where the hunk's old lines are, at or after `cursor`: where the header
/// (shifted by the previous hunk's offset) says, else the one place they match.
fn locate(
    lines: &[Line<'_>],
    cursor: usize,
    hunk: &Hunk,
    last_offset: isize,
) -> Result<usize, Miss> {
    let old: Vec<&str> =
        hunk.lines.iter().filter(|l| l.kind != LineKind::Add).map(|l| l.text.as_str()).collect();
    let nominal = nominal_start(hunk);
    let expected = usize::try_from(nominal as isize + last_offset).unwrap_or(0).max(cursor);
    let matches_at = |p: usize| {
        p + old.len() <= lines.len() && old.iter().zip(&lines[p..]).all(|(a, b)| *a == b.text)
    };
    // A pure insertion has nothing to match: it goes where the header says.
    if old.is_empty() {
        return if expected <= lines.len() {
            Ok(expected)
        } else {
            Err(Miss::NotFound { expected })
        };
    }
    if matches_at(expected) {
        return Ok(expected);
    }
    let last_start = lines.len().saturating_sub(old.len());
    let candidates: Vec<usize> = (cursor..=last_start).filter(|p| matches_at(*p)).collect();
    match candidates.as_slice() {
        [one] => Ok(*one),
        [] => Err(Miss::NotFound { expected }),
        _ => Err(Miss::Ambiguous { expected, candidates }),
    }
}
