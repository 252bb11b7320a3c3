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
    /// `brand_json_url` discovery, step 1: the agent's capabilities could
    /// not be fetched (`request_signature_capabilities_unreachable`;
    /// transient, retryable).
    CapabilitiesUnreachable,
    /// Step 2: `identity.brand_json_url` absent or not HTTPS
    /// (`request_signature_brand_json_url_missing`).
    BrandJsonUrlMissing,
    /// Step 4: the brand.json fetch failed
    /// (`request_signature_brand_json_unreachable`; transient, retryable).
    BrandJsonUnreachable,
    /// Step 4: brand.json failed strict parsing or its body cap
    /// (`request_signature_brand_json_malformed`).
    BrandJsonMalformed,
    /// Step 3: the agent's eTLD+1 differs from the `brand_json_url`'s and
    /// `authorized_operators[]` does not delegate it
    /// (`request_signature_brand_origin_mismatch`).
    BrandOriginMismatch,
    /// Step 5: no `agents[].url` byte-equals the agent URL
    /// (`request_signature_agent_not_in_brand_json`).
    AgentNotInBrandJson,
    /// Step 5: several `agents[]` entries match the agent URL
    /// (`request_signature_brand_json_ambiguous`).
    BrandJsonAmbiguous,
    /// Step 7: the resolved `jwks_uri` host differs from the declared
    /// `identity.key_origins.{purpose}` (`request_signature_key_origin_mismatch`).
    KeyOriginMismatch,
    /// Step 7: signing declared without `identity.key_origins.{purpose}`
    /// (`request_signature_key_origin_missing`).
    KeyOriginMissing,
    /// The replay store is unreachable. Not a spec code: the request fails
    /// closed with 503 (retryable) and no `WWW-Authenticate` challenge.
    StoreUnavailable,
}

