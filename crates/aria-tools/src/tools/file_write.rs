//! `file_write {path, content}`: creates or replaces one UTF-8 text file inside the roots.
//!
//! The path goes through [`PathGuard::resolve_for_create`] (outside the roots, sensitive files,
//! files that configure ARIA or git, symlink escapes and `..` tricks in the new part are
//! refused). The write is atomic and
//! confined: a temp file in the target's directory, opened beneath the root without following
//! links, renamed over the target, keeping the old file's permissions (see
//! [`crate::patch::commit`]). Missing parent directories are created beneath the root.

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::guard::path::{PathGuard, Resolved};
use crate::guard::read::DEFAULT_MAX_READ_BYTES;
use crate::patch::commit::{Before, Planned, WriteError, commit, observe};
use crate::patch::line_counts;
use crate::tools::file_read::human_size;
use crate::tools::{blocking, path_error, roots_sentence};

/// Largest content `file_write` writes (10 MiB).
pub const MAX_WRITE_BYTES: u64 = 10 * 1024 * 1024;

/// Creates or replaces a text file inside the roots. Tier: recoverable-write.
#[derive(Debug)]
pub struct FileWrite {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl FileWrite {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "file_write";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: FileWrite::NAME.to_owned(),
            description: format!(
                "Create a UTF-8 text file, or replace a whole file's content, inside {}. Missing \
                 parent directories are created. The write is atomic and keeps the file's \
                 permissions. Content over {}, secrets files (.env, keys, .ssh, credentials) \
                 and files that configure ARIA or git (aria.toml, AGENTS.md, .git/hooks, \
                 .git/config) are refused. To change part of a file, prefer apply_patch.",
                roots_sentence(&guard),
                human_size(MAX_WRITE_BYTES)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "File path, relative to the first root or absolute inside a root."
                    },
                    "content": {
                        "type": "string",
                        "description": "The complete new content of the file."
                    }
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        };
        FileWrite { guard, spec }
    }
}

fn arguments(args: &Value) -> Result<(String, String), ToolError> {
    let usage = "file_write takes two string arguments: \"path\" (relative to the first root, or absolute inside a root) and \"content\" (the whole new file)";
    let Some(map) = args.as_object() else {
        return Err(ToolError::failed(format!("the arguments are not a JSON object; {usage}")));
    };
    if let Some(unknown) = map.keys().find(|k| !matches!(k.as_str(), "path" | "content")) {
        return Err(ToolError::failed(format!("unknown argument \"{unknown}\"; {usage}")));
    }
    let get = |name: &str| match map.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ToolError::failed(format!("\"{name}\" must be a string; {usage}"))),
        None => Err(ToolError::failed(format!("the argument \"{name}\" is missing; {usage}"))),
    };
    Ok((get("path")?, get("content")?))
}

/// Maps a write failure to what the model sees.
pub(crate) fn write_error(err: WriteError) -> ToolError {
    match err {
        WriteError::Inconsistent { .. } => ToolError::Fatal { message: err.to_string() },
        WriteError::NotRegular { .. } => ToolError::refused(err.to_string()),
        WriteError::Read(e) if e.is_refusal() => ToolError::refused(e.to_string()),
        other => ToolError::failed(other.to_string()),
    }
}

/// What a write does, worked out before anything is written.
struct Plan {
    planned: Planned,
    lines: usize,
    /// Lines added and removed, for a replaced text file.
    counts: Option<(usize, usize)>,
    first_change: Option<usize>,
    new_dirs: bool,
}

fn plan(guard: &PathGuard, input: &str, content: String) -> Result<Plan, ToolError> {
    let target = guard
        .resolve_for_create(input)
        .map_err(|e| path_error(e, "Use file_list to see which directories exist."))?;
    let before = observe(guard, &target, DEFAULT_MAX_READ_BYTES).map_err(write_error)?;
    let counts = before.text.as_deref().map(|old| line_counts(old, &content));
    let first_change = before.text.as_deref().and_then(|old| first_changed_line(old, &content));
    let new_dirs = before.stat.is_none() && !target.path().parent().is_some_and(|p| p.is_dir());
    Ok(Plan {
        lines: content.lines().count(),
        counts,
        first_change,
        new_dirs,
        planned: Planned { target, before, after: Some(content) },
    })
}

/// The 1-based first line where `old` and `new` differ.
fn first_changed_line(old: &str, new: &str) -> Option<usize> {
    let mut a = old.split_inclusive('\n');
    let mut b = new.split_inclusive('\n');
    let mut n = 1;
    loop {
        match (a.next(), b.next()) {
            (None, None) => return None,
            (x, y) if x != y => return Some(n),
            _ => n += 1,
        }
    }
}

