//! brand.json mode against a local HTTPS server: the governance entry's
//! `jwks_uri`, the cache, one refetch on an unknown `kid` (then the
//! cooldown), and signed revocation lists fetched from the issuer's origin.

use std::sync::Arc;

use adcp_jws::{issue_for_payload, GovernanceVerifier, Phase, VerificationRequest};
use adcp_sigbase::Clock;
use adcp_sign::{Algorithm, Signer, SoftwareSigner};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::{ok, Server};
use crate::support;

const NOW: i64 = 1_785_931_200;

/// A clock the test moves.
#[derive(Debug, Default)]
struct TestClock(std::sync::atomic::AtomicI64);

impl Clock for TestClock {
    fn now(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

async fn token(signer: &SoftwareSigner, iss: &str, jti: &str, phase: Phase, now: i64) -> String {
    let mut claims = crate::issuance::claims(now);
    claims.iss = iss.to_owned();
    claims.jti = jti.to_owned();
    claims.phase = phase;
    claims.authorized_commitment = None;
    issue_for_payload(&claims, "create_media_buy", &json!({"k": 1}), signer)
        .await
        .unwrap()
}

fn request(phase: Phase) -> VerificationRequest {
    VerificationRequest::new(
        json!({"k": 1}),
        "create_media_buy",
        "https://seller.example.com/sales",
        "https://buyer.example.com",
        phase,
    )
}

fn code(r: &Result<adcp_jws::VerifiedToken, adcp_jws::GovError>) -> Option<(&'static str, u8)> {
    r.as_ref().err().map(|e| (e.code(), e.step().number()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_caches_and_refetches_once_on_an_unknown_kid() {
    let s = Server::start(&["buyer.example", "gov.example"]).await;
    let iss = s.url("gov.example", "/governance");
    let first = SoftwareSigner::generate(Algorithm::Ed25519, "gov-1").unwrap();
    let second = SoftwareSigner::generate(Algorithm::Ed25519, "gov-2").unwrap();
    s.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [
            {"url": iss, "type": "governance", "jwks_uri": s.url("gov.example", "/jwks.json")}
        ]})
        .to_string()),
    );
    s.set(
        "/jwks.json",
        ok(json!({"keys": [support::governance_jwk(&first)]}).to_string()),
    );
    let clock = Arc::new(TestClock::default());
    clock.0.store(NOW, std::sync::atomic::Ordering::SeqCst);
    let verifier = GovernanceVerifier::builder()
        .buyer_brand_json(s.url("buyer.example", "/.well-known/brand.json").parse().unwrap())
        .fetch_config(s.fetch_config())
        .replay_store(Arc::new(adcp_verify::MemoryReplayStore::webhook()))
        .clock(clock.clone())
        .build()
        .unwrap();

    let accepted = verifier
        .verify(
            &token(&first, &iss, "a", Phase::Intent, NOW).await,
            &request(Phase::Intent),
        )
        .await
        .unwrap();
    assert!(accepted.brand_json_checked);
    assert_eq!(s.hits("/jwks.json"), 1);
    // Cached: a second token costs no fetch.
    verifier
        .verify(
            &token(&first, &iss, "b", Phase::Intent, NOW).await,
            &request(Phase::Intent),
        )
        .await
        .unwrap();
    assert_eq!(s.hits("/jwks.json"), 1);

    // Rotation: the new kid is published; the first miss refetches.
    s.set(
        "/jwks.json",
        ok(json!({"keys": [support::governance_jwk(&first), support::governance_jwk(&second)]}).to_string()),
    );
    verifier
        .verify(
            &token(&second, &iss, "c", Phase::Intent, NOW).await,
            &request(Phase::Intent),
        )
        .await
        .unwrap();
    assert_eq!(s.hits("/jwks.json"), 2);

    // An unknown kid within the 30 s cooldown: no further fetch.
    let third = SoftwareSigner::generate(Algorithm::Ed25519, "gov-3").unwrap();
    let got = verifier
        .verify(
            &token(&third, &iss, "d", Phase::Intent, NOW).await,
            &request(Phase::Intent),
        )
        .await;
    assert_eq!(code(&got), Some(("governance_key_unknown", 5)));
    assert_eq!(s.hits("/jwks.json"), 2);
    // After the cooldown, one more refetch.
    clock.0.store(NOW + 31, std::sync::atomic::Ordering::SeqCst);
    let got = verifier
        .verify(
            &token(&third, &iss, "e", Phase::Intent, NOW).await,
            &request(Phase::Intent),
        )
        .await;
    assert_eq!(code(&got), Some(("governance_key_unknown", 5)));
    assert_eq!(s.hits("/jwks.json"), 3);
}

/// A revocation list signed as the spec shows (flattened JWS JSON, `typ`
/// `adcp-gov-revocation+jws`) by a key of the issuer's JWKS.
async fn signed_list(signer: &SoftwareSigner, payload: &Value) -> String {
    let protected = URL_SAFE_NO_PAD
        .encode(json!({"alg": "EdDSA", "kid": signer.key_id(), "typ": "adcp-gov-revocation+jws"}).to_string());
    let body = URL_SAFE_NO_PAD.encode(payload.to_string());
    let signature = signer.sign(format!("{protected}.{body}").as_bytes()).await.unwrap();
    json!({"payload": body, "protected": protected, "signature": URL_SAFE_NO_PAD.encode(signature)}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_revocation_lists_are_fetched_from_the_issuer_origin() {
    let s = Server::start(&["buyer.example", "gov.example"]).await;
    let iss = s.url("gov.example", "/governance");
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "gov-rev").unwrap();
    s.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [
            {"url": iss, "type": "governance", "jwks_uri": s.url("gov.example", "/jwks.json")}
        ]})
        .to_string()),
    );
    s.set(
        "/jwks.json",
        ok(json!({"keys": [support::governance_jwk(&signer)]}).to_string()),
    );
    let list = |jtis: Value| {
        json!({"version": 1, "issuer": s.url("gov.example", ""), "updated": "2026-08-05T11:59:00Z",
               "next_update": "2026-08-05T12:10:00Z", "revoked_jtis": jtis, "revoked_kids": []})
    };
    s.set(
        "/.well-known/governance-revocations.json",
        ok(signed_list(&signer, &list(json!(["revoked-one"]))).await),
    );
    let verifier = GovernanceVerifier::builder()
        .buyer_brand_json(s.url("buyer.example", "/.well-known/brand.json").parse().unwrap())
        .fetch_config(s.fetch_config())
        .fetch_revocation_list(None)
        .replay_store(Arc::new(adcp_verify::MemoryReplayStore::webhook()))
        .clock(Arc::new(adcp_sigbase::FixedClock(NOW)))
        .build()
        .unwrap();
    let purchase = |jti: &'static str| {
        let signer = &signer;
        let iss = iss.clone();
        async move { token(signer, &iss, jti, Phase::Purchase, NOW).await }
    };
    let got = verifier
        .verify(&purchase("fine").await, &request(Phase::Purchase))
        .await;
    assert!(got.is_ok(), "{got:?}");
    let got = verifier
        .verify(&purchase("revoked-one").await, &request(Phase::Purchase))
        .await;
    assert_eq!(code(&got), Some(("governance_token_revoked", 14)));
    assert_eq!(
        s.hits("/.well-known/governance-revocations.json"),
        1,
        "polled on next_update, not per token"
    );

    // An unsigned list is never trusted from the network: execution
    // phases are refused as stale.
    let s2 = Server::start(&["buyer.example", "gov.example"]).await;
    let iss2 = s2.url("gov.example", "/governance");
    s2.set(
        "/.well-known/brand.json",
        ok(
            json!({"agents": [{"url": iss2, "type": "governance", "jwks_uri": s2.url("gov.example", "/jwks.json")}]})
                .to_string(),
        ),
    );
    s2.set(
        "/jwks.json",
        ok(json!({"keys": [support::governance_jwk(&signer)]}).to_string()),
    );
    s2.set(
        "/.well-known/governance-revocations.json",
        ok(list(json!([])).to_string()),
    );
    let verifier = GovernanceVerifier::builder()
        .buyer_brand_json(s2.url("buyer.example", "/.well-known/brand.json").parse().unwrap())
        .fetch_config(s2.fetch_config())
        .fetch_revocation_list(None)
        .replay_store(Arc::new(adcp_verify::MemoryReplayStore::webhook()))
        .clock(Arc::new(adcp_sigbase::FixedClock(NOW)))
        .build()
        .unwrap();
    let got = verifier
        .verify(
            &token(&signer, &iss2, "x", Phase::Purchase, NOW).await,
            &request(Phase::Purchase),
        )
        .await;
    assert_eq!(code(&got), Some(("governance_revocation_stale", 14)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_outside_the_brand_json_is_refused_and_the_miss_remembered() {
    let s = Server::start(&["buyer.example", "gov.example"]).await;
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "gov-1").unwrap();
    s.set(
        "/.well-known/brand.json",
        ok(
            json!({"agents": [{"url": s.url("gov.example", "/governance"), "type": "governance",
                              "jwks_uri": s.url("gov.example", "/jwks.json")}]})
            .to_string(),
        ),
    );
    s.set(
        "/jwks.json",
        ok(json!({"keys": [support::governance_jwk(&signer)]}).to_string()),
    );
    let verifier = GovernanceVerifier::builder()
        .buyer_brand_json(s.url("buyer.example", "/.well-known/brand.json").parse().unwrap())
        .fetch_config(s.fetch_config())
        .replay_store(Arc::new(adcp_verify::MemoryReplayStore::webhook()))
        .clock(Arc::new(adcp_sigbase::FixedClock(NOW)))
        .build()
        .unwrap();
    // Path-level matching: a sibling tenant on the same origin is not the buyer's agent.
    let sibling = s.url("gov.example", "/governance/other");
    for jti in ["s1", "s2"] {
        let got = verifier
            .verify(
                &token(&signer, &sibling, jti, Phase::Intent, NOW).await,
                &request(Phase::Intent),
            )
            .await;
        assert_eq!(code(&got), Some(("governance_issuer_not_authorized", 13)));
    }
    assert_eq!(
        s.hits("/.well-known/brand.json"),
        1,
        "the failed discovery is remembered"
    );
}
