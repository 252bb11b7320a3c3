//! The two policy files of the request-signing suite through the layer:
//! `body-integrity-policy.json` (17 cases, with real signatures made to
//! each case's facts) and `protocol-method-names.json` (declarations and
//! exact-match cases, as unsigned JSON-RPC calls). The cases are built by
//! `adcp_request::conformance`, which the gateway's request-mode tests
//! share.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::common::{http_request, send, Answer};
use adcp_request::conformance::{
    body_integrity_case, protocol_method_call, requiring_methods, POLICY_BEARER, POLICY_NOW, PROTOCOL_METHOD_URL,
};
use adcp_request::RequestVerifier;
use adcp_verify::request_policy::{FallbackCredential, VerifierCapability};
use adcp_verify::{FixedClock, MemoryReplayStore};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One case through a layer configured as the case assumes, with the
/// seller's bearer token as the valid independent credential.
async fn run_case(case: &Value) -> (String, Answer) {
    let case = body_integrity_case(case).await.unwrap();
    let verifier = RequestVerifier::builder(
        Arc::new(case.keys),
        Arc::new(MemoryReplayStore::request()),
        case.capability,
    )
    .profile(case.profile)
    .clock(Arc::new(FixedClock(POLICY_NOW)))
    .authenticator_fn(|parts, _| match parts.headers.get(http::header::AUTHORIZATION) {
        Some(v) if v == POLICY_BEARER => FallbackCredential::Valid,
        _ => FallbackCredential::Absent,
    })
    .build()
    .unwrap();
    let request = http_request(&case.method, &case.url, &case.headers, Some(&case.body));
    (case.id, send(&verifier, request).await)
}

#[tokio::test]
async fn body_integrity_policy_through_the_layer() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let file = adcp_vectors::load_json(&suite, "request-signing/body-integrity-policy.json").unwrap();
    let cases = file["cases"].as_array().unwrap();
    let mut actions: BTreeMap<String, usize> = BTreeMap::new();
    for case in cases {
        let (id, answer) = run_case(case).await;
        let expected = &case["expected"];
        let action = expected["action"].as_str().unwrap();
        match action {
            "accept" | "accept_with_warning" => {
                assert!(answer.reached_handler(), "{id}: {answer:?}");
                assert_eq!(answer.json["source"], expected["authentication_source"], "{id}");
                assert_eq!(
                    answer.json["warning"].is_string(),
                    action == "accept_with_warning",
                    "{id}"
                );
            }
            "reject" => answer.assert_rejected_with(expected["error_code"].as_str().unwrap(), &id),
            "reject_unauthenticated" => answer.assert_unauthenticated(&id),
            other => panic!("{id}: action {other}"),
        }
        assert_eq!(
            answer.json["keyid"].is_string(),
            expected["verified_signer_identity"].as_bool().unwrap(),
            "{id}"
        );
        *actions.entry(action.to_owned()).or_default() += 1;
    }
    assert_eq!(cases.len(), 17, "every case runs");
    let expected: BTreeMap<String, usize> = [
        ("accept", 3),
        ("accept_with_warning", 3),
        ("reject", 10),
        ("reject_unauthenticated", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(actions, expected);
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect()
}

/// An unsigned JSON-RPC call of `method` with a harmless A2A message.
fn call(method: &str) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let (headers, body) = protocol_method_call(method);
    http_request("POST", PROTOCOL_METHOD_URL, &headers, Some(&body))
}

fn requiring<'a>(methods: impl IntoIterator<Item = &'a str>) -> RequestVerifier {
    let capability = requiring_methods(methods).unwrap();
    RequestVerifier::builder(
        Arc::new(adcp_verify::StaticKeyResolver::new()),
        Arc::new(MemoryReplayStore::request()),
        capability,
    )
    .build()
    .unwrap()
}

#[tokio::test]
async fn protocol_method_names_through_the_layer() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let file = adcp_vectors::load_json(&suite, "request-signing/protocol-method-names.json").unwrap();

    // Every valid declaration configures a layer that requires a signature
    // for exactly that decoded method.
    let mut valid = 0;
    for family in file["valid_declarations"].as_array().unwrap() {
        let methods = strings(&family["methods"]);
        let verifier = requiring(methods.iter().copied());
        for method in &methods {
            send(&verifier, call(method))
                .await
                .assert_rejected_with("request_signature_required", method);
            valid += 1;
        }
    }
    assert_eq!(valid, 21);

    // Invalid declarations never configure a layer.
    let invalid = strings(&file["invalid_declarations"]);
    for name in &invalid {
        let block =
            json!({"supported": true, "covers_content_digest": "required", "protocol_methods_required_for": [name]});
        assert!(VerifierCapability::from_json(&block).is_err(), "{name}");
    }
    assert_eq!(invalid.len(), 7);

    // Exact, case-sensitive matching on the decoded wire method.
    let cases = file["exact_match_cases"].as_array().unwrap();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let verifier = requiring(strings(&case["declared_methods"]));
        let answer = send(&verifier, call(case["wire_method"].as_str().unwrap())).await;
        if case["matches"].as_bool().unwrap() {
            answer.assert_rejected_with("request_signature_required", id);
        } else {
            assert!(answer.reached_handler(), "{id}: {answer:?}");
            assert_eq!(answer.json["source"], "anonymous", "{id}");
        }
    }
    assert_eq!(cases.len(), 8);
}
