//! Gateway test fixtures: a counting upstream, a seller, an in-process
//! gateway on a loopback listener, and a client that sends signed webhooks.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use adcp_gateway::{Gateway, GatewayHandle, GatewayOptions};
use adcp_sign::{Algorithm, HttpSigner, SignedRequest, SoftwareSigner, WebhookEvent};
use adcp_store::{StoreOptions, StoreUrl};
use adcp_verify::{KeyResolver, StaticKeyResolver};
use adcp_webhook::{McpWebhook, TaskStatus};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const AGENT: &str = "https://seller.example/mcp";
pub const PATH: &str = "/webhooks/adcp";

/// What the upstream saw: every request's headers and body, and which it
/// answered 2xx.
#[derive(Default)]
pub struct Seen {
    pub applied: Mutex<Vec<(HeaderMap, Vec<u8>)>>,
    pub failures_left: AtomicUsize,
    pub requests: AtomicUsize,
    pub delay: Mutex<Option<Duration>>,
    /// Apply (record) the event before the delay rather than after: an
    /// upstream that did the work but answers late.
    pub apply_before_delay: std::sync::atomic::AtomicBool,
}

pub struct Upstream {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Upstream {
    pub async fn start() -> Self {
        let seen = Arc::new(Seen::default());
        let app = Router::new()
            .route("/events", post(receive))
            .with_state(Arc::clone(&seen));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { addr, seen, task }
    }

    pub fn url(&self) -> url::Url {
        format!("http://{}/events", self.addr).parse().unwrap()
    }

    /// Idempotency keys of the applied events.
    pub fn applied_keys(&self) -> Vec<String> {
        self.seen
            .applied
            .lock()
            .unwrap()
            .iter()
            .map(|(h, _)| h["x-adcp-idempotency-key"].to_str().unwrap().to_owned())
            .collect()
    }

    pub fn fail_next(&self, n: usize) {
        self.seen.failures_left.store(n, Ordering::SeqCst);
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receive(State(seen): State<Arc<Seen>>, headers: HeaderMap, body: axum::body::Bytes) -> StatusCode {
    seen.requests.fetch_add(1, Ordering::SeqCst);
    let delay = *seen.delay.lock().unwrap();
    if let Some(delay) = delay {
        if seen.apply_before_delay.load(Ordering::SeqCst) {
            seen.applied.lock().unwrap().push((headers, body.to_vec()));
            tokio::time::sleep(delay).await;
            return StatusCode::OK;
        }
        tokio::time::sleep(delay).await;
    }
    if seen
        .failures_left
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    seen.applied.lock().unwrap().push((headers, body.to_vec()));
    StatusCode::OK
}

/// A seller key, its signer and the JWKS the buyer trusts.
pub struct Seller {
    pub signer: HttpSigner<SoftwareSigner>,
    pub jwks: serde_json::Value,
}

impl Seller {
    pub fn new() -> Self {
        let key = SoftwareSigner::generate(Algorithm::Ed25519, "gw-test-key").unwrap();
        let jwks = key.jwks().unwrap().to_public_json();
        Self {
            signer: HttpSigner::webhook(key).unwrap(),
            jwks,
        }
    }

    pub fn keys(&self) -> Arc<StaticKeyResolver> {
        Arc::new(StaticKeyResolver::new().with_jwks(&self.jwks, AGENT))
    }

    /// Signs `event` for the gateway at `handle` (fresh nonce every call).
    pub async fn sign(&self, handle: &GatewayHandle, event: &WebhookEvent) -> SignedRequest {
        let url = format!("{}{PATH}", handle.base_url());
        self.signer.sign_webhook(&url, event).await.unwrap()
    }
}

pub fn event(n: &str) -> WebhookEvent {
    McpWebhook::new(
        format!("task_{n}"),
        "create_media_buy",
        TaskStatus::Completed,
        "2026-04-18T12:00:00Z",
    )
    .result(serde_json::json!({"media_buy_id": format!("mb_{n}")}))
    .into_event()
    .unwrap()
}

/// Starts a gateway in-process on a loopback port.
pub async fn gateway(seller: &Seller, store: &str, namespace: &str, upstream: url::Url) -> GatewayHandle {
    let store_options = StoreOptions {
        namespace: namespace.to_owned(),
        op_timeout: Duration::from_secs(1),
        ..StoreOptions::default()
    };
    let mut options = GatewayOptions::new(upstream);
    options.upstream_timeout = Duration::from_secs(2);
    start(seller.keys(), store, store_options, options).await
}

/// A gateway in-process on a loopback port, with these store and gateway
/// settings.
pub async fn start(
    keys: Arc<dyn KeyResolver>,
    store: &str,
    store_options: StoreOptions,
    options: GatewayOptions,
) -> GatewayHandle {
    let url: StoreUrl = store.parse().unwrap();
    let store = adcp_store::open(&url, store_options).await.unwrap();
    serve(&Gateway::new(keys, store, options).unwrap()).await
}

/// Serves `gateway` on a loopback port.
pub async fn serve(gateway: &Gateway) -> GatewayHandle {
    gateway
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap()
}

/// Sends `signed` (optionally with another body) to `handle`; returns the
/// status and the `WWW-Authenticate` error code, if any.
pub async fn send(handle: &GatewayHandle, signed: &SignedRequest, body: Option<Vec<u8>>) -> (u16, Option<String>) {
    let client = http_client(Duration::from_secs(10)).unwrap();
    let mut request = signed_post(&client, format!("{}{PATH}", handle.base_url()), signed);
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = request.send().await.unwrap();
    let code = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("error=\"").nth(1))
        .and_then(|v| v.split('"').next())
        .map(str::to_owned);
    (response.status().as_u16(), code)
}

/// An HTTP client for the gateways under test (no proxy, no redirects),
/// giving up after `timeout`.
pub fn http_client(timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    Ok(adcp_test_support::http_client(timeout))
}

/// A POST of `signed` to `url`: its headers, and its body as signed.
pub fn signed_post(
    client: &reqwest::Client,
    url: impl reqwest::IntoUrl,
    signed: &SignedRequest,
) -> reqwest::RequestBuilder {
    let mut request = client.post(url);
    for (name, value) in signed.headers() {
        request = request.header(*name, value.as_str());
    }
    request.body(signed.body().unwrap().as_bytes().to_vec())
}

pub async fn get(url: String) -> (u16, String) {
    let client = http_client(Duration::from_secs(10)).unwrap();
    let response = client.get(url).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Reads a gateway process's stderr up to its line
/// `adcp-sig gateway listening on http://ADDR (…)` (warnings may come
/// first, e.g. the memory store's): the line, and ADDR.
pub fn listening(stderr: &mut impl std::io::BufRead) -> (String, String) {
    let line = line_with(stderr, "listening on http://");
    let addr = line
        .split("listening on http://")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no listening line: {line:?}"))
        .to_owned();
    (line, addr)
}

/// Reads `stderr` up to the first line containing `needle`, and returns it.
pub fn line_with(stderr: &mut impl std::io::BufRead, needle: &str) -> String {
    loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no line with {needle:?}");
        if line.contains(needle) {
            return line;
        }
    }
}

/// A name unique to this test run: `[a-z_][a-z0-9_]*`.
pub fn unique(tag: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "gw_{tag}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A temporary directory removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(unique(tag));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn sqlite(&self) -> String {
        format!("sqlite:{}", self.0.join("dedup.sqlite").display())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
