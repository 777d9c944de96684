//! `file_insert {path, text, after?, before?}`: adds whole lines to an existing UTF-8 file
//! inside the roots, at its end or next to a line it names.
//!
//! Adding is the change small models got wrong most often with the other forms: a unified diff
//! of `- buy milk` reads as a removal, a `file_edit` that gives the last line as `old` and only
//! the new line as `new` drops that line, and a whole-file `file_write` keeps only the new line.
//! Here nothing is replaced, so nothing can be lost: the lines go at the end, or after (before)
//! the one line that contains `after` (`before`), found as `file_edit` finds its text
//! ([`crate::patch::locate`]). In a Markdown file, one line added next to a list item without a
//! marker of its own gets the item's marker (`bread` after `- eggs` becomes `- bread`).
//!
//! The path and the write are `file_edit`'s ([`crate::tools::text_change`]).

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::guard::path::PathGuard;
use crate::patch::locate::locate;
use crate::tools::text_change::{open_text, write_change};
use crate::tools::{blocking, roots_sentence};

/// Adds lines to a file inside the roots. Tier: recoverable-write.
#[derive(Debug)]
pub struct FileInsert {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl FileInsert {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "file_insert";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: FileInsert::NAME.to_owned(),
            description: format!(
                "Add lines to an existing file inside {}, changing nothing else: at the end, or \
                 after (or before) the line that contains `after` (`before`). Use it to append \
                 to a list or add a line; file_edit changes existing text.",
                roots_sentence(&guard)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "File path, relative to the first root or absolute inside a root."
                    },
                    "text": {
                        "type": "string",
                        "description": "The line or lines to add."
                    },
                    "after": {
                        "type": "string",
                        "description": "Optional: text of the line to add them after (default: the end of the file)."
                    },
                    "before": {
                        "type": "string",
                        "description": "Optional: text of the line to add them before."
                    }
                },
                "required": ["path", "text"],
                "additionalProperties": false
            }),
        };
        FileInsert { guard, spec }
    }
}

/// Where the lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
enum At {
    End,
    After(String),
    Before(String),
}

/// The checked arguments.
#[derive(Debug, PartialEq, Eq)]
struct Insert {
    path: String,
    text: String,
    at: At,
}

fn arguments(args: &Value) -> Result<Insert, ToolError> {
    let usage = "file_insert takes \"path\" and \"text\" (the lines to add), and at most one of \
                 \"after\" or \"before\" (the text of a line in the file); without them the \
                 lines go at the end";
    let Some(map) = args.as_object() else {
        return Err(ToolError::failed(format!("the arguments are not a JSON object; {usage}")));
    };
    if let Some(unknown) =
        map.keys().find(|k| !matches!(k.as_str(), "path" | "text" | "after" | "before"))
    {
        return Err(ToolError::failed(format!("unknown argument \"{unknown}\"; {usage}")));
    }
    let optional = |name: &str| match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ToolError::failed(format!("\"{name}\" must be a string; {usage}"))),
    };
    let required = |name: &str| {
        optional(name)?.ok_or_else(|| {
            ToolError::failed(format!("the argument \"{name}\" is missing or empty; {usage}"))
        })
    };
    let at = match (optional("after")?, optional("before")?) {
        (None, None) => At::End,
        (Some(line), None) => At::After(line),
        (None, Some(line)) => At::Before(line),
        (Some(_), Some(_)) => {
            return Err(ToolError::failed(format!(
                "give \"after\" or \"before\", not both; {usage}"
            )));
        }
    };
    Ok(Insert { path: required("path")?, text: required("text")?, at })
}

