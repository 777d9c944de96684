//! `file_edit {path, old, new}`: replaces one exact piece of text in an existing UTF-8 file
//! inside the roots.
//!
//! The easiest change for a model to get right: copy a few lines as they are in the file, give
//! them as they should be. No line numbers or counts to get wrong (the usual failure of a small
//! model's unified diff), and no whole-file rewrite to lose lines in (the usual failure of its
//! `file_write`). `old` must occur exactly once, so the change lands where it was meant; the
//! answer shows the change as a diff.
//!
//! The path goes through [`PathGuard::resolve_existing_for_write`] (outside the roots,
//! sensitive files, files that configure ARIA or git are refused), and the write is the same
//! atomic, confined write as `file_write`'s ([`crate::patch::commit`]).

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::guard::path::PathGuard;
use crate::guard::read::DEFAULT_MAX_READ_BYTES;
use crate::patch::commit::{Planned, commit, observe};
use crate::patch::{line_counts, unified_diff};
use crate::tools::file_write::write_error;
use crate::tools::{blocking, path_error_naming, roots_sentence};

/// Most lines of the diff the answer shows.
const MAX_DIFF_LINES: usize = 40;
/// Most places listed when `old` occurs more than once.
const MAX_PLACES: usize = 10;

/// Replaces one exact piece of text in a file inside the roots. Tier: recoverable-write.
#[derive(Debug)]
pub struct FileEdit {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl FileEdit {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "file_edit";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: FileEdit::NAME.to_owned(),
            description: format!(
                "Replace text in an existing file inside {}: `old` is removed and `new` written \
                 in its place, so to add a line give the line before it as `old` and that line \
                 plus the new one as `new`. `old` is copied exactly from the file (whole lines, \
                 same indentation) and must occur once; add a neighbouring line to make it \
                 unique. Secrets files and files that configure ARIA or git are refused.",
                roots_sentence(&guard)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "File path, relative to the first root or absolute inside a root."
                    },
                    "old": {
                        "type": "string",
                        "description": "The lines to replace, copied exactly from the file."
                    },
                    "new": {
                        "type": "string",
                        "description": "What replaces them, including the lines of old to keep."
                    }
                },
                "required": ["path", "old", "new"],
                "additionalProperties": false
            }),
        };
        FileEdit { guard, spec }
    }
}

/// The checked arguments.
#[derive(Debug, PartialEq, Eq)]
struct Edit {
    path: String,
    old: String,
    new: String,
}

fn arguments(args: &Value) -> Result<Edit, ToolError> {
    let usage = "file_edit takes three string arguments: \"path\", \"old\" (the exact text to replace) and \"new\" (what replaces it)";
    let Some(map) = args.as_object() else {
        return Err(ToolError::failed(format!("the arguments are not a JSON object; {usage}")));
    };
    if let Some(unknown) = map.keys().find(|k| !matches!(k.as_str(), "path" | "old" | "new")) {
        return Err(ToolError::failed(format!("unknown argument \"{unknown}\"; {usage}")));
    }
    let get = |name: &str| match map.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ToolError::failed(format!("\"{name}\" must be a string; {usage}"))),
        None => Err(ToolError::failed(format!("the argument \"{name}\" is missing; {usage}"))),
    };
    let edit = Edit { path: get("path")?, old: get("old")?, new: get("new")? };
    if edit.old.is_empty() {
        return Err(ToolError::failed(
            "\"old\" is empty; give the text to replace, copied from the file (to add a line, \
             give the line before it as \"old\" and both lines as \"new\"; to create a file, \
             use file_write)",
        ));
    }
    if edit.old == edit.new {
        return Err(ToolError::failed(
            "\"old\" and \"new\" are the same, so this changes nothing; put the changed text in \
             \"new\"",
        ));
    }
    Ok(edit)
}

