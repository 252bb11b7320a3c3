//! Is an `idempotency_key` predictable? The spec requires cryptographically
//! random keys (UUID v4 recommended) and calls sequential, timestamp-only
//! or otherwise predictable values non-conformant. Randomness cannot be
//! proven from a few samples; these heuristics catch the common ways keys
//! are derived instead, with a negligible chance of flagging random keys:
//!
//! - **Sequential**: two distinct keys equal but for one run of at most 16
//!   characters which, read as a decimal (else hexadecimal) number, differ
//!   by 1 to [`MAX_STEP`] (`evt-000041` / `evt-000042`; a counter shared
//!   with other buyers steps by more than one between our events). Random
//!   keys differ almost everywhere, never in a short run only.
//! - **Unix time**: a run of digits that starts or ends with a 10, 13, 16
//!   or 19 digit number that is, in seconds, milliseconds, microseconds or
//!   nanoseconds, within [`TIME_TOLERANCE_SECS`] of the delivery's arrival.
//! - **Date**: the arrival date (±1 day) as `YYYYMMDD` at the start or end
//!   of a run of digits, or as `YYYY-MM-DD` anywhere.
//! - **Time-based UUID**: a hyphenated UUID of version 1, 6 or 7 (a clock
//!   and a MAC address, or a millisecond timestamp leading the key, so keys
//!   sort by creation time).
//! - **ULID**: a 26-character Crockford base32 run whose 48-bit time prefix
//!   is within [`TIME_TOLERANCE_SECS`] of the arrival (time-ordered, like
//!   UUID v7).
//!
//! Keys with unrelated embedded numbers (a tenant id, a date long past)
//! are not flagged; a counter that is hashed or encrypted is not caught.

/// The largest step between two keys still called sequential.
pub(crate) const MAX_STEP: u64 = 1024;

/// How far from the arrival an embedded time may be and still count as
/// "now" (the seller's clock, queueing, retries).
pub(crate) const TIME_TOLERANCE_SECS: i64 = 86_400;

/// The longest differing run two sequential keys may have.
const MAX_RUN: usize = 16;

/// Why `a` then `b` look like consecutive values of a counter: the step.
pub(crate) fn sequential(a: &str, b: &str) -> Option<u64> {
    if a == b || !a.is_ascii() || !b.is_ascii() {
        return None;
    }
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let prefix = x.iter().zip(y).take_while(|(p, q)| p == q).count();
    let max_suffix = x.len().min(y.len()) - prefix;
    let suffix = x
        .iter()
        .rev()
        .zip(y.iter().rev())
        .take(max_suffix)
        .take_while(|(p, q)| p == q)
        .count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    if ma.is_empty() || mb.is_empty() || ma.len() > MAX_RUN || mb.len() > MAX_RUN {
        return None;
    }
    let (radix, class): (u32, fn(u8) -> bool) = if ma.bytes().chain(mb.bytes()).all(|c| c.is_ascii_digit()) {
        (10, |c| c.is_ascii_digit())
    } else {
        (16, |c| c.is_ascii_hexdigit())
    };
    // The whole number around the differing characters: the shared digits
    // on either side belong to it (`k19` / `k20` differ by 1, `k41` /
    // `k99941` by 99900).
    let left = x[..prefix].iter().rev().take_while(|&&c| class(c)).count();
    let right = x[x.len() - suffix..].iter().take_while(|&&c| class(c)).count();
    let (na, nb) = (
        a.get(prefix - left..a.len() - suffix + right)?,
        b.get(prefix - left..b.len() - suffix + right)?,
    );
    if na.len() > MAX_RUN || nb.len() > MAX_RUN {
        return None;
    }
    let (na, nb) = (
        u64::from_str_radix(na, radix).ok()?,
        u64::from_str_radix(nb, radix).ok()?,
    );
    let step = na.abs_diff(nb);
    (1..=MAX_STEP).contains(&step).then_some(step)
}

