//! Cron expressions and their fire times in an IANA time zone.
//!
//! Matching a wall-clock time against an expression is croner's job (parsed on `jiff` civil
//! times, so no `chrono`); mapping wall-clock times to instants across daylight-saving
//! transitions is done here, because the policy we follow is Debian's/cronie's and croner's
//! differs from it in two places (see below). Everything here is a pure function.
//!
//! # Syntax
//! Five fields, `minute hour day-of-month month day-of-week`, each a comma list of `*`, `N` or
//! `N-M`, optionally with `/STEP`; months take `JAN`…`DEC`, weekdays `SUN`…`SAT` (0 and 7 are
//! Sunday). Shortcuts: `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`),
//! `@hourly`. croner's extensions (`L`, `W`, `#`, `?`, a seconds or a year field) are refused:
//! a job's expression should mean the same thing to a person who knows crontab(5).
//!
//! # Day of month and day of week (cronie's rule)
//! When both fields are restricted, a day matches if either matches. "Restricted" is cronie's
//! definition: the field does not start with `*`. A field such as `*/2` starts with `*`, so
//! `0 0 */2 * MON` means odd days *that are* Mondays (AND). croner treats only a bare `*` as
//! unrestricted (it would say OR there), so for that case we parse with croner's AND mode.
//!
//! # Daylight saving time (Debian's/cronie's rule)
//! Times are computed in the job's zone and returned as instants.
//! - A **fixed-time** job is one whose minute and hour fields both do not start with `*`
//!   (`30 2 * * *`, `0,30 1-3 * * *`). Its wall-clock times are mapped to instants one by one:
//!   a time in a spring-forward gap runs at the first valid instant after the gap (the
//!   transition itself: 02:30 → 03:00 in Berlin, 02:10 → 02:30 on Lord Howe), a time in a
//!   repeated hour runs once, at its first occurrence. Several times that land on the same
//!   instant (02:00 and 02:30 both in the gap, or a gap time and 03:00) are one fire.
//! - Any other job (a minute or hour starting with `*`) **follows real time**: it fires at
//!   every instant whose local wall-clock time matches, so times in a gap never fire and an
//!   hourly job fires in both passes of a repeated hour.
//!
//! croner's own policy calls a job fixed only when minute and hour are single values; with it
//! `0,30 2 * * *` would fire twice in a repeated hour and not at all in a gap. That is why
//! croner is used here only on civil (zone-less) times.
use std::fmt;

use croner::Cron;
use croner::parser::CronParser;
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{Timestamp, Zoned};

/// Why an expression, a zone or a fire-time computation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("the cron expression {expr:?} is not valid: {reason}")]
    Expression { expr: String, reason: String },
    #[error(
        "the time zone {name:?} is not known: {reason} (use an IANA name such as Europe/Berlin)"
    )]
    Zone { name: String, reason: String },
    #[error("the cron expression {expr:?} never fires")]
    NeverFires { expr: String },
    #[error("could not compute a fire time: {0}")]
    Time(String),
}

/// A parsed five-field cron expression.
#[derive(Clone)]
pub struct Schedule {
    expr: String,
    cron: Cron,
    fixed_time: bool,
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schedule")
            .field("expr", &self.expr)
            .field("fixed_time", &self.fixed_time)
            .finish()
    }
}

const MONTHS: [&str; 12] =
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

fn shortcut(expr: &str) -> Option<&'static str> {
    Some(match expr.to_ascii_lowercase().as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => return None,
    })
}

/// Checks one field's characters and names; croner checks ranges and steps.
fn check_field(field: &str, names: &[&str], what: &str) -> Result<(), String> {
    for token in field.split([',', '-', '/']) {
        if token.is_empty() {
            return Err(format!("the {what} field {field:?} has an empty part"));
        }
        if token == "*" || token.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let upper = token.to_ascii_uppercase();
        if !names.contains(&upper.as_str()) {
            return Err(format!(
                "the {what} field {field:?} has {token:?}, which is not a number{}",
                if names.is_empty() {
                    String::new()
                } else {
                    format!(" or one of {}", names.join(","))
                }
            ));
        }
    }
    Ok(())
}

