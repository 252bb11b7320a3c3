//! Acceptance: failure paths of the sender and the receiver.

use crate::common::*;
use adcp_sign::{Algorithm, RandomSource, RandomnessUnavailable, WebhookEvent};
use adcp_store::{
    ClaimOutcome, ClaimToken, Fingerprint, IdempotencyConfig, IdempotencyError, IdempotencyRecord, IdempotencyStore,
    MemoryIdempotencyStore, SenderKey,
};
use adcp_verify::legacy::WebhookAuthMode;
use adcp_webhook::{outcome, Receiver, ReceiverLayer, Webhook};
use adcp_webhook::{AttemptStatus, DeliveryOutcome, Destination, DestinationPolicy, WebhookSender};
use adcp_webhook::{McpWebhook, TaskStatus};
use async_trait::async_trait;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower::ServiceExt;

fn event(task: &str) -> WebhookEvent {
    McpWebhook::new(task, "create_media_buy", TaskStatus::Completed, "2026-04-18T12:00:00Z")
        .operation_id("op_1")
        .result(serde_json::json!({"media_buy_id": "mb_1"}))
        .into_event()
        .unwrap()
}

/// Jitter that always draws the top of the range: the wait is the ceiling.
struct MaxJitter;
impl RandomSource for MaxJitter {
    fn fill(&self, dest: &mut [u8]) -> Result<(), RandomnessUnavailable> {
        dest.fill(0xff);
        Ok(())
    }
}

#[derive(Default)]
struct Seen {
    signature_inputs: Mutex<Vec<String>>,
    bodies: Mutex<Vec<Bytes>>,
}

/// A stand-in receiver that answers 503 to the first `failures` requests.
async fn flaky(
    failures: usize,
    status: StatusCode,
    retry_after: Option<&'static str>,
    seen: Arc<Seen>,
) -> std::net::SocketAddr {
    let count = Arc::new(AtomicUsize::new(0));
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: Bytes| {
            let count = Arc::clone(&count);
            let seen = Arc::clone(&seen);
            async move {
                seen.signature_inputs
                    .lock()
                    .unwrap()
                    .push(headers["signature-input"].to_str().unwrap().to_owned());
                seen.bodies.lock().unwrap().push(body);
                if count.fetch_add(1, Ordering::SeqCst) < failures {
                    let mut h = HeaderMap::new();
                    if let Some(ra) = retry_after {
                        h.insert("retry-after", ra.parse().unwrap());
                    }
                    (status, h)
                } else {
                    (StatusCode::OK, HeaderMap::new())
                }
            }
        }),
    );
    serve_router(app).await
}

#[tokio::test]
async fn retries_503_with_backoff_then_succeeds_once_with_fresh_signatures() {
    let seen = Arc::new(Seen::default());
    let addr = flaky(2, StatusCode::SERVICE_UNAVAILABLE, None, Arc::clone(&seen)).await;
    let (signer, _) = seller(Algorithm::Ed25519, "seller-retry");
    let sender = WebhookSender::builder(signer)
        .retry_policy(fast_retries())
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .jitter_source(Arc::new(MaxJitter))
        .build()
        .unwrap();
    let ev = event("task_retry");
    let started = Instant::now();
    let report = sender.deliver(&Destination::new(url(addr, "/hook")), &ev).await;
    let elapsed = started.elapsed();
    assert_eq!(report.outcome, DeliveryOutcome::Delivered { status: 200 });
    let statuses: Vec<_> = report
        .attempts
        .iter()
        .map(|a| (a.attempt, a.status, a.http_status_code))
        .collect();
    assert_eq!(
        statuses,
        [
            (1, AttemptStatus::Failed, Some(503)),
            (2, AttemptStatus::Failed, Some(503)),
            (3, AttemptStatus::Success, Some(200)),
        ]
    );
    // Backoff ceilings 10 ms then 20 ms, drawn at their maximum.
    assert!(elapsed >= Duration::from_millis(30), "{elapsed:?}");
    // Same bytes every time; a fresh nonce and signature each time.
    let bodies = seen.bodies.lock().unwrap();
    assert!(bodies.iter().all(|b| b.as_ref() == ev.body().as_bytes()));
    let inputs = seen.signature_inputs.lock().unwrap();
    assert_eq!(inputs.len(), 3);
    let nonces: std::collections::HashSet<_> = inputs
        .iter()
        .map(|i| i.split("nonce=").nth(1).unwrap().split(';').next().unwrap().to_owned())
        .collect();
    assert_eq!(nonces.len(), 3);
    assert!(report
        .attempts
        .iter()
        .all(|a| a.idempotency_key == ev.idempotency_key().as_str()));
    let first = &report.attempts[0];
    assert_eq!(first.status.as_str(), "failed");
    assert_eq!(first.error_message.as_deref(), Some("HTTP 503"));
    assert_eq!(first.error_code, None);
}

