//! `aria run` and the machinery `aria chat` shares with it: starting the runtime, Ctrl-C,
//! rendering events, holding the session lock, mapping the outcome to an exit code.

use std::io::Write;
use std::sync::Arc;

use aria_api::{SessionRecord, SessionState};
use aria_core::{Agent, AgentEvent, CheckReport, CheckStatus, Judgement, RunError};
use aria_store::Store;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::app;
use crate::cli::{GlobalArgs, RunArgs};
use crate::config::Config;
use crate::exit::{CANCELLED, CliError, CliResult, FAILED, OK, USAGE};
use crate::runlock::{self, SessionLock};

/// Everything a command that runs the agent needs.
pub struct Context {
    pub config: Config,
    pub store: Arc<Store>,
    pub redactor: Arc<aria_tools::SecretRedactor>,
}

impl Context {
    pub fn load(global: &GlobalArgs) -> CliResult<Context> {
        let config = app::load_config(global)?;
        let redactor = app::redactor(&config);
        if let Some(warning) = crate::logging::init(
            &config.log_level,
            &config.data_dir,
            config.log_file.then(|| config.log_limits.sizes()),
            redactor.clone(),
        ) {
            tracing::warn!("{warning}");
        }
        let store = app::open_store(&config, redactor.clone())?;
        Ok(Context { config, store, redactor })
    }

    /// The full conversation or session id that `given` (an id or a unique prefix) names; an
    /// unknown or ambiguous one is a usage error that says so.
    pub fn resolve(&self, kind: aria_store::IdKind, given: &str) -> CliResult<String> {
        self.store
            .resolve_id(kind, given)
            .map_err(|e| CliError { code: crate::exit::USAGE, error: anyhow::anyhow!("{e}") })
    }

    /// Like [`Context::resolve`], for an optional id.
    pub fn resolve_opt(
        &self,
        kind: aria_store::IdKind,
        given: Option<&str>,
    ) -> CliResult<Option<String>> {
        given.map(|g| self.resolve(kind, g)).transpose()
    }

    /// Tells the user about runs that died without finishing.
    pub fn report_interrupted(&self) {
        let Ok(unfinished) = self.store.unfinished_sessions() else { return };
        for s in unfinished.iter().filter(|s| !runlock::is_running(&self.config.data_dir, &s.id)) {
            eprintln!(
                "note: session {} was interrupted while {} ({}); resume it with `aria run --resume {}`",
                s.id,
                s.state,
                crate::render::clip(&s.task, 50),
                s.id
            );
        }
    }
}

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Render {
    /// Stream answer text to stdout, tool activity to stderr.
    Stream,
    /// Tool activity to stderr only; the caller prints the answer.
    Quiet,
    /// Nothing (JSON output).
    Silent,
}

pub fn runtime() -> CliResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::failed)
}

/// Cancels `token` on the first Ctrl-C; a second one exits at once with 130.
pub fn cancel_on_ctrl_c(token: CancellationToken) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ncancelling… (press Ctrl-C again to quit at once)");
            token.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(i32::from(CANCELLED));
            }
        }
    });
}

/// What a run's events leave for `--json`: the calls denied, the automatic restores and the
/// governed workflow's checks.
#[derive(Debug, Default)]
pub struct Consumed {
    pub denied: Vec<Value>,
    pub restored: Vec<Value>,
    pub checks: Vec<Value>,
}

