//! [`Clock`]: where `created` (and the legacy HMAC timestamp) come from.

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in Unix seconds. Injected so tests (and
/// the conformance vectors' `reference_now`) are deterministic.
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch.
    fn now(&self) -> i64;
}

/// The system clock (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    }
}

/// A clock stopped at a given instant.
///
/// ```
/// use adcp_sign::{Clock, FixedClock};
/// assert_eq!(FixedClock(1_776_520_800).now(), 1_776_520_800);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedClock(pub i64);

impl Clock for FixedClock {
    fn now(&self) -> i64 {
        self.0
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> i64 {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> i64 {
        (**self).now()
    }
}