/// Where `needle` starts in `text`, overlapping occurrences included (`}\n}\n` occurs twice in
/// `}\n}\n}\n`): "exactly once" has to mean it.
fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    let mut places = Vec::new();
    let mut from = 0;
    while let Some(found) = text.get(from..).and_then(|rest| rest.find(needle)) {
        let at = from + found;
        places.push(at);
        // On to the next character after this occurrence's start.
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    places
}

/// `text` with `old` replaced by `new` where it occurs exactly once. When `old` as given is not
/// there and the file has `\r\n` line endings, `old` and `new` written with `\n` (as a model
/// writes them) are taken in the file's endings.
fn replace_once(text: &str, old: &str, new: &str) -> Result<String, String> {
    let mut places = occurrences(text, old);
    let (old, new) = if places.is_empty() && text.contains("\r\n") && !old.contains("\r\n") {
        let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
        let old = crlf(old);
        places = occurrences(text, &old);
        (old, crlf(new))
    } else {
        (old.to_owned(), new.to_owned())
    };
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    match places.as_slice() {
        [at] => Ok(format!("{}{new}{}", &text[..*at], &text[at + old.len()..])),
        [] => Err(not_found(text, &old)),
        many => {
            let lines: Vec<String> =
                many.iter().take(MAX_PLACES).map(|&at| line_of(at).to_string()).collect();
            Err(format!(
                "\"old\" occurs {} times (at lines {}); add a neighbouring line to \"old\" (and \
                 \"new\") so that it occurs once",
                many.len(),
                lines.join(", ")
            ))
        }
    }
}

/// Why `old` is not in `text`, and what is nearest to it.
fn not_found(text: &str, old: &str) -> String {
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if !squeeze(old).is_empty() && squeeze(text).contains(&squeeze(old)) {
        return "\"old\" is in the file with other spaces, tabs or line breaks; copy it exactly \
                as file_read shows it (same indentation, one line per line)"
            .to_owned();
    }
    // The file's line that shares the most words with old's first non-blank line.
    let first = old.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let words: Vec<&str> = first.split_whitespace().collect();
    let nearest = text
        .lines()
        .enumerate()
        .map(|(i, line)| (words.iter().filter(|w| line.contains(**w)).count(), i, line))
        .filter(|(shared, _, _)| *shared > 0)
        .max_by_key(|(shared, i, _)| (*shared, std::cmp::Reverse(*i)));
    match nearest {
        Some((_, i, line)) => format!(
            "\"old\" is not in the file; the nearest line is line {}: {line:?}. Copy \"old\" \
             exactly from the file (file_read shows it)",
            i + 1
        ),
        None => "\"old\" is not in the file; read it with file_read and copy the text to \
                 replace exactly"
            .to_owned(),
    }
}

fn run(guard: &PathGuard, edit: Edit, dry_run: bool) -> Result<ToolOutput, ToolError> {
    let target = guard.resolve_existing_for_write(&edit.path).map_err(|e| {
        path_error_naming(
            guard,
            e,
            "Use file_list to see which files exist; file_write creates one.",
        )
    })?;
    let before = observe(guard, &target, DEFAULT_MAX_READ_BYTES).map_err(write_error)?;
    let Some(old_text) = before.text.as_deref() else {
        let why = before.unreadable.clone().unwrap_or_else(|| "it is not a file".to_owned());
        return Err(ToolError::failed(format!(
            "{} cannot be edited as text: {why}",
            target.path().display()
        )));
    };
    let new_text = replace_once(old_text, &edit.old, &edit.new)
        .map_err(|why| ToolError::failed(format!("{}: {why}", target.path().display())))?;
    let (added, removed) = line_counts(old_text, &new_text);
    let shown = target.path().display().to_string();
    let diff = unified_diff(Some(old_text), Some(&new_text), &shown);
    let mut diff_lines: Vec<&str> = diff.lines().collect();
    let cut = diff_lines.len().saturating_sub(MAX_DIFF_LINES);
    diff_lines.truncate(MAX_DIFF_LINES);
    let planned = Planned { target, before, after: Some(new_text) };
    if !dry_run {
        commit(std::slice::from_ref(&planned)).map_err(write_error)?;
        tracing::debug!(tool = FileEdit::NAME, path = %planned.target, "edited");
    }
    let mut text = if dry_run {
        format!("Dry run: would edit {shown} (+{added} -{removed} lines). Nothing was written.\n")
    } else {
        format!("Edited {shown} (+{added} -{removed} lines):\n")
    };
    text.push_str(&diff_lines.join("\n"));
    if cut > 0 {
        text.push_str(&format!("\n… {cut} more diff lines"));
    }
    let details = json!({
        "path": planned.target.path().to_string_lossy(),
        "added": added,
        "removed": removed,
        "dry_run": dry_run,
    });
    Ok(ToolOutput::text(text).with_details(details))
}

