//! A small line differ: [`line_counts`] for "what changed" summaries (`file_write`) and
//! [`unified_diff`] to write a patch that [`super::apply_file`] applies back exactly (tests,
//! fuzzing, dry runs).
//!
//! Common leading and trailing lines are trimmed first; the middle is diffed by longest common
//! subsequence when it is small (at most [`LCS_CELLS`] line pairs) and otherwise reported as
//! replaced whole. Counts are therefore exact for ordinary edits and an upper bound for huge
//! rewrites; they are never made up.

use std::fmt::Write as _;

/// Largest middle section (old lines × new lines) diffed line by line.
pub const LCS_CELLS: usize = 1_000_000;

/// Lines of context around a change in [`unified_diff`].
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Equal,
    Delete,
    Insert,
}

/// The file's lines, each with its line ending (the last may have none).
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a_rest, b_rest) = (&a[prefix..], &b[prefix..]);
    let suffix = a_rest.iter().rev().zip(b_rest.iter().rev()).take_while(|(x, y)| x == y).count();
    let am = &a_rest[..a_rest.len() - suffix];
    let bm = &b_rest[..b_rest.len() - suffix];
    let mut out = vec![Op::Equal; prefix];
    if am.len().saturating_mul(bm.len()) > LCS_CELLS {
        out.extend(std::iter::repeat_n(Op::Delete, am.len()));
        out.extend(std::iter::repeat_n(Op::Insert, bm.len()));
    } else {
        lcs(am, bm, &mut out);
    }
    out.extend(std::iter::repeat_n(Op::Equal, suffix));
    out
}

/// Longest common subsequence by dynamic programming over suffixes.
fn lcs(a: &[&str], b: &[&str], out: &mut Vec<Op>) {
    let w = b.len() + 1;
    let mut table = vec![0u32; (a.len() + 1) * w];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i * w + j] = if a[i] == b[j] {
                table[(i + 1) * w + j + 1] + 1
            } else {
                table[(i + 1) * w + j].max(table[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push(Op::Equal);
            i += 1;
            j += 1;
        } else if table[(i + 1) * w + j] >= table[i * w + j + 1] {
            out.push(Op::Delete);
            i += 1;
        } else {
            out.push(Op::Insert);
            j += 1;
        }
    }
    out.extend(std::iter::repeat_n(Op::Delete, a.len() - i));
    out.extend(std::iter::repeat_n(Op::Insert, b.len() - j));
}

/// Lines added and removed going from `old` to `new`.
pub fn line_counts(old: &str, new: &str) -> (usize, usize) {
    let ops = ops(&lines(old), &lines(new));
    let added = ops.iter().filter(|o| **o == Op::Insert).count();
    let removed = ops.iter().filter(|o| **o == Op::Delete).count();
    (added, removed)
}

/// A unified diff (`git diff` style, 3 lines of context) from `old` to `new` for `path`;
/// `None` on a side means the file does not exist there (`/dev/null`). Empty when nothing
/// changes.
pub fn unified_diff(old: Option<&str>, new: Option<&str>, path: &str) -> String {
    let (a, b) = (lines(old.unwrap_or("")), lines(new.unwrap_or("")));
    let ops = ops(&a, &b);
    if ops.iter().all(|o| *o == Op::Equal) {
        return String::new();
    }
    let mut out = String::new();
    let old_name = if old.is_some() { format!("a/{path}") } else { "/dev/null".to_owned() };
    let new_name = if new.is_some() { format!("b/{path}") } else { "/dev/null".to_owned() };
    let _ = writeln!(out, "--- {old_name}\n+++ {new_name}");
    // Positions in old and new before each op.
    let mut pos = Vec::with_capacity(ops.len() + 1);
    let (mut i, mut j) = (0, 0);
    for op in &ops {
        pos.push((i, j));
        match op {
            Op::Equal => (i, j) = (i + 1, j + 1),
            Op::Delete => i += 1,
            Op::Insert => j += 1,
        }
    }
    pos.push((i, j));
    let mut k = 0;
    while let Some(first) = (k..ops.len()).find(|&x| ops[x] != Op::Equal) {
        let start = first.saturating_sub(CONTEXT).max(k);
        // Extend while the next change is within 2 × CONTEXT equal lines.
        let mut end = first;
        loop {
            while end < ops.len() && ops[end] != Op::Equal {
                end += 1;
            }
            let next = (end..ops.len()).find(|&x| ops[x] != Op::Equal);
            match next {
                Some(n) if n - end <= 2 * CONTEXT => end = n,
                _ => break,
            }
        }
        let stop = (end + CONTEXT).min(ops.len());
        hunk(&mut out, &ops[start..stop], pos[start], pos[stop], &a, &b);
        k = stop;
    }
    out
}

fn hunk(
    out: &mut String,
    ops: &[Op],
    from: (usize, usize),
    to: (usize, usize),
    a: &[&str],
    b: &[&str],
) {
    let (old_len, new_len) = (to.0 - from.0, to.1 - from.1);
    let start = |p: usize, len: usize| if len == 0 { p } else { p + 1 };
    let _ = writeln!(
        out,
        "@@ -{},{old_len} +{},{new_len} @@",
        start(from.0, old_len),
        start(from.1, new_len)
    );
    let (mut i, mut j) = from;
    for op in ops {
        let (prefix, line) = match op {
            Op::Equal => {
                i += 1;
                j += 1;
                (' ', a[i - 1])
            }
            Op::Delete => {
                i += 1;
                ('-', a[i - 1])
            }
            Op::Insert => {
                j += 1;
                ('+', b[j - 1])
            }
        };
        out.push(prefix);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}
