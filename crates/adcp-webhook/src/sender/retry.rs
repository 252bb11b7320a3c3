//! The retry schedule: exponential backoff with full jitter, `Retry-After`,
//! and the delivery horizon.

use adcp_sign::RandomSource;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long one delivery may be retried, and how attempts are spaced.
///
/// The wait before retry `n` (counting from 1) is drawn uniformly from
/// `[0, min(max_backoff, initial_backoff × 2ⁿ⁻¹)]` ("full jitter"), and is
/// at least the receiver's `Retry-After` when it sent one. No attempt
/// starts later than `horizon` after the first one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    initial_backoff: Duration,
    max_backoff: Duration,
    horizon: Duration,
    max_attempts: Option<u32>,
    attempt_timeout: Duration,
    connect_timeout: Duration,
}

/// A retry policy outside the spec's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RetryPolicyError {
    /// The horizon is longer than 7 days (`delivery_retry_horizon_seconds`
    /// maximum).
    #[error("delivery horizon longer than 7 days")]
    HorizonTooLong,
    /// A zero duration or attempt count, or a backoff ceiling below its start.
    #[error("retry policy values must be positive and max_backoff >= initial_backoff")]
    Invalid,
}

impl RetryPolicy {
    /// The default horizon: 24 hours.
    pub const DEFAULT_HORIZON: Duration = Duration::from_secs(86_400);
    /// The longest horizon the spec allows: 7 days.
    pub const MAX_HORIZON: Duration = Duration::from_secs(7 * 86_400);

    /// A policy: first backoff, backoff ceiling, horizon.
    ///
    /// # Errors
    ///
    /// [`RetryPolicyError`].
    pub fn new(initial_backoff: Duration, max_backoff: Duration, horizon: Duration) -> Result<Self, RetryPolicyError> {
        if horizon > Self::MAX_HORIZON {
            return Err(RetryPolicyError::HorizonTooLong);
        }
        if initial_backoff.is_zero() || max_backoff < initial_backoff || horizon.is_zero() {
            return Err(RetryPolicyError::Invalid);
        }
        Ok(Self {
            initial_backoff,
            max_backoff,
            horizon,
            ..Self::default()
        })
    }

    /// Stops after this many attempts even within the horizon.
    ///
    /// # Errors
    ///
    /// [`RetryPolicyError::Invalid`] for zero.
    pub fn with_max_attempts(mut self, attempts: u32) -> Result<Self, RetryPolicyError> {
        if attempts == 0 {
            return Err(RetryPolicyError::Invalid);
        }
        self.max_attempts = Some(attempts);
        Ok(self)
    }

    /// Deadline of one attempt, response headers included (default 10 s),
    /// and of its TCP + TLS connect (default 5 s).
    ///
    /// # Errors
    ///
    /// [`RetryPolicyError::Invalid`] for zero durations.
    pub fn with_timeouts(mut self, attempt: Duration, connect: Duration) -> Result<Self, RetryPolicyError> {
        if attempt.is_zero() || connect.is_zero() {
            return Err(RetryPolicyError::Invalid);
        }
        self.attempt_timeout = attempt;
        self.connect_timeout = connect;
        Ok(self)
    }

    /// The first backoff.
    #[must_use]
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// The backoff ceiling.
    #[must_use]
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// The horizon.
    #[must_use]
    pub fn horizon(&self) -> Duration {
        self.horizon
    }

    /// The attempt cap, if any.
    #[must_use]
    pub fn max_attempts(&self) -> Option<u32> {
        self.max_attempts
    }

