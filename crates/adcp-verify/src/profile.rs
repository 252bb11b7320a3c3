//! Profiles are data: one verifier, parameterized by the endpoint's profile.

use crate::error::CodePrefix;
use adcp_sigbase::crypto::Algorithm;
use adcp_sigbase::encoding::{BinaryDecoding, BinaryEncoding};

/// `covers_content_digest` policy of a request endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DigestCoverage {
    /// Signed requests with a body must cover `content-digest` (3.2, webhooks).
    Required,
    /// Coverage optional (legacy 3.0/3.1 endpoints only).
    Either,
    /// Coverage rejected with `*_components_unexpected` (legacy only).
    Forbidden,
}

/// The signing profile an endpoint verifies under. Chosen by the
/// endpoint's trusted configuration, never guessed from the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    name: &'static str,
    tag: &'static str,
    prefix: CodePrefix,
    signature_encoding: BinaryEncoding,
    digest_decoding: BinaryDecoding,
    digest_coverage: DigestCoverage,
    key_purposes: &'static [&'static str],
    algorithms: &'static [Algorithm],
}

/// The algorithms both AdCP profiles allow, independent of library defaults.
const ALLOWED: &[Algorithm] = &[Algorithm::Ed25519, Algorithm::EcdsaP256Sha256];

impl Profile {
    /// Webhook v1 (`adcp/webhook-signing/v1`): `Signature` in unpadded
    /// base64url; `content-digest` always required; key purpose
    /// `request-signing` or the deprecated `webhook-signing`.
    ///
    /// `Content-Digest` values are accepted in either padded standard Base64
    /// (what the conformance vectors and most SDKs emit) or unpadded
    /// base64url (what the spec text says), one alphabet per value, decoded
    /// strictly and compared in constant time: the digest value is itself
    /// covered by the signature, so accepting both spellings opens nothing.
    pub const fn webhook_v1() -> Self {
        Self {
            name: "webhook",
            tag: "adcp/webhook-signing/v1",
            prefix: CodePrefix::Webhook,
            signature_encoding: BinaryEncoding::Base64UrlUnpadded,
            digest_decoding: BinaryDecoding::EitherCanonical,
            digest_coverage: DigestCoverage::Required,
            key_purposes: &["request-signing", "webhook-signing"],
            algorithms: ALLOWED,
        }
    }

    /// Request signing under AdCP 3.2 (`adcp/request-signing/v1`): binary
    /// values in RFC 8941 Base64; `content-digest` required when there is a
    /// body; key purpose exactly `request-signing`.
    pub const fn request_v3_2() -> Self {
        Self {
            name: "request-3.2",
            tag: "adcp/request-signing/v1",
            prefix: CodePrefix::Request,
            signature_encoding: BinaryEncoding::Base64Padded,
            digest_decoding: BinaryDecoding::Only(BinaryEncoding::Base64Padded),
            digest_coverage: DigestCoverage::Required,
            key_purposes: &["request-signing"],
            algorithms: ALLOWED,
        }
    }

    /// An explicitly configured legacy 3.0/3.1 request endpoint: binary
    /// values in unpadded base64url, the advertised `covers_content_digest`
    /// policy. Never selected automatically.
    pub const fn request_legacy(coverage: DigestCoverage) -> Self {
        Self {
            name: "request-legacy",
            tag: "adcp/request-signing/v1",
            prefix: CodePrefix::Request,
            signature_encoding: BinaryEncoding::Base64UrlUnpadded,
            digest_decoding: BinaryDecoding::EitherCanonical,
            digest_coverage: coverage,
            key_purposes: &["request-signing"],
            algorithms: ALLOWED,
        }
    }

    /// A short name for logs (`webhook`, `request-3.2`, `request-legacy`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The exact `tag` the profile requires.
    pub fn tag(&self) -> &'static str {
        self.tag
    }

    /// Error-code prefix.
    pub fn prefix(&self) -> CodePrefix {
        self.prefix
    }

    /// Whether this is the webhook profile.
    pub fn is_webhook(&self) -> bool {
        self.prefix == CodePrefix::Webhook
    }

    /// Decoder for the `Signature` value.
    pub fn signature_encoding(&self) -> BinaryEncoding {
        self.signature_encoding
    }

    /// Decoder for `Content-Digest` values.
    pub fn digest_decoding(&self) -> BinaryDecoding {
        self.digest_decoding
    }

    /// `content-digest` coverage policy.
    pub fn digest_coverage(&self) -> DigestCoverage {
        self.digest_coverage
    }

    /// Accepted JWK `adcp_use` values.
    pub fn key_purposes(&self) -> &'static [&'static str] {
        self.key_purposes
    }

    /// The `alg` allowlist.
    pub fn algorithms(&self) -> &'static [Algorithm] {
        self.algorithms
    }

    /// The canonicalization error profile.
    pub fn canon_profile(&self) -> adcp_canon::Profile {
        match self.prefix {
            CodePrefix::Webhook => adcp_canon::Profile::Webhook,
            CodePrefix::Request => adcp_canon::Profile::Request,
        }
    }
}
