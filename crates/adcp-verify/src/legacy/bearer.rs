//! Legacy Bearer-token webhook authentication (deprecated, removed in AdCP
//! 4.0).
//!
//! A registration with `authentication: {"schemes": ["Bearer"],
//! "credentials": "<token>"}` asks the seller to send
//! `Authorization: Bearer <token>` on every delivery. The token is a
//! shared secret on the wire with no body protection (the spec says
//! sellers SHOULD refuse it for mutating callbacks); the receiver compares
//! it with the registered token in constant time, then checks the body as
//! for every legacy delivery (strict JSON, no duplicate keys).
//!
//! ```
//! use adcp_sigbase::Message;
//! use adcp_verify::legacy::bearer::BearerToken;
//!
//! let token = BearerToken::new("wh_tok_5f2c9a1e7b3d4c6a8e0f1b2d3c4a5e6f")?;
//! let msg = Message::request("POST", "https://buyer.example.com/hook")
//!     .with_header("Authorization", "Bearer wh_tok_5f2c9a1e7b3d4c6a8e0f1b2d3c4a5e6f")
//!     .with_body(&br#"{"status":"completed"}"#[..]);
//! token.verify(&msg)?;
//!
//! let wrong = Message::request("POST", "https://buyer.example.com/hook")
//!     .with_header("Authorization", "Bearer wh_tok_00000000000000000000000000000000")
//!     .with_body(&br#"{"status":"completed"}"#[..]);
//! assert_eq!(token.verify(&wrong).unwrap_err().code_str(), "webhook_signature_invalid");
//!
//! // Tokens are checked when configured: at least 32 bytes.
//! assert!(BearerToken::new("short-token").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{
    check_body, check_body_len, credential_key, fail, single_header, warn_deprecated, ConfigError, Credential,
    WebhookScheme,
};
use crate::error::{ErrorCode, VerifyError};
use adcp_sigbase::crypto::{Algorithm, SigningKey, VerifyingKey};
use adcp_sigbase::Message;
use std::fmt;

/// The header carrying the token.
pub const AUTHORIZATION_HEADER: &str = "Authorization";
/// The authentication scheme name (matched case-insensitively, RFC 9110 §11.1).
pub const SCHEME: &str = "Bearer";
/// The minimum token length in bytes (as for HMAC secrets).
pub const MIN_TOKEN_LEN: usize = adcp_sigbase::crypto::HMAC_MIN_SECRET_LEN;

/// The Bearer token of one webhook registration.
///
/// Validated when configured: at least [`MIN_TOKEN_LEN`] (32) bytes, not
/// one repeated byte, visible ASCII only (`!`–`~`, so it travels in a
/// header unchanged). Only an HMAC key made from the token and the token's
/// MAC under itself are kept: received tokens are compared as
/// `HMAC(token, received) == HMAC(token, token)` in constant time, so the
/// comparison leaks neither the token's bytes nor its length. `Debug`
/// redacts. Building one logs a deprecation warning.
#[derive(Clone)]
pub struct BearerToken {
    key: VerifyingKey,
    expected: Vec<u8>,
    max_body_bytes: usize,
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken([REDACTED])")
    }
}

impl BearerToken {
    /// The registration's token (its `credentials` string).
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidBearerToken`] for a byte outside `!`–`~`;
    /// [`ConfigError::TooShort`] under 32 bytes; [`ConfigError::Weak`] for
    /// one repeated byte.
    pub fn new(token: impl AsRef<str>) -> Result<Self, ConfigError> {
        let token = token.as_ref().as_bytes();
        if !token.iter().all(u8::is_ascii_graphic) {
            return Err(ConfigError::InvalidBearerToken);
        }
        let key = credential_key(Credential::BearerToken, token)?;
        let expected = SigningKey::hmac_sha256(token)
            .and_then(|k| k.sign(token))
            .map_err(ConfigError::Crypto)?
            .into_bytes();
        warn_deprecated(WebhookScheme::Bearer);
        Ok(Self {
            key,
            expected,
            max_body_bytes: adcp_strict_json::DEFAULT_MAX_LEN,
        })
    }

    /// The largest body accepted (default 1 MiB): a longer one is refused
    /// before the token is compared, and step 14 accepts up to this length.
    #[must_use]
    pub fn with_max_body_bytes(mut self, max_body_bytes: usize) -> Self {
        self.max_body_bytes = max_body_bytes;
        self
    }

    /// Verifies a received Bearer-authenticated webhook: exactly one
    /// `Authorization` line, scheme `Bearer` (any case), one or more spaces,
    /// a visible-ASCII token (step 1); the token equals the registered one
    /// (4); the body is strict JSON with no repeated object key (14).
    ///
    /// This does not check that the registration selected Bearer: run
    /// [`WebhookAuthMode::check_scheme`](super::WebhookAuthMode::check_scheme)
    /// first, or use [`WebhookAuthMode::verify`](super::WebhookAuthMode::verify).
    ///
    /// # Errors
    ///
    /// A `webhook_*` [`VerifyError`]; see the [module documentation](super).
    pub fn verify(&self, msg: &Message<'_>) -> Result<(), VerifyError> {
        check_body_len(msg.body().unwrap_or_default(), self.max_body_bytes)?;
        let header = single_header(msg, AUTHORIZATION_HEADER, 1)?.ok_or_else(|| {
            fail(
                ErrorCode::HeaderMalformed,
                1,
                "Authorization: Bearer <token> is required",
            )
        })?;
        let token = bearer_token(header)
            .ok_or_else(|| fail(ErrorCode::HeaderMalformed, 1, "Authorization must be `Bearer <token>`"))?;
        self.key
            .verify(Algorithm::HmacSha256, token, &self.expected)
            .map_err(|_| {
                fail(
                    ErrorCode::SignatureInvalid,
                    4,
                    "Bearer token does not match the registration",
                )
            })?;
        check_body(msg.body().unwrap_or_default(), self.max_body_bytes)
    }
}

/// The token of an `Authorization` value `Bearer 1*SP <visible ASCII>`.
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(SCHEME.len())?;
    if !scheme.eq_ignore_ascii_case(SCHEME.as_bytes()) || rest.first() != Some(&b' ') {
        return None;
    }
    let start = rest.iter().position(|&b| b != b' ')?;
    let token = rest.get(start..)?;
    token.iter().all(u8::is_ascii_graphic).then_some(token)
}

/// Whether an `Authorization` value uses the Bearer scheme (for
/// [`SchemeEvidence`](super::SchemeEvidence)).
pub(super) fn is_bearer(value: &[u8]) -> bool {
    let value = super::trim_ows(value);
    value
        .get(..SCHEME.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(SCHEME.as_bytes()))
        && matches!(value.get(SCHEME.len()), None | Some(b' ' | b'\t'))
}
