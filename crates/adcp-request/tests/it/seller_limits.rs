//! The layer's limits and shared state: the body limit before any
//! cryptography (from `Content-Length` and while streaming), the replay
//! cache shared by a fleet through `adcp_store::SqliteStore`, outages
//! answered `503` with `Retry-After`, a request without an authority.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::common::{received, send, tools_call, Buyer, NOW};
use adcp_request::{RequestVerifier, RequestVerifierLayer};
use adcp_verify::request_policy::VerifierCapability;
use adcp_verify::{
    CapKey, DigestCoverage, FixedClock, InsertOutcome, KeyResolver, MemoryReplayStore, ReplayKey, ReplayLimits,
    ReplayStore, ResolveError, ResolvedKey, RevocationStatus, StaticKeyResolver, StoreError,
};
use bytes::Bytes;
use http_body::Frame;
use serde_json::json;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

fn capability() -> VerifierCapability {
    VerifierCapability::builder(DigestCoverage::Required)
        .required_for(["create_media_buy"])
        .build()
        .unwrap()
}

/// Counts key lookups: proof that no checklist work happened.
struct Counting(StaticKeyResolver, AtomicUsize);

#[async_trait::async_trait]
impl KeyResolver for Counting {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0.resolve(keyid).await
    }

    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError> {
        self.0.revocation_status(key, now).await
    }
}

/// A body delivered in chunks, with no size hint.
struct Chunks(VecDeque<Bytes>);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
    }
}

#[tokio::test]
async fn oversized_bodies_are_refused_before_any_cryptography() {
    let buyer = Buyer::new();
    let padding = "x".repeat(2_000);
    let body = tools_call(
        "create_media_buy",
        json!({"idempotency_key": "big-1", "notes": padding}),
    );
    let signed = buyer.sign("https://seller.example.com/mcp", &body).await;
    let keys = Arc::new(Counting(buyer.keys.clone(), AtomicUsize::new(0)));
    let replay = Arc::new(MemoryReplayStore::request());
    let build = |limit: usize| {
        RequestVerifier::builder(keys.clone(), replay.clone(), capability())
            .clock(Arc::new(FixedClock(NOW)))
            .max_body_bytes(limit)
            .build()
            .unwrap()
    };
    let small = build(1_000);

    // Declared: refused from Content-Length, before the body is read.
    let mut declared = received(&signed);
    let len = signed.body().unwrap().len();
    declared
        .headers_mut()
        .insert(http::header::CONTENT_LENGTH, len.to_string().parse().unwrap());
    let a = send(&small, declared).await;
    assert_eq!(a.status, 413, "{a:?}");
    assert_eq!(a.code(), Some("request_body_too_large"));
    assert!(a.challenges.is_empty());

    // Streamed without a length: refused while reading.
    let (parts, _) = received(&signed).into_parts();
    let bytes = Bytes::copy_from_slice(signed.body().unwrap().as_bytes());
    let chunks: VecDeque<Bytes> = bytes.chunks(300).map(Bytes::copy_from_slice).collect();
    let streamed = http::Request::from_parts(parts, Chunks(chunks));
    let a = send(&small, streamed).await;
    assert_eq!(a.status, 413, "{a:?}");

    assert_eq!(keys.1.load(Ordering::SeqCst), 0, "no key was resolved");
    assert!(replay.is_empty(), "no nonce was burned");

    // The same request under a limit it fits verifies (it was valid).
    let a = send(&build(4_096), received(&signed)).await;
    assert!(a.reached_handler(), "{a:?}");
    assert_eq!(keys.1.load(Ordering::SeqCst), 1);
}

