//! `python_run {code | path}`: runs Python code or a script inside the roots, sandboxed.
//!
//! The interpreter is `python3` found on ARIA's `PATH` when the tool is built (wrapper scripts
//! such as pyenv shims are skipped: they need the environment the sandbox removes, so the real
//! interpreter further down `PATH` is used). It runs through [`aria_sandbox`] like every child:
//! argv only (inline code is passed with `-c`, never through a shell), an empty environment
//! plus [`PYTHON_ENV_ALLOWLIST`] (no `HOME`, no API keys), `-I` isolated mode (no `PYTHON*`
//! variables, no user site-packages, no script directory on `sys.path`) and `-B` (no `.pyc`
//! files written), a working directory inside a root, rlimits, a timeout that kills the whole
//! process group, capped output, no network, and on Linux writes only inside the roots and a
//! private temp dir. The output says which protections the kernel really enforced.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use aria_sandbox::{DEFAULT_OUTPUT_CAP, Outcome, SAFE_PATH, Sandbox, SandboxError};

use crate::confine;
use serde_json::{Value, json};

use crate::guard::path::{FileKind, PathGuard};
use crate::guard::read::ReadError;
use crate::tools::{blocking, path_error, roots_sentence};

/// How long one run may take by default.
pub const DEFAULT_PYTHON_TIMEOUT: Duration = Duration::from_secs(30);

/// The only variables copied from ARIA's environment into Python's (locale only; the sandbox
/// adds its fixed `PATH` and private `TMPDIR`).
pub const PYTHON_ENV_ALLOWLIST: &[&str] = &["LANG", "LC_ALL"];

/// The largest inline program: one argv string may hold at most 128 KiB on Linux.
pub const MAX_INLINE_CODE_BYTES: usize = 100 * 1024;

/// The largest script file run by path.
pub const MAX_SCRIPT_BYTES: u64 = 1024 * 1024;

/// The interpreter flags: isolated mode, no bytecode files.
const FLAGS: [&str; 2] = ["-I", "-B"];

/// Runs Python in the sandbox. Tier: irreversible (arbitrary code; it asks first).
#[derive(Debug)]
pub struct PythonRun {
    guard: Arc<PathGuard>,
    python: Option<PathBuf>,
    timeout: Duration,
    spec: ToolSpec,
}

impl PythonRun {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "python_run";

    /// Finds `python3` on ARIA's `PATH` (then in the sandbox's fixed `PATH`). When there is
    /// none, the tool still exists and every call says how to install it.
    pub fn new(guard: Arc<PathGuard>) -> Self {
        let python = find_python3(std::env::var_os("PATH").as_deref());
        Self::with_interpreter(guard, python)
    }

    /// Uses this interpreter (`None`: none installed).
    pub fn with_interpreter(guard: Arc<PathGuard>, python: Option<PathBuf>) -> Self {
        let spec = spec(&guard, DEFAULT_PYTHON_TIMEOUT);
        PythonRun { guard, python, timeout: DEFAULT_PYTHON_TIMEOUT, spec }
    }

    /// Changes the time limit of one run (default [`DEFAULT_PYTHON_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.spec = spec(&self.guard, timeout);
        self
    }

    /// The interpreter calls run with, if one was found.
    pub fn interpreter(&self) -> Option<&Path> {
        self.python.as_deref()
    }
}

/// The first `python3` on `path_var` (absolute directories only), then in the sandbox's
/// [`SAFE_PATH`], that is an executable file and not a `#!` wrapper script.
pub fn find_python3(path_var: Option<&OsStr>) -> Option<PathBuf> {
    let from_env: Vec<PathBuf> =
        path_var.map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
    let safe = SAFE_PATH.split(':').map(PathBuf::from);
    from_env
        .into_iter()
        .filter(|d| d.is_absolute())
        .chain(safe)
        .map(|d| d.join("python3"))
        .find(|p| is_interpreter(p))
}

