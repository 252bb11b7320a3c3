//! [`SigningDecision`]: whether one call is signed, and why.

use adcp_sign::{LegacyDigest, SigningProfile};
use adcp_verify::request_policy::{Mode, ResolvedRequest, VerifierCapability};
use adcp_verify::DigestCoverage;

/// The request-signing profile negotiated with a counterparty, which fixes
/// the binary encoding of `Signature` and `Content-Digest`.
///
/// AdCP 3.2 ("Request-profile binary value encoding" in the spec's Signed
/// Requests section): a signer uses the legacy unpadded Base64URL encoding
/// only on an explicitly negotiated 3.0/3.1 endpoint, RFC 8941 Base64 for
/// 3.2 and later. Nothing in a counterparty's answers selects the legacy
/// profile: only configuration does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SigningVersion {
    /// AdCP 3.2 and later: RFC 8941 standard Base64, `content-digest`
    /// always covered on a request with a body. The default.
    #[default]
    V3_2,
    /// An endpoint explicitly configured as AdCP 3.0/3.1: unpadded
    /// Base64URL, `content-digest` covered unless the endpoint advertises
    /// `covers_content_digest: "forbidden"`.
    Legacy,
}

impl SigningVersion {
    /// `3.2` or `legacy`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            SigningVersion::V3_2 => "3.2",
            SigningVersion::Legacy => "legacy",
        }
    }
}

/// Why a call was (or was not) signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SigningReason {
    /// The operation (or JSON-RPC method) is in `required_for`
    /// (`protocol_methods_required_for`): signers MUST sign it.
    RequiredFor,
    /// In `warn_for` (`protocol_methods_warn_for`): shadow mode; signed so
    /// that the counterparty's monitoring sees good signatures.
    WarnFor,
    /// In `supported_for` (`protocol_methods_supported_for`): signers
    /// SHOULD sign it.
    SupportedFor,
    /// The counterparty supports signing and advertises no lists at all:
    /// everything is signed.
    NoListsAdvertised,
    /// The counterparty supports signing and the call is in none of its
    /// lists: signed (the default; see [`SigningClientBuilder::sign_unlisted`](crate::SigningClientBuilder::sign_unlisted)).
    Unlisted,
    /// As [`SigningReason::Unlisted`], with unlisted signing turned off:
    /// not signed.
    UnlistedNotSigned,
    /// The counterparty does not verify signatures (`supported` false or
    /// no `request_signing` block): not signed.
    Unsupported,
    /// An unsigned attempt was answered `401` with `WWW-Authenticate:
    /// Signature error="request_signature_required"`: the retry is signed
    /// whatever the refreshed capability says.
    Challenged,
}

impl SigningReason {
    /// A stable spelling: `required_for`, `warn_for`, `supported_for`,
    /// `no_lists_advertised`, `unlisted`, `unlisted_not_signed`,
    /// `unsupported`, `challenged`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            SigningReason::RequiredFor => "required_for",
            SigningReason::WarnFor => "warn_for",
            SigningReason::SupportedFor => "supported_for",
            SigningReason::NoListsAdvertised => "no_lists_advertised",
            SigningReason::Unlisted => "unlisted",
            SigningReason::UnlistedNotSigned => "unlisted_not_signed",
            SigningReason::Unsupported => "unsupported",
            SigningReason::Challenged => "challenged",
        }
    }
}

impl core::fmt::Display for SigningReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the call that produced a [`CallResponse`](crate::CallResponse)
/// was signed, why, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SigningDecision {
    /// Whether the (last) attempt carried a signature.
    pub signed: bool,
    /// Why.
    pub reason: SigningReason,
    /// Whether the signature covered `content-digest` (false when
    /// unsigned).
    pub covers_content_digest: bool,
    /// The negotiated signing version (its encoding applies when signed).
    pub version: SigningVersion,
}

impl SigningDecision {
    /// The decision for one resolved request against the counterparty's
    /// capability, with the signing profile to use when it is signed.
    ///
    /// Spec, "Transport capability advertisement": signers MUST sign
    /// `required_for`, SHOULD sign `supported_for`, and `warn_for` is the
    /// shadow-mode step between them, so all three are signed; when
    /// `supported` is false "signatures are ignored", so nothing is.
    ///
    /// A call in no list of a counterparty that supports signing is signed
    /// unless `sign_unlisted` is false. Spec, "Composition with fallback
    /// authenticators": "A signed request enters the verifier checklist
    /// and is evaluated on its cryptographic merits, whether or not the
    /// operation is in `required_for`" (and `supported: true` means "the
    /// verifier validates signatures when present"), so a signature on an
    /// unlisted call is verified, never ignored or refused for being
    /// there; "Protocol-method coverage" calls opportunistic signing "the
    /// only defensible default when the seller is silent". Signing gives
    /// the body integrity and signer identity either way.
    pub(crate) fn decide(
        capability: &VerifierCapability,
        request: &ResolvedRequest,
        version: SigningVersion,
        sign_unlisted: bool,
    ) -> Result<(Self, Option<SigningProfile>), &'static str> {
        let reason = if !capability.supported() {
            SigningReason::Unsupported
        } else {
            match capability.mode_for(request) {
                Mode::Required => SigningReason::RequiredFor,
                Mode::Warn => SigningReason::WarnFor,
                Mode::Supported => SigningReason::SupportedFor,
                Mode::Unlisted if advertises_no_lists(capability) => SigningReason::NoListsAdvertised,
                Mode::Unlisted if sign_unlisted => SigningReason::Unlisted,
                Mode::Unlisted => SigningReason::UnlistedNotSigned,
            }
        };
        let sign = !matches!(reason, SigningReason::Unsupported | SigningReason::UnlistedNotSigned);
        Self::with_reason(capability, version, reason, sign)
    }

    /// The decision to sign (or not) for `reason`, with its profile.
    pub(crate) fn with_reason(
        capability: &VerifierCapability,
        version: SigningVersion,
        reason: SigningReason,
        sign: bool,
    ) -> Result<(Self, Option<SigningProfile>), &'static str> {
        let unsigned = Self {
            signed: false,
            reason,
            covers_content_digest: false,
            version,
        };
        if !sign {
            return Ok((unsigned, None));
        }
        let coverage = capability.covers_content_digest().unwrap_or(DigestCoverage::Required);
        let profile = match (version, coverage) {
            // "A 3.2 signer SHOULD cover content-digest even when a legacy
            // peer advertises "either"" (Content-digest and proxy
            // compatibility).
            (SigningVersion::V3_2, DigestCoverage::Required | DigestCoverage::Either) => SigningProfile::request_v3_2(),
            (SigningVersion::V3_2, DigestCoverage::Forbidden) => {
                return Err(
                    "covers_content_digest \"forbidden\" is a 3.0/3.1 posture; configure the counterparty as legacy",
                )
            }
            (SigningVersion::Legacy, DigestCoverage::Required | DigestCoverage::Either) => {
                SigningProfile::request_legacy(LegacyDigest::Cover)
            }
            (SigningVersion::Legacy, DigestCoverage::Forbidden) => SigningProfile::request_legacy(LegacyDigest::Omit),
        };
        Ok((
            Self {
                signed: true,
                covers_content_digest: profile.covers_digest(),
                ..unsigned
            },
            Some(profile),
        ))
    }
}