/// The list marker a Markdown list item starts with (`- `, `* `, `+ `, `1. `), with its
/// indentation, or `None`.
fn list_marker(line: &str) -> Option<String> {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    if let Some(bullet) = ["- ", "* ", "+ "].into_iter().find(|b| body.starts_with(b)) {
        // A checkbox item's marker includes an empty box.
        let marker = if body[2..].starts_with("[ ] ") || body[2..].starts_with("[x] ") {
            format!("{bullet}[ ] ")
        } else {
            bullet.to_owned()
        };
        return Some(format!("{indent}{marker}"));
    }
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    let rest = &body[digits..];
    if digits > 0 && (rest.starts_with(". ") || rest.starts_with(") ")) {
        let n: u64 = body[..digits].parse().ok()?;
        return Some(format!("{indent}{}{} ", n + 1, &rest[..1]));
    }
    None
}

/// `text` where it goes in `file`: the new file text and whether a list marker was added.
fn insert(file: &str, text: &str, at: &At, markdown: bool) -> Result<(String, bool), String> {
    let eol = if file.contains("\r\n") { "\r\n" } else { "\n" };
    let (offset, neighbour) = match at {
        At::End => (file.len(), file.lines().rev().find(|l| !l.trim().is_empty())),
        At::After(anchor) | At::Before(anchor) => {
            let what = if matches!(at, At::After(_)) { "after" } else { "before" };
            let place = locate(file, anchor, "").map_err(|m| m.message(what))?;
            let line_start = file[..place.start].rfind('\n').map_or(0, |i| i + 1);
            // The place may end with its line break (an anchor copied with it): that is the
            // line's end; otherwise the line ends after the next break.
            let line_end = if place.end > place.start && file[..place.end].ends_with('\n') {
                place.end
            } else {
                file[place.end..].find('\n').map_or(file.len(), |i| place.end + i + 1)
            };
            let line = file[line_start..line_end].trim_end_matches(['\n', '\r']);
            match at {
                At::After(_) => (line_end, Some(line)),
                _ => (line_start, Some(line)),
            }
        }
    };
    let mut lines: Vec<String> =
        text.trim_end_matches(['\n', '\r']).lines().map(str::to_owned).collect();
    let mut marked = false;
    if markdown
        && let [only] = lines.as_mut_slice()
        && list_marker(only).is_none()
        && let Some(marker) = neighbour.and_then(list_marker)
    {
        *only = format!("{marker}{}", only.trim());
        marked = true;
    }
    let mut block = lines.join(eol);
    block.push_str(eol);
    let before = &file[..offset];
    let gap = if !before.is_empty() && !before.ends_with('\n') { eol } else { "" };
    Ok((format!("{before}{gap}{block}{}", &file[offset..]), marked))
}

fn run(guard: &PathGuard, args: Insert, dry_run: bool) -> Result<ToolOutput, ToolError> {
    let (target, before) = open_text(guard, &args.path)?;
    let file = before.text.as_deref().unwrap_or_default();
    let markdown = target
        .path()
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "md" | "markdown"));
    let (new_text, marked) = insert(file, &args.text, &args.at, markdown)
        .map_err(|why| ToolError::failed(format!("{}: {why}", target.path().display())))?;
    let note = marked.then_some("written as a list item like the line next to it");
    write_change(FileInsert::NAME, target, before, new_text, note, dry_run)
}

impl Tool for FileInsert {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::RecoverableWrite
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = arguments(&args)?;
            let guard = Arc::clone(&self.guard);
            let dry_run = ctx.dry_run;
            blocking(FileInsert::NAME, move || run(&guard, args, dry_run)).await
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use super::*;

    /// `{"path", "text"}` plus `after`/`before` when present: for tests.
    fn args(path: &str, text: &str, extra: &[(&str, &str)]) -> Value {
        let mut map = Map::new();
        map.insert("path".into(), path.into());
        map.insert("text".into(), text.into());
        for (k, v) in extra {
            map.insert((*k).into(), (*v).into());
        }
        Value::Object(map)
    }

    fn put(file: &str, text: &str, at: At) -> String {
        insert(file, text, &at, false).unwrap().0
    }

