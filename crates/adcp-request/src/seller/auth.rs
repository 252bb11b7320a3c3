//! What the layer tells the handler about an accepted request.

use adcp_verify::request_policy::AuthSource;
use adcp_verify::{VerifiedSigner, VerifyError};

/// How an accepted request was authenticated: put in the request
/// extensions by [`RequestVerifierLayer`](crate::RequestVerifierLayer)
/// (and returned by [`RequestVerifier::verify`](crate::RequestVerifier::verify)).
///
/// Only this crate constructs it, after the gate's verdict, and the layer
/// overwrites any value already in the extensions, so neither a client
/// header nor another layer can make a request look verified. The signer
/// is present exactly when the source is [`AuthSource::Signature`]: a
/// fallback credential or shadow mode never establishes a signer identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestAuth {
    pub(crate) source: AuthSource,
    pub(crate) signer: Option<VerifiedSigner>,
    pub(crate) verified_at: Option<i64>,
    pub(crate) operation: Option<String>,
    pub(crate) protocol_method: Option<String>,
    pub(crate) warning: Option<VerifyError>,
}

impl RequestAuth {
    /// What authenticated the request: a verified signature, the
    /// application's fallback credential, or nothing (an operation that
    /// requires neither; the application's own access policy applies).
    #[must_use]
    pub fn source(&self) -> AuthSource {
        self.source
    }

    /// The verified signer (`keyid`, `agent_url`, …), only for
    /// [`AuthSource::Signature`].
    #[must_use]
    pub fn signer(&self) -> Option<&VerifiedSigner> {
        self.signer.as_ref()
    }

    /// When the signature verified (Unix seconds, the verifier's clock):
    /// with [`Self::signer`], the spec's `verified_signer: { keyid,
    /// agent_url, verified_at }` record for audit.
    #[must_use]
    pub fn verified_at(&self) -> Option<i64> {
        self.verified_at
    }

    /// Whether a signature verified.
    #[must_use]
    pub fn is_verified(&self) -> bool {
        self.signer.is_some()
    }

    /// The AdCP operation the body resolved to (`create_media_buy`), under
    /// the endpoint's binding.
    #[must_use]
    pub fn operation(&self) -> Option<&str> {
        self.operation.as_deref()
    }

    /// The JSON-RPC method other than `tools/call` (`tasks/cancel`,
    /// `SendMessage`, …), if any.
    #[must_use]
    pub fn protocol_method(&self) -> Option<&str> {
        self.protocol_method.as_deref()
    }

    /// The shadow-mode (`warn_for`) failure recorded for this request: a
    /// missing signature, or a well-formed one that failed. For
    /// monitoring; never for the response.
    #[must_use]
    pub fn warning(&self) -> Option<&VerifyError> {
        self.warning.as_ref()
    }
}
