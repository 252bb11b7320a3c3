//! Shared test fixtures: seller keys, loopback receivers, short-backoff senders.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
use adcp_verify::{KeyResolver, ResolveError, ResolvedKey, RevocationStatus, StaticKeyResolver};
use adcp_verify::{MemoryReplayStore, ReplayStore};
use adcp_webhook::payload::PayloadKind;
use adcp_webhook::{DestinationPolicy, RetryPolicy, WebhookSender};
use adcp_webhook::{Receiver, ReceiverConfig, ReceiverLayer, Webhook};
use async_trait::async_trait;
use axum::routing::post;
use axum::Router;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const AGENT_URL: &str = "https://seller.example/mcp";

/// A seller key and its public JWKS.
pub fn seller(alg: Algorithm, kid: &str) -> (HttpSigner<SoftwareSigner>, serde_json::Value) {
    let key = SoftwareSigner::generate(alg, kid).unwrap();
    let jwks = key.jwks().unwrap().to_public_json();
    (HttpSigner::webhook(key).unwrap(), jwks)
}

pub fn keys_for(jwks: &serde_json::Value) -> Arc<dyn KeyResolver> {
    Arc::new(StaticKeyResolver::new().with_jwks(jwks, AGENT_URL))
}

pub fn memory_idempotency() -> Arc<MemoryIdempotencyStore> {
    Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default()).unwrap())
}

pub fn memory_replay() -> Arc<dyn ReplayStore> {
    Arc::new(MemoryReplayStore::webhook())
}

/// A receiver over plain HTTP on loopback.
pub fn http_config() -> ReceiverConfig {
    ReceiverConfig {
        scheme: "http".to_owned(),
        ..ReceiverConfig::default()
    }
}

/// Counts resolver calls: zero proves the checklist never reached key
/// resolution (step 7), so nothing after it (signature, digest) ran.
pub struct CountingKeys {
    pub inner: Arc<dyn KeyResolver>,
    pub calls: AtomicUsize,
}

#[async_trait]
impl KeyResolver for CountingKeys {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.resolve(keyid).await
    }

    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError> {
        self.inner.revocation_status(key, now).await
    }
}

/// The side-effect counter of a test handler.
#[derive(Default)]
pub struct Effects {
    pub applied: AtomicUsize,
    pub keys: std::sync::Mutex<std::collections::HashMap<String, usize>>,
}

impl Effects {
    pub fn apply(&self, webhook: &Webhook) {
        self.applied.fetch_add(1, Ordering::SeqCst);
        *self
            .keys
            .lock()
            .unwrap()
            .entry(webhook.idempotency_key().to_owned())
            .or_insert(0) += 1;
    }

    pub fn count(&self) -> usize {
        self.applied.load(Ordering::SeqCst)
    }
}

/// Serves `receiver` on 127.0.0.1 with a handler that records each event.
pub async fn serve(receiver: Receiver, effects: Arc<Effects>) -> SocketAddr {
    // Any path: the layer wraps the whole router (receivers may demux by
    // path, never correlate by it).
    let app = Router::new()
        .fallback(post(move |webhook: Webhook| {
            let effects = Arc::clone(&effects);
            async move {
                // The handler sees the verified sender, the raw bytes and the payload.
                assert_eq!(webhook.sender(), AGENT_URL);
                assert_eq!(
                    serde_json::from_slice::<serde_json::Value>(webhook.raw()).unwrap(),
                    *webhook.payload()
                );
                effects.apply(&webhook);
                "ok"
            }
        }))
        .layer(ReceiverLayer::new(receiver));
    serve_router(app).await
}

pub async fn serve_router(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    addr
}

/// Short test backoffs: 10 ms first, 50 ms ceiling, 10 s horizon.
pub fn fast_retries() -> RetryPolicy {
    RetryPolicy::new(
        Duration::from_millis(10),
        Duration::from_millis(50),
        Duration::from_secs(10),
    )
    .unwrap()
    .with_timeouts(Duration::from_secs(5), Duration::from_secs(2))
    .unwrap()
}

pub fn loopback_sender(signer: HttpSigner<SoftwareSigner>, policy: RetryPolicy) -> WebhookSender<SoftwareSigner> {
    WebhookSender::builder(signer)
        .retry_policy(policy)
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .build()
        .unwrap()
}

pub fn url(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}

/// The project fixture of `kind` (`tests/fixtures/payloads/<kind>.json`).
pub fn fixture(kind: PayloadKind) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/payloads")
        .join(format!("{}.json", kind.as_str()));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `relative` from the conformance suite; `None` (the test skips) when the
/// suite is absent and `CI` is not `true`.
pub fn suite_file(relative: &str) -> Option<serde_json::Value> {
    let suite = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}"))?;
    Some(adcp_vectors::load_json(&suite, relative).unwrap_or_else(|e| panic!("{e}")))
}
