//! What a scheduled job does, inside the daemon: the [`JobRunner`] that the
//! scheduler hands each claimed slot to.
//!
//! Actions (the job's `action` JSON, by `kind`):
//! - `notify {message}`: the message is the notification (a reminder);
//! - `agent {prompt, max_cost_usd?}`: the prompt runs as a task in a new conversation, like any
//!   front end's message, under the job's own cost cap when it has one; its answer is the
//!   notification. Nobody can be asked during a scheduled run, so a call that needs approval is
//!   denied. Before it starts, a run that the day's or month's cap would not allow (its own cap,
//!   or any spend at all when it has none) is **skipped** with a notification, never run "just
//!   this once";
//! - `profile {profile, root}`: a command profile (`run_tests`, `lint_project`, a configured
//!   `[profiles.NAME]`) runs in the root, in the sandbox like every profile; its result is the
//!   notification. Only a job a person created may run one;
//! - `digest {root}`: what changed in the root since the job's last run — files modified (the
//!   root's ignore files respected) and, in a git repository, the commits;
//! - `heartbeat`: operations, failed runs, jobs run and skipped, snapshots taken since the last
//!   heartbeat, model spend, uptime, and the audit chain's head to keep elsewhere.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aria_api::ToolContext;
use aria_scheduler::scheduler::{JobRun, RunError, RunFuture, RunOutput, Runner};
use aria_store::Job;
use serde_json::json;

use crate::Gateway;
use crate::runs::{Channel, RunHub, Start};

/// Runs the actions of scheduled jobs through the daemon.
#[derive(Debug, Clone)]
pub struct JobRunner {
    pub gateway: Arc<Gateway>,
}

/// What the actions other than `agent` need: no model. A process without an agent (`aria
/// schedule run` of a reminder, heartbeat, digest or profile) runs them with [`LocalRunner`].
#[derive(Debug, Clone)]
pub struct JobContext {
    pub store: Arc<aria_store::Store>,
    pub notifications: Arc<crate::notify::Notifications>,
    /// The roots a digest or profile may work in.
    pub roots: Vec<String>,
    /// The tools a profile job may name (the command profiles among them).
    pub tools: Vec<Arc<dyn aria_api::Tool>>,
}

impl JobContext {
    fn of(gateway: &Gateway) -> JobContext {
        let registry = gateway.agent.tools();
        JobContext {
            store: gateway.store.clone(),
            notifications: gateway.notifications.clone(),
            roots: gateway.agent.config().roots.clone(),
            tools: registry.specs().iter().filter_map(|s| registry.get(&s.name).cloned()).collect(),
        }
    }
}

/// Runs every action but `agent` without a model (see [`JobContext`]).
#[derive(Debug, Clone)]
pub struct LocalRunner {
    pub context: JobContext,
}

impl Runner for LocalRunner {
    fn run(&self, run: JobRun) -> RunFuture {
        let context = self.context.clone();
        Box::pin(async move {
            if run.job.action["kind"] == "agent" {
                return Err(RunError::Failed(format!(
                    "job {} runs a prompt, which needs the agent; run it in `aria serve`",
                    run.job.name
                )));
            }
            without_model(&context, &run.job).await
        })
    }
}

/// The actions that need no model.
async fn without_model(context: &JobContext, job: &Job) -> Result<RunOutput, RunError> {
    let action = &job.action;
    let text = |key: &str| action[key].as_str().unwrap_or_default().to_owned();
    let output = |text: String| RunOutput { text, session_id: None };
    match action["kind"].as_str() {
        Some("notify") => Ok(output(text("message"))),
        Some("profile") => profile(context, job).await.map(output),
        Some("digest") => {
            let root = inside_roots(&context.roots, &text("root"))?;
            let since = job.last_completed_slot.as_deref().unwrap_or(&job.created_at);
            digest(root, since).await.map(output)
        }
        Some("heartbeat") => heartbeat_text(
            &context.store,
            context.notifications.uptime(),
            job.last_completed_slot.as_deref(),
        )
        .map(output)
        .map_err(RunError::Failed),
        other => Err(RunError::Failed(format!(
            "this version of aria cannot run a job whose action is {other:?}; delete it with \
             `aria schedule delete {}`",
            job.name
        ))),
    }
}

