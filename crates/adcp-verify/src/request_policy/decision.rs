//! The pre-checklist decision: does this request enter the verifier
//! checklist, pass unsigned, or stop here?

use super::binding::Binding;
use super::capability::{Mode, VerifierCapability};
use super::plan::VerifyPlan;
use super::resolve::{resolve, ResolvedRequest};
use super::verdict::{Acceptance, AuthSource, Rejection, Verdict};
use crate::error::{CodePrefix, ErrorCode, Step, VerifyError};
use adcp_sigbase::Message;

/// The outcome of the caller's independent authenticators (bearer, API
/// key, mTLS), evaluated before the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FallbackCredential {
    /// No credential, or one the verifier does not accept for this
    /// operation (an unrecognized bearer token is not a credential).
    Absent,
    /// A credential the verifier accepts for this operation.
    Valid,
}

/// The gate's decision before the checklist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The request carries `Signature` and `Signature-Input`: run the
    /// checklist, then [`VerifyPlan::conclude`].
    Verify(VerifyPlan),
    /// Dispatch without a verified signer.
    Accept {
        /// The resolved request to dispatch.
        request: ResolvedRequest,
        /// How it was let through.
        acceptance: Acceptance,
    },
    /// Stop here.
    Reject(Rejection),
}

impl Decision {
    /// The verdict when no verification is needed; `None` for
    /// [`Decision::Verify`] (use [`VerifyPlan::conclude`]).
    pub fn verdict<S>(&self) -> Option<Verdict<S>> {
        match self {
            Decision::Verify(_) => None,
            Decision::Accept { request, acceptance } => Some(Verdict::Accepted {
                request: request.clone(),
                acceptance: acceptance.clone(),
            }),
            Decision::Reject(rejection) => Some(Verdict::Rejected(rejection.clone())),
        }
    }

    /// The error code to answer with, for [`Rejection::Error`].
    pub fn error(&self) -> Option<&VerifyError> {
        match self {
            Decision::Reject(Rejection::Error(e)) => Some(e),
            _ => None,
        }
    }
}

/// Decides how the gate treats `msg`, in this order:
///
/// 1. Resolve the operation under `binding` ([`resolve`]). A body that does
///    not resolve to exactly one operation is `request_body_malformed`,
///    signed or not, before any header is looked at.
/// 2. Signing unsupported (`supported` false): signature headers are
///    ignored and the request is accepted (on `fallback`, or anonymously).
/// 3. `Signature` without `Signature-Input`, or the reverse:
///    `request_signature_header_malformed`, always, whatever the mode or
///    fallback credential (a stripped header must not downgrade a signed
///    request to bearer).
/// 4. Both present: [`Decision::Verify`] with the capability's digest
///    policy, for every operation (listed or not): a signed request is
///    judged on its merits.
/// 5. Unsigned:
///    - a webhook registration with an `authentication` block:
///      `request_signature_required`, even with a fallback credential;
///    - [`Mode::Required`]: accepted on a valid fallback credential,
///      otherwise `request_signature_required`;
///    - [`Mode::Warn`]: the missing signature is recorded; accepted on a
///      valid fallback credential, otherwise [`Rejection::Unauthenticated`];
///    - otherwise accepted (on `fallback`, or anonymously).
///
/// ```
/// use adcp_sigbase::Message;
/// use adcp_verify::DigestCoverage;
/// use adcp_verify::request_policy::{decide, Binding, Decision, FallbackCredential, VerifierCapability};
///
/// let cap = VerifierCapability::builder(DigestCoverage::Required).required_for(["create_media_buy"]).build()?;
/// let msg = Message::request("POST", "https://seller.example.com/adcp/create_media_buy")
///     .with_header("Content-Type", "application/json")
///     .with_body(&b"{}"[..]);
///
/// let decision = decide(&cap, Binding::OperationPath, &msg, FallbackCredential::Absent);
/// assert_eq!(decision.error().map(|e| e.code_str()), Some("request_signature_required"));
///
/// // The composition rule: a valid bearer token is enough for an unsigned call.
/// let decision = decide(&cap, Binding::OperationPath, &msg, FallbackCredential::Valid);
/// assert!(matches!(decision, Decision::Accept { .. }));
///
/// // A stripped Signature-Input is never read as "unsigned".
/// let msg = msg.with_header("Signature", "sig1=:AAAA:");
/// let decision = decide(&cap, Binding::OperationPath, &msg, FallbackCredential::Valid);
/// assert_eq!(decision.error().map(|e| e.code_str()), Some("request_signature_header_malformed"));
/// # Ok::<(), adcp_verify::request_policy::CapabilityError>(())
/// ```
pub fn decide(
    capability: &VerifierCapability,
    binding: Binding,
    msg: &Message<'_>,
    fallback: FallbackCredential,
) -> Decision {
    match resolve(binding, msg) {
        Ok(request) => decide_resolved(capability, request, msg, fallback),
        Err(error) => Decision::Reject(Rejection::Error(error)),
    }
}

