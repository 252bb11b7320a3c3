//! Acceptance: interop. Our sender's webhooks verify with our receiver for
//! Ed25519 and ES256 (over loopback HTTP, and over TLS through the
//! production SSRF path with a pinned resolver), and every positive
//! webhook-signing conformance vector, replayed byte for byte as a live
//! HTTP request with the clock pinned at its `reference_now`, passes the
//! receiver's verification.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use adcp_sigbase::clock::FixedClock;
use adcp_sign::Algorithm;
use adcp_verify::keys::StaticKeyResolver;
use adcp_webhook::envelope::{McpWebhook, TaskStatus};
use adcp_webhook::receiver::{outcome, Receiver, ReceiverConfig};
use adcp_webhook::sender::{DeliveryOutcome, Destination, DestinationPolicy, WebhookSender};
use common::*;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn round_trip(alg: Algorithm) {
    let (signer, jwks) = seller(alg, &format!("seller-{}", alg.as_str()));
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .config(http_config())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(receiver.clone(), Arc::clone(&effects)).await;
    let sender = loopback_sender(signer, fast_retries());
    for (i, status) in [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed]
        .into_iter()
        .enumerate()
    {
        let event = McpWebhook::new(
            "task_interop",
            "create_media_buy",
            status,
            format!("2026-04-18T12:00:0{i}Z"),
        )
        .operation_id("op_interop")
        .context(serde_json::json!({"trace_id": "abc", "nested": {"x": [1, 2.5, "é"]}}))
        .result(serde_json::json!({"percentage": i * 50}))
        .into_event()
        .unwrap();
        let destination =
            Destination::new(url(addr, "/webhooks/op_interop?route=r%2F1")).with_operation_id("op_interop");
        let report = sender.deliver(&destination, &event).await;
        assert_eq!(
            report.outcome,
            DeliveryOutcome::Delivered { status: 200 },
            "{alg:?} {report:?}"
        );
        assert_eq!(report.attempts.len(), 1);
    }
    assert_eq!(effects.count(), 3);
    assert_eq!(receiver.metrics().get(outcome::ACCEPTED), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ed25519_sender_to_receiver() {
    round_trip(Algorithm::Ed25519).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn es256_sender_to_receiver() {
    round_trip(Algorithm::EcdsaP256Sha256).await;
}

/// The production path: HTTPS only, a DNS name resolved by the sender's
/// own resolver, range-checked and pinned; a certificate for that name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_with_a_pinned_resolver() {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;
    use tokio_rustls::rustls;

    let (signer, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-tls");
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let e = Arc::clone(&effects);
    let app = axum::Router::new().route(
        "/webhooks/tls",
        axum::routing::post(move |w: adcp_webhook::Webhook| {
            let e = Arc::clone(&e);
            async move {
                e.apply(&w);
                "ok"
            }
        })
        .layer(adcp_webhook::ReceiverLayer::new(receiver.clone())),
    );

    let cert = rcgen::generate_simple_self_signed(vec!["buyer.test".to_owned()]).unwrap();
    let cert_der = cert.cert.der().to_vec();
    let key_der = rustls::pki_types::PrivateKeyDer::try_from(cert.key_pair.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![rustls::pki_types::CertificateDer::from(cert_der.clone())], key_der)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else { return };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });

    let sender = WebhookSender::builder(signer)
        .retry_policy(fast_retries())
        .destination_policy(DestinationPolicy::from_ssrf_policy(
            adcp_jwks::SsrfPolicy::new().dangerously_allow_loopback_for_tests(),
        ))
        .dns_resolver(Arc::new(
            adcp_jwks::StaticDnsResolver::new().with("buyer.test", ["127.0.0.1".parse().unwrap()]),
        ))
        .trust_roots(adcp_jwks::TrustRoots::Custom(vec![cert_der]))
        .build()
        .unwrap();
    let event = McpWebhook::new(
        "task_tls",
        "create_media_buy",
        TaskStatus::Completed,
        "2026-04-18T12:00:00Z",
    )
    .into_event()
    .unwrap();
    let report = sender
        .deliver(
            &Destination::new(format!("https://buyer.test:{port}/webhooks/tls")),
            &event,
        )
        .await;
    assert_eq!(report.outcome, DeliveryOutcome::Delivered { status: 200 }, "{report:?}");
    assert_eq!(effects.count(), 1);
}

/// Keys of the suite as a public JWKS (the test-only private members dropped).
fn suite_jwks(suite: &std::path::Path) -> serde_json::Value {
    let keys = adcp_vectors::load_json(suite, "webhook-signing/keys.json").unwrap();
    let public: Vec<serde_json::Value> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let mut k = k.as_object().unwrap().clone();
            k.retain(|name, _| !name.starts_with('_'));
            serde_json::Value::Object(k)
        })
        .collect();
    serde_json::json!({ "keys": public })
}

