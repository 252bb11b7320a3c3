//! A gateway built from a `GatewayConfig` (TOML text) on loopback: a
//! signed webhook is forwarded once, a seller retry is not forwarded
//! again, a tampered body is refused with its `WWW-Authenticate` code;
//! the router embeds in a server of one's own; `run` stops on its
//! shutdown future.

use crate::support::{
    event, forged_signature, http_client, metrics_text, post_signed_with, serve_loopback, Seller, TempDir, Upstream,
    AGENT, PATH,
};
use adcp_gateway::{ConfigError, Gateway, GatewayConfig, GatewayError};
use adcp_sign::SignedRequest;

/// The settings of the tests: the seller's JWKS file beside the TOML file,
/// an SQLite store in the same directory, the upstream.
fn config(dir: &TempDir, seller: &Seller, upstream: &Upstream) -> GatewayConfig {
    std::fs::write(dir.0.join("seller-jwks.json"), seller.jwks.to_string()).unwrap();
    let toml = format!(
        "listen = \"127.0.0.1:0\"\nupstream = \"{}\"\njwks = \"seller-jwks.json\"\njwks_agent = \"{AGENT}\"\nstore = \"sqlite:{}\"\nupstream_timeout = 5\n",
        upstream.url(),
        dir.0.join("dedup.sqlite").display()
    );
    std::fs::write(dir.0.join("gateway.toml"), toml).unwrap();
    let mut config = GatewayConfig::from_toml_file(dir.0.join("gateway.toml")).unwrap();
    config.access_log = false;
    config
}

/// Posts `signed` (with `body` instead of its own, if given) to `base`;
/// the status and the whole `WWW-Authenticate` value.
async fn send(base: &str, signed: &SignedRequest, body: Option<Vec<u8>>) -> (u16, Option<String>) {
    let body = body.unwrap_or_else(|| signed.body().unwrap().as_bytes().to_vec());
    let response = post_signed_with(http_client().post(format!("{base}{PATH}")), signed, body).await;
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), challenge)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_webhook_is_forwarded_once_and_a_tampered_one_refused() {
    let dir = TempDir::new("serve");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let gateway = Gateway::from_config(&config(&dir, &seller, &upstream)).await.unwrap();
    let handle = serve_loopback(&gateway).await;
    let base = handle.base_url();
    let url = format!("{base}{PATH}");

    let a = event("a");
    let signed = seller.signer.sign_webhook(&url, &a).await.unwrap();
    assert_eq!(send(&base, &signed, None).await, (200, None));
    let applied = upstream.applied();
    assert_eq!(applied.len(), 1);
    let (headers, body) = &applied[0];
    assert_eq!(body.as_slice(), signed.body().unwrap().as_bytes(), "the raw bytes");
    assert_eq!(headers[adcp_gateway::VERIFIED_AGENT], AGENT);
    assert_eq!(headers[adcp_gateway::VERIFIED_KEYID], "gw-test-key");
    assert_eq!(headers[adcp_gateway::IDEMPOTENCY_KEY], a.idempotency_key().as_str());

    // The seller's retry (fresh signature): 200, not forwarded again.
    let retry = seller.signer.sign_webhook(&url, &a).await.unwrap();
    assert_eq!(send(&base, &retry, None).await, (200, None));
    assert_eq!(upstream.applied().len(), 1);

    // Tampered body: 401 with exactly the code's challenge, not forwarded.
    let b = seller.signer.sign_webhook(&url, &event("b")).await.unwrap();
    let tampered = b.body().unwrap().as_str().replace("mb_b", "mb_x").into_bytes();
    assert_eq!(
        send(&base, &b, Some(tampered)).await,
        (
            401,
            Some("Signature error=\"webhook_signature_digest_mismatch\"".to_owned())
        )
    );
    assert_eq!(upstream.applied().len(), 1);
    assert_eq!(handle.gateway().metrics().forwarded_count(), 1);

    // Probes and metrics.
    let client = http_client();
    let ready = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let metrics = metrics_text(&base).await;
    assert!(metrics.contains("adcp_gateway_forwarded_total 1\n"), "{metrics}");
    assert!(
        metrics.contains("adcp_gateway_webhooks_total{outcome=\"webhook_signature_digest_mismatch\"} 1\n"),
        "{metrics}"
    );
    handle.shutdown().await.unwrap();
}