fn is_interpreter(p: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let Ok(mut file) = std::fs::File::open(p) else { return false };
    let executable =
        file.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let mut magic = [0u8; 2];
    executable && file.read_exact(&mut magic).is_ok() && &magic != b"#!"
}

fn spec(guard: &PathGuard, timeout: Duration) -> ToolSpec {
    ToolSpec {
        name: PythonRun::NAME.to_owned(),
        description: format!(
            "Run Python 3: either inline source (\"code\") or a script file (\"path\") inside \
             {}. Give exactly one. Runs python3 -I -B (isolated: no environment variables, no \
             user site-packages) with an empty environment, in the first root (a script: in \
             its root), without network, for at most {} s; writes are allowed only inside the \
             roots and a private temp dir; output is capped at {} KB per stream. Print what \
             you need to see. Needs the user's approval (it runs arbitrary code).",
            roots_sentence(guard),
            timeout.as_secs_f64(),
            DEFAULT_OUTPUT_CAP / 1024
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "Python source to run, e.g. \"print(sum(range(10)))\"."
                },
                "path": {
                    "type": "string",
                    "description": "A .py script inside a root, relative to the first root or absolute."
                }
            },
            "required": [],
            "additionalProperties": false
        }),
    }
}

/// What to run: inline code or a script path as the model wrote it.
enum Source {
    Code(String),
    Path(String),
}

fn source_arg(args: &Value) -> Result<Source, ToolError> {
    let usage = "python_run takes exactly one argument: \"code\" (Python source as a string) \
                 or \"path\" (a script file inside the roots)";
    let Some(map) = args.as_object() else {
        return Err(ToolError::failed(format!("the arguments are not a JSON object; {usage}")));
    };
    if let Some(unknown) = map.keys().find(|k| !matches!(k.as_str(), "code" | "path")) {
        return Err(ToolError::failed(format!("unknown argument \"{unknown}\"; {usage}")));
    }
    match (map.get("code"), map.get("path")) {
        (Some(Value::String(c)), None) => Ok(Source::Code(c.clone())),
        (None, Some(Value::String(p))) => Ok(Source::Path(p.clone())),
        (Some(_), Some(_)) => Err(ToolError::failed(format!("both were given; {usage}"))),
        (None, None) => Err(ToolError::failed(format!("neither was given; {usage}"))),
        _ => Err(ToolError::failed(format!("the argument must be a string; {usage}"))),
    }
}

impl Tool for PythonRun {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Arbitrary code can do anything the sandbox allows (delete files in the roots, burn CPU),
    /// and nothing snapshots it: irreversible, so the user is asked. Arguments that are not a
    /// valid call are `Blocked` (never run).
    fn min_tier(&self) -> Tier {
        Tier::Irreversible
    }

    fn tier(&self, args: &Value) -> Tier {
        match source_arg(args) {
            Ok(_) => Tier::Irreversible,
            Err(_) => Tier::Blocked,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let source = source_arg(&args)?;
            let Some(python) = self.python.clone() else {
                return Err(ToolError::failed(
                    "python3 is not installed (it was not found on PATH or in /usr/local/bin, \
                     /usr/bin, /bin); install it, e.g. `sudo apt-get install python3`, then \
                     restart ARIA",
                ));
            };
            let guard = Arc::clone(&self.guard);
            let timeout = self.timeout;
            let dry_run = ctx.dry_run;
            blocking(PythonRun::NAME, move || {
                let plan = plan(&guard, python, source)?;
                if dry_run {
                    return Ok(dry_run_output(&plan, timeout));
                }
                run(&guard, plan, timeout)
            })
            .await
        })
    }
}

/// A checked run: the argv and where it runs.
struct Plan {
    argv: Vec<String>,
    cwd: PathBuf,
    /// The script that runs, when given by path.
    script: Option<PathBuf>,
    code_bytes: usize,
}