impl Tool for FileEdit {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::RecoverableWrite
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let edit = arguments(&args)?;
            let guard = Arc::clone(&self.guard);
            let dry_run = ctx.dry_run;
            blocking(FileEdit::NAME, move || run(&guard, edit, dry_run)).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_occurrence_is_replaced_and_others_are_refused_with_their_lines() {
        let text = "milk\neggs\n";
        assert_eq!(replace_once(text, "eggs\n", "eggs\nbread\n").unwrap(), "milk\neggs\nbread\n");
        assert_eq!(replace_once("port = 8088\n", "8088", "9090").unwrap(), "port = 9090\n");
        let twice = replace_once("a = 1\nb = 2\na = 1\n", "a = 1", "a = 3").unwrap_err();
        assert!(twice.contains("occurs 2 times (at lines 1, 3)"), "{twice}");
        // Overlapping copies count: `}\n}\n` is in `}\n}\n}\n` twice.
        let braces = replace_once("}\n}\n}\n", "}\n}\n", "}\n").unwrap_err();
        assert!(braces.contains("occurs 2 times (at lines 1, 2)"), "{braces}");
        assert_eq!(occurrences("ééé", "éé"), vec![0, 2]);
    }

    #[test]
    fn a_crlf_file_takes_lf_text_in_its_own_line_endings() {
        let text = "one\r\ntwo\r\nthree\r\n";
        assert_eq!(replace_once(text, "one\ntwo\n", "one\n2\n").unwrap(), "one\r\n2\r\nthree\r\n");
        // `new` already in CRLF is not doubled; text found as given is taken as given.
        assert_eq!(replace_once(text, "one\n", "1\r\n").unwrap(), "1\r\ntwo\r\nthree\r\n");
        let mixed = "a\r\nb\nc\n";
        assert_eq!(replace_once(mixed, "b\nc", "B\nC").unwrap(), "a\r\nB\nC\n");
    }

    #[test]
    fn text_that_is_not_there_gets_the_nearest_line_or_the_spacing_hint() {
        let text = "def multiply(a, b):\n    return a * b\n";
        let near = replace_once(text, "def multiply(x, y):", "def mul(x, y):").unwrap_err();
        assert!(near.contains("line 1: \"def multiply(a, b):\""), "{near}");
        let spaced = replace_once(text, "return  a * b", "return a*b").unwrap_err();
        assert!(spaced.contains("other spaces, tabs or line breaks"), "{spaced}");
        let nothing = replace_once(text, "zzz", "y").unwrap_err();
        assert!(nothing.contains("read it with file_read"), "{nothing}");
    }

    #[test]
    fn arguments_are_checked() {
        assert!(arguments(&json!({"path": "a", "old": "x", "new": ""})).is_ok());
        for bad in [
            json!([]),
            json!({"path": "a", "old": "x"}),
            json!({"path": "a", "old": 1, "new": "y"}),
            json!({"path": "a", "old": "x", "new": "y", "count": 2}),
            json!({"path": "a", "old": "", "new": "y"}),
            json!({"path": "a", "old": "same", "new": "same"}),
        ] {
            assert!(matches!(arguments(&bad), Err(ToolError::Failed { .. })), "{bad}");
        }
    }
}
