//! `apply_patch {patch, path?}`: applies a unified diff to files inside the roots, all or
//! nothing. `path` names the file of a patch written as bare `@@` hunks, without `---`/`+++`
//! headers.
//!
//! Everything is checked before anything is written: the patch is parsed and validated
//! ([`crate::patch::parse`]), every path is resolved by the path guard (creations with
//! `resolve_for_create`, the rest with `resolve_existing_for_write`; both refuse the files that
//! configure ARIA or git), every file is read and every hunk applied in
//! memory. Only then are the new contents written, atomically per file and restored on a
//! failure across files ([`crate::patch::commit`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::guard::path::{PathError, PathGuard};
use crate::guard::read::DEFAULT_MAX_READ_BYTES;
use crate::patch::commit::{Planned, commit, observe};
use crate::patch::{Change, FilePatch, MAX_PATCH_BYTES, apply_file, parse_for};
use crate::tools::file_write::write_error;
use crate::tools::{blocking, path_error, roots_sentence};

/// Applies a unified diff inside the roots. Tier: recoverable-write.
#[derive(Debug)]
pub struct ApplyPatch {
    guard: Arc<PathGuard>,
    spec: ToolSpec,
}

impl ApplyPatch {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "apply_patch";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = ToolSpec {
            name: ApplyPatch::NAME.to_owned(),
            description: format!(
                "Apply a unified diff (as `git diff` or `diff -u` write it) to text files inside \
                 {}. Several files per patch; `--- /dev/null` creates a file and `+++ /dev/null` \
                 deletes one. Context and '-' lines must match the current file exactly (a hunk \
                 may be found a few lines away if it matches only there); on a mismatch nothing \
                 is changed and the lines really found are shown. All files change or none. At \
                 most {} KB.",
                roots_sentence(&guard),
                MAX_PATCH_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "patch": {
                        "type": "string",
                        "description": "The unified diff: `--- a/PATH`, `+++ b/PATH`, then `@@ -START,COUNT +START,COUNT @@` hunks."
                    },
                    "path": {
                        "type": "string",
                        "description": "The file to change, for a patch of `@@` hunks without the `---`/`+++` lines."
                    }
                },
                "required": ["patch"],
                "additionalProperties": false
            }),
        };
        ApplyPatch { guard, spec }
    }
}

/// The arguments: the patch text and the optional `path`.
fn arguments(args: &Value) -> Result<(String, Option<String>), ToolError> {
    let usage = "apply_patch takes \"patch\" (a unified diff) and optionally \"path\" (the file, \
                 when the patch has no `---`/`+++` lines)";
    let Some(map) = args.as_object() else {
        return Err(ToolError::failed(format!("the arguments are not a JSON object; {usage}")));
    };
    if let Some(unknown) = map.keys().find(|k| !matches!(k.as_str(), "patch" | "path")) {
        return Err(ToolError::failed(format!("unknown argument \"{unknown}\"; {usage}")));
    }
    let path = match map.get("path") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if !p.trim().is_empty() && !p.contains(['\n', '\r', '\0']) => {
            Some(p.clone())
        }
        Some(_) => {
            return Err(ToolError::failed(format!(
                "\"path\" must be a file name on one line; {usage}"
            )));
        }
    };
    match map.get("patch") {
        Some(Value::String(p)) => Ok((p.clone(), path)),
        Some(_) => Err(ToolError::failed(format!("\"patch\" must be a string; {usage}"))),
        None => Err(ToolError::failed(format!("the argument \"patch\" is missing; {usage}"))),
    }
}

/// One file of the patch, checked and applied in memory.
struct Prepared {
    file: FilePatch,
    planned: Planned,
    added: usize,
    removed: usize,
    offsets: Vec<(usize, isize)>,
}

