//! `aria schedule …`: the fire-time calculator (`preview`, pure) and the jobs that
//! `aria serve` runs (`add`, `list`, `show`, `enable`, `disable`, `delete`, `history`).
//! What an expression means is `aria_scheduler::cron`'s; the rows are `aria_store`'s.

use std::sync::Arc;

use aria_scheduler::cron::{CronError, Schedule, rfc3339_in, system_zone, zone};
use aria_store::{Job, NewJob, SlotRun, Store, StoreError};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};

use crate::app;
use crate::cli::{GlobalArgs, ScheduleAction, ScheduleCommand};
use crate::exit::{CliError, CliResult, OK};

pub fn schedule(global: &GlobalArgs, command: ScheduleCommand) -> CliResult<u8> {
    let open = || -> CliResult<(Vec<String>, Arc<Store>)> {
        let config = app::load_config(global)?;
        let store = app::open_store(&config, app::redactor(&config))?;
        Ok((config.roots.iter().map(|r| r.display().to_string()).collect(), store))
    };
    match command {
        ScheduleCommand::Preview { cron, tz, after, count, json } => {
            preview(&cron, tz.as_deref(), after.as_deref(), count, json)
        }
        ScheduleCommand::Add { name, cron, tz, action, disabled } => {
            let (roots, store) = open()?;
            add(&store, name, &cron, tz.as_deref(), &action, !disabled, roots)
        }
        ScheduleCommand::List { json } => list(&open()?.1, json),
        ScheduleCommand::Show { name, json } => show(&open()?.1, &name, json),
        ScheduleCommand::Edit { name, cron, tz, prompt, message } => {
            let action = ScheduleAction { prompt, message };
            edit(&open()?.1, &name, cron.as_deref(), tz.as_deref(), &action)
        }
        ScheduleCommand::Enable { name } => set_enabled(&open()?.1, &name, true),
        ScheduleCommand::Disable { name } => set_enabled(&open()?.1, &name, false),
        ScheduleCommand::Delete { name } => {
            open()?.1.job_delete(&name, "user").map_err(job_error)?;
            println!("Deleted job {name} and its history.");
            Ok(OK)
        }
        ScheduleCommand::History { name, limit, json } => history(&open()?.1, &name, limit, json),
    }
}

/// A bad expression or zone, an unknown or duplicate job: the user's to fix (exit 2).
fn cron_error(e: CronError) -> CliError {
    CliError::config(e)
}

fn job_error(e: StoreError) -> CliError {
    match e {
        StoreError::UnknownJob(_) | StoreError::DuplicateJob(_) => CliError::config(e),
        other => CliError::failed(other),
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

fn action_json(action: &ScheduleAction) -> Option<Value> {
    match (&action.prompt, &action.message) {
        (Some(prompt), _) => Some(json!({"kind": "agent", "prompt": prompt})),
        (None, Some(message)) => Some(json!({"kind": "notify", "message": message})),
        (None, None) => None,
    }
}

fn edit(
    store: &Store,
    name: &str,
    cron: Option<&str>,
    tz: Option<&str>,
    action: &ScheduleAction,
) -> CliResult<u8> {
    let action = action_json(action);
    if cron.is_none() && tz.is_none() && action.is_none() {
        return Err(CliError::config(anyhow::anyhow!(
            "nothing to change: give --cron, --tz, --prompt or --message"
        )));
    }
    let job = find(store, name)?;
    let cron = cron.map(Schedule::parse).transpose().map_err(cron_error)?;
    if let Some(tz) = tz {
        zone(tz).map_err(cron_error)?;
    }
    store
        .job_update(name, cron.as_ref().map(Schedule::expr), tz, action.as_ref(), "user")
        .map_err(job_error)?;
    let job = find(store, &job.name)?;
    println!(
        "Changed job {} ({} in {}, {}).",
        job.name,
        job.cron,
        job.tz,
        action_text(&job.action)
    );
    match next_runs(&job, 3) {
        Ok(fires) => fires.iter().for_each(|f| println!("  next: {f}")),
        Err(why) => println!("  next: never ({why})"),
    }
    Ok(OK)
}

fn add(
    store: &Store,
    name: String,
    cron: &str,
    tz: Option<&str>,
    action: &ScheduleAction,
    enabled: bool,
    roots: Vec<String>,
) -> CliResult<u8> {
    if name.trim().is_empty() || name.chars().any(char::is_whitespace) {
        return Err(CliError::config(anyhow::anyhow!(
            "a job name is one word without spaces (like daily-digest)"
        )));
    }
    let schedule = Schedule::parse(cron).map_err(cron_error)?;
    let (tz_name, tz) = zone_or_system(tz)?;
    let new = NewJob {
        name,
        cron: schedule.expr().to_owned(),
        tz: tz_name,
        // clap's group makes one of them required.
        action: action_json(action).unwrap_or(Value::Null),
        enabled,
        created_by: "user".into(),
        roots,
    };
    let job = store.job_create(&new).map_err(job_error)?;
    println!("Added job {} ({} in {}).", job.name, job.cron, job.tz);
    for fire in schedule.fires_after(&tz, Timestamp::now(), 3).map_err(cron_error)? {
        println!("  next: {}", rfc3339_in(&fire));
    }
    if !enabled {
        println!("It is disabled; enable it with `aria schedule enable {}`.", job.name);
    }
    Ok(OK)
}

/// The next fire of a job, as RFC 3339 in its zone, or why there is none.
fn next_runs(job: &Job, count: usize) -> Result<Vec<String>, String> {
    let schedule = Schedule::parse(&job.cron).map_err(|e| e.to_string())?;
    let tz = zone(&job.tz).map_err(|e| e.to_string())?;
    let fires = schedule.fires_after(&tz, Timestamp::now(), count).map_err(|e| e.to_string())?;
    Ok(fires.iter().map(rfc3339_in).collect())
}

fn job_json(job: &Job) -> Value {
    let next =
        if job.enabled { next_runs(job, 1).ok().and_then(|f| f.into_iter().next()) } else { None };
    json!({
        "name": job.name,
        "cron": job.cron,
        "tz": job.tz,
        "action": job.action,
        "enabled": job.enabled,
        "created_by": job.created_by,
        "roots": job.roots,
        "next_run": next,
        "last_completed_slot": job.last_completed_slot,
        "created_at": job.created_at,
    })
}

fn action_text(action: &Value) -> String {
    match action["kind"].as_str() {
        Some("agent") => format!("agent: {}", action["prompt"].as_str().unwrap_or("")),
        Some("notify") => format!("notify: {}", action["message"].as_str().unwrap_or("")),
        _ => action.to_string(),
    }
}

fn list(store: &Store, json: bool) -> CliResult<u8> {
    let jobs = store.jobs()?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&jobs.iter().map(job_json).collect::<Vec<_>>())?
        );
        return Ok(OK);
    }
    if jobs.is_empty() {
        println!(
            "No scheduled jobs. Add one with `aria schedule add NAME --cron EXPR --message TEXT`."
        );
        return Ok(OK);
    }
    for job in &jobs {
        let next = match (job.enabled, next_runs(job, 1)) {
            (false, _) => "disabled".to_owned(),
            (true, Ok(f)) => f.into_iter().next().unwrap_or_default(),
            (true, Err(why)) => format!("never ({why})"),
        };
        println!(
            "{}  {}  {}  next {}  {}",
            job.name,
            job.cron,
            job.tz,
            next,
            action_text(&job.action)
        );
    }
    Ok(OK)
}

