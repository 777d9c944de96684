//! How much of what ARIA records about itself is kept: the log files' size limits
//! (`[logging] max_file_mb`, `max_total_mb`) and how long traces live (`[traces] keep_days`).

use serde::{Deserialize, Serialize};

use super::{ConfigError, RawLogging};

/// The log files' limits, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LogLimits {
    /// `aria.jsonl` is rotated when it reaches this many MB.
    pub max_file_mb: u64,
    /// All log files together stay under this many MB: the oldest rotated ones are deleted.
    pub max_total_mb: u64,
}

impl Default for LogLimits {
    fn default() -> Self {
        LogLimits { max_file_mb: 10, max_total_mb: 50 }
    }
}

impl LogLimits {
    /// In bytes, for the writer.
    pub fn sizes(&self) -> crate::logging::SizeLimits {
        const MB: u64 = 1024 * 1024;
        crate::logging::SizeLimits {
            max_file: self.max_file_mb.saturating_mul(MB),
            max_total: self.max_total_mb.saturating_mul(MB),
        }
    }
}

pub fn resolve_log_limits(raw: &RawLogging) -> Result<LogLimits, ConfigError> {
    let d = LogLimits::default();
    let max_file_mb = raw.max_file_mb.unwrap_or(d.max_file_mb);
    if !(1..=1024).contains(&max_file_mb) {
        return Err(ConfigError::Invalid(format!(
            "[logging] max_file_mb = {max_file_mb}: give 1 to 1024 (default {})",
            d.max_file_mb
        )));
    }
    // Room for the current file and the one just rotated: a process that has not noticed the
    // rotation yet still writes its next line there, and that line must not be deleted.
    let least = max_file_mb * 2;
    let max_total_mb = raw.max_total_mb.unwrap_or(d.max_total_mb.max(least));
    if max_total_mb < least || max_total_mb > 1_048_576 {
        return Err(ConfigError::Invalid(format!(
            "[logging] max_total_mb = {max_total_mb}: give at least twice max_file_mb ({least}) \
             and at most 1048576 (default {})",
            d.max_total_mb
        )));
    }
    Ok(LogLimits { max_file_mb, max_total_mb })
}

/// `[traces]` as written.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTraces {
    /// Traces older than this many days are deleted (default 30; 0 keeps them forever). The
    /// audit log is never pruned.
    pub keep_days: Option<u32>,
}

/// `[traces]`, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TracesConfig {
    /// 0: kept forever.
    pub keep_days: u32,
}

impl Default for TracesConfig {
    fn default() -> Self {
        TracesConfig { keep_days: 30 }
    }
}

impl TracesConfig {
    pub fn to_raw(self) -> RawTraces {
        RawTraces { keep_days: Some(self.keep_days) }
    }
}

pub fn resolve_traces(raw: RawTraces) -> Result<TracesConfig, ConfigError> {
    let keep_days = raw.keep_days.unwrap_or(TracesConfig::default().keep_days);
    if keep_days > 36_500 {
        return Err(ConfigError::Invalid(format!(
            "[traces] keep_days = {keep_days}: give at most 36500, or 0 to keep traces forever"
        )));
    }
    Ok(TracesConfig { keep_days })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_limits_default_and_bounds() {
        let raw = |file, total| RawLogging {
            max_file_mb: file,
            max_total_mb: total,
            ..Default::default()
        };
        assert_eq!(resolve_log_limits(&raw(None, None)).unwrap(), LogLimits::default());
        assert_eq!(
            resolve_log_limits(&raw(Some(2), Some(4))).unwrap(),
            LogLimits { max_file_mb: 2, max_total_mb: 4 }
        );
        // A bigger file than the default total allows raises the default total with it.
        assert_eq!(resolve_log_limits(&raw(Some(80), None)).unwrap().max_total_mb, 160);
        assert_eq!(
            LogLimits { max_file_mb: 1, max_total_mb: 3 }.sizes(),
            crate::logging::SizeLimits { max_file: 1 << 20, max_total: 3 << 20 }
        );
        for (file, total) in [(Some(0), None), (Some(2000), None), (Some(10), Some(15))] {
            let e = resolve_log_limits(&raw(file, total)).unwrap_err().to_string();
            assert!(e.starts_with("[logging] max_"), "{e}");
        }
    }

    #[test]
    fn traces_keep_days_defaults_to_30_and_0_is_forever() {
        assert_eq!(resolve_traces(RawTraces::default()).unwrap().keep_days, 30);
        assert_eq!(resolve_traces(RawTraces { keep_days: Some(0) }).unwrap().keep_days, 0);
        assert!(resolve_traces(RawTraces { keep_days: Some(100_000) }).is_err());
    }
}
