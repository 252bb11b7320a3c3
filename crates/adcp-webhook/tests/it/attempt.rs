//! Acceptance: `AttemptClient`, one signed attempt at a time, for callers
//! that own the schedule (a durable outbox).

use crate::common::*;
use adcp_jwks::SsrfError;
use adcp_sign::{Algorithm, HttpSigner, Signer, SignerError, SoftwareSigner, WebhookEvent};
use adcp_verify::StaticKeyResolver;
use adcp_webhook::{
    AttemptClient, AttemptStatus, AttemptVerdict, Destination, DestinationPolicy, McpWebhook, Receiver, SenderError,
    TaskStatus,
};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn event(task: &str) -> WebhookEvent {
    McpWebhook::new(task, "create_media_buy", TaskStatus::Completed, "2026-04-18T12:00:00Z")
        .operation_id("op_1")
        .result(serde_json::json!({"media_buy_id": "mb_1"}))
        .into_event()
        .unwrap()
}

fn loopback_client() -> AttemptClient {
    AttemptClient::builder()
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .timeouts(Duration::from_secs(5), Duration::from_secs(2))
        .build()
        .unwrap()
}

/// One client, a different signer per attempt: each attempt carries its
/// own signer's `keyid`, and a real receiver verifies both.
#[tokio::test]
async fn each_attempt_signs_with_the_signer_it_is_given() {
    let (first, first_jwks) = seller(Algorithm::Ed25519, "seller-attempt-a");
    let (second, second_jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-attempt-b");
    let keys = StaticKeyResolver::new()
        .with_jwks(&first_jwks, AGENT_URL)
        .with_jwks(&second_jwks, AGENT_URL);
    let receiver = Receiver::builder(Arc::new(keys), memory_replay(), memory_idempotency())
        .config(http_config())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(receiver.clone(), Arc::clone(&effects)).await;
    let client = loopback_client();
    let destination = Destination::new(url(addr, "/webhooks/op_1"));

    let a = event("task_attempt_a");
    let result = client.attempt(&first, &destination, &a, 1).await;
    assert_eq!(result.verdict, AttemptVerdict::Delivered { status: 200 }, "{result:?}");
    assert_eq!(result.record.attempt, 1);
    assert_eq!(result.record.status, AttemptStatus::Success);
    assert_eq!(result.record.http_status_code, Some(200));
    assert_eq!(result.record.idempotency_key, a.idempotency_key().as_str());

    let b = event("task_attempt_b");
    let result = client.clone().attempt(&second, &destination, &b, 4).await;
    assert_eq!(result.verdict, AttemptVerdict::Delivered { status: 200 }, "{result:?}");
    assert_eq!(result.record.attempt, 4);
    // The same event again under the other key: a retry the receiver
    // acknowledges without applying it twice.
    let result = client.attempt(&first, &destination, &b, 5).await;
    assert_eq!(result.verdict, AttemptVerdict::Delivered { status: 200 });
    assert_eq!(effects.count(), 2);
}

/// Every class of answer, through the wire: the verdict is
/// `classify_answer`'s and the record says what was seen.
#[tokio::test]
async fn each_answer_gets_the_spec_verdict() {
    let app = Router::new()
        .route("/ok", post(|| async { StatusCode::ACCEPTED }))
        .route(
            "/signature",
            post(|| async {
                (
                    StatusCode::UNAUTHORIZED,
                    [("www-authenticate", r#"Signature error="webhook_signature_key_unknown""#)],
                )
            }),
        )
        .route(
            "/plain-401",
            post(|| async { (StatusCode::UNAUTHORIZED, [("www-authenticate", "Bearer")]) }),
        )
        .route("/conflict", post(|| async { StatusCode::CONFLICT }))
        .route(
            "/busy",
            post(|| async { (StatusCode::SERVICE_UNAVAILABLE, [("retry-after", "2")]) }),
        )
        .route("/gone", post(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/moved",
            post(|| async { (StatusCode::FOUND, [("location", "https://elsewhere.example/")]) }),
        );
    let addr = serve_router(app).await;
    let (signer, _) = seller(Algorithm::Ed25519, "seller-classes");
    let client = loopback_client();
    let cases = [
        ("/ok", AttemptVerdict::Delivered { status: 202 }, AttemptStatus::Success),
        (
            "/signature",
            AttemptVerdict::SignatureRejected {
                code: "webhook_signature_key_unknown".to_owned(),
            },
            AttemptStatus::Failed,
        ),
        (
            "/plain-401",
            AttemptVerdict::Retry { retry_after: None },
            AttemptStatus::Failed,
        ),
        ("/conflict", AttemptVerdict::Conflict, AttemptStatus::Failed),
        (
            "/busy",
            AttemptVerdict::Retry {
                retry_after: Some(Duration::from_secs(2)),
            },
            AttemptStatus::Failed,
        ),
        (
            "/gone",
            AttemptVerdict::Retry { retry_after: None },
            AttemptStatus::Failed,
        ),
        (
            "/moved",
            AttemptVerdict::Retry { retry_after: None },
            AttemptStatus::Failed,
        ),
    ];
    for (path, verdict, status) in cases {
        let result = client
            .attempt(&signer, &Destination::new(url(addr, path)), &event("task_classes"), 2)
            .await;
        assert_eq!(result.verdict, verdict, "{path}");
        assert_eq!(result.record.status, status, "{path}");
        assert!(result.record.http_status_code.is_some(), "{path}");
        assert_eq!(
            result.record.error_code.is_some(),
            matches!(verdict, AttemptVerdict::SignatureRejected { .. }),
            "{path}"
        );
        assert_eq!(
            result.record.error_message.is_none(),
            status == AttemptStatus::Success,
            "{path}"
        );
    }
}

/// A server that counts the requests it receives.
async fn counting_server(answer: StatusCode) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    let app = Router::new().route(
        "/hook",
        post(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { answer }
        }),
    );
    (serve_router(app).await, hits)
}

#[tokio::test]
async fn a_refused_destination_is_never_contacted() {
    let (addr, hits) = counting_server(StatusCode::OK).await;
    let (signer, _) = seller(Algorithm::Ed25519, "seller-attempt-ssrf");
    // Production rules: plain HTTP to loopback is refused by the URL.
    let production = AttemptClient::builder().build().unwrap();
    let result = production
        .attempt(&signer, &Destination::new(url(addr, "/hook")), &event("task_ssrf"), 1)
        .await;
    assert_eq!(
        result.verdict,
        AttemptVerdict::InvalidDestination(SsrfError::SchemeNotAllowed)
    );
    assert!(result.verdict.is_terminal());
    assert_eq!(result.record.status, AttemptStatus::ConnectionError);
    assert_eq!(result.record.http_status_code, None);
    // A name resolving to a reserved address: refused at connect time.
    let rebinding = AttemptClient::builder()
        .dns_resolver(Arc::new(
            adcp_jwks::StaticDnsResolver::new().with("buyer.example", ["10.1.2.3".parse().unwrap()]),
        ))
        .build()
        .unwrap();
    let result = rebinding
        .attempt(
            &signer,
            &Destination::new("https://buyer.example/hook"),
            &event("task_dns"),
            1,
        )
        .await;
    assert!(
        matches!(result.verdict, AttemptVerdict::InvalidDestination(_)),
        "{result:?}"
    );
    assert_eq!(result.record.status, AttemptStatus::ConnectionError);
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_unreachable_receiver_is_retried() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let (signer, _) = seller(Algorithm::Ed25519, "seller-attempt-down");
    let result = loopback_client()
        .attempt(&signer, &Destination::new(url(addr, "/hook")), &event("task_down"), 3)
        .await;
    assert_eq!(result.verdict, AttemptVerdict::Retry { retry_after: None });
    assert_eq!(result.record.status, AttemptStatus::ConnectionError);
    assert_eq!(result.record.attempt, 3);
}

/// A signer that takes its time (a slow KMS).
struct SlowSigner {
    key: SoftwareSigner,
    delay: Duration,
}

impl Signer for SlowSigner {
    fn key_id(&self) -> &str {
        self.key.key_id()
    }

    fn algorithm(&self) -> Algorithm {
        self.key.algorithm()
    }

    async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignerError> {
        tokio::time::sleep(self.delay).await;
        self.key.sign(message).await
    }
}

#[tokio::test]
async fn the_attempt_deadline_covers_signing_and_the_answer() {
    let (addr, hits) = counting_server(StatusCode::OK).await;
    let client = AttemptClient::builder()
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .timeouts(Duration::from_millis(200), Duration::from_millis(200))
        .build()
        .unwrap();
    assert_eq!(client.attempt_timeout(), Duration::from_millis(200));
    let slow = HttpSigner::webhook(SlowSigner {
        key: SoftwareSigner::generate(Algorithm::Ed25519, "seller-slow").unwrap(),
        delay: Duration::from_secs(2),
    })
    .unwrap();
    let result = client
        .attempt(&slow, &Destination::new(url(addr, "/hook")), &event("task_slow_kms"), 1)
        .await;
    assert_eq!(result.verdict, AttemptVerdict::Retry { retry_after: None });
    assert_eq!(result.record.status, AttemptStatus::Timeout);
    assert!(
        result.record.duration < Duration::from_secs(1),
        "{:?}",
        result.record.duration
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing is sent past the deadline");

    // A receiver that answers late: the same deadline, the same verdict.
    let app = Router::new().route(
        "/hook",
        post(|| async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            StatusCode::OK
        }),
    );
    let late = serve_router(app).await;
    let (signer, _) = seller(Algorithm::Ed25519, "seller-late");
    let result = client
        .attempt(&signer, &Destination::new(url(late, "/hook")), &event("task_late"), 1)
        .await;
    assert_eq!(result.verdict, AttemptVerdict::Retry { retry_after: None });
    assert_eq!(result.record.status, AttemptStatus::Timeout);
    assert_eq!(result.record.http_status_code, None);
}

#[tokio::test]
async fn a_signer_that_cannot_sign_webhooks_fails_the_attempt() {
    let (addr, hits) = counting_server(StatusCode::OK).await;
    let request_signer =
        HttpSigner::request(SoftwareSigner::generate(Algorithm::Ed25519, "seller-request").unwrap()).unwrap();
    let result = loopback_client()
        .attempt(
            &request_signer,
            &Destination::new(url(addr, "/hook")),
            &event("task_profile"),
            1,
        )
        .await;
    assert_eq!(
        result.verdict,
        AttemptVerdict::SigningFailed("profile_mismatch".to_owned())
    );
    assert!(result.verdict.is_terminal());
    assert_eq!(result.record.http_status_code, None);
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[test]
fn zero_timeouts_are_refused() {
    for (attempt, connect) in [
        (Duration::ZERO, Duration::from_secs(1)),
        (Duration::from_secs(1), Duration::ZERO),
    ] {
        assert_eq!(
            AttemptClient::builder().timeouts(attempt, connect).build().unwrap_err(),
            SenderError::InvalidTimeouts
        );
    }
}

/// The receiver's headers reach the verdict only through `Retry-After`
/// and `WWW-Authenticate`: a legacy destination is classified the same way.
#[tokio::test]
async fn legacy_destinations_share_the_classification() {
    let seen = Arc::new(Mutex::new(Vec::<HeaderMap>::new()));
    let log = Arc::clone(&seen);
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap| {
            log.lock().unwrap().push(headers);
            async { StatusCode::CONFLICT }
        }),
    );
    let addr = serve_router(app).await;
    let (signer, _) = seller(Algorithm::Ed25519, "seller-legacy");
    let destination = Destination::from_registration(&serde_json::json!({
        "url": url(addr, "/hook"),
        "authentication": {"schemes": ["HMAC-SHA256"], "credentials": "a-shared-secret-of-32-bytes-min!"}}))
    .unwrap();
    let result = loopback_client()
        .attempt(&signer, &destination, &event("task_legacy"), 1)
        .await;
    assert_eq!(result.verdict, AttemptVerdict::Conflict);
    let seen = seen.lock().unwrap();
    assert!(seen[0].contains_key("x-adcp-signature"));
    assert!(!seen[0].contains_key("signature-input"));
}
