//! Configuration: the profile is trusted configuration checked against the
//! advertised capability, and the target URI comes from the connection
//! (HTTP/2 `:authority`) as well as from `Host`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::common::{received, send, tools_call, Buyer, NOW};
use adcp_request::{BuildError, RequestVerifier};
use adcp_verify::request_policy::VerifierCapability;
use adcp_verify::{DigestCoverage, FixedClock, MemoryReplayStore, Profile, StaticKeyResolver};
use serde_json::json;
use std::sync::Arc;

fn build(capability: VerifierCapability) -> adcp_request::RequestVerifierBuilder {
    RequestVerifier::builder(
        Arc::new(StaticKeyResolver::new()),
        Arc::new(MemoryReplayStore::request()),
        capability,
    )
}

#[test]
fn the_profile_must_match_the_advertised_digest_policy() {
    let legacy = VerifierCapability::builder(DigestCoverage::Either).build().unwrap();
    // A 3.2 endpoint (the default) cannot advertise a legacy posture ...
    assert!(matches!(build(legacy.clone()).build(), Err(BuildError::Capability(_))));
    // ... a legacy endpoint must be configured explicitly, with its own policy.
    let verifier = build(legacy.clone())
        .profile(Profile::request_legacy(DigestCoverage::Either))
        .build()
        .unwrap();
    assert_eq!(verifier.profile().name(), "request-legacy");
    assert!(matches!(
        build(legacy)
            .profile(Profile::request_legacy(DigestCoverage::Forbidden))
            .build(),
        Err(BuildError::Capability(_))
    ));

    let strict = VerifierCapability::builder(DigestCoverage::Required).build().unwrap();
    assert_eq!(
        build(strict.clone()).profile(Profile::webhook_v1()).build().err(),
        Some(BuildError::WebhookProfile)
    );
    assert_eq!(
        build(strict.clone()).scheme("ftp").build().err(),
        Some(BuildError::InvalidScheme)
    );
    assert_eq!(
        build(strict.clone()).max_body_bytes(0).build().err(),
        Some(BuildError::InvalidBodyLimit)
    );
    assert_eq!(
        build(strict.clone()).public_base_url("https://h/p?q").build().err(),
        Some(BuildError::InvalidBaseUrl)
    );
    // Signing unsupported: any request profile, nothing gated.
    assert!(build(VerifierCapability::unsupported()).build().is_ok());
}

#[tokio::test]
async fn http2_authority_is_the_received_authority() {
    let buyer = Buyer::new();
    let verifier = RequestVerifier::builder(
        Arc::new(buyer.keys.clone()),
        Arc::new(MemoryReplayStore::request()),
        VerifierCapability::builder(DigestCoverage::Required)
            .required_for(["create_media_buy"])
            .build()
            .unwrap(),
    )
    .clock(Arc::new(FixedClock(NOW)))
    .build()
    .unwrap();
    let body = tools_call("create_media_buy", json!({"idempotency_key": "h2-1"}));

    // HTTP/2: the authority arrives as :authority (in the URI), no Host.
    let signed = buyer.sign("https://seller.example.com/mcp", &body).await;
    let (mut parts, b) = received(&signed).into_parts();
    parts.version = http::Version::HTTP_2;
    parts.uri = "https://seller.example.com/mcp".parse().unwrap();
    parts.headers.remove(http::header::HOST);
    let a = send(&verifier, http::Request::from_parts(parts, b)).await;
    assert!(a.reached_handler(), "{a:?}");

    // :authority and a diverging Host: a cross-vhost replay attempt.
    let signed = buyer.sign("https://seller.example.com/mcp", &body).await;
    let (mut parts, b) = received(&signed).into_parts();
    parts.version = http::Version::HTTP_2;
    parts.uri = "https://seller.example.com/mcp".parse().unwrap();
    parts
        .headers
        .insert(http::header::HOST, "other.example.com".parse().unwrap());
    send(&verifier, http::Request::from_parts(parts, b))
        .await
        .assert_rejected_with("request_target_uri_malformed", ":authority vs Host");
}