/// `batch_verify`: concurrent webhooks have their Ed25519 signatures
/// checked together; each still gets its own answer: the valid ones
/// forwarded once, the forged ones refused as `signature_invalid`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_batch_verify_concurrent_webhooks_get_their_own_answers() {
    let dir = TempDir::new("batch");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let mut config = config(&dir, &seller, &upstream);
    config.batch_verify = true;
    let gateway = Gateway::from_config(&config).await.unwrap();
    let handle = serve_loopback(&gateway).await;
    let base = handle.base_url();
    let url = format!("{base}{PATH}");
    let mut sends = Vec::new();
    for i in 0..60 {
        let signed = seller
            .signer
            .sign_webhook(&url, &event(&format!("batch{i}")))
            .await
            .unwrap();
        let forged = i % 6 == 0;
        let url = url.clone();
        sends.push(tokio::spawn(async move {
            let mut request = http_client().post(url);
            for (name, value) in signed.headers() {
                let value = if forged && name.eq_ignore_ascii_case("signature") {
                    forged_signature(value)
                } else {
                    value.clone()
                };
                request = request.header(*name, value);
            }
            let response = request
                .body(signed.body().unwrap().as_bytes().to_vec())
                .send()
                .await
                .unwrap();
            let challenge = response
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap().to_owned());
            (forged, response.status().as_u16(), challenge)
        }));
    }
    for send in sends {
        let (forged, status, challenge) = send.await.unwrap();
        if forged {
            assert_eq!(
                (status, challenge.as_deref()),
                (401, Some("Signature error=\"webhook_signature_invalid\""))
            );
        } else {
            assert_eq!((status, challenge), (200, None));
        }
    }
    assert_eq!(upstream.applied().len(), 50);
    assert_eq!(handle.gateway().metrics().forwarded_count(), 50);
    let metrics = metrics_text(&base).await;
    assert!(
        metrics.contains("adcp_gateway_batched_signatures_total 60\n"),
        "{metrics}"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_serves_inside_a_server_of_ones_own() {
    let dir = TempDir::new("router");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let gateway = Gateway::from_config(&config(&dir, &seller, &upstream)).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
    let signed = seller
        .signer
        .sign_webhook(&format!("{base}{PATH}"), &event("r"))
        .await
        .unwrap();
    assert_eq!(send(&base, &signed, None).await, (200, None));
    assert_eq!(upstream.applied().len(), 1);
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_serves_until_its_shutdown_future_completes() {
    let dir = TempDir::new("run");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let mut config = config(&dir, &seller, &upstream);
    // A free port: bound, then released for the gateway.
    config.listen = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let base = format!("http://{}", config.listen);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn({
        let config = config.clone();
        async move {
            Gateway::run(&config, async {
                let _ = stopped.await;
            })
            .await
        }
    });
    let mut healthy = false;
    for _ in 0..100 {
        if let Ok(response) = http_client().get(format!("{base}/healthz")).send().await {
            healthy = response.status() == 200;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(healthy, "the gateway answers /healthz");
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
    assert!(tokio::net::TcpStream::connect(config.listen).await.is_err(), "closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_errors_are_typed() {
    let dir = TempDir::new("errors");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let mut config = config(&dir, &seller, &upstream);
    config.jwks = Some(dir.0.join("missing.json"));
    match Gateway::from_config(&config).await {
        Err(GatewayError::Config(ConfigError::JwksFile { setting, path, .. })) => {
            assert_eq!(setting, "--jwks");
            assert_eq!(path, dir.0.join("missing.json"));
        }
        other => panic!("{other:?}"),
    }
    let mut config = self::config(&dir, &seller, &upstream);
    config.public_url = Some("ftp://buyer.example/".parse().unwrap());
    let e = Gateway::from_config(&config).await.unwrap_err();
    assert!(
        matches!(&e, GatewayError::Config(ConfigError::PublicUrlScheme { scheme }) if scheme == "ftp"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "--public-url must be http(s), not \"ftp\"");
    // The port is taken.
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut config = self::config(&dir, &seller, &upstream);
    config.listen = taken.local_addr().unwrap();
    let e = Gateway::run(&config, std::future::pending()).await.unwrap_err();
    assert!(
        matches!(e, GatewayError::Bind { addr, .. } if addr == config.listen),
        "{e:?}"
    );
}
