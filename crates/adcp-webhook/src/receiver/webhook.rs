//! [`Webhook`]: what the application handler receives.

use crate::extract::{self, ExtractError, PayloadFormat};
use crate::payload::{PayloadKind, WebhookPayload};
use adcp_verify::legacy::WebhookScheme;
use bytes::Bytes;
use serde_json::Value;
use std::sync::Arc;

/// A verified, claimed webhook: the authenticated sender, the raw bytes
/// that were verified, and the parsed payload. Cheap to clone.
///
/// The tower layer puts it in the request extensions; with the `axum`
/// feature it is an extractor (`async fn hook(webhook: Webhook)`), which
/// answers `500` if the route is not behind a [`ReceiverLayer`](super::ReceiverLayer).
#[derive(Debug, Clone)]
pub struct Webhook {
    inner: Arc<Parts>,
}

/// Everything the receiver established about one delivery.
#[derive(Debug)]
pub(crate) struct Parts {
    pub(crate) sender: String,
    pub(crate) keyid: Option<String>,
    pub(crate) scheme: WebhookScheme,
    pub(crate) idempotency_key: String,
    pub(crate) raw: Bytes,
    /// The body as a JSON value, built from `typed` on first use (most
    /// handlers and the gateway never ask; the typed model is exact).
    pub(crate) payload: std::sync::OnceLock<Value>,
    pub(crate) typed: WebhookPayload,
    pub(crate) reemission_of: Option<String>,
    pub(crate) attempt: u32,
}

impl Webhook {
    pub(crate) fn new(parts: Parts) -> Self {
        Self { inner: Arc::new(parts) }
    }

    /// The authenticated sender identity: the signer's `agents[]` URL
    /// under RFC 9421, the configured credential binding under a legacy
    /// scheme. The dedup scope; never a payload field.
    #[must_use]
    pub fn sender(&self) -> &str {
        &self.inner.sender
    }

    /// The verified `keyid` (RFC 9421 only).
    #[must_use]
    pub fn keyid(&self) -> Option<&str> {
        self.inner.keyid.as_deref()
    }

    /// The scheme that verified.
    #[must_use]
    pub fn scheme(&self) -> WebhookScheme {
        self.inner.scheme
    }

    /// The dedup key: the payload's `idempotency_key` (every kind but
    /// A2A), or `a2a:<payload fingerprint>` for A2A deliveries.
    #[must_use]
    pub fn idempotency_key(&self) -> &str {
        &self.inner.idempotency_key
    }

    /// The envelope format: A2A for A2A task deliveries, MCP (an AdCP
    /// envelope) for every other kind.
    #[must_use]
    pub fn format(&self) -> PayloadFormat {
        match self.inner.typed.kind() {
            PayloadKind::A2aTask => PayloadFormat::A2a,
            _ => PayloadFormat::Mcp,
        }
    }

    /// The payload's kind.
    #[must_use]
    pub fn kind(&self) -> PayloadKind {
        self.inner.typed.kind()
    }

    /// The typed payload ([`WebhookPayload`]), for the identity members
    /// and the kind's own fields; [`Self::payload`] is the same body as a
    /// JSON value.
    #[must_use]
    pub fn typed(&self) -> &WebhookPayload {
        &self.inner.typed
    }

    /// The logical notification identity (`notification_id`), stable
    /// across re-emissions, when the payload has a valid one
    /// (`^[A-Za-z0-9_.:-]{1,255}$`).
    #[must_use]
    pub fn notification_id(&self) -> Option<&str> {
        self.inner
            .typed
            .notification_id()
            .filter(|id| crate::payload::is_valid_notification_id(id))
    }

    /// The notification type (`notification_type`, or a list-change
    /// webhook's `event`), when the payload has one.
    #[must_use]
    pub fn notification_type(&self) -> Option<&str> {
        self.inner.typed.notification_type()
    }

    /// For a re-emission — a new `idempotency_key` carrying a
    /// `notification_id` this sender already delivered — the first
    /// delivery's `idempotency_key`. The handler sees a new delivery of a
    /// known notification and can repair rather than re-apply.
    #[must_use]
    pub fn reemission_of(&self) -> Option<&str> {
        self.inner.reemission_of.as_deref()
    }

    /// The exact bytes that were verified.
    #[must_use]
    pub fn raw(&self) -> &Bytes {
        &self.inner.raw
    }

    /// The parsed payload (the full envelope).
    #[must_use]
    pub fn payload(&self) -> &Value {
        self.inner
            .payload
            .get_or_init(|| serde_json::to_value(&self.inner.typed).unwrap_or(Value::Null))
    }

    /// 1 on the first claim of this event; more when an earlier receiver's
    /// lease expired before it completed (its side effects may have run).
    #[must_use]
    pub fn claim_attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// The AdCP data ([`extract::extract`] in the registration's format).
    ///
    /// # Errors
    ///
    /// [`ExtractError`].
    pub fn data(&self) -> Result<Option<&Value>, ExtractError> {
        extract::extract(self.payload(), Some(self.format()))
    }
}

#[cfg(feature = "axum")]
impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Webhook {
    type Rejection = http::StatusCode;

    async fn from_request_parts(parts: &mut http::request::Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Webhook>()
            .cloned()
            .ok_or(http::StatusCode::INTERNAL_SERVER_ERROR)
    }
}
