//! Per request, the seller's request-verifier layer against the verifier
//! alone, side by side in one run:
//!
//! - `verifier_only`: on a prebuilt `Message`, the request gate
//!   (`decide`), the checklist (`Verifier::verify`, Ed25519) and the verdict
//!   (`VerifyPlan::conclude`) — the work no seller can skip;
//! - `layer`: the full tower call through `RequestVerifierLayer` around a
//!   trivial inner service: body collection under the limit, the
//!   verifier's view of the request (target URI, header lines), operation
//!   resolution, the authenticator hook, the same gate and checklist, the
//!   `RequestAuth` extension, the inner call.
//!
//! Both verify the same kind of request: a signed MCP `tools/call` of
//! `create_media_buy` (in `required_for`), each with its own nonce, signed
//! up front outside the measurement, against their own in-memory replay
//! stores. One criterion iteration is one request. The ratio (target
//! ≤ 1.05) is printed at the end from criterion's estimates of this run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench setup: failing loudly is the point

use adcp_request::{RequestVerifier, RequestVerifierLayer};
use adcp_sigbase::{Message, SystemClock};
use adcp_sign::{Algorithm, Body, HttpSigner, SoftwareSigner, UnsignedRequest};
use adcp_verify::request_policy::{decide, Binding, Decision, FallbackCredential, VerifierCapability};
use adcp_verify::{DigestCoverage, MemoryReplayStore, Profile, StaticKeyResolver, Verifier};
use bytes::Bytes;
use criterion::{Criterion, Throughput};
use http_body_util::Full;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::{Layer, Service, ServiceExt};

const GROUP: &str = "seller_layer";
const AGENT: &str = "https://buyer.example/";
const URL: &str = "https://seller.example.com/mcp";

fn capability() -> VerifierCapability {
    VerifierCapability::builder(DigestCoverage::Required)
        .required_for(["create_media_buy"])
        .supported_for(["create_media_buy", "get_products"])
        .build()
        .unwrap()
}

/// `n` distinct signed requests as a server receives them (origin-form
/// target, `Host`).
async fn sign_pool(signer: &HttpSigner<SoftwareSigner>, n: u64, seq: &AtomicU64) -> Vec<http::Request<Bytes>> {
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let i = seq.fetch_add(1, Ordering::Relaxed);
        let call = serde_json::json!({
            "jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "create_media_buy", "arguments": {
                "idempotency_key": format!("bench-{i:012}"), "buyer_ref": "bench",
                "packages": [{"product_id": "prod_1", "budget": 5000, "pricing_option_id": "cpm_usd"}],
                "start_time": "2026-06-01T00:00:00Z", "end_time": "2026-06-30T23:59:59Z"
            }}
        });
        let body = Body::json(&call).unwrap();
        let signed = signer.sign(&UnsignedRequest::post(URL, &body)).await.unwrap();
        let mut request = signed.to_http().unwrap().map(Bytes::from);
        *request.uri_mut() = "/mcp".parse().unwrap();
        request
            .headers_mut()
            .insert(http::header::HOST, "seller.example.com".parse().unwrap());
        out.push(request);
    }
    out
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "bench-buyer").unwrap();
    let jwks = key.jwks().unwrap().to_public_json();
    let signer = HttpSigner::request(key).unwrap();
    let seq = AtomicU64::new(0);

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let mut group = criterion.benchmark_group(GROUP);
    group.throughput(Throughput::Elements(1));

    let capability = capability();
    let verifier = Verifier::new(
        Profile::request_v3_2(),
        StaticKeyResolver::new().with_jwks(&jwks, AGENT),
        MemoryReplayStore::request(),
        SystemClock,
    );
    group.bench_function("verifier_only", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let pool = sign_pool(&signer, iters, &seq).await;
                let messages: Vec<Message<'_>> = pool
                    .iter()
                    .map(|r| Message::from_http(r).with_target_uri(URL))
                    .collect();
                let started = Instant::now();
                for msg in &messages {
                    let Decision::Verify(plan) = decide(&capability, Binding::JsonRpc, msg, FallbackCredential::Absent)
                    else {
                        panic!("a signed request is verified")
                    };
                    let verdict = plan.conclude(verifier.verify(msg).await);
                    assert!(verdict.verified_signer().is_some());
                    std::hint::black_box(verdict);
                }
                started.elapsed()
            })
        });
    });

    let seller = RequestVerifier::builder(
        Arc::new(StaticKeyResolver::new().with_jwks(&jwks, AGENT)),
        Arc::new(MemoryReplayStore::request()),
        capability.clone(),
    )
    .build()
    .unwrap();
    let inner = tower::service_fn(|request: http::Request<Full<Bytes>>| async move {
        std::hint::black_box(request.extensions().get::<adcp_request::RequestAuth>());
        Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::new())))
    });
    let service = RequestVerifierLayer::new(seller).layer(inner);
    group.bench_function("layer", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let pool: Vec<http::Request<Full<Bytes>>> = sign_pool(&signer, iters, &seq)
                    .await
                    .into_iter()
                    .map(|r| r.map(Full::new))
                    .collect();
                let mut service = service.clone();
                let started = Instant::now();
                for request in pool {
                    let ready = ServiceExt::<http::Request<Full<Bytes>>>::ready(&mut service)
                        .await
                        .unwrap();
                    let response = ready.call(request).await.unwrap();
                    assert_eq!(response.status(), 200);
                    std::hint::black_box(response);
                }
                started.elapsed()
            })
        });
    });
    group.finish();
    criterion.final_summary();

    let start = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let ns = |name: &str| adcp_test_support::criterion_mean_ns(start, &format!("{GROUP}/{name}"));
    if let (Some(verify), Some(layer)) = (ns("verifier_only"), ns("layer")) {
        println!(
            "\nper request: verifier alone (decide + verify + conclude) {:.1} µs, layer (full tower call) {:.1} µs, ratio {:.3} (target <= 1.05)",
            verify / 1e3,
            layer / 1e3,
            layer / verify
        );
    }
}