fn describe(plan: &Plan, dry_run: bool) -> String {
    let Planned { target, before, after } = &plan.planned;
    let bytes = after.as_ref().map_or(0, String::len);
    let path = target.path().display();
    let size = format!("{bytes} bytes, {} lines", plan.lines);
    let (verb_now, verb_would) =
        if before.stat.is_none() { ("Created", "create") } else { ("Replaced", "replace") };
    let mut s = if dry_run {
        format!("Dry run: would {verb_would} {path} ({size}).")
    } else {
        format!("{verb_now} {path} ({size}).")
    };
    if let Some(st) = before.stat {
        let was = match (&before.text, &before.unreadable) {
            (Some(old), _) => format!(" It had {} bytes, {} lines", st.len, old.lines().count()),
            (None, Some(why)) => format!(" It was not a readable text file ({why})"),
            (None, None) => format!(" It had {} bytes", st.len),
        };
        s.push_str(&was);
        if let Some((added, removed)) = plan.counts {
            s.push_str(&format!("; +{added} -{removed} lines"));
        }
        if let Some(line) = plan.first_change {
            s.push_str(&format!(", first change at line {line}"));
        }
        s.push('.');
    }
    if plan.new_dirs {
        s.push_str(if dry_run {
            " Missing parent directories would be created."
        } else {
            " Missing parent directories were created."
        });
    }
    if dry_run {
        s.push_str(" Nothing was written.");
    }
    s
}

fn details(plan: &Plan, action: &str, dry_run: bool) -> Value {
    let Planned { target, after, .. } = &plan.planned;
    json!({
        "path": target.path().to_string_lossy(),
        "action": action,
        "bytes": after.as_ref().map_or(0, String::len),
        "lines": plan.lines,
        "added": plan.counts.map(|c| c.0),
        "removed": plan.counts.map(|c| c.1),
        "dry_run": dry_run,
    })
}

fn unchanged(target: &Resolved, before: &Before, after: &str) -> bool {
    before.text.as_deref() == Some(after) && target.exists()
}

fn run(
    guard: &PathGuard,
    input: &str,
    content: String,
    dry_run: bool,
) -> Result<ToolOutput, ToolError> {
    let plan = plan(guard, input, content)?;
    let Planned { target, before, after } = &plan.planned;
    if unchanged(target, before, after.as_deref().unwrap_or("")) {
        let text = format!(
            "{} already has exactly this content; nothing was written.",
            target.path().display()
        );
        return Ok(ToolOutput::text(text).with_details(details(&plan, "unchanged", dry_run)));
    }
    let action = if before.stat.is_none() { "created" } else { "replaced" };
    if !dry_run {
        commit(std::slice::from_ref(&plan.planned)).map_err(write_error)?;
        tracing::debug!(tool = FileWrite::NAME, path = %target, action, "wrote");
    }
    Ok(ToolOutput::text(describe(&plan, dry_run)).with_details(details(&plan, action, dry_run)))
}

impl Tool for FileWrite {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::RecoverableWrite
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let (input, content) = arguments(&args)?;
            if content.len() as u64 > MAX_WRITE_BYTES {
                return Err(ToolError::failed(format!(
                    "the content is {} bytes, over the {} limit of file_write; write a smaller file",
                    content.len(),
                    human_size(MAX_WRITE_BYTES)
                )));
            }
            let guard = Arc::clone(&self.guard);
            let dry_run = ctx.dry_run;
            blocking(FileWrite::NAME, move || run(&guard, &input, content, dry_run)).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_changed_line_is_found() {
        assert_eq!(first_changed_line("a\nb\nc\n", "a\nB\nc\n"), Some(2));
        assert_eq!(first_changed_line("a\n", "a\nb\n"), Some(2));
        assert_eq!(first_changed_line("a\nb", "a\nb\n"), Some(2));
        assert_eq!(first_changed_line("same", "same"), None);
    }

    #[test]
    fn arguments_are_checked() {
        assert!(arguments(&json!({"path": "a", "content": ""})).is_ok());
        for bad in [
            json!([]),
            json!({"path": "a"}),
            json!({"path": 1, "content": ""}),
            json!({"path": "a", "content": "", "mode": 1}),
        ] {
            assert!(matches!(arguments(&bad), Err(ToolError::Failed { .. })), "{bad}");
        }
    }
}
