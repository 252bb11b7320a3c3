//! Static revocation (`revoked_kids`) and the per-keyid replay cap
//! (`replay_cap_per_keyid`) of a gateway built from a `GatewayConfig`.

use crate::support::{event, http_client, post_signed, TempDir, Upstream, AGENT, PATH};
use adcp_gateway::{Gateway, GatewayConfig, GatewayHandle};
use adcp_sign::{Algorithm, HttpSigner, SignedRequest, SoftwareSigner};

/// A signer for `kid` and its public JWK.
fn key(kid: &str) -> (HttpSigner<SoftwareSigner>, serde_json::Value) {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, kid).unwrap();
    let jwks = key.jwks().unwrap().to_public_json();
    (HttpSigner::webhook(key).unwrap(), jwks["keys"][0].clone())
}

/// The settings of the tests: `jwks` in a file, an SQLite store (or
/// `store`), the upstream.
fn config(dir: &TempDir, jwks: &serde_json::Value, upstream: &Upstream, store: Option<&str>) -> GatewayConfig {
    std::fs::write(dir.0.join("jwks.json"), jwks.to_string()).unwrap();
    let mut config = GatewayConfig::new(upstream.url().parse().unwrap());
    config.jwks = Some(dir.0.join("jwks.json"));
    config.jwks_agent = AGENT.to_owned();
    let sqlite = format!("sqlite:{}", dir.0.join("dedup.sqlite").display());
    config.store = store.unwrap_or(&sqlite).parse().unwrap();
    config.access_log = false;
    config
}

async fn start(config: &GatewayConfig) -> GatewayHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Gateway::from_config(config).await.unwrap().serve(listener).unwrap()
}

/// Posts `signed`; the status and the `WWW-Authenticate` error code.
async fn send(handle: &GatewayHandle, signed: &SignedRequest) -> (u16, Option<String>) {
    let response = post_signed(http_client().post(format!("{}{PATH}", handle.base_url())), signed).await;
    let code = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("error=\"").nth(1))
        .and_then(|v| v.split('"').next())
        .map(str::to_owned);
    (response.status().as_u16(), code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_kid_is_refused_while_another_kid_of_the_same_jwks_passes() {
    let dir = TempDir::new("revoked-kid");
    let upstream = Upstream::start().await;
    let (current, current_jwk) = key("seller-2026");
    let (revoked, revoked_jwk) = key("test-revoked-2026");
    let jwks = serde_json::json!({ "keys": [current_jwk, revoked_jwk] });
    let mut config = config(&dir, &jwks, &upstream, None);
    config.revoked_kids = vec!["test-revoked-2026".to_owned()];
    let handle = start(&config).await;
    let url = format!("{}{PATH}", handle.base_url());

    let refused = revoked.sign_webhook(&url, &event("r")).await.unwrap();
    assert_eq!(
        send(&handle, &refused).await,
        (401, Some("webhook_signature_key_revoked".to_owned()))
    );
    let passed = current.sign_webhook(&url, &event("c")).await.unwrap();
    assert_eq!(send(&handle, &passed).await, (200, None));
    let applied = upstream.applied();
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].0[adcp_gateway::VERIFIED_KEYID], "seller-2026");
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_cap_of_n_accepts_n_nonces_of_a_keyid_and_refuses_the_next() {
    const CAP: usize = 3;
    // The SQLite default store, and the in-memory one: the cap reaches
    // every backend through the store options.
    for store in [None, Some("memory:")] {
        let dir = TempDir::new("replay-cap");
        let upstream = Upstream::start().await;
        let (signer, jwk) = key("capped-key");
        let (other, other_jwk) = key("other-key");
        let jwks = serde_json::json!({ "keys": [jwk, other_jwk] });
        let mut config = config(&dir, &jwks, &upstream, store);
        config.replay_cap_per_keyid = Some(CAP);
        let handle = start(&config).await;
        let url = format!("{}{PATH}", handle.base_url());
        for n in 0..CAP {
            let signed = signer.sign_webhook(&url, &event(&format!("{n}"))).await.unwrap();
            assert_eq!(send(&handle, &signed).await, (200, None), "{store:?} #{n}");
        }
        let over = signer.sign_webhook(&url, &event("over")).await.unwrap();
        assert_eq!(
            send(&handle, &over).await,
            (401, Some("webhook_signature_rate_abuse".to_owned())),
            "{store:?}"
        );
        assert_eq!(upstream.applied().len(), CAP);
        // The cap is per keyid: another key of the seller still passes.
        let signed = other.sign_webhook(&url, &event("other")).await.unwrap();
        assert_eq!(send(&handle, &signed).await, (200, None), "{store:?}");
        handle.shutdown().await.unwrap();
    }
}

