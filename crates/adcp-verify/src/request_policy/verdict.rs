//! The outcome of the request gate: verified, accepted without a verified
//! signer, or rejected.

use super::resolve::ResolvedRequest;
use crate::error::VerifyError;

/// What authenticated an accepted request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthSource {
    /// A verified RFC 9421 signature: signer identity established.
    Signature,
    /// An independent credential the verifier accepts (bearer, API key,
    /// mTLS), evaluated by the caller before the gate.
    Fallback,
    /// Nothing: an unsigned request to an operation that does not require a
    /// signature, with no fallback credential. The application's own access
    /// policy for the operation applies.
    Anonymous,
}

/// A request allowed through without a verified signer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acceptance {
    /// What authenticated it ([`AuthSource::Fallback`] or
    /// [`AuthSource::Anonymous`]; never [`AuthSource::Signature`]).
    pub source: AuthSource,
    /// The shadow-mode (`warn_for`) failure to record in monitoring: a
    /// missing signature, or a well-formed signature that failed. Such a
    /// failure never establishes signer identity.
    pub warning: Option<VerifyError>,
}

/// Why the gate refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Answer with this code: 401 and `WWW-Authenticate: Signature
    /// error="<code>"`, or 400 for `request_body_malformed`
    /// ([`VerifyError::www_authenticate`], [`ErrorCode::http_status`](crate::error::ErrorCode::http_status)).
    Error(VerifyError),
    /// Shadow mode (`warn_for`) without an independent credential: the
    /// request is simply unauthenticated. Answer as the application answers
    /// any unauthenticated request; the signature failure is a monitoring
    /// record, not a challenge code.
    Unauthenticated {
        /// The recorded failure.
        warning: VerifyError,
    },
}

/// The four actions of the spec's body-integrity policy matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// `accept`.
    Accept,
    /// `accept_with_warning`: accepted on a fallback credential, with a
    /// shadow-mode failure recorded.
    AcceptWithWarning,
    /// `reject`, with an error code.
    Reject,
    /// `reject_unauthenticated`: shadow-mode failure and no independent
    /// credential.
    RejectUnauthenticated,
}

impl Action {
    /// The matrix spelling (`accept`, `accept_with_warning`, `reject`,
    /// `reject_unauthenticated`).
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Accept => "accept",
            Action::AcceptWithWarning => "accept_with_warning",
            Action::Reject => "reject",
            Action::RejectUnauthenticated => "reject_unauthenticated",
        }
    }
}

/// The gate's final word on one request. `S` is what the checklist returns
/// on success (the verifier's `VerifiedSigner`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<S> {
    /// The signature verified: dispatch `request` as `signer`.
    Verified {
        /// The resolved request to dispatch.
        request: ResolvedRequest,
        /// The verified signer.
        signer: S,
    },
    /// Dispatch `request` without a verified signer.
    Accepted {
        /// The resolved request to dispatch.
        request: ResolvedRequest,
        /// How it was let through.
        acceptance: Acceptance,
    },
    /// Do not dispatch.
    Rejected(Rejection),
}

impl<S> Verdict<S> {
    /// The matrix action.
    pub fn action(&self) -> Action {
        match self {
            Verdict::Verified { .. } => Action::Accept,
            Verdict::Accepted { acceptance, .. } if acceptance.warning.is_some() => Action::AcceptWithWarning,
            Verdict::Accepted { .. } => Action::Accept,
            Verdict::Rejected(Rejection::Error(_)) => Action::Reject,
            Verdict::Rejected(Rejection::Unauthenticated { .. }) => Action::RejectUnauthenticated,
        }
    }

    /// What authenticated an accepted request; `None` when rejected.
    pub fn authentication_source(&self) -> Option<AuthSource> {
        match self {
            Verdict::Verified { .. } => Some(AuthSource::Signature),
            Verdict::Accepted { acceptance, .. } => Some(acceptance.source),
            Verdict::Rejected(_) => None,
        }
    }

    /// The verified signer, only when the signature verified. Nothing
    /// else (fallback, shadow mode) establishes signer identity.
    pub fn verified_signer(&self) -> Option<&S> {
        match self {
            Verdict::Verified { signer, .. } => Some(signer),
            _ => None,
        }
    }

    /// The request to dispatch; `None` when rejected.
    pub fn request(&self) -> Option<&ResolvedRequest> {
        match self {
            Verdict::Verified { request, .. } | Verdict::Accepted { request, .. } => Some(request),
            Verdict::Rejected(_) => None,
        }
    }

    /// The error to answer with, for [`Rejection::Error`].
    pub fn error(&self) -> Option<&VerifyError> {
        match self {
            Verdict::Rejected(Rejection::Error(e)) => Some(e),
            _ => None,
        }
    }

    /// The recorded shadow-mode failure, if any.
    pub fn warning(&self) -> Option<&VerifyError> {
        match self {
            Verdict::Accepted { acceptance, .. } => acceptance.warning.as_ref(),
            Verdict::Rejected(Rejection::Unauthenticated { warning }) => Some(warning),
            _ => None,
        }
    }
}
