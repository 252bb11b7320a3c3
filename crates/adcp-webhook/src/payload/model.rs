//! The parse step every kind shares: required members present, key valid,
//! typed members deserialized, then the kind's own identity checks.

use super::ident::{is_notification_id, is_subscriber_id, is_valid_idempotency_key};
use super::PayloadError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A typed payload kind.
pub(crate) trait Model: DeserializeOwned {
    /// The schema's required members other than `idempotency_key` (which
    /// has its own error code). Absent or `null` is
    /// `missing_envelope_fields`.
    const REQUIRED: &'static [&'static str];

    /// Required members whose schema allows `null`: only absence is
    /// `missing_envelope_fields`.
    const REQUIRED_NULLABLE: &'static [&'static str] = &[];

    /// Identity checks beyond JSON types (identifier patterns).
    fn check(&self) -> Result<(), PayloadError> {
        Ok(())
    }
}

/// Reads `value` (whose object is `obj`) as `T`. `keyed`: whether the
/// kind requires an `idempotency_key` (every kind but the challenges and
/// A2A).
pub(crate) fn parse<T: Model>(obj: &Map<String, Value>, value: &Value, keyed: bool) -> Result<T, PayloadError> {
    if T::REQUIRED.iter().any(|m| obj.get(*m).is_none_or(Value::is_null)) {
        return Err(PayloadError::MissingEnvelopeFields);
    }
    if T::REQUIRED_NULLABLE.iter().any(|m| !obj.contains_key(*m)) {
        return Err(PayloadError::MissingEnvelopeFields);
    }
    if keyed && !valid_key(obj) {
        return Err(PayloadError::MissingIdempotencyKey);
    }
    // Deserializing from `&Value` copies only what the model keeps: work
    // and memory are linear in a body that is already in memory.
    let model = T::deserialize(value).map_err(|_| PayloadError::InvalidPayloadMember)?;
    model.check()?;
    Ok(model)
}

/// Whether `obj` carries an `idempotency_key` of the schemas' shape.
pub(crate) fn valid_key(obj: &Map<String, Value>) -> bool {
    obj.get("idempotency_key")
        .and_then(Value::as_str)
        .is_some_and(is_valid_idempotency_key)
}

/// The members every `notification_type`-discriminated notification
/// (account-level and agent-level) starts with: transport identity
/// (`idempotency_key`), logical identity (`notification_id`), the type,
/// when it fired, and which subscriber registration it is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationHeader {
    /// Per-delivery dedup key, stable across retries.
    pub idempotency_key: String,
    /// Logical notification identity, stable across re-emissions
    /// (`[A-Za-z0-9_.:-]{1,255}`; a UUID for wholesale feed events).
    pub notification_id: String,
    /// The `notification_type` (`creative.status_changed`, …).
    pub notification_type: String,
    /// When this delivery was fired (RFC 3339).
    pub fired_at: String,
    /// The subscriber registration (`[A-Za-z0-9_.:-]{1,64}`).
    pub subscriber_id: String,
}

impl NotificationHeader {
    pub(crate) fn check(&self) -> Result<(), PayloadError> {
        if is_notification_id(&self.notification_id) && is_subscriber_id(&self.subscriber_id) {
            Ok(())
        } else {
            Err(PayloadError::InvalidPayloadMember)
        }
    }
}

/// Declares a notification kind's [`Model`] impl: its required members
/// beyond the header, and the header check.
macro_rules! notification_model {
    ($ty:ty, [$($req:literal),* $(,)?] $(, nullable [$($nul:literal),*])?) => {
        impl $crate::payload::model::Model for $ty {
            const REQUIRED: &'static [&'static str] = &[
                "notification_id", "notification_type", "fired_at", "subscriber_id", $($req),*
            ];
            $(const REQUIRED_NULLABLE: &'static [&'static str] = &[$($nul),*];)?
            fn check(&self) -> Result<(), $crate::payload::PayloadError> {
                self.header.check()
            }
        }
    };
}
pub(crate) use notification_model;
