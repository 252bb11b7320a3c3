//! `request-signing/body-integrity-policy.json`: the 3.2 body-integrity
//! policy matrix (17 cases).
//!
//! Each case gives verifier facts (mode, body, signature presence, digest
//! coverage, crypto and digest validity, fallback credential). The runner
//! builds a real request in the case's mode (an MCP `tools/call` for the
//! operation lists, a `tasks/cancel` JSON-RPC call for the protocol-method
//! lists), lets the gate decide, and for a `Verify` decision feeds the
//! plan the checklist result those facts imply (step 6 coverage, step 10
//! crypto, step 11 digest, in checklist order). The crypto and digest facts
//! are simulated here; the conformance runner grades them for real.

use adcp_sigbase::Message;
use adcp_verify::request_policy::{
    decide, decide_resolved, AuthSource, Binding, Decision, FallbackCredential, Mode, ResolvedRequest,
    VerifierCapability,
};
use adcp_verify::{CodePrefix, ErrorCode, Step, VerifyError};
use adcp_verify::{DigestCoverage, Profile};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const SIGNATURE_INPUT: &str = r#"sig1=("@method" "@target-uri" "@authority" "content-type");created=1776520800;expires=1776521100;nonce="QTJBLXBvcy0wMDEtc2lnbmVk";keyid="test-ed25519-2026";alg="ed25519";tag="adcp/request-signing/v1""#;
const SIGNATURE: &str =
    "sig1=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==:";

fn coverage(name: &str) -> DigestCoverage {
    match name {
        "required" => DigestCoverage::Required,
        "either" => DigestCoverage::Either,
        "forbidden" => DigestCoverage::Forbidden,
        other => panic!("policy {other}"),
    }
}

fn fact(case: &Value, name: &str) -> Option<bool> {
    case.get(name).map(|v| v.as_bool().unwrap())
}

/// The checklist result the case's facts imply, in checklist order.
fn checklist(case: &Value, policy: DigestCoverage) -> Result<(), VerifyError> {
    let fail = |code, step, detail: &str| Err(VerifyError::new(code, CodePrefix::Request, Step::new(step), detail));
    let has_body = fact(case, "has_body").unwrap();
    let covers = fact(case, "covers_content_digest").unwrap_or(false);
    if has_body && !covers && policy == DigestCoverage::Required {
        return fail(ErrorCode::ComponentsIncomplete, 6, "content-digest not covered");
    }
    if covers && policy == DigestCoverage::Forbidden {
        return fail(ErrorCode::ComponentsUnexpected, 6, "content-digest covered");
    }
    if fact(case, "cryptographic_signature_valid") == Some(false) {
        return fail(ErrorCode::SignatureInvalid, 10, "signature does not verify");
    }
    if covers && fact(case, "digest_matches_body") == Some(false) {
        return fail(ErrorCode::DigestMismatch, 11, "digest mismatch");
    }
    Ok(())
}