    /// The per-attempt deadline.
    #[must_use]
    pub fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout
    }

    /// The connect deadline.
    #[must_use]
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The backoff ceiling before retry `retry` (1 for the first retry).
    #[must_use]
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1_u32.checked_shl(retry.saturating_sub(1).min(31)).unwrap_or(u32::MAX);
        self.initial_backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }

    /// The wait before retry `retry`: full jitter under [`ceiling`](Self::ceiling),
    /// raised to `retry_after` when the receiver asked for longer.
    #[must_use]
    pub fn backoff<R: RandomSource + ?Sized>(&self, retry: u32, retry_after: Option<Duration>, random: &R) -> Duration {
        let ceiling = self.ceiling(retry);
        let mut bytes = [0_u8; 8];
        // Without randomness, wait the whole ceiling (never zero).
        let jitter = if random.fill(&mut bytes).is_ok() {
            let unit = (u64::from_le_bytes(bytes) >> 11) as f64 / (1_u64 << 53) as f64;
            ceiling.mul_f64(unit)
        } else {
            ceiling
        };
        retry_after.map_or(jitter, |ra| jitter.max(ra))
    }
}

impl Default for RetryPolicy {
    /// 1 s first backoff, 10 min ceiling, 24 h horizon, no attempt cap,
    /// 10 s per attempt, 5 s connect.
    fn default() -> Self {
        Self {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(600),
            horizon: Self::DEFAULT_HORIZON,
            max_attempts: None,
            attempt_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// Parses `Retry-After`: delta-seconds or an IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`). A date in the past is zero; anything
/// else is `None`.
#[must_use]
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return value.parse::<u64>().ok().map(Duration::from_secs);
    }
    let at = parse_imf_fixdate(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` → Unix seconds.
fn parse_imf_fixdate(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != 29 || &b[3..5] != b", " || &b[25..] != b" GMT" {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u64> {
        let t = s.get(r)?;
        t.bytes().all(|c| c.is_ascii_digit()).then(|| t.parse().ok())?
    };
    let day = num(5..7)?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| s.get(8..11) == Some(*m))? as u64 + 1;
    let year = num(12..16)?;
    let (hh, mm, ss) = (num(17..19)?, num(20..22)?, num(23..25)?);
    if b[7] != b' ' || b[11] != b' ' || b[16] != b' ' || b[19] != b':' || b[22] != b':' {
        return None;
    }
    if !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 || year < 1970 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm), for the proleptic Gregorian calendar.
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

#[cfg(test)]
mod tests {
    use super::*;
    use adcp_sign::RandomnessUnavailable;

    struct Fixed(u8);
    impl RandomSource for Fixed {
        fn fill(&self, dest: &mut [u8]) -> Result<(), RandomnessUnavailable> {
            dest.fill(self.0);
            Ok(())
        }
    }

    #[test]
    fn ceilings_grow_exponentially_and_cap() {
        let p = RetryPolicy::new(
            Duration::from_millis(100),
            Duration::from_secs(1),
            Duration::from_secs(60),
        )
        .unwrap();
        let c: Vec<u128> = (1..=6).map(|n| p.ceiling(n).as_millis()).collect();
        assert_eq!(c, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(p.ceiling(200), Duration::from_secs(1));
    }

    #[test]
    fn full_jitter_stays_under_the_ceiling_and_honours_retry_after() {
        let p = RetryPolicy::new(
            Duration::from_millis(100),
            Duration::from_secs(10),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(p.backoff(3, None, &Fixed(0)), Duration::ZERO);
        let high = p.backoff(3, None, &Fixed(0xff));
        assert!(
            high <= Duration::from_millis(400) && high > Duration::from_millis(399),
            "{high:?}"
        );
        assert_eq!(
            p.backoff(1, Some(Duration::from_secs(5)), &Fixed(0)),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn horizon_is_bounded_by_seven_days() {
        let week = Duration::from_secs(7 * 86_400);
        assert!(RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(1), week).is_ok());
        assert_eq!(
            RetryPolicy::new(
                Duration::from_secs(1),
                Duration::from_secs(1),
                week + Duration::from_secs(1)
            ),
            Err(RetryPolicyError::HorizonTooLong)
        );
        assert_eq!(RetryPolicy::default().horizon(), Duration::from_secs(86_400));
    }

    #[test]
    fn retry_after_forms() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770); // 1994-11-06 08:49:30 GMT
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO)
        );
        for bad in [
            "",
            "-1",
            "1.5",
            "soon",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
    }
}
