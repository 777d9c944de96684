//! What the four git tools share: finding the repositories a `path` selects under the roots,
//! refusing repositories whose git directory lies outside them, reading arguments, and keeping
//! sensitive files out of what the model sees.
//!
//! A `path` inside a repository selects that repository (the nearest `.git` between the path
//! and its root, never above the root). A `path` that is not inside one selects every
//! repository beneath it (so one call covers a directory of several projects), found by a bounded
//! walk that does not descend into repositories, `node_modules` or `target`.

use std::path::{Path, PathBuf};

use aria_api::ToolError;
use git2::{Repository, RepositoryOpenFlags};
use serde_json::{Map, Value};

use crate::guard::path::{FileKind, PathGuard};
use crate::tools::path_error;

/// How deep below `path` the walk looks for repositories.
pub const MAX_REPO_DEPTH: usize = 4;
/// How many repositories one call reports at most.
pub const MAX_REPOS: usize = 50;
/// Directories the walk never enters (large, and never a repository of the user's own).
const SKIP_DIRS: &[&str] = &[".git", "node_modules", "target", ".venv", "venv", "__pycache__"];

/// One repository a call works on.
pub(crate) struct Repo {
    pub(crate) repo: Repository,
    /// The working directory (canonical, inside a root).
    pub(crate) workdir: PathBuf,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo").field("workdir", &self.workdir).finish()
    }
}

/// What a `path` selected.
pub(crate) enum Selection {
    /// The path lies inside this repository.
    Inside(Repo),
    /// The path is a directory holding these repositories (possibly none), in path order.
    Beneath { dir: PathBuf, repos: Vec<Repo>, more: bool },
}

/// Resolves `input` through the guard and finds the repository or repositories it selects.
pub(crate) fn select(guard: &PathGuard, input: &str) -> Result<Selection, ToolError> {
    let resolved = guard
        .resolve_existing(input)
        .map_err(|e| path_error(e, "Give a directory or file inside a git repository."))?;
    let root = resolved.root().to_path_buf();
    let start = if resolved.kind() == Some(FileKind::Dir) {
        resolved.path().to_path_buf()
    } else {
        resolved.path().parent().map(Path::to_path_buf).unwrap_or_else(|| root.clone())
    };
    let mut dir = start.as_path();
    loop {
        if dir.join(".git").symlink_metadata().is_ok() {
            return Ok(Selection::Inside(open(guard, dir)?));
        }
        if dir == root {
            break;
        }
        match dir.parent() {
            Some(parent) if parent.starts_with(&root) => dir = parent,
            _ => break,
        }
    }
    let mut found = Vec::new();
    let mut more = false;
    walk(&start, 0, &mut found, &mut more);
    found.sort();
    let mut repos = Vec::new();
    for workdir in found {
        // A repository whose git directory is outside the roots is left out, not fatal.
        if let Ok(repo) = open(guard, &workdir) {
            repos.push(repo);
        }
    }
    Ok(Selection::Beneath { dir: start, repos, more })
}

/// Like [`select`], but exactly one repository: several beneath `path` is an error naming them.
pub(crate) fn select_one(guard: &PathGuard, tool: &str, input: &str) -> Result<Repo, ToolError> {
    match select(guard, input)? {
        Selection::Inside(repo) => Ok(repo),
        Selection::Beneath { dir, mut repos, .. } if repos.len() == 1 => {
            let _ = dir;
            Ok(repos.remove(0))
        }
        Selection::Beneath { dir, repos, .. } if repos.is_empty() => {
            Err(ToolError::failed(format!(
                "{} is not inside a git repository and holds none; give a path inside a repository \
             (git_status on a root lists the repositories under it)",
                dir.display()
            )))
        }
        Selection::Beneath { dir, repos, .. } => {
            let names: Vec<String> =
                repos.iter().map(|r| r.workdir.display().to_string()).collect();
            Err(ToolError::failed(format!(
                "{} holds {} git repositories ({}); {tool} works on one: give a path inside one of them",
                dir.display(),
                repos.len(),
                names.join(", ")
            )))
        }
    }
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<PathBuf>, more: &mut bool) {
    if depth > MAX_REPO_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut subdirs: Vec<PathBuf> = Vec::new();
    for entry in entries.flatten() {
        // `file_type` does not follow symlinks: a symlinked directory is not walked into.
        let Ok(kind) = entry.file_type() else { continue };
        if !kind.is_dir() {
            continue;
        }
        let name = entry.file_name();
        if SKIP_DIRS.iter().any(|s| name == *s) {
            continue;
        }
        subdirs.push(entry.path());
    }
    subdirs.sort();
    for sub in subdirs {
        if found.len() >= MAX_REPOS {
            *more = true;
            return;
        }
        if sub.join(".git").symlink_metadata().is_ok() {
            found.push(sub);
        } else {
            walk(&sub, depth + 1, found, more);
        }
    }
}