/// [`decide`] for a request the caller resolved itself (steps 2 to 5).
pub fn decide_resolved(
    capability: &VerifierCapability,
    request: ResolvedRequest,
    msg: &Message<'_>,
    fallback: FallbackCredential,
) -> Decision {
    if request.registers_webhook_authentication() {
        tracing::warn!(
            operation = request.operation(),
            protocol_method = request.protocol_method(),
            "request registers a webhook with an authentication block (legacy HMAC/Bearer webhook mode selected)"
        );
    }
    let Some(coverage) = capability.signing_coverage() else {
        return accept(request, fallback, None);
    };
    let has_input = msg.field_lines("signature-input").next().is_some();
    let has_signature = msg.field_lines("signature").next().is_some();
    let mode = capability.mode_for(&request);
    match (has_input, has_signature) {
        (true, true) => Decision::Verify(VerifyPlan {
            request,
            mode,
            coverage,
            fallback,
        }),
        (true, false) => reject(
            ErrorCode::HeaderMalformed,
            Step::new(1),
            "Signature-Input without Signature",
        ),
        (false, true) => reject(
            ErrorCode::HeaderMalformed,
            Step::new(1),
            "Signature without Signature-Input",
        ),
        (false, false) => unsigned(request, mode, fallback),
    }
}

fn unsigned(request: ResolvedRequest, mode: Mode, fallback: FallbackCredential) -> Decision {
    if request.registers_webhook_authentication() {
        return reject(
            ErrorCode::SignatureRequired,
            Step::new(0),
            "unsigned request registers a webhook with an authentication block",
        );
    }
    match (mode, fallback) {
        (Mode::Required, FallbackCredential::Absent) => reject(
            ErrorCode::SignatureRequired,
            Step::new(0),
            "unsigned request without another credential, operation or method in required_for",
        ),
        (Mode::Warn, _) => {
            let warning = error(
                ErrorCode::SignatureRequired,
                Step::new(0),
                "unsigned request, operation or method in warn_for (shadow mode)",
            );
            tracing::warn!(
                operation = request.operation(),
                protocol_method = request.protocol_method(),
                "unsigned request in shadow mode (warn_for)"
            );
            match fallback {
                FallbackCredential::Valid => accept(request, fallback, Some(warning)),
                FallbackCredential::Absent => Decision::Reject(Rejection::Unauthenticated { warning }),
            }
        }
        _ => accept(request, fallback, None),
    }
}

fn accept(request: ResolvedRequest, fallback: FallbackCredential, warning: Option<VerifyError>) -> Decision {
    let source = match fallback {
        FallbackCredential::Valid => AuthSource::Fallback,
        FallbackCredential::Absent => AuthSource::Anonymous,
    };
    Decision::Accept {
        request,
        acceptance: Acceptance { source, warning },
    }
}

fn error(code: ErrorCode, step: Step, detail: &str) -> VerifyError {
    VerifyError::new(code, CodePrefix::Request, step, detail)
}

fn reject(code: ErrorCode, step: Step, detail: &str) -> Decision {
    Decision::Reject(Rejection::Error(error(code, step, detail)))
}
