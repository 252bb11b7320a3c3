//! When the next attempt goes out, as one pure function of the policy,
//! the attempt count, the receiver's `Retry-After` and the horizon.

use adcp_sign::RandomSource;
use adcp_webhook::RetryPolicy;
use std::time::Duration;

/// The longest `Retry-After` honoured as asked: a receiver asking for more
/// waits this long or the policy's backoff ceiling, whichever is longer
/// (a day-long `Retry-After` would otherwise expire the event).
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(3600);

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextAttempt {
    /// Retry at this time (Unix milliseconds).
    At(i64),
    /// The next attempt would start at or after the deadline (or the
    /// attempt cap is reached): the event expires.
    Expire,
}

/// The next attempt after `attempts` failed ones, at `now_ms`, for an event
/// whose horizon ends at `deadline_ms`: full jitter under the policy's
/// ceiling, at least the (bounded) `retry_after`, never at or past the
/// deadline.
///
/// ```
/// use adcp_outbox::{next_attempt, NextAttempt};
/// use adcp_webhook::RetryPolicy;
/// use std::time::Duration;
///
/// let policy = RetryPolicy::default();
/// let next = next_attempt(&policy, 1, Some(Duration::from_secs(30)), 0, 86_400_000, &adcp_sign::OsRandom);
/// assert!(matches!(next, NextAttempt::At(t) if t >= 30_000));
/// assert_eq!(next_attempt(&policy, 1, None, 86_400_000, 86_400_000, &adcp_sign::OsRandom), NextAttempt::Expire);
/// ```
#[must_use]
pub fn next_attempt<R: RandomSource + ?Sized>(
    policy: &RetryPolicy,
    attempts: u32,
    retry_after: Option<Duration>,
    now_ms: i64,
    deadline_ms: i64,
    random: &R,
) -> NextAttempt {
    if policy.max_attempts().is_some_and(|max| attempts >= max) {
        return NextAttempt::Expire;
    }
    let bound = RETRY_AFTER_CAP.max(policy.max_backoff());
    let wait = policy.backoff(attempts.max(1), retry_after.map(|ra| ra.min(bound)), random);
    let at = now_ms.saturating_add(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX));
    if at >= deadline_ms {
        NextAttempt::Expire
    } else {
        NextAttempt::At(at)
    }
}

/// Milliseconds of a duration, saturating.
pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use adcp_sign::RandomnessUnavailable;

    struct Max;
    impl RandomSource for Max {
        fn fill(&self, dest: &mut [u8]) -> Result<(), RandomnessUnavailable> {
            dest.fill(0xff);
            Ok(())
        }
    }

    #[test]
    fn waits_grow_and_never_cross_the_deadline() {
        let p = RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(8), Duration::from_secs(60)).unwrap();
        let waits: Vec<i64> = (1..=5)
            .map(|n| match next_attempt(&p, n, None, 0, i64::MAX, &Max) {
                NextAttempt::At(t) => (t + 999) / 1000,
                NextAttempt::Expire => -1,
            })
            .collect();
        assert_eq!(waits, [1, 2, 4, 8, 8]);
        assert_eq!(next_attempt(&p, 1, None, 0, 999, &Max), NextAttempt::Expire);
    }

    #[test]
    fn retry_after_is_honoured_within_bounds() {
        let p = RetryPolicy::default();
        assert!(matches!(
            next_attempt(&p, 1, Some(Duration::from_secs(90)), 0, i64::MAX, &Max),
            NextAttempt::At(t) if t >= 90_000
        ));
        assert!(matches!(
            next_attempt(&p, 1, Some(Duration::from_secs(86_400)), 0, i64::MAX, &Max),
            NextAttempt::At(t) if t == 3_600_000
        ));
    }

    #[test]
    fn the_attempt_cap_expires() {
        let p = RetryPolicy::default().with_max_attempts(3).unwrap();
        assert_eq!(next_attempt(&p, 3, None, 0, i64::MAX, &Max), NextAttempt::Expire);
        assert!(matches!(
            next_attempt(&p, 2, None, 0, i64::MAX, &Max),
            NextAttempt::At(_)
        ));
    }
}