/// At-least-once: every answer but `2xx`, a `webhook_*` `401` and `409`
/// is retried (the spec's "retry on any non-2xx"), a plain `401` and the
/// other `4xx` included.
#[tokio::test]
async fn every_other_4xx_and_a_plain_401_are_retried() {
    for status in [
        StatusCode::BAD_REQUEST,
        StatusCode::UNAUTHORIZED,
        StatusCode::FORBIDDEN,
        StatusCode::NOT_FOUND,
        StatusCode::GONE,
        StatusCode::PAYLOAD_TOO_LARGE,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        StatusCode::UNPROCESSABLE_ENTITY,
    ] {
        let seen = Arc::new(Seen::default());
        let addr = flaky(1, status, None, Arc::clone(&seen)).await;
        let (signer, _) = seller(Algorithm::Ed25519, "seller-4xx");
        let sender = loopback_sender(signer, fast_retries());
        let report = sender
            .deliver(&Destination::new(url(addr, "/hook")), &event("task_4xx"))
            .await;
        assert_eq!(report.outcome, DeliveryOutcome::Delivered { status: 200 }, "{status}");
        let statuses: Vec<_> = report.attempts.iter().map(|a| (a.status, a.http_status_code)).collect();
        assert_eq!(
            statuses,
            [
                (AttemptStatus::Failed, Some(status.as_u16())),
                (AttemptStatus::Success, Some(200)),
            ],
            "{status}"
        );
        assert_eq!(seen.bodies.lock().unwrap().len(), 2, "{status}");
    }
}

/// A redirect is neither followed (the SSRF rules) nor final: it is
/// retried at the registered URL until the attempts run out.
#[tokio::test]
async fn redirects_are_retried_never_followed() {
    let elsewhere = Arc::new(AtomicUsize::new(0));
    let hits = Arc::clone(&elsewhere);
    let app = Router::new()
        .route(
            "/hook",
            post(|| async { (StatusCode::TEMPORARY_REDIRECT, [("location", "/elsewhere")]) }),
        )
        .route(
            "/elsewhere",
            post(move || {
                hits.fetch_add(1, Ordering::SeqCst);
                async { StatusCode::OK }
            }),
        );
    let addr = serve_router(app).await;
    let (signer, _) = seller(Algorithm::Ed25519, "seller-3xx");
    let sender = loopback_sender(signer, fast_retries().with_max_attempts(3).unwrap());
    let report = sender
        .deliver(&Destination::new(url(addr, "/hook")), &event("task_3xx"))
        .await;
    assert_eq!(report.outcome, DeliveryOutcome::GaveUp);
    assert_eq!(report.attempts.len(), 3);
    assert!(report.attempts.iter().all(|a| a.http_status_code == Some(307)));
    assert_eq!(elsewhere.load(Ordering::SeqCst), 0, "a redirect was followed");
}

#[tokio::test]
async fn honours_retry_after_on_429() {
    let seen = Arc::new(Seen::default());
    let addr = flaky(1, StatusCode::TOO_MANY_REQUESTS, Some("1"), seen).await;
    let (signer, _) = seller(Algorithm::Ed25519, "seller-429");
    let sender = loopback_sender(signer, fast_retries());
    let started = Instant::now();
    let report = sender
        .deliver(&Destination::new(url(addr, "/hook")), &event("task_429"))
        .await;
    assert_eq!(report.outcome, DeliveryOutcome::Delivered { status: 200 });
    assert_eq!(report.attempts.len(), 2);
    // The ceiling is 50 ms; only Retry-After explains a wait of a second.
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn gives_up_at_the_horizon() {
    let seen = Arc::new(Seen::default());
    let addr = flaky(usize::MAX, StatusCode::BAD_GATEWAY, None, seen).await;
    let (signer, _) = seller(Algorithm::Ed25519, "seller-horizon");
    let policy = adcp_webhook::RetryPolicy::new(
        Duration::from_millis(20),
        Duration::from_millis(20),
        Duration::from_millis(150),
    )
    .unwrap();
    let sender = WebhookSender::builder(signer)
        .retry_policy(policy)
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .jitter_source(Arc::new(MaxJitter))
        .build()
        .unwrap();
    let report = sender
        .deliver(&Destination::new(url(addr, "/hook")), &event("task_h"))
        .await;
    assert_eq!(report.outcome, DeliveryOutcome::GaveUp);
    assert!(
        report.attempts.len() >= 2 && report.attempts.len() <= 9,
        "{}",
        report.attempts.len()
    );
    assert!(report.attempts.iter().all(|a| a.http_status_code == Some(502)));
}

#[tokio::test]
async fn signature_rejection_is_terminal_and_reported_with_its_code() {
    // The receiver knows a different key under the sender's kid.
    let (signer, _) = seller(Algorithm::Ed25519, "seller-kid");
    let (_, other_jwks) = seller(Algorithm::Ed25519, "seller-kid");
    let effects = Arc::new(Effects::default());
    let receiver = Receiver::builder(keys_for(&other_jwks), memory_replay(), memory_idempotency())
        .config(http_config())
        .build()
        .unwrap();
    let addr = serve(receiver.clone(), Arc::clone(&effects)).await;
    let sender = loopback_sender(signer, fast_retries());
    let report = sender
        .deliver(&Destination::new(url(addr, "/webhooks/x")), &event("task_401"))
        .await;
    assert_eq!(
        report.outcome,
        DeliveryOutcome::SignatureRejected {
            code: "webhook_signature_invalid".to_owned()
        }
    );
    assert_eq!(report.attempts.len(), 1, "no retry after a webhook_* 401");
    assert_eq!(
        report.attempts[0].error_code.as_deref(),
        Some("webhook_signature_invalid")
    );
    assert_eq!(report.attempts[0].http_status_code, Some(401));
    assert_eq!(effects.count(), 0);
    assert_eq!(receiver.metrics().get("webhook_signature_invalid"), 1);
}

fn layered(receiver: Receiver, effects: Arc<Effects>) -> Router {
    Router::new().route(
        "/hook",
        post(move |w: Webhook| {
            let effects = Arc::clone(&effects);
            async move {
                effects.apply(&w);
                "ok"
            }
        })
        .layer(ReceiverLayer::new(receiver)),
    )
}

fn to_axum(signed: &adcp_sign::SignedRequest) -> http::Request<axum::body::Body> {
    signed.to_http().unwrap().map(axum::body::Body::from)
}

#[tokio::test]
async fn tampered_body_is_a_digest_mismatch() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-tamper");
    let effects = Arc::new(Effects::default());
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .build()
        .unwrap();
    let app = layered(receiver, Arc::clone(&effects));
    let ev = event("task_tamper");
    let signed = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    let tampered = signed
        .to_http()
        .unwrap()
        .map(|b| axum::body::Body::from(String::from_utf8(b).unwrap().replace("mb_1", "mb_9")));
    let response = app.clone().oneshot(tampered).await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Signature error=\"webhook_signature_digest_mismatch\""
    );
    // The challenge and the code's fixed message, nothing more: no other
    // header, no verification detail in the body.
    let names: Vec<_> = response.headers().keys().map(|k| k.as_str().to_owned()).collect();
    assert!(
        names
            .iter()
            .all(|n| matches!(n.as_str(), "www-authenticate" | "content-type" | "content-length")),
        "{names:?}"
    );
    assert_eq!(response.headers()["content-type"], "application/json");
    let body = axum::body::to_bytes(response.into_body(), 1024).await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "error": "webhook_signature_digest_mismatch",
            "message": "The Content-Digest does not match the body.",
        })
    );
    assert_eq!(effects.count(), 0);

    // The untouched request still goes through.
    let signed = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    assert_eq!(app.oneshot(to_axum(&signed)).await.unwrap().status(), 200);
    assert_eq!(effects.count(), 1);
}

