//! The axum extractors behind the layer: `RequestAuth` (always present
//! behind the layer, `500` without it) and `VerifiedAgent` (`401` when the
//! request was accepted without a verified signature).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::common::{answer, received, tools_call, Answer, Buyer, NOW};
use adcp_request::{RequestAuth, RequestVerifier, RequestVerifierLayer, VerifiedAgent};
use adcp_verify::request_policy::{FallbackCredential, VerifierCapability};
use adcp_verify::{DigestCoverage, FixedClock, MemoryReplayStore};
use axum::routing::post;
use axum::Router;
use serde_json::json;
use std::sync::Arc;
use tower::ServiceExt;

async fn who(auth: RequestAuth) -> String {
    json!({"handler": true, "verified": auth.is_verified(), "operation": auth.operation()}).to_string()
}

async fn agent(agent: VerifiedAgent) -> String {
    json!({"handler": true, "agent": agent.agent_url(), "keyid": agent.keyid()}).to_string()
}

fn app(buyer: &Buyer) -> Router {
    let capability = VerifierCapability::builder(DigestCoverage::Required)
        .required_for(["create_media_buy"])
        .build()
        .unwrap();
    let verifier = RequestVerifier::builder(
        Arc::new(buyer.keys.clone()),
        Arc::new(MemoryReplayStore::request()),
        capability,
    )
    .clock(Arc::new(FixedClock(NOW)))
    .authenticator_fn(|parts, _| {
        if parts.headers.contains_key(http::header::AUTHORIZATION) {
            FallbackCredential::Valid
        } else {
            FallbackCredential::Absent
        }
    })
    .build()
    .unwrap();
    let layer = RequestVerifierLayer::new(verifier);
    Router::new()
        .route("/mcp", post(who))
        .route("/agent", post(agent))
        .route_layer(layer)
        .route("/unprotected", post(who))
}

async fn call(app: Router, request: http::Request<http_body_util::Full<bytes::Bytes>>) -> Answer {
    answer(app.oneshot(request).await.unwrap()).await
}

#[tokio::test]
async fn extractors_report_and_require_the_signer() {
    let buyer = Buyer::new();
    let body = tools_call("create_media_buy", json!({"idempotency_key": "x-1"}));

    // Signed, to a handler taking RequestAuth.
    let signed = buyer.sign("https://seller.example.com/mcp", &body).await;
    let a = call(app(&buyer), received(&signed)).await;
    assert!(a.reached_handler(), "{a:?}");
    assert_eq!(a.json["verified"], true);
    assert_eq!(a.json["operation"], "create_media_buy");

    // Signed, to a handler requiring a verified agent.
    let signed = buyer.sign("https://seller.example.com/agent", &body).await;
    let a = call(app(&buyer), received(&signed)).await;
    assert!(a.reached_handler(), "{a:?}");
    assert_eq!(a.json["agent"], crate::common::AGENT);
    assert_eq!(a.json["keyid"], "buyer-test-2026");

    // Unsigned with a bearer token: accepted by the layer, no identity.
    let mut unsigned = received(&signed);
    unsigned.headers_mut().remove("signature");
    unsigned.headers_mut().remove("signature-input");
    unsigned
        .headers_mut()
        .insert(http::header::AUTHORIZATION, "Bearer t".parse().unwrap());
    let (parts, b) = unsigned.into_parts();
    let mut to_mcp = http::Request::from_parts(parts.clone(), b.clone());
    *to_mcp.uri_mut() = "/mcp".parse().unwrap();
    let a = call(app(&buyer), to_mcp).await;
    assert!(a.reached_handler(), "{a:?}");
    assert_eq!(a.json["verified"], false);
    // ... and refused by the extractor that requires a signer.
    let a = call(app(&buyer), http::Request::from_parts(parts, b)).await;
    a.assert_rejected_with("request_signature_required", "VerifiedAgent without a signature");
}

#[tokio::test]
async fn without_the_layer_the_extractor_is_a_500() {
    let buyer = Buyer::new();
    let body = tools_call("get_products", json!({}));
    let signed = buyer.sign("https://seller.example.com/unprotected", &body).await;
    let a = call(app(&buyer), received(&signed)).await;
    assert_eq!(a.status, 500, "{a:?}");
    assert_eq!(a.code(), Some("request_verifier_layer_missing"));
    assert!(a.challenges.is_empty());
}
