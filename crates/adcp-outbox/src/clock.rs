//! Time in the outbox: Unix milliseconds from an injectable clock, and the
//! RFC 3339 form the activity records carry.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock every schedule decision reads (Unix milliseconds).
/// Tests inject a [`ManualClock`] to move past horizons and windows
/// without waiting.
pub trait Clock: Send + Sync + 'static {
    /// Now, in Unix milliseconds.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told to; clones share the time.
///
/// ```
/// use adcp_outbox::{Clock, ManualClock};
/// let clock = ManualClock::new(1_000);
/// clock.advance_ms(500);
/// assert_eq!(clock.clone().now_ms(), 1_500);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock reading `now_ms`.
    #[must_use]
    pub fn new(now_ms: i64) -> Self {
        Self(Arc::new(AtomicI64::new(now_ms)))
    }

    /// Sets the time.
    pub fn set_ms(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time forward.
    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// `2026-04-18T12:00:00.123Z` for Unix milliseconds (UTC, millisecond
/// precision; years before 1970 are clamped to the epoch).
///
/// ```
/// assert_eq!(adcp_outbox::rfc3339_ms(1_776_513_600_123), "2026-04-18T12:00:00.123Z");
/// ```
#[must_use]
pub fn rfc3339_ms(ms: i64) -> String {
    let at = jiff::Timestamp::from_millisecond(ms.max(0)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    format!("{at:.3}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(4_102_444_799_999), "2099-12-31T23:59:59.999Z");
        assert_eq!(rfc3339_ms(-5), "1970-01-01T00:00:00.000Z");
    }
}