/// A body that counts the bytes pulled out of it.
struct CountingBody {
    remaining: usize,
    chunk: usize,
    pulled: Arc<AtomicUsize>,
    declare_len: bool,
}

impl http_body::Body for CountingBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        let n = self.chunk.min(self.remaining);
        self.remaining -= n;
        self.pulled.fetch_add(n, Ordering::SeqCst);
        Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(vec![b' '; n])))))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        if self.declare_len {
            http_body::SizeHint::with_exact(self.remaining as u64)
        } else {
            http_body::SizeHint::default()
        }
    }
}

#[tokio::test]
async fn two_mib_body_is_413_before_anything_is_hashed() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-413");
    let keys = Arc::new(CountingKeys {
        inner: keys_for(&jwks),
        calls: AtomicUsize::new(0),
    });
    let receiver = Receiver::builder(keys.clone(), memory_replay(), memory_idempotency())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let two_mib = 2 * 1024 * 1024;
    // Genuinely signed headers (the signer itself refuses bodies over
    // 1 MiB) on a 2 MiB body: were it hashed, it would be a 401 digest
    // mismatch, not a 413.
    let signed = signer
        .sign_webhook("https://buyer.example/hook", &event("task_big"))
        .await
        .unwrap();
    let head = signed.to_http().unwrap();

    for declare_len in [true, false] {
        let pulled = Arc::new(AtomicUsize::new(0));
        let mut builder = http::Request::builder().method("POST").uri(head.uri());
        for (name, value) in head.headers() {
            builder = builder.header(name, value);
        }
        if declare_len {
            builder = builder.header("content-length", two_mib.to_string());
        }
        let request = builder
            .body(CountingBody {
                remaining: two_mib,
                chunk: 64 * 1024,
                pulled: Arc::clone(&pulled),
                declare_len,
            })
            .unwrap();
        let response = layered(receiver.clone(), Arc::clone(&effects))
            .oneshot(request)
            .await
            .unwrap();
        assert_eq!(response.status(), 413);
        assert!(response.headers().get("www-authenticate").is_none());
        if declare_len {
            // Refused on Content-Length: not one body byte was read.
            assert_eq!(pulled.load(Ordering::SeqCst), 0);
        } else {
            // Chunked: reading stopped at the limit.
            assert!(pulled.load(Ordering::SeqCst) <= 1024 * 1024 + 64 * 1024);
        }
    }
    // The checklist never started: no key was resolved, so neither the
    // signature nor the digest (steps 10–11, after resolution) was computed.
    assert_eq!(keys.calls.load(Ordering::SeqCst), 0);
    assert_eq!(receiver.metrics().get(outcome::PAYLOAD_TOO_LARGE), 2);
    assert_eq!(effects.count(), 0);
}

