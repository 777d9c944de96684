//! Built-in tools. Each file holds one tool; the list of what the model may call is in
//! [`crate::registry`].

pub mod apply_patch;
pub mod file_edit;
pub mod file_insert;
pub mod file_list;
pub mod file_read;
pub mod file_search;
pub mod file_write;
pub mod git_commit;
pub mod git_diff;
pub mod git_log;
pub(crate) mod git_repo;
pub mod git_status;
mod json_summary;
pub mod python_run;
pub mod run_profile;
pub mod shell_execute;
mod shell_line;
mod shell_steps;
pub mod snapshot_tools;
pub mod system_info;
mod text_change;
pub mod web_fetch;
pub mod web_search;

use aria_api::ToolError;
use serde_json::Value;

use crate::guard::path::{PathError, PathGuard};

/// Cuts `text` to at most `max` bytes on a character boundary; returns whether it cut.
pub(crate) fn cut(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

/// The single `path` argument of the file tools, checked defensively (the loop has validated
/// the schema already, but a tool must not trust that).
pub(crate) fn path_arg(tool: &str, args: &Value) -> Result<String, ToolError> {
    let usage = format!(
        "{tool} takes one argument, \"path\": a string path relative to the first root, or absolute inside a root"
    );
    let Some(map) = args.as_object() else {
        return Err(ToolError::failed(format!("the arguments are not a JSON object; {usage}")));
    };
    if let Some(unknown) = map.keys().find(|k| k.as_str() != "path") {
        return Err(ToolError::failed(format!("unknown argument \"{unknown}\"; {usage}")));
    }
    match map.get("path") {
        Some(Value::String(p)) => Ok(p.clone()),
        Some(_) => Err(ToolError::failed(format!("\"path\" must be a string; {usage}"))),
        None => Err(ToolError::failed(format!("the argument \"path\" is missing; {usage}"))),
    }
}

/// Maps a path-resolution failure to what the model sees; `hint` is appended to ordinary
/// failures (not to refusals, whose reasons already say what to do).
pub(crate) fn path_error(err: PathError, hint: &str) -> ToolError {
    match err {
        PathError::Refused(r) => ToolError::refused(r.reason()),
        other => ToolError::failed(format!("{other}. {hint}")),
    }
}

/// Like [`path_error`], but a path that does not exist in a directory that does gets that
/// directory's names: a model that guessed a file name (`example.txt`) sees the real ones and
/// can pick, instead of giving up or inventing the content.
pub(crate) fn path_error_naming(guard: &PathGuard, err: PathError, hint: &str) -> ToolError {
    if let PathError::NotFound { path, via_link: None, .. } = &err
        && let Some(dir) = path.parent()
        && let Some(names) = names_in(guard, dir)
    {
        return ToolError::failed(format!("{err}. {} holds: {names}", dir.display()));
    }
    path_error(err, hint)
}

/// Most names [`path_error_naming`] lists.
const MAX_NAMED: usize = 30;

/// The sorted names in `dir` (`name/` for directories), if the guard lets it be listed.
fn names_in(guard: &PathGuard, dir: &std::path::Path) -> Option<String> {
    let resolved = guard.resolve_existing(dir.to_str()?).ok()?;
    if resolved.kind() != Some(crate::guard::path::FileKind::Dir) {
        return None;
    }
    let mut names: Vec<String> = std::fs::read_dir(resolved.path())
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| {
            let name = file_list::shown(&entry.file_name());
            if entry.file_type().is_ok_and(|t| t.is_dir()) { format!("{name}/") } else { name }
        })
        .collect();
    if names.is_empty() {
        return Some("nothing (the directory is empty)".to_owned());
    }
    names.sort();
    let more = names.len().saturating_sub(MAX_NAMED);
    names.truncate(MAX_NAMED);
    let mut listed = names.join(", ");
    if more > 0 {
        listed.push_str(&format!(" … and {more} more"));
    }
    Some(listed)
}

/// "the allowed roots (/a, /b); relative paths start at /a" for tool descriptions.
pub(crate) fn roots_sentence(guard: &PathGuard) -> String {
    let roots: Vec<String> = guard.roots().iter().map(|r| r.display().to_string()).collect();
    let first = roots.first().cloned().unwrap_or_default();
    format!("the allowed roots ({}); relative paths start at {first}", roots.join(", "))
}

/// Runs blocking file system work off the async runtime.
pub(crate) async fn blocking<T, F>(tool: &str, work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) => Err(ToolError::failed(format!(
            "{tool} stopped unexpectedly ({e}); this is a bug in ARIA, please report it"
        ))),
    }
}