#[test]
fn body_integrity_policy_matrix() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let file = adcp_vectors::load_json(&suite, "request-signing/body-integrity-policy.json").unwrap();
    assert_eq!(file["profile_version"], "3.2");
    let cases = file["cases"].as_array().unwrap();
    let mut actions: BTreeMap<String, usize> = BTreeMap::new();

    for case in cases {
        let id = case["id"].as_str().unwrap();
        let expected = &case["expected"];
        let (policy, profile) = match case["endpoint_profile"].as_str().unwrap() {
            "3.2" => (DigestCoverage::Required, Profile::request_v3_2()),
            _ => {
                let legacy = coverage(case["legacy_digest_policy"].as_str().unwrap());
                (legacy, Profile::request_legacy(legacy))
            }
        };
        let mode = case["mode"].as_str().unwrap();
        let protocol = mode.starts_with("protocol_methods_");
        let cap = VerifierCapability::from_json(&json!({
            "supported": true,
            "covers_content_digest": adcp_policy_name(policy),
            mode: [if protocol { "tasks/cancel" } else { "create_media_buy" }],
        }))
        .unwrap();
        cap.check_profile(&profile).unwrap();
        let expected_mode = match mode.trim_start_matches("protocol_methods_") {
            "required_for" => Mode::Required,
            "warn_for" => Mode::Warn,
            "supported_for" => Mode::Supported,
            other => panic!("{id}: mode {other}"),
        };

        let mut arguments = json!({"media_buy_id": "mb_1", "idempotency_key": id});
        if let Some(version) = case.get("request_body_adcp_version") {
            arguments["adcp_version"] = version.clone();
        }
        let body = if protocol {
            json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"taskId": "task_1"}})
        } else {
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "create_media_buy", "arguments": arguments}})
        }
        .to_string();
        let mut msg = Message::request("POST", "https://seller.example.com/mcp");
        let has_body = fact(case, "has_body").unwrap();
        if has_body {
            msg = msg
                .with_header("Content-Type", "application/json")
                .with_body(body.as_bytes());
        }
        match (
            fact(case, "signature_present").unwrap(),
            case.get("signature_header_state"),
        ) {
            (true, Some(state)) => {
                assert_eq!(state, "malformed_pair", "{id}");
                msg = msg.with_header("Signature", SIGNATURE);
            }
            (true, None) => {
                msg = msg
                    .with_header("Signature-Input", SIGNATURE_INPUT)
                    .with_header("Signature", SIGNATURE)
            }
            (false, _) => {}
        }
        let fallback = if fact(case, "fallback_auth_valid").unwrap() {
            FallbackCredential::Valid
        } else {
            FallbackCredential::Absent
        };

        let decision = if has_body {
            decide(&cap, Binding::JsonRpc, &msg, fallback)
        } else {
            // A body-less request in this mode: resolved by the caller.
            let request = if protocol {
                ResolvedRequest::new(None, Some("tasks/cancel".into()))
            } else {
                ResolvedRequest::new(Some("create_media_buy".into()), None)
            };
            decide_resolved(&cap, request, &msg, fallback)
        };
        let verdict = match decision {
            Decision::Verify(plan) => {
                assert_eq!(plan.mode(), expected_mode, "{id}");
                assert_eq!(plan.digest_coverage(), profile.digest_coverage(), "{id}");
                plan.conclude(checklist(case, policy).map(|()| "signer"))
            }
            settled => settled.verdict().unwrap(),
        };

        let action = expected["action"].as_str().unwrap();
        assert_eq!(verdict.action().as_str(), action, "{id}: {verdict:?}");
        assert_eq!(
            verdict.error().map(VerifyError::code_str),
            expected.get("error_code").and_then(Value::as_str),
            "{id}"
        );
        if let Some(source) = expected.get("authentication_source") {
            let actual = match verdict.authentication_source() {
                Some(AuthSource::Signature) => "signature",
                Some(AuthSource::Fallback) => "fallback",
                other => panic!("{id}: source {other:?}"),
            };
            assert_eq!(actual, source, "{id}");
        }
        assert_eq!(
            verdict.verified_signer().is_some(),
            expected["verified_signer_identity"].as_bool().unwrap(),
            "{id}"
        );
        // Every shadow-mode acceptance or rejection carries the recorded failure.
        assert_eq!(
            verdict.warning().is_some(),
            matches!(action, "accept_with_warning" | "reject_unauthenticated"),
            "{id}"
        );
        *actions.entry(action.to_owned()).or_default() += 1;
    }

    assert_eq!(cases.len(), 17);
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

fn adcp_policy_name(policy: DigestCoverage) -> &'static str {
    match policy {
        DigestCoverage::Required => "required",
        DigestCoverage::Either => "either",
        DigestCoverage::Forbidden => "forbidden",
    }
}

/// A 3.2 endpoint cannot be configured with a legacy digest policy, and a
/// body's `adcp_version` never selects one.
#[test]
fn endpoint_profile_fixes_the_digest_policy() {
    let legacy = VerifierCapability::builder(DigestCoverage::Either).build().unwrap();
    assert!(legacy.check_profile(&Profile::request_v3_2()).is_err());
    assert!(legacy
        .check_profile(&Profile::request_legacy(DigestCoverage::Either))
        .is_ok());
    let strict = VerifierCapability::builder(DigestCoverage::Required).build().unwrap();
    assert!(strict.check_profile(&Profile::request_v3_2()).is_ok());
    assert!(VerifierCapability::unsupported()
        .check_profile(&Profile::request_v3_2())
        .is_ok());

    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_media_buy","arguments":{"adcp_version":"3.1"}}}"#;
    let msg = Message::request("POST", "https://seller.example.com/mcp")
        .with_header("Signature-Input", SIGNATURE_INPUT)
        .with_header("Signature", SIGNATURE)
        .with_body(&body[..]);
    let Decision::Verify(plan) = decide(&strict, Binding::JsonRpc, &msg, FallbackCredential::Absent) else {
        panic!("signed")
    };
    assert_eq!(plan.digest_coverage(), DigestCoverage::Required);
}
