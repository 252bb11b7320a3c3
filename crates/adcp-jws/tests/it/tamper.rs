//! Any single-byte change of a valid token is rejected.

use adcp_jws::{issue_for_payload, Commitment, Phase, VerificationRequest};
use adcp_sign::{Algorithm, SoftwareSigner};
use proptest::prelude::*;
use serde_json::json;

use crate::support;

const NOW: i64 = 1_785_931_200;

fn fixture() -> (String, serde_json::Value, VerificationRequest) {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "gov-tamper").unwrap();
    let payload = json!({"idempotency_key": "k", "amount": 5});
    let token = rt
        .block_on(issue_for_payload(
            &crate::issuance::claims(NOW),
            "create_media_buy",
            &payload,
            &signer,
        ))
        .unwrap();
    let mut request = VerificationRequest::new(
        payload,
        "create_media_buy",
        "https://seller.example.com/sales",
        "https://buyer.example.com",
        Phase::Intent,
    );
    request.commitment = Some(Commitment {
        amount: "5".parse().unwrap(),
        currency: "USD".into(),
    });
    (token, json!({"keys": [support::governance_jwk(&signer)]}), request)
}

#[test]
fn the_untampered_token_is_accepted() {
    let (token, jwks, request) = fixture();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(support::verifier(jwks, NOW).verify(&token, &request))
        .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn any_single_byte_change_is_rejected(index in any::<prop::sample::Index>(), byte in 0u8..128) {
        let (token, jwks, request) = fixture();
        let mut bytes = token.into_bytes();
        let i = index.index(bytes.len());
        prop_assume!(bytes[i] != byte);
        bytes[i] = byte;
        let tampered = String::from_utf8(bytes).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let got = rt.block_on(support::verifier(jwks, NOW).verify(&tampered, &request));
        prop_assert!(got.is_err(), "accepted a token changed at byte {}", i);
    }
}
