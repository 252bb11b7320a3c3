//! Building the base for a five-component webhook takes a handful of
//! allocations (the output buffer and one scratch string), whatever the
//! header sizes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_test_support::{allocations_during, CountingAllocator};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

#[test]
fn five_component_webhook_base_needs_a_handful_of_allocations() {
    let input = concat!(
        r#"sig1=("@method" "@target-uri" "@authority" "content-type" "content-digest");created=1776520800;"#,
        r#"expires=1776521100;nonce="KXYnfEfJ0PBRZXQyVXfVQA";keyid="test-ed25519-webhook-2026";alg="ed25519";"#,
        r#"tag="adcp/webhook-signing/v1""#
    );
    let body = br#"{"idempotency_key":"whk_01","task_id":"task_456","status":"completed"}"#;
    let msg = Message::request(
        "POST",
        "https://buyer.example.com/adcp/webhook/create_media_buy/agent_123/op_abc",
    )
    .with_header("Content-Type", "application/json")
    .with_header(
        "Content-Digest",
        "sha-256=:dJ2koiIMZIhdGE7tidErCHV13FFvOIowCcXDiwyG54I=:",
    )
    .with_header("Signature-Input", input)
    .with_body(&body[..]);
    let params = SignatureInput::from_message(&msg).unwrap().unwrap();
    let params = params.require("sig1").unwrap();
    let opts = BaseOptions {
        target_uri: Some("https://buyer.example.com/adcp/webhook/create_media_buy/agent_123/op_abc"),
        authority: Some("buyer.example.com"),
        ..BaseOptions::default()
    };
    let _ = signature_base(&msg, params, &opts).unwrap();

    let mut base = None;
    let n = allocations_during(|| base = Some(signature_base(&msg, params, &opts).unwrap()));
    let base = base.unwrap();
    assert!(base.as_bytes().starts_with(b"\"@method\": POST\n"));
    assert!(n <= 3, "{n} allocations to build the base");
}
