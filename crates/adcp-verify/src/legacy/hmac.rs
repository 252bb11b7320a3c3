//! Legacy HMAC-SHA256 webhook verification (deprecated, removed in AdCP 4.0).
//!
//! The seller sends
//!
//! ```text
//! X-ADCP-Signature: sha256=<lower-case hex of HMAC-SHA256(secret, "{timestamp}.{raw body}")>
//! X-ADCP-Timestamp: <Unix seconds>
//! ```
//!
//! and the receiver, holding the secret from the webhook registration,
//! checks in the spec's order: both headers present (step 1), timestamp
//! numeric (2), `|now − timestamp| ≤ 300` (3), MAC (4), then the body is
//! strict JSON without duplicate keys (14). See the [module
//! documentation](super) for the error codes and the decisions.
//!
//! ```
//! use adcp_sigbase::crypto::SigningKey;
//! use adcp_sigbase::Message;
//! use adcp_verify::FixedClock;
//! use adcp_verify::legacy::hmac::{HmacSecrets, SecretSlot};
//!
//! let old = b"previous-secret-0123456789abcdef0123456789";
//! let new = b"current-secret-fedcba9876543210fedcba98765";
//! // Rotation at 1_700_000_000: accept the previous secret for one more minute.
//! let secrets = HmacSecrets::new(old)?.rotate(new, 1_700_000_060)?;
//!
//! // A delivery still signed with the previous secret.
//! let body = br#"{"status":"completed"}"#;
//! let tag = SigningKey::hmac_sha256(old)?.sign(&[&b"1700000000."[..], body].concat())?;
//! let hex: String = tag.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
//! let msg = Message::request("POST", "https://buyer.example.com/hook")
//!     .with_header("X-ADCP-Signature", format!("sha256={hex}"))
//!     .with_header("X-ADCP-Timestamp", "1700000000")
//!     .with_body(&body[..]);
//!
//! assert_eq!(secrets.verify(&msg, &FixedClock(1_700_000_000))?.secret, SecretSlot::Previous);
//! // Once the previous secret is retired, it no longer verifies.
//! let err = secrets.verify(&msg, &FixedClock(1_700_000_061)).unwrap_err();
//! assert_eq!(err.code_str(), "webhook_signature_invalid");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{
    check_body, check_body_len, credential_key, fail, single_header, warn_deprecated, ConfigError, Credential,
    WebhookScheme,
};
use crate::clock::Clock;
use crate::error::{ErrorCode, VerifyError};
use adcp_sigbase::crypto::{Algorithm, VerifyingKey};
use adcp_sigbase::Message;

/// The signature header.
pub const SIGNATURE_HEADER: &str = "X-ADCP-Signature";
/// The timestamp header.
pub const TIMESTAMP_HEADER: &str = "X-ADCP-Timestamp";
/// The only accepted algorithm prefix of the signature value.
pub const SIGNATURE_PREFIX: &str = "sha256=";
/// The accepted distance between the timestamp and now, in seconds, either
/// way (`|now − timestamp| > 300` is rejected).
pub const WINDOW: i64 = 300;
/// The minimum secret length in bytes (the spec's 32 bytes / 256 bits).
pub const MIN_SECRET_LEN: usize = adcp_sigbase::crypto::HMAC_MIN_SECRET_LEN;

/// Hex digits in a SHA-256 tag.
const TAG_HEX_LEN: usize = 64;

/// Which configured secret a delivery verified under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretSlot {
    /// The current secret.
    Current,
    /// The previous secret, still accepted during rotation.
    Previous,
}

/// What a successful legacy HMAC verification established.
///
/// The sender identity for `idempotency_key` dedup is the registration
/// these secrets belong to (the spec's "credential binding"), which the
/// caller already knows; nothing in the payload identifies the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HmacVerified {
    /// The verified `X-ADCP-Timestamp` (Unix seconds).
    pub timestamp: i64,
    /// Which secret the MAC matched.
    pub secret: SecretSlot,
}

/// The previous secret during a rotation, optionally retired at a time.
#[derive(Debug, Clone)]
struct Previous {
    key: VerifyingKey,
    retire_at: Option<i64>,
}

impl Previous {
    fn active(&self, now: i64) -> bool {
        self.retire_at.is_none_or(|t| now <= t)
    }
}

