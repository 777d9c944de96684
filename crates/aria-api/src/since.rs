//! `--since`: the start of a period, given as a span back from now (`30s`, `30m`, `1h`, `2d`)
//! or an RFC 3339 instant. One parser for every front end that takes it (`aria logs`, `aria
//! stats`, `aria traces`, the HTTP API), so the same text means the same thing everywhere.

use jiff::{SignedDuration, Timestamp};

/// Why a `--since` value was refused, in words that say what to give instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{given:?}: give a period like 30s, 30m, 1h or 2d, or an RFC 3339 instant")]
pub struct SinceError {
    pub given: String,
}

/// The instant `text` names, periods counted back from `now`.
pub fn parse_since(text: &str, now: Timestamp) -> Result<Timestamp, SinceError> {
    let text = text.trim();
    if let Ok(at) = text.parse::<Timestamp>() {
        return Ok(at);
    }
    let bad = || SinceError { given: text.to_owned() };
    // The unit is the last character; anything but ASCII there is not one of ours (and would
    // not split on a character boundary).
    let (number, unit) = match text.char_indices().last() {
        Some((at, c)) if c.is_ascii() => text.split_at(at),
        _ => return Err(bad()),
    };
    let n: i64 = number.parse().map_err(|_| bad())?;
    let unit_secs = match unit {
        "d" => 86_400,
        "h" => 3_600,
        "m" => 60,
        "s" => 1,
        _ => return Err(bad()),
    };
    let secs = n.checked_mul(unit_secs).filter(|s| *s >= 0).ok_or_else(bad)?;
    now.checked_sub(SignedDuration::from_secs(secs)).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_and_instants_are_read_and_anything_else_says_what_to_give() {
        let now: Timestamp = "2026-11-26T18:00:00Z".parse().unwrap();
        let at = |text: &str| parse_since(text, now).map(|t| t.to_string());
        assert_eq!(at("30s").unwrap(), "2026-11-26T17:59:30Z");
        assert_eq!(at("30m").unwrap(), "2026-11-26T17:30:00Z");
        assert_eq!(at(" 1h ").unwrap(), "2026-11-26T17:00:00Z");
        assert_eq!(at("2d").unwrap(), "2026-11-24T18:00:00Z");
        assert_eq!(at("2026-11-01T00:00:00+01:00").unwrap(), "2026-10-31T23:00:00Z");
        for bad in [
            "",
            "5é",
            "1é",
            "é",
            "h",
            "7",
            "x1h",
            "-1h",
            "1w",
            "1.5h",
            "99999999999999999d",
            "yesterday",
        ] {
            let err = at(bad).unwrap_err();
            assert!(err.to_string().contains("30m, 1h or 2d"), "{bad}: {err}");
        }
    }
}
