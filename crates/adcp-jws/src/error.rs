//! The governance verification error taxonomy.

use std::fmt;

/// A verification failure class; [`ErrorCode::as_str`] is the exact code
/// of the spec's "Verification error taxonomy" table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// Malformed token, signature invalid, `typ` mismatch, `alg` not
    /// allowed, unknown or inconsistent `crit`, a required claim missing or
    /// malformed (`governance_token_invalid`).
    TokenInvalid,
    /// No usable governance key for the `kid` after one refetch, or the key
    /// found is not a governance-signing key (`governance_key_unknown`).
    KeyUnknown,
    /// The JWKS (or brand.json) fetch failed transiently
    /// (`governance_jwks_unavailable`, retryable).
    JwksUnavailable,
    /// A discovery URL failed SSRF validation (`governance_jwks_untrusted`).
    JwksUntrusted,
    /// `exp` is in the past beyond the skew (`governance_token_expired`).
    TokenExpired,
    /// `(iss, aud, jti)` already consumed (`governance_token_replayed`).
    TokenReplayed,
    /// `iat` or `nbf` in the future beyond the skew
    /// (`governance_token_not_yet_valid`).
    TokenNotYetValid,
    /// `jti` in `revoked_jtis` or `kid` in `revoked_kids`
    /// (`governance_token_revoked`).
    TokenRevoked,
    /// `iss` is not a governance agent of the buyer's brand.json
    /// (`governance_issuer_not_authorized`).
    IssuerNotAuthorized,
    /// The revocation list was not refreshed within grace; blocks
    /// execution-phase tokens (`governance_revocation_stale`).
    RevocationStale,
    /// A well-formed token that does not bind this operation: `aud`,
    /// `caller`, `sub`, `phase`, `media_buy_id`, task, payload hash,
    /// commitment currency or ceiling (`governance_token_not_applicable`).
    TokenNotApplicable,
    /// The replay store could not answer or refused the insert at a cap;
    /// the token is not accepted (fail closed, retryable). The spec names
    /// no code for this: `governance_verifier_unavailable`, after the
    /// transport profiles' `*_verifier_unavailable`.
    VerifierUnavailable,
}

impl ErrorCode {
    /// The exact code string.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::TokenInvalid => "governance_token_invalid",
            Self::KeyUnknown => "governance_key_unknown",
            Self::JwksUnavailable => "governance_jwks_unavailable",
            Self::JwksUntrusted => "governance_jwks_untrusted",
            Self::TokenExpired => "governance_token_expired",
            Self::TokenReplayed => "governance_token_replayed",
            Self::TokenNotYetValid => "governance_token_not_yet_valid",
            Self::TokenRevoked => "governance_token_revoked",
            Self::IssuerNotAuthorized => "governance_issuer_not_authorized",
            Self::RevocationStale => "governance_revocation_stale",
            Self::TokenNotApplicable => "governance_token_not_applicable",
            Self::VerifierUnavailable => "governance_verifier_unavailable",
        }
    }

    /// Whether a retry may succeed (the spec's "Retry?" column).
    #[must_use]
    pub const fn is_transient(self) -> bool {
        matches!(self, Self::JwksUnavailable | Self::VerifierUnavailable)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A step of the seller verification checklist (1 to 15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Step(u8);

impl Step {
    /// Step `n` of the checklist.
    #[must_use]
    pub const fn new(n: u8) -> Self {
        Self(n)
    }

    /// The step number.
    #[must_use]
    pub const fn number(self) -> u8 {
        self.0
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A rejected governance token: the code, the checklist step that
/// rejected it, and a detail for local logs only (the spec forbids echoing
/// which claim mismatched to the counterparty: return [`code`](Self::code)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GovError {
    code: ErrorCode,
    step: Step,
    detail: String,
}

impl GovError {
    /// A failure at `step`.
    #[must_use]
    pub fn new(code: ErrorCode, step: u8, detail: impl Into<String>) -> Self {
        Self {
            code,
            step: Step::new(step),
            detail: detail.into(),
        }
    }

    /// The exact spec code string (`governance_token_invalid`, …).
    #[must_use]
    pub const fn code(&self) -> &'static str {
        self.code.as_str()
    }

    /// The typed code.
    #[must_use]
    pub const fn error_code(&self) -> ErrorCode {
        self.code
    }

    /// The checklist step that rejected the token.
    #[must_use]
    pub const fn step(&self) -> Step {
        self.step
    }

    /// What failed, for local logs (never for the counterparty).
    #[must_use]
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl fmt::Display for GovError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at step {}: {}", self.code, self.step, self.detail)
    }
}

impl std::error::Error for GovError {}
