//! The check that runs before every attempt, retries included.

use crate::store::Claimed;

/// What [`AttemptHook::before_attempt`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    /// Send it.
    Proceed,
    /// Never send it: the event is refused with this reason, without an
    /// attempt (an agent-level subscription that lost its account
    /// authority, a buy that ended, …).
    Suppress(String),
}

/// Runs before every attempt of every event. The spec evaluates an
/// agent-level subscription's account authority per attempt, retries
/// included, and losing it suppresses the queued retries: this is where a
/// seller does that.
#[async_trait::async_trait]
pub trait AttemptHook: Send + Sync + 'static {
    /// Whether `event` may be sent now.
    async fn before_attempt(&self, event: &Claimed) -> HookDecision;
}