impl Schedule {
    /// Parses five fields or a shortcut. Refuses an expression that never fires.
    pub fn parse(expr: &str) -> Result<Self, CronError> {
        let trimmed = expr.trim();
        let invalid = |reason: String| CronError::Expression { expr: trimmed.to_owned(), reason };
        let text = if trimmed.starts_with('@') {
            shortcut(trimmed).ok_or_else(|| {
                invalid(
                    "the shortcuts are @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly"
                        .into(),
                )
            })?
        } else {
            trimmed
        };
        let fields: Vec<&str> = text.split_whitespace().collect();
        let [minute, hour, dom, month, dow] = fields[..] else {
            return Err(invalid(format!(
                "it has {} fields; a cron expression has five: minute hour day-of-month month day-of-week",
                fields.len()
            )));
        };
        check_field(minute, &[], "minute").map_err(invalid)?;
        check_field(hour, &[], "hour").map_err(invalid)?;
        check_field(dom, &[], "day-of-month").map_err(invalid)?;
        check_field(month, &MONTHS, "month").map_err(invalid)?;
        check_field(dow, &WEEKDAYS, "day-of-week").map_err(invalid)?;
        // cronie: both day fields restricted (not starting with `*`) → OR, otherwise AND.
        // croner already does the right thing when either is a bare `*`.
        let and = dom != "*" && dow != "*" && (dom.starts_with('*') || dow.starts_with('*'));
        let cron =
            CronParser::builder().dom_and_dow(and).build().parse(&fields.join(" ")).map_err(
                |e| {
                    invalid(format!(
                        "{e} (minute 0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, \
                     day of week 0-7 or SUN-SAT; lists a,b, ranges a-b, steps */n)"
                    ))
                },
            )?;
        let schedule = Schedule {
            expr: trimmed.to_owned(),
            cron,
            fixed_time: !minute.starts_with('*') && !hour.starts_with('*'),
        };
        // Every valid expression fires within eight years (29 February needs four).
        let probe = DateTime::constant(2000, 1, 1, 0, 0, 0, 0);
        match schedule.cron.find_next_occurrence(&probe, false) {
            Ok(first) if first.year() <= 2008 => Ok(schedule),
            _ => Err(CronError::NeverFires { expr: trimmed.to_owned() }),
        }
    }

    /// The expression as given (trimmed).
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// Whether Debian's fixed-time DST rule applies (minute and hour do not start with `*`).
    pub fn is_fixed_time(&self) -> bool {
        self.fixed_time
    }

    /// The first fire strictly after `after`.
    pub fn next_after(&self, tz: &TimeZone, after: Timestamp) -> Result<Timestamp, CronError> {
        if self.fixed_time { self.next_fixed(tz, after) } else { self.next_real_time(tz, after) }
    }

    /// The first `count` fires strictly after `after`, in the zone.
    pub fn fires_after(
        &self,
        tz: &TimeZone,
        after: Timestamp,
        count: usize,
    ) -> Result<Vec<Zoned>, CronError> {
        let mut out = Vec::with_capacity(count);
        let mut at = after;
        for _ in 0..count {
            at = self.next_after(tz, at)?;
            out.push(at.to_zoned(tz.clone()));
        }
        Ok(out)
    }

    /// The most recent fire in `(after, until]`, how many fires that interval holds, and the
    /// first fire after `until`. Used by catch-up, which runs only the most recent missed slot
    /// and says how many were missed, and by the scheduler to know when to look again.
    pub fn fires_between(
        &self,
        tz: &TimeZone,
        after: Timestamp,
        until: Timestamp,
    ) -> Result<(Option<Timestamp>, u64, Timestamp), CronError> {
        let mut at = after;
        let mut last = None;
        let mut count = 0u64;
        loop {
            let next = self.next_after(tz, at)?;
            if next > until {
                return Ok((last, count, next));
            }
            count += 1;
            last = Some(next);
            at = next;
        }
    }

