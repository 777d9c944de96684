//! `[schedule]`: how `aria serve` runs scheduled jobs, and `[notify]`: how it tells you.

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// `[schedule]` as written.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSchedule {
    /// A scheduled run is cancelled after this many seconds (default 600).
    pub timeout_secs: Option<u64>,
    /// Scheduled runs at once (default 3).
    pub max_concurrent: Option<usize>,
    /// When the built-in heartbeat job runs: a cron expression in the local zone (default
    /// `0 18 * * *`, daily at 18:00), or `off`.
    pub heartbeat: Option<String>,
}

/// `[schedule]`, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScheduleConfig {
    pub timeout_secs: u64,
    pub max_concurrent: usize,
    /// The heartbeat's cron expression; `None`: off.
    pub heartbeat: Option<String>,
}

/// The heartbeat's default: daily at 18:00 local time.
pub const DEFAULT_HEARTBEAT: &str = "0 18 * * *";

impl Default for ScheduleConfig {
    fn default() -> Self {
        ScheduleConfig {
            timeout_secs: 600,
            max_concurrent: 3,
            heartbeat: Some(DEFAULT_HEARTBEAT.to_owned()),
        }
    }
}

impl ScheduleConfig {
    pub fn to_raw(&self) -> RawSchedule {
        RawSchedule {
            timeout_secs: Some(self.timeout_secs),
            max_concurrent: Some(self.max_concurrent),
            heartbeat: Some(self.heartbeat.clone().unwrap_or_else(|| "off".to_owned())),
        }
    }
}

pub fn resolve_schedule(raw: RawSchedule) -> Result<ScheduleConfig, ConfigError> {
    let default = ScheduleConfig::default();
    let timeout_secs = raw.timeout_secs.unwrap_or(default.timeout_secs);
    if !(1..=86_400).contains(&timeout_secs) {
        return Err(ConfigError::Invalid(format!(
            "[schedule] timeout_secs = {timeout_secs}: give 1 to 86400 seconds (default 600)"
        )));
    }
    let max_concurrent = raw.max_concurrent.unwrap_or(default.max_concurrent);
    if !(1..=16).contains(&max_concurrent) {
        return Err(ConfigError::Invalid(format!(
            "[schedule] max_concurrent = {max_concurrent}: give 1 to 16 (default 3)"
        )));
    }
    let heartbeat = match raw.heartbeat.as_deref().map(str::trim) {
        None => default.heartbeat,
        Some("off" | "") => None,
        Some(expr) => {
            let schedule = aria_scheduler::cron::Schedule::parse(expr).map_err(|e| {
                ConfigError::Invalid(format!(
                    "[schedule] heartbeat = {expr:?}: {e}; give a cron expression like \
                     \"{DEFAULT_HEARTBEAT}\" or \"off\""
                ))
            })?;
            Some(schedule.expr().to_owned())
        }
    };
    Ok(ScheduleConfig { timeout_secs, max_concurrent, heartbeat })
}

/// `[notify]` as written.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawNotify {
    /// Push notifications to Telegram and the desktop (default true). Off, they are still
    /// recorded and listed in the web UI.
    pub enabled: Option<bool>,
    /// Also tell when a scheduled job starts (default false).
    pub job_started: Option<bool>,
    /// Desktop notifications with `notify-send` when it exists and a display is there (default
    /// true).
    pub desktop: Option<bool>,
}

/// `[notify]`, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotifyConfig {
    pub enabled: bool,
    pub job_started: bool,
    pub desktop: bool,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig { enabled: true, job_started: false, desktop: true }
    }
}

impl NotifyConfig {
    pub fn to_raw(&self) -> RawNotify {
        RawNotify {
            enabled: Some(self.enabled),
            job_started: Some(self.job_started),
            desktop: Some(self.desktop),
        }
    }
}

pub fn resolve_notify(raw: RawNotify) -> NotifyConfig {
    let d = NotifyConfig::default();
    NotifyConfig {
        enabled: raw.enabled.unwrap_or(d.enabled),
        job_started: raw.job_started.unwrap_or(d.job_started),
        desktop: raw.desktop.unwrap_or(d.desktop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        assert_eq!(resolve_schedule(RawSchedule::default()).unwrap(), ScheduleConfig::default());
        let set = RawSchedule {
            timeout_secs: Some(30),
            max_concurrent: Some(1),
            heartbeat: Some("off".into()),
        };
        assert_eq!(
            resolve_schedule(set).unwrap(),
            ScheduleConfig { timeout_secs: 30, max_concurrent: 1, heartbeat: None }
        );
        let hourly = RawSchedule { heartbeat: Some("@hourly".into()), ..Default::default() };
        assert!(resolve_schedule(hourly).unwrap().heartbeat.is_some());
        for bad in [
            RawSchedule { timeout_secs: Some(0), ..Default::default() },
            RawSchedule { max_concurrent: Some(0), ..Default::default() },
            RawSchedule { max_concurrent: Some(99), ..Default::default() },
            RawSchedule { heartbeat: Some("at six".into()), ..Default::default() },
        ] {
            assert!(resolve_schedule(bad).unwrap_err().to_string().contains("[schedule]"));
        }
    }
}
