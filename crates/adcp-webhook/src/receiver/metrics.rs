//! Per-outcome counters of a receiver.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// Outcome labels that are not verifier codes.
pub mod outcome {
    /// Verified, claimed, handled and completed.
    pub const ACCEPTED: &str = "accepted";
    /// A durably completed duplicate, answered `200` without the handler.
    pub const DUPLICATE: &str = "duplicate";
    /// Body over the size limit (`413`), rejected before hashing.
    pub const PAYLOAD_TOO_LARGE: &str = "payload_too_large";
    /// Content type other than `application/json` (`415`).
    pub const UNSUPPORTED_MEDIA_TYPE: &str = "unsupported_media_type";
    /// The body could not be read (`400`).
    pub const BODY_UNREADABLE: &str = "body_unreadable";
    /// The request has no `Host` / authority to rebuild `@target-uri` (`400`).
    pub const TARGET_UNKNOWN: &str = "target_uri_unknown";
    /// Same key, different payload (`409`).
    pub const IDEMPOTENCY_CONFLICT: &str = "idempotency_conflict";
    /// Another receiver is processing the same event (`503`).
    pub const IN_PROGRESS: &str = "in_progress";
    /// The sender is at its dedup cap (`429`).
    pub const SENDER_CAP_REACHED: &str = "sender_cap_reached";
    /// The idempotency store could not answer (`503`).
    pub const STORE_UNAVAILABLE: &str = "idempotency_store_unavailable";
    /// The handler failed; the claim was released (handler's status).
    pub const HANDLER_FAILED: &str = "handler_failed";
    /// The handler succeeded but completion could not be recorded (`503`).
    pub const COMPLETION_FAILED: &str = "completion_failed";
    /// A notification to a registered URL outside its registration
    /// (another `subscriber_id`, an unregistered event type, a paused
    /// subscription): `403`, not delivered. An SDK code.
    pub const SUBSCRIPTION_MISMATCH: &str = "subscription_mismatch";
    /// A signed activation challenge that fails a binding (`403`).
    pub const CHALLENGE_REFUSED: &str = "challenge_refused";
    /// An activation challenge that violates its schema (`400`).
    pub const CHALLENGE_MALFORMED: &str = "challenge_malformed";
    /// An activation challenge answered (`200`, the value echoed).
    pub const CHALLENGE_ANSWERED: &str = "challenge_answered";
    /// The application's registrations could not be read (`503`).
    pub const SUBSCRIPTIONS_UNAVAILABLE: &str = "subscriptions_unavailable";
    /// A re-emission (known `notification_id`, new `idempotency_key`)
    /// delivered to the handler, marked [`Webhook::reemission_of`](crate::receiver::Webhook::reemission_of).
    pub const REEMISSION: &str = "reemission";
    /// A re-emission (known `notification_id`, new `idempotency_key`) of a
    /// terminal task result: answered `2xx`, not delivered.
    pub const REEMISSION_SUPPRESSED: &str = "reemission_suppressed";
    /// A delivery of a `notification_id` whose first delivery, under
    /// another `idempotency_key`, is still being applied: `503`, not
    /// delivered, so that the sender's retry arrives once the first is
    /// recorded and is delivered marked as its re-emission.
    pub const REEMISSION_IN_FLIGHT: &str = "reemission_in_flight";
}

/// Counters keyed by outcome: [`outcome`] labels and the verifier's exact
/// codes (`webhook_signature_invalid`, …). Cheap to share behind the
/// receiver's `Arc`.
#[derive(Debug, Default)]
pub struct Metrics {
    counts: Mutex<HashMap<&'static str, u64>>,
}

impl Metrics {
    /// Adds one to `label`.
    pub fn incr(&self, label: &'static str) {
        if let Ok(mut counts) = self.counts.lock() {
            *counts.entry(label).or_insert(0) += 1;
        }
    }

    /// The count of `label`.
    #[must_use]
    pub fn get(&self, label: &str) -> u64 {
        self.counts
            .lock()
            .map(|c| c.get(label).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// Every non-zero counter, sorted by label.
    #[must_use]
    pub fn snapshot(&self) -> BTreeMap<&'static str, u64> {
        self.counts
            .lock()
            .map(|c| c.iter().map(|(k, v)| (*k, *v)).collect())
            .unwrap_or_default()
    }
}