/// Two layer instances (two processes of a fleet) sharing one SQLite
/// replay store: a request accepted by one is a replay at the other.
#[tokio::test]
async fn replay_is_detected_across_a_fleet_sharing_a_store() {
    let dir = std::env::temp_dir().join(format!("adcp-request-fleet-{}-{NOW}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let options = adcp_store::SqliteOptions {
        replay_limits: ReplayLimits::request(),
        ..adcp_store::SqliteOptions::default()
    };
    let store = Arc::new(
        adcp_store::SqliteStore::open_async(dir.join("replay.sqlite3"), options)
            .await
            .unwrap(),
    );
    let buyer = Buyer::new();
    let instance = || {
        RequestVerifier::builder(Arc::new(buyer.keys.clone()), store.clone(), capability())
            .clock(Arc::new(FixedClock(NOW)))
            .build()
            .unwrap()
    };
    let (a, b) = (instance(), instance());
    let body = tools_call("create_media_buy", json!({"idempotency_key": "fleet-1"}));
    let signed = buyer.sign("https://seller.example.com/mcp", &body).await;

    let first = send(&a, received(&signed)).await;
    assert!(first.reached_handler(), "{first:?}");
    send(&b, received(&signed))
        .await
        .assert_rejected_with("request_signature_replayed", "second instance");
    send(&a, received(&signed))
        .await
        .assert_rejected_with("request_signature_replayed", "first instance again");
    drop((a, b, store));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A replay store that does not answer.
struct Down;

#[async_trait::async_trait]
impl ReplayStore for Down {
    async fn keyid_cap_reached(&self, _: CapKey<'_>, _: i64) -> Result<bool, StoreError> {
        Err(StoreError("connection refused".into()))
    }

    async fn contains(&self, _: ReplayKey<'_>, _: i64) -> Result<bool, StoreError> {
        Err(StoreError("connection refused".into()))
    }

    async fn insert(&self, _: ReplayKey<'_>, _: i64, _: i64) -> Result<InsertOutcome, StoreError> {
        Err(StoreError("connection refused".into()))
    }
}

#[tokio::test]
async fn a_store_outage_is_a_retryable_503() {
    let buyer = Buyer::new();
    let verifier = RequestVerifier::builder(Arc::new(buyer.keys.clone()), Arc::new(Down), capability())
        .clock(Arc::new(FixedClock(NOW)))
        .build()
        .unwrap();
    let body = tools_call("create_media_buy", json!({"idempotency_key": "down-1"}));
    let a = send(
        &verifier,
        received(&buyer.sign("https://seller.example.com/mcp", &body).await),
    )
    .await;
    assert_eq!(a.status, 503, "{a:?}");
    assert_eq!(a.code(), Some("request_verifier_unavailable"));
    assert!(a.challenges.is_empty(), "no challenge on a 503");
    assert_eq!(a.retry_after.as_deref(), Some("2"));
    assert!(
        !format!("{:?}", a.json).contains("connection refused"),
        "no detail leaks"
    );
}

#[tokio::test]
async fn a_request_without_authority_is_a_malformed_target() {
    let verifier = RequestVerifier::builder(
        Arc::new(StaticKeyResolver::new()),
        Arc::new(MemoryReplayStore::request()),
        capability(),
    )
    .build()
    .unwrap();
    let request = http::Request::post("/mcp")
        .body(http_body_util::Full::new(Bytes::from_static(b"{}")))
        .unwrap();
    send(&verifier, request)
        .await
        .assert_rejected_with("request_target_uri_malformed", "no Host");
}

/// With a public base URL the target is rebuilt from configuration; the
/// received Host must still match what was signed.
#[tokio::test]
async fn public_base_url_rebuilds_the_target() {
    let buyer = Buyer::new();
    let verifier = RequestVerifier::builder(
        Arc::new(buyer.keys.clone()),
        Arc::new(MemoryReplayStore::request()),
        capability(),
    )
    .clock(Arc::new(FixedClock(NOW)))
    .public_base_url("https://seller.example.com/api/")
    .build()
    .unwrap();
    let body = tools_call("create_media_buy", json!({"idempotency_key": "base-1"}));
    let signed = buyer.sign("https://seller.example.com/api/mcp", &body).await;
    // A proxy stripped the /api prefix.
    let (mut parts, body) = received(&signed).into_parts();
    parts.uri = "/mcp".parse().unwrap();
    let a = send(&verifier, http::Request::from_parts(parts, body)).await;
    assert!(a.reached_handler(), "{a:?}");

    // The layer type is usable on its own too.
    let layer = RequestVerifierLayer::new(verifier);
    assert_eq!(layer.verifier().max_body_bytes(), adcp_request::DEFAULT_MAX_BODY_BYTES);
}
