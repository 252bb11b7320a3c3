//! The published governance vectors (AdCP 3.2.4): 3 payload hashes, 7
//! authorization decisions, 27 byte-exact compact-JWS cases. Counts are
//! asserted so a vector silently skipped fails the test.

use adcp_jws::{issue, Amount, Commitment, GovernanceClaims, Phase, VerificationRequest};
use serde_json::{json, Value};

use crate::support::{self, sign_raw};

#[test]
fn payload_hash_cases() {
    let Some(doc) = support::vectors() else { return };
    let cases = doc["payload_hash_cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3, "every payload-hash case runs");
    for case in cases {
        let id = case["id"].as_str().unwrap();
        assert_eq!(
            adcp_jws::payload_hash(&case["payload"]),
            case["expected_hash"].as_str().unwrap(),
            "{id}"
        );
        // The canonical business payload is what gets hashed.
        let mut business = case["payload"].clone();
        for name in adcp_jws::EXCLUDED_MEMBERS {
            business.as_object_mut().unwrap().remove(name);
        }
        assert_eq!(
            adcp_strict_json::jcs::canonicalize(&business),
            case["canonical_business_payload"].as_str().unwrap(),
            "{id}"
        );
    }
}

/// Each abstract authorization case becomes a token signed with a fresh
/// governance key and a request built to match or miss on each axis.
#[tokio::test]
async fn authorization_cases() {
    let Some(doc) = support::vectors() else { return };
    let cases = doc["authorization_cases"].as_array().unwrap();
    assert_eq!(cases.len(), 7, "every authorization case runs");
    let signer = adcp_sign::SoftwareSigner::generate(adcp_sign::Algorithm::Ed25519, "gov-auth").unwrap();
    let jwks = json!({"keys": [support::governance_jwk(&signer)]});
    let now = 1_785_931_200;
    let payload = json!({"idempotency_key": "auth-case", "amount": 1});
    let (mut accepted, mut rejected) = (0, 0);
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let b = |name: &str| case[name].as_bool().unwrap();
        let amount = |name: &str| Amount::from_json(case[name].as_number().unwrap()).unwrap();
        let signed_hash = if b("payload_hash_match") {
            adcp_jws::payload_hash(&payload)
        } else {
            adcp_jws::payload_hash(&json!({"idempotency_key": "other", "amount": 1}))
        };
        let claims = json!({
            "iss": "https://gov.example.com/governance", "sub": "s", "plan_hash": "p",
            "aud": "https://seller.example.com/sales", "iat": now, "exp": now + 900,
            "jti": format!("jti-{id}"), "phase": "intent", "caller": "https://buyer.example.com",
            "check_id": "c",
            "authorized_commitment": {"amount": case["authorized_amount"], "currency": "USD"},
            "authorized_task": if b("task_match") { "create_media_buy" } else { "update_media_buy" },
            "authorized_payload_hash": signed_hash,
        });
        let header = if b("critical_markers_complete") {
            r#"{"alg":"EdDSA","kid":"gov-auth","typ":"adcp-gov+jws","crit":["authorized_commitment","authorized_task","authorized_payload_hash"],"authorized_commitment":true,"authorized_task":true,"authorized_payload_hash":true}"#
        } else {
            r#"{"alg":"EdDSA","kid":"gov-auth","typ":"adcp-gov+jws","crit":["authorized_task","authorized_payload_hash"],"authorized_task":true,"authorized_payload_hash":true}"#
        };
        let token = sign_raw(&signer, header, &claims.to_string()).await;
        let mut request = VerificationRequest::new(
            payload.clone(),
            "create_media_buy",
            "https://seller.example.com/sales",
            "https://buyer.example.com",
            Phase::Intent,
        );
        request.commitment = Some(Commitment {
            amount: amount("actual_amount"),
            currency: if b("currency_match") { "USD" } else { "EUR" }.into(),
        });
        let got = support::verifier(jwks.clone(), now).verify(&token, &request).await;
        match case["expected"].as_str().unwrap() {
            "accept" => {
                assert!(got.is_ok(), "{id}: {got:?}");
                accepted += 1;
            }
            "reject" => {
                let e = got.expect_err(id);
                assert!(
                    matches!(e.code(), "governance_token_invalid" | "governance_token_not_applicable"),
                    "{id}: {e}"
                );
                rejected += 1;
            }
            other => panic!("{id}: unknown expectation {other}"),
        }
    }
    assert_eq!((accepted, rejected), (2, 5));
}

