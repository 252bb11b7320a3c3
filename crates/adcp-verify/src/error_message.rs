//! The fixed, human-readable text that accompanies each error code in an
//! answer to the counterparty.
//!
//! The spec forbids echoing verification details to the peer ("return the
//! stable code above; log the detail server-side"), so the text depends on
//! the code string alone: never on the request, the key, a fetch error or
//! the checklist's detail. Two failures rendered as the same code string
//! (the webhook profile folds the discovery-chain codes into
//! `webhook_signature_jwks_*`) get the same text.

use crate::error::{CodePrefix, ErrorCode, VerifyError};

impl ErrorCode {
    /// The fixed message for this code as rendered under `prefix`
    /// (see [`ErrorCode::as_str`]).
    pub const fn message(self, prefix: CodePrefix) -> &'static str {
        use ErrorCode as E;
        let code = match (self, prefix) {
            // The webhook profile renders these as the generic key-source
            // codes; so is their text.
            (E::CapabilitiesUnreachable | E::BrandJsonUnreachable, CodePrefix::Webhook) => E::JwksUnavailable,
            (
                E::BrandJsonUrlMissing
                | E::BrandJsonMalformed
                | E::BrandOriginMismatch
                | E::AgentNotInBrandJson
                | E::BrandJsonAmbiguous
                | E::KeyOriginMismatch
                | E::KeyOriginMissing,
                CodePrefix::Webhook,
            ) => E::JwksUntrusted,
            (code, _) => code,
        };
        match code {
            E::SignatureRequired => "This operation requires a signed request.",
            E::TargetUriMalformed => {
                "The request target could not be canonicalized or does not match the received authority."
            }
            E::HeaderMalformed => "The Signature or Signature-Input header is missing or malformed.",
            E::ParamsIncomplete => "A required signature parameter is missing.",
            E::TagInvalid => "The signature tag does not name this profile.",
            E::AlgNotAllowed => "The signature algorithm is not allowed.",
            E::WindowInvalid => "The signature is outside its validity window.",
            E::ComponentsIncomplete => "The signature does not cover every required component.",
            E::ComponentsUnexpected => "The signature covers a component this endpoint does not accept.",
            E::KeyUnknown => "The signing key is not published by the sender.",
            E::KeyPurposeInvalid => "The signing key is not usable for this purpose.",
            E::KeyRevoked => "The signing key is revoked.",
            E::RevocationStale => "The sender's revocation list could not be refreshed in time.",
            E::SignatureInvalid => "The signature does not verify.",
            E::DigestMismatch => "The Content-Digest does not match the body.",
            E::BodyMalformed => "The body is not acceptable JSON.",
            E::Replayed => "This signature has already been received.",
            E::RateAbuse => "Too many signatures from this key.",
            E::ModeMismatch => "The authentication scheme differs from the registration's.",
            E::JwksUnavailable => "The sender's keys could not be fetched; retry later.",
            E::JwksUntrusted => "The sender's keys could not be trusted.",
            E::CapabilitiesUnreachable => "The signer's capabilities could not be fetched; retry later.",
            E::BrandJsonUrlMissing => "The signer's capabilities name no brand.json.",
            E::BrandJsonUnreachable => "The signer's brand.json could not be fetched; retry later.",
            E::BrandJsonMalformed => "The signer's brand.json is malformed.",
            E::BrandOriginMismatch => "The signer's brand.json is not on the signer's origin.",
            E::AgentNotInBrandJson => "The signer is not listed in its brand.json.",
            E::BrandJsonAmbiguous => "The signer's brand.json lists it more than once.",
            E::KeyOriginMismatch => "The signer's key set is not on an origin its brand.json allows.",
            E::KeyOriginMissing => "The signer's brand.json gives no origin for its key set.",
            E::StoreUnavailable => "The verifier's store is unavailable; retry later.",
        }
    }
}

impl VerifyError {
    /// The fixed message of [`Self::code_str`], for an answer to the
    /// peer. It never carries [`Self::detail`].
    pub fn message(&self) -> &'static str {
        self.code().message(self.prefix())
    }
}
