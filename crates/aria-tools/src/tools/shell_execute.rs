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

pub(super) struct Collected {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub protections: Option<Protections>,
}

fn execute(guard: &PathGuard, plan: Plan, deadline: Instant) -> ToolOutput {
    let (command, tier) = (plan.command.clone(), plan.tier);
    let (all, ran, removed) = run(guard, plan, deadline);
    let mut out = render(&command, tier, ran, all);
    if !removed.is_empty() {
        let names: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
        out.content.push_str(&format!(
            "aria: removed {} the command created ({}): files that configure ARIA or the \
             project's agents are the user's to write\n",
            names.join(", "),
            if removed.len() == 1 { "a protected file" } else { "protected files" }
        ));
        out.details["removed"] = json!(names);
    }
    out
}

/// Runs a planned line: what it printed, how many steps ran, and the protected files it
/// created that were removed.
fn run(guard: &PathGuard, plan: Plan, deadline: Instant) -> (Collected, usize, Vec<PathBuf>) {
    let access = Access::for_tier(plan.tier);
    let config_before = if access.writes() { confine::config_files(guard) } else { Vec::new() };
    let all = Collected {
        status: 0,
        stdout: String::new(),
        stderr: String::new(),
        timed_out: false,
        protections: None,
    };
    let mut walker = Walker {
        guard,
        access,
        deadline,
        checked: Checked {
            targets: plan.targets.into_iter(),
            argvs: plan.argvs.into_iter(),
            cwds: plan.cwds.into_iter(),
            builtins: plan.builtins.into_iter(),
        },
        all,
        exports: Vec::new(),
        ran: 0,
        stopped: false,
    };
    walker.steps(plan.script.steps);
    let (all, ran) = (walker.all, walker.ran);
    let removed = if access.writes() {
        confine::remove_created_config(guard, &config_before)
    } else {
        Vec::new()
    };
    (all, ran, removed)
}

/// Per stage of one pipeline: its argv, redirect targets and directory.
pub(super) struct Stages {
    pub argvs: Vec<Vec<String>>,
    pub targets: Vec<Vec<Option<Target>>>,
    pub cwds: Vec<PathBuf>,
}

pub(super) fn start_pipeline(
    guard: &PathGuard,
    access: Access,
    commands: &[SimpleCommand],
    per: Stages,
    exports: &[(String, String)],
    deadline: Instant,
) -> Vec<Stage> {
    let mut stages = Vec::new();
    let mut next_stdin: Option<OwnedFd> = None;
    let last = commands.len().saturating_sub(1);
    let each = commands.iter().zip(per.targets).zip(per.argvs).zip(per.cwds);
    for (i, (((cmd, paths), argv), cwd)) in each.enumerate() {
        let stdin = next_stdin.take();
        let (stdout_default, reader) = if i < last {
            match std::io::pipe() {
                Ok((r, w)) => (Some(OwnedFd::from(w)), Some(OwnedFd::from(r))),
                Err(e) => {
                    stages.push(Stage::NotStarted(format!("could not create a pipe: {e}")));
                    break;
                }
            }
        } else {
            (None, None)
        };
        next_stdin = reader;
        let stage = match wire(cmd, &paths, stdin, stdout_default) {
            Ok((input, stdout, stderr, stderr_is_stdout)) => {
                let mut spec = match confine::spawn_spec(guard, argv, cwd, access) {
                    Ok(spec) => spec,
                    Err(message) => {
                        stages.push(Stage::NotStarted(message));
                        break;
                    }
                };
                // Exported variables first; the command's own `NAME=value` prefixes win.
                spec.env = exports
                    .iter()
                    .filter(|(n, _)| !cmd.env.iter().any(|a| &a.name == n))
                    .cloned()
                    .chain(cmd.env.iter().map(|a| (a.name.clone(), a.value.text().to_owned())))
                    .collect();
                // A variable that undoes the history exclusions (GIT_LITERAL_PATHSPECS) or
                // points git at another repository is refused for git, whatever approved it.
                let is_git = spec.argv.first().is_some_and(|p| p == "git" || p.ends_with("/git"));
                if let Some(why) = spec
                    .env
                    .iter()
                    .filter(|_| is_git)
                    .find_map(|(name, _)| shell::history::git_env_refusal(name))
                {
                    stages.push(Stage::NotStarted(format!("refused: {why}")));
                    break;
                }
                spec.timeout = deadline.saturating_duration_since(Instant::now());
                spec.stdin = input;
                spec.stdout = stdout;
                spec.stderr = stderr;
                match Sandbox::start(spec) {
                    Ok(running) => Stage::Started(running, stderr_is_stdout),
                    Err(SandboxError::ProgramNotFound { program }) => {
                        Stage::NotStarted(format!("{program}: command not found"))
                    }
                    Err(e) => Stage::NotStarted(e.to_string()),
                }
            }
            Err(message) => Stage::NotStarted(message),
        };
        stages.push(stage);
    }
    stages
}

