//! Time is injected: signers stamp `created` from a [`Clock`], verifiers
//! check windows against one, key resolvers expire their caches by one,
//! and tests pin it (the conformance vectors' `reference_now`).

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in Unix seconds.
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch.
    fn now(&self) -> i64;
}

/// The system clock.
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
/// use adcp_sigbase::{Clock, FixedClock};
/// assert_eq!(FixedClock(1_776_520_800).now(), 1_776_520_800);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedClock(pub i64);

impl Clock for FixedClock {
    fn now(&self) -> i64 {
        self.0
    }
}

/// A closure returning Unix seconds is a clock: a test can move it, or
/// offset the system clock, without a type of its own.
///
/// ```
/// use adcp_sigbase::Clock;
/// use std::sync::atomic::{AtomicI64, Ordering};
/// use std::sync::Arc;
///
/// let t = Arc::new(AtomicI64::new(1_776_520_800));
/// let clock: Arc<dyn Clock> = Arc::new({
///     let t = Arc::clone(&t);
///     move || t.load(Ordering::SeqCst)
/// });
/// t.fetch_add(60, Ordering::SeqCst);
/// assert_eq!(clock.now(), 1_776_520_860);
/// ```
impl<F: Fn() -> i64 + Send + Sync> Clock for F {
    fn now(&self) -> i64 {
        self()
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> i64 {
        (**self).now()
    }
}
