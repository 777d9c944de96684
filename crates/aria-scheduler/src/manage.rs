//! Managing jobs: the checks and shapes that every front end shares — `aria schedule`, the
//! HTTP API (`/api/v1/schedules`), Telegram's `/schedule` and the `schedule_create` tool — so a
//! job is validated the same way wherever it is made, and described the same way wherever it
//! is shown.

use aria_store::{Job, NewJob, SlotRun, Store, StoreError};
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::cron::{CronError, Schedule, rfc3339_in, system_zone, zone};

/// The action kinds a job may have.
pub const ACTION_KINDS: &[&str] = &["agent", "notify", "profile", "digest", "heartbeat"];

/// Why a change to the jobs was refused.
#[derive(Debug, thiserror::Error)]
pub enum ManageError {
    /// The request is wrong; the text says how to fix it.
    #[error("{0}")]
    Invalid(String),
    #[error("there is no job named {0}; `aria schedule list` shows them")]
    Unknown(String),
    #[error("a job named {0} exists already; pick another name or edit it")]
    Duplicate(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for ManageError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownJob(name) => ManageError::Unknown(name),
            StoreError::DuplicateJob(name) => ManageError::Duplicate(name),
            other => ManageError::Store(other),
        }
    }
}

impl From<CronError> for ManageError {
    fn from(e: CronError) -> Self {
        ManageError::Invalid(e.to_string())
    }
}

/// A job name: one word of letters, digits, `-`, `_` or `.`, at most 64 characters.
pub fn check_name(name: &str) -> Result<(), ManageError> {
    let ok = !name.is_empty()
        && name.chars().count() <= 64
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ManageError::Invalid(format!(
            "{name:?} is not a job name: use one word of letters, digits, - _ or . (like \
             daily-digest), at most 64 characters"
        )))
    }
}

/// Checks an action: a known kind with what it needs. Returns it as it is stored.
pub fn check_action(action: &Value) -> Result<Value, ManageError> {
    let kind = action["kind"].as_str().unwrap_or_default();
    let invalid = |text: String| Err(ManageError::Invalid(text));
    let need = |key: &str| -> Result<(), ManageError> {
        match action[key].as_str() {
            Some(v) if !v.trim().is_empty() => Ok(()),
            _ => Err(ManageError::Invalid(format!("a {kind} job needs a non-empty \"{key}\""))),
        }
    };
    match kind {
        "agent" => {
            need("prompt")?;
            if let Some(cap) = action.get("max_cost_usd")
                && !cap.as_f64().is_some_and(|c| c.is_finite() && c > 0.0)
            {
                return invalid("max_cost_usd is a positive number of US dollars".into());
            }
        }
        "notify" => need("message")?,
        "profile" => {
            need("profile")?;
            need("root")?;
        }
        "digest" => need("root")?,
        "heartbeat" => {}
        other => {
            return invalid(format!(
                "unknown action kind {other:?}: use one of {}",
                ACTION_KINDS.join(", ")
            ));
        }
    }
    Ok(action.clone())
}

/// A job to make, as a front end received it.
#[derive(Debug, Clone)]
pub struct Draft {
    pub name: String,
    pub cron: String,
    /// IANA zone; `None`: the system's.
    pub tz: Option<String>,
    pub action: Value,
    pub enabled: bool,
    /// `user`, `agent` or `system`.
    pub created_by: String,
    pub roots: Vec<String>,
}

/// Checks a draft and makes the job (audited by the store). Returns it.
pub fn create(store: &Store, draft: Draft) -> Result<Job, ManageError> {
    check_name(&draft.name)?;
    let schedule = Schedule::parse(&draft.cron)?;
    let tz = match draft.tz {
        Some(name) => {
            zone(&name)?;
            name
        }
        None => system_zone().0,
    };
    let action = check_action(&draft.action)?;
    Ok(store.job_create(&NewJob {
        name: draft.name,
        cron: schedule.expr().to_owned(),
        tz,
        action,
        enabled: draft.enabled,
        created_by: draft.created_by,
        roots: draft.roots,
    })?)
}