/// The HMAC-SHA256 secrets of one webhook registration: the current one
/// and, during a rotation, the previous one.
///
/// Every secret is validated when configured: at least
/// [`MIN_SECRET_LEN`] (32) bytes and not one repeated byte; a registration
/// that fails is a [`ConfigError`], never a per-delivery rejection. The
/// secret is the UTF-8 bytes of the registration's `credentials` string as
/// given (not hex- or base64-decoded). Secrets are copied into zeroized
/// storage; `Debug` redacts them. Building one logs a deprecation warning.
#[derive(Debug, Clone)]
pub struct HmacSecrets {
    current: VerifyingKey,
    previous: Option<Previous>,
    max_body_bytes: usize,
}

impl HmacSecrets {
    /// Secrets with only `current`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::TooShort`] under 32 bytes (the empty secret
    /// included), [`ConfigError::Weak`] for one repeated byte.
    pub fn new(current: impl AsRef<[u8]>) -> Result<Self, ConfigError> {
        let current = credential_key(Credential::HmacSecret, current.as_ref())?;
        warn_deprecated(WebhookScheme::HmacSha256);
        Ok(Self {
            current,
            previous: None,
            max_body_bytes: adcp_strict_json::DEFAULT_MAX_LEN,
        })
    }

    /// The largest body accepted (default 1 MiB): a longer one is refused
    /// before any MAC is computed, and step 14 accepts up to this length.
    #[must_use]
    pub fn with_max_body_bytes(mut self, max_body_bytes: usize) -> Self {
        self.max_body_bytes = max_body_bytes;
        self
    }

    /// Also accepts `previous` until it is removed from the configuration.
    ///
    /// # Errors
    ///
    /// As [`HmacSecrets::new`], for `previous`.
    pub fn with_previous(self, previous: impl AsRef<[u8]>) -> Result<Self, ConfigError> {
        self.set_previous(previous.as_ref(), None)
    }

    /// Also accepts `previous` while `now <= retire_at` (Unix seconds). The
    /// spec says the rotation window SHOULD NOT exceed the 5-minute replay
    /// window: `retire_at = rotation time + `[`WINDOW`].
    ///
    /// # Errors
    ///
    /// As [`HmacSecrets::new`], for `previous`.
    pub fn with_previous_until(self, previous: impl AsRef<[u8]>, retire_at: i64) -> Result<Self, ConfigError> {
        self.set_previous(previous.as_ref(), Some(retire_at))
    }

    /// Rotates: `new_current` becomes the current secret and the current
    /// one becomes the previous secret, accepted while `now <= retire_at`.
    /// An older previous secret is dropped.
    ///
    /// # Errors
    ///
    /// As [`HmacSecrets::new`], for `new_current`.
    pub fn rotate(self, new_current: impl AsRef<[u8]>, retire_at: i64) -> Result<Self, ConfigError> {
        let current = credential_key(Credential::HmacSecret, new_current.as_ref())?;
        Ok(Self {
            current,
            previous: Some(Previous {
                key: self.current,
                retire_at: Some(retire_at),
            }),
            max_body_bytes: self.max_body_bytes,
        })
    }

    fn set_previous(self, previous: &[u8], retire_at: Option<i64>) -> Result<Self, ConfigError> {
        let key = credential_key(Credential::HmacSecret, previous)?;
        Ok(Self {
            previous: Some(Previous { key, retire_at }),
            ..self
        })
    }

    /// Whether a previous secret is configured (retired or not).
    pub fn has_previous(&self) -> bool {
        self.previous.is_some()
    }

    /// When the previous secret stops being accepted, if it has a limit.
    pub fn previous_retires_at(&self) -> Option<i64> {
        self.previous.as_ref().and_then(|p| p.retire_at)
    }

