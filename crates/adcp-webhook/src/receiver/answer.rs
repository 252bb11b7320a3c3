//! The one body shape of every non-`2xx` answer:
//! `{"error": "<code>", "message": "<fixed text for that code>"}`.
//!
//! The message is a constant per code. Verification details, fetch errors
//! and anything from the request stay in the local logs: the spec forbids
//! echoing them to the counterparty, and a sender needs only the code to
//! decide whether to retry.

use super::outcome;
use bytes::Bytes;

/// The fixed message of a receiver outcome that is not a verifier code
/// (verifier codes carry their own, [`adcp_verify::VerifyError::message`]).
#[must_use]
pub fn outcome_message(label: &str) -> &'static str {
    match label {
        outcome::PAYLOAD_TOO_LARGE => "The body exceeds this endpoint's size limit.",
        outcome::UNSUPPORTED_MEDIA_TYPE => "The body must be application/json.",
        outcome::BODY_UNREADABLE => "The body could not be read.",
        outcome::TARGET_UNKNOWN => "The request carries no authority to rebuild its target URI.",
        outcome::IDEMPOTENCY_CONFLICT => "This idempotency_key was already used with a different payload.",
        outcome::IN_PROGRESS => "This event is being processed; retry later.",
        outcome::REEMISSION_IN_FLIGHT => "Another delivery of this notification is being processed; retry later.",
        outcome::SENDER_CAP_REACHED => "Too many events in flight from this sender; retry later.",
        outcome::STORE_UNAVAILABLE => "The idempotency store is unavailable; retry later.",
        outcome::HANDLER_FAILED => "The event could not be applied; retry later.",
        outcome::COMPLETION_FAILED => "The event could not be recorded as applied; retry later.",
        outcome::SUBSCRIPTION_MISMATCH => "The notification does not match the subscription registered for this URL.",
        outcome::CHALLENGE_REFUSED => "The activation challenge was not accepted.",
        outcome::CHALLENGE_MALFORMED => "The activation challenge does not match its schema.",
        outcome::SUBSCRIPTIONS_UNAVAILABLE => "The subscriber registrations are unavailable; retry later.",
        _ => "The webhook was not accepted.",
    }
}

/// The JSON body for `code` and `message` (both constants: no escaping
/// concerns, but serialized properly all the same).
#[must_use]
pub fn error_body(code: &str, message: &str) -> Bytes {
    let value = serde_json::json!({ "error": code, "message": message });
    Bytes::from(value.to_string())
}
