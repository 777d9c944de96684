//! What the tools that change part of a text file share: opening the file for the change, and
//! writing it with the answer that shows the change as a diff.

use aria_api::{ToolError, ToolOutput};
use serde_json::json;

use crate::guard::path::{PathGuard, Resolved};
use crate::guard::read::DEFAULT_MAX_READ_BYTES;
use crate::patch::commit::{Before, Planned, commit, observe};
use crate::patch::{line_counts, unified_diff};
use crate::tools::file_write::write_error;
use crate::tools::path_error_naming;

/// Most lines of the diff the answer shows.
const MAX_DIFF_LINES: usize = 40;

/// The existing text file `path` inside the roots, resolved for a write, and what it holds now
/// (its text is `Some`).
pub(crate) fn open_text(guard: &PathGuard, path: &str) -> Result<(Resolved, Before), ToolError> {
    let target = guard.resolve_existing_for_write(path).map_err(|e| {
        path_error_naming(
            guard,
            e,
            "Use file_list to see which files exist; file_write creates one.",
        )
    })?;
    let before = observe(guard, &target, DEFAULT_MAX_READ_BYTES).map_err(write_error)?;
    if before.text.is_none() {
        let why = before.unreadable.clone().unwrap_or_else(|| "it is not a file".to_owned());
        return Err(ToolError::failed(format!(
            "{} cannot be edited as text: {why}",
            target.path().display()
        )));
    }
    Ok((target, before))
}

/// Writes `new_text` over the file opened by [`open_text`] (unless `dry_run`) and answers with
/// the diff; `note` says how the place was found when that was not exactly.
pub(crate) fn write_change(
    tool: &str,
    target: Resolved,
    before: Before,
    new_text: String,
    note: Option<&str>,
    dry_run: bool,
) -> Result<ToolOutput, ToolError> {
    let old_text = before.text.as_deref().unwrap_or_default();
    let (added, removed) = line_counts(old_text, &new_text);
    let shown = target.path().display().to_string();
    let diff = unified_diff(Some(old_text), Some(&new_text), &shown);
    let mut diff_lines: Vec<&str> = diff.lines().collect();
    let cut = diff_lines.len().saturating_sub(MAX_DIFF_LINES);
    diff_lines.truncate(MAX_DIFF_LINES);
    let note = note.map(|n| format!("; {n}")).unwrap_or_default();
    let mut text = if dry_run {
        format!(
            "Dry run: would edit {shown} (+{added} -{removed} lines{note}). Nothing was written.\n"
        )
    } else {
        format!("Edited {shown} (+{added} -{removed} lines{note}):\n")
    };
    text.push_str(&diff_lines.join("\n"));
    if cut > 0 {
        text.push_str(&format!("\n… {cut} more diff lines"));
    }
    let path = target.path().to_string_lossy().into_owned();
    let planned = Planned { target, before, after: Some(new_text) };
    if !dry_run {
        commit(std::slice::from_ref(&planned)).map_err(write_error)?;
        tracing::debug!(tool, path = %planned.target, "edited");
    }
    let details = json!({"path": path, "added": added, "removed": removed, "dry_run": dry_run});
    Ok(ToolOutput::text(text).with_details(details))
}
