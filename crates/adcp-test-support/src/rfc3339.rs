//! RFC 3339 timestamps for test documents (revocation lists and others
//! carry `updated` / `next_update` as RFC 3339 UTC strings).

/// `unix` seconds as RFC 3339 UTC (`YYYY-MM-DDThh:mm:ssZ`), by the
/// civil-from-days algorithm (proleptic Gregorian calendar).
///
/// ```
/// assert_eq!(adcp_test_support::rfc3339(1_776_520_800), "2026-04-18T14:00:00Z");
/// assert_eq!(adcp_test_support::rfc3339(0), "1970-01-01T00:00:00Z");
/// ```
#[must_use]
pub fn rfc3339(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}
