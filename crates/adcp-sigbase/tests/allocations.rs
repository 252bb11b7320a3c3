//! Building the base for a five-component webhook takes a handful of
//! allocations (the output buffer and one scratch string), whatever the
//! header sizes.
//!
//! A binary of its own, not a module of `tests/it`: it installs
//! `CountingAllocator` as the `#[global_allocator]`, which is process-wide
//! (one per binary), so every test sharing the binary would run on it too.
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

/// The headers every signer sends: one `sig1` member each.
const SIG1_INPUT: &str = concat!(
    r#"sig1=("@method" "@target-uri" "@authority" "content-type" "content-digest");created=1776520800;"#,
    r#"expires=1776521100;nonce="KXYnfEfJ0PBRZXQyVXfVQA";keyid="test-ed25519-webhook-2026";alg="ed25519";"#,
    r#"tag="adcp/webhook-signing/v1""#
);
const SIG1_SIGNATURE: &str =
    "sig1=:nqTKCpjlqf1OqZPuJyPeiF7HJ01G8KmPNSzzmad0PAJv7OUVKthI7ks_j4G-6x1H4mBpXDIISgX_iZQiYvG7Dg:";

/// Parsing the single-`sig1` headers allocates what the parsed value
/// holds and nothing for the extra-label handling (the set-aside lists stay
/// empty and unallocated). The bounds are the counts measured before
/// extra labels were tolerated.
#[test]
fn single_sig1_headers_parse_without_extra_allocations() {
    use adcp_sigbase::Signatures;
    let _ = SignatureInput::parse(SIG1_INPUT.as_bytes()).unwrap();
    let mut input = None;
    let n = allocations_during(|| input = Some(SignatureInput::parse(SIG1_INPUT.as_bytes()).unwrap()));
    assert_eq!(input.unwrap().len(), 1);
    // Label, component list, parameter list, four string values, the
    // received serialization.
    assert!(n <= 8, "{n} allocations to parse Signature-Input");
    let mut sigs = None;
    let m = allocations_during(|| sigs = Some(Signatures::parse(SIG1_SIGNATURE.as_bytes()).unwrap()));
    assert!(sigs.unwrap().get("sig1").is_some());
    // Label and token.
    assert!(m <= 2, "{m} allocations to parse Signature");
}
