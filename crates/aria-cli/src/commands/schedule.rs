//! `aria schedule …`: the fire-time calculator (`preview`, pure), the jobs that `aria serve`
//! runs (`add`, `list`, `show`, `edit`, `enable`, `disable`, `delete`, `history`) and `run`
//! (one job now, in this process). What an expression means is `aria_scheduler::cron`'s; the
//! checks and shapes of a job are `aria_scheduler::manage`'s, shared with the HTTP API and
//! Telegram; the rows are `aria_store`'s.

use std::path::PathBuf;
use std::sync::Arc;

use aria_gateway::jobs::JobContext;
use aria_gateway::notify::{Notifications, Push};
use aria_gateway::telegram::QueuedPush;
use aria_scheduler::cron::{CronError, Schedule, rfc3339_in, system_zone, zone};
use aria_scheduler::manage::{self, Changes, Draft, ManageError};
use aria_scheduler::scheduler::NoticeKind;
use aria_store::{Job, Store};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};

use super::run::Context;
use crate::app;
use crate::cli::{GlobalArgs, ScheduleAction, ScheduleCommand};
use crate::config::Config;
use crate::exit::{CliError, CliResult, FAILED, OK};

pub fn schedule(global: &GlobalArgs, command: ScheduleCommand) -> CliResult<u8> {
    let open = || -> CliResult<(Config, Arc<Store>)> {
        let config = app::load_config(global)?;
        let store = app::open_store(&config, app::redactor(&config))?;
        Ok((config, store))
    };
    match command {
        ScheduleCommand::Preview { cron, tz, after, count, json } => {
            preview(&cron, tz.as_deref(), after.as_deref(), count, json)
        }
        ScheduleCommand::Add { name, cron, tz, action, disabled } => {
            let (config, store) = open()?;
            // The job keeps these roots for every run: never an implicit home directory.
            app::require_work_root(&config)?;
            let action = action_json(&action, &config)?.ok_or_else(|| {
                CliError::config(anyhow::anyhow!(
                    "say what the job does: --prompt TEXT, --message TEXT, --profile NAME, \
                     --digest or --heartbeat"
                ))
            })?;
            let roots = config.roots.iter().map(|r| r.display().to_string()).collect();
            add(
                &store,
                Draft {
                    name,
                    cron,
                    tz,
                    action,
                    enabled: !disabled,
                    created_by: "user".into(),
                    roots,
                },
            )
        }
        ScheduleCommand::List { json } => list(&open()?.1, json),
        ScheduleCommand::Show { name, json } => show(&open()?.1, &name, json),
        ScheduleCommand::Edit { name, cron, tz, action } => {
            let (config, store) = open()?;
            let action = action_json(&action, &config)?;
            edit(&store, &name, Changes { cron, tz, action, enabled: None })
        }
        ScheduleCommand::Enable { name } => set_enabled(&open()?.1, &name, true),
        ScheduleCommand::Disable { name } => set_enabled(&open()?.1, &name, false),
        ScheduleCommand::Delete { name } => {
            open()?.1.job_delete(&name, "user").map_err(|e| job_error(e.into()))?;
            println!("Deleted job {name} and its history.");
            Ok(OK)
        }
        ScheduleCommand::History { name, limit, json } => history(&open()?.1, &name, limit, json),
        ScheduleCommand::Run { name } => run_now(global, &name),
    }
}

/// A bad expression or zone: the user's to fix (exit 2).
fn cron_error(e: CronError) -> CliError {
    CliError::config(e)
}

/// A bad, unknown or duplicate job: the user's to fix (exit 2); the store failing: exit 1.
fn job_error(e: ManageError) -> CliError {
    match e {
        ManageError::Store(e) => CliError::failed(e),
        other => CliError::config(other),
    }
}

fn zone_or_system(tz: Option<&str>) -> Result<(String, TimeZone), CliError> {
    match tz {
        Some(name) => Ok((name.to_owned(), zone(name).map_err(cron_error)?)),
        None => Ok(system_zone()),
    }
}

