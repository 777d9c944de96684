//! `file_edit {path, old, new}`: replaces one piece of text in an existing UTF-8 file inside
//! the roots.
//!
//! The easiest change for a model to get right: copy a few lines as they are in the file, give
//! them as they should be. No line numbers or counts to get wrong (the usual failure of a small
//! model's unified diff), and no whole-file rewrite to lose lines in (the usual failure of its
//! `file_write`). `old` must be found at exactly one place, so the change lands where it was
//! meant: exactly as given, or else as whole lines with the spacing a small model gets wrong
//! forgiven ([`crate::patch::locate`]). The answer shows the change as a diff.
//!
//! The path goes through [`PathGuard::resolve_existing_for_write`] (outside the roots,
//! sensitive files, files that configure ARIA or git are refused), and the write is the same
//! atomic, confined write as `file_write`'s ([`crate::patch::commit`]).

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::guard::path::PathGuard;
use crate::patch::locate::locate;
use crate::tools::text_change::{open_text, write_change};
use crate::tools::{blocking, roots_sentence};

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

/// `text` with `old` replaced by `new` at the one place [`locate`] finds, and what to say
/// about how it was found.
fn replace_once(text: &str, old: &str, new: &str) -> Result<(String, Option<String>), String> {
    let place = locate(text, old, new).map_err(|m| m.message("old"))?;
    let mut notes: Vec<String> = place.matched.note().into_iter().map(str::to_owned).collect();
    if place.repeated_lines > 0 {
        notes.push(format!(
            "{} line(s) of \"new\" repeated the file's lines next to \"old\" and were not \
             written twice",
            place.repeated_lines
        ));
    }
    Ok((place.apply(text), (!notes.is_empty()).then(|| notes.join("; "))))
}

fn run(guard: &PathGuard, edit: Edit, dry_run: bool) -> Result<ToolOutput, ToolError> {
    let (target, before) = open_text(guard, &edit.path)?;
    let old_text = before.text.as_deref().unwrap_or_default();
    let (new_text, note) = replace_once(old_text, &edit.old, &edit.new)
        .map_err(|why| ToolError::failed(format!("{}: {why}", target.path().display())))?;
    write_change(FileEdit::NAME, target, before, new_text, note.as_deref(), dry_run)
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
