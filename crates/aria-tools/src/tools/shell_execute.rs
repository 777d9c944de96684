//! `shell_execute {command}`: runs a command line without a shell.
//!
//! Besides simple commands, pipelines and lists it runs what models commonly write, each part
//! classified on its own: heredocs and here-strings (stdin text), `cd` (every later command's
//! directory is fixed when the line is planned and checked from there; a `cd` that does not
//! run stops the line), `$(…)` (run first when read-tier, see [`crate::shell::subst`]) and
//! the builtins in [`crate::shell::builtin`] and `shell_line.rs` (evaluated in-process).
//!
//! The line is parsed and classified by [`crate::shell`]; what the classifier blocks is refused
//! with its reason. Every redirect target and every path the commands write is checked with the
//! path guard, words ARIA would have to expand (`$VAR`, globs, `~`, braces) are refused, and
//! then each simple command is spawned through [`aria_sandbox`] with its argv: `|` connects
//! stages with pipes, `&&` / `||` / `;` gate steps on the previous exit status, redirects are
//! files the guard approved, opened beneath their root without following any symlink.

use std::fs::{File, OpenOptions};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use aria_sandbox::{
    DEFAULT_OUTPUT_CAP, Input, OpenMode, Outcome, Output, Protections, Sandbox, SandboxError,
    open_beneath,
};
use serde_json::{Value, json};

use crate::confine::{self, Access};
use crate::guard::path::{PathGuard, PathRefusal};
use crate::shell::builtin::Builtin;
use crate::shell::subst::{self, Substitution};
use crate::shell::{self, RedirectMode, RedirectTarget, RunIf, Script, SimpleCommand, Word};
use crate::tools::shell_line;
use crate::tools::shell_steps::{self, Checked, Walker};
use crate::tools::{blocking, path_error, roots_sentence};

mod spawn;
pub(super) use spawn::{Collected, Stages, collect_pipeline, start_pipeline};
use spawn::{execute, run};

/// How long a whole command line may run by default.
pub const DEFAULT_SHELL_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs simple commands, pipelines and `&&`/`||`/`;` lists in the sandbox. Tier: the
/// classifier's tier of the command line.
#[derive(Debug)]
pub struct ShellExecute {
    guard: Arc<PathGuard>,
    timeout: Duration,
    spec: ToolSpec,
}

impl ShellExecute {
    /// The tool's name: a public contract.
    pub const NAME: &'static str = "shell_execute";

    pub fn new(guard: Arc<PathGuard>) -> Self {
        let spec = spec(&guard, DEFAULT_SHELL_TIMEOUT);
        ShellExecute { guard, timeout: DEFAULT_SHELL_TIMEOUT, spec }
    }

    /// Changes the time limit of one command line (default [`DEFAULT_SHELL_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.spec = spec(&self.guard, timeout);
        self
    }
}

