//! Times as the wires write them: ISO 8601 in UTC (Gemini CLI's `timestamp`, Claude Code's
//! transcript, AG-UI's `expiresAt`), without a date crate.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `time` as `2024-01-01T00:00:00.000Z` (before 1970: the epoch).
pub(crate) fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// `seconds` after the epoch as [`iso8601`] writes it.
pub(crate) fn iso8601_secs(seconds: u64) -> String {
    iso8601(UNIX_EPOCH + Duration::from_secs(seconds))
}

/// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(19_782), (2024, 2, 29));
        assert_eq!(
            iso8601_secs(19_723 * 86_400 + 3_661),
            "2024-01-01T01:01:01.000Z"
        );
        let now = iso8601(SystemTime::now());
        assert_eq!(now.len(), "2024-01-01T00:00:00.000Z".len(), "{now}");
    }
}