/// The outcome of one signed case through the verifier.
async fn run_signed_case(doc: &Value, case: &Value) -> Result<(), adcp_jws::GovError> {
    let signed = &doc["signed_jws"];
    let defaults = &signed["verification_defaults"];
    let now = defaults["now"].as_i64().unwrap();
    assert_eq!(defaults["clock_skew_seconds"].as_i64(), Some(adcp_jws::CLOCK_SKEW_SECS));
    let verifier = support::verifier(json!({"keys": [support::test_public_jwk(doc)]}), now);
    let overrides = case.get("verification_overrides");
    if overrides.and_then(|o| o.get("preconsumed_jti")) == Some(&Value::Bool(true)) {
        let c = &case["claims"];
        verifier
            .preconsume(
                c["iss"].as_str().unwrap(),
                c["aud"].as_str().unwrap(),
                c["jti"].as_str().unwrap(),
                c["exp"].as_i64().unwrap() + 60,
            )
            .await
            .unwrap();
    }
    let request = support::request(defaults, overrides);
    verifier
        .verify(case["compact_jws"].as_str().unwrap(), &request)
        .await
        .map(|_| ())
}

#[tokio::test]
async fn signed_jws_cases() {
    let Some(doc) = support::vectors() else { return };
    let cases = doc["signed_jws"]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 27, "every signed case runs");
    let mut failures = Vec::new();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let expected = &case["expected"];
        let got = run_signed_case(&doc, case).await;
        let ok = match (expected["result"].as_str().unwrap(), &got) {
            ("accept", Ok(())) => true,
            ("reject", Err(e)) => Some(e.code()) == expected["error"].as_str(),
            _ => false,
        };
        if !ok {
            failures.push(format!("{id}: expected {expected}, got {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 27 failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The published tokens are reproduced byte for byte by issuance with the
/// test key, from their typed claims: every case whose claims the typed
/// issuer accepts and whose signature was not tampered with (the positive
/// ones included).
#[tokio::test]
async fn issuance_reproduces_published_tokens() {
    let Some(doc) = support::vectors() else { return };
    let signer = support::test_signer(&doc);
    let mut reproduced = Vec::new();
    for case in doc["signed_jws"]["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let header = &case["protected_header"];
        // Headers the typed issuer never writes (an unknown critical
        // extension, a claim without its marker) and the tampered case.
        if id == "signature-tampered" || header.get("future_governance_constraint").is_some() {
            continue;
        }
        let Ok(claims) = GovernanceClaims::from_json(&case["claims"]) else {
            continue;
        };
        let Ok(token) = issue(&claims, &signer).await else {
            continue;
        };
        // A header whose markers disagree with the claims (the crit
        // negative cases) is not what issuance writes.
        let consistent = adcp_jws::CRITICAL_CLAIMS
            .iter()
            .all(|name| header.get(*name).is_some() == case["claims"].get(*name).is_some());
        if !consistent {
            assert_ne!(token, case["compact_jws"].as_str().unwrap(), "{id}");
            continue;
        }
        assert_eq!(token, case["compact_jws"].as_str().unwrap(), "{id}");
        reproduced.push(id.to_owned());
    }
    for positive in ["valid-exact-authorization", "zero-cost-commitment"] {
        assert!(reproduced.iter().any(|r| r == positive), "{positive} not reproduced");
    }
    // 27 minus the tampered signature, the unknown critical extension, the
    // two marker/claim disagreements, the six cases missing a required
    // claim (aud, caller, exp, jti, currency, amount) and the four
    // breaking an issuance rule (task without payload hash and the
    // reverse, empty jti, exp before iat).
    assert_eq!(reproduced.len(), 13, "{reproduced:?}");
}
