//! The verifying gateway, in-process on SQLite: forward once, duplicates
//! not forwarded, tampered bodies rejected with the code, upstream
//! failures answered 503 with the claim released, probes and metrics,
//! graceful shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod common;

use common::{event, gateway, get, send, Seller, TempDir, Upstream, AGENT};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwards_once_answers_duplicates_and_rejects_tampering() {
    let dir = TempDir::new("forward");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let handle = gateway(&seller, &dir.sqlite(), "adcp", upstream.url()).await;

    let a = event("a");
    let signed = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &signed, None).await, (200, None));
    let applied = upstream.seen.applied.lock().unwrap().clone();
    assert_eq!(applied.len(), 1);
    let (headers, body) = &applied[0];
    // The original raw bytes, and the verified identity.
    assert_eq!(body.as_slice(), signed.body().unwrap().as_bytes());
    assert_eq!(headers["x-adcp-verified-agent"], AGENT);
    assert_eq!(headers["x-adcp-verified-keyid"], "gw-test-key");
    assert_eq!(headers["x-adcp-idempotency-key"], a.idempotency_key().as_str());
    assert_eq!(headers["content-type"], "application/json");

    // The seller's retry (fresh signature): 200, not forwarded again.
    let retry = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &retry, None).await, (200, None));
    assert_eq!(upstream.applied_keys().len(), 1);

    // Tampered body: 401 with the code, not forwarded.
    let b = seller.sign(&handle, &event("b")).await;
    let tampered = b.body().unwrap().as_str().replace("mb_b", "mb_x").into_bytes();
    assert_eq!(
        send(&handle, &b, Some(tampered)).await,
        (401, Some("webhook_signature_digest_mismatch".to_owned()))
    );
    // Replayed request (same nonce): 401 replayed.
    assert_eq!(
        send(&handle, &signed, None).await,
        (401, Some("webhook_signature_replayed".to_owned()))
    );
    assert_eq!(upstream.applied_keys(), [a.idempotency_key().as_str()]);

    let base = handle.base_url();
    assert_eq!(get(format!("{base}/healthz")).await.0, 200);
    assert_eq!(get(format!("{base}/readyz")).await.0, 200);
    let (status, metrics) = get(format!("{base}/metrics")).await;
    assert_eq!(status, 200);
    for line in [
        "adcp_gateway_webhooks_total{outcome=\"accepted\"} 1\n",
        "adcp_gateway_webhooks_total{outcome=\"duplicate\"} 1\n",
        "adcp_gateway_webhooks_total{outcome=\"webhook_signature_digest_mismatch\"} 1\n",
        "adcp_gateway_webhooks_total{outcome=\"webhook_signature_replayed\"} 1\n",
        "adcp_gateway_forwarded_total 1\n",
        "adcp_gateway_request_duration_seconds_count 4\n",
    ] {
        assert!(metrics.contains(line), "{line} missing from\n{metrics}");
    }
    // Only POST takes webhooks.
    assert_eq!(get(format!("{base}{}", common::PATH)).await.0, 405);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_failure_is_503_and_the_retry_is_forwarded_once() {
    let dir = TempDir::new("upfail");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let handle = gateway(&seller, &dir.sqlite(), "adcp", upstream.url()).await;
    let a = event("a");

    // Upstream 500: 503 to the seller, nothing applied, claim released.
    upstream.fail_next(1);
    let first = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &first, None).await, (503, None));
    assert!(upstream.applied_keys().is_empty());

    // Upstream too slow (over the 2 s timeout): 503 again.
    *upstream.seen.delay.lock().unwrap() = Some(Duration::from_millis(4000));
    let second = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &second, None).await, (503, None));
    *upstream.seen.delay.lock().unwrap() = None;
    // The slow request may still complete at the upstream after the
    // gateway gave up; what matters is the gateway's own accounting.
    let late = upstream.applied_keys().len();

    // The seller's next retry is forwarded, once; later ones are duplicates.
    let third = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &third, None).await, (200, None));
    assert_eq!(upstream.applied_keys().len(), late + 1);
    let fourth = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &fourth, None).await, (200, None));
    assert_eq!(upstream.applied_keys().len(), late + 1);

    let metrics = get(format!("{}/metrics", handle.base_url())).await.1;
    assert!(
        metrics.contains("adcp_gateway_upstream_failures_total{reason=\"status\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("adcp_gateway_upstream_failures_total{reason=\"timeout\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("adcp_gateway_webhooks_total{outcome=\"handler_failed\"} 2\n"),
        "{metrics}"
    );
    assert!(metrics.contains("adcp_gateway_forwarded_total 1\n"), "{metrics}");
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_an_in_flight_request() {
    let dir = TempDir::new("drain");
    let upstream = Upstream::start().await;
    *upstream.seen.delay.lock().unwrap() = Some(Duration::from_millis(500));
    let seller = Seller::new();
    let handle = gateway(&seller, &dir.sqlite(), "adcp", upstream.url()).await;
    let signed = seller.sign(&handle, &event("a")).await;
    let base = handle.base_url();
    let in_flight = tokio::spawn({
        async move {
            let client = adcp_sig::gateway::forward::http_client(Duration::from_secs(10)).unwrap();
            let mut request = client.post(format!("{base}{}", common::PATH));
            for (name, value) in signed.headers() {
                request = request.header(*name, value.as_str());
            }
            request
                .body(signed.body().unwrap().as_bytes().to_vec())
                .send()
                .await
                .map(|r| r.status().as_u16())
        }
    });
    // Let the request reach the upstream, then shut down: it still completes.
    while upstream.seen.requests.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let addr = handle.local_addr();
    handle.shutdown().await.unwrap();
    assert_eq!(in_flight.await.unwrap().unwrap(), 200);
    assert_eq!(upstream.applied_keys().len(), 1);
    // And the listener is closed.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_hmac_registration_is_verified_and_deduplicated() {
    use adcp_sig::gateway::{Gateway, GatewayOptions};
    use adcp_sign::LegacyHmacSigner;
    use adcp_verify::legacy::{HmacSecrets, WebhookAuthMode};

    let dir = TempDir::new("hmac");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let store = adcp_store::open(&dir.sqlite().parse().unwrap(), adcp_store::StoreOptions::default())
        .await
        .unwrap();
    let mut options = GatewayOptions::new(upstream.url());
    options.mode = WebhookAuthMode::HmacSha256 {
        secrets: HmacSecrets::new(b"shared-secret-for-tests-0123456789").unwrap(),
    };
    options.legacy_sender = Some(AGENT.to_owned());
    let gateway = Gateway::new(seller.keys(), store, options).unwrap();
    let handle = gateway
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap();
    let client = adcp_sig::gateway::forward::http_client(Duration::from_secs(10)).unwrap();
    let post = |secret: &'static [u8], e: adcp_sign::WebhookEvent| {
        let client = client.clone();
        let url = format!("{}{}", handle.base_url(), common::PATH);
        async move {
            let signed = LegacyHmacSigner::new(secret).unwrap().sign_event(&e).unwrap();
            let mut request = client.post(url).header("content-type", "application/json");
            for (name, value) in signed.headers() {
                request = request.header(name, value);
            }
            let response = request.body(signed.body().as_bytes().to_vec()).send().await.unwrap();
            response.status().as_u16()
        }
    };
    let a = event("a");
    assert_eq!(post(b"shared-secret-for-tests-0123456789", a.clone()).await, 200);
    assert_eq!(post(b"shared-secret-for-tests-0123456789", a.clone()).await, 200);
    assert_eq!(post(b"another-secret-entirely-0123456789", event("b")).await, 401);
    // An RFC 9421 delivery to an HMAC registration: mode mismatch.
    let signed = seller.sign(&handle, &event("c")).await;
    assert_eq!(
        send(&handle, &signed, None).await,
        (401, Some("webhook_mode_mismatch".to_owned()))
    );
    let applied = upstream.seen.applied.lock().unwrap().clone();
    assert_eq!(applied.len(), 1, "the retry was a duplicate");
    assert_eq!(applied[0].0["x-adcp-verified-agent"], AGENT);
    assert!(applied[0].0.get("x-adcp-verified-keyid").is_none());
    assert_eq!(applied[0].0["x-adcp-idempotency-key"], a.idempotency_key().as_str());
    handle.shutdown().await.unwrap();
}

/// The gateway serves HTTP/2 with prior knowledge (h2c) as well as
/// HTTP/1.1, as `axum::serve` does: same verification, same dedup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_prior_knowledge_is_served_like_http1() {
    let dir = TempDir::new("h2c");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let handle = gateway(&seller, &dir.sqlite(), "adcp", upstream.url()).await;
    // Plain-text h2c: TLS is never used, but reqwest needs a TLS config.
    let tls =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
    let client = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let a = event("h2");
    for attempt in 0..2 {
        let signed = seller.sign(&handle, &a).await;
        let mut request = client.post(format!("{}{}", handle.base_url(), common::PATH));
        for (name, value) in signed.headers() {
            request = request.header(*name, value.as_str());
        }
        let response = request
            .body(signed.body().unwrap().as_bytes().to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_2, "attempt {attempt}");
        assert_eq!(response.status(), 200, "attempt {attempt}");
    }
    assert_eq!(upstream.applied_keys(), [a.idempotency_key().as_str()]);
    handle.shutdown().await.unwrap();
}