// The `brand_json_url` discovery-chain codes (security.mdx, "Rejection
// codes for this discovery chain (3.x)") are defined by the spec only with
// the `request_signature_` prefix, and the webhook taxonomy lists no
// `webhook_*` counterpart. Its editor note says every `webhook_*` code is
// terminal for the sender unless the spec carves out an exception, so
// inventing `webhook_signature_capabilities_unreachable` would turn a
// transient failure into a terminal one on conforming senders. A webhook
// verifier therefore reports the generic key-source code the webhook
// profile already uses for the same failure: `webhook_signature_jwks_unavailable`
// for the transient ones (503, retryable) and `webhook_signature_jwks_untrusted`
// for permanent refusals of the chain (401). `ErrorCode` itself stays
// precise under both prefixes, so logs and metrics keep the exact cause.

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
            (CapabilitiesUnreachable, R) => "request_signature_capabilities_unreachable",
            (BrandJsonUrlMissing, R) => "request_signature_brand_json_url_missing",
            (BrandJsonUnreachable, R) => "request_signature_brand_json_unreachable",
            (BrandJsonMalformed, R) => "request_signature_brand_json_malformed",
            (BrandOriginMismatch, R) => "request_signature_brand_origin_mismatch",
            (AgentNotInBrandJson, R) => "request_signature_agent_not_in_brand_json",
            (BrandJsonAmbiguous, R) => "request_signature_brand_json_ambiguous",
            (KeyOriginMismatch, R) => "request_signature_key_origin_mismatch",
            (KeyOriginMissing, R) => "request_signature_key_origin_missing",
            // No webhook-profile codes exist for the discovery chain: the
            // generic key-source code (see the note above `CodePrefix`).
            (CapabilitiesUnreachable | BrandJsonUnreachable, W) => "webhook_signature_jwks_unavailable",
            (
                BrandJsonUrlMissing | BrandJsonMalformed | BrandOriginMismatch | AgentNotInBrandJson
                | BrandJsonAmbiguous | KeyOriginMismatch | KeyOriginMissing,
                W,
            ) => "webhook_signature_jwks_untrusted",
            (StoreUnavailable, W) => "webhook_verifier_unavailable",
            (StoreUnavailable, R) => "request_verifier_unavailable",
        }
    }

    /// Whether the sender may retry the same delivery: only transient
    /// infrastructure failures are; every signature failure reproduces
    /// identically on retry and is terminal for that delivery. Of the
    /// discovery-chain codes, the spec's retry column makes only the two
    /// `*_unreachable` fetch failures transient; a malformed brand.json, an
    /// origin mismatch and the rest are "do not retry" / "not retryable".
    pub const fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::JwksUnavailable
                | ErrorCode::StoreUnavailable
                | ErrorCode::CapabilitiesUnreachable
                | ErrorCode::BrandJsonUnreachable
        )
    }

    /// The HTTP status a receiver answers with: 503 for retryable
    /// infrastructure failures, 400 for a malformed body, 401 otherwise.
    pub const fn http_status(self) -> u16 {
        if self.is_retryable() {
            return 503;
        }
        match self {
            ErrorCode::BodyMalformed => 400,
            _ => 401,
        }
    }

    /// Whether this code reports a key-discovery failure: a JWKS fetch
    /// (`*_jwks_unavailable`, `*_jwks_untrusted`) or a step of the
    /// `brand_json_url` chain. These are the codes a [`KeyResolver`]
    /// may hand the verifier through
    /// [`ResolveError::Discovery`](crate::keys::ResolveError::Discovery).
    ///
    /// [`KeyResolver`]: crate::keys::KeyResolver
    pub const fn is_key_discovery(self) -> bool {
        matches!(
            self,
            ErrorCode::JwksUnavailable
                | ErrorCode::JwksUntrusted
                | ErrorCode::CapabilitiesUnreachable
                | ErrorCode::BrandJsonUrlMissing
                | ErrorCode::BrandJsonUnreachable
                | ErrorCode::BrandJsonMalformed
                | ErrorCode::BrandOriginMismatch
                | ErrorCode::AgentNotInBrandJson
                | ErrorCode::BrandJsonAmbiguous
                | ErrorCode::KeyOriginMismatch
                | ErrorCode::KeyOriginMissing
        )
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

    /// The profile prefix the code is rendered with.
    pub fn prefix(&self) -> CodePrefix {
        self.prefix
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

#[cfg(test)]
mod tests {
    use super::{CodePrefix, ErrorCode};

    /// (code, request-profile string, webhook-profile string, status, retryable)
    const DISCOVERY: &[(ErrorCode, &str, &str, u16, bool)] = &[
        (
            ErrorCode::CapabilitiesUnreachable,
            "request_signature_capabilities_unreachable",
            "webhook_signature_jwks_unavailable",
            503,
            true,
        ),
        (
            ErrorCode::BrandJsonUrlMissing,
            "request_signature_brand_json_url_missing",
            "webhook_signature_jwks_untrusted",
            401,
            false,
        ),
        (
            ErrorCode::BrandJsonUnreachable,
            "request_signature_brand_json_unreachable",
            "webhook_signature_jwks_unavailable",
            503,
            true,
        ),
        (
            ErrorCode::BrandJsonMalformed,
            "request_signature_brand_json_malformed",
            "webhook_signature_jwks_untrusted",
            401,
            false,
        ),
        (
            ErrorCode::BrandOriginMismatch,
            "request_signature_brand_origin_mismatch",
            "webhook_signature_jwks_untrusted",
            401,
            false,
        ),
        (
            ErrorCode::AgentNotInBrandJson,
            "request_signature_agent_not_in_brand_json",
            "webhook_signature_jwks_untrusted",
            401,
            false,
        ),
        (
            ErrorCode::BrandJsonAmbiguous,
            "request_signature_brand_json_ambiguous",
            "webhook_signature_jwks_untrusted",
            401,
            false,
        ),
        (
            ErrorCode::KeyOriginMismatch,
            "request_signature_key_origin_mismatch",
            "webhook_signature_jwks_untrusted",
            401,
            false,
        ),
        (
            ErrorCode::KeyOriginMissing,
            "request_signature_key_origin_missing",
            "webhook_signature_jwks_untrusted",
            401,
            false,
        ),
    ];

    #[test]
    fn discovery_chain_codes_strings_status_and_retry() {
        for &(code, request, webhook, status, retryable) in DISCOVERY {
            assert_eq!(code.as_str(CodePrefix::Request), request);
            assert_eq!(code.as_str(CodePrefix::Webhook), webhook, "{code:?}");
            assert_eq!(code.http_status(), status, "{code:?}");
            assert_eq!(code.is_retryable(), retryable, "{code:?}");
            assert!(code.is_key_discovery(), "{code:?}");
        }
    }

    #[test]
    fn webhook_rendering_agrees_with_the_generic_codes_status() {
        // A webhook sender reads the rendered code: its retry class must be
        // the one the generic code it renders as already has.
        for &(code, _, webhook, _, _) in DISCOVERY {
            let generic = if webhook.ends_with("_jwks_unavailable") {
                ErrorCode::JwksUnavailable
            } else {
                ErrorCode::JwksUntrusted
            };
            assert_eq!(generic.as_str(CodePrefix::Webhook), webhook);
            assert_eq!(code.http_status(), generic.http_status(), "{code:?}");
            assert_eq!(code.is_retryable(), generic.is_retryable(), "{code:?}");
        }
    }

    #[test]
    fn only_key_source_codes_are_discovery_codes() {
        assert!(ErrorCode::JwksUnavailable.is_key_discovery());
        assert!(ErrorCode::JwksUntrusted.is_key_discovery());
        for code in [
            ErrorCode::SignatureInvalid,
            ErrorCode::KeyUnknown,
            ErrorCode::StoreUnavailable,
            ErrorCode::Replayed,
        ] {
            assert!(!code.is_key_discovery(), "{code:?}");
        }
    }
}
