//! Checking a profile's arguments and running it in the sandbox.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aria_api::ToolError;
use aria_sandbox::{Sandbox, SandboxError};
use serde_json::{Map, Value};

use super::{ProfileSpec, find_program, placeholder};
use crate::guard::path::PathGuard;
use crate::tools::path_error;

/// What one profile run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileRun {
    pub profile: String,
    /// The command as run (program path and arguments), for reports.
    pub command: String,
    pub cwd: PathBuf,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub elapsed: Duration,
}

impl ProfileRun {
    /// Exit status 0 within the time limit.
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// The text the model sees: status line, command, then both streams.
    pub fn render(&self) -> String {
        let status = match (self.exit_code, self.signal) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "no exit status".to_owned(),
        };
        let verdict = if self.passed() { "passed" } else { "FAILED" };
        let mut text = format!("{}: {verdict} ({status}", self.profile);
        if self.timed_out {
            text.push_str(", timed out: the processes were killed");
        }
        text.push_str(&format!(
            ", {:.1} s)\n$ {} (in {})\n",
            self.elapsed.as_secs_f64(),
            self.command,
            self.cwd.display()
        ));
        for (name, body, cut) in [
            ("stdout", &self.stdout, self.stdout_truncated),
            ("stderr", &self.stderr, self.stderr_truncated),
        ] {
            if body.is_empty() {
                continue;
            }
            text.push_str(&format!("--- {name} ---\n{body}"));
            if !body.ends_with('\n') {
                text.push('\n');
            }
            if cut {
                text.push_str(&format!("[{name} truncated at the profile's output cap]\n"));
            }
        }
        text
    }
}

/// Checks the model's arguments (every key but `path`) against the profile's rules and returns
/// the values to put in the template. Path values are resolved by the guard and must lie in
/// `cwd`; they are passed relative to it.
pub(crate) fn check_values(
    guard: &PathGuard,
    spec: &ProfileSpec,
    args: &Map<String, Value>,
    cwd: &Path,
) -> Result<BTreeMap<String, String>, ToolError> {
    let name = &spec.name;
    let mut values = BTreeMap::new();
    for (key, value) in args {
        if key == "path" {
            continue;
        }
        let Some(rule) = spec.arguments.iter().find(|r| &r.name == key) else {
            let known: Vec<&str> = spec.arguments.iter().map(|r| r.name.as_str()).collect();
            return Err(ToolError::refused(format!(
                "{name} ({}) takes no argument \"{key}\"; its arguments are: path{}",
                spec.command_line(&BTreeMap::new()),
                known.iter().map(|k| format!(", {k}")).collect::<String>()
            )));
        };
        let Some(text) = value.as_str() else {
            return Err(ToolError::failed(format!("{name}: \"{key}\" must be a string")));
        };
        if !rule.pattern.is_match(text) {
            return Err(ToolError::refused(format!(
                "{name}: the value {text:?} for \"{key}\" is not allowed (it must match {}); {}",
                rule.pattern.as_str(),
                rule.description
            )));
        }
        let whole = spec.args.iter().any(|a| placeholder(a) == Some(("", key.as_str())));
        if whole && text.starts_with('-') {
            return Err(ToolError::refused(format!(
                "{name}: the value {text:?} for \"{key}\" starts with '-', so the program would read it as an option; give a value without a leading '-'"
            )));
        }
        let value = if rule.path { relative_in(guard, cwd, name, text)? } else { text.to_owned() };
        values.insert(key.clone(), value);
    }
    if let Some(missing) =
        spec.arguments.iter().find(|r| r.required && !values.contains_key(&r.name))
    {
        return Err(ToolError::failed(format!(
            "{name}: the argument \"{}\" is required: {}",
            missing.name, missing.description
        )));
    }
    Ok(values)
}

fn relative_in(
    guard: &PathGuard,
    cwd: &Path,
    profile: &str,
    text: &str,
) -> Result<String, ToolError> {
    let joined = cwd.join(text);
    let resolved = guard
        .resolve_existing(&joined.to_string_lossy())
        .map_err(|e| path_error(e, "Give a file or directory inside the project."))?;
    let rel = resolved.path().strip_prefix(cwd).map_err(|_| {
        ToolError::refused(format!(
            "{profile}: {text} is outside the project directory {}; give a path inside it",
            cwd.display()
        ))
    })?;
    let rel = rel.to_string_lossy().into_owned();
    Ok(if rel.is_empty() { ".".to_owned() } else { rel })
}