    fn civil_next(&self, from: &DateTime, inclusive: bool) -> Result<DateTime, CronError> {
        self.cron.find_next_occurrence(from, inclusive).map_err(|e| match e {
            croner::errors::CronError::TimeSearchLimitExceeded => {
                CronError::NeverFires { expr: self.expr.clone() }
            }
            other => CronError::Time(other.to_string()),
        })
    }

    /// Fixed-time jobs: walk matching wall-clock times; map each to its instant (gap → the
    /// transition, fold → the first pass). That map is monotonic, so the first one after
    /// `after` is the answer.
    fn next_fixed(&self, tz: &TimeZone, after: Timestamp) -> Result<Timestamp, CronError> {
        let mut civil = tz.to_datetime(after);
        // A walk from the second pass of a fold skips at most a repeated stretch of times.
        for _ in 0..100_000 {
            civil = self.civil_next(&civil, false)?;
            let at = fixed_instant(tz, civil)?;
            if at > after {
                return Ok(at);
            }
        }
        Err(CronError::Time(format!("no fire found after {after} for {:?}", self.expr)))
    }

    /// Other jobs follow real time: between two transitions the offset is constant, so the
    /// first matching wall-clock time of each stretch, shifted by its offset, is a candidate.
    fn next_real_time(&self, tz: &TimeZone, after: Timestamp) -> Result<Timestamp, CronError> {
        let mut start = after;
        let mut inclusive = false;
        // Each turn crosses one transition; zones have at most a few a year.
        for _ in 0..10_000 {
            let offset = tz.to_offset(start);
            let civil = self.civil_next(&offset.to_datetime(start), inclusive)?;
            let at = offset.to_timestamp(civil).map_err(|e| CronError::Time(e.to_string()))?;
            match tz.following(start).next() {
                Some(transition) if at >= transition.timestamp() => {
                    start = transition.timestamp();
                    inclusive = true;
                }
                _ => return Ok(at),
            }
        }
        Err(CronError::Time(format!("no fire found after {after} for {:?}", self.expr)))
    }
}

/// Debian's instant for a fixed-time job's wall-clock time.
fn fixed_instant(tz: &TimeZone, civil: DateTime) -> Result<Timestamp, CronError> {
    let time = |e: jiff::Error| CronError::Time(e.to_string());
    match tz.to_ambiguous_timestamp(civil).offset() {
        AmbiguousOffset::Unambiguous { offset } => offset.to_timestamp(civil).map_err(time),
        AmbiguousOffset::Fold { before, .. } => before.to_timestamp(civil).map_err(time),
        AmbiguousOffset::Gap { after, .. } => {
            // Read with the offset after the gap, the time lies before the transition.
            let early = after.to_timestamp(civil).map_err(time)?;
            tz.following(early)
                .next()
                .map(|t| t.timestamp())
                .ok_or_else(|| CronError::Time(format!("no transition after the gap at {civil}")))
        }
    }
}

/// An IANA zone by name (from the system's zoneinfo, else jiff's bundled copy).
pub fn zone(name: &str) -> Result<TimeZone, CronError> {
    jiff::tz::db()
        .get(name)
        .map_err(|e| CronError::Zone { name: name.to_owned(), reason: e.to_string() })
}

/// The system's zone and its IANA name (`UTC` when the system does not say).
pub fn system_zone() -> (String, TimeZone) {
    let tz = TimeZone::system();
    match tz.iana_name() {
        Some(name) => (name.to_owned(), tz.clone()),
        None => ("UTC".to_owned(), TimeZone::UTC),
    }
}

/// An instant as RFC 3339 with the zone's offset, seconds precision (`2026-03-29T03:00:00+02:00`).
pub fn rfc3339_in(at: &Zoned) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// An instant as RFC 3339 UTC, seconds precision (`2026-03-29T01:00:00Z`), as stored.
pub fn rfc3339_utc(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests;
