//! Capability priming: once per agent within the TTL, again after it, a
//! refresh and one signed retry on `request_signature_required`, and no
//! priming for a supplied capability.

use crate::client_seller::{buyer_key, capabilities, start, TestClock};
use adcp_request::{Counterparty, SigningClient, SigningReason, TargetPolicy};
use adcp_verify::request_policy::{Binding, VerifierCapability};
use adcp_verify::Profile;
use serde_json::json;
use std::time::Duration;

fn required() -> serde_json::Value {
    json!({"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]})
}

#[tokio::test]
async fn primes_once_per_agent_within_the_ttl_and_again_after_it() {
    let key = buyer_key();
    let jwks = key.jwks().unwrap().to_public_json();
    let clock = TestClock::default();
    let a = start(
        Binding::JsonRpc,
        Profile::request_v3_2(),
        required(),
        vec![capabilities(required())],
        &jwks,
        clock.clone(),
    )
    .await;
    let b = start(
        Binding::JsonRpc,
        Profile::request_v3_2(),
        required(),
        vec![capabilities(required())],
        &jwks,
        clock.clone(),
    )
    .await;
    let client = SigningClient::builder(key)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .clock(clock.clone())
        .capability_ttl(Duration::from_secs(120))
        .build()
        .unwrap();
    let (to_a, to_b) = (Counterparty::mcp(&a.base), Counterparty::mcp(&b.base));
    for _ in 0..3 {
        assert_eq!(
            client
                .call(&to_a, "create_media_buy", &json!({}))
                .await
                .unwrap()
                .status(),
            200
        );
        assert_eq!(
            client.call(&to_a, "get_products", &json!({})).await.unwrap().status(),
            200
        );
    }
    assert_eq!(
        client.call(&to_b, "get_products", &json!({})).await.unwrap().status(),
        200
    );
    assert_eq!((a.primings(), b.primings()), (1, 1));

    clock.advance(119);
    client.call(&to_a, "get_products", &json!({})).await.unwrap();
    assert_eq!(a.primings(), 1, "still within the TTL");
    clock.advance(1);
    let response = client.call(&to_a, "create_media_buy", &json!({})).await.unwrap();
    assert_eq!(response.status(), 200, "{:?}", a.seen());
    assert_eq!(a.primings(), 2, "primed again after the TTL");
    assert_eq!(b.primings(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_calls_prime_once() {
    let key = buyer_key();
    let jwks = key.jwks().unwrap().to_public_json();
    let clock = TestClock::default();
    let seller = start(
        Binding::JsonRpc,
        Profile::request_v3_2(),
        required(),
        vec![capabilities(required())],
        &jwks,
        clock.clone(),
    )
    .await;
    let client = SigningClient::builder(key)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .clock(clock)
        .build()
        .unwrap();
    let to = Counterparty::mcp(&seller.base);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (client, to) = (client.clone(), to.clone());
            tokio::spawn(async move { client.call(&to, "create_media_buy", &json!({})).await })
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.await.unwrap().unwrap().status(), 200);
    }
    assert_eq!(seller.primings(), 1);
}

#[tokio::test]
async fn a_signature_required_challenge_refreshes_the_capability_and_retries_once_signed() {
    let key = buyer_key();
    let jwks = key.jwks().unwrap().to_public_json();
    let clock = TestClock::default();
    // The seller advertised no signing when first primed, then started
    // requiring it for create_media_buy.
    let seller = start(
        Binding::JsonRpc,
        Profile::request_v3_2(),
        required(),
        vec![capabilities(json!({"supported": false})), capabilities(required())],
        &jwks,
        clock.clone(),
    )
    .await;
    let client = SigningClient::builder(key)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .clock(clock)
        .build()
        .unwrap();
    let to = Counterparty::mcp(&seller.base);
    let body = json!({"plan_id": "p1"});
    let response = client.call(&to, "create_media_buy", &body).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.attempts(), 2);
    assert!(response.decision().signed);
    assert_eq!(response.decision().reason, SigningReason::RequiredFor);
    assert_eq!(seller.primings(), 2, "refreshed after the challenge");
    let seen = seller.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[0].signed(), seen[0].error.as_deref()),
        (false, Some("request_signature_required"))
    );
    assert!(seen[1].signed() && seen[1].error.is_none());
    // The same bytes both times (serialized once).
    assert_eq!(seen[0].body, seen[1].body);

    // The refreshed capability is cached: the next call is signed at once.
    let response = client.call(&to, "create_media_buy", &body).await.unwrap();
    assert_eq!((response.status().as_u16(), response.attempts()), (200, 1));
    assert_eq!(seller.primings(), 2);
}

#[tokio::test]
async fn a_refused_signature_is_not_retried_and_each_attempt_has_a_fresh_nonce() {
    let key = buyer_key();
    let clock = TestClock::default();
    // The seller knows a different key under the same kid: every signature is refused.
    let other = buyer_key().jwks().unwrap().to_public_json();
    let seller = start(
        Binding::JsonRpc,
        Profile::request_v3_2(),
        required(),
        vec![capabilities(required())],
        &other,
        clock.clone(),
    )
    .await;
    let client = SigningClient::builder(key)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .clock(clock)
        .build()
        .unwrap();
    let to = Counterparty::mcp(&seller.base);
    let response = client.call(&to, "create_media_buy", &json!({})).await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.attempts(), 1, "a refused signature is never retried unsigned");
    assert_eq!(response.signature_error().as_deref(), Some("request_signature_invalid"));

    // Retries (new calls here, and the challenge retry below) re-sign.
    client.call(&to, "create_media_buy", &json!({})).await.unwrap();
    let stale = to.clone().with_capability(VerifierCapability::unsupported());
    let response = client.call(&stale, "create_media_buy", &json!({})).await.unwrap();
    assert_eq!(response.attempts(), 2);
    let nonces: Vec<String> = seller.seen().iter().filter_map(|s| s.nonce()).collect();
    assert_eq!(nonces.len(), 3, "{:?}", seller.seen());
    let unique: std::collections::BTreeSet<_> = nonces.iter().collect();
    assert_eq!(unique.len(), 3, "{nonces:?}");
}

#[tokio::test]
async fn a_supplied_capability_is_never_primed() {
    let key = buyer_key();
    let jwks = key.jwks().unwrap().to_public_json();
    let clock = TestClock::default();
    let seller = start(
        Binding::JsonRpc,
        Profile::request_v3_2(),
        required(),
        vec![capabilities(required())],
        &jwks,
        clock.clone(),
    )
    .await;
    let client = SigningClient::builder(key)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .clock(clock)
        .build()
        .unwrap();
    let to = Counterparty::mcp(&seller.base).with_capability(VerifierCapability::from_json(&required()).unwrap());
    let response = client.call(&to, "create_media_buy", &json!({})).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.decision().signed);
    assert_eq!(seller.primings(), 0);
    assert!(client
        .capability_cache()
        .get(to.url(), adcp_verify::Clock::now(&adcp_verify::SystemClock))
        .is_none());
}
