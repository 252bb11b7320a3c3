//! What the client signs, and how: per list, per profile, per digest
//! policy, and nothing when the counterparty does not support signing.

use crate::client_seller::{buyer_key, capabilities, start, Seller, TestClock};
use adcp_request::{Counterparty, SigningClient, SigningReason, SigningVersion, TargetPolicy};
use adcp_verify::request_policy::Binding;
use adcp_verify::{DigestCoverage, Profile};
use serde_json::{json, Value};

fn client(key: adcp_sign::SoftwareSigner, clock: &TestClock) -> SigningClient {
    SigningClient::builder(key)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// A seller (MCP) enforcing and advertising `block` under `profile`, and a
/// client with the matching key.
async fn setup(profile: Profile, block: Value) -> (Seller, SigningClient) {
    let key = buyer_key();
    let jwks = key.jwks().unwrap().to_public_json();
    let clock = TestClock::default();
    let seller = start(
        Binding::JsonRpc,
        profile,
        block.clone(),
        vec![capabilities(block)],
        &jwks,
        clock.clone(),
    )
    .await;
    (seller, client(key, &clock))
}

fn required(op: &str) -> Value {
    json!({"supported": true, "covers_content_digest": "required", "required_for": [op]})
}

/// The `sf-binary` token of `Signature` (between the colons).
fn signature_token(value: &str) -> &str {
    value.trim_start_matches("sig1=:").trim_end_matches(':')
}

#[tokio::test]
async fn a_required_call_is_signed_and_accepted_and_an_unsigned_one_would_not_be() {
    let (seller, client) = setup(Profile::request_v3_2(), required("create_media_buy")).await;
    let mcp = Counterparty::mcp(format!("{}/mcp", seller.base));
    let response = client
        .call(
            &mcp,
            "create_media_buy",
            &json!({"plan_id": "p1", "idempotency_key": "k-000000000001"}),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{:?}", seller.seen());
    assert!(response.decision().signed);
    assert_eq!(response.decision().reason, SigningReason::RequiredFor);
    assert_eq!(
        response.result().unwrap(),
        json!({"operation": "create_media_buy", "signed": true})
    );
    let seen = seller.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].signed());

    // A supplied capability that (wrongly) says unsupported: the first
    // attempt goes unsigned and is refused with request_signature_required.
    let stale = mcp
        .clone()
        .with_capability(adcp_verify::request_policy::VerifierCapability::unsupported());
    let response = client.call(&stale, "create_media_buy", &json!({})).await.unwrap();
    // The challenge makes it retry signed; the supplied capability is kept.
    assert_eq!(response.attempts(), 2);
    assert_eq!(response.decision().reason, SigningReason::Challenged);
    assert_eq!(response.status(), 200);
    let seen = seller.seen();
    assert_eq!(seen[1].error.as_deref(), Some("request_signature_required"));
    assert!(!seen[1].signed() && seen[2].signed());
}

#[tokio::test]
async fn encoding_follows_the_configured_version() {
    // 3.2: RFC 8941 Base64 (64-byte Ed25519 signature: 88 chars, padded).
    let (seller, client) = setup(Profile::request_v3_2(), required("create_media_buy")).await;
    let mcp = Counterparty::mcp(&seller.base);
    let response = client.call(&mcp, "create_media_buy", &json!({})).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.decision().version, SigningVersion::V3_2);
    let seen = seller.seen();
    let token = signature_token(seen[0].signature.as_deref().unwrap());
    assert_eq!(token.len(), 88, "{token}");
    assert!(token.ends_with("=="), "{token}");
    assert!(!token.contains(['-', '_']), "{token}");
    assert!(seen[0].content_digest.as_deref().unwrap().ends_with("=:"));

    // The same 3.2 client against a legacy seller: refused (a 3.2 token is
    // not base64url), and never retried.
    let legacy_block =
        json!({"supported": true, "covers_content_digest": "either", "required_for": ["create_media_buy"]});
    let (legacy_seller, client) = setup(Profile::request_legacy(DigestCoverage::Either), legacy_block).await;
    let as_3_2 = Counterparty::mcp(&legacy_seller.base);
    let response = client.call(&as_3_2, "create_media_buy", &json!({})).await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.attempts(), 1);
    assert!(response.signature_error().is_some());

    // Configured as legacy: unpadded base64url, accepted.
    let legacy = Counterparty::mcp(&legacy_seller.base).with_version(SigningVersion::Legacy);
    let response = client.call(&legacy, "create_media_buy", &json!({})).await.unwrap();
    assert_eq!(response.status(), 200, "{:?}", legacy_seller.seen());
    assert_eq!(response.decision().version, SigningVersion::Legacy);
    let seen = legacy_seller.seen();
    let token = signature_token(seen[1].signature.as_deref().unwrap());
    assert_eq!(token.len(), 86, "{token}");
    assert!(!token.contains(['=', '+', '/']), "{token}");
}

