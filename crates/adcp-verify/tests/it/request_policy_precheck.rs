//! The root and `profile-3.2/` request vectors through the gate.
//!
//! The pre-check vectors are decided here completely: the unsigned
//! `negative/001`, `027`, `028` (and their 3.2 counterparts) reject with
//! `request_signature_required` at step 0, and `019` (Signature without
//! Signature-Input) with `request_signature_header_malformed`. Every other
//! vector is signed and must reach the checklist (`Decision::Verify`) under
//! the advertised digest policy; the conformance runner grades those.

use adcp_vectors::VectorRequest;
use adcp_verify::request_policy::{
    decide, resolve, AuthSource, Binding, Decision, FallbackCredential, Mode, VerifierCapability,
};
use adcp_verify::Step;
use serde_json::Value;

use crate::support::vector_message;

fn has(req: &VectorRequest, header: &str) -> bool {
    req.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(header))
}

#[test]
fn request_vectors_precheck() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let mut files = Vec::new();
    for dir in [
        "request-signing/positive",
        "request-signing/negative",
        "request-signing/profile-3.2",
    ] {
        files.extend(adcp_vectors::json_files(&suite, dir));
    }
    let (mut decided_required, mut decided_pair, mut verify) = (Vec::new(), Vec::new(), 0);

    for path in &files {
        let rel = path
            .strip_prefix(suite.join("request-signing"))
            .unwrap()
            .display()
            .to_string();
        let vector: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let req = VectorRequest::from_json(&vector["request"]).unwrap();
        let msg = vector_message(&req);
        let cap = VerifierCapability::from_json(&vector["verifier_capability"]).unwrap();
        let binding = Binding::infer(&req.url);
        let outcome = &vector["expected_outcome"];
        let code = outcome["error_code"].as_str();

        let request = resolve(binding, &msg).unwrap_or_else(|e| panic!("{rel}: {e}"));
        if binding == Binding::OperationPath {
            // The operation is the last segment of the canonical path.
            let expected = req.url.split('?').next().unwrap().rsplit('/').next().unwrap();
            assert_eq!(request.operation(), Some(expected), "{rel}");
        }

        let decision = decide(&cap, binding, &msg, FallbackCredential::Absent);
        match (has(&req, "signature-input"), has(&req, "signature")) {
            (true, true) => {
                let Decision::Verify(plan) = &decision else {
                    panic!("{rel}: a signed request must reach the checklist, got {decision:?}")
                };
                assert_eq!(Some(plan.digest_coverage()), cap.covers_content_digest(), "{rel}");
                assert_eq!(plan.mode(), cap.mode_for(plan.request()), "{rel}");
                verify += 1;
            }
            (false, false) => {
                assert_eq!(code, Some("request_signature_required"), "{rel}");
                assert_eq!(outcome["failed_step"], 0, "{rel}");
                let err = decision.error().unwrap_or_else(|| panic!("{rel}: {decision:?}"));
                assert_eq!(err.code_str(), "request_signature_required", "{rel}");
                assert_eq!(err.step(), Step::new(0), "{rel}");
                let with_bearer = decide(&cap, binding, &msg, FallbackCredential::Valid);
                if request.registers_webhook_authentication() {
                    // 027: the webhook-registration rule ignores the bearer token it carries.
                    assert!(has(&req, "authorization"), "{rel}");
                    assert_eq!(cap.mode_for(&request), Mode::Unlisted, "{rel}");
                    assert_eq!(
                        with_bearer.error().map(|e| e.code_str()),
                        Some("request_signature_required"),
                        "{rel}"
                    );
                } else {
                    // 001 / 028: the composition rule lets a valid credential through.
                    assert_eq!(cap.mode_for(&request), Mode::Required, "{rel}");
                    assert!(
                        matches!(&with_bearer, Decision::Accept { acceptance, .. } if acceptance.source == AuthSource::Fallback),
                        "{rel}: {with_bearer:?}"
                    );
                }
                decided_required.push(rel);
            }
            (_, _) => {
                assert_eq!(code, Some("request_signature_header_malformed"), "{rel}");
                let err = decision.error().unwrap_or_else(|| panic!("{rel}: {decision:?}"));
                assert_eq!(err.code_str(), "request_signature_header_malformed", "{rel}");
                assert_eq!(err.step(), Step::new(1), "{rel}");
                // Always, whatever the fallback credential.
                let with_bearer = decide(&cap, binding, &msg, FallbackCredential::Valid);
                assert_eq!(with_bearer.error(), decision.error(), "{rel}");
                decided_pair.push(rel);
            }
        }
    }

    // Root: 15 positive + 31 negative; profile-3.2: 14 positive + 32 negative.
    assert_eq!(files.len(), 92);
    decided_required.sort();
    assert_eq!(
        decided_required,
        [
            "negative/001-no-signature-header.json",
            "negative/027-webhook-registration-authentication-unsigned.json",
            "negative/028-unsigned-protocol-method-required.json",
            "profile-3.2/negative/001-no-signature-header.json",
            "profile-3.2/negative/027-webhook-registration-authentication-unsigned.json",
            "profile-3.2/negative/028-unsigned-protocol-method-required.json",
        ]
    );
    decided_pair.sort();
    assert_eq!(
        decided_pair,
        [
            "negative/019-signature-without-signature-input.json",
            "profile-3.2/negative/019-signature-without-signature-input.json",
        ]
    );
    assert_eq!(verify, 84);
}
