//! [`LegacyHmacSigner`]: the deprecated AdCP HMAC-SHA256 webhook scheme.

use core::fmt;

use adcp_sigbase::crypto::SigningKey;

use crate::software::key_error;
use crate::{Body, Clock, SignError, SystemClock, WebhookEvent};

/// The header carrying `sha256=<hex>`.
pub const SIGNATURE_HEADER: &str = "X-ADCP-Signature";
/// The header carrying the signed Unix timestamp.
pub const TIMESTAMP_HEADER: &str = "X-ADCP-Timestamp";

/// Signs webhooks under the **deprecated** legacy scheme (removed in AdCP
/// 4.0): `X-ADCP-Signature: sha256=<hex HMAC-SHA256 of "{timestamp}.{body}">`
/// and `X-ADCP-Timestamp: <timestamp>`, with a shared secret.
///
/// Use it only for a buyer that registered
/// `push_notification_config.authentication.credentials`; everything else
/// gets the RFC 9421 webhook profile ([`HttpSigner`](crate::HttpSigner)).
/// Building one logs a deprecation warning through `tracing` (target
/// `adcp_sign::legacy_hmac`).
///
/// The secret must be at least 32 bytes and not one repeated byte; it is
/// wiped on drop and never printed. The signed bytes are the [`Body`]
/// bytes, which were checked for duplicate keys when the body was built.
///
/// ```
/// use adcp_sign::{Body, LegacyHmacSigner};
///
/// let signer = LegacyHmacSigner::new(b"an example secret of at least 32 bytes!")?;
/// let body = Body::from_json_bytes(r#"{"event":"test"}"#)?;
/// let signed = signer.sign_at(&body, 1_700_000_000)?;
/// assert_eq!(signed.timestamp(), 1_700_000_000);
/// assert!(signed.signature().starts_with("sha256="));
/// assert_eq!(signed.headers()[1], ("X-ADCP-Timestamp", "1700000000".to_owned()));
///
/// assert_eq!(LegacyHmacSigner::new(b"too short").unwrap_err().code(), "hmac_secret_too_short");
/// # Ok::<(), adcp_sign::SignError>(())
/// ```
pub struct LegacyHmacSigner<C = SystemClock> {
    key: SigningKey,
    clock: C,
}

impl LegacyHmacSigner {
    /// A signer with the shared `secret` (copied; the copy is wiped on
    /// drop) and the system clock. Logs the deprecation warning.
    ///
    /// # Errors
    ///
    /// `hmac_secret_too_short` (under 32 bytes); `hmac_secret_weak` (one
    /// repeated byte).
    pub fn new(secret: &[u8]) -> Result<Self, SignError> {
        let key = SigningKey::hmac_sha256(secret).map_err(key_error)?;
        tracing::warn!(
            target: "adcp_sign::legacy_hmac",
            "legacy HMAC-SHA256 webhook signing is deprecated and removed in AdCP 4.0; \
             sign webhooks with the RFC 9421 webhook profile"
        );
        Ok(Self {
            key,
            clock: SystemClock,
        })
    }
}

impl<C: Clock> LegacyHmacSigner<C> {
    /// The same signer reading timestamps from `clock`.
    #[must_use]
    pub fn with_clock<C2: Clock>(self, clock: C2) -> LegacyHmacSigner<C2> {
        LegacyHmacSigner { key: self.key, clock }
    }

    /// Signs `body` with the clock's time.
    ///
    /// # Errors
    ///
    /// As [`LegacyHmacSigner::sign_at`].
    pub fn sign(&self, body: &Body) -> Result<HmacSignedBody, SignError> {
        self.sign_at(body, self.clock.now())
    }

    /// Signs one delivery attempt of `event` with the clock's time.
    ///
    /// # Errors
    ///
    /// As [`LegacyHmacSigner::sign_at`].
    pub fn sign_event(&self, event: &WebhookEvent) -> Result<HmacSignedBody, SignError> {
        self.sign(event.body())
    }

    /// Signs `body` with an explicit timestamp.
    ///
    /// # Errors
    ///
    /// `timestamp_invalid` for a negative timestamp; `signer_failed` if the
    /// MAC fails (it does not with a valid key).
    pub fn sign_at(&self, body: &Body, timestamp: i64) -> Result<HmacSignedBody, SignError> {
        let signature = self.signature(timestamp, body.as_bytes())?;
        Ok(HmacSignedBody {
            timestamp,
            signature,
            body: body.clone(),
        })
    }

    /// The `X-ADCP-Signature` value for `raw_body` at `timestamp`:
    /// `sha256=` and the lower-case hex HMAC-SHA256 of
    /// `"{timestamp}.{raw_body}"`.
    ///
    /// This is the bare MAC over any bytes, with no input check: what a
    /// receiver recomputes, and what the conformance vectors pin (including
    /// their non-JSON and duplicate-key bodies). A sender signs a [`Body`]
    /// with [`LegacyHmacSigner::sign`], which cannot carry duplicate keys.
    ///
    /// # Errors
    ///
    /// As [`LegacyHmacSigner::sign_at`].
    pub fn signature(&self, timestamp: i64, raw_body: &[u8]) -> Result<String, SignError> {
        if timestamp < 0 {
            return Err(SignError::TimestampInvalid);
        }
        let prefix = format!("{timestamp}.");
        let mut message = Vec::with_capacity(prefix.len() + raw_body.len());
        message.extend_from_slice(prefix.as_bytes());
        message.extend_from_slice(raw_body);
        let tag = self
            .key
            .sign(&message)
            .map_err(|e| SignError::Signer(crate::SignerError::failed(e)))?;
        Ok(format!("sha256={}", hex(tag.as_bytes())))
    }
}

fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

impl<C> fmt::Debug for LegacyHmacSigner<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegacyHmacSigner")
            .field("secret", &"[REDACTED]")
            .finish_non_exhaustive()
    }
}

/// A body signed under the legacy HMAC scheme: send the two
/// [headers](Self::headers) and exactly the [body](Self::body) bytes.
#[derive(Debug, Clone)]
pub struct HmacSignedBody {
    timestamp: i64,
    signature: String,
    body: Body,
}

impl HmacSignedBody {
    /// The signed timestamp (`X-ADCP-Timestamp`).
    #[must_use]
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// `sha256=<hex>` (`X-ADCP-Signature`).
    #[must_use]
    pub fn signature(&self) -> &str {
        &self.signature
    }

    /// The body bytes that were signed.
    #[must_use]
    pub fn body(&self) -> &Body {
        &self.body
    }

    /// `[("X-ADCP-Signature", …), ("X-ADCP-Timestamp", …)]`.
    #[must_use]
    pub fn headers(&self) -> [(&'static str, String); 2] {
        [
            (SIGNATURE_HEADER, self.signature.clone()),
            (TIMESTAMP_HEADER, self.timestamp.to_string()),
        ]
    }
}
