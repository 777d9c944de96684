//! Command substitution (`$(…)` and backquotes) without a shell.
//!
//! The inner command line is classified on its own and runs first, only when it is `read`;
//! its output (trailing newlines removed, like a shell) replaces the substitution in the text,
//! quoted so it stays data: inside `"…"` it is escaped for double quotes, unquoted it is split
//! at blanks into single-quoted words (a shell would also expand globs in them; ARIA does not).
//! The outer line is then parsed and classified again on what it really runs.
//!
//! Before anything runs, the classifier judges the outer line with each substitution replaced
//! by a placeholder word ([`PLACEHOLDER`]), so the tier asked for approval is known up front;
//! the executor refuses a substituted line whose tier is higher than that.

use std::ops::Range;

use aria_api::Tier;
use tree_sitter::Node;

use super::ast::{ShellRefusal, shorten};
use super::classify::{Classification, classify};
use super::parse::syntax_tree;

/// What stands for a substitution's output while the outer line is judged before running.
pub const PLACEHOLDER: &str = "…";

/// Most substitutions in one line (nested ones count in their own line).
const MAX_SUBSTITUTIONS: usize = 16;
/// Deepest nesting of substitutions judged (`$(a $(b $(c)))` is 3).
const MAX_DEPTH: u8 = 4;

thread_local! {
    static DEPTH: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// One `$(…)` or `` `…` `` at the top level of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Substitution {
    /// Byte range of the whole substitution in the line.
    pub range: Range<usize>,
    /// The command line inside.
    pub inner: String,
    /// Inside double quotes (no word splitting).
    pub quoted: bool,
}

/// The top-level substitutions of `line`, in order (empty when there are none).
pub fn substitutions(line: &str) -> Result<Vec<Substitution>, ShellRefusal> {
    if !line.contains("$(") && !line.contains('`') {
        return Ok(Vec::new());
    }
    let tree = syntax_tree(line)?;
    let mut found = Vec::new();
    collect(tree.root_node(), line, &mut found)?;
    if found.len() > MAX_SUBSTITUTIONS {
        return Err(ShellRefusal::new(
            "too many substitutions",
            format!(
                "the line has more than {MAX_SUBSTITUTIONS} substitutions; split it into steps"
            ),
        ));
    }
    Ok(found)
}

fn collect(node: Node<'_>, src: &str, out: &mut Vec<Substitution>) -> Result<(), ShellRefusal> {
    if node.kind() == "command_substitution" {
        let r = node.byte_range();
        let source = src.get(r.clone()).unwrap_or("");
        let inner = if let Some(rest) = source.strip_prefix("$(") {
            rest.strip_suffix(')')
        } else {
            source.strip_prefix('`').and_then(|s| s.strip_suffix('`'))
        };
        let Some(inner) = inner else {
            return Err(ShellRefusal::needs_shell(
                "command substitution",
                source,
                "write `$(command)` with a plain command line inside",
            ));
        };
        if source.starts_with('`') && inner.contains('\\') {
            return Err(ShellRefusal::needs_shell(
                "backquote substitution with backslashes",
                source,
                "write it as `$(…)`, whose inside is read like any command line",
            ));
        }
        let quoted = node.parent().is_some_and(|p| p.kind() == "string");
        let in_word = node.parent().is_some_and(|p| {
            matches!(p.kind(), "command" | "concatenation" | "string" | "command_name")
        });
        if !in_word {
            return Err(ShellRefusal::needs_shell(
                "command substitution",
                source,
                "ARIA substitutes `$(…)` only in a command's program or arguments; run the inner \
                 command as its own step and write its output literally",
            ));
        }
        out.push(Substitution { range: r, inner: inner.to_owned(), quoted });
        return Ok(());
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect(child, src, out)?;
    }
    Ok(())
}

/// `line` with each substitution replaced by `outputs[i]` (already quoted for its place).
pub fn replace(line: &str, subs: &[Substitution], outputs: &[String]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for (s, text) in subs.iter().zip(outputs) {
        out.push_str(&line[at..s.range.start]);
        out.push_str(text);
        at = s.range.end;
    }
    out.push_str(&line[at..]);
    out
}

/// The text that stands for `output` in place of `sub`: trailing newlines removed; escaped for
/// double quotes when quoted, otherwise split at blanks into single-quoted words.
pub fn quote_output(sub: &Substitution, output: &str) -> String {
    let trimmed = output.trim_end_matches('\n');
    if sub.quoted {
        let mut s = String::with_capacity(trimmed.len());
        for c in trimmed.chars() {
            if matches!(c, '\\' | '"' | '$' | '`') {
                s.push('\\');
            }
            s.push(c);
        }
        return s;
    }
    trimmed
        .split([' ', '\t', '\n'])
        .filter(|w| !w.is_empty())
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `line` with every substitution replaced by [`PLACEHOLDER`]: what is judged before running.
pub fn placeholder_line(line: &str, subs: &[Substitution]) -> String {
    let words: Vec<String> = subs.iter().map(|_| PLACEHOLDER.to_owned()).collect();
    replace(line, subs, &words)
}

/// Classifies a line with substitutions: every inner line must be `read` (else the line is
/// `Blocked`, nothing runs), and the outer line is judged with placeholders.
pub(super) fn classify_substituted(line: &str) -> Option<Classification> {
    let subs = match substitutions(line) {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => return None,
        Err(refusal) => return Some(Classification::refused(line, refusal)),
    };
    let depth = DEPTH.with(|d| d.get());
    if depth >= MAX_DEPTH {
        let refusal = ShellRefusal::new(
            "command substitution",
            format!(
                "command substitutions nest more than {MAX_DEPTH} deep; run the inner commands \
                 as their own steps"
            ),
        );
        return Some(Classification::refused(line, refusal));
    }
    DEPTH.with(|d| d.set(depth + 1));
    let judged = judge_inner(line, &subs);
    DEPTH.with(|d| d.set(depth));
    judged
}

fn judge_inner(line: &str, subs: &[Substitution]) -> Option<Classification> {
    for s in subs {
        let inner = classify(&s.inner);
        if inner.tier != Tier::Read {
            let why = if inner.tier == Tier::Blocked {
                format!("it is refused: {}", inner.reason)
            } else {
                format!("it is {} ({})", inner.tier.as_str(), inner.reason)
            };
            let refusal = ShellRefusal::new(
                "command substitution",
                format!(
                    "command substitution `$({})` is not run: ARIA runs a substitution first only when it only reads, \
                     and {why}; run that command as its own step, then write its output \
                     literally in the next command",
                    shorten(&s.inner)
                ),
            );
            return Some(Classification::refused(line, refusal));
        }
    }
    let mut outer = classify(&placeholder_line(line, subs));
    if outer.tier != Tier::Blocked {
        let inner: Vec<String> = subs.iter().map(|s| shorten(&s.inner)).collect();
        outer.reason = format!(
            "{}; first runs the read-only `{}` and uses its output",
            outer.reason,
            inner.join("`, `")
        );
    }
    outer.input = line.to_owned();
    Some(outer)
}

/// At most 60 characters of a line on one line, for messages.
pub fn shorten_line(line: &str) -> String {
    shorten(line)
}