/// A tool call's arguments as the progress line shows them: the values only, e.g.
/// `notes.md` for `{"path":"notes.md"}`.
fn compact_arguments(arguments: &Value) -> String {
    match arguments {
        Value::Object(map) => map
            .values()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// Consumes a run's events: renders them and takes the session lock as soon as the session
/// exists, holding it until the run ends.
pub async fn consume(
    mut rx: UnboundedReceiver<AgentEvent>,
    render: Render,
    data_dir: std::path::PathBuf,
) -> (Option<SessionLock>, Consumed) {
    let mut lock = None;
    let mut seen = Consumed::default();
    let mut wrote_text = false;
    let mut text = crate::render::MarkerFilter::default();
    // On a terminal, a spinner line with the current step; erased before anything is printed.
    let progress = crate::progress::Progress::new(render != Render::Silent);
    while let Some(event) = rx.recv().await {
        match &event {
            AgentEvent::State { state: SessionState::Planning } => progress.step("thinking"),
            AgentEvent::State { state: SessionState::AwaitingApproval } => progress.idle(),
            AgentEvent::Started { .. } | AgentEvent::State { .. } => {}
            _ => progress.idle(),
        }
        match event {
            AgentEvent::Started { session_id, .. } if lock.is_none() => {
                lock = SessionLock::acquire(&data_dir, &session_id).ok();
            }
            // A new model step after streamed text (the workflow asked the model to retry):
            // its text starts on a line of its own.
            AgentEvent::State { state: SessionState::Planning } if wrote_text => {
                let held = text.finish();
                if !held.is_empty() {
                    print!("{held}");
                }
                println!();
                wrote_text = false;
            }
            AgentEvent::Text { delta } if render == Render::Stream => {
                let shown = text.push(&delta);
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(shown.as_bytes());
                let _ = out.flush();
                wrote_text = true;
            }
            AgentEvent::ToolStarted { name, arguments, .. } if render != Render::Silent => {
                let held = text.finish();
                if !held.is_empty() {
                    print!("{held}");
                }
                if wrote_text {
                    println!();
                    wrote_text = false;
                }
                eprintln!("  → {name} {}", crate::render::clip(&arguments.to_string(), 100));
                progress.step(format!("{name} {}", compact_arguments(&arguments)));
            }
            AgentEvent::ToolFinished { name, outcome, summary, .. } if render != Render::Silent => {
                if outcome == "ok" {
                    eprintln!("  ✓ {name}");
                } else if outcome == "dry_run" {
                    eprintln!("  · {name} {summary}");
                } else {
                    eprintln!("  ✗ {name} {outcome}: {summary}");
                }
            }
            AgentEvent::Warning { message } if render != Render::Silent => {
                eprintln!("warning: {message}");
            }
            // Always on stderr, also with --json: an automatic restore is never invisible.
            AgentEvent::Restored { check, snapshot, repository, files } => {
                eprintln!(
                    "restored: {check} failed after the edit in {repository}; put back {} as \
                     they were at {snapshot}",
                    if files.is_empty() { "nothing".to_owned() } else { files.join(", ") }
                );
                seen.restored.push(json!({"check": check, "snapshot": snapshot, "repository": repository, "files": files}));
            }
            // Always on stderr, also with --json: a failure that is not the edit's fault says so.
            AgentEvent::Checked { repository, snapshot, checks } => {
                for c in checks {
                    if matches!(c.judgement, Judgement::AlreadyFailing | Judgement::CouldNotRun) {
                        eprintln!(
                            "not restored: {} in {repository}: {}; not the edit's fault",
                            c.check, c.note
                        );
                    }
                    seen.checks.push(check_json(&c, &repository, &snapshot));
                }
            }
            // Always on stderr, also with --json: a denial is never silent.
            AgentEvent::Denied { name, arguments, reason, hint, .. } => {
                let shown = crate::render::clip(&arguments.to_string(), 100);
                eprintln!("denied: {name} {shown}: {reason}; {hint}");
                seen.denied.push(
                    json!({"tool": name, "arguments": arguments, "reason": reason, "hint": hint}),
                );
            }
            _ => {}
        }
    }
    let held = text.finish();
    if !held.is_empty() {
        print!("{held}");
    }
    if wrote_text {
        println!();
    }
    (lock, seen)
}

/// One governed-workflow check as `--json` lists it under `checks`: `{check, repository,
/// snapshot, command, before, after, judgement, note}`. `before` and `after` are `passed`,
/// `failed` or `could_not_run` (`before` is `unknown` when ARIA did not know it); `judgement`
/// is `passed`, `broken` (the edit broke it: the snapshot was restored), `already_failing`
/// or `could_not_run` (neither restores); `note` says it in words ("already failing before
/// the edit", "could not run: golangci-lint is not installed").
fn check_json(c: &CheckReport, repository: &str, snapshot: &str) -> Value {
    json!({
        "check": c.check,
        "repository": repository,
        "snapshot": snapshot,
        "command": c.command,
        "before": c.before.map_or("unknown", CheckStatus::label),
        "after": c.after.label(),
        "judgement": c.judgement,
        "note": c.note,
    })
}

/// A finished run, the calls it was denied, the automatic restores it made and the checks the
/// governed workflow ran (what `--json` reports as `denied`, `restored` and `checks`).
#[derive(Debug)]
pub struct Driven {
    pub session: SessionRecord,
    pub denied: Vec<Value>,
    pub restored: Vec<Value>,
    pub checks: Vec<Value>,
}

/// Runs (or resumes) one task with the given rendering; returns the finished session.
pub async fn drive(
    agent: &Agent,
    data_dir: &std::path::Path,
    task: Option<&str>,
    resume: Option<&str>,
    conversation: Option<String>,
    render: Render,
    cancel: CancellationToken,
) -> Result<Driven, RunError> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    // A resumed session is locked before anything happens to it.
    let early_lock = match resume {
        Some(id) => Some(SessionLock::acquire(data_dir, id).map_err(|e| {
            RunError::Journal(aria_api::JournalError::new(format!("cannot lock session {id}: {e}")))
        })?),
        None => None,
    };
    let consumer = tokio::spawn(consume(rx, render, data_dir.to_path_buf()));
    let result = match (resume, task) {
        (Some(id), _) => agent.resume(id, &tx, cancel).await,
        (None, Some(task)) => agent.run(task, conversation, &tx, cancel).await,
        (None, None) => Err(RunError::UnknownSession(String::new())),
    };
    drop(tx);
    let (_late_lock, seen) = consumer.await.unwrap_or_default();
    drop(early_lock);
    let Consumed { denied, restored, checks } = seen;
    result.map(|session| Driven { session, denied, restored, checks })
}

/// The exit code of a run that was denied some calls: 1 even when it finished, since what it
/// was asked to do did not all happen.
pub fn exit_code_with(state: SessionState, denied: &[Value]) -> u8 {
    match exit_code(state) {
        OK if !denied.is_empty() => FAILED,
        code => code,
    }
}

pub fn exit_code(state: SessionState) -> u8 {
    match state {
        SessionState::Done => OK,
        SessionState::Cancelled => CANCELLED,
        _ => FAILED,
    }
}

pub fn run_error(e: RunError) -> CliError {
    let code = match e {
        RunError::UnknownSession(_) | RunError::NotResumable { .. } => USAGE,
        RunError::Journal(_) => FAILED,
    };
    CliError { code, error: e.into() }
}

/// `aria run`.
pub fn run(global: &GlobalArgs, args: RunArgs) -> CliResult<u8> {
    let mut ctx = Context::load(global)?;
    // On stderr, so it never disturbs --json output.
    ctx.report_interrupted();
    let resume = ctx.resolve_opt(aria_store::IdKind::Session, args.resume.as_deref())?;
    let resumed = match &resume {
        Some(id) => resume_settings(&ctx, global, id)?,
        None => None,
    };
    if let Some(resumed) = &resumed {
        // Only the configuration changes (roots, mode): the store, the redactor and logging
        // stay as loaded.
        ctx.config = app::load_config(resumed)?;
    }
    let global = resumed.as_ref().unwrap_or(global);
    let conversation =
        ctx.resolve_opt(aria_store::IdKind::Conversation, args.conversation.as_deref())?;
    // The agent: --agent, the conversation's, or the resumed run's own.
    let agent = match &resume {
        Some(id) => ctx.store.session_agent(id)?,
        None => crate::agents::choose(&ctx.store, args.agent.as_deref(), conversation.as_deref())?,
    };
    if let Some(name) = &agent {
        ctx.config = crate::agents::configure(global, ctx.config, &ctx.store, name)?;
    }
    app::require_work_root(&ctx.config)?;
    app::settle_local_model(&mut ctx.config)?;
    let extras = crate::planned::Extras::load(&ctx.config)?;
    let agent = app::agent(&ctx.config, ctx.store.clone(), ctx.redactor.clone(), None, true)?;
    let rt = runtime()?;
    let render = if args.json { Render::Silent } else { Render::Quiet };
    if let (Some(plan), None, Some(task)) = (&extras.plan, &resume, args.task()) {
        let outcome = rt.block_on(async {
            let cancel = CancellationToken::new();
            cancel_on_ctrl_c(cancel.clone());
            crate::planned::run(
                &agent,
                plan,
                task,
                conversation.clone(),
                render,
                &ctx.config.data_dir,
                cancel,
            )
            .await
        })?;
        let styled = rt.block_on(extras.restyle_plan(&agent, &outcome));
        if args.json {
            let mut out = serde_json::to_value(&outcome)?;
            // `{"status": "done", "summary": …}` at the top, not nested.
            if let Some(Value::Object(status)) =
                out.as_object_mut().and_then(|o| o.remove("status"))
            {
                for (k, v) in status {
                    out[k] = v;
                }
            }
            out["styled_answer"] = json!(styled);
            println!("{out}");
        } else {
            crate::planned::print_outcome(&outcome, styled.as_deref());
        }
        finish_background(&rt, &agent);
        export_traces(&rt, &ctx.store);
        crate::anchor::record(&ctx.config.data_dir, &ctx.store);
        return Ok(crate::planned::exit_code(&outcome));
    }
    let session = rt.block_on(async {
        let cancel = CancellationToken::new();
        cancel_on_ctrl_c(cancel.clone());
        drive(
            &agent,
            &ctx.config.data_dir,
            args.task(),
            resume.as_deref(),
            conversation.clone(),
            render,
            cancel,
        )
        .await
    });
    let session = session.map_err(run_error);
    let Driven { session, denied, restored, checks } = match session {
        Ok(s) => s,
        Err(e) => {
            crate::anchor::record(&ctx.config.data_dir, &ctx.store);
            return Err(e);
        }
    };
    // The persona rewords the answer shown; the journal keeps the run's own.
    let styled = rt.block_on(extras.restyle_run(&agent, &session));
    if args.json {
        let out = json!({
            "styled_answer": styled,
            "session_id": session.id,
            "conversation_id": session.conversation_id,
            "state": session.state,
            "answer": session.answer,
            "iterations": session.iterations,
            "usage": session.usage,
            "cost_usd": session.cost_usd,
            "error": session.error,
            "denied": denied,
            "restored": restored,
            "checks": checks,
        });
        println!("{out}");
    } else if let Some(styled) = &styled {
        println!("{styled}");
    } else {
        print_outcome(&session);
    }
    finish_background(&rt, &agent);
    export_traces(&rt, &ctx.store);
    crate::retention::after_run(ctx.config.traces, &ctx.store);
    crate::anchor::record(&ctx.config.data_dir, &ctx.store);
    Ok(exit_code_with(session.state, &denied))
}

/// A resumed run works where it started and under the same mode: the roots and mode recorded
/// in its `session.start` audit record. A `--root` or `--mode` that differs is an error naming
/// both; without them the recorded ones are used (returned as the arguments to load with).
/// Model and limits may change on resume; `session.resume` records what it goes on with.
fn resume_settings(ctx: &Context, global: &GlobalArgs, id: &str) -> CliResult<Option<GlobalArgs>> {
    let records = ctx.store.audit_for_session(id)?;
    let Some(start) = records.iter().find(|r| r.kind == "session.start") else { return Ok(None) };
    let payload = &start.payload;
    let roots: Vec<std::path::PathBuf> = payload["roots"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(std::path::PathBuf::from).collect())
        .unwrap_or_default();
    let mode = payload["mode"].as_str().map(str::to_owned);
    let usage = |what: String| CliError { code: crate::exit::USAGE, error: anyhow::anyhow!(what) };
    let shown = |r: &[std::path::PathBuf]| {
        r.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    };
    if !roots.is_empty() && !ctx.config.roots.is_empty() && !global.roots.is_empty() {
        let real = |r: &std::path::PathBuf| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone());
        let mut was: Vec<_> = roots.iter().map(real).collect();
        let mut now: Vec<_> = ctx.config.roots.iter().map(real).collect();
        was.sort();
        now.sort();
        if was != now {
            return Err(usage(format!(
                "session {id} ran with the roots {}, but this resume names {}; resume with the \
                 same --root (or without --root to use the recorded ones)",
                shown(&roots),
                shown(&ctx.config.roots)
            )));
        }
    }
    if let (Some(was), Some(now)) = (&mode, &global.mode)
        && was != now
    {
        return Err(usage(format!(
            "session {id} ran in {was} mode, but this resume asks for {now}; resume in {was} \
             mode (or without --mode)"
        )));
    }
    // Without --mode the recorded mode is used, unless ARIA_MODE or [policy] mode asks for a
    // stricter one: a resume never quietly does more than the configuration allows.
    if let Some(was) = mode.as_deref().and_then(aria_api::ApprovalMode::parse)
        && global.mode.is_none()
        && strictness(ctx.config.mode) > strictness(was)
    {
        let now = ctx.config.mode.as_str();
        return Err(usage(format!(
            "session {id} ran in {} mode, but ARIA_MODE or [policy] mode now says {now}; resume \
             with --mode {} to continue it as it started, or start a new run",
            was.as_str(),
            was.as_str()
        )));
    }
    // A dry run resumed for real would change what it only described; a real run resumed as a
    // dry run would end `done` without its changes.
    if let Some(was) = payload["dry_run"].as_bool()
        && was != ctx.config.dry_run
    {
        return Err(usage(if was {
            format!("session {id} was a dry run; resume it with --dry-run, or start a new run")
        } else {
            format!(
                "session {id} was a real run; a --dry-run resume would end it without its \
                 changes. Resume it without --dry-run, or start a new run with --dry-run"
            )
        }));
    }
    if global.roots.is_empty()
        && !roots.is_empty()
        && !ctx.config.roots.is_empty()
        && shown(&roots) != shown(&ctx.config.roots)
    {
        eprintln!(
            "note: session {id} resumes in its own roots {} (ARIA_ROOTS or [scope] roots name {})",
            shown(&roots),
            shown(&ctx.config.roots)
        );
    }
    if global.roots.is_empty() && !roots.is_empty() || global.mode.is_none() && mode.is_some() {
        let mut again = global.clone();
        if again.roots.is_empty() {
            again.roots = roots;
        }
        if again.mode.is_none() {
            again.mode = mode;
        }
        return Ok(Some(again));
    }
    Ok(None)
}

