//! The AdCP verifier error taxonomy (webhook and request profiles).

use std::fmt;

/// A verification failure class. [`ErrorCode::as_str`] gives the exact
/// spec code for a profile (`webhook_signature_invalid`,
/// `request_signature_invalid`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// Unsigned request where signing is required (request profile only).
    SignatureRequired,
    /// `@target-uri` malformed, or `@authority` mismatch (cross-vhost replay).
    TargetUriMalformed,
    /// `Signature`/`Signature-Input` malformed, or one without the other.
    HeaderMalformed,
    /// A required signature parameter is absent.
    ParamsIncomplete,
    /// `tag` is not the profile's tag.
    TagInvalid,
    /// `alg` is not in the allowlist.
    AlgNotAllowed,
    /// The signature window is invalid.
    WindowInvalid,
    /// Required covered components are missing.
    ComponentsIncomplete,
    /// `content-digest` covered where the legacy policy forbids it (request profile only).
    ComponentsUnexpected,
    /// `keyid` unknown after one refetch.
    KeyUnknown,
    /// The JWK's `use`, `key_ops`, `adcp_use` or `alg`/`crv` do not allow this use.
    KeyPurposeInvalid,
    /// `keyid` is revoked.
    KeyRevoked,
    /// The revocation list was not refreshed within grace.
    RevocationStale,
    /// Cryptographic verification failed.
    SignatureInvalid,
    /// `content-digest` does not match the body.
    DigestMismatch,
    /// The body is not well-formed JSON or has duplicate object keys.
    BodyMalformed,
    /// `(keyid, nonce)` already seen.
    Replayed,
    /// Per-keyid or aggregate replay-cache cap reached.
    RateAbuse,
    /// Registered auth mode differs from the received scheme (webhook profile only).
    ModeMismatch,
    /// JWKS fetch failed transiently (retryable).
    JwksUnavailable,
    /// JWKS fetch failed SSRF validation.
    JwksUntrusted,
    /// The replay store is unreachable. Not a spec code: the request fails
    /// closed with 503 (retryable) and no `WWW-Authenticate` challenge.
    StoreUnavailable,
}

/// Which taxonomy codes are rendered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodePrefix {
    /// `webhook_*`.
    Webhook,
    /// `request_*`.
    Request,
}

