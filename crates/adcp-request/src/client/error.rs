//! [`ClientError`]: why a call was not made or got no HTTP answer.

use adcp_jwks::SsrfError;
use adcp_sign::SignError;

/// Why [`SigningClient`](crate::SigningClient) could not complete a call.
///
/// An HTTP answer of any status is not an error: it comes back as a
/// [`CallResponse`](crate::CallResponse). These are the failures before
/// or instead of an answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The target URL breaks the SSRF rules (scheme, userinfo, reserved
    /// address, port), checked before anything is sent and again for every
    /// resolved address at connect time.
    #[error("target refused: {0}")]
    Untrusted(#[from] SsrfError),
    /// The operation or JSON-RPC method name is not one this transport can
    /// carry (an AdCP operation is `[a-z][a-z0-9_]*`; a JSON-RPC method is
    /// not carried by the `raw` transport).
    #[error("cannot call {name:?}: {reason}")]
    InvalidCall {
        /// The operation or method.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// The request body could not be serialized or fails the strict JSON
    /// checks, or the signature could not be made (the key backend failed,
    /// the URL cannot be canonicalized, …).
    #[error("signing failed: {0} ({code})", code = .0.code())]
    Sign(#[from] SignError),
    /// The counterparty's `request_signing` capability could not be read
    /// (priming answered with an error, or the block is malformed).
    #[error("capability unavailable for {agent}: {reason}")]
    Capability {
        /// The agent URL.
        agent: String,
        /// What went wrong.
        reason: String,
    },
    /// The advertised capability cannot be honoured under the configured
    /// signing version: a 3.2 signer never signs without covering the body
    /// (`covers_content_digest: "forbidden"` is a 3.0/3.1 posture; the spec
    /// calls it incompatible with 3.2 negotiation, not a reason to drop
    /// the binding).
    #[error("capability of {agent} is incompatible with AdCP 3.2 request signing: {reason}")]
    IncompatibleCapability {
        /// The agent URL.
        agent: String,
        /// What is incompatible.
        reason: &'static str,
    },
    /// No HTTP answer: connection refused, timeout, TLS failure, …
    #[error("transport error: {0}")]
    Transport(String),
}

impl ClientError {
    /// A stable code for logs and the CLI's `--json` output.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            ClientError::Untrusted(_) => "target_untrusted",
            ClientError::InvalidCall { .. } => "invalid_call",
            ClientError::Sign(e) => e.code(),
            ClientError::Capability { .. } => "capability_unavailable",
            ClientError::IncompatibleCapability { .. } => "capability_incompatible",
            ClientError::Transport(_) => "transport_error",
        }
    }
}
