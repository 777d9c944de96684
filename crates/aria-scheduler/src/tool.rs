//! `schedule_create`: the agent's way to make a job from what the user said ("every weekday
//! at 9 check my repo and tell me what changed"). The model turns the words into a cron
//! expression; this tool checks it with the same rules as `aria schedule add`
//! ([`crate::manage`]) and a person confirms every call ([`Tool::always_confirm`]), shown the
//! parsed schedule, its zone, the action and the next three fire times in that zone
//! ([`Tool::confirmation`]) — a job runs later, unattended, so nothing stands in for them.

use std::sync::Arc;

use aria_api::{Tier, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, ToolSpec};
use aria_store::Store;
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::cron::{Schedule, rfc3339_in, system_zone, zone};
use crate::manage::{self, Draft, ManageError, action_text, check_action, check_name};

/// The tool's name: a public interface.
pub const SCHEDULE_CREATE: &str = "schedule_create";

/// How many fire times the question and the result show.
const SHOWN_FIRES: usize = 3;

/// Makes a scheduled job, as the agent, with the roots of the runs that may create it.
#[derive(Debug)]
pub struct ScheduleCreate {
    spec: ToolSpec,
    store: Arc<Store>,
    roots: Vec<String>,
}

/// A checked request: what would be created, and when it would first run.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub name: String,
    pub cron: String,
    /// The IANA zone it runs in (the system's when none was given).
    pub tz: String,
    pub action: Value,
    /// The next fires after the planning instant, RFC 3339 with the zone's offset.
    pub fires: Vec<String>,
}

impl Planned {
    /// What the person is asked to confirm.
    pub fn question(&self) -> String {
        format!(
            "Create the scheduled job \"{}\", which `aria serve` then runs on its own, unasked:\n\
             schedule: {} in {}\n\
             action: {}\n\
             next runs: {}",
            self.name,
            self.cron,
            self.tz,
            action_text(&self.action),
            self.fires.join(", ")
        )
    }
}

impl ScheduleCreate {
    /// `roots`: the directories the job's runs may use (those of the run that creates it).
    pub fn new(store: Arc<Store>, roots: Vec<String>) -> ScheduleCreate {
        ScheduleCreate { spec: spec(), store, roots }
    }

    /// Checks `args` as of `now`: the name (free, one word), the expression, the zone and the
    /// action, and computes the next fire times. Nothing is written.
    pub fn plan(&self, args: &Value, now: Timestamp) -> Result<Planned, ManageError> {
        let planned = plan(args, now)?;
        if self.store.job(&planned.name)?.is_some() {
            return Err(ManageError::Duplicate(planned.name));
        }
        Ok(planned)
    }

    fn create(&self, args: &Value) -> Result<(Planned, aria_store::Job), ManageError> {
        let planned = self.plan(args, Timestamp::now())?;
        let created_by = match after_reading(args) {
            Some(tool) => format!("agent, after reading outside text ({tool})"),
            None => "agent".into(),
        };
        let job = manage::create(
            &self.store,
            Draft {
                name: planned.name.clone(),
                cron: planned.cron.clone(),
                tz: Some(planned.tz.clone()),
                action: planned.action.clone(),
                enabled: true,
                created_by,
                roots: self.roots.clone(),
            },
        )?;
        Ok((planned, job))
    }
}

/// The tool whose result brought outside text into the run that asks for this job: set by the
/// agent loop after the schema check (`after_reading`), never by the model.
fn after_reading(args: &Value) -> Option<&str> {
    args.get("after_reading").and_then(Value::as_str).filter(|t| !t.is_empty())
}

