//! Legacy webhook authentication (AdCP 3.x only, deprecated, removed in 4.0):
//! HMAC-SHA256 (`X-ADCP-Signature` / `X-ADCP-Timestamp`) and Bearer tokens,
//! and the mode switch that keeps them apart from the RFC 9421 profile.
//!
//! A buyer opts into a legacy scheme by populating
//! `push_notification_config.authentication` (or
//! `accounts[].notification_configs[].authentication`, or
//! `sync_agent_notification_configs.notification_configs[].authentication`)
//! when it registers a webhook. The registration alone selects one
//! [`WebhookAuthMode`] for every delivery to that URL; the receiver never
//! "tries 9421, then HMAC". A delivery carrying any other scheme's headers
//! is rejected with `webhook_mode_mismatch` before any verification.
//!
//! - [`hmac`]: [`HmacSecrets`] (current + optional previous secret, each at
//!   least 32 bytes, checked when configured) verifies
//!   `X-ADCP-Signature: sha256=<hex>` over `{X-ADCP-Timestamp}.{raw body}`
//!   within ±300 s, then rejects bodies that are not strict JSON or repeat
//!   an object key (`webhook_body_malformed`).
//! - [`bearer`]: [`BearerToken`] compares `Authorization: Bearer <token>`
//!   with the registered token in constant time, then applies the same body
//!   check.
//! - [`mode`]: [`WebhookAuthMode`] (from the registration's
//!   `authentication` block), [`SchemeEvidence`] (which schemes a received
//!   webhook carries) and the dispatcher [`WebhookAuthMode::verify`].
//!
//! Configuring a legacy credential ([`HmacSecrets::new`],
//! [`BearerToken::new`], hence any legacy [`WebhookAuthMode`]) logs a
//! deprecation warning with `tracing::warn!` (target `adcp_verify::legacy`);
//! a mode mismatch is logged there too (the spec asks receivers to alarm).
//!
//! ```
//! use adcp_sigbase::crypto::SigningKey;
//! use adcp_sigbase::Message;
//! use adcp_verify::FixedClock;
//! use adcp_verify::ErrorCode;
//! use adcp_verify::legacy::{SecretSlot, WebhookAuthMode};
//! use serde_json::json;
//!
//! // The registration the buyer sent decides the mode.
//! let secret = "a-32-byte-or-longer-shared-secret-from-a-kms";
//! let mode = WebhookAuthMode::from_registration(Some(&json!({
//!     "schemes": ["HMAC-SHA256"],
//!     "credentials": secret,
//! })))?;
//! let WebhookAuthMode::HmacSha256 { secrets } = &mode else { return Err("not an HMAC registration".into()) };
//!
//! // What a seller sends: sha256=<lower-case hex of HMAC(secret, "{ts}.{body}")>.
//! let (ts, body) = ("1700000000", br#"{"event":"creative.status_changed","status":"approved"}"#);
//! let tag = SigningKey::hmac_sha256(secret.as_bytes())?.sign(&[ts.as_bytes(), b".", body].concat())?;
//! let hex: String = tag.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
//! let msg = Message::request("POST", "https://buyer.example.com/webhooks/adcp")
//!     .with_header("Content-Type", "application/json")
//!     .with_header("X-ADCP-Signature", format!("sha256={hex}"))
//!     .with_header("X-ADCP-Timestamp", ts)
//!     .with_body(&body[..]);
//!
//! mode.check_scheme(&msg)?;
//! let verified = secrets.verify(&msg, &FixedClock(1_700_000_120))?;
//! assert_eq!((verified.timestamp, verified.secret), (1_700_000_000, SecretSlot::Current));
//!
//! // Six minutes later the same delivery is outside the ±300 s window.
//! let err = secrets.verify(&msg, &FixedClock(1_700_000_360)).unwrap_err();
//! assert_eq!(err.code_str(), "webhook_signature_window_invalid");
//!
//! // A 9421-signed delivery to an HMAC registration is a mode mismatch.
//! let downgrade = msg.clone().with_header("Signature-Input", "sig1=()");
//! let err = mode.check_scheme(&downgrade).unwrap_err();
//! assert_eq!((err.code(), err.code_str()), (ErrorCode::ModeMismatch, "webhook_mode_mismatch"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Error codes and steps
//!
//! Every rejection is a [`VerifyError`] with the
//! `webhook_*` prefix. The legacy scheme defines no codes of its own, so the
//! 9421 webhook taxonomy is reused; [`Step`] numbers are
//! the spec's legacy "Verification order" (1–4), with 0 for the mode switch
//! and 14 for body well-formedness (the webhook checklist's step 14, which
//! the spec applies to the legacy scheme unchanged).
//!
//! | Failure | Code | Step |
//! |---|---|---|
//! | Registered mode differs from the scheme(s) the webhook carries | `webhook_mode_mismatch` | 0 |
//! | `X-ADCP-Signature` or `X-ADCP-Timestamp` missing, empty or repeated | `webhook_signature_header_malformed` | 1 |
//! | Timestamp not a canonical unsigned decimal (`0` or `[1-9][0-9]*`, fits `i64`) | `webhook_signature_header_malformed` | 2 |
//! | `\|now − timestamp\| > 300` | `webhook_signature_window_invalid` | 3 |
//! | Signature prefix other than `sha256=` (`sha512=`, `SHA256=`) | `webhook_signature_alg_not_allowed` | 4 |
//! | Not exactly 64 lower-case hex digits after `sha256=` (truncated, double prefix) | `webhook_signature_header_malformed` | 4 |
//! | MAC matches no configured secret | `webhook_signature_invalid` | 4 |
//! | `Authorization` missing, repeated, not `Bearer`, or token not visible ASCII | `webhook_signature_header_malformed` | 1 |
//! | Bearer token differs from the registration's | `webhook_signature_invalid` | 4 |
//! | Body empty, not strict JSON, or with a duplicate object key (after the credential verified) | `webhook_body_malformed` | 14 |
//!
//! # Decisions
//!
//! - **Exact bytes.** The MAC input is the `X-ADCP-Timestamp` value as
//!   received (field whitespace trimmed), `.`, and the raw body bytes;
//!   nothing is parsed or re-serialized first. Because the timestamp must
//!   be canonical (no sign, no leading zeros, no fraction), the header
//!   string and the integer it denotes cannot diverge.
//! - **Lower-case hex only**, prefix `sha256=` case-sensitive: the spec's
//!   reference receiver compares the whole header string byte for byte
//!   against `sha256=` + Node's lower-case `digest('hex')`, so an
//!   upper-case digest never verifies there either; here it is a malformed
//!   header rather than a silent mismatch.
//! - **Order.** Headers, timestamp syntax and window come first (the spec's
//!   order), so a stale delivery is `window_invalid` whatever its signature
//!   looks like; the signature's syntax is checked before any MAC is
//!   computed.
//! - **Rotation.** The current and the previous secret are both computed,
//!   unconditionally, before the results are combined; the tag comparison
//!   is constant-time ([`VerifyingKey::verify`](adcp_sigbase::crypto::VerifyingKey::verify)).
//!   Timing reveals only whether a previous secret is configured. A
//!   previous secret may carry a retirement time (the spec says rotation
//!   SHOULD NOT exceed the 5-minute replay window).
//! - **No replay cache.** The legacy scheme has no nonce; the spec's replay
//!   protection is the ±300 s window, and duplicate side effects are
//!   handled by application-level `idempotency_key` dedup. A byte-identical
//!   re-delivery inside the window therefore verifies again. (Caching the
//!   MAC would also reject the sender's own legitimate retries signed within
//!   the same second.)
//! - **Body.** Every legacy webhook body is a JSON state-change
//!   notification: after the credential verifies, the body must be exactly
//!   one strict RFC 8259 value without repeated keys
//!   ([`adcp_strict_json::check`], default limits, 1 MiB), else
//!   `webhook_body_malformed`. An empty body or a raw control character in
//!   a string is not JSON and is rejected the same way, after the MAC has
//!   verified (so the fixture's `empty-body` and `null-bytes` signature
//!   vectors verify their MAC, then end in `webhook_body_malformed`).
//!   Bearer deliveries get the same check (the parser-differential risk
//!   does not depend on the credential).
//! - **Size.** The MAC is computed over whatever body is passed (one copy,
//!   prefixed with the timestamp). The spec's 1 MB cap with `413` belongs
//!   before verification, in the HTTP layer, as for the 9421 path.
//! - **Secrets and tokens** are the UTF-8 bytes of the registration's
//!   `credentials` string, not decoded from hex or base64. Both must be at
//!   least 32 bytes and not one repeated byte (the shared
//!   [`HMAC_MIN_SECRET_LEN`](adcp_sigbase::crypto::HMAC_MIN_SECRET_LEN)
//!   policy); Bearer tokens must also be visible ASCII so they survive an
//!   HTTP header unchanged.
//! - **Bearer comparison** is `HMAC(token, received) == HMAC(token, token)`
//!   in constant time, so neither the token's bytes nor its length leak
//!   through timing.

