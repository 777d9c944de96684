//! A small line differ: [`line_counts`] for "what changed" summaries (`file_write`) and
//! [`unified_diff`] to write a patch that [`super::apply_file`] applies back exactly (tests,
//! fuzzing, dry runs).
//!
//! Common leading and trailing lines are trimmed first; the middle is diffed with Myers'
//! algorithm (a shortest edit script, as `git diff` uses) when at most [`MAX_EDIT_DISTANCE`]
//! lines change, and otherwise reported as replaced whole. Counts are therefore minimal for
//! ordinary edits and an upper bound for huge rewrites; they are never made up.

use std::collections::HashMap;
use std::fmt::Write as _;

/// Most changed lines (deleted + inserted) looked for line by line; a bigger rewrite is
/// reported as its whole middle section replaced.
pub const MAX_EDIT_DISTANCE: usize = 2_000;

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
    match myers(am, bm) {
        Some(ops) => out.extend(ops),
        None => {
            out.extend(std::iter::repeat_n(Op::Delete, am.len()));
            out.extend(std::iter::repeat_n(Op::Insert, bm.len()));
        }
    }
    out.extend(std::iter::repeat_n(Op::Equal, suffix));
    out
}

/// A cheap lower bound of the edit distance: lines of one side with no partner on the other
/// (counted as multisets). Spares Myers' search on rewrites it would give up on anyway.
fn distance_at_least(a: &[&str], b: &[&str]) -> usize {
    let mut count: HashMap<&str, isize> = HashMap::with_capacity(a.len());
    for line in a {
        *count.entry(line).or_default() += 1;
    }
    for line in b {
        *count.entry(line).or_default() -= 1;
    }
    count.values().map(|c| c.unsigned_abs()).sum()
}

/// Myers' shortest edit script (O((N+M)·D) time, O(D²) memory for the trace); `None` when
/// more than [`MAX_EDIT_DISTANCE`] lines would have to change.
fn myers(a: &[&str], b: &[&str]) -> Option<Vec<Op>> {
    if distance_at_least(a, b) > MAX_EDIT_DISTANCE {
        return None;
    }
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    let offset = max as isize + 1;
    let mut v = vec![0isize; 2 * max + 3];
    // trace[d] holds v for k in -d..=d as it was before step d.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let mut found = false;
    for d in 0..=max.min(MAX_EDIT_DISTANCE) as isize {
        let lo = (offset - d) as usize;
        trace.push(v[lo..=lo + 2 * d as usize].to_vec());
        let mut k = -d;
        while k <= d {
            let at = |k: isize| v[(offset + k) as usize];
            let mut x = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
                at(k + 1)
            } else {
                at(k - 1) + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(offset + k) as usize] = x;
            if x >= n && y >= m {
                found = true;
                break;
            }
            k += 2;
        }
        if found {
            break;
        }
    }
    if !found {
        return None;
    }
    let mut ops = Vec::with_capacity((n + m) as usize);
    let (mut x, mut y) = (n, m);
    for (d, row) in trace.iter().enumerate().rev() {
        let d = d as isize;
        let k = x - y;
        let at = |k: isize| row[(k + d) as usize];
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) { k + 1 } else { k - 1 };
        let prev_x = if d == 0 { 0 } else { at(prev_k) };
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            ops.push(Op::Equal);
            x -= 1;
            y -= 1;
        }
        if d > 0 {
            ops.push(if x == prev_x { Op::Insert } else { Op::Delete });
        }
        x = prev_x;
        y = prev_y;
    }
    ops.reverse();
    Some(ops)
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
