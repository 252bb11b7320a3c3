//! The request-profile gate around the verifier checklist: what happens
//! before a request is known to be signed, and what a checklist failure
//! means for the request afterwards.
//!
//! The checklist ([`crate::Verifier`]) assumes a signed request. This module
//! decides, per request and from the verifier's advertised
//! [`VerifierCapability`] (`request_signing` on `get_adcp_capabilities`):
//!
//! 1. **Operation resolution** ([`resolve`], by the endpoint's [`Binding`]):
//!    the AdCP operation (`tools/call` `params.name`, the `skill` of an A2A
//!    message's sole DataPart, or the operation path segment) and the
//!    JSON-RPC method (`tasks/cancel`, `CancelTask`, …), from a body parsed
//!    with the strict JSON parser. A body that does not resolve to exactly
//!    one operation is `request_body_malformed`, signed or not.
//! 2. **The mode** ([`Mode`]): `required_for > warn_for > supported_for`
//!    over the operation, and independently over the JSON-RPC method with
//!    the `protocol_methods_*` lists; exact, case-sensitive matching, no
//!    cross-namespace matching.
//! 3. **The decision** ([`decide`]): header pair broken →
//!    `request_signature_header_malformed`; signed → [`Decision::Verify`]
//!    with the digest policy; unsigned → accepted, accepted on the fallback
//!    credential, `request_signature_required` (including any webhook
//!    registration carrying an `authentication` block), or unauthenticated
//!    in shadow mode.
//! 4. **The verdict** ([`VerifyPlan::conclude`]): a signed request's
//!    checklist result becomes [`Verdict::Verified`] or a rejection, except
//!    in shadow mode (`warn_for`), where a well-formed failure is recorded,
//!    never establishes a signer, and the request proceeds only on a
//!    fallback credential.
//!
//! ```
//! use adcp_sigbase::Message;
//! use adcp_verify::{CodePrefix, ErrorCode, Step, VerifyError};
//! use adcp_verify::request_policy::{
//!     decide, Action, AuthSource, Binding, Decision, FallbackCredential, Mode, VerifierCapability, Verdict,
//! };
//! use serde_json::json;
//!
//! let cap = VerifierCapability::from_json(&json!({
//!     "supported": true,
//!     "covers_content_digest": "required",
//!     "required_for": ["create_media_buy"],
//!     "warn_for": ["update_media_buy"],
//!     "protocol_methods_required_for": ["tasks/cancel"]
//! }))?;
//!
//! // An unsigned A2A SendMessage whose DataPart invokes create_media_buy.
//! let body = br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"skill":"create_media_buy","input":{}}}]}}}"#;
//! let msg = Message::request("POST", "https://seller.example.com/a2a/jsonrpc")
//!     .with_header("Content-Type", "application/json")
//!     .with_body(&body[..]);
//! let decision = decide(&cap, Binding::JsonRpc, &msg, FallbackCredential::Absent);
//! assert_eq!(decision.error().map(|e| e.code_str()), Some("request_signature_required"));
//!
//! // The same call, signed: the checklist runs, then the plan concludes.
//! let signed = msg
//!     .with_header("Signature-Input", r#"sig1=("@method" "@target-uri" "@authority" "content-type" "content-digest");created=1;expires=2;nonce="n";keyid="k";alg="ed25519";tag="adcp/request-signing/v1""#)
//!     .with_header("Signature", "sig1=:AAAA:");
//! let Decision::Verify(plan) = decide(&cap, Binding::JsonRpc, &signed, FallbackCredential::Absent) else {
//!     unreachable!("a signed request is verified")
//! };
//! assert_eq!(plan.mode(), Mode::Required);
//! assert_eq!(plan.request().operation(), Some("create_media_buy"));
//! // ... `let result = verifier.verify(&signed).await;` — here, a failure:
//! let result: Result<(), VerifyError> = Err(VerifyError::new(
//!     ErrorCode::SignatureInvalid,
//!     CodePrefix::Request,
//!     Step::new(10),
//!     "bad signature",
//! ));
//! let verdict = plan.conclude(result);
//! assert_eq!(verdict.action(), Action::Reject);
//! assert_eq!(verdict.error().map(|e| e.code_str()), Some("request_signature_invalid"));
//!
//! // In shadow mode the same failure is recorded and a bearer token carries the call.
//! let body = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"update_media_buy","arguments":{}}}"#;
//! let shadow = Message::request("POST", "https://seller.example.com/mcp")
//!     .with_header("Signature-Input", "sig1=()")
//!     .with_header("Signature", "sig1=:AAAA:")
//!     .with_body(&body[..]);
//! let Decision::Verify(plan) = decide(&cap, Binding::JsonRpc, &shadow, FallbackCredential::Valid) else {
//!     unreachable!()
//! };
//! let verdict: Verdict<()> = plan.conclude(Err(VerifyError::new(
//!     ErrorCode::SignatureInvalid,
//!     CodePrefix::Request,
//!     Step::new(10),
//!     "bad signature",
//! )));
//! assert_eq!(verdict.action(), Action::AcceptWithWarning);
//! assert_eq!(verdict.authentication_source(), Some(AuthSource::Fallback));
//! assert!(verdict.verified_signer().is_none());
//! # Ok::<(), adcp_verify::request_policy::CapabilityError>(())
//! ```
//!
//! # Decisions
//!
//! - **Resolution runs first**, before the header-pair check and whether or
//!   not signing is supported (A2A vector `negative/018`): an ambiguous body
//!   is rejected even when validly signed.
//! - **Every non-empty body is strictly parsed at step 0**, on every
//!   binding, so the webhook-registration rule can be applied and the gate
//!   and the dispatcher see one value. A malformed body is
//!   `request_body_malformed` at step 0 even on a signed request.
//! - **The binding is configuration**, never read from the body
//!   ([`Binding::infer`] reads only the path, in its canonical form).
//! - **Webhook-registration detection is broad**: any `…notification_config`
//!   / `…notification_configs` member at any depth with a non-null
//!   `authentication`, names compared ignoring ASCII case, `_` and `-`
//!   (A2A's own `pushNotificationConfig` included). It demands a signature
//!   even from a caller with a valid fallback credential (vector
//!   `negative/027` carries a bearer token), and also disables shadowing of
//!   a failed signature.
//! - **Shadow mode**: a verified signature in `warn_for` does establish the
//!   signer; only failures do not. `request_signature_header_malformed` and
//!   `request_body_malformed` hard-reject in shadow mode; every other
//!   checklist failure, including transient JWKS or replay-store
//!   unavailability, is shadowed. An unsigned `warn_for` request without a
//!   fallback credential is [`Rejection::Unauthenticated`].
//! - **The header-pair rejection is reported at step 1**, as the vectors'
//!   `failed_step` says; resolution and `request_signature_required` at 0.
//! - **Capabilities reject unknown members** and names outside their
//!   namespace's grammar, and require `covers_content_digest` when
//!   `supported` is true; populated lists with `supported` false are an
//!   error.
//! - **HTTP methods**: on the JSON-RPC and HTTP+JSON bindings only `POST`
//!   (ASCII case-insensitively, failing closed) carries an operation; a JSON-RPC
//!   response object (`result` / `error`, no `params`) carries none.

mod a2a;
mod binding;
mod capability;
mod capability_error;
mod capability_json;
mod decision;
mod members;
mod names;
mod plan;
mod resolve;
mod verdict;
mod webhook_registration;

pub use binding::Binding;
pub use capability::{CapabilityBuilder, Mode, VerifierCapability};
pub use capability_error::CapabilityError;
pub use decision::{decide, decide_resolved, Decision, FallbackCredential};
pub use names::{is_operation_name, is_protocol_method_name};
pub use plan::VerifyPlan;
pub use resolve::{resolve, resolve_with_limit, ResolvedRequest};
pub use verdict::{Acceptance, Action, AuthSource, Rejection, Verdict};
pub use webhook_registration::carries_webhook_authentication;