fn advertises_no_lists(capability: &VerifierCapability) -> bool {
    capability.required_for().is_empty()
        && capability.warn_for().is_empty()
        && capability.supported_for().is_empty()
        && capability.protocol_methods_required_for().is_empty()
        && capability.protocol_methods_warn_for().is_empty()
        && capability.protocol_methods_supported_for().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cap(block: serde_json::Value) -> VerifierCapability {
        VerifierCapability::from_json(&block).unwrap()
    }

    fn op(name: &str) -> ResolvedRequest {
        ResolvedRequest::new(Some(name.to_owned()), None)
    }

    #[test]
    fn lists_decide_and_unsupported_never_signs() {
        let c = cap(json!({"supported": true, "covers_content_digest": "required",
            "required_for": ["create_media_buy"], "warn_for": ["update_media_buy"], "supported_for": ["sync_creatives"],
            "protocol_methods_required_for": ["tasks/cancel"]}));
        let reason = |r: &ResolvedRequest, unlisted| {
            let (d, p) = SigningDecision::decide(&c, r, SigningVersion::V3_2, unlisted).unwrap();
            assert_eq!(d.signed, p.is_some());
            (d.signed, d.reason)
        };
        assert_eq!(
            reason(&op("create_media_buy"), true),
            (true, SigningReason::RequiredFor)
        );
        assert_eq!(reason(&op("update_media_buy"), true), (true, SigningReason::WarnFor));
        assert_eq!(reason(&op("sync_creatives"), true), (true, SigningReason::SupportedFor));
        assert_eq!(reason(&op("get_products"), true), (true, SigningReason::Unlisted));
        assert_eq!(
            reason(&op("get_products"), false),
            (false, SigningReason::UnlistedNotSigned)
        );
        let cancel = ResolvedRequest::new(None, Some("tasks/cancel".into()));
        assert_eq!(reason(&cancel, false), (true, SigningReason::RequiredFor));
        // No cross-namespace match: a tool named like the method is unlisted.
        let tool = ResolvedRequest::new(Some("tasks_cancel".into()), None);
        assert_eq!(reason(&tool, false), (false, SigningReason::UnlistedNotSigned));

        let bare = cap(json!({"supported": true, "covers_content_digest": "required"}));
        let (d, _) = SigningDecision::decide(&bare, &op("get_products"), SigningVersion::V3_2, false).unwrap();
        assert_eq!((d.signed, d.reason), (true, SigningReason::NoListsAdvertised));
        let (d, p) = SigningDecision::decide(
            &VerifierCapability::unsupported(),
            &op("create_media_buy"),
            SigningVersion::V3_2,
            true,
        )
        .unwrap();
        assert_eq!((d.signed, d.reason, p), (false, SigningReason::Unsupported, None));
    }

    #[test]
    fn profile_follows_version_and_digest_policy() {
        let with = |coverage: &str, version| {
            let c = cap(json!({"supported": true, "covers_content_digest": coverage}));
            SigningDecision::decide(&c, &op("create_media_buy"), version, true)
        };
        let (d, p) = with("required", SigningVersion::V3_2).unwrap();
        assert_eq!(p, Some(SigningProfile::request_v3_2()));
        assert!(d.covers_content_digest);
        assert_eq!(
            with("either", SigningVersion::V3_2).unwrap().1,
            Some(SigningProfile::request_v3_2())
        );
        assert!(with("forbidden", SigningVersion::V3_2).is_err());
        let (d, p) = with("forbidden", SigningVersion::Legacy).unwrap();
        assert_eq!(p, Some(SigningProfile::request_legacy(LegacyDigest::Omit)));
        assert!(!d.covers_content_digest);
        let (d, p) = with("either", SigningVersion::Legacy).unwrap();
        assert_eq!(p, Some(SigningProfile::request_legacy(LegacyDigest::Cover)));
        assert!(d.covers_content_digest);
    }
}
