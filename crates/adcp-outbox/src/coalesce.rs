//! Coalescing windows per notification type (the spec's "Coalescence").

use crate::error::OutboxError;
use std::collections::HashMap;
use std::time::Duration;

/// The types never coalesced, whatever the caller asks: a purge is not a
/// state, and delivery reports follow their own cadence (the spec exempts
/// them).
pub const NEVER_COALESCED: &[&str] = &[
    "creative.purged",
    "scheduled",
    "final",
    "delayed",
    "adjusted",
    "window_update",
];

/// The default coalescing window of each notification type: `impairment`
/// and `creative.status_changed` 300 s, `capabilities.changed` the
/// advertised `coalescence_window_seconds` when set, every other type none.
///
/// An event may ask for a shorter window (`0` for a latency-sensitive
/// impairment such as fraud or brand safety, which the spec forbids
/// holding for the general default); a longer one only when its
/// destination's registration records the buyer's opt-in
/// ([`OutboxDestination::coalescing_opt_in`](crate::OutboxDestination::coalescing_opt_in)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoalescingPolicy {
    defaults: HashMap<String, Duration>,
}

impl Default for CoalescingPolicy {
    fn default() -> Self {
        let five_minutes = Duration::from_secs(300);
        Self {
            defaults: HashMap::from([
                ("impairment".to_owned(), five_minutes),
                ("creative.status_changed".to_owned(), five_minutes),
            ]),
        }
    }
}

impl CoalescingPolicy {
    /// Sets the default window of a type (the `coalescence_window_seconds`
    /// advertised for `capabilities.changed`, say). Ignored for the types
    /// in [`NEVER_COALESCED`].
    #[must_use]
    pub fn with_default(mut self, notification_type: &str, window: Duration) -> Self {
        if !NEVER_COALESCED.contains(&notification_type) {
            self.defaults.insert(notification_type.to_owned(), window);
        }
        self
    }

    /// The default window of a type (zero: not coalesced).
    #[must_use]
    pub fn default_for(&self, notification_type: &str) -> Duration {
        self.defaults.get(notification_type).copied().unwrap_or_default()
    }

    /// The window an event is held for: its own when given (at most the
    /// type's default, or the destination's opt-in), else the type's
    /// default; zero without a coalescing key or for a type never
    /// coalesced.
    ///
    /// # Errors
    ///
    /// `coalescing_window_too_long` for a window above what the type and
    /// the destination allow.
    pub fn window(
        &self,
        notification_type: Option<&str>,
        has_key: bool,
        own: Option<Duration>,
        opt_in: Option<Duration>,
    ) -> Result<Duration, OutboxError> {
        let Some(kind) = notification_type else {
            return Ok(Duration::ZERO);
        };
        if !has_key || NEVER_COALESCED.contains(&kind) {
            return Ok(Duration::ZERO);
        }
        let default = self.default_for(kind);
        let Some(own) = own else {
            return Ok(default);
        };
        let allowed = default.max(opt_in.unwrap_or_default());
        if own > allowed {
            return Err(OutboxError::invalid(
                "coalescing_window_too_long",
                format!(
                    "coalescing window of {} s exceeds the {} s allowed for {kind} on this destination (a longer one needs the buyer's opt-in)",
                    own.as_secs(),
                    allowed.as_secs()
                ),
            ));
        }
        Ok(own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_own_windows_and_opt_in() {
        let p = CoalescingPolicy::default();
        let s = Duration::from_secs;
        assert_eq!(p.window(Some("impairment"), true, None, None), Ok(s(300)));
        assert_eq!(p.window(Some("impairment"), true, Some(s(0)), None), Ok(s(0)));
        assert_eq!(p.window(Some("impairment"), false, None, None), Ok(s(0)));
        assert!(p.window(Some("impairment"), true, Some(s(301)), None).is_err());
        assert_eq!(
            p.window(Some("impairment"), true, Some(s(900)), Some(s(900))),
            Ok(s(900))
        );
        assert_eq!(
            p.window(Some("creative.purged"), true, Some(s(60)), Some(s(600))),
            Ok(s(0))
        );
        assert_eq!(p.window(Some("account.status_changed"), true, None, None), Ok(s(0)));
        assert!(p
            .window(Some("account.status_changed"), true, Some(s(1)), None)
            .is_err());
        let p = p.with_default("capabilities.changed", s(120));
        assert_eq!(p.window(Some("capabilities.changed"), true, None, None), Ok(s(120)));
        assert_eq!(p.window(None, true, Some(s(10)), None), Ok(s(0)));
    }
}