#[tokio::test]
async fn wrong_content_type_is_415_before_verification() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-415");
    let keys = Arc::new(CountingKeys {
        inner: keys_for(&jwks),
        calls: AtomicUsize::new(0),
    });
    let receiver = Receiver::builder(keys.clone(), memory_replay(), memory_idempotency())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let app = layered(receiver.clone(), Arc::clone(&effects));
    let signed = signer
        .sign_webhook("https://buyer.example/hook", &event("task_415"))
        .await
        .unwrap();
    for ct in ["text/plain", "application/jsonx", "application/x-www-form-urlencoded"] {
        let mut request = to_axum(&signed);
        request.headers_mut().insert("content-type", ct.parse().unwrap());
        assert_eq!(app.clone().oneshot(request).await.unwrap().status(), 415, "{ct}");
    }
    let mut request = to_axum(&signed);
    request.headers_mut().remove("content-type");
    assert_eq!(app.clone().oneshot(request).await.unwrap().status(), 415);
    assert_eq!(keys.calls.load(Ordering::SeqCst), 0);
    assert_eq!(receiver.metrics().get(outcome::UNSUPPORTED_MEDIA_TYPE), 4);
    // `application/json; charset=utf-8` is JSON (the signed value is kept).
    assert_eq!(app.oneshot(to_axum(&signed)).await.unwrap().status(), 200);
}

/// An idempotency store whose backend is down.
struct DownStore;

#[async_trait]
impl IdempotencyStore for DownStore {
    fn config(&self) -> IdempotencyConfig {
        IdempotencyConfig::default()
    }
    async fn claim(&self, _: SenderKey<'_>, _: Fingerprint<'_>, _: i64) -> Result<ClaimOutcome, IdempotencyError> {
        Err(IdempotencyError::Unavailable("connection refused".to_owned()))
    }
    async fn complete(&self, _: SenderKey<'_>, _: ClaimToken, _: i64) -> Result<(), IdempotencyError> {
        Err(IdempotencyError::Unavailable("connection refused".to_owned()))
    }
    async fn complete_with_notification(
        &self,
        _: SenderKey<'_>,
        _: ClaimToken,
        _: Option<&str>,
        _: i64,
    ) -> Result<(), IdempotencyError> {
        Err(IdempotencyError::Unavailable("connection refused".to_owned()))
    }
    async fn notification_origin(&self, _: &str, _: &str, _: i64) -> Result<Option<String>, IdempotencyError> {
        Err(IdempotencyError::Unavailable("connection refused".to_owned()))
    }
    async fn release(&self, _: SenderKey<'_>, _: ClaimToken, _: i64) -> Result<(), IdempotencyError> {
        Err(IdempotencyError::Unavailable("connection refused".to_owned()))
    }
    async fn lookup(&self, _: SenderKey<'_>, _: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError> {
        Err(IdempotencyError::Unavailable("connection refused".to_owned()))
    }
    async fn sender_len(&self, _: &str, _: i64) -> Result<u64, IdempotencyError> {
        Err(IdempotencyError::Unavailable("connection refused".to_owned()))
    }
}

#[tokio::test]
async fn store_outage_is_503_and_never_reaches_the_handler() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-503");
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), Arc::new(DownStore))
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let app = layered(receiver.clone(), Arc::clone(&effects));
    let signed = signer
        .sign_webhook("https://buyer.example/hook", &event("task_down"))
        .await
        .unwrap();
    let response = app.oneshot(to_axum(&signed)).await.unwrap();
    assert_eq!(response.status(), 503);
    assert!(response.headers().get("www-authenticate").is_none());
    assert_eq!(effects.count(), 0);
    assert_eq!(receiver.metrics().get(outcome::STORE_UNAVAILABLE), 1);
}

/// A replay store answering its inserts early, as a group-committing one
/// does, whose entries are lost before their commit while `lose` is set.
struct LosingReplay {
    inner: adcp_verify::MemoryReplayStore,
    lose: AtomicBool,
}

#[async_trait]
impl adcp_verify::ReplayStore for LosingReplay {
    async fn keyid_cap_reached(&self, cap: adcp_verify::CapKey<'_>, now: i64) -> Result<bool, adcp_verify::StoreError> {
        self.inner.keyid_cap_reached(cap, now).await
    }
    async fn contains(&self, key: adcp_verify::ReplayKey<'_>, now: i64) -> Result<bool, adcp_verify::StoreError> {
        self.inner.contains(key, now).await
    }
    async fn insert(
        &self,
        key: adcp_verify::ReplayKey<'_>,
        expires_at: i64,
        now: i64,
    ) -> Result<adcp_verify::InsertOutcome, adcp_verify::StoreError> {
        self.inner.insert(key, expires_at, now).await
    }
    async fn insert_early(
        &self,
        key: adcp_verify::ReplayKey<'_>,
        expires_at: i64,
        now: i64,
    ) -> Result<(adcp_verify::InsertOutcome, adcp_verify::Durability), adcp_verify::StoreError> {
        let outcome = self.inner.insert(key, expires_at, now).await?;
        let lost = self.lose.load(Ordering::SeqCst);
        let durability = adcp_verify::Durability::pending(async move {
            tokio::task::yield_now().await;
            if lost {
                Err(adcp_verify::StoreError("sqlite: disk I/O error".to_owned()))
            } else {
                Ok(())
            }
        });
        Ok((outcome, durability))
    }
}

