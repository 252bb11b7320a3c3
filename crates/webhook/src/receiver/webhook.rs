//! [`Webhook`]: what the application handler receives.

use crate::extract::{self, ExtractError, PayloadFormat};
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

#[derive(Debug)]
struct Parts {
    sender: String,
    keyid: Option<String>,
    scheme: WebhookScheme,
    idempotency_key: String,
    format: PayloadFormat,
    raw: Bytes,
    payload: Value,
    attempt: u32,
}

impl Webhook {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        sender: String,
        keyid: Option<String>,
        scheme: WebhookScheme,
        idempotency_key: String,
        format: PayloadFormat,
        raw: Bytes,
        payload: Value,
        attempt: u32,
    ) -> Self {
        Self {
            inner: Arc::new(Parts {
                sender,
                keyid,
                scheme,
                idempotency_key,
                format,
                raw,
                payload,
                attempt,
            }),
        }
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

    /// The dedup key: the payload's `idempotency_key` (MCP), or
    /// `a2a:<payload fingerprint>` for A2A deliveries.
    #[must_use]
    pub fn idempotency_key(&self) -> &str {
        &self.inner.idempotency_key
    }

    /// The registration's envelope format.
    #[must_use]
    pub fn format(&self) -> PayloadFormat {
        self.inner.format
    }

    /// The exact bytes that were verified.
    #[must_use]
    pub fn raw(&self) -> &Bytes {
        &self.inner.raw
    }

    /// The parsed payload (the full envelope).
    #[must_use]
    pub fn payload(&self) -> &Value {
        &self.inner.payload
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
        extract::extract(&self.inner.payload, Some(self.inner.format))
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