/// Cancels the run when the scheduler drops its future (the job timed out).
struct CancelOnDrop(Arc<RunHub>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.0.is_finished() {
            self.0.cancel.cancel();
        }
    }
}

impl Runner for JobRunner {
    fn run(&self, run: JobRun) -> RunFuture {
        let gateway = self.gateway.clone();
        Box::pin(async move {
            let job = &run.job;
            if job.action["kind"] == "agent" {
                let cap = job.action["max_cost_usd"].as_f64();
                check_caps(&gateway, cap)?;
                let prompt = job.action["prompt"].as_str().unwrap_or_default().to_owned();
                return agent(&gateway, &job.name, prompt, cap).await;
            }
            without_model(&JobContext::of(&gateway), job).await
        })
    }
}

/// Skips a run that the day's or month's cost cap would not allow. `cap`: the job's own cap
/// (what the run may spend at most); without one, any spend at all must still be allowed.
/// Free models (no price) are never skipped.
fn check_caps(gateway: &Gateway, cap: Option<f64>) -> Result<(), RunError> {
    let config = gateway.agent.config();
    let (Some(_), Some(guard)) = (config.price, &config.spend_guard) else { return Ok(()) };
    let estimate = cap.unwrap_or(f64::MIN_POSITIVE).max(f64::MIN_POSITIVE);
    guard.check(estimate).map(|_| ()).map_err(|why| {
        RunError::Skipped(match cap {
            Some(cap) => format!("its cost cap of USD {cap:.2} does not fit under the caps: {why}"),
            None => why,
        })
    })
}

async fn agent(
    gateway: &Arc<Gateway>,
    job: &str,
    prompt: String,
    cap: Option<f64>,
) -> Result<RunOutput, RunError> {
    let conversation = gateway
        .store
        .create_conversation(&format!("scheduled: {job}"))
        .map_err(|e| format!("cannot open a conversation for the run: {e}"))?;
    let hub = gateway.runs.start(
        gateway.clone(),
        conversation.id,
        Start::Job(prompt, cap),
        Channel::OpenAi,
    );
    let guard = CancelOnDrop(hub.clone());
    let mut events = hub.follow();
    while events.recv().await.is_some() {}
    let reply = guard.0.reply().ok_or("the run ended without a reply")?;
    match (reply.state.as_str(), reply.answer) {
        ("done", Some(answer)) => {
            Ok(RunOutput { text: answer, session_id: Some(reply.session_id) })
        }
        (state, _) => Err(RunError::Failed(format!(
            "the run {} ended {state}{}",
            reply.session_id,
            reply.error.map(|e| format!(": {e}")).unwrap_or_default()
        ))),
    }
}

/// `root` when it is one of the daemon's roots or inside one (the daemon reads nothing else).
fn inside_roots(roots: &[String], root: &str) -> Result<PathBuf, RunError> {
    let path = std::fs::canonicalize(root)
        .map_err(|e| RunError::Failed(format!("the job's root {root} cannot be read: {e}")))?;
    let inside = roots
        .iter()
        .any(|r| std::fs::canonicalize(r).map(|r| path.starts_with(r)).unwrap_or(false));
    if !inside {
        return Err(RunError::Failed(format!(
            "{root} is not inside the daemon's roots ({}); start aria serve with --root {root} \
             or change the job",
            roots.join(", ")
        )));
    }
    Ok(path)
}