fn find(store: &Store, name: &str) -> CliResult<Job> {
    store.job(name)?.ok_or_else(|| job_error(StoreError::UnknownJob(name.to_owned())))
}

fn run_json(run: &SlotRun) -> Value {
    json!({
        "slot": run.slot,
        "claimed_at": run.claimed_at,
        "finished_at": run.finished_at,
        "outcome": run.outcome,
        "missed": run.missed,
        "detail": run.detail,
        "session_id": run.session_id,
    })
}

fn run_line(run: &SlotRun) -> String {
    let outcome = run.outcome.as_deref().unwrap_or("running");
    let missed =
        if run.missed > 0 { format!(" ({} missed before)", run.missed) } else { String::new() };
    let detail = run.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
    format!("{}  {outcome}{missed}{detail}", run.slot)
}

fn show(store: &Store, name: &str, json: bool) -> CliResult<u8> {
    let job = find(store, name)?;
    let runs = store.job_history(job.id, 5)?;
    let next = next_runs(&job, 3);
    if json {
        let mut value = job_json(&job);
        value["next_runs"] = json!(next.clone().unwrap_or_default());
        value["last_runs"] = runs.iter().map(run_json).collect();
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(OK);
    }
    println!("{}", job.name);
    println!("  schedule: {} in {}", job.cron, job.tz);
    println!("  action:   {}", action_text(&job.action));
    println!("  enabled:  {}", if job.enabled { "yes" } else { "no" });
    println!("  roots:    {}", job.roots.join(", "));
    println!("  created:  {} by {}", job.created_at, job.created_by);
    match next {
        Ok(fires) => fires.iter().for_each(|f| println!("  next:     {f}")),
        Err(why) => println!("  next:     never ({why})"),
    }
    for run in &runs {
        println!("  ran:      {}", run_line(run));
    }
    Ok(OK)
}

fn set_enabled(store: &Store, name: &str, enabled: bool) -> CliResult<u8> {
    store.job_set_enabled(name, enabled, "user").map_err(job_error)?;
    println!("Job {name} is {}.", if enabled { "enabled" } else { "disabled" });
    Ok(OK)
}

fn history(store: &Store, name: &str, limit: usize, json: bool) -> CliResult<u8> {
    let job = find(store, name)?;
    let runs = store.job_history(job.id, limit)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&runs.iter().map(run_json).collect::<Vec<_>>())?
        );
        return Ok(OK);
    }
    if runs.is_empty() {
        println!("Job {name} has not run yet.");
    }
    for run in &runs {
        println!("{}", run_line(run));
    }
    Ok(OK)
}