/// Why `key` looks derived from the time it was sent (`now`, Unix
/// seconds), if it does.
pub(crate) fn time_derived(key: &str, now: i64) -> Option<String> {
    unix_time(key, now)
        .or_else(|| date(key, now))
        .or_else(|| time_uuid(key))
        .or_else(|| ulid(key, now))
}

/// Maximal runs of bytes satisfying `f`, as (start, run).
fn runs(key: &str, f: impl Fn(u8) -> bool) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = key.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if f(bytes[i]) {
            let start = i;
            while i < bytes.len() && f(bytes[i]) {
                i += 1;
            }
            // ASCII predicates only: the bounds are character boundaries.
            if let Some(run) = key.get(start..i) {
                out.push(run);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The run's first and last `len` characters.
fn ends(run: &str, len: usize) -> impl Iterator<Item = &str> {
    let first = run.get(..len);
    let last = run.len().checked_sub(len).and_then(|i| run.get(i..));
    first.into_iter().chain(last)
}

fn unix_time(key: &str, now: i64) -> Option<String> {
    const UNITS: [(usize, u64, &str); 4] = [
        (10, 1, "seconds"),
        (13, 1_000, "milliseconds"),
        (16, 1_000_000, "microseconds"),
        (19, 1_000_000_000, "nanoseconds"),
    ];
    for run in runs(key, |b| b.is_ascii_digit()) {
        for (len, per_second, unit) in UNITS {
            for digits in ends(run, len) {
                let Ok(value) = digits.parse::<u64>() else { continue };
                let seconds = i64::try_from(value / per_second).unwrap_or(i64::MAX);
                if seconds.abs_diff(now) <= TIME_TOLERANCE_SECS.unsigned_abs() {
                    return Some(format!("embeds the current Unix time in {unit} ({digits})"));
                }
            }
        }
    }
    None
}

/// The UTC calendar date of a Unix day number.
fn civil(days: i64) -> Option<jiff::civil::Date> {
    let at = jiff::Timestamp::from_second(days.checked_mul(86_400)?).ok()?;
    Some(at.to_zoned(jiff::tz::TimeZone::UTC).date())
}

fn date(key: &str, now: i64) -> Option<String> {
    let today = now.div_euclid(86_400);
    let days: Vec<(String, String)> = (today - 1..=today + 1)
        .filter_map(civil)
        .map(|d| (d.strftime("%Y%m%d").to_string(), d.strftime("%Y-%m-%d").to_string()))
        .collect();
    for run in runs(key, |b| b.is_ascii_digit()) {
        for digits in ends(run, 8) {
            if days.iter().any(|(compact, _)| compact == digits) {
                return Some(format!("embeds the current date ({digits})"));
            }
        }
    }
    days.iter()
        .find(|(_, dashed)| key.contains(dashed.as_str()))
        .map(|(_, dashed)| format!("embeds the current date ({dashed})"))
}

fn time_uuid(key: &str) -> Option<String> {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    for run in runs(key, |b| b.is_ascii_hexdigit() || b == b'-') {
        let bytes = run.as_bytes();
        for start in 0..bytes.len().saturating_sub(35) {
            let Some(candidate) = run.get(start..start + 36) else {
                continue;
            };
            let groups: Vec<&str> = candidate.split('-').collect();
            let shaped = groups.len() == 5
                && groups
                    .iter()
                    .zip(GROUPS)
                    .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()));
            if !shaped {
                continue;
            }
            let version = candidate.as_bytes()[14];
            let variant = candidate.as_bytes()[19].to_ascii_lowercase();
            if matches!(version, b'1' | b'6' | b'7') && matches!(variant, b'8' | b'9' | b'a' | b'b') {
                return Some(format!(
                    "is a time-based UUID v{} (keys sort by creation time; UUID v4 is recommended)",
                    char::from(version)
                ));
            }
        }
    }
    None
}

fn crockford(b: u8) -> Option<u64> {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let upper = b.to_ascii_uppercase();
    ALPHABET.iter().position(|&c| c == upper).map(|p| p as u64)
}

