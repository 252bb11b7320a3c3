//! Every vector of `request-signing/a2a/` (7 positive, 26 negative):
//! operation resolution and the pre-check outcome. The two validly signed
//! positives end in `Decision::Verify`; the conformance runner completes
//! them with the checklist.

use adcp_vectors::VectorRequest;
use adcp_verify::request_policy::{
    decide, is_operation_name, is_protocol_method_name, resolve, Action, AuthSource, Binding, Decision,
    FallbackCredential, Mode, Rejection, VerifierCapability,
};
use adcp_verify::DigestCoverage;
use adcp_verify::{CodePrefix, ErrorCode, Step, VerifyError};
use serde_json::Value;

use crate::support::vector_message;
use std::collections::BTreeMap;
use std::path::Path;

fn load(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a2a_operation_resolution_vectors() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let files = adcp_vectors::json_files(&suite, "request-signing/a2a");
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut bump = |key: String| *counts.entry(key).or_default() += 1;

    for path in &files {
        let id = path.strip_prefix(&suite).unwrap().display().to_string();
        let vector = load(path);
        let req = VectorRequest::from_json(&vector["request"]).unwrap();
        let msg = vector_message(&req);
        let cap = VerifierCapability::from_json(&vector["verifier_capability"]).unwrap();
        assert_eq!(cap.covers_content_digest(), Some(DigestCoverage::Required), "{id}");
        let binding = Binding::infer(&req.url);
        let expected_binding = if req.url.ends_with("/message:send") {
            Binding::A2aHttpJson
        } else {
            Binding::JsonRpc
        };
        assert_eq!(binding, expected_binding, "{id}");
        let outcome = &vector["expected_outcome"];
        let success = outcome["success"].as_bool().unwrap();
        let signed = req
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("signature-input"));
        bump(format!("tier {}", vector["tier"].as_str().unwrap()));

        // Resolution.
        let resolved = resolve(binding, &msg);
        if outcome["error_code"] == "request_body_malformed" {
            let err = resolved.expect_err(&id);
            assert_eq!(err.code_str(), "request_body_malformed", "{id}");
            assert_eq!(err.step(), Step::new(0), "{id}");
        } else {
            let request = resolved.unwrap_or_else(|e| panic!("{id}: {e}"));
            let expected = outcome.get("resolved_operation").expect("resolved_operation");
            assert_eq!(request.operation(), expected.as_str(), "{id}");
            if let Some(dispatched) = outcome.get("dispatched_operation") {
                assert_eq!(
                    request.operation(),
                    dispatched.as_str(),
                    "{id}: dispatch exactly the gate's operation"
                );
            }
            match outcome.get("dispatch").and_then(Value::as_str) {
                // The skill is a case variant: no list entry and no AdCP operation name.
                Some("unsupported_operation") => {
                    assert!(!is_operation_name(request.operation().unwrap()), "{id}");
                    assert_eq!(cap.mode_for(&request), Mode::Unlisted, "{id}");
                }
                // The method is a case variant: no operation, no valid method name.
                Some("method_not_found") => {
                    assert_eq!(request.operation(), None, "{id}");
                    assert!(!is_protocol_method_name(request.protocol_method().unwrap()), "{id}");
                }
                Some(other) => panic!("{id}: unknown dispatch expectation {other}"),
                None => {}
            }
        }

        // The pre-check decision, with no fallback credential (no vector carries one).
        let decision = decide(&cap, binding, &msg, FallbackCredential::Absent);
        if success {
            let status = outcome["status"].as_str().unwrap();
            bump(format!("positive {status}"));
            match (status, &decision) {
                ("verified", Decision::Verify(plan)) => {
                    assert!(signed, "{id}");
                    assert_eq!(plan.mode(), Mode::Required, "{id}");
                    assert_eq!(plan.digest_coverage(), DigestCoverage::Required, "{id}");
                    assert_eq!(
                        plan.request().operation(),
                        outcome["resolved_operation"].as_str(),
                        "{id}"
                    );
                    // What the checklist's success turns into.
                    let verdict = plan.clone().conclude(Ok("signer"));
                    assert_eq!(verdict.verified_signer(), Some(&"signer"), "{id}");
                    assert_eq!(verdict.authentication_source(), Some(AuthSource::Signature), "{id}");
                }
                ("unsigned", Decision::Accept { request, acceptance }) => {
                    assert!(!signed, "{id}");
                    assert_eq!(acceptance.source, AuthSource::Anonymous, "{id}");
                    assert_eq!(acceptance.warning, None, "{id}");
                    assert_eq!(request.operation(), outcome["resolved_operation"].as_str(), "{id}");
                    assert_eq!(decision.verdict::<()>().unwrap().action(), Action::Accept, "{id}");
                }
                _ => panic!("{id}: status {status}, decision {decision:?}"),
            }
        } else {
            let code = outcome["error_code"].as_str().unwrap();
            bump(format!("negative {code}"));
            assert_eq!(outcome["failed_step"], 0, "{id}");
            let err = decision.error().unwrap_or_else(|| panic!("{id}: {decision:?}"));
            assert_eq!(err.code_str(), code, "{id}: {err}");
            assert_eq!(err.step(), Step::new(0), "{id}");
            if code == "request_signature_required" {
                // Composition with fallback authenticators: a valid credential carries it.
                let with_bearer = decide(&cap, binding, &msg, FallbackCredential::Valid);
                assert!(
                    matches!(&with_bearer, Decision::Accept { acceptance, .. } if acceptance.source == AuthSource::Fallback),
                    "{id}: {with_bearer:?}"
                );
            }
        }
    }

    let expected: BTreeMap<String, usize> = [
        ("negative request_body_malformed", 19),
        ("negative request_signature_required", 7),
        ("positive unsigned", 5),
        ("positive verified", 2),
        ("tier contradiction-resolution", 23),
        ("tier hardening", 10),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(files.len(), 33);
    assert_eq!(counts, expected);
}

/// Negative/005 is validly signed and still rejected; with the body made
/// unambiguous, the same signed request goes to the checklist, whose
/// failure rejects (required_for) with the checklist's code.
#[test]
fn a2a_signed_vectors_conclude_on_the_checklist_result() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let vector = load(&suite.join("request-signing/a2a/positive/002-signed-message-send-v0-3-create-media-buy.json"));
    let req = VectorRequest::from_json(&vector["request"]).unwrap();
    let msg = vector_message(&req);
    let cap = VerifierCapability::from_json(&vector["verifier_capability"]).unwrap();
    let Decision::Verify(plan) = decide(&cap, Binding::JsonRpc, &msg, FallbackCredential::Valid) else {
        panic!("signed request must be verified")
    };
    let failure = VerifyError::new(ErrorCode::SignatureInvalid, CodePrefix::Request, Step::new(10), "x");
    let verdict = plan.conclude::<()>(Err(failure));
    assert!(matches!(
        verdict.clone(),
        adcp_verify::request_policy::Verdict::Rejected(Rejection::Error(_))
    ));
    assert_eq!(verdict.error().unwrap().code_str(), "request_signature_invalid");
}
