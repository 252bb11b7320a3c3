//! Fixtures: a counting upstream on loopback, a seller key, a scratch
//! directory, and an HTTP client.

use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner, WebhookEvent};
use adcp_webhook::{McpWebhook, TaskStatus};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The seller's agent URL: the verified sender.
pub const AGENT: &str = "https://seller.example/mcp";
/// The webhook path.
pub const PATH: &str = "/webhooks/adcp";

/// The events the upstream applied: each one's headers and body.
pub type Applied = Arc<Mutex<Vec<(HeaderMap, Vec<u8>)>>>;

/// An upstream that records the headers and body of every event it is
/// posted and answers `200`.
pub struct Upstream {
    pub addr: SocketAddr,
    pub applied: Applied,
    task: tokio::task::JoinHandle<()>,
}

impl Upstream {
    pub async fn start() -> Self {
        let applied = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/events", post(receive))
            .with_state(Arc::clone(&applied));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { addr, applied, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}/events", self.addr)
    }

    pub fn applied(&self) -> Vec<(HeaderMap, Vec<u8>)> {
        self.applied.lock().unwrap().clone()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receive(State(applied): State<Applied>, headers: HeaderMap, body: axum::body::Bytes) -> StatusCode {
    applied.lock().unwrap().push((headers, body.to_vec()));
    StatusCode::OK
}

/// The seller: the Ed25519 key of the gateway tests (kid `gw-test-key`),
/// its signer and public JWKS.
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
}

/// A `create_media_buy` completion, keyed by `n`.
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

/// A directory of its own, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "adcp-gateway-it-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A plain HTTP client (10 s deadline).
pub fn http_client() -> reqwest::Client {
    adcp_test_support::http_client(Duration::from_secs(10))
}

/// `gateway` served on a free loopback port.
pub async fn serve_loopback(gateway: &adcp_gateway::Gateway) -> adcp_gateway::GatewayHandle {
    gateway
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap()
}

/// The gateway's `/metrics` text at `base`.
pub async fn metrics_text(base: &str) -> String {
    http_client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Sends `signed` as a `POST` to `request` (a builder with the URL and any
/// extra headers already set): its signature headers and its own body.
pub async fn post_signed(request: reqwest::RequestBuilder, signed: &adcp_sign::SignedRequest) -> reqwest::Response {
    post_signed_with(request, signed, signed.body().unwrap().as_bytes().to_vec()).await
}

/// [`post_signed`] with `body` in place of the signed one (to tamper).
pub async fn post_signed_with(
    mut request: reqwest::RequestBuilder,
    signed: &adcp_sign::SignedRequest,
    body: Vec<u8>,
) -> reqwest::Response {
    for (name, value) in signed.headers() {
        request = request.header(*name, value.as_str());
    }
    request.body(body).send().await.unwrap()
}

/// A `Signature` header value with one base64 symbol of the signature
/// changed: still well-formed, no longer valid.
pub fn forged_signature(value: &str) -> String {
    let at = value.len() / 2;
    let mut forged = value.to_owned();
    let c = if &forged[at..=at] == "A" { "B" } else { "A" };
    forged.replace_range(at..=at, c);
    forged
}
