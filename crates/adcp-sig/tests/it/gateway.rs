//! The verifying gateway, in-process on SQLite: forward once, duplicates
//! not forwarded, tampered bodies rejected with the code, upstream
//! failures answered 503 with the claim released, probes and metrics,
//! graceful shutdown.

use crate::support::gateway as common;
use adcp_gateway::GatewayOptions;
use adcp_sign::{Algorithm, HttpSigner, SignedRequest, SoftwareSigner};
use adcp_verify::StaticKeyResolver;
use common::{event, gateway, get, send, Seller, TempDir, Upstream, AGENT};
use std::sync::Arc;
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
            let client = common::http_client(Duration::from_secs(10)).unwrap();
            common::signed_post(&client, format!("{base}{}", common::PATH), &signed)
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
    use adcp_gateway::{Gateway, GatewayOptions};
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
    let handle = common::serve(&gateway).await;
    let client = common::http_client(Duration::from_secs(10)).unwrap();
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
        let response = common::signed_post(&client, format!("{}{}", handle.base_url(), common::PATH), &signed)
            .send()
            .await
            .unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_2, "attempt {attempt}");
        assert_eq!(response.status(), 200, "attempt {attempt}");
    }
    assert_eq!(upstream.applied_keys(), [a.idempotency_key().as_str()]);
    handle.shutdown().await.unwrap();
}

/// A seller of its own agent URL with the shared test kid.
fn seller_keys(sellers: &[(&str, &Seller)]) -> Arc<dyn adcp_verify::KeyResolver> {
    let resolvers = sellers
        .iter()
        .map(|(agent, seller)| {
            let keys: Arc<dyn adcp_verify::KeyResolver> =
                Arc::new(StaticKeyResolver::new().with_jwks(&seller.jwks, agent));
            ((*agent).to_owned(), keys)
        })
        .collect();
    Arc::new(adcp_gateway::AgentsResolver::new(resolvers))
}

async fn gateway_with(
    keys: Arc<dyn adcp_verify::KeyResolver>,
    dir: &TempDir,
    upstream: &Upstream,
    configure: impl FnOnce(&mut GatewayOptions),
) -> adcp_gateway::GatewayHandle {
    let mut options = GatewayOptions::new(upstream.url());
    configure(&mut options);
    common::start(keys, &dir.sqlite(), adcp_store::StoreOptions::default(), options).await
}

