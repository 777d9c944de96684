//! `file_list {path}`: lists one directory inside the roots.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::guard::lexical;
use crate::guard::path::{FileKind, PathError, PathGuard, PathRefusal};
use crate::tools::{blocking, path_arg, path_error_naming, roots_sentence};

/// Most entries shown; the rest are counted in a final "… and N more" line.
pub const MAX_LIST_ENTRIES: usize = 1000;

const SENSITIVE: &str = " (sensitive: not readable)";
const ARIA_OWN: &str = " (ARIA's own data: not readable)";

/// Lists a directory inside the roots. Tier: read.
#[derive(Debug)]
pub struct FileList {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl FileList {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "file_list";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: FileList::NAME.to_owned(),
            description: format!(
                "List the entries of a directory inside {}. Use \".\" for the first root. Shows \
                 `name/` for directories, `name  (N bytes)` for files and `name -> target` for \
                 symlinks, sorted, at most {MAX_LIST_ENTRIES} entries. Entries marked \"not \
                 readable\" will be refused by file_read.",
                roots_sentence(&guard)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Directory path: \".\" for the first root, else relative to it or absolute inside a root."
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        };
        FileList { guard, spec }
    }
}

impl Tool for FileList {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::Read
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let input = path_arg(FileList::NAME, &args)?;
            let guard = Arc::clone(&self.guard);
            blocking(FileList::NAME, move || list(&guard, &input)).await
        })
    }
}

fn list(guard: &PathGuard, input: &str) -> Result<ToolOutput, ToolError> {
    let dir = guard.resolve_existing(input).map_err(|e| {
        path_error_naming(guard, e, "List its parent directory to see what exists.")
    })?;
    match dir.kind() {
        Some(FileKind::Dir) => {}
        // Listed as `ls FILE` would: its line, and what to use to see its text.
        Some(FileKind::File) => {
            let (Some(parent), Some(name)) = (dir.path().parent(), dir.path().file_name()) else {
                return Err(ToolError::failed(format!(
                    "{} is a file; use file_read to read it",
                    dir.path().display()
                )));
            };
            let file_type = fs::symlink_metadata(dir.path()).ok().map(|m| m.file_type());
            let entry = line(guard, parent, &name.to_os_string(), file_type);
            let text = format!(
                "{entry}\n({} is a file, not a directory: file_read shows its text.)",
                shown(name)
            );
            let details = json!({"path": dir.path().to_string_lossy(), "entries": 1, "truncated": false, "file": true});
            return Ok(ToolOutput::text(text).with_details(details));
        }
        Some(kind) => {
            return Err(ToolError::failed(format!(
                "{} is a {}, not a directory",
                dir.path().display(),
                kind.describe()
            )));
        }
        None => return Err(ToolError::failed(format!("{} does not exist", dir.path().display()))),
    }
    let io_fail = |e: std::io::Error| {
        ToolError::failed(format!(
            "could not list {}: {e}; check its permissions",
            dir.path().display()
        ))
    };
    let mut entries: Vec<(OsString, Option<fs::FileType>)> = Vec::new();
    for entry in fs::read_dir(dir.path()).map_err(io_fail)? {
        let entry = entry.map_err(io_fail)?;
        entries.push((entry.file_name(), entry.file_type().ok()));
    }
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let total = entries.len();
    let mut lines: Vec<String> = entries
        .iter()
        .take(MAX_LIST_ENTRIES)
        .map(|(name, file_type)| line(guard, dir.path(), name, *file_type))
        .collect();
    if total > MAX_LIST_ENTRIES {
        lines.push(format!("… and {} more", total - MAX_LIST_ENTRIES));
    }
    if lines.is_empty() {
        lines.push("(empty directory)".to_owned());
    }
    tracing::debug!(tool = FileList::NAME, path = %dir, entries = total, "listed");
    let details = json!({
        "path": dir.path().to_string_lossy(),
        "entries": total,
        "truncated": total > MAX_LIST_ENTRIES,
    });
    Ok(ToolOutput::text(lines.join("\n")).with_details(details))
}

/// A name as shown to the model: control characters escaped so one entry stays one line.
pub(crate) fn shown(name: &std::ffi::OsStr) -> String {
    name.to_string_lossy()
        .chars()
        .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
        .collect()
}

fn line(guard: &PathGuard, dir: &Path, name: &OsString, file_type: Option<fs::FileType>) -> String {
    let path = dir.join(name);
    let display = shown(name);
    let mark = match name.to_str() {
        None => " (not readable: name is not UTF-8)".to_owned(),
        Some(n) if guard.sensitive().matching(n).is_some() => SENSITIVE.to_owned(),
        Some(_) if guard.is_aria_own(&path) => ARIA_OWN.to_owned(),
        // Names the guard would refuse as written (control characters, `%2e`, `\`, ...).
        Some(n) => lexical::check(n, Path::new(""))
            .err()
            .map_or_else(String::new, |r| format!(" (not readable: {})", r.rule())),
    };
    let Some(ft) = file_type else { return format!("{display}  (unknown type){mark}") };
    if ft.is_dir() {
        return format!("{display}/{mark}");
    }
    if ft.is_symlink() {
        let target = fs::read_link(&path).map(|t| shown(t.as_os_str())).unwrap_or_default();
        return format!("{display} -> {target}{}", link_note(guard, &path));
    }
    match fs::symlink_metadata(&path) {
        Ok(meta) if ft.is_file() => format!("{display}  ({} bytes){mark}", meta.len()),
        Ok(meta) => format!("{display}  ({}){mark}", FileKind::of(&meta).describe()),
        Err(_) => format!("{display}  (vanished){mark}"),
    }
}

/// Whether file_read would accept the link, and if not, a short reason.
fn link_note(guard: &PathGuard, link: &Path) -> String {
    let Some(text) = link.to_str() else { return " (not readable: name is not UTF-8)".to_owned() };
    match guard.resolve_existing(text) {
        Ok(_) => String::new(),
        Err(PathError::NotFound { .. } | PathError::NotADirectory { .. }) => {
            " (missing)".to_owned()
        }
        Err(PathError::Io { .. }) => " (not readable: cannot inspect the target)".to_owned(),
        Err(PathError::Refused(r)) => match r {
            PathRefusal::Sensitive { .. } => SENSITIVE.to_owned(),
            PathRefusal::AriaOwn { .. } => ARIA_OWN.to_owned(),
            PathRefusal::SymlinkEscape { .. }
            | PathRefusal::OutsideRoots { .. }
            | PathRefusal::EscapesRoot { .. } => " (outside the roots: not readable)".to_owned(),
            PathRefusal::SymlinkLoop { .. } => " (not readable: symlink loop)".to_owned(),
            other => format!(" (not readable: {})", other.rule()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_names_cannot_fake_extra_lines() {
        assert_eq!(shown(std::ffi::OsStr::new("a\nb.txt  (5 bytes)")), "a\\nb.txt  (5 bytes)");
        assert_eq!(shown(std::ffi::OsStr::new("plain")), "plain");
    }
}