/// Runs `spec` in `cwd` (which the caller has checked is inside `guard`'s roots) through the
/// sandbox: it sees only the roots (writable, sensitive files masked, `.git` read-only) and the
/// toolchain of a program installed under `$HOME` (read-only); network only if the profile
/// grants it; its timeout and output cap.
pub fn run_profile(
    spec: &ProfileSpec,
    cwd: &Path,
    values: &BTreeMap<String, String>,
    guard: &PathGuard,
) -> Result<ProfileRun, ToolError> {
    let Some(program) = find_program(&spec.program) else {
        return Err(ToolError::failed(format!(
            "{}: the program {:?} was not found (looked in {} and ~/.cargo/bin, ~/.local/bin); \
             install it, or set program in [profiles.{}] to its absolute path",
            spec.name,
            spec.program,
            aria_sandbox::SAFE_PATH,
            spec.name
        )));
    };
    let mut argv = vec![program.to_string_lossy().into_owned()];
    argv.extend(spec.expand(values));
    let command = argv.join(" ");
    let mut sandbox =
        crate::confine::spawn_spec(guard, argv, cwd.to_path_buf(), crate::confine::Access::Execute)
            .map_err(|e| ToolError::failed(format!("{}: {e}", spec.name)))?;
    let (read, write) = toolchain_dirs(&program);
    if !write.is_empty() {
        // HOME is the private /tmp inside the sandbox: name the toolchain's homes explicitly.
        for (name, dir) in [("RUSTUP_HOME", read.first()), ("CARGO_HOME", write.first())] {
            if let Some(dir) = dir {
                sandbox.env.push((name.to_owned(), dir.to_string_lossy().into_owned()));
            }
        }
    }
    sandbox.extra_read = read;
    sandbox.extra_write = write;
    sandbox.timeout = spec.timeout;
    sandbox.output_cap = spec.output_cap;
    sandbox.network = spec.network;
    sandbox.egress.hosts = spec.network_hosts.clone();
    sandbox.env_allowlist.extend(spec.env_allowlist.iter().cloned());
    tracing::info!(profile = %spec.name, %command, cwd = %cwd.display(), network = spec.network, "profile run");
    let out = Sandbox::run(sandbox).map_err(|e| match e {
        SandboxError::ProgramNotFound { program } => {
            ToolError::failed(format!("{}: the program {program} was not found", spec.name))
        }
        other => ToolError::failed(format!("{}: could not start: {other}", spec.name)),
    })?;
    Ok(ProfileRun {
        profile: spec.name.clone(),
        command,
        cwd: cwd.to_path_buf(),
        exit_code: out.exit.code,
        signal: out.exit.signal,
        timed_out: out.timed_out,
        stdout: out.stdout.text(),
        stderr: out.stderr.text(),
        stdout_truncated: out.stdout.truncated,
        stderr_truncated: out.stderr.truncated,
        elapsed: out.elapsed,
    })
}

/// A program installed under the user's home (`~/.cargo/bin/cargo`, `~/.local/bin/x`) needs its
/// toolchain, which the sandbox does not otherwise show: the rustup toolchains read-only and
/// cargo's home writable (its registry cache and lock live there); `~/.local` read-only.
fn toolchain_dirs(program: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let env_dir = |name: &str, default: &str| {
        std::env::var_os(name).map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(default)))
    };
    let cargo_home = env_dir("CARGO_HOME", ".cargo");
    let rustup_home = env_dir("RUSTUP_HOME", ".rustup");
    let local = home.as_ref().map(|h| h.join(".local"));
    let real = program.canonicalize().unwrap_or_else(|_| program.to_path_buf());
    let under = |dir: &Option<PathBuf>| {
        dir.as_ref().is_some_and(|d| program.starts_with(d) || real.starts_with(d))
    };
    if under(&cargo_home) || under(&rustup_home) {
        return (rustup_home.into_iter().collect(), cargo_home.into_iter().collect());
    }
    if under(&local) {
        return (local.into_iter().collect(), Vec::new());
    }
    (Vec::new(), Vec::new())
}