/// Opens the repository whose working directory is `workdir`, without searching upwards, and
/// refuses it when its git directory (a `.git` file may point anywhere) is outside the roots.
fn open(guard: &PathGuard, workdir: &Path) -> Result<Repo, ToolError> {
    let repo = Repository::open_ext(workdir, RepositoryOpenFlags::NO_SEARCH, &[] as &[&Path])
        .map_err(|e| {
            ToolError::failed(format!(
                "{} has a .git entry but is not a usable git repository: {}",
                workdir.display(),
                e.message()
            ))
        })?;
    let gitdir = repo.path().canonicalize().unwrap_or_else(|_| repo.path().to_path_buf());
    if !guard.roots().iter().any(|r| gitdir.starts_with(r)) {
        return Err(ToolError::refused(format!(
            "the git directory of {} is {}, outside the allowed roots; ARIA only works on \
             repositories whose git data lies inside a root",
            workdir.display(),
            gitdir.display()
        )));
    }
    if repo.is_bare() {
        return Err(ToolError::failed(format!(
            "{} is a bare repository (no working tree); the git tools work on checkouts",
            workdir.display()
        )));
    }
    Ok(Repo { repo, workdir: workdir.to_path_buf() })
}

/// Whether any component of a repository-relative path names a sensitive file.
pub(crate) fn sensitive(guard: &PathGuard, rel: &str) -> bool {
    rel.split('/').any(|c| guard.sensitive().matching(c).is_some())
}

/// The current branch: `Some(name)` on a local branch (born or unborn), `None` when detached.
pub(crate) fn branch(repo: &Repository) -> Option<String> {
    if repo.head_detached().unwrap_or(false) {
        return None;
    }
    match repo.head() {
        Ok(head) => head.shorthand().ok().map(str::to_owned),
        // Unborn: HEAD names a branch that has no commit yet.
        Err(_) => repo
            .find_reference("HEAD")
            .ok()
            .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_owned))
            .map(|t| t.trim_start_matches("refs/heads/").to_owned()),
    }
}

/// A repository-relative path the model wrote for `paths`/`files`: plain names joined by `/`,
/// no `..`, not absolute, not sensitive.
pub(crate) fn repo_relative(
    guard: &PathGuard,
    tool: &str,
    input: &str,
) -> Result<String, ToolError> {
    let trimmed = input.trim_start_matches("./");
    let bad = trimmed.is_empty()
        || trimmed.starts_with('/')
        || trimmed.chars().any(char::is_control)
        || trimmed.split('/').any(|c| c == ".." || c == "." || c == ".git");
    if bad {
        return Err(ToolError::failed(format!(
            "{tool}: \"{input}\" is not a path relative to the repository's top directory; give \
             names like \"src/main.rs\" (no leading /, no ..)"
        )));
    }
    if sensitive(guard, trimmed) {
        return Err(ToolError::refused(format!(
            "{tool}: \"{input}\" is a sensitive file; ARIA does not show or commit secrets files"
        )));
    }
    Ok(trimmed.trim_end_matches('/').to_owned())
}

/// The arguments as an object with only `allowed` keys.
pub(crate) fn object<'a>(
    tool: &str,
    args: &'a Value,
    allowed: &[&str],
    usage: &str,
) -> Result<&'a Map<String, Value>, ToolError> {
    let Some(map) = args.as_object() else {
        return Err(ToolError::failed(format!(
            "{tool}: the arguments are not a JSON object; {usage}"
        )));
    };
    if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ToolError::failed(format!("{tool}: unknown argument \"{unknown}\"; {usage}")));
    }
    Ok(map)
}

pub(crate) fn opt_str(
    tool: &str,
    map: &Map<String, Value>,
    key: &str,
    usage: &str,
) -> Result<Option<String>, ToolError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ToolError::failed(format!("{tool}: \"{key}\" must be a string; {usage}"))),
    }
}

pub(crate) fn req_str(
    tool: &str,
    map: &Map<String, Value>,
    key: &str,
    usage: &str,
) -> Result<String, ToolError> {
    opt_str(tool, map, key, usage)?.ok_or_else(|| {
        ToolError::failed(format!("{tool}: the argument \"{key}\" is missing; {usage}"))
    })
}

pub(crate) fn opt_list(
    tool: &str,
    map: &Map<String, Value>,
    key: &str,
    usage: &str,
) -> Result<Option<Vec<String>>, ToolError> {
    let err = || ToolError::failed(format!("{tool}: \"{key}\" must be a list of strings; {usage}"));
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(err))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(err()),
    }
}

/// A git2 error as a tool failure: what was being done, and libgit2's reason.
pub(crate) fn git_error(what: &str, e: &git2::Error) -> ToolError {
    ToolError::failed(format!("could not {what}: {}", e.message()))
}