/// The verifier's replay entry may be answered before its commit; the
/// receiver accepts (delivers, or answers a duplicate `200`) only once it
/// is durable. A lost entry is a `503` that never reaches the handler and
/// gives the claim back, so the sender's retry is delivered.
#[tokio::test]
async fn a_replay_entry_lost_before_its_commit_is_503_and_the_retry_is_delivered() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-lost");
    let replay = Arc::new(LosingReplay {
        inner: adcp_verify::MemoryReplayStore::webhook(),
        lose: AtomicBool::new(true),
    });
    let receiver = Receiver::builder(keys_for(&jwks), replay.clone(), memory_idempotency())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let app = layered(receiver.clone(), Arc::clone(&effects));
    let ev = event("task_lost");
    let first = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    let response = app.clone().oneshot(to_axum(&first)).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(effects.count(), 0, "never delivered on a lost entry");
    assert_eq!(receiver.metrics().get(outcome::STORE_UNAVAILABLE), 1);

    replay.lose.store(false, Ordering::SeqCst);
    let retry = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    assert_eq!(app.clone().oneshot(to_axum(&retry)).await.unwrap().status(), 200);
    assert_eq!(effects.count(), 1, "the claim was given back: the retry is delivered");

    // A duplicate's 200 waits for its entry too.
    replay.lose.store(true, Ordering::SeqCst);
    let again = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    assert_eq!(app.oneshot(to_axum(&again)).await.unwrap().status(), 503);
    assert_eq!(effects.count(), 1);
    let m = receiver.metrics();
    assert_eq!(m.get(outcome::ACCEPTED), 1);
    // Each refused request counted once, as the 503 it was answered.
    assert_eq!((m.get(outcome::STORE_UNAVAILABLE), m.get(outcome::DUPLICATE)), (2, 0));
}

#[tokio::test]
async fn handler_failure_releases_the_claim_so_a_retry_succeeds() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-500");
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .build()
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let app = Router::new().route(
        "/hook",
        post(move |_w: Webhook| {
            let c = Arc::clone(&c);
            async move {
                // Fails the first time, succeeds after.
                if c.fetch_add(1, Ordering::SeqCst) == 0 {
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::OK
                }
            }
        })
        .layer(ReceiverLayer::new(receiver.clone())),
    );
    let ev = event("task_500");
    let first = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    assert_eq!(app.clone().oneshot(to_axum(&first)).await.unwrap().status(), 500);
    let retry = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    assert_eq!(app.clone().oneshot(to_axum(&retry)).await.unwrap().status(), 200);
    let again = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    assert_eq!(app.oneshot(to_axum(&again)).await.unwrap().status(), 200);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "third delivery is a duplicate");
    let m = receiver.metrics();
    assert_eq!(
        (
            m.get(outcome::HANDLER_FAILED),
            m.get(outcome::ACCEPTED),
            m.get(outcome::DUPLICATE)
        ),
        (1, 1, 1)
    );
}

#[tokio::test]
async fn same_key_different_payload_is_409_and_the_sender_stops() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-409");
    let effects = Arc::new(Effects::default());
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .config(http_config())
        .build()
        .unwrap();
    let addr = serve(receiver.clone(), Arc::clone(&effects)).await;
    let sender = loopback_sender(signer, fast_retries());
    let first = event("task_409");
    let changed = WebhookEvent::with_idempotency_key(
        first.idempotency_key().clone(),
        &serde_json::json!({"task_id": "task_409", "status": "failed", "task_type": "create_media_buy"}),
    )
    .unwrap();
    let d = Destination::new(url(addr, "/webhooks/op"));
    assert!(sender.deliver(&d, &first).await.outcome.is_delivered());
    let report = sender.deliver(&d, &changed).await;
    assert_eq!(report.outcome, DeliveryOutcome::Refused { status: 409 });
    assert_eq!(report.attempts.len(), 1);
    assert_eq!(effects.count(), 1);
    // JCS-equivalent bytes (members reordered) are the same event: 200.
    let reordered = WebhookEvent::from_json_bytes(
        serde_json::to_vec(&serde_json::json!({
            "result": {"media_buy_id": "mb_1"}, "operation_id": "op_1", "timestamp": "2026-04-18T12:00:00Z",
            "status": "completed", "task_type": "create_media_buy", "task_id": "task_409",
            "idempotency_key": first.idempotency_key().as_str()
        }))
        .unwrap(),
    )
    .unwrap();
    assert_ne!(reordered.body().as_bytes(), first.body().as_bytes());
    assert_eq!(
        sender.deliver(&d, &reordered).await.outcome,
        DeliveryOutcome::Delivered { status: 200 }
    );
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn sender_over_its_cap_gets_429() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-cap");
    let idempotency = Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::new(86_400, 60, 1).unwrap()).unwrap());
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), idempotency)
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let app = layered(receiver, Arc::clone(&effects));
    let a = signer
        .sign_webhook("https://buyer.example/hook", &event("task_a"))
        .await
        .unwrap();
    let b = signer
        .sign_webhook("https://buyer.example/hook", &event("task_b"))
        .await
        .unwrap();
    assert_eq!(app.clone().oneshot(to_axum(&a)).await.unwrap().status(), 200);
    assert_eq!(app.oneshot(to_axum(&b)).await.unwrap().status(), 429);
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn an_event_in_progress_elsewhere_is_503_with_retry_after() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-busy");
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .build()
        .unwrap();
    let gate = Arc::new(tokio::sync::Notify::new());
    let entered = Arc::new(tokio::sync::Notify::new());
    let (g, e) = (Arc::clone(&gate), Arc::clone(&entered));
    let app = Router::new().route(
        "/hook",
        post(move |_w: Webhook| {
            let (g, e) = (Arc::clone(&g), Arc::clone(&e));
            async move {
                e.notify_one();
                g.notified().await;
                "ok"
            }
        })
        .layer(ReceiverLayer::new(receiver.clone())),
    );
    let ev = event("task_busy");
    let first = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    let second = signer.sign_webhook("https://buyer.example/hook", &ev).await.unwrap();
    let slow = tokio::spawn(app.clone().oneshot(to_axum(&first)));
    entered.notified().await;
    let busy = app.oneshot(to_axum(&second)).await.unwrap();
    assert_eq!(busy.status(), 503);
    assert!(busy.headers().contains_key("retry-after"));
    gate.notify_one();
    assert_eq!(slow.await.unwrap().unwrap().status(), 200);
}

