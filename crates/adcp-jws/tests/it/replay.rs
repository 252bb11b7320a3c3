//! `jti` replay per `(iss, aud)` across two verifier instances sharing one
//! SQLite store.

use std::sync::Arc;

use adcp_jws::{issue_for_payload, GovernanceVerifier, Phase, VerificationRequest};
use adcp_sign::{Algorithm, SoftwareSigner};
use adcp_store::{SqliteOptions, SqliteStore};
use serde_json::json;

use crate::support;

const NOW: i64 = 1_785_931_200;

#[tokio::test]
async fn a_token_accepted_by_one_verifier_is_a_replay_for_the_other() {
    let dir = std::env::temp_dir().join(format!("adcp-jws-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gov-replay.sqlite");
    let _ = std::fs::remove_file(&path);
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "gov-replay").unwrap();
    let jwks = json!({"keys": [support::governance_jwk(&signer)]});
    let make = || {
        let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        GovernanceVerifier::builder()
            .static_jwks(jwks.clone())
            .replay_store(Arc::new(store))
            .clock(Arc::new(adcp_sigbase::FixedClock(NOW)))
            .build()
            .unwrap()
    };
    let (first, second) = (make(), make());
    let payload = json!({"idempotency_key": "k", "amount": 0});
    let mut claims = crate::issuance::claims(NOW);
    claims.authorized_commitment = None;
    let token = issue_for_payload(&claims, "create_media_buy", &payload, &signer)
        .await
        .unwrap();
    let request = VerificationRequest::new(
        payload.clone(),
        "create_media_buy",
        "https://seller.example.com/sales",
        "https://buyer.example.com",
        Phase::Intent,
    );
    first.verify(&token, &request).await.unwrap();
    let e = second.verify(&token, &request).await.unwrap_err();
    assert_eq!((e.code(), e.step().number()), ("governance_token_replayed", 15));

    // The same jti for another audience is another (iss, aud) tuple.
    let mut other = claims.clone();
    other.aud = "https://other-seller.example.com/sales".into();
    let token = issue_for_payload(&other, "create_media_buy", &payload, &signer)
        .await
        .unwrap();
    let mut request = request;
    request.audience = other.aud.clone();
    second.verify(&token, &request).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