#[tokio::test]
async fn content_digest_is_covered_unless_forbidden() {
    // Legacy `forbidden`: no Content-Digest, not covered, accepted.
    let block = json!({"supported": true, "covers_content_digest": "forbidden", "required_for": ["create_media_buy"]});
    let (seller, client) = setup(Profile::request_legacy(DigestCoverage::Forbidden), block).await;
    let legacy = Counterparty::mcp(&seller.base).with_version(SigningVersion::Legacy);
    let response = client
        .call(&legacy, "create_media_buy", &json!({"x": 1}))
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{:?}", seller.seen());
    assert!(response.decision().signed && !response.decision().covers_content_digest);
    let seen = seller.seen();
    assert!(seen[0].content_digest.is_none());
    assert!(!seen[0].signature_input.as_deref().unwrap().contains("content-digest"));

    // Legacy `either`: covered.
    let block = json!({"supported": true, "covers_content_digest": "either", "required_for": ["create_media_buy"]});
    let (seller, client) = setup(Profile::request_legacy(DigestCoverage::Either), block).await;
    let legacy = Counterparty::mcp(&seller.base).with_version(SigningVersion::Legacy);
    let response = client
        .call(&legacy, "create_media_buy", &json!({"x": 1}))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.decision().covers_content_digest);
    assert!(seller.seen()[0]
        .signature_input
        .as_deref()
        .unwrap()
        .contains("\"content-digest\""));

    // 3.2 `required`: covered.
    let (seller, client) = setup(Profile::request_v3_2(), required("create_media_buy")).await;
    let response = client
        .call(&Counterparty::mcp(&seller.base), "create_media_buy", &json!({}))
        .await
        .unwrap();
    assert!(response.decision().covers_content_digest);
    assert!(seller.seen()[0]
        .signature_input
        .as_deref()
        .unwrap()
        .contains("\"content-digest\""));

    // A 3.2 client never drops the binding for a `forbidden` advertisement.
    let forbidden = adcp_verify::request_policy::VerifierCapability::from_json(
        &json!({"supported": true, "covers_content_digest": "forbidden"}),
    )
    .unwrap();
    let err = client
        .call(
            &Counterparty::mcp(&seller.base).with_capability(forbidden),
            "create_media_buy",
            &json!({}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "capability_incompatible");
    assert_eq!(seller.seen().len(), 1, "nothing sent");
}

#[tokio::test]
async fn lists_decide_what_is_signed() {
    let block = json!({"supported": true, "covers_content_digest": "required",
        "required_for": ["create_media_buy"], "warn_for": ["update_media_buy"], "supported_for": ["sync_creatives"],
        "protocol_methods_supported_for": ["tasks/get"]});
    let (seller, client) = setup(Profile::request_v3_2(), block).await;
    let mcp = Counterparty::mcp(&seller.base);
    let mut reasons = Vec::new();
    for op in ["create_media_buy", "update_media_buy", "sync_creatives", "get_products"] {
        let response = client.call(&mcp, op, &json!({})).await.unwrap();
        assert_eq!(response.status(), 200, "{op}");
        reasons.push((response.decision().signed, response.decision().reason));
    }
    let response = client
        .call_method(&mcp, "tasks/get", &json!({"id": "t1"}))
        .await
        .unwrap();
    reasons.push((response.decision().signed, response.decision().reason));
    assert_eq!(
        reasons,
        [
            (true, SigningReason::RequiredFor),
            (true, SigningReason::WarnFor),
            (true, SigningReason::SupportedFor),
            (true, SigningReason::Unlisted),
            (true, SigningReason::SupportedFor),
        ]
    );
    let seen = seller.seen();
    assert!(seen.iter().all(|s| s.signed() && s.error.is_none()), "{seen:?}");
    assert_eq!(seen[4].protocol_method.as_deref(), Some("tasks/get"));

    // With unlisted signing off, the unlisted call goes unsigned (and is accepted).
    let key = buyer_key();
    let picky = SigningClient::builder(key)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .sign_unlisted(false)
        .build()
        .unwrap();
    let response = picky.call(&mcp, "get_products", &json!({})).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        (response.decision().signed, response.decision().reason),
        (false, SigningReason::UnlistedNotSigned)
    );
    assert!(!seller.seen().last().unwrap().signed());
}

#[tokio::test]
async fn a_counterparty_without_lists_gets_everything_signed_and_one_without_support_nothing() {
    let (seller, client) = setup(
        Profile::request_v3_2(),
        json!({"supported": true, "covers_content_digest": "required"}),
    )
    .await;
    let response = client
        .call(&Counterparty::mcp(&seller.base), "get_products", &json!({}))
        .await
        .unwrap();
    assert_eq!(
        (response.decision().signed, response.decision().reason),
        (true, SigningReason::NoListsAdvertised)
    );
    assert!(seller.seen()[0].signed());

    let (seller, client) = setup(Profile::request_v3_2(), json!({"supported": false})).await;
    for op in ["create_media_buy", "get_products"] {
        let response = client
            .call(&Counterparty::mcp(&seller.base), op, &json!({}))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            (response.decision().signed, response.decision().reason),
            (false, SigningReason::Unsupported)
        );
    }
    assert!(seller.seen().iter().all(|s| !s.signed()));
    assert_eq!(seller.primings(), 1);
}