/// Checks `args` without the store (the name's availability is the store's to say).
pub fn plan(args: &Value, now: Timestamp) -> Result<Planned, ManageError> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let name = text("name").unwrap_or_default().trim().to_owned();
    check_name(&name)?;
    let schedule = Schedule::parse(text("cron").unwrap_or_default())?;
    let (tz_name, tz) = match text("tz").map(str::trim).filter(|t| !t.is_empty()) {
        Some(name) => (name.to_owned(), zone(name)?),
        None => system_zone(),
    };
    let action = match (text("prompt"), text("message")) {
        (Some(prompt), None) => json!({"kind": "agent", "prompt": prompt.trim()}),
        (None, Some(message)) => json!({"kind": "notify", "message": message.trim()}),
        _ => {
            return Err(ManageError::Invalid(
                "give exactly one of \"prompt\" (a task the agent runs at each fire) or \
                 \"message\" (a reminder sent as it is)"
                    .into(),
            ));
        }
    };
    let action = check_action(&action)?;
    let fires = schedule.fires_after(&tz, now, SHOWN_FIRES)?;
    Ok(Planned {
        name,
        cron: schedule.expr().to_owned(),
        tz: tz_name,
        action,
        fires: fires.iter().map(rfc3339_in).collect(),
    })
}

fn spec() -> ToolSpec {
    ToolSpec {
        name: SCHEDULE_CREATE.into(),
        description: "Create a scheduled job that ARIA runs on its own at the times of a cron \
            expression, e.g. when the user says \"every weekday at 9 check my repo and tell me \
            what changed\" (cron \"0 9 * * 1-5\", prompt \"check the repository and tell me what \
            changed\") or \"remind me every Friday at 17:30 to send the report\" (cron \
            \"30 17 * * 5\", message \"send the report\"). The user is always asked to confirm, \
            shown the schedule and its next three runs."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "A short one-word name for the job: letters, digits, - _ or . (like weekday-repo-check)"
                },
                "cron": {
                    "type": "string",
                    "description": "Five fields: minute hour day-of-month month day-of-week (0 9 * * 1-5 = weekdays at 09:00; */15 * * * * = every 15 minutes), or @hourly, @daily, @weekly, @monthly, @yearly"
                },
                "tz": {
                    "type": "string",
                    "description": "IANA time zone the times are in, like Europe/Berlin; leave out for this computer's zone"
                },
                "prompt": {
                    "type": "string",
                    "description": "For a job that runs the agent: the task, as the user would ask it"
                },
                "message": {
                    "type": "string",
                    "description": "For a reminder: the text sent to the user at each run"
                }
            },
            "required": ["name", "cron"],
            "additionalProperties": false
        }),
    }
}

/// A refused request as the model sees it: what to fix.
fn tool_error(e: ManageError) -> ToolError {
    match e {
        ManageError::Store(e) => ToolError::Fatal { message: format!("the job store failed: {e}") },
        other => ToolError::failed(format!("no job was created: {other}")),
    }
}

impl Tool for ScheduleCreate {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// A job acts later, unattended, with the run's roots: not undone by a snapshot.
    fn tier(&self, _args: &Value) -> Tier {
        Tier::Irreversible
    }

    fn always_confirm(&self) -> bool {
        true
    }

    fn confirmation(&self, args: &Value) -> Result<Option<String>, ToolError> {
        let planned = self.plan(args, Timestamp::now()).map_err(tool_error)?;
        let warning = after_reading(args).map_or_else(String::new, |tool| {
            format!(
                "\nNote: the model proposes this after reading outside text (the result of \
                 {tool}); make sure it is what you asked for."
            )
        });
        Ok(Some(format!("{}{warning}", planned.question())))
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            if ctx.dry_run {
                let planned = self.plan(&args, Timestamp::now()).map_err(tool_error)?;
                return Ok(ToolOutput::text(format!("[dry run] would: {}", planned.question())));
            }
            let (planned, job) = self.create(&args).map_err(tool_error)?;
            let content = format!(
                "Created the job {} (runs under `aria serve`): {} in {}, {}. Next runs: {}. \
                 The user can see it with `aria schedule show {}` and remove it with \
                 `aria schedule delete {}`.",
                job.name,
                job.cron,
                job.tz,
                action_text(&job.action),
                planned.fires.join(", "),
                job.name,
                job.name
            );
            Ok(ToolOutput::text(content).with_details(manage::job_json(&job)))
        })
    }
}

#[cfg(test)]
mod tests;