fn preview(
    cron: &str,
    tz: Option<&str>,
    after: Option<&str>,
    count: u32,
    json: bool,
) -> CliResult<u8> {
    let schedule = Schedule::parse(cron).map_err(cron_error)?;
    let (_, tz) = zone_or_system(tz)?;
    let after = match after {
        Some(text) => text.parse::<Timestamp>().map_err(|e| {
            CliError::config(anyhow::anyhow!(
                "--after {text:?} is not an RFC 3339 instant ({e}); write it like \
                 2026-03-29T00:00:00+01:00 or 2026-03-28T23:00:00Z"
            ))
        })?,
        None => Timestamp::now(),
    };
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    let fires: Vec<String> = schedule
        .fires_after(&tz, after, count)
        .map_err(cron_error)?
        .iter()
        .map(rfc3339_in)
        .collect();
    if json {
        println!("{}", json!({ "fires": fires }));
    } else {
        for fire in fires {
            println!("{fire}");
        }
    }
    Ok(OK)
}

/// The action the flags describe (`None`: none given). A --profile or --digest job works in
/// --path, which must be inside a root (default: the first root).
fn action_json(action: &ScheduleAction, config: &Config) -> CliResult<Option<Value>> {
    let dir = || -> CliResult<String> {
        let root = config.roots.first().cloned().unwrap_or_else(|| PathBuf::from("."));
        let path = action.path.clone().unwrap_or(root);
        let path = std::fs::canonicalize(&path)
            .map_err(|e| CliError::config(anyhow::anyhow!("--path {}: {e}", path.display())))?;
        let inside = config
            .roots
            .iter()
            .any(|r| std::fs::canonicalize(r).is_ok_and(|r| path.starts_with(r)));
        if !inside {
            return Err(CliError::config(anyhow::anyhow!(
                "--path {} is outside the roots ({}); give a directory inside one, or --root",
                path.display(),
                config.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
            )));
        }
        Ok(path.display().to_string())
    };
    if action.max_cost_usd.is_some() && action.prompt.is_none() {
        return Err(CliError::config(anyhow::anyhow!(
            "--max-cost-usd is the cap of an agent job: give it with --prompt"
        )));
    }
    if action.path.is_some() && action.profile.is_none() && !action.digest {
        return Err(CliError::config(anyhow::anyhow!(
            "--path is the directory of a --profile or --digest job"
        )));
    }
    let value = if let Some(prompt) = &action.prompt {
        let mut value = json!({"kind": "agent", "prompt": prompt});
        if let Some(cap) = action.max_cost_usd {
            value["max_cost_usd"] = json!(cap);
        }
        value
    } else if let Some(message) = &action.message {
        json!({"kind": "notify", "message": message})
    } else if let Some(profile) = &action.profile {
        json!({"kind": "profile", "profile": profile, "root": dir()?})
    } else if action.digest {
        json!({"kind": "digest", "root": dir()?})
    } else if action.heartbeat {
        json!({"kind": "heartbeat"})
    } else {
        return Ok(None);
    };
    manage::check_action(&value).map(Some).map_err(job_error)
}

fn print_next(job: &Job) {
    match manage::next_fires(job, 3) {
        Ok(fires) if fires.is_empty() => println!("  next: never"),
        Ok(fires) => fires.iter().for_each(|f| println!("  next: {f}")),
        Err(why) => println!("  next: never ({why})"),
    }
}

fn edit(store: &Store, name: &str, changes: Changes) -> CliResult<u8> {
    let job = manage::edit(store, name, changes, "user").map_err(job_error)?;
    println!(
        "Changed job {} ({} in {}, {}).",
        job.name,
        job.cron,
        job.tz,
        manage::action_text(&job.action)
    );
    print_next(&job);
    Ok(OK)
}

fn add(store: &Store, draft: Draft) -> CliResult<u8> {
    let job = manage::create(store, draft).map_err(job_error)?;
    println!(
        "Added job {} ({} in {}, {}).",
        job.name,
        job.cron,
        job.tz,
        manage::action_text(&job.action)
    );
    print_next(&job);
    if !job.enabled {
        println!("It is disabled; enable it with `aria schedule enable {}`.", job.name);
    }
    Ok(OK)
}

fn list(store: &Store, json: bool) -> CliResult<u8> {
    let jobs = store.jobs()?;
    if json {
        let jobs: Vec<Value> = jobs.iter().map(manage::job_json).collect();
        println!("{}", serde_json::to_string_pretty(&jobs)?);
        return Ok(OK);
    }
    if jobs.is_empty() {
        println!(
            "No scheduled jobs. Add one with `aria schedule add NAME --cron EXPR --message TEXT`."
        );
        return Ok(OK);
    }
    for job in &jobs {
        println!("{}", manage::job_line(job));
    }
    Ok(OK)
}

fn find(store: &Store, name: &str) -> CliResult<Job> {
    manage::find(store, name).map_err(job_error)
}

