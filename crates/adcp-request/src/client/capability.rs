//! The counterparty's `request_signing` capability, cached per agent with
//! a TTL.

use adcp_verify::request_policy::VerifierCapability;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The default capability TTL: 15 minutes. Capabilities change rarely
/// (a seller announces a change with the `capabilities.changed` webhook),
/// and a stale entry is repaired on the first `request_signature_required`
/// challenge anyway.
pub const DEFAULT_CAPABILITY_TTL: Duration = Duration::from_secs(15 * 60);

/// Capabilities primed from `get_adcp_capabilities`, per agent URL, each
/// valid for a TTL counted on the client's clock (Unix seconds).
///
/// ```
/// use adcp_request::CapabilityCache;
/// use adcp_verify::request_policy::VerifierCapability;
/// use std::time::Duration;
///
/// let cache = CapabilityCache::new(Duration::from_secs(60));
/// cache.insert("https://seller.example/mcp", VerifierCapability::unsupported(), 1_000);
/// assert!(cache.get("https://seller.example/mcp", 1_059).is_some());
/// assert!(cache.get("https://seller.example/mcp", 1_060).is_none());
/// ```
#[derive(Debug)]
pub struct CapabilityCache {
    ttl: i64,
    entries: Mutex<HashMap<String, (VerifierCapability, i64)>>,
}

impl Default for CapabilityCache {
    fn default() -> Self {
        Self::new(DEFAULT_CAPABILITY_TTL)
    }
}

impl CapabilityCache {
    /// An empty cache whose entries live `ttl` (whole seconds, at least 1).
    #[must_use]
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl: i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX).max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The TTL in seconds.
    #[must_use]
    pub fn ttl_secs(&self) -> i64 {
        self.ttl
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (VerifierCapability, i64)>> {
        // A panic while holding the lock cannot leave a half-written entry.
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The capability of `agent` if it was primed less than the TTL before
    /// `now`.
    #[must_use]
    pub fn get(&self, agent: &str, now: i64) -> Option<VerifierCapability> {
        let entries = self.lock();
        let (capability, primed_at) = entries.get(agent)?;
        (now >= *primed_at && now - primed_at < self.ttl).then(|| capability.clone())
    }

    /// Stores the capability of `agent`, primed at `now`.
    pub fn insert(&self, agent: &str, capability: VerifierCapability, now: i64) {
        self.lock().insert(agent.to_owned(), (capability, now));
    }

    /// Forgets the capability of `agent` (the next call primes again).
    pub fn invalidate(&self, agent: &str) {
        self.lock().remove(agent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_clock_going_back_misses() {
        let cache = CapabilityCache::new(Duration::from_secs(10));
        cache.insert("a", VerifierCapability::unsupported(), 100);
        assert!(cache.get("a", 100).is_some());
        assert!(cache.get("a", 109).is_some());
        assert!(cache.get("a", 110).is_none());
        assert!(cache.get("a", 99).is_none());
        assert!(cache.get("b", 100).is_none());
        cache.invalidate("a");
        assert!(cache.get("a", 100).is_none());
    }
}
