//! [`SigningProfile`]: what differs between the AdCP signing profiles, as
//! data.

use adcp_sigbase::encoding::BinaryEncoding;

/// Whether a legacy (3.0/3.1) request signature covers `content-digest`,
/// following the endpoint's advertised `covers_content_digest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LegacyDigest {
    /// Cover it on requests with a body (`required` and `either`
    /// endpoints; what a 3.2 signer should do even for `either`).
    Cover,
    /// Leave it out (`forbidden` endpoints only).
    Omit,
}

/// An AdCP signing profile: the `tag`, the binary-value encodings, and
/// which messages carry a body digest.
///
/// | profile | `tag` | `Signature` | `Content-Digest` |
/// |---|---|---|---|
/// | [`webhook_v1`](Self::webhook_v1) | `adcp/webhook-signing/v1` | unpadded base64url | padded standard Base64 (see below) |
/// | [`request_v3_2`](Self::request_v3_2) | `adcp/request-signing/v1` | RFC 8941 Base64 | RFC 8941 Base64 |
/// | [`request_legacy`](Self::request_legacy) | `adcp/request-signing/v1` | unpadded base64url | unpadded base64url |
///
/// The webhook `Content-Digest` is emitted in padded standard Base64, as
/// every webhook conformance vector, the Python SDK and the published JS
/// SDK emit it and every known verifier accepts it, although the spec text
/// names unpadded base64url for both webhook binary values (the digest
/// value is covered by the signature, so the spelling carries no security
/// weight). The legacy request profile is never chosen implicitly: only
/// [`SigningProfile::request_legacy`] selects it, for an endpoint known to
/// run AdCP 3.0/3.1.
///
/// ```
/// use adcp_sign::SigningProfile;
/// use adcp_sigbase::encoding::BinaryEncoding;
///
/// let webhook = SigningProfile::webhook_v1();
/// assert_eq!(webhook.tag(), "adcp/webhook-signing/v1");
/// assert_eq!(webhook.signature_encoding(), BinaryEncoding::Base64UrlUnpadded);
/// assert_eq!(webhook.digest_encoding(), BinaryEncoding::Base64Padded);
/// assert_eq!(SigningProfile::request_v3_2().signature_encoding(), BinaryEncoding::Base64Padded);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SigningProfile {
    name: &'static str,
    tag: &'static str,
    webhook: bool,
    signature_encoding: BinaryEncoding,
    digest_encoding: BinaryEncoding,
    cover_digest: bool,
}

impl SigningProfile {
    /// Webhook v1 (`adcp/webhook-signing/v1`): a body is required and its
    /// digest always covered.
    #[must_use]
    pub const fn webhook_v1() -> Self {
        Self {
            name: "webhook",
            tag: "adcp/webhook-signing/v1",
            webhook: true,
            signature_encoding: BinaryEncoding::Base64UrlUnpadded,
            // The vectors' spelling, not the spec text's: see the type docs.
            digest_encoding: BinaryEncoding::Base64Padded,
            cover_digest: true,
        }
    }

    /// Request signing under AdCP 3.2 (`adcp/request-signing/v1`): RFC 8941
    /// Base64 everywhere; a request with a body covers its digest, a
    /// request without one covers neither `content-type` nor
    /// `content-digest`.
    #[must_use]
    pub const fn request_v3_2() -> Self {
        Self {
            name: "request-3.2",
            tag: "adcp/request-signing/v1",
            webhook: false,
            signature_encoding: BinaryEncoding::Base64Padded,
            digest_encoding: BinaryEncoding::Base64Padded,
            cover_digest: true,
        }
    }

    /// Request signing for an explicitly configured AdCP 3.0/3.1 endpoint:
    /// unpadded base64url binary values, digest coverage per the endpoint's
    /// `covers_content_digest`.
    #[must_use]
    pub const fn request_legacy(digest: LegacyDigest) -> Self {
        Self {
            name: "request-legacy",
            tag: "adcp/request-signing/v1",
            webhook: false,
            signature_encoding: BinaryEncoding::Base64UrlUnpadded,
            digest_encoding: BinaryEncoding::Base64UrlUnpadded,
            cover_digest: matches!(digest, LegacyDigest::Cover),
        }
    }

    /// A short name for logs: `webhook`, `request-3.2`, `request-legacy`.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The `tag` signature parameter.
    #[must_use]
    pub const fn tag(&self) -> &'static str {
        self.tag
    }

    /// Whether this is the webhook profile.
    #[must_use]
    pub const fn is_webhook(&self) -> bool {
        self.webhook
    }

    /// Whether every signed message must have a body (webhooks).
    #[must_use]
    pub const fn requires_body(&self) -> bool {
        self.webhook
    }

    /// The encoding of the `Signature` value.
    #[must_use]
    pub const fn signature_encoding(&self) -> BinaryEncoding {
        self.signature_encoding
    }

    /// The encoding of the `Content-Digest` value.
    #[must_use]
    pub const fn digest_encoding(&self) -> BinaryEncoding {
        self.digest_encoding
    }

    /// Whether a message with a body covers `content-digest`.
    #[must_use]
    pub const fn covers_digest(&self) -> bool {
        self.cover_digest
    }
}
