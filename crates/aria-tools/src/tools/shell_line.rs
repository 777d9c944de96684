//! The state a command line carries from one command to the next, evaluated inside ARIA: the
//! working directory (`cd`), the exported variables (`export`, `unset`), builtins that need no
//! program (`true`, `false`, `echo`, `command -v`, `type`), and `$(…)` substitutions.
//!
//! `shell_execute.rs` plans and spawns; this file holds what runs without a spawn.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use aria_api::ToolError;
use aria_sandbox::SAFE_PATH;

use crate::guard::path::PathGuard;
use crate::shell::SimpleCommand;
use crate::shell::builtin::{BUILTINS, Builtin};
use crate::tools::path_error;

/// Builtins a shell has besides [`BUILTINS`], reported as builtins by `command -v` and `type`.
const SHELL_BUILTINS: &[&str] = &["echo", "printf", "test", "[", "pwd"];

/// `text` as the guard should see it from `cwd`: unchanged in the first root (so messages
/// show what the model wrote), joined to `cwd` after a `cd`.
pub(super) fn in_dir(guard: &PathGuard, cwd: &Path, text: &str) -> String {
    if text.starts_with('/') || cwd == guard.roots()[0] {
        text.to_owned()
    } else {
        cwd.join(text).to_string_lossy().into_owned()
    }
}

/// The directory `cd dir` enters from `cwd`: an existing directory inside a root (the path
/// guard decides, sensitive and ARIA's own directories included).
pub(super) fn enter(guard: &PathGuard, cwd: &Path, dir: &str) -> Result<PathBuf, ToolError> {
    let resolved = guard
        .resolve_existing(&in_dir(guard, cwd, dir))
        .map_err(|e| path_error(e, "`cd` only into directories inside the allowed roots."))?;
    let path = resolved.path().to_path_buf();
    if !path.is_dir() {
        return Err(ToolError::refused(format!(
            "cd {dir}: not a directory; name a directory inside the roots"
        )));
    }
    Ok(path)
}

/// A private `/tmp` path (every sandboxed child has its own `/tmp`, so writing there changes
/// nothing outside the child): `/tmp/…` without `..`.
pub(super) fn private_tmp(text: &str) -> bool {
    (text == "/tmp" || text.starts_with("/tmp/")) && !text.split('/').any(|c| c == "..")
}

/// What a builtin printed and its exit status.
pub(super) struct Evaluated {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs a builtin in-process. `cd` changes nothing here (the plan already gave every later
/// command its directory); `export`/`unset` change `exports`.
pub(super) fn eval_builtin(builtin: &Builtin, exports: &mut Vec<(String, String)>) -> Evaluated {
    let mut out = Evaluated { status: 0, stdout: String::new(), stderr: String::new() };
    match builtin {
        Builtin::Cd(_) => {}
        Builtin::Export(vars) => {
            for (name, value) in vars {
                let Some(value) = value else { continue };
                exports.retain(|(n, _)| n != name);
                exports.push((name.clone(), value.clone()));
            }
        }
        Builtin::Unset(names) => exports.retain(|(n, _)| !names.contains(n)),
        Builtin::Lookup { names, verbose } => {
            for name in names {
                match lookup(name) {
                    Some(Found::Builtin) if *verbose => {
                        out.stdout.push_str(&format!("{name} is a shell builtin\n"))
                    }
                    Some(Found::Builtin) => out.stdout.push_str(&format!("{name}\n")),
                    Some(Found::Program(p)) if *verbose => {
                        out.stdout.push_str(&format!("{name} is {}\n", p.display()))
                    }
                    Some(Found::Program(p)) => out.stdout.push_str(&format!("{}\n", p.display())),
                    None => {
                        out.status = 1;
                        if *verbose {
                            out.stderr.push_str(&format!("type: {name}: not found\n"));
                        }
                    }
                }
            }
        }
    }
    out
}

enum Found {
    Builtin,
    Program(PathBuf),
}

/// Where the sandbox's fixed `PATH` finds `name`.
fn lookup(name: &str) -> Option<Found> {
    if BUILTINS.contains(&name) || SHELL_BUILTINS.contains(&name) {
        return Some(Found::Builtin);
    }
    if name.contains('/') {
        return None;
    }
    SAFE_PATH.split(':').map(|d| Path::new(d).join(name)).find_map(|p| {
        let meta = std::fs::metadata(&p).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(Found::Program(p))
    })
}

/// `true`, `false` and plain `echo` alone in their step, without redirects or assignments:
/// evaluated without spawning a program (`echo -e` and other options run the program).
pub(super) fn eval_simple(cmd: &SimpleCommand) -> Option<Evaluated> {
    if !cmd.env.is_empty() || !cmd.redirects.is_empty() {
        return None;
    }
    let argv: Vec<&str> = cmd.argv().collect();
    let done = |status, stdout| Evaluated { status, stdout, stderr: String::new() };
    match argv.as_slice() {
        ["true"] => Some(done(0, String::new())),
        ["false"] => Some(done(1, String::new())),
        ["echo", rest @ ..] => {
            let (newline, rest) = match rest {
                ["-n", tail @ ..] => (false, tail),
                _ => (true, rest),
            };
            if rest.first().is_some_and(|a| a.starts_with('-')) {
                return None;
            }
            let mut text = rest.join(" ");
            if newline {
                text.push('\n');
            }
            Some(done(0, text))
        }
        _ => None,
    }
}