fn plan(guard: &PathGuard, python: PathBuf, source: Source) -> Result<Plan, ToolError> {
    let mut argv = vec![python.to_string_lossy().into_owned()];
    argv.extend(FLAGS.iter().map(|f| (*f).to_owned()));
    match source {
        Source::Code(code) => {
            if code.trim().is_empty() {
                return Err(ToolError::failed("\"code\" is empty; give the Python source to run"));
            }
            if code.contains('\0') {
                return Err(ToolError::failed(
                    "\"code\" contains a NUL character, which cannot be passed to a program; \
                     remove it",
                ));
            }
            if code.len() > MAX_INLINE_CODE_BYTES {
                return Err(ToolError::failed(format!(
                    "\"code\" is {} bytes, over the {} KB that can be passed inline; write it to \
                     a .py file inside a root and run it with \"path\"",
                    code.len(),
                    MAX_INLINE_CODE_BYTES / 1024
                )));
            }
            let code_bytes = code.len();
            argv.extend(["-c".to_owned(), code]);
            Ok(Plan { argv, cwd: guard.roots()[0].clone(), script: None, code_bytes })
        }
        Source::Path(input) => {
            let hint = "Give a .py file inside the allowed roots; use file_list to find it.";
            let resolved = guard.resolve_existing(&input).map_err(|e| path_error(e, hint))?;
            if resolved.kind() != Some(FileKind::File) {
                return Err(ToolError::failed(format!(
                    "{} is not a regular file. {hint}",
                    resolved.path().display()
                )));
            }
            // Reading it once refuses binaries and oversized files with the guard's reasons.
            let code = guard.read_text(&resolved, MAX_SCRIPT_BYTES).map_err(script_error)?;
            argv.push(resolved.path().to_string_lossy().into_owned());
            Ok(Plan {
                argv,
                cwd: resolved.root().to_path_buf(),
                script: Some(resolved.path().to_path_buf()),
                code_bytes: code.len(),
            })
        }
    }
}

fn script_error(err: ReadError) -> ToolError {
    if err.is_refusal() {
        ToolError::refused(err.to_string())
    } else {
        ToolError::failed(format!("{err}. Give a Python script inside the allowed roots."))
    }
}

/// The argv as a person reads it, with inline code summarised.
fn shown_argv(plan: &Plan) -> String {
    match plan.script {
        Some(_) => plan.argv.join(" "),
        None => {
            let head = plan.argv[..plan.argv.len() - 1].join(" ");
            format!("{head} <{} bytes of code>", plan.code_bytes)
        }
    }
}

fn dry_run_output(plan: &Plan, timeout: Duration) -> ToolOutput {
    let text = format!(
        "dry run (tier irreversible): nothing was run\nwould run: {}\nin {}, sandboxed \
         (empty environment, no network, writes only inside the roots), for at most {} s\n",
        shown_argv(plan),
        plan.cwd.display(),
        timeout.as_secs_f64()
    );
    ToolOutput::text(text).with_details(details(plan, true))
}

fn details(plan: &Plan, dry_run: bool) -> Value {
    json!({
        "interpreter": plan.argv[0],
        "script": plan.script.as_ref().map(|p| p.to_string_lossy()),
        "code_bytes": plan.code_bytes,
        "cwd": plan.cwd.to_string_lossy(),
        "dry_run": dry_run,
    })
}

