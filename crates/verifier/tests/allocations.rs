//! A warm verifier accepts a webhook with a bounded, small number of heap
//! allocations (the hot path of every receiver; allocator traffic is a
//! measurable share of the non-crypto time).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_test_support::{allocations_during, CountingAllocator};
use adcp_verify::clock::FixedClock;
use adcp_verify::keys::StaticKeyResolver;
use adcp_verify::profile::Profile;
use adcp_verify::replay::MemoryReplayStore;
use adcp_verify::verifier::Verifier;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The most allocations one warm webhook verification may make.
const BUDGET: usize = 40;

fn run_now<F: Future>(f: F) -> F::Output {
    match pin!(f).as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("in-memory verification must not wait"),
    }
}

#[test]
fn a_warm_webhook_verification_stays_within_its_allocation_budget() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else { return };
    let doc = adcp_vectors::load_json(&suite, "webhook-signing/positive/001-basic-post.json").unwrap();
    let req = adcp_vectors::VectorRequest::from_json(&doc["request"]).unwrap();
    let keys = adcp_vectors::load_json(&suite, "webhook-signing/keys.json").unwrap();
    let jwk = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == doc["jwks_ref"][0])
        .unwrap()
        .clone();
    let key: SigningKey = Jwk::from_json_value(&jwk)
        .unwrap()
        .with_test_private_member("_private_d_for_test_only")
        .unwrap()
        .signing_key()
        .unwrap();
    let input = &req.headers.iter().find(|(n, _)| n == "Signature-Input").unwrap().1;
    let old_nonce = SignatureInput::parse(input.as_bytes())
        .unwrap()
        .require("sig1")
        .unwrap()
        .nonce()
        .unwrap()
        .to_owned();
    let body = req.body.clone().unwrap_or_default();
    let canonical = adcp_canon::canonicalize_received(&req.url).unwrap();
    let opts = BaseOptions {
        target_uri: Some(canonical.as_str()),
        authority: Some(canonical.authority()),
        ..BaseOptions::default()
    };
    // Two requests with their own nonces: one to warm the verifier, one to count.
    let requests: Vec<Vec<(String, String)>> = (0u8..2)
        .map(|i| {
            let nonce = BinaryEncoding::Base64UrlUnpadded.encode(&[i + 1; 16]);
            let mut headers: Vec<(String, String)> = req
                .headers
                .iter()
                .filter(|(n, _)| n != "Signature-Input" && n != "Signature")
                .cloned()
                .collect();
            headers.push(("Signature-Input".into(), input.replace(&old_nonce, &nonce)));
            let msg = message(&req.url, &headers, &body);
            let params = SignatureInput::from_message(&msg).unwrap().unwrap();
            let base = signature_base(&msg, params.require("sig1").unwrap(), &opts).unwrap();
            let sig = key.sign(base.as_bytes()).unwrap();
            headers.push((
                "Signature".into(),
                format!("sig1=:{}:", BinaryEncoding::Base64UrlUnpadded.encode(sig.as_bytes())),
            ));
            headers
        })
        .collect();
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&serde_json::json!({ "keys": [jwk] }), "https://seller.example/agent"),
        MemoryReplayStore::webhook(),
        FixedClock(doc["reference_now"].as_i64().unwrap()),
    );
    run_now(verifier.verify(&message(&req.url, &requests[0], &body))).unwrap();

    let msg = message(&req.url, &requests[1], &body);
    let mut outcome = None;
    let count = allocations_during(|| outcome = Some(run_now(verifier.verify(&msg))));
    outcome.unwrap().unwrap();
    println!("allocations per warm verification: {count}");
    assert!(count <= BUDGET, "{count} allocations (budget {BUDGET})");
}

fn message<'a>(url: &'a str, headers: &'a [(String, String)], body: &'a str) -> Message<'a> {
    let mut msg = Message::request("POST", url);
    for (n, v) in headers {
        msg.push_header(n.as_str(), v.as_str());
    }
    msg.with_body(body.as_bytes())
}