fn prepare(guard: &PathGuard, mut file: FilePatch) -> Result<Prepared, ToolError> {
    let hint = "Use file_list to see which files exist.";
    let target = match file.change {
        Change::Create => guard.resolve_for_create(&file.path),
        Change::Modify | Change::Delete => {
            match (guard.resolve_existing_for_write(&file.path), file.alternative.take()) {
                // The `---` name does not exist: the `+++` one is patched if it does.
                (Err(first @ PathError::NotFound { .. }), Some(other)) => {
                    match guard.resolve_existing_for_write(&other) {
                        Ok(found) => {
                            file.path = other;
                            Ok(found)
                        }
                        Err(_) => Err(first),
                    }
                }
                (found, _) => found,
            }
        }
    }
    .map_err(|e| path_error(e, hint))?;
    let before = observe(guard, &target, DEFAULT_MAX_READ_BYTES).map_err(write_error)?;
    let old = match (file.change, before.stat, &before.text, &before.unreadable) {
        (Change::Create, Some(_), _, _) => {
            return Err(ToolError::failed(format!(
                "the patch creates {} (`--- /dev/null`), but it already exists; patch it with `--- a/{}` instead, or read it first",
                file.path, file.path
            )));
        }
        (Change::Create, None, _, _) => String::new(),
        (_, _, Some(text), _) => text.clone(),
        (_, _, None, why) => {
            return Err(ToolError::failed(format!(
                "{} cannot be patched: {}",
                file.path,
                why.as_deref().unwrap_or("it could not be read as text")
            )));
        }
    };
    let applied = apply_file(&old, &file).map_err(|e| ToolError::failed(e.to_string()))?;
    // A hunk whose '+' lines repeat its '-' lines applies and changes nothing: a model that
    // wrote one believes it made its change (and a run asked for a change would end `done`).
    if file.change == Change::Modify && applied.text == old {
        return Err(ToolError::failed(format!(
            "the patch changes nothing in {}: its '+' lines are the same as the lines they \
             replace. Write the '+' lines as the file should read after the change",
            file.path
        )));
    }
    let after = (file.change != Change::Delete).then_some(applied.text);
    Ok(Prepared {
        planned: Planned { target, before, after },
        added: applied.added,
        removed: applied.removed,
        offsets: applied.offsets,
        file,
    })
}

fn summary(prepared: &[Prepared], dry_run: bool) -> String {
    let n = prepared.len();
    let files = if n == 1 { "1 file".to_owned() } else { format!("{n} files") };
    let mut s = if dry_run {
        format!("Dry run: the patch applies cleanly and would change {files}:")
    } else {
        format!("Applied the patch to {files}:")
    };
    for p in prepared {
        let _ = write!(
            s,
            "\n  {} {} (+{} -{})",
            p.file.change.letter(),
            p.file.path,
            p.added,
            p.removed
        );
        for (hunk, offset) in &p.offsets {
            let (n, dir) = if *offset > 0 { (*offset, "below") } else { (-offset, "above") };
            let _ = write!(s, "\n    hunk {hunk} matched {n} lines {dir} where its header said");
        }
    }
    if dry_run {
        s.push_str("\nNothing was written.");
    }
    s
}

fn run(
    guard: &PathGuard,
    text: &str,
    path: Option<&str>,
    dry_run: bool,
) -> Result<ToolOutput, ToolError> {
    let patch = parse_for(text, path)
        .map_err(|e| ToolError::failed(format!("the patch was not applied: {e}")))?;
    let mut prepared = Vec::with_capacity(patch.files.len());
    let mut seen: BTreeMap<PathBuf, String> = BTreeMap::new();
    for file in patch.files {
        let p = prepare(guard, file)?;
        let real = p.planned.target.path().to_path_buf();
        if let Some(first) = seen.insert(real.clone(), p.file.path.clone()) {
            return Err(ToolError::failed(format!(
                "{first} and {} are the same file ({}); change it in one section of the patch",
                p.file.path,
                real.display()
            )));
        }
        prepared.push(p);
    }
    if let Some(path) = path {
        // One file, however each names it (`./a.txt`, an absolute path in the headers).
        let wanted = match guard.resolve_existing_for_write(path) {
            Err(PathError::NotFound { .. }) => guard.resolve_for_create(path),
            found => found,
        }
        .map_err(|e| path_error(e, "Use file_list to see which files exist."))?;
        if !seen.contains_key(wanted.path()) {
            let named = prepared.iter().map(|p| p.file.path.as_str()).collect::<Vec<_>>();
            return Err(ToolError::failed(format!(
                "the patch was not applied: \"path\" is {path}, but the patch's headers name {}; leave \"path\" out or make it one of those files",
                named.join(", ")
            )));
        }
    }
    if !dry_run {
        let plans: Vec<Planned> = prepared.iter().map(|p| p.planned.clone()).collect();
        commit(&plans).map_err(write_error)?;
        tracing::debug!(tool = ApplyPatch::NAME, files = plans.len(), "patched");
    }
    let files: Vec<Value> = prepared
        .iter()
        .map(|p| {
            json!({
                "path": p.planned.target.path().to_string_lossy(),
                "change": p.file.change.letter().to_string(),
                "added": p.added,
                "removed": p.removed,
            })
        })
        .collect();
    Ok(ToolOutput::text(summary(&prepared, dry_run))
        .with_details(json!({ "files": files, "dry_run": dry_run })))
}

impl Tool for ApplyPatch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn tier(&self, _args: &Value) -> Tier {
        Tier::RecoverableWrite
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let (text, path) = arguments(&args)?;
            let guard = Arc::clone(&self.guard);
            let dry_run = ctx.dry_run;
            blocking(ApplyPatch::NAME, move || run(&guard, &text, path.as_deref(), dry_run)).await
        })
    }
}