pub mod bearer;
pub mod hmac;
pub mod mode;

pub use bearer::BearerToken;
pub use hmac::{HmacSecrets, HmacVerified, SecretSlot};
pub use mode::{SchemeEvidence, VerifiedWebhook, WebhookAuthMode, WebhookScheme};

use crate::error::{CodePrefix, ErrorCode, Step, VerifyError};
use adcp_sigbase::crypto::{CryptoError, KeyRejection, VerifyingKey};
use std::fmt;

/// The tracing target of the deprecation and mode-mismatch warnings.
pub const TRACING_TARGET: &str = "adcp_verify::legacy";

/// Which legacy credential a [`ConfigError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Credential {
    /// An HMAC-SHA256 shared secret.
    HmacSecret,
    /// A Bearer token.
    BearerToken,
}

impl fmt::Display for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::HmacSecret => "HMAC-SHA256 secret",
            Self::BearerToken => "Bearer token",
        })
    }
}

/// A legacy webhook registration that cannot be configured. Raised when
/// the receiver builds its configuration, never for a received webhook.
/// Messages never contain the credential.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The credential is shorter than
    /// [`HMAC_MIN_SECRET_LEN`](adcp_sigbase::crypto::HMAC_MIN_SECRET_LEN)
    /// (32) bytes.
    TooShort {
        /// Which credential.
        credential: Credential,
        /// The minimum length in bytes.
        minimum: usize,
        /// The supplied length in bytes.
        actual: usize,
    },
    /// The credential is one repeated byte (all zeros, `"aaaa…"`).
    Weak {
        /// Which credential.
        credential: Credential,
    },
    /// The Bearer token contains a byte outside visible ASCII (`!`–`~`).
    InvalidBearerToken,
    /// The registration's `authentication` block is not
    /// `{"schemes": ["HMAC-SHA256" | "Bearer"], "credentials": "<string>"}`.
    InvalidAuthentication(&'static str),
    /// The cryptographic backend refused the credential for another reason.
    Crypto(CryptoError),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooShort {
                credential,
                minimum,
                actual,
            } => write!(
                f,
                "{credential} too short: at least {minimum} bytes required, got {actual}"
            ),
            Self::Weak { credential } => write!(f, "{credential} is weak (one repeated byte)"),
            Self::InvalidBearerToken => f.write_str("Bearer token must be visible ASCII (no spaces or controls)"),
            Self::InvalidAuthentication(why) => write!(f, "invalid webhook `authentication` block: {why}"),
            Self::Crypto(e) => write!(f, "credential rejected: {e}"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Builds the HMAC key for a credential under the shared secret policy.
fn credential_key(credential: Credential, bytes: &[u8]) -> Result<VerifyingKey, ConfigError> {
    VerifyingKey::hmac_sha256(bytes).map_err(|e| match e {
        CryptoError::InvalidKey {
            reason: KeyRejection::TooShort { minimum, actual },
            ..
        } => ConfigError::TooShort {
            credential,
            minimum,
            actual,
        },
        CryptoError::InvalidKey {
            reason: KeyRejection::WeakKey,
            ..
        } => ConfigError::Weak { credential },
        other => ConfigError::Crypto(other),
    })
}

/// Logs that a deprecated legacy credential was configured.
fn warn_deprecated(scheme: WebhookScheme) {
    tracing::warn!(
        target: TRACING_TARGET,
        scheme = scheme.as_str(),
        "legacy {} webhook authentication configured: deprecated in AdCP 3.x and removed in 4.0; \
         migrate the registration to the RFC 9421 webhook profile (omit `authentication`)",
        scheme.as_str()
    );
}

/// A `webhook_*` rejection at `step`.
fn fail(code: ErrorCode, step: u8, detail: impl Into<String>) -> VerifyError {
    VerifyError::new(code, CodePrefix::Webhook, Step::new(step), detail)
}

/// Step 14 for legacy deliveries: the body is exactly one strict JSON
/// value with no repeated object key. Runs only after the credential
/// verified.
fn check_body(body: &[u8], max_body_bytes: usize) -> Result<(), VerifyError> {
    if body.is_empty() {
        return Err(fail(ErrorCode::BodyMalformed, 14, "webhook body is empty"));
    }
    adcp_strict_json::check(body, &adcp_strict_json::Limits::new(max_body_bytes))
        .map_err(|e| fail(ErrorCode::BodyMalformed, 14, format!("{e} ({} body bytes)", body.len())))
}

/// Before any credential work: the body is within the registration's
/// limit (the same limit the receiver answers `413` on).
fn check_body_len(body: &[u8], max_body_bytes: usize) -> Result<(), VerifyError> {
    if body.len() > max_body_bytes {
        return Err(fail(
            ErrorCode::BodyMalformed,
            0,
            format!("{} body bytes exceed the limit of {max_body_bytes}", body.len()),
        ));
    }
    Ok(())
}

/// The single value of a header that must appear at most once, trimmed of
/// field whitespace; `Ok(None)` when absent or empty.
fn single_header<'m>(
    msg: &'m adcp_sigbase::Message<'_>,
    name: &'m str,
    step: u8,
) -> Result<Option<&'m [u8]>, VerifyError> {
    let lines = msg.field_lines(name).count();
    if lines > 1 {
        return Err(fail(ErrorCode::HeaderMalformed, step, format!("{name} is repeated")));
    }
    Ok(msg.field_lines(name).next().map(trim_ows).filter(|v| !v.is_empty()))
}

/// A field value without leading and trailing optional whitespace (SP,
/// HTAB; RFC 9110 §5.5).
fn trim_ows(value: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !ows(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    value.get(start..end).unwrap_or_default()
}
