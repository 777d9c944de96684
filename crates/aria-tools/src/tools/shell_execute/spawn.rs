//! Running a planned command line: each simple command spawned in the sandbox, pipes and
//! redirects wired, `&&`/`||`/`;` gated on exit statuses, output capped and rendered.

use super::*;

pub(in crate::tools) struct Collected {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub protections: Option<Protections>,
}

pub(super) fn execute(guard: &PathGuard, plan: Plan, deadline: Instant) -> ToolOutput {
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
pub(in crate::tools) fn run(
    guard: &PathGuard,
    plan: Plan,
    deadline: Instant,
) -> (Collected, usize, Vec<PathBuf>) {
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
pub(in crate::tools) struct Stages {
    pub argvs: Vec<Vec<String>>,
    pub targets: Vec<Vec<Option<Target>>>,
    pub cwds: Vec<PathBuf>,
}

pub(in crate::tools) fn start_pipeline(
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

pub(in crate::tools) fn collect_pipeline(stages: Vec<Stage>, all: &mut Collected) {
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

/// Appends one stream under its heading (nothing when it is empty), saying if it was cut.
fn push_stream(text: &mut String, name: &str, body: &str, cut: bool) {
    if body.is_empty() {
        return;
    }
    text.push_str(&format!("--- {name} ---\n{body}"));
    if cut {
        text.push_str(&format!("\n[{name} truncated]"));
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
}

fn render(command: &str, tier: Tier, steps_run: usize, mut all: Collected) -> ToolOutput {
    let out_cut = crate::tools::cut(&mut all.stdout, DEFAULT_OUTPUT_CAP);
    let err_cut = crate::tools::cut(&mut all.stderr, DEFAULT_OUTPUT_CAP);
    let mut text = format!("exit status: {}", all.status);
    if all.timed_out {
        text.push_str(" (timed out: the processes were killed)");
    }
    text.push('\n');
    push_stream(&mut text, "stdout", &all.stdout, out_cut);
    push_stream(&mut text, "stderr", &all.stderr, err_cut);
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