fn ulid(key: &str, now: i64) -> Option<String> {
    for run in runs(key, |b| b.is_ascii_alphanumeric()) {
        if run.len() != 26 || !run.bytes().all(|b| crockford(b).is_some()) {
            continue;
        }
        let millis = run.bytes().take(10).try_fold(0_u64, |acc, b| {
            crockford(b).and_then(|v| acc.checked_mul(32)?.checked_add(v))
        })?;
        let seconds = i64::try_from(millis / 1000).unwrap_or(i64::MAX);
        if seconds.abs_diff(now) <= TIME_TOLERANCE_SECS.unsigned_abs() {
            return Some("is a ULID carrying the current time (keys sort by creation time)".to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-07T06:00:00Z.
    const NOW: i64 = 1_796_623_200;

    #[test]
    fn the_civil_date_is_right() {
        assert_eq!(civil(NOW / 86_400), Some(jiff::civil::date(2026, 12, 7)));
        assert_eq!(civil(0), Some(jiff::civil::date(1970, 1, 1)));
        assert_eq!(civil(11_016), Some(jiff::civil::date(2000, 2, 29)));
        assert_eq!(civil(i64::MAX), None);
    }

    #[test]
    fn counters_are_sequential() {
        assert_eq!(sequential("evt-key-00000041", "evt-key-00000042"), Some(1));
        assert_eq!(sequential("evt-key-00000099", "evt-key-00000100"), Some(1));
        assert_eq!(sequential("whk_0000000000001a", "whk_0000000000001b"), Some(1));
        assert_eq!(sequential("order-17-delivery-0007", "order-17-delivery-0012"), Some(5));
        assert_eq!(sequential("evt-key-00000041", "evt-key-00000041"), None);
        assert_eq!(sequential("evt-key-00000041", "evt-key-00099941"), None);
        assert_eq!(sequential("k19", "k20"), Some(1));
        assert_eq!(sequential("k10", "k20"), Some(10));
    }

    #[test]
    fn random_keys_are_not_sequential_or_time_derived() {
        for _ in 0..200 {
            let a = adcp_sign::IdempotencyKey::generate().map(|k| k.as_str().to_owned());
            let b = adcp_sign::IdempotencyKey::generate().map(|k| k.as_str().to_owned());
            let (Ok(a), Ok(b)) = (a, b) else { return };
            assert_eq!(sequential(&a, &b), None, "{a} {b}");
            assert_eq!(time_derived(&a, NOW), None, "{a}");
        }
        assert_eq!(time_derived("550e8400-e29b-41d4-a716-446655440000", NOW), None);
    }

    #[test]
    fn times_dates_and_time_ordered_ids_are_found() {
        let cases = [
            format!("whk_{NOW}_abcdef"),
            format!("whk_{}123", NOW * 1000),
            format!("evt{}", NOW * 1_000_000_000),
            "whk_20261207_example_000031".to_owned(),
            "evt-2026-12-06-aaaaaa".to_owned(),
            "c232ab00-9414-11ec-b3c8-9f6bdeced846".to_owned(),
            "whk_01939a8c-6e40-7cc3-98c4-dc0c0c07398f".to_owned(),
        ];
        for key in &cases {
            assert!(time_derived(key, NOW).is_some(), "{key}");
        }
        // A ULID minted now, and the spec's example ULID from 2024 (not now).
        let millis = u64::try_from(NOW).unwrap_or_default() * 1000;
        let alphabet = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
        let time: String = (0..10)
            .rev()
            .map(|i| char::from(alphabet[((millis >> (5 * i)) & 31) as usize]))
            .collect();
        assert!(time_derived(&format!("{time}8FZP2N6R8T0V4X6Z"), NOW).is_some());
        assert_eq!(time_derived("whk_01HW9D3H8FZP2N6R8T0V4X6Z9B", NOW), None);
        // Old dates and unrelated numbers are not "now".
        assert_eq!(time_derived("tenant-1234567890-aaaaaaaa", NOW), None);
        assert_eq!(time_derived("evt-19991231-aaaaaaaaaa", NOW), None);
    }
}
