//! Key-purpose separation: only `adcp_use: "governance-signing"` keys
//! verify governance tokens (the reverse, a governance key refused for
//! RFC 9421, is tested in `adcp-verify`).

use adcp_jws::{issue_for_payload, Phase, VerificationRequest};
use adcp_sign::{Algorithm, SoftwareSigner};
use serde_json::{json, Value};

use crate::support;

const NOW: i64 = 1_785_931_200;

async fn outcome(jwk: Value, signer: &SoftwareSigner) -> Result<(), (String, u8)> {
    let payload = json!({"idempotency_key": "k"});
    let mut claims = crate::issuance::claims(NOW);
    claims.authorized_commitment = None;
    let token = issue_for_payload(&claims, "create_media_buy", &payload, signer)
        .await
        .unwrap();
    let request = VerificationRequest::new(
        payload,
        "create_media_buy",
        "https://seller.example.com/sales",
        "https://buyer.example.com",
        Phase::Intent,
    );
    support::verifier(json!({"keys": [jwk]}), NOW)
        .verify(&token, &request)
        .await
        .map(|_| ())
        .map_err(|e| (e.code().to_owned(), e.step().number()))
}

#[tokio::test]
async fn only_governance_signing_keys_verify_governance_tokens() {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "k").unwrap();
    let good = support::governance_jwk(&signer);
    assert_eq!(outcome(good.clone(), &signer).await, Ok(()));
    let refused = ("governance_key_unknown".to_owned(), 6);
    for (member, value) in [
        ("adcp_use", json!("request-signing")),
        ("adcp_use", json!("webhook-signing")),
        ("adcp_use", Value::Null),
        ("use", json!("enc")),
        ("key_ops", json!(["sign"])),
        ("alg", json!("ES256")),
    ] {
        let mut jwk = good.clone();
        if value.is_null() {
            jwk.as_object_mut().unwrap().remove(member);
        } else {
            jwk[member] = value.clone();
        }
        assert_eq!(outcome(jwk, &signer).await, Err(refused.clone()), "{member}: {value}");
    }
}

#[tokio::test]
async fn unknown_kid_and_shared_kid_are_refused() {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "k").unwrap();
    let mut other = support::governance_jwk(&signer);
    other["kid"] = "other".into();
    assert_eq!(
        outcome(other, &signer).await,
        Err(("governance_key_unknown".to_owned(), 5))
    );
    let good = support::governance_jwk(&signer);
    let mut twin = good.clone();
    twin["adcp_use"] = "request-signing".into();
    let payload = json!({"idempotency_key": "k"});
    let mut claims = crate::issuance::claims(NOW);
    claims.authorized_commitment = None;
    let token = issue_for_payload(&claims, "create_media_buy", &payload, &signer)
        .await
        .unwrap();
    let request = VerificationRequest::new(
        payload,
        "create_media_buy",
        "https://seller.example.com/sales",
        "https://buyer.example.com",
        Phase::Intent,
    );
    let e = support::verifier(json!({"keys": [good, twin]}), NOW)
        .verify(&token, &request)
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.step().number()), ("governance_key_unknown", 5));
}