/// Runs the job's profile through the profile's own tool (sandboxed, with its timeout).
async fn profile(context: &JobContext, job: &Job) -> Result<String, RunError> {
    if job.created_by != "user" {
        return Err(RunError::Failed(format!(
            "job {} was created by {}, and only a person may schedule a command profile; \
             recreate it with `aria schedule add`",
            job.name, job.created_by
        )));
    }
    let name = job.action["profile"].as_str().unwrap_or_default();
    let root = job.action["root"].as_str().unwrap_or_default();
    let root = inside_roots(&context.roots, root)?;
    let tool = context.tools.iter().find(|t| t.spec().name == name).ok_or_else(|| {
        RunError::Failed(format!(
            "there is no profile {name} in this daemon (its tools: run_tests, lint_project, \
             build_project and the [profiles] of aria.toml)"
        ))
    })?;
    let args = json!({"path": root.display().to_string()});
    let ctx = ToolContext { session_id: format!("job:{}", job.name), dry_run: false };
    let result = tool.call(args.clone(), &ctx).await;
    let (outcome, text) = match &result {
        Ok(out) => ("ok", out.content.clone()),
        Err(e) => ("failed", e.to_string()),
    };
    let audit = aria_api::AuditEvent::new(
        None,
        "scheduler",
        "job.profile",
        json!({"job": job.name, "profile": name, "args": args, "outcome": outcome}),
    );
    if let Err(e) = context.store.audit_append(audit) {
        tracing::error!(error = %e, "cannot audit a scheduled profile run");
    }
    let text = context.store.redact_text(&tail(&text, 3_000));
    match result {
        Ok(_) => Ok(format!("{name} in {}:\n{text}", root.display())),
        Err(_) => Err(RunError::Failed(format!("{name} in {}: {text}", root.display()))),
    }
}

/// The last `max` characters of `text`, on a line boundary when there is one.
fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().skip(count - max).collect();
    let cut = cut.split_once('\n').map_or(cut.as_str(), |(_, rest)| rest);
    format!("…\n{cut}")
}

/// Files listed by name in a digest; the rest are counted.
const DIGEST_FILES: usize = 30;

