//! The full webhook checklist (in-memory resolver, fresh replay store per
//! iteration so every nonce is fresh) against a bare verification of the
//! same base with the same backend, side by side in the same run.
//! Targets: Ed25519 ≤ 1.10× bare ed25519-dalek; ES256 ≤ 1.10× bare aws-lc-rs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench setup: failing loudly is the point

use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::Message;
use adcp_verify::clock::FixedClock;
use adcp_verify::keys::StaticKeyResolver;
use adcp_verify::profile::Profile;
use adcp_verify::replay::MemoryReplayStore;
use adcp_verify::verifier::Verifier;
use base64::Engine as _;
use criterion::{black_box, BatchSize, Criterion};
use std::future::Future;
use std::path::Path;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

const GROUP: &str = "webhook_checklist";

/// Every future here completes without waiting (in-memory stores).
fn run_now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("in-memory verification must not wait"),
    }
}

struct Case {
    url: String,
    headers: Vec<(String, String)>,
    body: String,
    now: i64,
    jwks: serde_json::Value,
    base: String,
    signature: Vec<u8>,
    jwk: serde_json::Value,
}

fn load(vector: &str) -> Case {
    let suite = adcp_vectors::dir().expect("conformance vectors not found");
    let doc = adcp_vectors::load_json(&suite, vector).unwrap();
    let req = adcp_vectors::VectorRequest::from_json(&doc["request"]).unwrap();
    let keys = adcp_vectors::load_json(&suite, "webhook-signing/keys.json").unwrap();
    let kid = doc["jwks_ref"][0].as_str().unwrap();
    let jwk = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == kid)
        .unwrap()
        .clone();
    let sig_header = req.headers.iter().find(|(n, _)| n == "Signature").unwrap().1.clone();
    let token = sig_header.trim_start_matches("sig1=:").trim_end_matches(':');
    Case {
        url: req.url,
        headers: req.headers,
        body: req.body.unwrap_or_default(),
        now: doc["reference_now"].as_i64().unwrap(),
        jwks: serde_json::json!({ "keys": [jwk.clone()] }),
        base: doc["expected_signature_base"].as_str().unwrap().to_owned(),
        signature: BinaryEncoding::Base64UrlUnpadded.decode(token).unwrap(),
        jwk,
    }
}

fn b64url(v: &serde_json::Value) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(v.as_str().unwrap())
        .unwrap()
}

/// The ratio measured robustly on a shared machine: alternating short
/// batches of the checklist and of the bare verification, so load changes
/// hit both sides alike; the median of the per-round ratios.
fn interleaved_ratio(case: &Case, resolver: &StaticKeyResolver, bare: &dyn Fn() -> bool) -> f64 {
    const ROUNDS: usize = 60;
    const BATCH: usize = 32;
    let mut ratios = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let verifiers: Vec<_> = (0..BATCH)
            .map(|_| {
                Verifier::new(
                    Profile::webhook_v1(),
                    resolver.clone(),
                    MemoryReplayStore::webhook(),
                    FixedClock(case.now),
                )
            })
            .collect();
        let start = std::time::Instant::now();
        for verifier in &verifiers {
            let mut msg = Message::request("POST", case.url.as_str());
            for (n, v) in &case.headers {
                msg.push_header(n.as_str(), v.as_str());
            }
            let msg = msg.with_body(case.body.as_bytes());
            black_box(run_now(verifier.verify(&msg)).is_ok());
        }
        let full = start.elapsed();
        let start = std::time::Instant::now();
        for _ in 0..BATCH {
            black_box(bare());
        }
        let base = start.elapsed();
        drop(verifiers);
        ratios.push(full.as_secs_f64() / base.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    ratios[ROUNDS / 2]
}

fn bench_case(c: &mut Criterion, name: &str, case: &Case, bare: &dyn Fn() -> bool) {
    let resolver = StaticKeyResolver::new().with_jwks(&case.jwks, "https://seller.example/agent");
    let mut group = c.benchmark_group(GROUP);
    group.bench_function(format!("{name}_bare"), |b| b.iter(|| black_box(bare())));
    group.bench_function(format!("{name}_checklist"), |b| {
        b.iter_batched(
            || {
                Verifier::new(
                    Profile::webhook_v1(),
                    resolver.clone(),
                    MemoryReplayStore::webhook(),
                    FixedClock(case.now),
                )
            },
            |verifier| {
                let mut msg = Message::request("POST", case.url.as_str());
                for (n, v) in &case.headers {
                    msg.push_header(n.as_str(), v.as_str());
                }
                let msg = msg.with_body(case.body.as_bytes());
                let ok = run_now(verifier.verify(&msg)).is_ok();
                // Returned, so the verifier (and its store) is dropped
                // outside the measurement.
                (black_box(ok), verifier)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
    println!(
        "{name}: interleaved median ratio full / bare = {:.3} (target <= 1.10)",
        interleaved_ratio(case, &resolver, bare)
    );
}

fn mean_ns(function: &str) -> Option<f64> {
    adcp_test_support::criterion_mean_ns(Path::new(env!("CARGO_MANIFEST_DIR")), &format!("{GROUP}/{function}"))
}

fn main() {
    let ed = load("webhook-signing/positive/001-basic-post.json");
    let es = load("webhook-signing/positive/002-es256-post.json");

    let ed_key = ed25519_dalek::VerifyingKey::from_bytes(&b64url(&ed.jwk["x"]).try_into().unwrap()).unwrap();
    let ed_sig = ed25519_dalek::Signature::from_slice(&ed.signature).unwrap();
    let ed_bare = || ed_key.verify_strict(ed.base.as_bytes(), &ed_sig).is_ok();
    assert!(ed_bare());

    let mut point = vec![4u8];
    point.extend(b64url(&es.jwk["x"]));
    point.extend(b64url(&es.jwk["y"]));
    let es_key = aws_lc_rs::signature::UnparsedPublicKey::new(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED, point);
    let es_bare = || es_key.verify(es.base.as_bytes(), &es.signature).is_ok();
    assert!(es_bare());

    let mut c = Criterion::default().configure_from_args();
    bench_case(&mut c, "ed25519", &ed, &ed_bare);
    bench_case(&mut c, "es256", &es, &es_bare);
    c.final_summary();

    {
        println!("\nfull checklist / bare verification (target <= 1.10):");
        for name in ["ed25519", "es256"] {
            if let (Some(full), Some(bare)) = (mean_ns(&format!("{name}_checklist")), mean_ns(&format!("{name}_bare")))
            {
                println!("  {name}: {:.3} ({full:.0} ns vs {bare:.0} ns)", full / bare);
            }
        }
    }
}
