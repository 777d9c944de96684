//! UTC calendar formatting for branch names and messages (no time zone database needed).

/// (year, month, day, hour, minute, second) in UTC for seconds since the Unix epoch.
fn civil(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, (rem / 3_600) as u32, (rem % 3_600 / 60) as u32, (rem % 60) as u32)
}

/// `2026-02-25-143000`: the branch-name stamp (sorts by time, and has no `:`, which git refuses
/// in a ref name).
pub(crate) fn stamp(secs: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(secs);
    format!("{y:04}-{mo:02}-{d:02}-{h:02}{mi:02}{s:02}")
}

/// `2026-02-25T14:30:00Z`.
pub(crate) fn rfc3339(secs: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(stamp(0), "1970-01-01-000000");
        // 2000-02-29 (a leap day in a century leap year) 12:34:56 UTC.
        assert_eq!(rfc3339(951_827_696), "2000-02-29T12:34:56Z");
        // 2026-02-25 14:30:00 UTC.
        assert_eq!(stamp(1_772_029_800), "2026-02-25-143000");
        // The last second of 2024 and the first of 2025.
        assert_eq!(rfc3339(1_735_689_599), "2024-12-31T23:59:59Z");
        assert_eq!(rfc3339(1_735_689_600), "2025-01-01T00:00:00Z");
    }
}