/// An answer given before the body was read (a `413` on `Content-Length`)
/// says `Connection: close`, so a client does not send its next request on
/// a connection the gateway is closing; an answer after the whole body was
/// read (a digest mismatch) keeps the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_before_the_body_was_read_closes_the_connection() {
    let dir = TempDir::new("early-answer");
    let upstream = Upstream::start().await;
    let (signer, jwk) = key("early-key");
    let config = config(&dir, &serde_json::json!({ "keys": [jwk] }), &upstream, Some("memory:"));
    let handle = start(&config).await;
    let url = format!("{}{PATH}", handle.base_url());
    let client = http_client();

    // The request announces a 2 MiB body and sends none of it: the answer
    // comes from the head alone (a client still uploading the body may
    // meet the closed connection before reading the answer).
    let addr = handle.base_url().trim_start_matches("http://").to_owned();
    let mut raw = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST {PATH} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        2 * 1024 * 1024
    );
    tokio::io::AsyncWriteExt::write_all(&mut raw, head.as_bytes())
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tokio::io::AsyncReadExt::read_to_end(&mut raw, &mut answer),
    )
    .await
    .unwrap()
    .unwrap();
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 413"), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");

    let signed = signer.sign_webhook(&url, &event("tampered")).await.unwrap();
    let mut request = client.post(&url);
    for (name, value) in signed.headers() {
        request = request.header(*name, value.as_str());
    }
    let mut body = signed.body().unwrap().as_bytes().to_vec();
    body.push(b' ');
    let tampered = request.body(body).send().await.unwrap();
    assert_eq!(tampered.status().as_u16(), 401);
    assert!(tampered.headers().get("connection").is_none());

    let signed = signer.sign_webhook(&url, &event("after")).await.unwrap();
    assert_eq!(send(&handle, &signed).await, (200, None));
    handle.shutdown().await.unwrap();
}

/// Writes `request` on a new connection to `handle` and reads the answer's
/// head (lowercased), without waiting for the connection to close.
async fn raw_head(handle: &GatewayHandle, request: &[u8]) -> (tokio::net::TcpStream, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = handle.base_url().trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0_u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
    }
    (stream, String::from_utf8_lossy(&answer).to_ascii_lowercase())
}

/// Every answer given before the body was read says `Connection: close`:
/// a refused `Host`, a method not allowed, and load shedding (a request
/// arriving while the only slot is held by one whose body is still
/// coming).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_refusals_and_load_shedding_close_the_connection() {
    let dir = TempDir::new("early-close");
    let upstream = Upstream::start().await;
    let (signer, jwk) = key("early-close-key");
    let mut config = config(&dir, &serde_json::json!({ "keys": [jwk] }), &upstream, Some("memory:"));
    config.max_concurrency = 1;
    // The gateway answers for buyer.example only.
    config.public_url = Some("http://buyer.example".parse().unwrap());
    let handle = start(&config).await;
    let addr = handle.base_url().trim_start_matches("http://").to_owned();
    let host = "buyer.example";

    let (_, wrong_host) = raw_head(
        &handle,
        format!("POST {PATH} HTTP/1.1\r\nHost: elsewhere.example\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n")
            .as_bytes(),
    )
    .await;
    assert!(wrong_host.starts_with("http/1.1 4"), "{wrong_host}");
    assert!(wrong_host.contains("\r\nconnection: close\r\n"), "{wrong_host}");

    let (_, not_post) = raw_head(
        &handle,
        format!("PUT {PATH} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(not_post.starts_with("http/1.1 405"), "{not_post}");
    assert!(not_post.contains("\r\nconnection: close\r\n"), "{not_post}");

    // A signed webhook whose body is only half sent holds the only slot.
    let url = format!("http://{host}{PATH}");
    let signed = signer.sign_webhook(&url, &event("held")).await.unwrap();
    let body = signed.body().unwrap().as_bytes().to_vec();
    let mut head = format!(
        "POST {PATH} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in signed.headers() {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut holder = tokio::net::TcpStream::connect(&addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut holder, head.as_bytes())
        .await
        .unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut holder, &body[..body.len() / 2])
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (_, shed) = raw_head(
        &handle,
        format!(
            "POST {PATH} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
        )
        .as_bytes(),
    )
    .await;
    assert!(shed.starts_with("http/1.1 503"), "{shed}");
    assert!(shed.contains("\r\nretry-after: 1\r\n"), "{shed}");
    assert!(shed.contains("\r\nconnection: close\r\n"), "{shed}");
    drop(holder);
    handle.shutdown().await.unwrap();
}