#[tokio::test]
async fn legacy_hmac_registration_and_mode_mismatch() {
    let secret = "a-shared-secret-of-32-bytes-min!";
    let mode = WebhookAuthMode::from_registration(Some(&serde_json::json!({
        "schemes": ["HMAC-SHA256"], "credentials": secret})))
    .unwrap();
    let (signer, jwks) = seller(Algorithm::Ed25519, "seller-hmac");
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .mode(mode, Some(AGENT_URL.to_owned()))
        .config(http_config())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(receiver.clone(), Arc::clone(&effects)).await;
    let sender = loopback_sender(signer, fast_retries());
    let hmac = Destination::from_registration(&serde_json::json!({
        "url": url(addr, "/webhooks/h"),
        "authentication": {"schemes": ["HMAC-SHA256"], "credentials": secret}}))
    .unwrap();
    let ev = event("task_hmac");
    assert_eq!(
        sender.deliver(&hmac, &ev).await.outcome,
        DeliveryOutcome::Delivered { status: 200 }
    );
    // A 9421-signed delivery to an HMAC registration: mode mismatch, terminal.
    let report = sender
        .deliver(&Destination::new(url(addr, "/webhooks/h")), &event("task_9421"))
        .await;
    assert_eq!(
        report.outcome,
        DeliveryOutcome::SignatureRejected {
            code: "webhook_mode_mismatch".to_owned()
        }
    );
    assert_eq!(effects.count(), 1);
    // A legacy receiver without the sender identity is refused at build time.
    let mode = WebhookAuthMode::from_registration(Some(&serde_json::json!({
        "schemes": ["HMAC-SHA256"], "credentials": secret})))
    .unwrap();
    assert!(
        Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
            .mode(mode, None)
            .build()
            .is_err()
    );
}

#[tokio::test]
async fn destinations_failing_ssrf_rules_get_no_attempt() {
    let (signer, _) = seller(Algorithm::Ed25519, "seller-ssrf");
    let prod = WebhookSender::builder(signer).build().unwrap();
    for bad in [
        "http://buyer.example/hook",
        "https://10.0.0.7/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/hook",
        "https://user:pw@buyer.example/hook",
        "https://127.0.0.1:8443/hook",
    ] {
        let report = prod.deliver(&Destination::new(bad), &event("task_ssrf")).await;
        assert!(
            matches!(report.outcome, DeliveryOutcome::InvalidDestination(_)),
            "{bad}: {report:?}"
        );
        assert!(report.attempts.is_empty(), "{bad}");
    }
    // A name that resolves to a private address is refused by the pinned
    // resolver, before any connection.
    let (signer, _) = seller(Algorithm::Ed25519, "seller-ssrf2");
    let rebinding = WebhookSender::builder(signer)
        .dns_resolver(Arc::new(
            adcp_jwks::StaticDnsResolver::new().with("buyer.example", ["10.1.2.3".parse().unwrap()]),
        ))
        .build()
        .unwrap();
    let report = rebinding
        .deliver(&Destination::new("https://buyer.example/hook"), &event("task_dns"))
        .await;
    assert!(
        matches!(report.outcome, DeliveryOutcome::InvalidDestination(_)),
        "{report:?}"
    );
    assert_eq!(report.attempts.len(), 1);
    assert_eq!(report.attempts[0].status, AttemptStatus::ConnectionError);
}

