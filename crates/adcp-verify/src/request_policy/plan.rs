//! A signed request's plan: verify under a digest policy, then turn the
//! checklist's result into a verdict according to the request's mode.

use super::capability::Mode;
use super::decision::FallbackCredential;
use super::resolve::ResolvedRequest;
use super::verdict::{Acceptance, AuthSource, Rejection, Verdict};
use crate::error::{ErrorCode, VerifyError};
use crate::profile::DigestCoverage;

/// "Run the verifier checklist on this request": what the gate decided for
/// a request carrying both `Signature` and `Signature-Input`.
///
/// Verify with a profile whose digest policy is
/// [`VerifyPlan::digest_coverage`] (see
/// [`VerifierCapability::check_profile`](super::VerifierCapability::check_profile)),
/// then hand the checklist's result to [`VerifyPlan::conclude`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyPlan {
    pub(crate) request: ResolvedRequest,
    pub(crate) mode: Mode,
    pub(crate) coverage: DigestCoverage,
    pub(crate) fallback: FallbackCredential,
}

impl VerifyPlan {
    /// The resolved request.
    pub fn request(&self) -> &ResolvedRequest {
        &self.request
    }

    /// The request's mode under the capability.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The `covers_content_digest` policy to verify under (checklist step 6).
    pub fn digest_coverage(&self) -> DigestCoverage {
        self.coverage
    }

    /// Whether a failure is shadowed: the request is in `warn_for` (either
    /// namespace) and does not register a webhook with an `authentication`
    /// block (that rule demands a valid signature outright).
    pub fn is_shadow(&self) -> bool {
        self.mode == Mode::Warn && !self.request.registers_webhook_authentication()
    }

    /// Turns the checklist's result into the verdict.
    ///
    /// - Success: [`Verdict::Verified`], whatever the mode.
    /// - Failure outside shadow mode: rejected with the checklist's code. A
    ///   signed request is judged on its cryptographic merits; a fallback
    ///   credential does not rescue a failed signature.
    /// - Failure in shadow mode: recorded (a `tracing` warning and the
    ///   verdict's [`warning`](Verdict::warning)), never a verified signer;
    ///   accepted on a valid fallback credential, otherwise
    ///   [`Rejection::Unauthenticated`]. Except that a malformed header pair
    ///   (`request_signature_header_malformed`) or body
    ///   (`request_body_malformed`) always hard-rejects: it can be safely
    ///   read neither as signed nor as unsigned.
    pub fn conclude<S>(self, result: Result<S, VerifyError>) -> Verdict<S> {
        let error = match result {
            Ok(signer) => {
                return Verdict::Verified {
                    request: self.request,
                    signer,
                }
            }
            Err(error) => error,
        };
        if !self.is_shadow() || matches!(error.code(), ErrorCode::HeaderMalformed | ErrorCode::BodyMalformed) {
            return Verdict::Rejected(Rejection::Error(error));
        }
        tracing::warn!(
            code = error.code_str(),
            step = %error.step(),
            detail = error.detail(),
            operation = self.request.operation(),
            protocol_method = self.request.protocol_method(),
            "request signature failed in shadow mode (warn_for); no signer identity established"
        );
        match self.fallback {
            FallbackCredential::Valid => Verdict::Accepted {
                request: self.request,
                acceptance: Acceptance {
                    source: AuthSource::Fallback,
                    warning: Some(error),
                },
            },
            FallbackCredential::Absent => Verdict::Rejected(Rejection::Unauthenticated { warning: error }),
        }
    }
}
