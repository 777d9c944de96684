//! Scheduled jobs inside `aria serve` (and `aria schedule run`): `aria-scheduler`'s loop
//! composed with the gateway, which runs the jobs' actions (`aria_gateway::jobs`) and tells
//! the user (`aria_gateway::notify`), and the built-in heartbeat job.

use std::sync::Arc;
use std::time::Duration;

use aria_gateway::Gateway;
use aria_gateway::jobs::{JobContext, JobRunner, LocalRunner};
use aria_gateway::notify::NotifySettings;
use aria_scheduler::cron::system_zone;
use aria_scheduler::scheduler::{Clock, Scheduler, SchedulerConfig, SystemClock};
use aria_store::{NewJob, Store, StoreError};
use serde_json::json;

use crate::config::Config;

/// The built-in heartbeat job's name.
pub const HEARTBEAT: &str = "heartbeat";

fn scheduler_config(config: &Config) -> SchedulerConfig {
    SchedulerConfig {
        timeout: Duration::from_secs(config.schedule.timeout_secs),
        max_concurrent: config.schedule.max_concurrent,
        ..SchedulerConfig::default()
    }
}

/// `[notify]` for the notifier (with `notify-send` when it exists and is wanted).
pub fn notify_settings(config: &Config) -> NotifySettings {
    NotifySettings {
        enabled: config.notify.enabled,
        job_started: config.notify.job_started,
        desktop: if config.notify.desktop { NotifySettings::find_desktop() } else { None },
    }
}

/// The scheduler of this process, its runs going through `gateway`, its notices to the
/// gateway's notifier (which the front ends can reach it through).
pub fn scheduler(gateway: &Arc<Gateway>, config: &Config) -> Arc<Scheduler> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let scheduler = Arc::new(Scheduler::new(
        gateway.store.clone(),
        clock,
        Arc::new(JobRunner { gateway: gateway.clone() }),
        gateway.notifications.clone(),
        scheduler_config(config),
    ));
    gateway.notifications.set_scheduler(&scheduler);
    scheduler
}

/// A scheduler for the jobs that need no model (`aria schedule run` of a reminder, heartbeat,
/// digest or profile): nothing is fetched or loaded.
pub fn scheduler_without_agent(context: JobContext, config: &Config) -> Arc<Scheduler> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let notifications = context.notifications.clone();
    Arc::new(Scheduler::new(
        context.store.clone(),
        clock,
        Arc::new(LocalRunner { context }),
        notifications,
        scheduler_config(config),
    ))
}

/// Makes the built-in heartbeat job follow `[schedule] heartbeat`: created when missing, its
/// expression updated when the configuration changed, disabled when it is `off`. A job named
/// `heartbeat` that a person made themselves is left alone. Returns what changed, for a note.
pub fn ensure_heartbeat(store: &Store, cron: Option<&str>) -> Result<Option<String>, StoreError> {
    let existing = store.job(HEARTBEAT)?;
    if let Some(job) = &existing
        && (job.created_by != "system" || job.action["kind"] != "heartbeat")
    {
        return Ok(None);
    }
    match (existing, cron) {
        (None, None) => Ok(None),
        (None, Some(cron)) => {
            let (tz, _) = system_zone();
            store.job_create(&NewJob {
                name: HEARTBEAT.into(),
                cron: cron.to_owned(),
                tz: tz.clone(),
                action: json!({"kind": "heartbeat"}),
                enabled: true,
                created_by: "system".into(),
                roots: Vec::new(),
            })?;
            Ok(Some(format!("heartbeat scheduled at `{cron}` ({tz})")))
        }
        (Some(job), None) if job.enabled => {
            store.job_set_enabled(HEARTBEAT, false, "system")?;
            Ok(Some("heartbeat off ([schedule] heartbeat = \"off\")".into()))
        }
        (Some(_), None) => Ok(None),
        (Some(job), Some(cron)) => {
            let mut changed = None;
            if job.cron != cron {
                store.job_update(HEARTBEAT, Some(cron), None, None, "system")?;
                changed = Some(format!("heartbeat now at `{cron}`"));
            }
            if !job.enabled {
                store.job_set_enabled(HEARTBEAT, true, "system")?;
                changed = Some(format!("heartbeat on at `{cron}`"));
            }
            Ok(changed)
        }
    }
}

#[cfg(test)]
mod tests {
    use aria_api::NoRedact;

    use super::*;

    #[test]
    fn the_heartbeat_job_follows_the_configuration_and_leaves_a_persons_job_alone() {
        let store = Store::open_in_memory(Arc::new(NoRedact)).unwrap();
        assert!(ensure_heartbeat(&store, Some("0 18 * * *")).unwrap().is_some());
        let job = store.job(HEARTBEAT).unwrap().unwrap();
        assert_eq!(
            (job.cron.as_str(), job.enabled, job.created_by.as_str()),
            ("0 18 * * *", true, "system")
        );
        assert!(ensure_heartbeat(&store, Some("0 18 * * *")).unwrap().is_none(), "unchanged");
        ensure_heartbeat(&store, Some("0 9 * * *")).unwrap();
        assert_eq!(store.job(HEARTBEAT).unwrap().unwrap().cron, "0 9 * * *");
        ensure_heartbeat(&store, None).unwrap();
        assert!(!store.job(HEARTBEAT).unwrap().unwrap().enabled);
        ensure_heartbeat(&store, Some("0 9 * * *")).unwrap();
        assert!(store.job(HEARTBEAT).unwrap().unwrap().enabled);

        let store = Store::open_in_memory(Arc::new(NoRedact)).unwrap();
        store
            .job_create(&NewJob {
                name: HEARTBEAT.into(),
                cron: "*/5 * * * *".into(),
                tz: "UTC".into(),
                action: json!({"kind": "notify", "message": "mine"}),
                enabled: true,
                created_by: "user".into(),
                roots: vec![],
            })
            .unwrap();
        assert!(ensure_heartbeat(&store, None).unwrap().is_none());
        assert!(store.job(HEARTBEAT).unwrap().unwrap().enabled, "a person's job is theirs");
    }
}