    #[test]
    fn lines_go_at_the_end_on_a_line_of_their_own() {
        assert_eq!(put("milk\neggs\n", "bread", At::End), "milk\neggs\nbread\n");
        assert_eq!(put("milk\neggs", "bread\n", At::End), "milk\neggs\nbread\n");
        assert_eq!(put("", "bread", At::End), "bread\n");
        assert_eq!(put("a\r\nb\r\n", "c\nd", At::End), "a\r\nb\r\nc\r\nd\r\n");
    }

    #[test]
    fn lines_go_after_or_before_the_line_named_by_part_of_it() {
        let file = "import os\n\ndef main():\n    pass\n";
        assert_eq!(
            put(file, "import sys", At::After("import os".into())),
            "import os\nimport sys\n\ndef main():\n    pass\n"
        );
        assert_eq!(
            put(file, "# entry point", At::Before("def main".into())),
            "import os\n\n# entry point\ndef main():\n    pass\n"
        );
        // An anchor copied with its line break, or without its indentation, is the same line.
        assert_eq!(put("a\nb\n", "x", At::After("a\n".into())), "a\nx\nb\n");
        assert_eq!(put("a\n    pass\n", "x", At::After("pass".into())), "a\n    pass\nx\n");
        // The last line without a line break gets one before the new line.
        assert_eq!(put("a\nb", "x", At::After("b".into())), "a\nb\nx\n");
    }

    #[test]
    fn an_anchor_that_is_missing_or_repeated_is_an_error_naming_the_argument() {
        let missing = insert("a\nb\n", "x", &At::After("zzz".into()), false).unwrap_err();
        assert!(missing.starts_with("\"after\" is not in the file"), "{missing}");
        let twice = insert("- a\n- a\n", "x", &At::Before("- a".into()), false).unwrap_err();
        assert!(twice.contains("\"before\" occurs 2 times (at lines 1, 2)"), "{twice}");
    }

    #[test]
    fn one_markdown_line_next_to_a_list_item_becomes_an_item() {
        let list = "# Shopping\n\n- milk\n- eggs\n";
        assert_eq!(
            insert(list, "bread", &At::End, true).unwrap(),
            (format!("{list}- bread\n"), true)
        );
        // Already an item, or not Markdown: as given.
        assert_eq!(insert(list, "* bread", &At::End, true).unwrap().0, format!("{list}* bread\n"));
        assert_eq!(insert(list, "bread", &At::End, false).unwrap().0, format!("{list}bread\n"));
        // Numbered lists count on; checkboxes get an empty box; indentation is kept.
        assert_eq!(insert("1. a\n2. b\n", "c", &At::End, true).unwrap().0, "1. a\n2. b\n3. c\n");
        assert_eq!(insert("- [x] a\n", "b", &At::End, true).unwrap().0, "- [x] a\n- [ ] b\n");
        assert_eq!(
            insert("- a\n  - b\n- c\n", "b2", &At::After("- b".into()), true).unwrap().0,
            "- a\n  - b\n  - b2\n- c\n"
        );
        // Several lines are the model's own text.
        assert_eq!(insert(list, "x\ny", &At::End, true).unwrap().0, format!("{list}x\ny\n"));
    }

    #[test]
    fn arguments_are_checked() {
        assert_eq!(arguments(&args("a", "x", &[])).unwrap().at, At::End);
        assert_eq!(
            arguments(&args("a", "x", &[("after", "b")])).unwrap().at,
            At::After("b".into())
        );
        // An empty anchor is no anchor (small models fill every field).
        assert_eq!(arguments(&args("a", "x", &[("before", "")])).unwrap().at, At::End);
        for bad in [
            json!([]),
            json!({"path": "a"}),
            json!({"path": "a", "text": ""}),
            json!({"path": "a", "text": 3}),
            args("a", "x", &[("after", "b"), ("before", "c")]),
            args("a", "x", &[("line", "3")]),
        ] {
            assert!(matches!(arguments(&bad), Err(ToolError::Failed { .. })), "{bad}");
        }
    }
}
