//! Parse + base construction for webhook vector 001 against one Ed25519
//! verification of the same base, side by side in the same run. Target:
//! parse + base < 10% of the verification.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench setup: failing loudly is the point

use adcp_sigbase::crypto::{Algorithm, VerifyingKey};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput, Signatures};
use base64::Engine as _;
use criterion::{black_box, Criterion};
use std::path::Path;

const GROUP: &str = "webhook_001";

struct Vector {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: String,
    key: VerifyingKey,
}

fn load() -> Vector {
    let suite = adcp_vectors::dir().expect("AdCP conformance vectors not found (set ADCP_VECTORS_DIR)");
    let doc = adcp_vectors::load_json(&suite, "webhook-signing/positive/001-basic-post.json").unwrap();
    let req = adcp_vectors::VectorRequest::from_json(&doc["request"]).unwrap();
    let keys = adcp_vectors::load_json(&suite, "webhook-signing/keys.json").unwrap();
    let jwk = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == "test-ed25519-webhook-2026")
        .unwrap();
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(jwk["x"].as_str().unwrap())
        .unwrap();
    Vector {
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: req.body.unwrap_or_default(),
        key: VerifyingKey::ed25519_from_bytes(&x).unwrap(),
    }
}

/// Everything a verifier does before the crypto: borrow the message,
/// canonicalize the target, parse both headers, decode the signature,
/// build the base.
fn parse_and_base(v: &Vector) -> (Vec<u8>, Vec<u8>) {
    let mut msg = Message::request(v.method.as_str(), v.url.as_str());
    for (name, value) in &v.headers {
        msg.push_header(name.as_str(), value.as_str());
    }
    let msg = msg.with_body(v.body.as_bytes());
    let target = adcp_canon::canonicalize_received(&v.url).unwrap();
    let input = SignatureInput::from_message(&msg).unwrap().unwrap();
    let params = input.require("sig1").unwrap();
    let sig = Signatures::from_message(&msg)
        .unwrap()
        .unwrap()
        .decode("sig1", BinaryEncoding::Base64UrlUnpadded)
        .unwrap();
    let opts = BaseOptions {
        target_uri: Some(target.as_str()),
        authority: Some(target.authority()),
        ..BaseOptions::default()
    };
    (signature_base(&msg, params, &opts).unwrap().into_bytes(), sig)
}

fn mean_ns(function: &str) -> Option<f64> {
    adcp_test_support::criterion_mean_ns(Path::new(env!("CARGO_MANIFEST_DIR")), &format!("{GROUP}/{function}"))
}

fn main() {
    let v = load();
    let (base, sig) = parse_and_base(&v);
    v.key
        .verify(Algorithm::Ed25519, &base, &sig)
        .expect("vector 001 must verify");

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group(GROUP);
    group.bench_function("parse_and_base", |b| {
        b.iter(|| black_box(parse_and_base(black_box(&v))))
    });
    group.bench_function("ed25519_verify", |b| {
        b.iter(|| {
            black_box(
                v.key
                    .verify(Algorithm::Ed25519, black_box(&base), black_box(&sig))
                    .is_ok(),
            )
        })
    });
    group.finish();
    c.final_summary();

    {
        if let (Some(p), Some(e)) = (mean_ns("parse_and_base"), mean_ns("ed25519_verify")) {
            println!(
                "\nparse+base / ed25519 verify = {:.3} ({p:.0} ns vs {e:.0} ns; target < 0.10)",
                p / e
            );
        }
    }
}
