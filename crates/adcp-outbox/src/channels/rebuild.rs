//! An event never attempted, rebuilt for its channel's new registration:
//! the same body and `notification_id`, the new `token`, a new
//! `idempotency_key` (the old key's bytes are bound to the old body), the
//! new destination.

use super::registration::ChannelRegistration;
use crate::error::OutboxError;
use crate::event::NewEvent;
use crate::outbox::Outbox;
use crate::store::{Insert, Unattempted};
use adcp_sign::WebhookEvent;
use serde_json::{Map, Value};

/// The replacement of `old` for `channel`'s registration.
pub(super) fn rebuild(
    outbox: &Outbox,
    channel: &ChannelRegistration,
    old: &Unattempted,
) -> Result<Insert, OutboxError> {
    let plain = match (&old.key_id, &outbox.config().encryption) {
        (None, _) => old.body.clone(),
        (Some(_), Some(ring)) => ring.open(old.id.as_str(), "body", &old.body)?,
        (Some(id), None) => {
            return Err(OutboxError::Crypto(format!(
                "event {} is sealed with key {id:?} and no keyring is configured",
                old.id
            )))
        }
    };
    let mut body: Map<String, Value> = serde_json::from_slice(&plain)
        .map_err(|_| OutboxError::Schema(format!("event {}: unreadable body", old.id)))?;
    body.remove("idempotency_key");
    // The token travels in the body: the new registration's, or none.
    match channel.registration().get("token").and_then(Value::as_str) {
        Some(token)
            if body.contains_key("token")
                || matches!(
                    channel.kind(),
                    super::ChannelKind::PushNotificationConfig | super::ChannelKind::ReportingWebhook
                ) =>
        {
            body.insert("token".to_owned(), Value::String(token.to_owned()));
        }
        _ => {
            body.remove("token");
        }
    }
    let event = WebhookEvent::new_with(&body, outbox.config().random.as_ref())
        .map_err(|e| OutboxError::invalid("invalid_payload", e.to_string()))?;
    let mut new = NewEvent::new(event, channel.destination()?)
        .signing_scope(old.signing_scope.clone())
        .channel(channel.id().to_owned());
    if let Some(principal) = &old.principal {
        new = new.principal(principal.clone());
    }
    if let Some(key) = &old.coalescing_key {
        new = new.coalescing_key(key.clone());
    }
    let mut row = outbox.prepare(new)?;
    // A held event keeps the time it was held until.
    row.coalescing_window_ms = old.next_attempt_at.saturating_sub(row.enqueued_at_ms).max(0);
    Ok(row)
}
