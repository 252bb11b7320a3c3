//! [`WebhookEvent`]: one logical webhook event, serialized once, with its
//! idempotency key.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::{Body, IdempotencyKey, OsRandom, RandomSource, SignError};
use adcp_strict_json::Limits;

/// One logical webhook event: its `idempotency_key` and its body bytes,
/// fixed when the event is built.
///
/// Build the event once, then sign it for each delivery attempt with
/// [`HttpSigner::sign_webhook`](crate::HttpSigner::sign_webhook): every
/// attempt gets a fresh nonce and window over the *same* body bytes, so
/// retries carry the same key and the same payload by construction (the
/// AdCP sender rule: one key per event, reused on every retry, never for a
/// changed payload). Keep the event (or its key, to rebuild it with
/// [`WebhookEvent::with_idempotency_key`]) in the outbox for as long as
/// the event may be retried.
///
/// ```
/// use adcp_sign::WebhookEvent;
///
/// #[derive(serde::Serialize)]
/// struct TaskStatus<'a> {
///     task_id: &'a str,
///     status: &'a str,
/// }
///
/// let event = WebhookEvent::new(&TaskStatus { task_id: "task_456", status: "completed" })?;
/// let expected = format!(
///     r#"{{"idempotency_key":"{}","task_id":"task_456","status":"completed"}}"#,
///     event.idempotency_key().as_str()
/// );
/// assert_eq!(event.body().as_str(), expected);
///
/// // A payload that already carries a key is refused, not silently doubled.
/// let err = WebhookEvent::new(&serde_json::json!({"idempotency_key": "x", "status": "completed"})).unwrap_err();
/// assert_eq!(err.code(), "duplicate_key_input");
/// # Ok::<(), adcp_sign::SignError>(())
/// ```
#[derive(Debug, Clone)]
pub struct WebhookEvent {
    key: IdempotencyKey,
    body: Body,
}

/// The payload with `idempotency_key` first, serialized in one pass.
#[derive(Serialize)]
struct Envelope<'a, T: ?Sized> {
    idempotency_key: &'a str,
    #[serde(flatten)]
    payload: &'a T,
}

/// The one member `from_json_bytes` reads.
#[derive(Deserialize)]
struct KeyOnly<'a> {
    #[serde(borrow, default)]
    idempotency_key: Option<Cow<'a, str>>,
}

impl WebhookEvent {
    /// An event for `payload` (a struct or map serializing to a JSON
    /// object, without an `idempotency_key` member) with a fresh UUID v4
    /// key from the operating system's CSPRNG, inserted as the first
    /// member.
    ///
    /// # Errors
    ///
    /// `randomness_unavailable`; `payload_not_serializable` (including a
    /// payload that is not an object); `duplicate_key_input` if the
    /// payload already has an `idempotency_key` (use
    /// [`WebhookEvent::with_idempotency_key`] or
    /// [`WebhookEvent::from_json_bytes`] for a key you keep) or emits any
    /// member twice.
    pub fn new<T: Serialize + ?Sized>(payload: &T) -> Result<Self, SignError> {
        Self::new_with(payload, &OsRandom)
    }

    /// As [`WebhookEvent::new`], with the key drawn from `random`.
    ///
    /// # Errors
    ///
    /// As [`WebhookEvent::new`].
    pub fn new_with<T: Serialize + ?Sized, R: RandomSource + ?Sized>(
        payload: &T,
        random: &R,
    ) -> Result<Self, SignError> {
        Self::with_idempotency_key(IdempotencyKey::generate_with(random)?, payload)
    }

    /// An event for `payload` with a key the caller kept (to rebuild an
    /// event after a restart, say). The same key and payload give the same
    /// body bytes.
    ///
    /// # Errors
    ///
    /// As [`WebhookEvent::new`], without `randomness_unavailable`.
    pub fn with_idempotency_key<T: Serialize + ?Sized>(key: IdempotencyKey, payload: &T) -> Result<Self, SignError> {
        Self::with_idempotency_key_and_limits(key, payload, &Limits::default())
    }

    /// As [`WebhookEvent::with_idempotency_key`], checking the body with
    /// `limits` instead of the default 1 MiB: a seller whose receivers
    /// accept larger bodies raises it to their limit.
    ///
    /// # Errors
    ///
    /// As [`WebhookEvent::with_idempotency_key`].
    pub fn with_idempotency_key_and_limits<T: Serialize + ?Sized>(
        key: IdempotencyKey,
        payload: &T,
        limits: &Limits,
    ) -> Result<Self, SignError> {
        let body = Body::json_with_limits(
            &Envelope {
                idempotency_key: key.as_str(),
                payload,
            },
            limits,
        )?;
        Ok(Self { key, body })
    }

    /// An event from pre-serialized JSON bytes, used verbatim. The bytes
    /// must be a JSON object with a string `idempotency_key` member that
    /// passes [`IdempotencyKey::new`].
    ///
    /// # Errors
    ///
    /// The errors of [`Body::from_json_bytes`] (`duplicate_key_input`,
    /// `invalid_json_input`), then `payload_not_object`,
    /// `idempotency_key_missing`, `idempotency_key_invalid`.
    pub fn from_json_bytes(bytes: impl Into<Vec<u8>>) -> Result<Self, SignError> {
        Self::from_json_bytes_with_limits(bytes, &Limits::default())
    }

    /// As [`WebhookEvent::from_json_bytes`], checking the body with
    /// `limits` instead of the default 1 MiB.
    ///
    /// # Errors
    ///
    /// As [`WebhookEvent::from_json_bytes`].
    pub fn from_json_bytes_with_limits(bytes: impl Into<Vec<u8>>, limits: &Limits) -> Result<Self, SignError> {
        let body = Body::from_json_bytes_with_limits(bytes, limits)?;
        if !body.as_str().trim_start().starts_with('{') {
            return Err(SignError::PayloadNotObject);
        }
        // The strict check passed, so there is exactly one member of that
        // name and every parser reads the same value.
        let key: KeyOnly<'_> = serde_json::from_str(body.as_str()).map_err(|_| SignError::IdempotencyKeyMissing)?;
        let key = key.idempotency_key.ok_or(SignError::IdempotencyKeyMissing)?;
        let key = IdempotencyKey::new(key.into_owned())?;
        Ok(Self { key, body })
    }

    /// The event's idempotency key.
    #[must_use]
    pub fn idempotency_key(&self) -> &IdempotencyKey {
        &self.key
    }

    /// The body bytes, the same for every delivery attempt.
    #[must_use]
    pub fn body(&self) -> &Body {
        &self.body
    }
}
