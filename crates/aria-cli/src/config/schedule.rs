//! `[schedule]`: how `aria serve` runs scheduled jobs (issue #21).

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
}

/// `[schedule]`, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScheduleConfig {
    pub timeout_secs: u64,
    pub max_concurrent: usize,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        ScheduleConfig { timeout_secs: 600, max_concurrent: 3 }
    }
}

impl ScheduleConfig {
    pub fn to_raw(&self) -> RawSchedule {
        RawSchedule {
            timeout_secs: Some(self.timeout_secs),
            max_concurrent: Some(self.max_concurrent),
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
    Ok(ScheduleConfig { timeout_secs, max_concurrent })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        assert_eq!(resolve_schedule(RawSchedule::default()).unwrap(), ScheduleConfig::default());
        let set = RawSchedule { timeout_secs: Some(30), max_concurrent: Some(1) };
        assert_eq!(
            resolve_schedule(set).unwrap(),
            ScheduleConfig { timeout_secs: 30, max_concurrent: 1 }
        );
        for bad in [
            RawSchedule { timeout_secs: Some(0), ..Default::default() },
            RawSchedule { max_concurrent: Some(0), ..Default::default() },
            RawSchedule { max_concurrent: Some(99), ..Default::default() },
        ] {
            assert!(resolve_schedule(bad).unwrap_err().to_string().contains("[schedule]"));
        }
    }
}