fn show(store: &Store, name: &str, json: bool) -> CliResult<u8> {
    let job = find(store, name)?;
    let runs = store.job_history(job.id, 5)?;
    let next = manage::next_fires(&job, 3);
    if json {
        let mut value = manage::job_json(&job);
        value["next_runs"] = json!(next.clone().unwrap_or_default());
        value["last_runs"] = runs.iter().map(manage::run_json).collect();
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(OK);
    }
    println!("{}", job.name);
    println!("  schedule: {} in {}", job.cron, job.tz);
    println!("  action:   {}", manage::action_text(&job.action));
    println!("  enabled:  {}", if job.enabled { "yes" } else { "no" });
    println!("  roots:    {}", job.roots.join(", "));
    println!("  created:  {} by {}", job.created_at, job.created_by);
    match next {
        Ok(fires) => fires.iter().for_each(|f| println!("  next:     {f}")),
        Err(why) => println!("  next:     never ({why})"),
    }
    for run in &runs {
        println!("  ran:      {}", manage::run_line(run));
    }
    Ok(OK)
}

fn set_enabled(store: &Store, name: &str, enabled: bool) -> CliResult<u8> {
    let changes = Changes { enabled: Some(enabled), ..Changes::default() };
    manage::edit(store, name, changes, "user").map_err(job_error)?;
    println!("Job {name} is {}.", if enabled { "enabled" } else { "disabled" });
    Ok(OK)
}

fn history(store: &Store, name: &str, limit: usize, json: bool) -> CliResult<u8> {
    let job = find(store, name)?;
    let runs = store.job_history(job.id, limit)?;
    if json {
        let runs: Vec<Value> = runs.iter().map(manage::run_json).collect();
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(OK);
    }
    if runs.is_empty() {
        println!("Job {name} has not run yet.");
    }
    for run in &runs {
        println!("{}", manage::run_line(run));
    }
    Ok(OK)
}

/// Runs one job now in this process, through the same gateway and runner as `aria serve`,
/// and prints what the user is told. Exit 1 when the run failed, timed out or was skipped.
fn run_now(global: &GlobalArgs, name: &str) -> CliResult<u8> {
    let mut ctx = Context::load(global)?;
    let job = find(&ctx.store, name)?;
    // Only an agent job needs the model: a reminder, a heartbeat, a digest or a profile never
    // fetches or loads one.
    let needs_agent = job.action["kind"] == "agent";
    if needs_agent {
        app::settle_local_model(&mut ctx.config)?;
    }
    let runtime = super::run::runtime()?;
    runtime.block_on(async move {
        let Context { config, store, redactor } = ctx;
        // Telegram gets it through the outbox, for the daemon (now or at its next start).
        let queued: Option<Arc<dyn Push>> = (config.telegram.token.is_some()
            && !config.telegram.allowed_chat_ids.is_empty())
        .then(|| {
            Arc::new(QueuedPush::new(store.clone(), config.telegram.allowed_chat_ids.clone()))
                as Arc<dyn Push>
        });
        let (scheduler, gateway, hub) = if needs_agent {
            let security = aria_gateway::Security::new(None, true, Vec::new(), 0);
            let gateway = super::serve::gateway(global, &config, &store, &redactor, security)?;
            let hub = gateway.notifications.clone();
            (crate::scheduled::scheduler(&gateway, &config), Some(gateway), hub)
        } else {
            let settings = crate::scheduled::notify_settings(&config);
            let hub = Arc::new(Notifications::new(store.clone(), settings));
            let context = JobContext {
                store: store.clone(),
                notifications: hub.clone(),
                roots: config.roots.iter().map(|r| r.display().to_string()).collect(),
                tools: app::tools(&config)?,
            };
            (crate::scheduled::scheduler_without_agent(context, &config), None, hub)
        };
        if let Some(push) = &queued {
            hub.attach(Arc::downgrade(push));
        }
        let notice = scheduler.run_now(name).await.map_err(|e| match e {
            aria_scheduler::scheduler::RunNowError::Store(e) => CliError::failed(e),
            other => CliError::config(other),
        })?;
        if let Some(gateway) = gateway {
            gateway.agent.finish_background(std::time::Duration::from_secs(10)).await;
        }
        println!("{}", notice.text);
        Ok(match notice.kind {
            NoticeKind::Completed | NoticeKind::Heartbeat => OK,
            _ => FAILED,
        })
    })
}