/// Where a descriptor of one command points while its redirects are applied left to right.
#[derive(Clone)]
enum Slot {
    /// Text given on the command line (heredoc, here-string).
    Text(Arc<str>),
    Stdin,
    Stdout,
    Stderr,
    File(Arc<File>),
}

/// stdin, stdout, stderr, and whether the captured stderr belongs to the line's stdout.
type Wiring = (Input, Output, Output, bool);

/// Applies the command's redirects in order (`> f 2>&1` differs from `2>&1 > f`).
fn wire(
    cmd: &SimpleCommand,
    paths: &[Option<Target>],
    stdin: Option<OwnedFd>,
    stdout_default: Option<OwnedFd>,
) -> Result<Wiring, String> {
    let mut slots = [Slot::Stdin, Slot::Stdout, Slot::Stderr];
    for (r, path) in cmd.redirects.iter().zip(paths) {
        let fd = usize::from(r.fd).min(2);
        slots[fd] = match (&r.target, path) {
            (RedirectTarget::Dup(src), _) => slots[usize::from(*src).min(2)].clone(),
            (RedirectTarget::Text(text), _) => Slot::Text(Arc::from(text.as_str())),
            (RedirectTarget::File { mode, .. }, Some(p)) => Slot::File(Arc::new(open(p, *mode)?)),
            (RedirectTarget::File { path, .. }, None) => {
                return Err(format!("{}: redirect target was not checked", path.text()));
            }
        };
    }
    let dup = |f: &Arc<File>| f.try_clone().map(OwnedFd::from).map_err(|e| e.to_string());
    let [s0, s1, s2] = slots;
    let input = match s0 {
        Slot::Stdin => stdin.map(Input::Fd).unwrap_or(Input::Null),
        Slot::File(f) => Input::Fd(dup(&f)?),
        Slot::Text(t) => Input::Bytes(t.as_bytes().to_vec()),
        _ => return Err("reading stdin from an output descriptor is not supported".into()),
    };
    // `2>&1 > f` on the last stage: stderr goes to the line's captured stdout.
    let stderr_is_stdout =
        stdout_default.is_none() && matches!((&s1, &s2), (Slot::File(_), Slot::Stdout));
    let default_out = || stdout_default.map(Output::Fd).unwrap_or(Output::Capture);
    let (stdout, stderr) = match (s1, s2) {
        (Slot::Stdout, Slot::Stderr) => (default_out(), Output::Capture),
        (Slot::Stdout, Slot::Stdout) => (default_out(), Output::Merge),
        (Slot::Stderr, Slot::Stderr) => (Output::Merge, Output::Capture),
        (Slot::Stdout, Slot::File(f)) => (default_out(), Output::Fd(dup(&f)?)),
        (Slot::Stderr, Slot::File(f)) => (Output::Fd(dup(&f)?), Output::Capture),
        (Slot::File(f), Slot::Stderr) => (Output::Fd(dup(&f)?), Output::Capture),
        (Slot::File(f), Slot::Stdout) => (Output::Fd(dup(&f)?), default_out()),
        (Slot::File(f), Slot::File(g)) => (Output::Fd(dup(&f)?), Output::Fd(dup(&g)?)),
        _ => return Err("this combination of redirects is not supported".into()),
    };
    Ok((input, stdout, stderr, stderr_is_stdout))
}