    /// Verifies a received legacy HMAC webhook: `msg` carries the headers
    /// as received and the raw body bytes (captured before any JSON
    /// parsing); `clock` gives "now".
    ///
    /// Checks, in order: both headers present, once each and non-empty
    /// (step 1); the timestamp is a canonical unsigned decimal (2); it is
    /// within [`WINDOW`] of now (3); the signature is `sha256=` and 64
    /// lower-case hex digits, and the MAC over `{timestamp}.{body}`
    /// matches the current or the active previous secret, both computed
    /// every time and compared in constant time (4); the body is strict JSON
    /// with no repeated object key (14). A missing body is the empty body.
    ///
    /// This does not check that the registration selected HMAC: run
    /// [`WebhookAuthMode::check_scheme`](super::WebhookAuthMode::check_scheme)
    /// first, or use [`WebhookAuthMode::verify`](super::WebhookAuthMode::verify).
    ///
    /// # Errors
    ///
    /// A `webhook_*` [`VerifyError`]; see the [module documentation](super).
    pub fn verify<C: Clock + ?Sized>(&self, msg: &Message<'_>, clock: &C) -> Result<HmacVerified, VerifyError> {
        check_body_len(msg.body().unwrap_or_default(), self.max_body_bytes)?;
        // Step 1: both headers.
        let signature = single_header(msg, SIGNATURE_HEADER, 1)?;
        let timestamp = single_header(msg, TIMESTAMP_HEADER, 1)?;
        let (Some(signature), Some(timestamp_raw)) = (signature, timestamp) else {
            return Err(fail(
                ErrorCode::HeaderMalformed,
                1,
                "X-ADCP-Signature and X-ADCP-Timestamp are both required",
            ));
        };

        // Step 2: a Unix timestamp, exactly as the signer wrote it.
        let timestamp = parse_timestamp(timestamp_raw).ok_or_else(|| {
            fail(
                ErrorCode::HeaderMalformed,
                2,
                "X-ADCP-Timestamp must be Unix seconds: ASCII digits, no sign, no leading zero",
            )
        })?;

        // Step 3: the window.
        let now = clock.now();
        if (i128::from(now) - i128::from(timestamp)).abs() > i128::from(WINDOW) {
            return Err(fail(
                ErrorCode::WindowInvalid,
                3,
                format!("timestamp {timestamp} is more than {WINDOW} s from now ({now})"),
            ));
        }

        // Step 4: the signature's syntax, then the MAC under every secret.
        let tag = parse_signature(signature)?;
        let body = msg.body().unwrap_or_default();
        let mut signed = Vec::with_capacity(timestamp_raw.len() + 1 + body.len());
        signed.extend_from_slice(timestamp_raw);
        signed.push(b'.');
        signed.extend_from_slice(body);
        let secret = self.matching_secret(&signed, &tag, now).ok_or_else(|| {
            fail(
                ErrorCode::SignatureInvalid,
                4,
                "HMAC-SHA256 does not match the registration's secret(s)",
            )
        })?;

        // Step 14: body well-formedness, only once the MAC has verified.
        check_body(body, self.max_body_bytes)?;
        Ok(HmacVerified { timestamp, secret })
    }

    /// Computes the MAC under the current and (if configured) previous
    /// secret before looking at either result, so the work done does not
    /// depend on which one matches.
    fn matching_secret(&self, signed: &[u8], tag: &[u8], now: i64) -> Option<SecretSlot> {
        let current = self.current.verify(Algorithm::HmacSha256, signed, tag).is_ok();
        let previous = self
            .previous
            .as_ref()
            .is_some_and(|p| p.key.verify(Algorithm::HmacSha256, signed, tag).is_ok() & p.active(now));
        if current {
            Some(SecretSlot::Current)
        } else if previous {
            Some(SecretSlot::Previous)
        } else {
            None
        }
    }
}

/// `0` or `[1-9][0-9]*` that fits an `i64`.
fn parse_timestamp(raw: &[u8]) -> Option<i64> {
    match raw {
        [b'0'] => Some(0),
        [b'1'..=b'9', ..] => raw.iter().try_fold(0i64, |acc, &b| {
            let digit = b.is_ascii_digit().then(|| i64::from(b - b'0'))?;
            acc.checked_mul(10)?.checked_add(digit)
        }),
        _ => None,
    }
}

/// `sha256=` followed by exactly 64 lower-case hex digits, decoded.
fn parse_signature(value: &[u8]) -> Result<[u8; 32], VerifyError> {
    let malformed = |detail: &str| fail(ErrorCode::HeaderMalformed, 4, detail);
    let Some(eq) = value.iter().position(|&b| b == b'=') else {
        return Err(malformed("X-ADCP-Signature must be `sha256=<hex>`"));
    };
    let (prefix, hex) = value.split_at(eq + 1);
    if prefix != SIGNATURE_PREFIX.as_bytes() {
        return Err(fail(
            ErrorCode::AlgNotAllowed,
            4,
            "X-ADCP-Signature prefix must be exactly `sha256=`",
        ));
    }
    if hex.len() != TAG_HEX_LEN {
        return Err(malformed(&format!(
            "X-ADCP-Signature digest must be {TAG_HEX_LEN} hex digits, got {} bytes",
            hex.len()
        )));
    }
    let mut tag = [0u8; 32];
    for (out, pair) in tag.iter_mut().zip(hex.chunks_exact(2)) {
        let (Some(hi), Some(lo)) = (
            pair.first().and_then(|&b| nibble(b)),
            pair.get(1).and_then(|&b| nibble(b)),
        ) else {
            return Err(malformed("X-ADCP-Signature digest must be lower-case hex"));
        };
        *out = (hi << 4) | lo;
    }
    Ok(tag)
}

/// A lower-case hex digit's value.
fn nibble(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}
