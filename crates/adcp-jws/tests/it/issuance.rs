//! Issuance: markers, payload hash, claim order, ES256, refusals.

use adcp_jws::{issue, issue_for_payload, parse_compact, Commitment, GovernanceClaims, IssueError, Phase};
use adcp_sign::{Algorithm, SoftwareSigner};
use serde_json::json;

use crate::support;

pub fn claims(now: i64) -> GovernanceClaims {
    GovernanceClaims {
        iss: "https://gov.example.com/governance".into(),
        sub: "gov_action_1".into(),
        plan_hash: "ph".into(),
        aud: "https://seller.example.com/sales".into(),
        iat: now,
        nbf: Some(now - 30),
        exp: now + 900,
        jti: "jti-1".into(),
        phase: Phase::Intent,
        caller: "https://buyer.example.com".into(),
        check_id: "chk_1".into(),
        authorized_commitment: Some(Commitment {
            amount: "10.50".parse().unwrap(),
            currency: "USD".into(),
        }),
        authorized_task: None,
        authorized_payload_hash: None,
        media_buy_id: None,
        extra: vec![("policy_decision_hash".into(), json!("abcd"))],
    }
}

#[tokio::test]
async fn es256_token_round_trips_with_markers_and_hash() {
    let now = 1_785_931_200;
    let signer = SoftwareSigner::generate(Algorithm::EcdsaP256Sha256, "gov-es").unwrap();
    let payload = json!({"idempotency_key": "k", "amount": 10.5, "context": {"x": 1}});
    let token = issue_for_payload(&claims(now), "create_media_buy", &payload, &signer)
        .await
        .unwrap();
    let parsed = parse_compact(&token).unwrap();
    assert_eq!(parsed.header()["alg"], "ES256");
    assert_eq!(
        parsed.header()["crit"],
        json!(["authorized_commitment", "authorized_task", "authorized_payload_hash"])
    );
    assert_eq!(
        parsed.claims()["authorized_commitment"],
        json!({"amount": 10.5, "currency": "USD"})
    );
    assert_eq!(
        parsed.claim_str("authorized_payload_hash"),
        Some(adcp_jws::payload_hash(&json!({"idempotency_key": "k", "amount": 10.5})).as_str())
    );
    let verifier = support::verifier(json!({"keys": [support::governance_jwk(&signer)]}), now);
    let mut request = adcp_jws::VerificationRequest::new(
        payload,
        "create_media_buy",
        "https://seller.example.com/sales",
        "https://buyer.example.com",
        Phase::Intent,
    );
    request.commitment = Some(Commitment {
        amount: "10.5".parse().unwrap(),
        currency: "USD".into(),
    });
    verifier.verify(&token, &request).await.unwrap();
}

#[tokio::test]
async fn no_critical_claims_means_no_crit() {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "g").unwrap();
    let mut c = claims(1000);
    c.authorized_commitment = None;
    let token = issue(&c, &signer).await.unwrap();
    let parsed = parse_compact(&token).unwrap();
    assert!(parsed.header().get("crit").is_none());
}

#[tokio::test]
async fn issuance_refuses_profile_violations() {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "g").unwrap();
    let now = 1000;
    let mut long = claims(now);
    long.phase = Phase::Purchase;
    long.exp = now + 31 * 24 * 3600;
    let mut intent_with_buy = claims(now);
    intent_with_buy.media_buy_id = Some("mb".into());
    let mut delivery_without_buy = claims(now);
    delivery_without_buy.phase = Phase::Delivery;
    let mut half_binding = claims(now);
    half_binding.authorized_task = Some("create_media_buy".into());
    let mut http = claims(now);
    http.iss = "http://gov.example.com".into();
    let mut shadow = claims(now);
    shadow.extra.push(("aud".into(), json!("x")));
    for c in [long, intent_with_buy, delivery_without_buy, half_binding, http, shadow] {
        assert!(matches!(issue(&c, &signer).await, Err(IssueError::Claims(_))), "{c:?}");
    }
}