/// What to change in a job (what is `None` stays).
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub cron: Option<String>,
    pub tz: Option<String>,
    pub action: Option<Value>,
    pub enabled: Option<bool>,
}

/// Checks and applies `changes` to job `name` as `actor`. Returns the job as it is now.
pub fn edit(store: &Store, name: &str, changes: Changes, actor: &str) -> Result<Job, ManageError> {
    let Changes { cron, tz, action, enabled } = changes;
    if cron.is_none() && tz.is_none() && action.is_none() && enabled.is_none() {
        return Err(ManageError::Invalid(
            "nothing to change: give a schedule, a zone, an action or enabled".into(),
        ));
    }
    find(store, name)?;
    let cron = cron.as_deref().map(Schedule::parse).transpose()?;
    if let Some(tz) = &tz {
        zone(tz)?;
    }
    let action = action.as_ref().map(check_action).transpose()?;
    if cron.is_some() || tz.is_some() || action.is_some() {
        store.job_update(
            name,
            cron.as_ref().map(Schedule::expr),
            tz.as_deref(),
            action.as_ref(),
            actor,
        )?;
    }
    if let Some(enabled) = enabled {
        store.job_set_enabled(name, enabled, actor)?;
    }
    find(store, name)
}

/// Job `name`, or [`ManageError::Unknown`].
pub fn find(store: &Store, name: &str) -> Result<Job, ManageError> {
    store.job(name)?.ok_or_else(|| ManageError::Unknown(name.to_owned()))
}

/// The next `count` fires of a job after now, RFC 3339 in its zone, or why there are none.
pub fn next_fires(job: &Job, count: usize) -> Result<Vec<String>, String> {
    let schedule = Schedule::parse(&job.cron).map_err(|e| e.to_string())?;
    let tz = zone(&job.tz).map_err(|e| e.to_string())?;
    let fires = schedule.fires_after(&tz, Timestamp::now(), count).map_err(|e| e.to_string())?;
    Ok(fires.iter().map(rfc3339_in).collect())
}

