//! The two policy files of the request-signing suite through the layer:
//! `body-integrity-policy.json` (17 cases, with real signatures made to
//! each case's facts) and `protocol-method-names.json` (declarations and
//! exact-match cases, as unsigned JSON-RPC calls).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::common::{received, send, Answer, Buyer, NOW};
use adcp_request::RequestVerifier;
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sign::{LegacyDigest, SigningProfile, UnsignedRequest};
use adcp_verify::request_policy::{FallbackCredential, VerifierCapability};
use adcp_verify::{DigestCoverage, FixedClock, MemoryReplayStore, Profile};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

const BEARER: &str = "Bearer seller-issued-token";

fn fact(case: &Value, name: &str) -> Option<bool> {
    case.get(name).map(|v| v.as_bool().unwrap())
}

/// `sig1=:<bytes>:` re-encoded from `from` to `to`, optionally with the
/// first signature byte flipped.
fn reencode(value: &str, from: BinaryEncoding, to: BinaryEncoding, flip: bool) -> String {
    let inner = value.strip_prefix("sig1=:").and_then(|v| v.strip_suffix(':')).unwrap();
    let mut bytes = from.decode(inner).unwrap();
    if flip {
        bytes[0] ^= 0x01;
    }
    format!("sig1=:{}:", to.encode(&bytes))
}

async fn run_case(case: &Value) -> (String, Answer) {
    let id = case["id"].as_str().unwrap();
    let legacy = case["endpoint_profile"] != "3.2";
    let (profile, policy) = if legacy {
        let name = case["legacy_digest_policy"].as_str().unwrap();
        let coverage = match name {
            "either" => DigestCoverage::Either,
            "forbidden" => DigestCoverage::Forbidden,
            _ => DigestCoverage::Required,
        };
        (Profile::request_legacy(coverage), name)
    } else {
        (Profile::request_v3_2(), "required")
    };
    let mode = case["mode"].as_str().unwrap();
    let protocol = mode.starts_with("protocol_methods_");
    let capability = VerifierCapability::from_json(&json!({
        "supported": true,
        "covers_content_digest": policy,
        mode: [if protocol { "tasks/cancel" } else { "create_media_buy" }],
    }))
    .unwrap();

    let has_body = fact(case, "has_body").unwrap();
    let covers = fact(case, "covers_content_digest").unwrap_or(false);
    let signing = match (legacy, covers) {
        (false, true) => SigningProfile::request_v3_2(),
        (true, true) => SigningProfile::request_legacy(LegacyDigest::Cover),
        (_, false) => SigningProfile::request_legacy(LegacyDigest::Omit),
    };
    let buyer = Buyer::with_profile(signing);
    let verifier = RequestVerifier::builder(
        Arc::new(buyer.keys.clone()),
        Arc::new(MemoryReplayStore::request()),
        capability,
    )
    .profile(profile)
    .clock(Arc::new(FixedClock(NOW)))
    .authenticator_fn(|parts, _| match parts.headers.get(http::header::AUTHORIZATION) {
        Some(v) if v == BEARER => FallbackCredential::Valid,
        _ => FallbackCredential::Absent,
    })
    .build()
    .unwrap();

    let mut arguments = json!({"media_buy_id": "mb_1", "idempotency_key": id});
    if let Some(version) = case.get("request_body_adcp_version") {
        arguments["adcp_version"] = version.clone();
    }
    let body = if protocol {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"taskId": "task_1"}})
    } else {
        crate::common::tools_call("create_media_buy", arguments)
    };
    let signed = if has_body {
        buyer.sign("https://seller.example.com/mcp", &body).await
    } else {
        // Without a body a JSON-RPC call has no operation: one operation
        // per path instead (the outcome of this case does not depend on
        // the list the operation is in).
        let unsigned = UnsignedRequest::new("POST", "https://seller.example.com/adcp/create_media_buy");
        buyer.signer.sign(&unsigned).await.unwrap()
    };
    let mut request = received(&signed);
    let headers = request.headers_mut();
    let wire = if legacy {
        BinaryEncoding::Base64UrlUnpadded
    } else {
        BinaryEncoding::Base64Padded
    };
    let signature = headers["signature"].to_str().unwrap().to_owned();
    let crypto_valid = fact(case, "cryptographic_signature_valid").unwrap_or(true);
    let from = if covers || legacy {
        wire
    } else {
        BinaryEncoding::Base64UrlUnpadded
    };
    let rewritten = reencode(&signature, from, wire, !crypto_valid);
    headers.insert("signature", rewritten.parse().unwrap());
    match (
        fact(case, "signature_present").unwrap(),
        case.get("signature_header_state"),
    ) {
        (true, Some(state)) => {
            assert_eq!(state, "malformed_pair", "{id}");
            headers.remove("signature-input");
        }
        (true, None) => {}
        (false, _) => {
            headers.remove("signature-input");
            headers.remove("signature");
        }
    }
    if fact(case, "fallback_auth_valid").unwrap() {
        headers.insert(http::header::AUTHORIZATION, BEARER.parse().unwrap());
    }
    if fact(case, "digest_matches_body") == Some(false) {
        // Same operation, other bytes: the digest no longer matches.
        let (parts, body) = request.into_parts();
        let text = String::from_utf8(
            http_body_util::BodyExt::collect(body)
                .await
                .unwrap()
                .to_bytes()
                .to_vec(),
        )
        .unwrap();
        let tampered = text.replacen("\"id\":1", "\"id\":2", 1);
        assert_ne!(text, tampered, "{id}");
        request = http::Request::from_parts(parts, http_body_util::Full::new(bytes::Bytes::from(tampered)));
    }
    (id.to_owned(), send(&verifier, request).await)
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
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {
        "taskId": "task_1",
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"data": {"skill": "get_products"}}]}
    }});
    let headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    crate::common::http_request(
        "POST",
        "https://seller.example.com/a2a/jsonrpc",
        &headers,
        Some(body.to_string().as_bytes()),
    )
}

fn requiring<'a>(methods: impl IntoIterator<Item = &'a str>) -> RequestVerifier {
    let capability = VerifierCapability::builder(DigestCoverage::Required)
        .protocol_methods_required_for(methods)
        .build()
        .unwrap();
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
