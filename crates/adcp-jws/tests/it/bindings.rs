//! Steps 10–12 beyond the vectors: `sub` continuity, the phase gate,
//! `media_buy_id` per phase, and the execution phases' revocation rules.

use std::collections::HashSet;
use std::sync::Arc;

use adcp_jwks::RevocationList;
use adcp_jws::{issue_for_payload, GovError, GovernanceRevocations, GovernanceVerifier, Phase, VerificationRequest};
use adcp_sign::{Algorithm, SoftwareSigner};
use serde_json::json;

use crate::support;

const NOW: i64 = 1_785_931_200;

fn list(jtis: &[&str]) -> GovernanceRevocations {
    GovernanceRevocations::new(
        RevocationList {
            issuer: Some("https://gov.example.com".into()),
            updated: Some(NOW - 60),
            next_update: NOW + 600,
            revoked_kids: HashSet::new(),
            revoked_jtis: jtis.iter().map(|j| (*j).to_owned()).collect(),
            signed: true,
        },
        NOW - 60,
    )
}

struct Case {
    phase: Phase,
    token_buy: Option<&'static str>,
    request_buy: Option<&'static str>,
    prior_sub: Option<&'static str>,
    gate: Phase,
}

async fn run(signer: &SoftwareSigner, c: &Case, revocations: Option<GovernanceRevocations>) -> Result<(), GovError> {
    let payload = json!({"idempotency_key": "k", "media_buy_id": c.request_buy});
    let mut claims = crate::issuance::claims(NOW);
    claims.authorized_commitment = None;
    claims.phase = c.phase;
    claims.media_buy_id = c.token_buy.map(str::to_owned);
    claims.jti = format!("{:?}-{:?}-{:?}", c.phase, c.token_buy, c.prior_sub);
    let token = issue_for_payload(&claims, "update_media_buy", &payload, signer)
        .await
        .unwrap();
    let mut builder = GovernanceVerifier::builder()
        .static_jwks(json!({"keys": [support::governance_jwk(signer)]}))
        .replay_store(Arc::new(adcp_verify::MemoryReplayStore::webhook()))
        .clock(Arc::new(adcp_sigbase::FixedClock(NOW)));
    if let Some(l) = revocations {
        builder = builder.revocation_list(l);
    }
    let mut request = VerificationRequest::new(
        payload,
        "update_media_buy",
        "https://seller.example.com/sales",
        "https://buyer.example.com",
        c.gate,
    );
    request.media_buy_id = c.request_buy.map(str::to_owned);
    request.prior_sub = c.prior_sub.map(str::to_owned);
    builder.build().unwrap().verify(&token, &request).await.map(|_| ())
}

fn code(r: &Result<(), GovError>) -> Option<(&'static str, u8)> {
    r.as_ref().err().map(|e| (e.code(), e.step().number()))
}

#[tokio::test]
async fn continuity_phase_and_media_buy_rules() {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "gov-bind").unwrap();
    let na = |step| Some(("governance_token_not_applicable", step));
    let cases = [
        // Modification with the right media buy and continuity: accepted.
        (
            Case {
                phase: Phase::Modification,
                token_buy: Some("mb_1"),
                request_buy: Some("mb_1"),
                prior_sub: Some("gov_action_1"),
                gate: Phase::Modification,
            },
            None,
        ),
        // Another action's sub.
        (
            Case {
                phase: Phase::Modification,
                token_buy: Some("mb_1"),
                request_buy: Some("mb_1"),
                prior_sub: Some("gov_action_2"),
                gate: Phase::Modification,
            },
            na(10),
        ),
        // Another media buy.
        (
            Case {
                phase: Phase::Delivery,
                token_buy: Some("mb_1"),
                request_buy: Some("mb_2"),
                prior_sub: None,
                gate: Phase::Delivery,
            },
            na(12),
        ),
        // Purchase without a media buy yet: valid.
        (
            Case {
                phase: Phase::Purchase,
                token_buy: None,
                request_buy: None,
                prior_sub: None,
                gate: Phase::Purchase,
            },
            None,
        ),
        // Purchase naming one: compared.
        (
            Case {
                phase: Phase::Purchase,
                token_buy: Some("mb_1"),
                request_buy: Some("mb_9"),
                prior_sub: None,
                gate: Phase::Purchase,
            },
            na(12),
        ),
        // An execution token is not the intent gate's, nor the reverse.
        (
            Case {
                phase: Phase::Purchase,
                token_buy: None,
                request_buy: None,
                prior_sub: None,
                gate: Phase::Intent,
            },
            na(11),
        ),
        (
            Case {
                phase: Phase::Intent,
                token_buy: None,
                request_buy: None,
                prior_sub: None,
                gate: Phase::Purchase,
            },
            na(11),
        ),
    ];
    for (i, (c, expected)) in cases.iter().enumerate() {
        let got = run(&signer, c, Some(list(&[]))).await;
        assert_eq!(code(&got), *expected, "case {i}: {got:?}");
    }
}

#[tokio::test]
async fn execution_phases_need_a_fresh_list_and_honor_revoked_jtis() {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "gov-bind").unwrap();
    let c = Case {
        phase: Phase::Purchase,
        token_buy: None,
        request_buy: None,
        prior_sub: None,
        gate: Phase::Purchase,
    };
    assert_eq!(
        code(&run(&signer, &c, None).await),
        Some(("governance_revocation_stale", 14))
    );
    let jti = format!("{:?}-{:?}-{:?}", c.phase, c.token_buy, c.prior_sub);
    assert_eq!(
        code(&run(&signer, &c, Some(list(&[&jti]))).await),
        Some(("governance_token_revoked", 14))
    );
    // Refreshed 4 h ago, next_update 3 h ago: the interval is at its
    // 30-minute ceiling, so the grace ended an hour ago.
    let stale = GovernanceRevocations::new(
        RevocationList {
            next_update: NOW - 3 * 3600,
            ..list(&[]).list().clone()
        },
        NOW - 4 * 3600,
    );
    assert!(stale.is_stale(NOW));
    assert_eq!(
        code(&run(&signer, &c, Some(stale.clone())).await),
        Some(("governance_revocation_stale", 14))
    );
    // Intent tokens are still checked against a stale list, not blocked by it.
    let intent = Case {
        phase: Phase::Intent,
        token_buy: None,
        request_buy: None,
        prior_sub: None,
        gate: Phase::Intent,
    };
    assert_eq!(code(&run(&signer, &intent, Some(stale)).await), None);
    assert_eq!(code(&run(&signer, &intent, None).await), None);
}

#[tokio::test]
async fn a_list_of_another_issuer_governs_nothing_here() {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "gov-bind").unwrap();
    let c = Case {
        phase: Phase::Purchase,
        token_buy: None,
        request_buy: None,
        prior_sub: None,
        gate: Phase::Purchase,
    };
    let jti = format!("{:?}-{:?}-{:?}", c.phase, c.token_buy, c.prior_sub);
    let mut other = list(&[&jti]).list().clone();
    other.issuer = Some("https://other-gov.example.com".into());
    // Not this issuer's list: neither its revocations nor its freshness count.
    assert_eq!(
        code(&run(&signer, &c, Some(GovernanceRevocations::new(other, NOW - 60))).await),
        Some(("governance_revocation_stale", 14))
    );
}
