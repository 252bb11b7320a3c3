//! `Retry-After` on every retryable `503`, never on a `401`; the payload's
//! float parsing under the JCS fingerprint.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::envelope::{McpWebhook, TaskStatus};
use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
use adcp_store::{IdempotencyConfig, IdempotencyError, IdempotencyRecord, MemoryIdempotencyStore};
use adcp_verify::MemoryReplayStore;
use adcp_verify::{ResolveError, ResolvedKey, RevocationStatus, StaticKeyResolver};
use async_trait::async_trait;

const AGENT: &str = "https://seller.example/mcp";
const TARGET: &str = "https://buyer.example/hook";

fn seller() -> (HttpSigner<SoftwareSigner>, Arc<dyn KeyResolver>) {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "retry-after-key").unwrap();
    let jwks = key.jwks().unwrap().to_public_json();
    let keys: Arc<dyn KeyResolver> = Arc::new(StaticKeyResolver::new().with_jwks(&jwks, AGENT));
    (HttpSigner::webhook(key).unwrap(), keys)
}

async fn request(signer: &HttpSigner<SoftwareSigner>, task: &str) -> http::Request<Bytes> {
    let event = McpWebhook::new(task, "create_media_buy", TaskStatus::Completed, "2026-04-18T12:00:00Z")
        .result(serde_json::json!({"media_buy_id": "mb_1"}))
        .into_event()
        .unwrap();
    let signed = signer.sign_webhook(TARGET, &event).await.unwrap();
    let mut builder = http::Request::post(TARGET).header("host", "buyer.example");
    for (name, value) in signed.headers() {
        builder = builder.header(*name, value.as_str());
    }
    builder
        .body(Bytes::from(signed.body().unwrap().as_bytes().to_vec()))
        .unwrap()
}

fn memory_idempotency() -> Arc<dyn IdempotencyStore> {
    Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default()).unwrap())
}

/// The reply, and the headers of its response.
fn answer(decision: Decision) -> (Reply, http::HeaderMap) {
    let Decision::Reply(reply) = decision else {
        panic!("expected a reply, got a delivery")
    };
    let response = reply.clone().into_response::<Bytes>();
    (reply, response.headers().clone())
}

fn assert_retryable_503(reply: &Reply, headers: &http::HeaderMap, outcome: &str) {
    assert_eq!(reply.status(), StatusCode::SERVICE_UNAVAILABLE, "{reply:?}");
    assert_eq!(reply.outcome(), outcome);
    assert_eq!(reply.retry_after(), Some(UNAVAILABLE_RETRY_AFTER_SECS));
    assert_eq!(headers.get(http::header::RETRY_AFTER).unwrap(), "2");
    assert!(headers.get(http::header::WWW_AUTHENTICATE).is_none(), "{headers:?}");
}

/// Key discovery failing transiently, or answering a fixed revocation
/// status.
struct Keys {
    inner: Arc<dyn KeyResolver>,
    down: bool,
    revocation: RevocationStatus,
}

#[async_trait]
impl KeyResolver for Keys {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        if self.down {
            return Err(ResolveError::Unavailable("jwks_uri answered 500".into()));
        }
        self.inner.resolve(keyid).await
    }

    async fn revocation_status(&self, _: &ResolvedKey, _: i64) -> Result<RevocationStatus, ResolveError> {
        Ok(self.revocation)
    }
}

/// An idempotency store that claims (in memory) but cannot complete, or
/// cannot do anything at all.
struct Store {
    inner: Arc<dyn IdempotencyStore>,
    claims: bool,
}

fn unavailable<T>() -> Result<T, IdempotencyError> {
    Err(IdempotencyError::Unavailable("connection refused".to_owned()))
}

#[async_trait]
impl IdempotencyStore for Store {
    fn config(&self) -> IdempotencyConfig {
        IdempotencyConfig::default()
    }
    async fn claim(&self, key: SenderKey<'_>, fp: Fingerprint<'_>, now: i64) -> Result<ClaimOutcome, IdempotencyError> {
        if self.claims {
            return self.inner.claim(key, fp, now).await;
        }
        unavailable()
    }
    async fn complete(&self, _: SenderKey<'_>, _: ClaimToken, _: i64) -> Result<(), IdempotencyError> {
        unavailable()
    }
    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        self.inner.release(key, token, now).await
    }
    async fn lookup(&self, key: SenderKey<'_>, now: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError> {
        self.inner.lookup(key, now).await
    }
    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError> {
        self.inner.sender_len(sender, now).await
    }
}