#[tokio::test]
async fn legacy_bearer_registration_round_trip() {
    let token = "bearer-token-with-at-least-32-chars";
    let auth = serde_json::json!({"schemes": ["Bearer"], "credentials": token});
    let mode = WebhookAuthMode::from_registration(Some(&auth)).unwrap();
    let (signer, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-bearer");
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .mode(mode, Some(AGENT_URL.to_owned()))
        .config(http_config())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(receiver, Arc::clone(&effects)).await;
    let sender = loopback_sender(signer, fast_retries());
    let good =
        Destination::from_registration(&serde_json::json!({"url": url(addr, "/webhooks/b"), "authentication": auth}))
            .unwrap();
    let ev = event("task_bearer");
    assert_eq!(
        sender.deliver(&good, &ev).await.outcome,
        DeliveryOutcome::Delivered { status: 200 }
    );
    assert_eq!(
        sender.deliver(&good, &ev).await.outcome,
        DeliveryOutcome::Delivered { status: 200 }
    );
    assert_eq!(effects.count(), 1, "the duplicate was not applied");
    let wrong = Destination::from_registration(&serde_json::json!({"url": url(addr, "/webhooks/b"),
        "authentication": {"schemes": ["Bearer"], "credentials": "another-token-also-32-characters-long"}}))
    .unwrap();
    let report = sender.deliver(&wrong, &event("task_bearer_2")).await;
    assert!(
        matches!(report.outcome, DeliveryOutcome::SignatureRejected { .. }),
        "{report:?}"
    );
    assert_eq!(report.attempts.len(), 1);
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn a2a_registrations_dedupe_on_the_payload_fingerprint() {
    use adcp_sign::{Body, UnsignedRequest};
    let (signer, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-a2a");
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .config(adcp_webhook::ReceiverConfig {
            channel: Some(adcp_webhook::payload::Channel::A2aTask),
            ..adcp_webhook::ReceiverConfig::default()
        })
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let app = Router::new().route(
        "/hook",
        post(move |w: Webhook| {
            let s = Arc::clone(&s);
            async move {
                s.lock()
                    .unwrap()
                    .push((w.idempotency_key().to_owned(), w.data().unwrap().cloned()));
                "ok"
            }
        })
        .layer(ReceiverLayer::new(receiver.clone())),
    );
    let task = |state: &str, n: u32| {
        serde_json::json!({"task": {"id": "task_a2a", "status": {"state": state},
            "artifacts": [{"artifactId": "r", "parts": [{"text": "done"}, {"data": {"n": n}}]}]}})
    };
    let send = |payload: serde_json::Value| {
        let app = app.clone();
        let signer = &signer;
        async move {
            let body = Body::from_json_bytes(serde_json::to_vec(&payload).unwrap()).unwrap();
            let signed = signer
                .sign(&UnsignedRequest::post("https://buyer.example/hook", &body))
                .await
                .unwrap();
            app.oneshot(to_axum(&signed)).await.unwrap().status()
        }
    };
    assert_eq!(send(task("TASK_STATE_COMPLETED", 1)).await, 200);
    assert_eq!(send(task("TASK_STATE_COMPLETED", 1)).await, 200);
    assert_eq!(send(task("TASK_STATE_COMPLETED", 2)).await, 200);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "the identical re-delivery was not dispatched");
    assert!(seen.iter().all(|(k, _)| k.starts_with("a2a:") && k.len() == 68));
    assert_eq!(seen[0].1, Some(serde_json::json!({"n": 1})));
    assert_eq!(seen[1].1, Some(serde_json::json!({"n": 2})));
    assert_eq!(receiver.metrics().get(outcome::DUPLICATE), 1);
}

/// A resolver over several sellers that may share a kid: every seller's key
/// for the kid is a candidate.
struct SharedKid(Vec<Arc<adcp_verify::ResolvedKey>>);

#[async_trait]
impl adcp_verify::KeyResolver for SharedKid {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<adcp_verify::ResolvedKey>>, adcp_verify::ResolveError> {
        Ok(self.0.iter().find(|k| k.kid() == keyid).cloned())
    }

    async fn revocation_status(
        &self,
        _key: &adcp_verify::ResolvedKey,
        _now: i64,
    ) -> Result<adcp_verify::RevocationStatus, adcp_verify::ResolveError> {
        Ok(adcp_verify::RevocationStatus::Current)
    }

    async fn resolve_candidates(&self, keyid: &str) -> Result<adcp_verify::KeyCandidates, adcp_verify::ResolveError> {
        Ok(self.0.iter().filter(|k| k.kid() == keyid).cloned().collect())
    }
}

fn keys_of(jwks: &serde_json::Value, agent: &str) -> Vec<Arc<adcp_verify::ResolvedKey>> {
    adcp_verify::ResolvedKey::from_jwks_json(jwks, agent)
        .into_iter()
        .map(Arc::new)
        .collect()
}

#[tokio::test]
async fn a_kid_shared_by_sellers_is_attributed_to_the_one_whose_key_verifies() {
    // Two sellers with Ed25519 keys (the signature decides) and one with a
    // P-256 key (refused for the algorithm before any cryptography).
    let (signer_a, jwks_a) = seller(Algorithm::Ed25519, "shared");
    let (signer_b, jwks_b) = seller(Algorithm::Ed25519, "shared");
    let (signer_c, jwks_c) = seller(Algorithm::EcdsaP256Sha256, "shared");
    let mut candidates = keys_of(&jwks_a, "https://a.example/mcp");
    candidates.extend(keys_of(&jwks_b, "https://b.example/mcp"));
    candidates.extend(keys_of(&jwks_c, "https://c.example/mcp"));
    let receiver = Receiver::builder(Arc::new(SharedKid(candidates)), memory_replay(), memory_idempotency())
        .config(http_config())
        .build()
        .unwrap();
    for (signer, agent, task) in [
        (&signer_b, "https://b.example/mcp", "t_b"),
        (&signer_a, "https://a.example/mcp", "t_a"),
        (&signer_c, "https://c.example/mcp", "t_c"),
    ] {
        let signed = signer
            .sign_webhook("http://buyer.example/hook", &event(task))
            .await
            .unwrap();
        let mut sender = None;
        let response = receiver
            .handle(signed.to_http().unwrap().map(Bytes::from), |w| {
                sender = Some(w.sender().to_owned());
                async { Ok::<(), std::convert::Infallible>(()) }
            })
            .await;
        assert_eq!(response.status(), 200);
        assert_eq!(sender.as_deref(), Some(agent));
    }
}

#[tokio::test]
async fn one_public_key_under_two_sellers_is_ambiguous_and_refused() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "shared");
    let mut candidates = keys_of(&jwks, "https://a.example/mcp");
    candidates.extend(keys_of(&jwks, "https://copycat.example/mcp"));
    let receiver = Receiver::builder(Arc::new(SharedKid(candidates)), memory_replay(), memory_idempotency())
        .config(http_config())
        .build()
        .unwrap();
    let signed = signer
        .sign_webhook("http://buyer.example/hook", &event("t"))
        .await
        .unwrap();
    let response = receiver
        .handle(signed.to_http().unwrap().map(Bytes::from), |_| async {
            Ok::<(), std::convert::Infallible>(())
        })
        .await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Signature error=\"webhook_signature_jwks_untrusted\""
    );
    let body: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
    assert_eq!(body["error"], "webhook_signature_jwks_untrusted");
    assert_eq!(body["message"], "The sender's keys could not be trusted.");
}

