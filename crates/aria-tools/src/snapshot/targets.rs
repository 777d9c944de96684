//! Which repositories a tool call may write, so the hook snapshots exactly those.

use std::path::PathBuf;

use serde_json::Value;

use crate::guard::path::PathGuard;
use crate::shell;
use crate::tools::apply_patch::ApplyPatch;
use crate::tools::shell_execute::ShellExecute;

/// `(where to look for the repository, the paths about to be written)` per place the call may
/// write. A path the guard cannot resolve is not guessed at: the call then snapshots every
/// root (the tool itself refuses the bad path afterwards).
pub(crate) fn write_targets(
    guard: &PathGuard,
    tool: &str,
    args: &Value,
) -> Vec<(PathBuf, Vec<PathBuf>)> {
    let every_root = || guard.roots().iter().map(|r| (r.clone(), Vec::new())).collect::<Vec<_>>();
    let written: Option<Vec<String>> = if tool == ShellExecute::NAME {
        args.get("command").and_then(Value::as_str).map(shell_writes)
    } else if tool == ApplyPatch::NAME {
        args.get("patch").and_then(Value::as_str).and_then(patch_files)
    } else {
        args.get("path").and_then(Value::as_str).map(|p| vec![p.to_owned()])
    };
    let Some(written) = written.filter(|w| !w.is_empty()) else { return every_root() };
    let mut out: Vec<(PathBuf, Vec<PathBuf>)> = Vec::new();
    for w in &written {
        let Ok(resolved) = guard.resolve_for_create(w) else { return every_root() };
        let path = resolved.path().to_path_buf();
        out.push((path.clone(), vec![path]));
    }
    out
}

/// The files a patch creates, changes or deletes; `None` when it does not parse.
fn patch_files(patch: &str) -> Option<Vec<String>> {
    crate::patch::parse(patch).ok().map(|p| p.files.into_iter().map(|f| f.path).collect())
}

/// The files a command line writes: what the classifier found (`touch a`, `cp x dest`, ...)
/// and every redirect that writes. `/dev/null` is not a file in a root.
fn shell_writes(command: &str) -> Vec<String> {
    let c = shell::classify(command);
    let redirects = c.redirects.iter().filter(|r| r.mode.writes()).map(|r| r.target.clone());
    c.writes.iter().cloned().chain(redirects).filter(|p| p != "/dev/null").collect()
}