fn receiver(keys: Arc<dyn KeyResolver>, idempotency: Arc<dyn IdempotencyStore>) -> Receiver {
    Receiver::builder(keys, Arc::new(MemoryReplayStore::webhook()), idempotency)
        .build()
        .unwrap()
}

#[tokio::test]
async fn key_discovery_down_is_503_with_retry_after_and_no_challenge() {
    let (signer, keys) = seller();
    let keys = Arc::new(Keys {
        inner: keys,
        down: true,
        revocation: RevocationStatus::Current,
    });
    let r = receiver(keys, memory_idempotency());
    let (reply, headers) = answer(r.decide(request(&signer, "task_jwks").await).await);
    assert_retryable_503(&reply, &headers, "webhook_signature_jwks_unavailable");
}

#[tokio::test]
async fn idempotency_store_down_is_503_with_retry_after() {
    let (signer, keys) = seller();
    let store = Arc::new(Store {
        inner: memory_idempotency(),
        claims: false,
    });
    let r = receiver(keys, store);
    let (reply, headers) = answer(r.decide(request(&signer, "task_store").await).await);
    assert_retryable_503(&reply, &headers, outcome::STORE_UNAVAILABLE);
}

#[tokio::test]
async fn a_completion_not_recorded_is_503_with_retry_after() {
    let (signer, keys) = seller();
    let store = Arc::new(Store {
        inner: memory_idempotency(),
        claims: true,
    });
    let r = receiver(keys, store);
    let Decision::Deliver(delivery) = r.decide(request(&signer, "task_complete").await).await else {
        panic!("expected a delivery")
    };
    let reply = r.complete(&delivery).await.unwrap_err();
    let headers = reply.clone().into_response::<Bytes>().headers().clone();
    assert_retryable_503(&reply, &headers, outcome::COMPLETION_FAILED);
    // Through `handle` (no tower): the same answer.
    let response = r
        .handle(request(&signer, "task_handle").await, |_| async { Ok::<_, String>(()) })
        .await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers().get(http::header::RETRY_AFTER).unwrap(), "2");
}

#[tokio::test]
async fn verification_failures_are_401_with_the_challenge_only() {
    for (revocation, code) in [
        (RevocationStatus::Revoked, "webhook_signature_key_revoked"),
        (RevocationStatus::Stale, "webhook_signature_revocation_stale"),
    ] {
        let (signer, keys) = seller();
        let keys = Arc::new(Keys {
            inner: keys,
            down: false,
            revocation,
        });
        let r = receiver(keys, memory_idempotency());
        let (reply, headers) = answer(r.decide(request(&signer, "task_401").await).await);
        assert_eq!(reply.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(reply.retry_after(), None);
        assert_eq!(
            headers.get(http::header::WWW_AUTHENTICATE).unwrap(),
            format!("Signature error=\"{code}\"").as_str()
        );
        // The challenge, and the JSON body's type: nothing else.
        assert_eq!(headers.len(), 2, "{headers:?}");
        assert_eq!(headers[http::header::CONTENT_TYPE], "application/json");
        let body = reply.clone().into_response::<Bytes>().into_body();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"], code);
        assert_eq!(body["message"], reply.message());
    }
    // Another key under the same kid (webhook_signature_invalid): the same.
    let (signer, _) = seller();
    let (_, other) = seller();
    let r = receiver(other, memory_idempotency());
    let (reply, headers) = answer(r.decide(request(&signer, "task_unknown").await).await);
    assert_eq!(reply.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(headers.len(), 2, "{headers:?}");
}

/// The payload is parsed with correctly rounded floats (`serde_json`'s
/// `float_roundtrip`, this crate's dependency setting), so its JCS
/// fingerprint sees the double the sender meant. Found by the JCS property
/// test: the default parser reads this one ulp off and canonicalizes it to
/// `-9.6906145963874e+29`.
#[test]
fn payload_parsing_is_correctly_rounded() {
    let v: serde_json::Value = serde_json::from_slice(b"[-9.690614596387401e+29]").unwrap();
    assert_eq!(jcs::canonicalize(&v), "[-9.690614596387401e+29]");
}