/// Opens a redirect target the guard approved. Beneath its root, any symlink or `..` that
/// appeared since the check makes the open fail instead of leading elsewhere.
fn open(target: &Target, mode: RedirectMode) -> Result<File, String> {
    match target {
        Target::DevNull => {
            let mut o = OpenOptions::new();
            if mode.writes() {
                o.write(true)
            } else {
                o.read(true)
            };
            o.open("/dev/null").map_err(|e| format!("/dev/null: {e}"))
        }
        Target::Beneath { root, relative } => {
            let m = match mode {
                RedirectMode::Read => OpenMode::Read,
                RedirectMode::Write => OpenMode::Write,
                RedirectMode::Append => OpenMode::Append,
            };
            open_beneath(root, relative, m)
                .map_err(|e| format!("{}: {e}", root.join(relative).display()))
        }
    }
}

pub(super) fn collect_pipeline(stages: Vec<Stage>, all: &mut Collected) {
    let mut status = 0;
    for stage in stages {
        match stage {
            Stage::Started(running, stderr_is_stdout) => {
                let mut out: Outcome = running.wait();
                if stderr_is_stdout {
                    out.stdout = std::mem::take(&mut out.stderr);
                }
                status = out.exit.code.unwrap_or(128 + out.exit.signal.unwrap_or(0));
                all.timed_out |= out.timed_out;
                all.stdout.push_str(&out.stdout.text());
                if out.stdout.truncated {
                    all.stdout.push_str("\n[stdout truncated]\n");
                }
                all.stderr.push_str(&out.stderr.text());
                if out.stderr.truncated {
                    all.stderr.push_str("\n[stderr truncated]\n");
                }
                all.protections.get_or_insert(out.protections);
            }
            Stage::NotStarted(message) => {
                status = 127;
                all.stderr.push_str(&format!("aria: {message}\n"));
            }
        }
    }
    all.status = status;
}

fn cap(text: &mut String) -> bool {
    if text.len() <= DEFAULT_OUTPUT_CAP {
        return false;
    }
    let mut end = DEFAULT_OUTPUT_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

fn render(command: &str, tier: Tier, steps_run: usize, mut all: Collected) -> ToolOutput {
    let out_cut = cap(&mut all.stdout);
    let err_cut = cap(&mut all.stderr);
    let mut text = format!("exit status: {}", all.status);
    if all.timed_out {
        text.push_str(" (timed out: the processes were killed)");
    }
    text.push('\n');
    if !all.stdout.is_empty() {
        text.push_str(&format!("--- stdout ---\n{}", all.stdout));
        if out_cut {
            text.push_str("\n[stdout truncated]");
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if !all.stderr.is_empty() {
        text.push_str(&format!("--- stderr ---\n{}", all.stderr));
        if err_cut {
            text.push_str("\n[stderr truncated]");
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let mut details = json!({
        "command": command,
        "tier": tier.as_str(),
        "exit_status": all.status,
        "timed_out": all.timed_out,
        "steps_run": steps_run,
    });
    if let Some(p) = &all.protections {
        let off: Vec<&str> = p.items.iter().filter(|i| !i.active).map(|i| i.name).collect();
        if !off.is_empty() {
            text.push_str(&format!("sandbox protections not active: {}\n", off.join(", ")));
        }
        details["protections"] = serde_json::to_value(p).unwrap_or(Value::Null);
    }
    ToolOutput::text(text).with_details(details)
}