/// How much an approval mode holds back: read_only > supervised > governed.
fn strictness(mode: aria_api::ApprovalMode) -> u8 {
    match mode {
        aria_api::ApprovalMode::Governed => 0,
        aria_api::ApprovalMode::Supervised => 1,
        aria_api::ApprovalMode::ReadOnly => 2,
    }
}

/// How long a command waits, after its answer is out, for memory extraction to finish: a small
/// budget that a model server meets for a short turn (the embedded model does not extract in
/// one-shot commands). What does not finish in it is dropped quietly (interactive chat, which
/// extracts while the user types, keeps everything).
pub const BACKGROUND_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Lets background work (memory extraction) finish before the process exits; the answer has
/// already been printed, so this never delays it by more than [`BACKGROUND_GRACE`].
pub fn finish_background(rt: &tokio::runtime::Runtime, agent: &Agent) {
    if !rt.block_on(agent.finish_background(BACKGROUND_GRACE)) {
        tracing::info!(
            "memory extraction did not finish within {} s of the answer and was stopped",
            BACKGROUND_GRACE.as_secs()
        );
    }
}

/// Sends the runs that ended to OpenTelemetry when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
/// `…_TRACES_ENDPOINT`) is set: one pass, at most 5 s; a failure is a warning, never the run's.
pub fn export_traces(rt: &tokio::runtime::Runtime, store: &aria_store::Store) {
    use aria_gateway::otlp;
    let var = |k: &str| std::env::var(k).ok();
    let Some(url) = otlp::endpoint_from_env(var) else { return };
    let exporter = match otlp::Exporter::new(&url, otlp::headers_from_env(var)) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("warning: {e}; runs are not exported");
            return;
        }
    };
    let pass = async {
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            otlp::export_pending(store, &exporter),
        )
        .await
    };
    match rt.block_on(pass) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => eprintln!("warning: OpenTelemetry export: {e}"),
        Err(_) => eprintln!("warning: OpenTelemetry export took over 5 s and was stopped"),
    }
}

/// The human ending of a run: the answer on stdout, anything else on stderr.
pub fn print_outcome(session: &SessionRecord) {
    match session.state {
        SessionState::Done => {
            if let Some(answer) = &session.answer {
                println!("{answer}");
            }
        }
        SessionState::Cancelled => eprintln!("cancelled (session {})", session.id),
        _ => {
            eprintln!(
                "error: the run failed: {}",
                session.error.as_deref().unwrap_or("no reason was recorded")
            );
            eprintln!("session {}: resume it with `aria run --resume {}`", session.id, session.id);
        }
    }
}