fn spec(guard: &PathGuard, timeout: Duration) -> ToolSpec {
    ToolSpec {
        name: ShellExecute::NAME.to_owned(),
        description: format!(
            "Run a command line: simple commands, pipes (|), &&, || and ;, with redirects \
             (<, >, >>, 2>&1) to files inside {}. Programs run directly, never through a \
             shell. Also supported: heredocs (cat > f <<'EOF' ... EOF) and literal \
             here-strings (<<< 'text'); cd DIR && cmd and (cd DIR && cmd); $(cmd) and \
             `cmd` when cmd only reads (it runs first, its output becomes arguments); export \
             NAME=value / unset NAME for the rest of the line; command -v, type, [ ... ], \
             test, true, false, echo, printf; for x in a b c; do ...; done over literal \
             words; if ...; then ...; elif ...; else ...; fi; $TMPDIR (a private /tmp). Not \
             supported: other $VAR, globs, ~, while, until, case, functions. Runs in the first root, without network, \
             for at most {} s; output is capped. Naming a path outside the roots needs the \
             user's approval.",
            roots_sentence(guard),
            timeout.as_secs_f64()
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The command line, e.g. \"grep -rn TODO src | sort\"."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

fn command_arg(args: &Value) -> Result<String, ToolError> {
    let usage = "shell_execute takes one argument, \"command\": the command line as a string";
    let Some(map) = args.as_object() else {
        return Err(ToolError::failed(format!("the arguments are not a JSON object; {usage}")));
    };
    if let Some(unknown) = map.keys().find(|k| k.as_str() != "command") {
        return Err(ToolError::failed(format!("unknown argument \"{unknown}\"; {usage}")));
    }
    match map.get("command") {
        Some(Value::String(c)) => Ok(c.clone()),
        Some(_) => Err(ToolError::failed(format!("\"command\" must be a string; {usage}"))),
        None => Err(ToolError::failed(format!("the argument \"command\" is missing; {usage}"))),
    }
}

impl Tool for ShellExecute {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The classifier's tier, raised to `Irreversible` (ask) when an argument names a path
    /// outside the roots: the sandbox lets programs read anywhere, but reading outside the
    /// roots is something the file tools refuse, so a command may do it only with approval.
    /// Arguments without a command string are `Blocked` (never run).
    fn tier(&self, args: &Value) -> Tier {
        match command_arg(args) {
            Ok(command) => command_verdict(&self.guard, &command).0,
            Err(_) => Tier::Blocked,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let command = command_arg(&args)?;
            let guard = Arc::clone(&self.guard);
            let timeout = self.timeout;
            let dry_run = ctx.dry_run;
            blocking(ShellExecute::NAME, move || {
                let deadline = Instant::now() + timeout;
                let (line, notes) = substitute(&guard, &command, deadline, 0)?;
                let plan = plan(&guard, &line)?;
                if line != command {
                    // Judged again on what really runs: outside paths ask like written ones.
                    let approved = command_verdict(&guard, &command).0;
                    let now = command_verdict(&guard, &line).0;
                    if now > approved {
                        return Err(ToolError::refused(format!(
                            "not run: with the substituted output the command is `{}`, which is \
                             {} (more than the {} it was judged as); run the inner command as \
                             its own step and write its output literally",
                            crate::shell::subst::shorten_line(&line),
                            now.as_str(),
                            approved.as_str()
                        )));
                    }
                }
                // A dry run runs read-tier lines (their roots are read-only mounts anyway) and
                // only describes the others.
                if dry_run && plan.tier != Tier::Read {
                    return Ok(dry_run_output(&plan));
                }
                let mut out = execute(&guard, plan, deadline);
                if !notes.is_empty() {
                    out.content = format!("{notes}{}", out.content);
                }
                Ok(out)
            })
            .await
        })
    }
}

/// A command line that passed every check, with its redirects resolved.
struct Plan {
    command: String,
    tier: Tier,
    script: Script,
    /// Resolved redirect targets, per command in order, per redirect in order (`None` for dups).
    targets: Vec<Vec<Option<Target>>>,
    /// The argv each command runs with, in order (git commands that print history carry
    /// exclusions for the sensitive files).
    argvs: Vec<Vec<String>>,
    /// The directory each command runs in, in order (after the `cd`s before it).
    cwds: Vec<PathBuf>,
    /// The builtin each command is, in order (`None`: a program).
    builtins: Vec<Option<Builtin>>,
}

/// A redirect target the guard approved.
#[derive(Debug, Clone)]
pub(super) enum Target {
    DevNull,
    /// Opened with `open_beneath(root, relative)`, so nothing swapped in since the check can
    /// lead out of the root.
    Beneath {
        root: PathBuf,
        relative: PathBuf,
    },
}

fn plan(guard: &PathGuard, command: &str) -> Result<Plan, ToolError> {
    let verdict = shell::classify(command);
    if verdict.tier == Tier::Blocked {
        return Err(ToolError::refused(format!("not run: {}", verdict.reason)));
    }
    let script = shell::parse(command).map_err(|r| ToolError::refused(r.message))?;
    let mut p = Plan {
        command: command.to_owned(),
        tier: verdict.tier,
        targets: Vec::new(),
        argvs: Vec::new(),
        cwds: Vec::new(),
        builtins: Vec::new(),
        script: Script { steps: Vec::new() },
    };
    let mut cwd = guard.roots()[0].clone();
    let mut dirs = vec![cwd.clone()];
    for at in script.pipelines() {
        for cmd in &at.pipeline.commands {
            let builtin = builtin_of(cmd, at.pipeline.commands.len(), at.run_if, at.nested > 0)?;
            p.cwds.push(cwd.clone());
            if let Some(Builtin::Cd(dir)) = &builtin {
                cwd = shell_line::enter(guard, &cwd, dir)?;
                dirs.push(cwd.clone());
            }
            check_words(cmd)?;
            check_sensitive_args(guard, cmd, &cwd)?;
            if cwd != guard.roots()[0] {
                check_inside_from(guard, cmd, &cwd)?;
            }
            let argv: Vec<String> = cmd.argv().map(str::to_owned).collect();
            p.argvs.push(
                shell::guard_git_history(&argv, guard.sensitive()).map_err(ToolError::refused)?,
            );
            let mut per = Vec::new();
            for r in &cmd.redirects {
                per.push(match &r.target {
                    RedirectTarget::Dup(_) | RedirectTarget::Text(_) => None,
                    RedirectTarget::File { mode, path } => {
                        Some(redirect_target(guard, *mode, path, &cwd)?)
                    }
                });
            }
            p.targets.push(per);
            p.builtins.push(builtin);
        }
    }
    for written in &verdict.writes {
        if written == "/dev/null" || shell_line::private_tmp(written) {
            continue;
        }
        for dir in &dirs {
            guard
                .resolve_for_create(&shell_line::in_dir(guard, dir, written))
                .map_err(|e| path_error(e, "Write only inside the allowed roots."))?;
        }
    }
    p.script = script;
    Ok(p)
}

/// The builtin `cmd` is, checked for where it stands: alone in its pipeline, and a `cd` never
/// after `||` nor inside an `if` (whether it ran decides where everything after it runs).
fn builtin_of(
    cmd: &SimpleCommand,
    stages: usize,
    run_if: RunIf,
    in_if: bool,
) -> Result<Option<Builtin>, ToolError> {
    let builtin = match Builtin::parse(cmd) {
        None => return Ok(None),
        Some(Err(why)) => return Err(ToolError::refused(format!("not run: {why}"))),
        Some(Ok(b)) => b,
    };
    let name = cmd.program().text();
    if stages > 1 {
        return Err(ToolError::refused(format!(
            "not run: `{name}` cannot be part of a pipeline here; run it on its own, joined to \
             the next command with `&&`"
        )));
    }
    if matches!(builtin, Builtin::Cd(_)) && in_if {
        return Err(ToolError::refused(
            "not run: `cd` inside `if` is not supported (where the later commands run would \
             depend on which branch ran); write `cd DIR && if …; then …; fi`, or give the \
             commands paths under DIR"
                .to_owned(),
        ));
    }
    if matches!(builtin, Builtin::Cd(_)) && run_if == RunIf::Failure {
        return Err(ToolError::refused(
            "not run: `cd` after `||` is not supported (where the later commands run would \
             depend on a failure); write `cd DIR && command`"
                .to_owned(),
        ));
    }
    Ok(Some(builtin))
}

/// After a `cd`, the path-like arguments are judged from the new directory too: none may
/// lead outside the roots.
fn check_inside_from(guard: &PathGuard, cmd: &SimpleCommand, cwd: &Path) -> Result<(), ToolError> {
    for word in cmd.words.iter().skip(1) {
        let text = word.text();
        let value = text.split_once('=').map(|(_, v)| v);
        for piece in [Some(text), value].into_iter().flatten() {
            let path_like = piece.contains('/') || piece == "..";
            if path_like
                && piece != "/dev/null"
                && leaves_roots(guard, &shell_line::in_dir(guard, cwd, piece))
            {
                return Err(ToolError::refused(format!(
                    "`{piece}` leads outside {} from the directory `cd` entered; name a path \
                     inside the roots",
                    roots_sentence(guard)
                )));
            }
        }
    }
    Ok(())
}

/// Runs the `$(…)` substitutions of `line` (each only when it is read-tier, inner ones first)
/// and returns the line with their output in place, and any stderr they printed.
fn substitute(
    guard: &PathGuard,
    line: &str,
    deadline: Instant,
    depth: u8,
) -> Result<(String, String), ToolError> {
    let subs: Vec<Substitution> =
        subst::substitutions(line).map_err(|r| ToolError::refused(format!("not run: {r}")))?;
    if subs.is_empty() {
        return Ok((line.to_owned(), String::new()));
    }
    if depth > 4 {
        return Err(ToolError::refused(
            "not run: substitutions nest more than 4 deep; run the inner commands as steps",
        ));
    }
    let verdict = shell::classify(line);
    if verdict.tier == Tier::Blocked {
        return Err(ToolError::refused(format!("not run: {}", verdict.reason)));
    }
    let mut outputs = Vec::new();
    let mut notes = String::new();
    for s in &subs {
        let (inner, inner_notes) = substitute(guard, &s.inner, deadline, depth + 1)?;
        notes.push_str(&inner_notes);
        let plan = plan(guard, &inner)?;
        if plan.tier != Tier::Read {
            return Err(ToolError::refused(format!(
                "not run: `$({inner})` is {}, and ARIA runs a substitution first only when it \
                 only reads; run it as its own step",
                plan.tier.as_str()
            )));
        }
        let (all, _, _) = run(guard, plan, deadline);
        if !all.stderr.is_empty() {
            notes.push_str(&format!("--- stderr of $({inner}) ---\n{}", all.stderr));
        }
        if all.timed_out {
            return Err(ToolError::failed(format!("`$({inner})` timed out")));
        }
        outputs.push(subst::quote_output(s, &all.stdout));
    }
    Ok((subst::replace(line, &subs, &outputs), notes))
}

/// The tier `shell_execute` gives `command` under `guard`, and why: the classifier's verdict,
/// raised to `Irreversible` (ask) when an argument names a path outside the roots. This is
/// also what `aria check command` shows, so the two never disagree.
pub fn command_verdict(guard: &PathGuard, command: &str) -> (Tier, String) {
    let verdict = shell::classify(command);
    if verdict.tier >= Tier::Irreversible {
        return (verdict.tier, verdict.reason);
    }
    match outside_argument(guard, command) {
        Some(arg) => (
            Tier::Irreversible,
            format!(
                "`{arg}` is outside {}: a command may read there only with approval",
                roots_sentence(guard)
            ),
        ),
        None => (verdict.tier, verdict.reason),
    }
}

/// The first argument (or `--opt=value` value) that looks like a path — it contains `/` or is
/// `..` — and resolves outside the roots, through `..` or a symlink. The program word is not an
/// argument, and `/dev/null` is fine. A line that does not parse is named whole (it is refused
/// when run anyway), so the answer fails closed.
fn outside_argument(guard: &PathGuard, command: &str) -> Option<String> {
    // With `$(…)`, the line as judged before running (each substitution a placeholder); the
    // substituted line is checked again when it is planned.
    let judged = match subst::substitutions(command) {
        Ok(subs) if !subs.is_empty() => subst::placeholder_line(command, &subs),
        _ => command.to_owned(),
    };
    let Ok(script) = shell::parse(&judged) else { return Some(command.to_owned()) };
    // What a substitution reads counts too: it runs before anything is shown.
    if let Some(arg) = subst::substitutions(command)
        .unwrap_or_default()
        .iter()
        .find_map(|s| outside_argument(guard, &s.inner))
    {
        return Some(arg);
    }
    script.commands().find_map(|cmd| {
        cmd.words.iter().skip(1).find_map(|word| {
            let text = word.text();
            let value = text.split_once('=').map(|(_, v)| v);
            [Some(text), value].into_iter().flatten().find_map(|piece| {
                let path_like = piece.contains('/') || piece == "..";
                (path_like && piece != "/dev/null" && leaves_roots(guard, piece))
                    .then(|| piece.to_owned())
            })
        })
    })
}

fn leaves_roots(guard: &PathGuard, piece: &str) -> bool {
    match guard.resolve_for_create(piece) {
        Ok(_) => false,
        Err(e) => matches!(
            e.refusal(),
            Some(
                PathRefusal::EscapesRoot { .. }
                    | PathRefusal::OutsideRoots { .. }
                    | PathRefusal::SymlinkEscape { .. }
                    | PathRefusal::AriaOwn { .. }
            )
        ),
    }
}

/// Refuses words whose meaning depends on an expansion ARIA does not perform.
fn check_words(cmd: &SimpleCommand) -> Result<(), ToolError> {
    let values = cmd.env.iter().map(|a| &a.value);
    for word in cmd.words.iter().chain(values) {
        if word.needs_expansion() {
            return Err(ToolError::refused(format!(
                "`{}` needs shell expansion ($VAR, glob, ~ or braces), which ARIA does not \
                 perform because it runs programs without a shell; write the value or the file \
                 names literally",
                word.text()
            )));
        }
    }
    Ok(())
}

/// Refuses arguments that name a sensitive file (`.env`, `.ssh/…`, keys): the sandbox lets
/// programs read outside the roots, so the names are checked here. A word counts as a path
/// when it contains `/` or exists relative to the first root (so `grep credentials` is fine);
/// `--opt=value` is judged by its value. Recursive reads (`grep -r x /home`) are not caught
/// here: the outbound filter redacts what they print.
fn check_sensitive_args(
    guard: &PathGuard,
    cmd: &SimpleCommand,
    cwd: &Path,
) -> Result<(), ToolError> {
    for word in cmd.words.iter().skip(1) {
        let text = word.text();
        let pieces = [Some(text), text.split_once('=').map(|(_, v)| v)];
        for piece in pieces.into_iter().flatten() {
            if !(piece.contains('/') || cwd.join(piece).symlink_metadata().is_ok()) {
                continue;
            }
            for component in piece.split('/') {
                if let Some(pattern) = guard.sensitive().matching(component) {
                    return Err(ToolError::refused(format!(
                        "the argument `{text}` names a sensitive file (\"{component}\" matches \
                         \"{pattern}\"); ARIA does not let commands read or write secrets files"
                    )));
                }
            }
        }
    }
    Ok(())
}

fn redirect_target(
    guard: &PathGuard,
    mode: RedirectMode,
    path: &Word,
    cwd: &Path,
) -> Result<Target, ToolError> {
    let Some(text) = path.literal_text() else {
        return Err(ToolError::refused(format!(
            "the redirect target `{}` needs shell expansion, which ARIA does not perform; write \
             the file name literally",
            path.text()
        )));
    };
    if text == "/dev/null" {
        return Ok(Target::DevNull);
    }
    let text = &shell_line::in_dir(guard, cwd, text);
    let resolved =
        if mode.writes() { guard.resolve_for_create(text) } else { guard.resolve_existing(text) }
            .map_err(|e| path_error(e, "Redirect only to files inside the allowed roots."))?;
    Ok(Target::Beneath {
        root: resolved.root().to_path_buf(),
        relative: resolved.relative().to_path_buf(),
    })
}

fn dry_run_output(plan: &Plan) -> ToolOutput {
    let mut lines = vec![format!("dry run (tier {}): nothing was run", plan.tier.as_str())];
    shell_steps::describe(&plan.script.steps, 0, &mut lines);
    ToolOutput::text(lines.join("\n"))
        .with_details(json!({"command": plan.command, "dry_run": true}))
}

/// One started stage, or the reason it could not start (reported like a shell would: 127).
pub(super) enum Stage {
    /// The flag says the captured stderr is really the line's stdout (`2>&1 > file`).
    Started(aria_sandbox::Running, bool),
    NotStarted(String),
}