/// A job as the API and `--json` show it.
pub fn job_json(job: &Job) -> Value {
    let next =
        if job.enabled { next_fires(job, 1).ok().and_then(|f| f.into_iter().next()) } else { None };
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

/// One run as the API and `--json` show it.
pub fn run_json(run: &SlotRun) -> Value {
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

/// An action in a few words (`agent: check the repo`).
pub fn action_text(action: &Value) -> String {
    let field = |key: &str| action[key].as_str().unwrap_or_default();
    match action["kind"].as_str() {
        Some("agent") => match action["max_cost_usd"].as_f64() {
            Some(cap) => format!("agent (cap USD {cap:.2}): {}", field("prompt")),
            None => format!("agent: {}", field("prompt")),
        },
        Some("notify") => format!("notify: {}", field("message")),
        Some("profile") => format!("profile {} in {}", field("profile"), field("root")),
        Some("digest") => format!("digest of {}", field("root")),
        Some("heartbeat") => "heartbeat".to_owned(),
        _ => action.to_string(),
    }
}

/// One line for a job in a list: name, schedule, zone, next run, action.
pub fn job_line(job: &Job) -> String {
    let next = match (job.enabled, next_fires(job, 1)) {
        (false, _) => "disabled".to_owned(),
        (true, Ok(f)) => f.into_iter().next().unwrap_or_else(|| "never".to_owned()),
        (true, Err(why)) => format!("never ({why})"),
    };
    let line = format!(
        "{}  {}  {}  next {}  {}",
        job.name,
        job.cron,
        job.tz,
        next,
        action_text(&job.action)
    );
    // A job the model proposed after reading outside text says so wherever it is listed.
    if job.created_by.contains("after reading") {
        format!("{line}  (created_by: {})", job.created_by)
    } else {
        line
    }
}

/// One line for a run in a history.
pub fn run_line(run: &SlotRun) -> String {
    let outcome = run.outcome.as_deref().unwrap_or("running");
    let missed =
        if run.missed > 0 { format!(" ({} missed before)", run.missed) } else { String::new() };
    let detail = run.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
    format!("{}  {outcome}{missed}{detail}", run.slot)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use aria_api::NoRedact;

    use super::*;

    fn store() -> Store {
        Store::open_in_memory(Arc::new(NoRedact)).unwrap()
    }

    fn draft(name: &str, cron: &str, action: Value) -> Draft {
        Draft {
            name: name.into(),
            cron: cron.into(),
            tz: Some("Europe/Berlin".into()),
            action,
            enabled: true,
            created_by: "user".into(),
            roots: vec![],
        }
    }

    #[test]
    fn names_and_actions_are_checked() {
        assert!(check_name("daily-digest_2.0").is_ok());
        for bad in ["", "two words", "a/b", &"x".repeat(65)] {
            assert!(matches!(check_name(bad), Err(ManageError::Invalid(_))), "{bad}");
        }
        assert!(check_action(&json!({"kind": "agent", "prompt": "check"})).is_ok());
        assert!(check_action(&json!({"kind": "agent", "prompt": " "})).is_err());
        assert!(check_action(&json!({"kind": "agent", "prompt": "x", "max_cost_usd": 0})).is_err());
        assert!(check_action(&json!({"kind": "profile", "profile": "run_tests"})).is_err());
        assert!(check_action(&json!({"kind": "digest", "root": "/r"})).is_ok());
        assert!(check_action(&json!({"kind": "heartbeat"})).is_ok());
        let err = check_action(&json!({"kind": "shell"})).unwrap_err().to_string();
        assert!(err.contains("agent, notify"), "{err}");
    }

    #[test]
    fn create_checks_everything_before_it_writes() {
        let store = store();
        let notify = json!({"kind": "notify", "message": "tea"});
        let bad_cron = create(&store, draft("j", "61 * * * *", notify.clone())).unwrap_err();
        assert!(matches!(bad_cron, ManageError::Invalid(_)), "{bad_cron}");
        let mut bad_zone = draft("j", "0 9 * * *", notify.clone());
        bad_zone.tz = Some("Mars/Olympus".into());
        assert!(matches!(create(&store, bad_zone), Err(ManageError::Invalid(_))));
        assert!(store.jobs().unwrap().is_empty(), "nothing written");
        let job = create(&store, draft("j", "@daily", notify.clone())).unwrap();
        assert_eq!((job.cron.as_str(), job.tz.as_str()), ("@daily", "Europe/Berlin"));
        assert!(matches!(
            create(&store, draft("j", "@daily", notify)),
            Err(ManageError::Duplicate(_))
        ));
    }

    #[test]
    fn edit_changes_what_is_given_and_refuses_nothing_or_bad_input() {
        let store = store();
        create(&store, draft("j", "0 9 * * *", json!({"kind": "notify", "message": "a"}))).unwrap();
        assert!(matches!(
            edit(&store, "j", Changes::default(), "user"),
            Err(ManageError::Invalid(_))
        ));
        let changes = Changes { cron: Some("0 10 * * 1-5".into()), ..Changes::default() };
        assert!(matches!(
            edit(&store, "nope", changes.clone(), "user"),
            Err(ManageError::Unknown(_))
        ));
        let job = edit(&store, "j", changes, "user").unwrap();
        assert_eq!(job.cron, "0 10 * * 1-5");
        let off = Changes { enabled: Some(false), ..Changes::default() };
        assert!(!edit(&store, "j", off, "user").unwrap().enabled);
        let bad = Changes { action: Some(json!({"kind": "agent"})), ..Changes::default() };
        assert!(matches!(edit(&store, "j", bad, "user"), Err(ManageError::Invalid(_))));
        assert_eq!(find(&store, "j").unwrap().action["message"], "a", "unchanged");
        assert_eq!(next_fires(&find(&store, "j").unwrap(), 3).unwrap().len(), 3);
    }
}
