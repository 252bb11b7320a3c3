//! The circuit breaker of one destination origin, as a pure state machine;
//! the store keeps one row per origin so every process shares it.

use crate::schedule::ms;
use std::time::Duration;

/// When a destination origin's breaker opens and how long it stays open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    /// Consecutive failed attempts that open it (default 5)...
    pub failure_threshold: u32,
    /// ... spanning at least this long (default 5 s): a receiver that is
    /// up but refuses a burst (every first delivery of a backlog, say)
    /// answers a retry with a success within that time and never trips it.
    pub min_failing: Duration,
    /// How long it stays open the first time before one probe (default 5 s).
    pub initial_open: Duration,
    /// The longest it stays open between probes (default 5 min); each
    /// failed probe doubles the wait up to this.
    pub max_open: Duration,
}

impl Default for BreakerPolicy {
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            min_failing: Duration::from_secs(5),
            initial_open: Duration::from_secs(5),
            max_open: Duration::from_secs(300),
        }
    }
}

impl BreakerPolicy {
    /// How long the breaker stays open after its `opened`-th opening
    /// (1 for the first).
    #[must_use]
    pub fn open_for(&self, opened: u32) -> Duration {
        let factor = 1_u32.checked_shl(opened.saturating_sub(1).min(20)).unwrap_or(u32::MAX);
        self.initial_open
            .checked_mul(factor)
            .unwrap_or(self.max_open)
            .min(self.max_open)
    }
}

/// One origin's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BreakerState {
    /// Consecutive failures.
    pub failures: u32,
    /// Open: the origin's events wait, one probe per interval.
    pub open: bool,
    /// How many times it opened without closing in between.
    pub opened: u32,
    /// When the next probe may go out (Unix ms).
    pub retry_at_ms: i64,
    /// Until when the current probe's lease runs (Unix ms); no second
    /// probe before.
    pub probe_until_ms: i64,
    /// When the current run of consecutive failures began (Unix ms).
    pub failing_since_ms: i64,
}

/// What one attempt says about its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// The destination answered meaningfully (`2xx`, `409`, a signature
    /// refusal): it is up.
    Up,
    /// No answer, or an answer that asks for a retry (`5xx`, `429`, …).
    Down,
    /// Says nothing (not attempted).
    Unknown,
}

impl BreakerState {
    /// Whether events of this origin may not be claimed at `now_ms`.
    #[must_use]
    pub fn blocks(&self, now_ms: i64) -> bool {
        self.open && !self.probe_due(now_ms)
    }

    /// Whether one probe may go out now.
    #[must_use]
    pub fn probe_due(&self, now_ms: i64) -> bool {
        self.open && self.retry_at_ms <= now_ms && self.probe_until_ms <= now_ms
    }

    /// Marks a probe in flight until `until_ms`.
    pub fn start_probe(&mut self, until_ms: i64) {
        self.probe_until_ms = until_ms;
    }

    /// Applies one attempt's result (`probe`: the attempt was this
    /// breaker's probe); returns whether the open state changed. While
    /// open, only the probe's failure reopens it for longer: attempts that
    /// started before it opened say nothing new.
    pub fn record(&mut self, health: Health, probe: bool, now_ms: i64, policy: &BreakerPolicy) -> bool {
        let was_open = self.open;
        match health {
            Health::Unknown => return false,
            Health::Up => *self = Self::default(),
            Health::Down if self.open && !probe => return false,
            Health::Down => {
                if self.failures == 0 {
                    self.failing_since_ms = now_ms;
                }
                self.failures = self.failures.saturating_add(1);
                let long_enough = now_ms.saturating_sub(self.failing_since_ms) >= ms(policy.min_failing);
                if self.open || (self.failures >= policy.failure_threshold.max(1) && long_enough) {
                    self.open = true;
                    self.opened = self.opened.saturating_add(1);
                    self.retry_at_ms = now_ms.saturating_add(ms(policy.open_for(self.opened)));
                    self.probe_until_ms = 0;
                }
            }
        }
        was_open != self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_the_threshold_probes_and_closes_on_success() {
        let p = BreakerPolicy::default();
        let mut b = BreakerState::default();
        for _ in 0..10 {
            assert!(!b.record(Health::Down, false, 0, &p));
        }
        // Many failures in a burst do not open it: they must span 5 s.
        assert!(!b.record(Health::Down, false, 4_999, &p));
        assert!(b.record(Health::Down, false, 5_000, &p));
        // An attempt that started before it opened does not extend it.
        b.record(Health::Down, false, 5_010, &p);
        assert_eq!(b.retry_at_ms, 10_000);
        assert!(b.blocks(9_999) && !b.probe_due(9_999));
        assert!(b.probe_due(10_000));
        b.start_probe(20_000);
        assert!(b.blocks(11_000));
        b.record(Health::Down, true, 11_000, &p);
        assert_eq!(b.retry_at_ms, 21_000, "second opening waits twice as long");
        assert!(b.record(Health::Up, false, 22_000, &p));
        assert!(!b.blocks(22_000));
        assert_eq!(b, BreakerState::default());
        // A success inside a run of failures ends the run.
        for t in [0, 1_000, 2_000, 3_000] {
            b.record(Health::Down, false, t, &p);
        }
        b.record(Health::Up, false, 3_500, &p);
        for t in [4_000, 5_000, 6_000, 7_000, 8_000] {
            assert!(!b.record(Health::Down, false, t, &p), "{t}");
        }
        assert!(b.record(Health::Down, false, 9_000, &p));
    }

    #[test]
    fn open_time_is_capped() {
        let p = BreakerPolicy::default();
        assert_eq!(p.open_for(1), Duration::from_secs(5));
        assert_eq!(p.open_for(7), Duration::from_secs(300));
        assert_eq!(p.open_for(u32::MAX), Duration::from_secs(300));
    }
}
