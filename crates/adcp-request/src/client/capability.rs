//! The counterparty's `request_signing` capability: read from a
//! `get_adcp_capabilities` response and cached per agent with a TTL.

use adcp_verify::request_policy::{CapabilityError, VerifierCapability};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The default capability TTL: 15 minutes. Capabilities change rarely
/// (a seller announces a change with the `capabilities.changed` webhook),
/// and a stale entry is repaired on the first `request_signature_required`
/// challenge anyway.
pub const DEFAULT_CAPABILITY_TTL: Duration = Duration::from_secs(15 * 60);

/// Reads the `request_signing` block from a `get_adcp_capabilities`
/// response, from an MCP tool result carrying it as `structuredContent`,
/// or from the block itself (an object with a `supported` member and
/// nothing but block members).
///
/// A response without `request_signing` (or with `null`) is a counterparty
/// that does not verify signatures: [`VerifierCapability::unsupported`].
/// The block is read with the verifier's strict reader, so a block a
/// verifier would refuse (unknown member, `supported: true` without
/// `covers_content_digest`, a name in the wrong namespace) is an error
/// here too rather than a guess.
///
/// # Errors
///
/// The [`CapabilityError`] of the block.
///
/// ```
/// use adcp_request::read_capability;
/// use adcp_verify::request_policy::Mode;
/// use serde_json::json;
///
/// let response = json!({
///     "adcp": {"major_versions": [3]},
///     "request_signing": {"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]}
/// });
/// let cap = read_capability(&response)?;
/// assert_eq!(cap.operation_mode("create_media_buy"), Mode::Required);
/// assert_eq!(read_capability(&response["request_signing"])?, cap);
/// assert!(!read_capability(&json!({"adcp": {"major_versions": [3]}}))?.supported());
/// # Ok::<(), adcp_verify::request_policy::CapabilityError>(())
/// ```
pub fn read_capability(document: &Value) -> Result<VerifierCapability, CapabilityError> {
    let Value::Object(map) = document else {
        return Err(CapabilityError::NotAnObject);
    };
    if let Some(block) = map.get("request_signing") {
        return match block {
            Value::Null => Ok(VerifierCapability::unsupported()),
            block => VerifierCapability::from_json(block),
        };
    }
    if let Some(inner @ Value::Object(_)) = map.get("structuredContent") {
        return read_capability(inner);
    }
    if map.contains_key("supported") && map.keys().all(|k| is_block_member(k)) {
        return VerifierCapability::from_json(document);
    }
    Ok(VerifierCapability::unsupported())
}

fn is_block_member(key: &str) -> bool {
    matches!(
        key,
        "supported"
            | "covers_content_digest"
            | "required_for"
            | "warn_for"
            | "supported_for"
            | "protocol_methods_required_for"
            | "protocol_methods_warn_for"
            | "protocol_methods_supported_for"
    )
}

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
    use serde_json::json;

    #[test]
    fn documents() {
        let block = json!({"supported": true, "covers_content_digest": "required", "warn_for": ["get_products"]});
        let wrapped = json!({"structuredContent": {"request_signing": block.clone()}});
        assert!(read_capability(&wrapped).unwrap().supported());
        assert!(read_capability(&block).unwrap().supported());
        assert!(!read_capability(&json!({"request_signing": null})).unwrap().supported());
        assert!(read_capability(&json!({"request_signing": {"supported": true}})).is_err());
        assert!(read_capability(&json!([])).is_err());
        // An unrelated object with a `supported` member is not a block.
        assert!(!read_capability(&json!({"supported": true, "media_buy": {}}))
            .unwrap()
            .supported());
    }

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