/// Posts `signed` to the gateway with the `Host` it was signed for (what a
/// reverse proxy that preserves `Host` sends); returns status, code and body.
async fn send_to(handle: &adcp_gateway::GatewayHandle, signed: &SignedRequest) -> (u16, Option<String>, String) {
    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let url = url::Url::parse(signed.url()).unwrap();
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap()),
        None => url.host_str().unwrap().to_owned(),
    };
    let response = common::signed_post(&client, format!("{}{}", handle.base_url(), url.path()), signed)
        .header("host", host)
        .send()
        .await
        .unwrap();
    let code = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .and_then(adcp_webhook::signature_error_code);
    (response.status().as_u16(), code, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sellers_sharing_a_kid_are_told_apart_by_the_signature() {
    const A: &str = "https://a.seller.example/mcp";
    const B: &str = "https://b.seller.example/mcp";
    const C: &str = "https://c.seller.example/mcp";
    let dir = TempDir::new("sharedkid");
    let upstream = Upstream::start().await;
    // Both sellers publish the same kid with their own keys.
    let (a, b) = (Seller::new(), Seller::new());
    let handle = gateway_with(seller_keys(&[(A, &a), (B, &b)]), &dir, &upstream, |_| {}).await;

    let from_b = b.sign(&handle, &event("b")).await;
    assert_eq!(send(&handle, &from_b, None).await, (200, None));
    let from_a = a.sign(&handle, &event("a")).await;
    assert_eq!(send(&handle, &from_a, None).await, (200, None));
    let agents: Vec<String> = upstream
        .seen
        .applied
        .lock()
        .unwrap()
        .iter()
        .map(|(h, _)| h["x-adcp-verified-agent"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        agents,
        [B, A],
        "attribution is the seller whose key verifies, not the first listed"
    );
    // Replay uniqueness is on (keyid, nonce), whoever the candidates are.
    assert_eq!(
        send(&handle, &from_b, None).await,
        (401, Some("webhook_signature_replayed".to_owned()))
    );
    handle.shutdown().await.unwrap();

    // A third seller republishing A's public key under the shared kid:
    // A's webhooks verify under two sellers' keys, and nobody is chosen.
    let dir = TempDir::new("ambiguouskid");
    let copycat = Seller {
        signer: HttpSigner::webhook(SoftwareSigner::generate(Algorithm::Ed25519, "gw-test-key").unwrap()).unwrap(),
        jwks: a.jwks.clone(),
    };
    let handle = gateway_with(seller_keys(&[(A, &a), (B, &b), (C, &copycat)]), &dir, &upstream, |_| {}).await;
    let from_a = a.sign(&handle, &event("a2")).await;
    let (status, code, body) = send_to(&handle, &from_a).await;
    assert_eq!(
        (status, code.as_deref()),
        (401, Some("webhook_signature_jwks_untrusted"))
    );
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "webhook_signature_jwks_untrusted");
    // B, whose key is its own, is unaffected.
    let from_b = b.sign(&handle, &event("b2")).await;
    assert_eq!(send(&handle, &from_b, None).await, (200, None));
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_body_limit_governs_the_413_and_the_checklist() {
    let dir = TempDir::new("bodylimit");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let limit = 2 * 1024 * 1024;
    let handle = gateway_with(seller.keys(), &dir, &upstream, |o| o.max_body_bytes = limit).await;

    // 1.5 MiB: over the old hidden 1 MiB JSON limit, under the configured one.
    let filler = "x".repeat(1536 * 1024);
    let limits = adcp_sign::Limits::new(limit);
    let big = adcp_sign::WebhookEvent::with_idempotency_key_and_limits(
        adcp_sign::IdempotencyKey::new("evt_big_0000000001").unwrap(),
        &serde_json::json!({"task_id": "task_big", "task_type": "create_media_buy", "status": "completed",
            "timestamp": "2026-04-18T12:00:00Z", "result": {"filler": filler}}),
        &limits,
    )
    .unwrap();
    let signed = seller.sign(&handle, &big).await;
    assert_eq!(send(&handle, &signed, None).await, (200, None));
    assert_eq!(upstream.applied_keys(), ["evt_big_0000000001"]);

    // Over the limit: 413 with its code from the declared length, before
    // a byte of the body is read (raw TCP: a client still writing a body
    // the server will never read may see the connection reset first).
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(handle.local_addr()).await.unwrap();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        common::PATH,
        handle.local_addr(),
        limit + 1
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0_u8; 4096];
    // Until the whole small answer is in (or the server closes).
    while !String::from_utf8_lossy(&answer).contains("payload_too_large\"") {
        match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => answer.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(r#""error":"payload_too_large""#), "{answer}");
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_url_checks_the_received_authority() {
    let dir = TempDir::new("publicurl");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let handle = gateway_with(seller.keys(), &dir, &upstream, |o| {
        o.public_url = Some("https://buyer.example/".parse().unwrap());
        o.accept_hosts = vec!["Hooks.Buyer.Example:443".to_owned()];
    })
    .await;
    let sign_for = |url: &'static str, n: &'static str| {
        let signer = &seller.signer;
        async move { signer.sign_webhook(url, &event(n)).await.unwrap() }
    };

    // The public authority, as a proxy preserving Host sends it.
    let ok = sign_for("https://buyer.example/webhooks/adcp", "a").await;
    assert_eq!(send_to(&handle, &ok).await.0, 200);
    // An --accept-host authority (compared canonically).
    let other = sign_for("https://hooks.buyer.example/webhooks/adcp", "b").await;
    assert_eq!(send_to(&handle, &other).await.0, 200);
    // Another virtual host: refused, even though the seller signed for it.
    let elsewhere = sign_for("https://elsewhere.example/webhooks/adcp", "c").await;
    let (status, code, body) = send_to(&handle, &elsewhere).await;
    assert_eq!((status, code.as_deref()), (401, Some("webhook_target_uri_malformed")));
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "webhook_target_uri_malformed");
    assert!(!body["message"].as_str().unwrap().contains("elsewhere"), "{body}");
    assert_eq!(upstream.applied_keys().len(), 2);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rejection_carries_its_code_in_one_body_shape() {
    let dir = TempDir::new("bodies");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let handle = gateway_with(seller.keys(), &dir, &upstream, |_| {}).await;
    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let url = format!("{}{}", handle.base_url(), common::PATH);

    let raw = br#"{"idempotency_key":"evt_unsigned_00001","task_id":"t","status":"completed"}"#.to_vec();

    // 415, 405 and 401 (unsigned): each JSON with its code and a fixed message.
    let response = client
        .post(&url)
        .header("content-type", "text/plain")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 415);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"], "unsupported_media_type");
    assert!(body["message"].is_string());

    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 405);
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"], "method_not_allowed");

    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .body(raw)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Signature error=\"webhook_signature_header_malformed\""
    );
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"], "webhook_signature_header_malformed");
    assert_eq!(body.as_object().unwrap().len(), 2, "{body}");

    // Upstream failure: 503 with Retry-After and the gateway's code.
    upstream.fail_next(1);
    let signed = seller.sign(&handle, &event("u")).await;
    let response = common::signed_post(&client, &url, &signed).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"], "upstream_unavailable");
    handle.shutdown().await.unwrap();
}

/// Posts raw `body` with `headers` to the gateway at `path`, as a proxy
/// preserving `Host: buyer.example` would.
async fn post_raw(
    handle: &adcp_gateway::GatewayHandle,
    path: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> (u16, String) {
    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let mut request = client
        .post(format!("{}{path}", handle.base_url()))
        .header("host", "buyer.example");
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let response = request.body(body).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Signs any JSON body (challenges have no idempotency key) for `url`.
async fn sign_json(seller: &Seller, url: &str, body: &serde_json::Value) -> SignedRequest {
    let body = adcp_sign::Body::from_json_bytes(body.to_string()).unwrap();
    let request = adcp_sign::UnsignedRequest::new("POST", url)
        .with_body(&body)
        .with_content_type("application/json");
    seller
        .signer
        .sign_with(&request, &adcp_sign::SignOptions::new())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_challenges_notifications_and_legacy_registrations() {
    let dir = TempDir::new("subscriptions");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let secret = "a-legacy-hmac-secret-of-at-least-32-bytes!";
    std::fs::write(dir.0.join("hmac.secret"), format!("{secret}\n")).unwrap();
    let fingerprint = adcp_webhook::payload::credential_fingerprint(secret);
    let registrations = serde_json::json!([
        {"url": "https://buyer.example/hooks", "seller_agent_url": AGENT, "subscriber_id": "desk-1",
         "account_id": "acct_1", "delivery_auth": {"mode": "rfc9421"},
         "event_types": ["creative.status_changed"], "active": true},
        {"url": "https://buyer.example/legacy", "seller_agent_url": AGENT, "subscriber_id": "desk-2",
         "account_id": "acct_1", "delivery_auth": {"mode": "HMAC-SHA256", "credential_fingerprint": fingerprint},
         "event_types": ["creative.status_changed"], "active": true, "credential_file": "hmac.secret"},
    ]);
    let path = dir.0.join("subscriptions.json");
    std::fs::write(&path, registrations.to_string()).unwrap();
    let loaded = adcp_gateway::Registrations::load(&path).unwrap();
    let handle = gateway_with(seller.keys(), &dir, &upstream, |o| {
        o.public_url = Some("https://buyer.example/".parse().unwrap());
        o.subscriptions = Some(loaded);
    })
    .await;

    // The gateway answers a challenge itself; nothing reaches the upstream.
    let value = "k".repeat(43);
    let challenge = |value: &str, subscriber: &str, auth: serde_json::Value| {
        serde_json::json!({"type": "webhook.challenge", "challenge": value, "account_id": "acct_1",
            "subscriber_id": subscriber, "seller_agent_url": AGENT, "delivery_auth": auth,
            "event_types": ["creative.status_changed"]})
    };
    let signed = sign_json(
        &seller,
        "https://buyer.example/hooks",
        &challenge(&value, "desk-1", serde_json::json!({"mode": "rfc9421"})),
    )
    .await;
    let (status, _, body) = send_to(&handle, &signed).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        serde_json::json!({"challenge": value})
    );
    assert!(upstream.applied_keys().is_empty());

    // A notification: forwarded with its identity headers; a re-emission
    // with the first delivery's key.
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../adcp-webhook/tests/fixtures/payloads/creative_status_changed.json"
    );
    let mut note: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    note["idempotency_key"] = serde_json::json!("note-key-000000000001");
    note["notification_id"] = serde_json::json!("crv_1.review.1");
    note["subscriber_id"] = serde_json::json!("desk-1");
    note["account_id"] = serde_json::json!("acct_1");
    let signed = sign_json(&seller, "https://buyer.example/hooks", &note).await;
    assert_eq!(send_to(&handle, &signed).await.0, 200);
    let mut again = note.clone();
    again["idempotency_key"] = serde_json::json!("note-key-000000000002");
    let signed = sign_json(&seller, "https://buyer.example/hooks", &again).await;
    assert_eq!(send_to(&handle, &signed).await.0, 200);
    {
        let applied = upstream.seen.applied.lock().unwrap();
        assert_eq!(applied.len(), 2);
        assert_eq!(applied[0].0["x-adcp-notification-id"], "crv_1.review.1");
        assert_eq!(applied[0].0["x-adcp-notification-type"], "creative.status_changed");
        assert!(applied[0].0.get("x-adcp-reemission-of").is_none());
        assert_eq!(applied[1].0["x-adcp-reemission-of"], "note-key-000000000001");
    }
    // Another subscriber's notification at this URL: 403, not forwarded.
    let mut foreign = note.clone();
    foreign["idempotency_key"] = serde_json::json!("note-key-000000000003");
    foreign["subscriber_id"] = serde_json::json!("desk-9");
    let signed = sign_json(&seller, "https://buyer.example/hooks", &foreign).await;
    let (status, _, body) = send_to(&handle, &signed).await;
    assert_eq!(
        (
            status,
            serde_json::from_str::<serde_json::Value>(&body).unwrap()["error"].as_str()
        ),
        (403, Some("subscription_mismatch"))
    );

    // The legacy registration's URL: HMAC deliveries verify with its
    // credential; its challenge is still RFC 9421-signed; an RFC 9421
    // delivery there is a mode mismatch.
    let mut legacy_note = note.clone();
    legacy_note["idempotency_key"] = serde_json::json!("legacy-key-00000000001");
    legacy_note["notification_id"] = serde_json::json!("crv_1.review.2");
    legacy_note["subscriber_id"] = serde_json::json!("desk-2");
    let body = adcp_sign::Body::from_json_bytes(legacy_note.to_string()).unwrap();
    let hmac = adcp_sign::LegacyHmacSigner::new(secret.as_bytes())
        .unwrap()
        .sign(&body)
        .unwrap();
    let mut headers: Vec<(&str, String)> = hmac.headers().into_iter().collect();
    headers.push(("content-type", "application/json".to_owned()));
    let (status, text) = post_raw(&handle, "/legacy", &headers, body.as_bytes().to_vec()).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(upstream.applied_keys().last().unwrap(), "legacy-key-00000000001");
    let auth = serde_json::json!({"mode": "HMAC-SHA256", "credential_fingerprint": fingerprint});
    let signed = sign_json(
        &seller,
        "https://buyer.example/legacy",
        &challenge(&"L".repeat(40), "desk-2", auth),
    )
    .await;
    assert_eq!(send_to(&handle, &signed).await.0, 200);
    let mut signed_note = legacy_note.clone();
    signed_note["idempotency_key"] = serde_json::json!("legacy-key-00000000002");
    let signed = sign_json(&seller, "https://buyer.example/legacy", &signed_note).await;
    let (status, code, _) = send_to(&handle, &signed).await;
    assert_eq!((status, code.as_deref()), (401, Some("webhook_mode_mismatch")));
    handle.shutdown().await.unwrap();
}