fn run(guard: &PathGuard, plan: Plan, timeout: Duration) -> Result<ToolOutput, ToolError> {
    // python_run is irreversible (the user approved it): roots writable, any program may run,
    // still inside the sandbox's view with sensitive files masked and .git read-only.
    let mut spawn =
        confine::spawn_spec(guard, plan.argv.clone(), plan.cwd.clone(), confine::Access::Execute)
            .map_err(ToolError::failed)?;
    let config_before = confine::config_files(guard);
    spawn.env_allowlist = PYTHON_ENV_ALLOWLIST.iter().map(|s| (*s).to_owned()).collect();
    spawn.timeout = timeout;
    spawn.network = false;
    let outcome = Sandbox::run(spawn).map_err(|e| match e {
        SandboxError::ProgramNotFound { .. } => ToolError::failed(format!(
            "the interpreter {} is gone; install python3 and restart ARIA",
            plan.argv[0]
        )),
        other => ToolError::failed(format!("python3 could not be started: {other}")),
    })?;
    let removed = confine::remove_created_config(guard, &config_before);
    let mut out = render(&plan, &outcome);
    if !removed.is_empty() {
        let names: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
        out.content.push_str(&format!(
            "aria: removed {} the program created: files that configure ARIA or the project's \
             agents are the user's to write\n",
            names.join(", ")
        ));
        out.details["removed"] = serde_json::json!(names);
    }
    Ok(out)
}

fn render(plan: &Plan, out: &Outcome) -> ToolOutput {
    let status = out.exit.code.unwrap_or(128 + out.exit.signal.unwrap_or(0));
    let mut text = format!("exit status: {status}");
    if out.timed_out {
        text.push_str(" (timed out: the process group was killed)");
    } else if let Some(sig) = out.exit.signal {
        text.push_str(&format!(" (killed by signal {sig})"));
    }
    text.push('\n');
    for (name, stream) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if stream.bytes.is_empty() {
            continue;
        }
        text.push_str(&format!("--- {name} ---\n{}", stream.text()));
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if stream.truncated {
            text.push_str(&format!(
                "[{name} truncated: {} of {} bytes shown]\n",
                stream.bytes.len(),
                stream.total
            ));
        }
    }
    let on: Vec<&str> = out.protections.items.iter().filter(|p| p.active).map(|p| p.name).collect();
    let off: Vec<&str> =
        out.protections.items.iter().filter(|p| !p.active).map(|p| p.name).collect();
    text.push_str(&format!("sandbox protections active: {}\n", on.join(", ")));
    if !off.is_empty() {
        text.push_str(&format!("sandbox protections NOT active: {}\n", off.join(", ")));
    }
    let mut d = details(plan, false);
    d["exit_status"] = json!(status);
    d["timed_out"] = json!(out.timed_out);
    d["elapsed_ms"] = json!(out.elapsed.as_millis() as u64);
    d["stdout_bytes"] = json!(out.stdout.total);
    d["stderr_bytes"] = json!(out.stderr.total);
    d["protections"] = serde_json::to_value(&out.protections).unwrap_or(Value::Null);
    ToolOutput::text(text).with_details(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapper_scripts_are_skipped_for_the_real_interpreter() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let shims = dir.path().join("shims");
        let real = dir.path().join("real");
        std::fs::create_dir_all(&shims).unwrap();
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(shims.join("python3"), "#!/bin/sh\nexec pyenv python3 \"$@\"\n").unwrap();
        std::fs::write(real.join("python3"), b"\x7fELF fake").unwrap();
        for p in [shims.join("python3"), real.join("python3")] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path =
            std::env::join_paths(["relative/dir".into(), shims.clone(), real.clone()]).unwrap();
        assert_eq!(find_python3(Some(&path)), Some(real.join("python3")));
        // Not executable: skipped too.
        std::fs::set_permissions(real.join("python3"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let found = find_python3(Some(&path));
        assert_ne!(found, Some(real.join("python3")));
        assert_ne!(found, Some(shims.join("python3")));
    }

    #[test]
    fn exactly_one_of_code_and_path() {
        assert!(matches!(source_arg(&json!({"code": "1"})), Ok(Source::Code(_))));
        assert!(matches!(source_arg(&json!({"path": "a.py"})), Ok(Source::Path(_))));
        for bad in [
            json!({}),
            json!({"code": "1", "path": "a.py"}),
            json!({"code": 1}),
            json!({"code": "1", "timeout": 99}),
            json!("print(1)"),
        ] {
            let err = source_arg(&bad).err().unwrap();
            assert!(err.to_string().contains("exactly one argument"), "{bad}: {err}");
        }
    }
}