/// What changed in `root` since `since` (RFC 3339): files modified after it (newest first, the
/// root's ignore files respected, `.git` skipped) and, in a git repository, its commits.
pub async fn digest(root: PathBuf, since: &str) -> Result<String, RunError> {
    let since_at: jiff::Timestamp = since.parse().map_err(|e| {
        RunError::Failed(format!("the job's last run {since:?} is not a time: {e}"))
    })?;
    // File systems stamp with a coarse clock (a few milliseconds behind): a second of slack
    // lists a file changed right at the last run twice rather than never.
    let since_time = SystemTime::from(since_at) - Duration::from_secs(1);
    let walk_root = root.clone();
    let mut files = tokio::task::spawn_blocking(move || changed_files(&walk_root, since_time))
        .await
        .map_err(|e| RunError::Failed(format!("the file walk stopped: {e}")))?;
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let commits = if root.join(".git").exists() {
        let (dir, since) = (root.clone(), since_at.as_second());
        tokio::task::spawn_blocking(move || {
            aria_tools::tools::git_log::commits_since(&dir, since, 20)
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
        .unwrap_or_else(|why| vec![format!("(git log: {why})")])
    } else {
        Vec::new()
    };
    let when = since_at.strftime("%Y-%m-%d %H:%M UTC");
    if files.is_empty() && commits.is_empty() {
        return Ok(format!("Nothing changed in {} since {when}.", root.display()));
    }
    let mut out = format!(
        "What changed in {} since {when}: {} file{} modified",
        root.display(),
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    if !commits.is_empty() {
        out.push_str(&format!(", {} commit{}", commits.len(), plural(commits.len())));
    }
    out.push('.');
    for (path, _) in files.iter().take(DIGEST_FILES) {
        out.push_str(&format!("\n  {path}"));
    }
    if files.len() > DIGEST_FILES {
        out.push_str(&format!("\n  … and {} more", files.len() - DIGEST_FILES));
    }
    if !commits.is_empty() {
        out.push_str("\nCommits:");
        for commit in &commits {
            out.push_str(&format!("\n  {commit}"));
        }
    }
    Ok(out)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn changed_files(root: &Path, since: SystemTime) -> Vec<(String, SystemTime)> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(modified) = entry.metadata().ok().and_then(|m| m.modified().ok()) else {
            continue;
        };
        if modified > since {
            let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
            out.push((rel.display().to_string(), modified));
        }
    }
    out
}

/// The heartbeat: what happened since `since` (the last heartbeat; the last 24 hours when
/// there was none), spend, uptime and the audit chain's head.
pub fn heartbeat(gateway: &Gateway, since: Option<&str>) -> Result<String, String> {
    heartbeat_text(&gateway.store, gateway.notifications.uptime(), since)
}

/// [`heartbeat`] from its parts: the store and how long this process has run.
pub fn heartbeat_text(
    store: &aria_store::Store,
    uptime: Duration,
    since: Option<&str>,
) -> Result<String, String> {
    let since = match since {
        Some(since) => since.to_owned(),
        None => jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_hours(24))
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
            .to_string(),
    };
    let e = |e: aria_store::StoreError| e.to_string();
    let kinds = store.audit_kind_counts_since(&since).map_err(e)?;
    let count = |kind: &str| kinds.iter().find(|(k, _)| k == kind).map_or(0, |(_, n)| *n);
    let failed = store.sessions_in_state_since("failed", &since).map_err(e)?;
    let outcomes = store.job_outcomes_since(&since).map_err(e)?;
    let outcome = |o: &str| outcomes.iter().find(|(k, _)| k == o).map_or(0, |(_, n)| *n);
    // Finished runs: skipped ones did not run, running ones (this heartbeat) have not ended.
    let ran: u64 =
        outcomes.iter().filter(|(k, _)| k != "skipped" && k != "running").map(|(_, n)| n).sum();
    let today = store.spend_since(&aria_store::day_start_utc()).map_err(e)?;
    let month = store.spend_since(&aria_store::month_start_utc()).map_err(e)?;
    let secs = uptime.as_secs();
    let head = match store.audit_head().map_err(e)? {
        Some((seq, hash)) => format!(
            "Audit chain head: {seq}:{hash}\nKeep it somewhere else; `aria audit verify \
             --expect-head {seq}:{hash}` later shows whether the log was cut or rewritten."
        ),
        None => "The audit log is empty.".to_owned(),
    };
    let since_text = since
        .parse::<jiff::Timestamp>()
        .map_or_else(|_| since.clone(), |t| t.strftime("%Y-%m-%d %H:%M UTC").to_string());
    Ok(format!(
        "💓 Heartbeat — ARIA {}, up {}h {:02}m\nSince {since_text}: {} tool calls, {} refused, \
         {failed} failed run{}; jobs: {ran} ran ({} ok, {} failed, {} timed out, {} \
         interrupted), {} skipped; {} snapshot{} taken.\nModel spend: USD {today:.4} today, USD \
         {month:.4} this month.\n{head}",
        env!("CARGO_PKG_VERSION"),
        secs / 3600,
        secs / 60 % 60,
        count("tool.start"),
        count("tool.refused"),
        plural(usize::try_from(failed).unwrap_or(2)),
        outcome("ok"),
        outcome("failed"),
        outcome("timeout"),
        outcome("interrupted"),
        outcome("skipped"),
        count("tool.snapshot"),
        plural(usize::try_from(count("tool.snapshot")).unwrap_or(2)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end_on_a_line_boundary() {
        assert_eq!(tail("short", 10), "short");
        assert_eq!(tail("one\ntwo\nthree", 9), "…\nthree");
    }

    #[tokio::test]
    async fn a_digest_lists_files_changed_since_and_respects_ignore_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("old.txt"), "old").unwrap();
        let old = SystemTime::now() - Duration::from_secs(3_600);
        std::fs::File::options()
            .write(true)
            .open(root.join("old.txt"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        std::fs::write(root.join(".ignore"), "build/\n").unwrap();
        std::fs::create_dir(root.join("build")).unwrap();
        std::fs::write(root.join("build/out.o"), "x").unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/new.rs"), "fn main() {}").unwrap();
        let since = (jiff::Timestamp::now() - jiff::SignedDuration::from_mins(10)).to_string();
        let text = digest(root.to_owned(), &since).await.unwrap();
        assert!(text.contains("src/new.rs"), "{text}");
        assert!(!text.contains("old.txt"), "{text}");
        assert!(!text.contains("out.o"), "{text}");
        let later = (jiff::Timestamp::now() + jiff::SignedDuration::from_mins(10)).to_string();
        let text = digest(root.to_owned(), &later).await.unwrap();
        assert!(text.starts_with("Nothing changed"), "{text}");
    }
}