impl ErrorCode {
    /// The exact spec code under `prefix`.
    pub const fn as_str(self, prefix: CodePrefix) -> &'static str {
        use CodePrefix::{Request as R, Webhook as W};
        use ErrorCode::*;
        match (self, prefix) {
            (SignatureRequired, _) => "request_signature_required",
            (TargetUriMalformed, W) => "webhook_target_uri_malformed",
            (TargetUriMalformed, R) => "request_target_uri_malformed",
            (HeaderMalformed, W) => "webhook_signature_header_malformed",
            (HeaderMalformed, R) => "request_signature_header_malformed",
            (ParamsIncomplete, W) => "webhook_signature_params_incomplete",
            (ParamsIncomplete, R) => "request_signature_params_incomplete",
            (TagInvalid, W) => "webhook_signature_tag_invalid",
            (TagInvalid, R) => "request_signature_tag_invalid",
            (AlgNotAllowed, W) => "webhook_signature_alg_not_allowed",
            (AlgNotAllowed, R) => "request_signature_alg_not_allowed",
            (WindowInvalid, W) => "webhook_signature_window_invalid",
            (WindowInvalid, R) => "request_signature_window_invalid",
            (ComponentsIncomplete, W) => "webhook_signature_components_incomplete",
            (ComponentsIncomplete, R) => "request_signature_components_incomplete",
            (ComponentsUnexpected, W) => "webhook_signature_components_unexpected",
            (ComponentsUnexpected, R) => "request_signature_components_unexpected",
            (KeyUnknown, W) => "webhook_signature_key_unknown",
            (KeyUnknown, R) => "request_signature_key_unknown",
            (KeyPurposeInvalid, W) => "webhook_signature_key_purpose_invalid",
            (KeyPurposeInvalid, R) => "request_signature_key_purpose_invalid",
            (KeyRevoked, W) => "webhook_signature_key_revoked",
            (KeyRevoked, R) => "request_signature_key_revoked",
            (RevocationStale, W) => "webhook_signature_revocation_stale",
            (RevocationStale, R) => "request_signature_revocation_stale",
            (SignatureInvalid, W) => "webhook_signature_invalid",
            (SignatureInvalid, R) => "request_signature_invalid",
            (DigestMismatch, W) => "webhook_signature_digest_mismatch",
            (DigestMismatch, R) => "request_signature_digest_mismatch",
            (BodyMalformed, W) => "webhook_body_malformed",
            (BodyMalformed, R) => "request_body_malformed",
            (Replayed, W) => "webhook_signature_replayed",
            (Replayed, R) => "request_signature_replayed",
            (RateAbuse, W) => "webhook_signature_rate_abuse",
            (RateAbuse, R) => "request_signature_rate_abuse",
            (ModeMismatch, _) => "webhook_mode_mismatch",
            (JwksUnavailable, W) => "webhook_signature_jwks_unavailable",
            (JwksUnavailable, R) => "request_signature_jwks_unavailable",
            (JwksUntrusted, W) => "webhook_signature_jwks_untrusted",
            (JwksUntrusted, R) => "request_signature_jwks_untrusted",
            (StoreUnavailable, W) => "webhook_verifier_unavailable",
            (StoreUnavailable, R) => "request_verifier_unavailable",
        }
    }

    /// Whether the sender may retry the same delivery: only transient
    /// infrastructure failures are; every signature failure reproduces
    /// identically on retry and is terminal for that delivery.
    pub const fn is_retryable(self) -> bool {
        matches!(self, ErrorCode::JwksUnavailable | ErrorCode::StoreUnavailable)
    }

    /// The HTTP status a receiver answers with: 503 for retryable
    /// infrastructure failures, 400 for a malformed body, 401 otherwise.
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorCode::JwksUnavailable | ErrorCode::StoreUnavailable => 503,
            ErrorCode::BodyMalformed => 400,
            _ => 401,
        }
    }
}

/// A rejected request: the code, the profile's prefix, the checklist step
/// that failed, and a detail for server-side logs (never sent to the peer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    code: ErrorCode,
    prefix: CodePrefix,
    step: Step,
    detail: String,
}

/// The checklist step that rejected (0 = pre-checklist decision).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Step {
    /// Step number, 0–14.
    pub number: u8,
    /// Sub-step letter (`Some('a')` for 9a).
    pub sub: Option<char>,
}

impl Step {
    /// A numbered step.
    pub const fn new(number: u8) -> Self {
        Self { number, sub: None }
    }

    /// A sub-step such as 9a.
    pub const fn sub(number: u8, sub: char) -> Self {
        Self { number, sub: Some(sub) }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number)?;
        if let Some(s) = self.sub {
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

impl VerifyError {
    /// Builds an error.
    pub fn new(code: ErrorCode, prefix: CodePrefix, step: Step, detail: impl Into<String>) -> Self {
        Self {
            code,
            prefix,
            step,
            detail: detail.into(),
        }
    }

    /// The failure class.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The exact spec code string (`webhook_signature_invalid`, …).
    pub fn code_str(&self) -> &'static str {
        self.code.as_str(self.prefix)
    }

    /// The checklist step that rejected.
    pub fn step(&self) -> Step {
        self.step
    }

    /// Server-side detail (do not echo to the peer; the code is the interface).
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// Whether the sender may retry this delivery.
    pub fn is_retryable(&self) -> bool {
        self.code.is_retryable()
    }

    /// The `WWW-Authenticate` value for a 401: `Signature error="<code>"`,
    /// no other parameters (no realm). `None` for retryable infrastructure
    /// failures, which are answered with 503 and no challenge.
    pub fn www_authenticate(&self) -> Option<String> {
        (self.code.http_status() == 401).then(|| format!("Signature error=\"{}\"", self.code_str()))
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (step {}): {}", self.code_str(), self.step, self.detail)
    }
}

impl std::error::Error for VerifyError {}