#[tokio::test]
async fn the_body_limit_is_enforced_before_the_checklist_and_governs_its_json_check() {
    let (signer, jwks) = seller(Algorithm::Ed25519, "k1");
    let limit = 2 * 1024 * 1024;
    let limits = adcp_sign::Limits::new(limit);
    let key = adcp_sign::IdempotencyKey::new("evt_large_00000001").unwrap();
    let payload = serde_json::json!({"task_id": "t", "task_type": "create_media_buy", "status": "completed",
        "timestamp": "2026-04-18T12:00:00Z", "result": {"filler": "x".repeat(1536 * 1024)}});
    let big = WebhookEvent::with_idempotency_key_and_limits(key, &payload, &limits).unwrap();
    // The default limit (1 MiB) refuses it when signing, too.
    assert!(WebhookEvent::with_idempotency_key(
        adcp_sign::IdempotencyKey::new("evt_large_00000002").unwrap(),
        &payload
    )
    .is_err());
    let signed = signer.sign_webhook("http://buyer.example/hook", &big).await.unwrap();
    let request = signed.to_http().unwrap().map(Bytes::from);

    // A receiver at 1 MiB: 413 with its code; nothing verified, so the
    // nonce is not burned and a receiver with a larger limit (sharing the
    // replay cache) still accepts the same request.
    let replay = memory_replay();
    let small = Receiver::builder(keys_for(&jwks), Arc::clone(&replay), memory_idempotency())
        .config(http_config())
        .build()
        .unwrap();
    let response = small
        .handle(request.clone(), |_| async { Ok::<(), std::convert::Infallible>(()) })
        .await;
    assert_eq!(response.status(), 413);
    let body: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
    assert_eq!(body["error"], "payload_too_large");

    let mut config = http_config();
    config.max_body_bytes = limit;
    let large = Receiver::builder(keys_for(&jwks), replay, memory_idempotency())
        .config(config)
        .build()
        .unwrap();
    let response = large
        .handle(request, |_| async { Ok::<(), std::convert::Infallible>(()) })
        .await;
    assert_eq!(response.status(), 200, "{:?}", response.body());
}

#[tokio::test]
async fn the_verifier_refuses_an_oversized_body_before_any_replay_entry() {
    use adcp_verify::FixedClock;
    use adcp_verify::Profile;
    use adcp_verify::Verifier;
    let (signer, jwks) = seller(Algorithm::Ed25519, "k1");
    let signed = signer
        .sign_webhook("https://buyer.example/hook", &event("t"))
        .await
        .unwrap();
    let request = signed.to_http().unwrap();
    let body = signed.body().unwrap().as_bytes().to_vec();
    let mut msg = adcp_sigbase::Message::request("POST", "https://buyer.example/hook");
    for (name, value) in request.headers() {
        msg.push_header(name.as_str(), value);
    }
    let msg = msg.with_body(&body[..]);
    let replay = memory_replay();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let verifier = |limit: usize| {
        Verifier::new(
            Profile::webhook_v1(),
            keys_for(&jwks),
            Arc::clone(&replay),
            FixedClock(now),
        )
        .with_max_body_bytes(limit)
    };
    let err = verifier(body.len() - 1).verify(&msg).await.unwrap_err();
    assert_eq!(err.code_str(), "webhook_body_malformed");
    assert_eq!(err.step().to_string(), "0");
    // Nothing was recorded: the same request verifies under the right limit.
    assert!(verifier(body.len()).verify(&msg).await.is_ok());
}