/// Writes the vector's request on a raw TCP connection, byte for byte
/// (request target exactly as in the URL: no client re-encodes the path or
/// reorders the query), and returns the status and `WWW-Authenticate`.
async fn send_raw(addr: std::net::SocketAddr, request: &adcp_vectors::VectorRequest) -> (u16, Option<String>) {
    let after_scheme = request.url.split_once("://").unwrap().1;
    let (authority, target) = match after_scheme.find('/') {
        Some(i) => after_scheme.split_at(i),
        None => (after_scheme, "/"),
    };
    let body = request.body.clone().unwrap_or_default();
    let mut wire = format!("{} {target} HTTP/1.1\r\nHost: {authority}\r\n", request.method);
    for (name, value) in &request.headers {
        wire.push_str(&format!("{name}: {value}\r\n"));
    }
    wire.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(wire.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let challenge = response
        .lines()
        .find_map(|l| l.strip_prefix("www-authenticate: "))
        .map(str::to_owned);
    (status, challenge)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positive_conformance_vectors_replayed_live_are_accepted() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let jwks = suite_jwks(&suite);
    let files = adcp_vectors::json_files(&suite, "webhook-signing/positive");
    assert!(files.len() >= 8, "{}", files.len());
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let vector: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(vector["expected_outcome"]["success"], true, "{name}");
        let now = vector["reference_now"].as_i64().unwrap();
        let request = adcp_vectors::VectorRequest::from_json(&vector["request"]).unwrap();
        // A fresh receiver per vector (they reuse nonces and keys), with
        // the clock pinned at the vector's reference time; the vectors'
        // URLs are https, as a receiver behind TLS termination sees them.
        let receiver = Receiver::builder(
            Arc::new(StaticKeyResolver::new().with_jwks(&jwks, AGENT_URL)),
            memory_replay(),
            memory_idempotency(),
        )
        .clock(Arc::new(FixedClock(now)))
        .config(ReceiverConfig::default())
        .build()
        .unwrap();
        let effects = Arc::new(Effects::default());
        let addr = serve(receiver.clone(), Arc::clone(&effects)).await;
        let (status, challenge) = send_raw(addr, &request).await;
        // Verification accepted the request: no 401, no challenge, no
        // verifier code counted.
        assert_eq!(challenge, None, "{name}");
        assert!(
            receiver.metrics().snapshot().keys().all(|k| !k.starts_with("webhook_")),
            "{name}: {:?}",
            receiver.metrics().snapshot()
        );
        if name.starts_with("007-") {
            // "Body omits idempotency_key; signature still verifies": the
            // signature is accepted, but an envelope without its key is not
            // dispatchable (receiver-envelope vector `missing-idempotency-key`).
            assert_eq!(status, 400, "{name}");
            assert_eq!(receiver.metrics().get("missing_idempotency_key"), 1, "{name}");
            assert_eq!(effects.count(), 0, "{name}");
        } else {
            assert_eq!(status, 200, "{name}");
            assert_eq!(effects.count(), 1, "{name}");
        }
        // The same bytes again are a replay (nonce burned on first sight).
        let (status, challenge) = send_raw(addr, &request).await;
        assert_eq!(status, 401, "{name}");
        assert_eq!(
            challenge.as_deref(),
            Some("Signature error=\"webhook_signature_replayed\""),
            "{name}"
        );
    }
}
