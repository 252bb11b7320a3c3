//! Fault injection on the verifying gateway: each test injects one fault
//! and states, in its doc comment, the outcome it asserts. The invariants
//! throughout: the gateway fails closed (nothing unverified or unclaimed
//! reaches the upstream), answers a status the seller retries (`503`, with
//! `Retry-After` where the code gives one), never delivers one event twice
//! except where stated (the upstream counts applied idempotency keys), and
//! recovers without a restart.
//!
//! Faults already covered elsewhere: the store down
//! (`gateway_fleet.rs`, `store_down_means_not_ready_and_503_and_nothing_forwarded`)
//! and an upstream answering `5xx` (`gateway.rs`,
//! `upstream_failure_is_503_and_the_retry_is_forwarded_once`).
//!
//! The Redis faults run against a private `redis-server` on a free port
//! (never the shared one), killed and removed on drop.

use crate::support::gateway as common;
use crate::support::jwks as jwks_common;
use adcp_test_support::redis_server;

use adcp_gateway::{GatewayHandle, GatewayOptions};
use adcp_sigbase::{Clock, FixedClock, SystemClock};
use adcp_sign::{HttpSigner, SignOptions, SignedRequest, Signer as _, SoftwareSigner, UnsignedRequest};
use adcp_store::StoreOptions;
use adcp_verify::KeyResolver;
use common::{event, start, unique, Seller, TempDir, Upstream, PATH};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the gateway answered.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    status: u16,
    /// The `error` of `WWW-Authenticate: Signature error="…"`.
    code: Option<String>,
    retry_after: Option<u64>,
}

impl Answer {
    fn status(status: u16) -> Self {
        Self {
            status,
            code: None,
            retry_after: None,
        }
    }

    /// A retryable outage: `503`, no challenge, the receiver's
    /// `Retry-After`.
    fn unavailable() -> Self {
        Self {
            status: 503,
            code: None,
            retry_after: Some(adcp_webhook::UNAVAILABLE_RETRY_AFTER_SECS),
        }
    }

    fn rejected(code: &str) -> Self {
        Self {
            status: 401,
            code: Some(code.to_owned()),
            retry_after: None,
        }
    }
}

/// Posts `headers` and `body` to the gateway's webhook path.
async fn post(handle: &GatewayHandle, headers: &[(String, String)], body: Vec<u8>) -> Answer {
    let client = common::http_client(Duration::from_secs(30)).unwrap();
    let mut request = client.post(format!("{}{PATH}", handle.base_url()));
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.body(body).send().await.unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    Answer {
        status: response.status().as_u16(),
        code: header("www-authenticate")
            .and_then(|v| v.split("error=\"").nth(1).map(str::to_owned))
            .and_then(|v| v.split('"').next().map(str::to_owned)),
        retry_after: header("retry-after").and_then(|v| v.parse().ok()),
    }
}

fn headers_of(signed: &SignedRequest) -> Vec<(String, String)> {
    signed
        .headers()
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.clone()))
        .collect()
}

/// Sends a signed request as signed.
async fn send(handle: &GatewayHandle, signed: &SignedRequest) -> Answer {
    post(handle, &headers_of(signed), signed.body().unwrap().as_bytes().to_vec()).await
}

fn metrics_line(handle: &GatewayHandle, line: &str) -> bool {
    handle
        .gateway()
        .metrics()
        .render(handle.gateway().receiver().metrics())
        .contains(line)
}

fn render(handle: &GatewayHandle) -> String {
    handle.gateway().metrics().render(handle.gateway().receiver().metrics())
}

// ---------------------------------------------------------------------------
// 1. Store slow: a paused Redis
// ---------------------------------------------------------------------------

/// `redis-cli -p PORT ARGS…`, stdout.
fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli on PATH");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits until the server answers commands again (the pause is over).
async fn wait_unpaused(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let pong = tokio::task::spawn_blocking(move || redis_cli(port, &["PING"]))
            .await
            .unwrap();
        if pong.contains("PONG") {
            return;
        }
        assert!(Instant::now() < deadline, "redis did not come back from the pause");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const STORE_OP_TIMEOUT: Duration = Duration::from_millis(500);
const PAUSE_MS: u64 = 3000;
/// The claim lease of the paused-store tests: longer than a pause, so that
/// a claim written late is still held when the pause ends.
const LEASE_SECS: i64 = 4;
/// The pause of the completion test: past the upstream's answer.
const LONG_PAUSE_MS: u64 = 4000;
/// The pause of the late-claim test: shorter than the lease.
const SHORT_PAUSE_MS: u64 = 1500;

fn slow_store_options(namespace: &str) -> StoreOptions {
    let mut options = StoreOptions {
        namespace: namespace.to_owned(),
        op_timeout: STORE_OP_TIMEOUT,
        ..StoreOptions::default()
    };
    options.idempotency.lease_secs = LEASE_SECS;
    options
}

/// A private `redis-server` on a free port (pausable without disturbing the
/// shared one), and its port for `redis-cli`.
fn private_redis(tag: &str) -> (u16, redis_server::Server) {
    let port = redis_server::free_port();
    (
        port,
        redis_server::Server::start(port, redis_server::temp_dir(tag), "noeviction"),
    )
}

/// One event through the gateway before the fault: the store connection is
/// up and the server has the store's scripts cached (a late `EVALSHA` of a
/// script the server does not know fails `NOSCRIPT` and is lost).
async fn warm_up(handle: &GatewayHandle, seller: &Seller) -> adcp_sign::WebhookEvent {
    let warm = event("warm");
    assert_eq!(
        send(handle, &seller.sign(handle, &warm).await).await,
        Answer::status(200)
    );
    warm
}

/// Store slow: Redis paused (`CLIENT PAUSE 3000 ALL`) longer than the
/// store's operation timeout (500 ms).
///
/// Expected: the webhook is answered `503` within about the op timeout
/// (asserted under 2.5 s, well before the pause ends), not forwarded; the
/// readiness probe says not ready while paused. The op that times out is
/// the verifier's replay-cache (nonce) insert, which runs before the
/// claim: the paused command lands when the pause ends, burning only that
/// attempt's nonce. After the pause, a fresh signature of the same event
/// (the seller re-signs every attempt) is forwarded exactly once; later
/// retries are duplicates (`200`, not forwarded). No gateway restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_paused_answers_503_within_the_op_timeout_and_the_resigned_retry_is_forwarded_once() {
    let (port, server) = private_redis("gw-fault-pause");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let namespace = unique("pause");
    let mut options = GatewayOptions::new(upstream.url());
    options.upstream_timeout = Duration::from_secs(1);
    let handle = start(seller.keys(), &server.url(), slow_store_options(&namespace), options).await;

    let warm = warm_up(&handle, &seller).await;

    let a = event("a");
    let first = seller.sign(&handle, &a).await;
    assert!(redis_cli(port, &["CLIENT", "PAUSE", &PAUSE_MS.to_string(), "ALL"]).contains("OK"));
    let paused_at = Instant::now();
    let answer = send(&handle, &first).await;
    let took = paused_at.elapsed();
    assert_eq!(answer.status, 503, "{answer:?}");
    assert_eq!(answer.code, None, "a store failure is not a signature failure");
    assert!(
        took < Duration::from_millis(2500),
        "answered after {took:?}: the op timeout did not bound the request"
    );
    assert!(!handle.gateway().ready().await, "not ready while the store is paused");
    assert_eq!(
        upstream.seen.requests.load(Ordering::SeqCst),
        1,
        "only the warm-up event was forwarded"
    );
    // The replay-cache op times out first (the verifier's step 12/13):
    // a retryable verifier outcome, no challenge.
    assert!(
        metrics_line(
            &handle,
            "adcp_gateway_webhooks_total{outcome=\"webhook_verifier_unavailable\"} 1\n"
        ),
        "{}",
        render(&handle)
    );

    wait_unpaused(port).await;
    assert!(handle.gateway().ready().await, "ready again once the pause is over");
    // The seller's retry: a fresh signature of the same event.
    let retry = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &retry).await, Answer::status(200));
    let again = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &again).await, Answer::status(200));
    assert_eq!(
        upstream.applied_keys(),
        [warm.idempotency_key().as_str(), a.idempotency_key().as_str()],
        "each event applied exactly once"
    );
    assert_eq!(handle.gateway().metrics().forwarded_count(), 2);
    handle.shutdown().await.unwrap();
    drop(server);
}

/// Store slow at the claim: a claim that timed out (here another fleet
/// member's, sent while Redis was paused, answered `503` to its caller) is
/// written late, when the pause ends, and is then held by nobody.
///
/// Expected: the seller's next attempt at the gateway is answered `503`
/// (`in_progress`) with `Retry-After` between 1 and the lease (2 s here),
/// not forwarded; once the lease has expired, a fresh signature is
/// forwarded exactly once, and later retries are duplicates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_written_late_by_a_paused_store_holds_the_event_until_its_lease_expires_then_it_is_forwarded_once() {
    use adcp_store::{Fingerprint, IdempotencyStore, SenderKey};

    let (port, server) = private_redis("gw-fault-late-claim");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let namespace = unique("lateclaim");
    let mut options = GatewayOptions::new(upstream.url());
    options.upstream_timeout = Duration::from_secs(1);
    let handle = start(seller.keys(), &server.url(), slow_store_options(&namespace), options).await;
    // The other fleet member's store handle: same server, same namespace.
    let other = adcp_store::open(&server.url().parse().unwrap(), slow_store_options(&namespace))
        .await
        .unwrap();
    let warm = warm_up(&handle, &seller).await;

    let a = event("a");
    let payload: serde_json::Value = serde_json::from_slice(a.body().as_bytes()).unwrap();
    let fingerprint = adcp_strict_json::jcs::fingerprint(&payload);
    let key = SenderKey {
        sender: common::AGENT,
        idempotency_key: a.idempotency_key().as_str(),
    };
    assert!(redis_cli(port, &["CLIENT", "PAUSE", &SHORT_PAUSE_MS.to_string(), "ALL"]).contains("OK"));
    let started = Instant::now();
    let claimed = other
        .claim(key, Fingerprint::from_array(&fingerprint), SystemClock.now())
        .await;
    assert!(claimed.is_err(), "the paused claim times out: {claimed:?}");
    assert!(
        started.elapsed() < Duration::from_millis(1400),
        "{:?}",
        started.elapsed()
    );
    wait_unpaused(port).await;

    // The late claim landed: the event is in progress for the lease.
    let attempt = seller.sign(&handle, &a).await;
    let answer = send(&handle, &attempt).await;
    assert_eq!(answer.status, 503, "{answer:?}");
    let retry_after = answer.retry_after.expect("Retry-After on in_progress");
    assert!((1..=LEASE_SECS.unsigned_abs()).contains(&retry_after), "{answer:?}");
    assert_eq!(
        upstream.seen.requests.load(Ordering::SeqCst),
        1,
        "only the warm-up was forwarded"
    );
    assert!(metrics_line(
        &handle,
        "adcp_gateway_webhooks_total{outcome=\"in_progress\"} 1\n"
    ));

    // Retry as told until the lease has expired: then forwarded, once.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut answers = vec![answer];
    loop {
        tokio::time::sleep(Duration::from_secs(answers.last().unwrap().retry_after.unwrap_or(1))).await;
        let retry = seller.sign(&handle, &a).await;
        let answer = send(&handle, &retry).await;
        let done = answer.status == 200;
        answers.push(answer);
        if done {
            break;
        }
        assert_eq!(answers.last().unwrap().status, 503, "{answers:?}");
        assert!(Instant::now() < deadline, "still held after the lease: {answers:?}");
    }
    let again = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &again).await, Answer::status(200));
    assert_eq!(
        upstream.applied_keys(),
        [warm.idempotency_key().as_str(), a.idempotency_key().as_str()],
        "{answers:?}"
    );
    handle.shutdown().await.unwrap();
    drop(server);
}

/// Store slow at completion: Redis is paused while the upstream is
/// applying the event, so the gateway cannot record the completion.
///
/// Expected: the sender gets `503` (`completion_failed`) within about the
/// upstream's answer time (1.5 s) plus the op timeout, before the pause
/// (4 s) ends; the upstream applied the
/// event once. The paused completion lands when the pause ends, so the
/// seller's retry (fresh signature) is a duplicate: `200`, not forwarded
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_paused_during_forwarding_answers_503_and_the_late_completion_prevents_a_second_delivery() {
    let (port, server) = private_redis("gw-fault-complete");
    let upstream = Upstream::start().await;
    // Long enough for the test to pause Redis before the completion.
    *upstream.seen.delay.lock().unwrap() = Some(Duration::from_millis(1500));
    let seller = Seller::new();
    let namespace = unique("complete");
    let mut options = GatewayOptions::new(upstream.url());
    options.upstream_timeout = Duration::from_secs(5);
    let mut store_options = slow_store_options(&namespace);
    // Longer than the upstream timeout, as `--claim-lease` requires.
    store_options.idempotency.lease_secs = 10;
    let handle = start(seller.keys(), &server.url(), store_options, options).await;
    // Warm: the server has the store's scripts cached. (Without it the
    // late completion is an `EVALSHA` the server answers `NOSCRIPT`, and
    // is lost: the claim is then held until its lease expires and the
    // retry after that is forwarded again, at-least-once.)
    let warm = warm_up(&handle, &seller).await;

    let a = event("a");
    let signed = seller.sign(&handle, &a).await;
    let in_flight = {
        let headers = headers_of(&signed);
        let body = signed.body().unwrap().as_bytes().to_vec();
        let base = handle.base_url();
        tokio::spawn(async move {
            let client = common::http_client(Duration::from_secs(30)).unwrap();
            let mut request = client.post(format!("{base}{PATH}"));
            for (name, value) in &headers {
                request = request.header(name.as_str(), value.as_str());
            }
            let started = Instant::now();
            let status = request.body(body).send().await.unwrap().status().as_u16();
            (status, started.elapsed())
        })
    };
    // Once the event is at the upstream (claimed), pause the store.
    while upstream.seen.requests.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(redis_cli(port, &["CLIENT", "PAUSE", &LONG_PAUSE_MS.to_string(), "ALL"]).contains("OK"));
    let (status, took) = in_flight.await.unwrap();
    assert_eq!(status, 503);
    // The upstream's 1.5 s plus the 0.5 s op timeout, not the 4 s pause.
    assert!(took < Duration::from_millis(3800), "answered after {took:?}");
    assert!(metrics_line(
        &handle,
        "adcp_gateway_webhooks_total{outcome=\"completion_failed\"} 1\n"
    ));
    let once = [warm.idempotency_key().as_str(), a.idempotency_key().as_str()];
    assert_eq!(upstream.applied_keys(), once);

    wait_unpaused(port).await;
    *upstream.seen.delay.lock().unwrap() = None;
    let retry = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &retry).await, Answer::status(200));
    assert_eq!(
        upstream.applied_keys(),
        once,
        "the late completion made the retry a duplicate"
    );
    assert!(metrics_line(
        &handle,
        "adcp_gateway_webhooks_total{outcome=\"duplicate\"} 1\n"
    ));
    handle.shutdown().await.unwrap();
    drop(server);
}

// ---------------------------------------------------------------------------
// 2. Upstream slow
// ---------------------------------------------------------------------------

/// Upstream slow: the upstream applies the event but answers after the
/// gateway's `upstream_timeout` (1 s; it answers after 3 s).
///
/// Expected: the sender gets `503` within about the timeout (outcome
/// `upstream_failed:timeout`, counted as `reason="timeout"`), the claim is
/// released, and the seller's retry is forwarded again: the upstream sees
/// the event **twice**, both times with the same `X-Adcp-Idempotency-Key`.
/// Delivery toward the upstream is at-least-once; the upstream dedupes on
/// that header. The retry after that is a duplicate at the gateway (`200`,
/// not forwarded a third time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_slower_than_its_timeout_is_503_and_the_retry_is_forwarded_again_at_least_once() {
    let dir = TempDir::new("fault-slow-upstream");
    let upstream = Upstream::start().await;
    upstream.seen.apply_before_delay.store(true, Ordering::SeqCst);
    *upstream.seen.delay.lock().unwrap() = Some(Duration::from_secs(3));
    let seller = Seller::new();
    let mut options = GatewayOptions::new(upstream.url());
    options.upstream_timeout = Duration::from_secs(1);
    let handle = start(seller.keys(), &dir.sqlite(), StoreOptions::default(), options).await;

    let a = event("a");
    let started = Instant::now();
    let answer = send(&handle, &seller.sign(&handle, &a).await).await;
    let took = started.elapsed();
    assert_eq!(answer, Answer::unavailable());
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(
        took < Duration::from_millis(2900),
        "answered after {took:?}, not at the timeout"
    );
    assert!(metrics_line(
        &handle,
        "adcp_gateway_upstream_failures_total{reason=\"timeout\"} 1\n"
    ));
    assert!(metrics_line(
        &handle,
        "adcp_gateway_webhooks_total{outcome=\"handler_failed\"} 1\n"
    ));
    // The upstream did the work although the gateway gave up.
    assert_eq!(upstream.applied_keys(), [a.idempotency_key().as_str()]);

    // The claim was released: the retry is forwarded again.
    *upstream.seen.delay.lock().unwrap() = None;
    let retry = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &retry).await, Answer::status(200));
    let key = a.idempotency_key().as_str();
    assert_eq!(upstream.applied_keys(), [key, key], "at-least-once toward the upstream");
    // Then the gateway's dedup holds.
    let again = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &again).await, Answer::status(200));
    assert_eq!(upstream.applied_keys().len(), 2);
    assert_eq!(handle.gateway().metrics().forwarded_count(), 1);
    handle.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------
// 3. JWKS endpoint down during a key rotation
// ---------------------------------------------------------------------------

/// A clock for the key resolver that the test can move forward.
#[derive(Clone, Default)]
struct Offset(Arc<AtomicI64>);

impl Offset {
    fn unix_clock(&self) -> adcp_jwks::UnixClock {
        let offset = Arc::clone(&self.0);
        Arc::new(move || SystemClock.now() + offset.load(Ordering::SeqCst))
    }

    fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
}

fn jwks_of(keys: &[&SoftwareSigner]) -> Vec<u8> {
    let all: Vec<serde_json::Value> = keys
        .iter()
        .flat_map(|k| k.jwks().unwrap().to_public_json()["keys"].as_array().unwrap().clone())
        .collect();
    serde_json::json!({ "keys": all }).to_string().into_bytes()
}

struct Rotation {
    server: jwks_common::Server,
    agent: String,
    signer_a: HttpSigner<SoftwareSigner>,
    signer_b: HttpSigner<SoftwareSigner>,
    resolver: Arc<adcp_jwks::HttpsKeyResolver>,
    clock: Offset,
}

async fn rotation() -> Rotation {
    use adcp_sign::Algorithm;
    let server = jwks_common::Server::start(&["seller.example", "keys.example"]).await;
    let agent = server.url("seller.example", "/mcp");
    let a = SoftwareSigner::generate(Algorithm::Ed25519, "rotation-key-a").unwrap();
    let b = SoftwareSigner::generate(Algorithm::Ed25519, "rotation-key-b").unwrap();
    server.set(
        "/.well-known/brand.json",
        jwks_common::ok(
            serde_json::json!({"agents": [{"url": agent, "jwks_uri": server.url("keys.example", "/jwks.json")}]})
                .to_string(),
        ),
    );
    server.set("/jwks.json", jwks_common::ok(jwks_of(&[&a])));
    let clock = Offset::default();
    let resolver = adcp_jwks::HttpsKeyResolver::builder(agent.clone())
        .surface(adcp_jwks::SigningSurface::Webhook)
        .fetch_config(server.fetch_config())
        .clock(clock.unix_clock())
        .build()
        .unwrap();
    Rotation {
        signer_a: HttpSigner::webhook(a).unwrap(),
        signer_b: HttpSigner::webhook(b).unwrap(),
        server,
        agent,
        resolver: Arc::new(resolver),
        clock,
    }
}

async fn sign_with(
    signer: &HttpSigner<SoftwareSigner>,
    handle: &GatewayHandle,
    e: &adcp_sign::WebhookEvent,
) -> SignedRequest {
    signer
        .sign_webhook(&format!("{}{PATH}", handle.base_url()), e)
        .await
        .unwrap()
}

/// JWKS endpoint down during a key rotation (keys discovered over HTTPS:
/// brand.json → `jwks_uri`, a local test server).
///
/// The seller publishes key A; A-signed events verify. Then the JWKS
/// endpoint answers `500` and the seller rotates to key B.
///
/// Expected: A-signed events still verify from the cache (no fetch); a
/// B-signed event is a `kid` miss whose one refetch fails, answered `503`
/// without a challenge (`webhook_signature_jwks_unavailable`, the spec's
/// retryable "JWKS fetch transient failure"; the webhook taxonomy's `401`
/// codes are terminal to the sender), nothing forwarded. When the endpoint
/// serves A+B again and the 30 s refetch cooldown has passed (the
/// resolver's injectable clock is moved forward, no sleep), the B-signed
/// retry verifies and is forwarded once, without restarting the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwks_down_during_rotation_keeps_cached_keys_answers_503_for_the_new_key_and_recovers() {
    let r = rotation().await;
    let dir = TempDir::new("fault-jwks");
    let upstream = Upstream::start().await;
    let mut options = GatewayOptions::new(upstream.url());
    options.upstream_timeout = Duration::from_secs(2);
    let keys: Arc<dyn KeyResolver> = r.resolver.clone();
    let handle = start(keys, &dir.sqlite(), StoreOptions::default(), options).await;

    let one = event("one");
    assert_eq!(
        send(&handle, &sign_with(&r.signer_a, &handle, &one).await).await,
        Answer::status(200)
    );
    let fetches = r.resolver.fetch_count();
    assert_eq!(fetches, 1);

    // The JWKS endpoint fails; the seller rotates to B.
    r.server.set(
        "/jwks.json",
        jwks_common::Resp {
            status: 500,
            ..jwks_common::ok("{}")
        },
    );
    let two = event("two");
    assert_eq!(
        send(&handle, &sign_with(&r.signer_a, &handle, &two).await).await,
        Answer::status(200),
        "A still verifies from the cache"
    );
    assert_eq!(r.resolver.fetch_count(), fetches, "no fetch for a cached key");

    let three = event("three");
    let by_b = send(&handle, &sign_with(&r.signer_b, &handle, &three).await).await;
    assert_eq!(by_b, Answer::unavailable(), "retryable, no terminal challenge");
    assert_eq!(r.resolver.fetch_count(), fetches + 1, "one refetch on the kid miss");
    assert!(
        metrics_line(
            &handle,
            "adcp_gateway_webhooks_total{outcome=\"webhook_signature_jwks_unavailable\"} 1\n"
        ),
        "{}",
        render(&handle)
    );
    assert_eq!(
        upstream.applied_keys(),
        [one.idempotency_key().as_str(), two.idempotency_key().as_str()],
        "nothing forwarded for B"
    );

    // The endpoint is back with A+B; the cooldown passes.
    r.server.set(
        "/jwks.json",
        jwks_common::ok(jwks_of(&[r.signer_a.signer(), r.signer_b.signer()])),
    );
    r.clock.advance(adcp_jwks::REFETCH_COOLDOWN_SECS + 1);
    let retry = sign_with(&r.signer_b, &handle, &three).await;
    assert_eq!(send(&handle, &retry).await, Answer::status(200));
    let again = sign_with(&r.signer_b, &handle, &three).await;
    assert_eq!(send(&handle, &again).await, Answer::status(200));
    let applied = upstream.seen.applied.lock().unwrap().clone();
    let keyids: Vec<_> = applied
        .iter()
        .map(|(h, _)| {
            (
                h["x-adcp-verified-keyid"].to_str().unwrap().to_owned(),
                h["x-adcp-verified-agent"].to_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        keyids,
        [
            ("rotation-key-a".to_owned(), r.agent.clone()),
            ("rotation-key-a".to_owned(), r.agent.clone()),
            ("rotation-key-b".to_owned(), r.agent.clone()),
        ]
    );
    handle.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------
// 4. Clock skew at the window edges
// ---------------------------------------------------------------------------

/// Signs `e` with `created` and `expires` fixed; `expires - created` may
/// exceed the signer's 300 s cap: then the signature base is re-signed
/// with the longer window (the signer refuses to produce one).
async fn sign_window(
    seller: &Seller,
    handle: &GatewayHandle,
    e: &adcp_sign::WebhookEvent,
    created: i64,
    expires: i64,
) -> (Vec<(String, String)>, Vec<u8>) {
    let url = format!("{}{PATH}", handle.base_url());
    let request = UnsignedRequest::post(&url, e.body());
    let capped = expires.min(created + adcp_sign::MAX_VALIDITY);
    let signed = seller
        .signer
        .sign_with(&request, &SignOptions::new().with_created(created).with_expires(capped))
        .await
        .unwrap();
    let body = signed.body().unwrap().as_bytes().to_vec();
    let mut headers = headers_of(&signed);
    if capped != expires {
        let (from, to) = (format!(";expires={capped};"), format!(";expires={expires};"));
        let base = String::from_utf8(signed.signature_base().to_vec()).unwrap();
        assert!(base.contains(&from), "{base}");
        let base = base.replace(&from, &to);
        let signature = seller.signer.signer().sign(base.as_bytes()).await.unwrap();
        let encoded = seller.signer.profile().signature_encoding().encode(&signature);
        for (name, value) in &mut headers {
            if name == "Signature-Input" {
                *value = value.replace(&from, &to);
            } else if name == "Signature" {
                *value = format!("{}=:{encoded}:", adcp_sign::LABEL);
            }
        }
    }
    (headers, body)
}

/// Clock skew at the window edges (the verifier's clock fixed at `T`;
/// spec step 5: reject if `created > now + 60`, `expires < now − 60` or
/// `expires − created > 300`).
///
/// Expected, each case a distinct event:
/// - `created` 59 s and 60 s ahead: accepted, forwarded;
/// - `created` 61 s ahead: `401 webhook_signature_window_invalid`;
/// - `expires` 1 s in the past: **accepted** (the spec allows 60 s of
///   skew on `expires` too), and 60 s in the past: accepted;
/// - `expires` 61 s in the past: `401 webhook_signature_window_invalid`;
/// - validity of exactly 300 s: accepted; 299 s through the re-signing
///   path: accepted (the path itself yields valid signatures); 301 s:
///   `401 webhook_signature_window_invalid`.
///
/// Nothing rejected reaches the upstream: it applies exactly the accepted
/// events, once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signature_windows_at_the_skew_edges_are_accepted_or_rejected_exactly_as_the_spec_says() {
    let dir = TempDir::new("fault-skew");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let t = SystemClock.now();
    let mut options = GatewayOptions::new(upstream.url());
    options.clock = Some(Arc::new(FixedClock(t)) as Arc<dyn Clock>);
    let handle = start(seller.keys(), &dir.sqlite(), StoreOptions::default(), options).await;

    let window = "webhook_signature_window_invalid";
    let cases: [(&str, i64, i64, Answer); 9] = [
        ("created_59_ahead", t + 59, t + 59 + 300, Answer::status(200)),
        ("created_60_ahead", t + 60, t + 60 + 300, Answer::status(200)),
        ("created_61_ahead", t + 61, t + 61 + 300, Answer::rejected(window)),
        ("expired_1s_ago", t - 200, t - 1, Answer::status(200)),
        ("expired_60s_ago", t - 200, t - 60, Answer::status(200)),
        ("expired_61s_ago", t - 200, t - 61, Answer::rejected(window)),
        ("validity_300", t - 10, t + 290, Answer::status(200)),
        ("validity_299_resigned", t - 10, t + 289, Answer::status(200)),
        ("validity_301", t - 10, t + 291, Answer::rejected(window)),
    ];
    let mut expected_applied = Vec::new();
    for (name, created, expires, expected) in &cases {
        let e = event(name);
        let (headers, body) = if *name == "validity_299_resigned" {
            // Through the re-signing path: signed 300 s, re-signed as 299 s.
            resign_shorter(&seller, &handle, &e, *created, *expires).await
        } else {
            sign_window(&seller, &handle, &e, *created, *expires).await
        };
        let answer = post(&handle, &headers, body).await;
        assert_eq!(&answer, expected, "{name}");
        if answer.status == 200 {
            expected_applied.push(e.idempotency_key().as_str().to_owned());
        }
    }
    assert_eq!(upstream.applied_keys(), expected_applied);
    assert_eq!(expected_applied.len(), 6);
    assert!(metrics_line(
        &handle,
        "adcp_gateway_webhooks_total{outcome=\"webhook_signature_window_invalid\"} 3\n"
    ));
    handle.shutdown().await.unwrap();
}

/// A signature whose base was re-signed with a *shorter* window than the
/// signer produced (`created + 300` → `expires`): the same string surgery
/// as for 301 s, for a window the verifier accepts.
async fn resign_shorter(
    seller: &Seller,
    handle: &GatewayHandle,
    e: &adcp_sign::WebhookEvent,
    created: i64,
    expires: i64,
) -> (Vec<(String, String)>, Vec<u8>) {
    let url = format!("{}{PATH}", handle.base_url());
    let request = UnsignedRequest::post(&url, e.body());
    let signed = seller
        .signer
        .sign_with(
            &request,
            &SignOptions::new().with_created(created).with_expires(created + 300),
        )
        .await
        .unwrap();
    let (from, to) = (format!(";expires={};", created + 300), format!(";expires={expires};"));
    let base = String::from_utf8(signed.signature_base().to_vec())
        .unwrap()
        .replace(&from, &to);
    let signature = seller.signer.signer().sign(base.as_bytes()).await.unwrap();
    let encoded = seller.signer.profile().signature_encoding().encode(&signature);
    let mut headers = headers_of(&signed);
    for (name, value) in &mut headers {
        if name == "Signature-Input" {
            *value = value.replace(&from, &to);
        } else if name == "Signature" {
            *value = format!("{}=:{encoded}:", adcp_sign::LABEL);
        }
    }
    (headers, signed.body().unwrap().as_bytes().to_vec())
}

// ---------------------------------------------------------------------------
// 5. Slowloris and resource limits
// ---------------------------------------------------------------------------

/// Slowloris: a client opens a connection and sends its request headers
/// one byte per second, with the gateway's header timeout at 2 s.
///
/// Expected: the gateway closes that connection within the timeout
/// (asserted: closed after at least 1.5 s and within 6 s, a 3x margin)
/// while a normal signed webhook on another connection, sent meanwhile, is
/// answered `200` and forwarded once. Nothing from the slow client reaches
/// the upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_its_headers_is_disconnected_while_others_are_served() {
    let dir = TempDir::new("fault-slowloris");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let mut options = GatewayOptions::new(upstream.url());
    options.header_timeout = Duration::from_secs(2);
    let handle = start(seller.keys(), &dir.sqlite(), StoreOptions::default(), options).await;

    let addr = handle.local_addr();
    let slow = tokio::spawn(async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        let head = format!("POST {PATH} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nX-Slow: ");
        let mut sent = 0usize;
        for byte in head.bytes().chain(std::iter::repeat(b'a')) {
            if stream.write_all(&[byte]).await.is_err() {
                break;
            }
            sent += 1;
            // Closed by the server? A read returns at once (EOF or reset).
            let mut buf = [0u8; 256];
            match tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => break,
                Ok(Ok(_)) => {} // a response (408?): keep reading until closed
                Err(_) => {}    // nothing yet: one byte per second
            }
            if started.elapsed() > Duration::from_secs(15) {
                panic!("still connected after {:?} ({sent} bytes)", started.elapsed());
            }
        }
        (started.elapsed(), sent)
    });

    // Meanwhile, a normal webhook on another connection.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let a = event("a");
    assert_eq!(
        send(&handle, &seller.sign(&handle, &a).await).await,
        Answer::status(200)
    );

    let (closed_after, sent) = slow.await.unwrap();
    assert!(
        closed_after >= Duration::from_millis(1500),
        "closed after {closed_after:?}"
    );
    assert!(closed_after < Duration::from_secs(6), "closed after {closed_after:?}");
    assert!(sent < 10, "{sent} bytes trickled");
    assert_eq!(upstream.applied_keys(), [a.idempotency_key().as_str()]);
    // And the gateway still serves new connections.
    let b = event("b");
    assert_eq!(
        send(&handle, &seller.sign(&handle, &b).await).await,
        Answer::status(200)
    );
    handle.shutdown().await.unwrap();
}

/// A client that sends complete headers, then trickles its body (one byte
/// per 300 ms of a declared 2000), with the body timeout at 1 s.
///
/// Expected: `408` within about the timeout (asserted under 4 s), nothing
/// forwarded; the gateway serves the next request normally.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_its_body_is_answered_408_within_the_body_timeout() {
    let dir = TempDir::new("fault-slowbody");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let mut options = GatewayOptions::new(upstream.url());
    options.body_timeout = Duration::from_secs(1);
    let handle = start(seller.keys(), &dir.sqlite(), StoreOptions::default(), options).await;

    let addr = handle.local_addr();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {PATH} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut response = Vec::new();
    loop {
        let _ = stream.write_all(b" ").await;
        let mut buf = [0u8; 512];
        match tokio::time::timeout(Duration::from_millis(300), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(n)) => {
                response.extend_from_slice(&buf[..n]);
                if response.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            Err(_) => {}
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no answer to a trickled body"
        );
    }
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 408"), "{text:?}");
    assert!(took < Duration::from_secs(4), "answered after {took:?}");
    assert_eq!(upstream.seen.requests.load(Ordering::SeqCst), 0);

    let a = event("a");
    assert_eq!(
        send(&handle, &seller.sign(&handle, &a).await).await,
        Answer::status(200)
    );
    assert_eq!(upstream.applied_keys(), [a.idempotency_key().as_str()]);
    handle.shutdown().await.unwrap();
}

/// Concurrency limit: one webhook at a time (`max_concurrency = 1`) while
/// the upstream takes 3 s.
///
/// Expected: a second webhook arriving meanwhile is shed at once: `503`
/// with `Retry-After: 1`, not verified, not claimed, not forwarded
/// (`adcp_gateway_shed_total 1`); probes still answer; once the first is
/// done, the second's retry is forwarded. Each event applied once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_concurrency_limit_requests_are_shed_with_503_and_retry_after() {
    let dir = TempDir::new("fault-shed");
    let upstream = Upstream::start().await;
    *upstream.seen.delay.lock().unwrap() = Some(Duration::from_secs(3));
    let seller = Seller::new();
    let mut options = GatewayOptions::new(upstream.url());
    options.max_concurrency = 1;
    options.upstream_timeout = Duration::from_secs(5);
    let handle = start(seller.keys(), &dir.sqlite(), StoreOptions::default(), options).await;

    let a = event("a");
    let first = seller.sign(&handle, &a).await;
    let base = handle.base_url();
    let in_flight = {
        let headers = headers_of(&first);
        let body = first.body().unwrap().as_bytes().to_vec();
        tokio::spawn(async move {
            let client = common::http_client(Duration::from_secs(30)).unwrap();
            let mut request = client.post(format!("{base}{PATH}"));
            for (name, value) in &headers {
                request = request.header(name.as_str(), value.as_str());
            }
            request.body(body).send().await.unwrap().status().as_u16()
        })
    };
    while upstream.seen.requests.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let b = event("b");
    let started = Instant::now();
    let shed = send(&handle, &seller.sign(&handle, &b).await).await;
    assert_eq!(
        shed,
        Answer {
            status: 503,
            code: None,
            retry_after: Some(1)
        }
    );
    // Answered while the first still holds the only slot (3 s).
    assert!(started.elapsed() < Duration::from_secs(2), "shed at once, not queued");
    assert_eq!(common::get(format!("{}/healthz", handle.base_url())).await.0, 200);
    assert!(metrics_line(&handle, "adcp_gateway_shed_total 1\n"));

    assert_eq!(in_flight.await.unwrap(), 200);
    *upstream.seen.delay.lock().unwrap() = None;
    let retry = seller.sign(&handle, &b).await;
    assert_eq!(send(&handle, &retry).await, Answer::status(200));
    assert_eq!(
        upstream.applied_keys(),
        [a.idempotency_key().as_str(), b.idempotency_key().as_str()]
    );
    handle.shutdown().await.unwrap();
}

/// JWKS endpoint still down, the seller retries the B-signed event within
/// the 30 s refetch cooldown that the failed refetch started.
///
/// Expected (spec: `webhook_signature_key_unknown` only "after one
/// refetch", and a JWKS fetch failure is the retryable
/// `*_jwks_unavailable`): the retry is answered like the first attempt,
/// `503` without a challenge, since the key set is still unknown, not
/// known to lack B. (Before adcp-jwks commit "a kid miss within the
/// cooldown after a failed refetch answers that failure", this retry was
/// answered `401 webhook_signature_key_unknown`, which the spec makes
/// terminal to the sender: the event was dropped.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_within_the_cooldown_after_a_failed_refetch_is_still_retryable() {
    let r = rotation().await;
    let dir = TempDir::new("fault-jwks-cooldown");
    let upstream = Upstream::start().await;
    let keys: Arc<dyn KeyResolver> = r.resolver.clone();
    let handle = start(
        keys,
        &dir.sqlite(),
        StoreOptions::default(),
        GatewayOptions::new(upstream.url()),
    )
    .await;
    let one = event("one");
    assert_eq!(
        send(&handle, &sign_with(&r.signer_a, &handle, &one).await).await,
        Answer::status(200)
    );
    r.server.set(
        "/jwks.json",
        jwks_common::Resp {
            status: 500,
            ..jwks_common::ok("{}")
        },
    );
    let three = event("three");
    let first = send(&handle, &sign_with(&r.signer_b, &handle, &three).await).await;
    assert_eq!(first, Answer::unavailable());
    r.clock.advance(5);
    let retry = send(&handle, &sign_with(&r.signer_b, &handle, &three).await).await;
    assert_eq!(retry, Answer::unavailable(), "{}", render(&handle));
    assert_eq!(upstream.applied_keys(), [one.idempotency_key().as_str()]);
    handle.shutdown().await.unwrap();
}

/// The `adcp-sig gateway` process, killed on drop (even when the test
/// fails).
struct Process(std::process::Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The binary's flags reach the gateway: `adcp-sig gateway --store-timeout 1
/// --header-timeout 2` on a private Redis.
///
/// Expected: with Redis paused for 4 s, a webhook is answered `503` in
/// under 3 s (with the default 5 s store timeout it would have waited out
/// the pause and been forwarded); after the pause the seller's re-signed
/// retry is forwarded once; a client trickling its headers is disconnected
/// within about 2 s (asserted under 6 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_bounds_store_operations_and_header_reads_by_its_flags() {
    use std::io::BufReader;
    use std::process::{Command, Stdio};

    let (port, server) = private_redis("gw-fault-cli");
    let dir = TempDir::new("fault-cli");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let jwks = dir.0.join("seller-jwks.json");
    std::fs::write(&jwks, seller.jwks.to_string()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            upstream.url().as_str(),
        ])
        .arg("--jwks")
        .arg(&jwks)
        .args(["--jwks-agent", common::AGENT, "--store", &server.url()])
        .args(["--store-namespace", &unique("cli")])
        .args(["--store-timeout", "1", "--header-timeout", "2", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let process = Process(child);
    let (_, addr) = common::listening(&mut stderr);
    let url = format!("http://{addr}{PATH}");
    let post = |signed: SignedRequest| {
        let url = url.clone();
        async move {
            let client = common::http_client(Duration::from_secs(30)).unwrap();
            let request = common::signed_post(&client, url, &signed);
            let started = Instant::now();
            let response = request.send().await.unwrap();
            (response.status().as_u16(), started.elapsed())
        }
    };

    let warm = event("warm");
    assert_eq!(
        post(seller.signer.sign_webhook(&url, &warm).await.unwrap()).await.0,
        200
    );
    let a = event("a");
    assert!(redis_cli(port, &["CLIENT", "PAUSE", "4000", "ALL"]).contains("OK"));
    let (status, took) = post(seller.signer.sign_webhook(&url, &a).await.unwrap()).await;
    assert_eq!(status, 503);
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    wait_unpaused(port).await;
    assert_eq!(post(seller.signer.sign_webhook(&url, &a).await.unwrap()).await.0, 200);
    assert_eq!(
        upstream.applied_keys(),
        [warm.idempotency_key().as_str(), a.idempotency_key().as_str()]
    );

    let mut stream = tokio::net::TcpStream::connect(addr.as_str()).await.unwrap();
    let started = Instant::now();
    let closed_after = loop {
        if stream.write_all(b"P").await.is_err() {
            break started.elapsed();
        }
        let mut buf = [0u8; 256];
        if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buf)).await {
            break started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(15), "never disconnected");
    };
    assert!(closed_after < Duration::from_secs(6), "closed after {closed_after:?}");
    drop(process);
    drop(server);
}

/// The same retry within the cooldown, several times, through the
/// resolver the binary uses for `--agent`
/// (`adcp_gateway::AgentsResolver` over `HttpsKeyResolver`).
///
/// Expected: the first B-signed attempt and its retry a moment later are
/// both `503` without a challenge (never the terminal
/// `401 webhook_signature_key_unknown`), nothing forwarded; when the
/// endpoint serves A+B and the cooldown has passed, the retry is forwarded
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_agents_resolver_a_retry_within_the_cooldown_stays_retryable_and_then_verifies() {
    let r = rotation().await;
    let dir = TempDir::new("fault-jwks-agents");
    let upstream = Upstream::start().await;
    let inner: Arc<dyn KeyResolver> = r.resolver.clone();
    let keys = Arc::new(adcp_gateway::AgentsResolver::new(vec![(r.agent.clone(), inner)]));
    let handle = start(
        keys,
        &dir.sqlite(),
        StoreOptions::default(),
        GatewayOptions::new(upstream.url()),
    )
    .await;
    let one = event("one");
    assert_eq!(
        send(&handle, &sign_with(&r.signer_a, &handle, &one).await).await,
        Answer::status(200)
    );
    r.server.set(
        "/jwks.json",
        jwks_common::Resp {
            status: 500,
            ..jwks_common::ok("{}")
        },
    );
    let three = event("three");
    for attempt in 0..3 {
        let answer = send(&handle, &sign_with(&r.signer_b, &handle, &three).await).await;
        assert_eq!(answer, Answer::unavailable(), "attempt {attempt}: {}", render(&handle));
        r.clock.advance(5);
    }
    assert_eq!(r.resolver.fetch_count(), 2, "one refetch, then the cooldown");
    assert!(metrics_line(
        &handle,
        "adcp_gateway_webhooks_total{outcome=\"webhook_signature_jwks_unavailable\"} 3\n"
    ));
    assert_eq!(upstream.applied_keys(), [one.idempotency_key().as_str()]);

    r.server.set(
        "/jwks.json",
        jwks_common::ok(jwks_of(&[r.signer_a.signer(), r.signer_b.signer()])),
    );
    r.clock.advance(adcp_jwks::REFETCH_COOLDOWN_SECS);
    let retry = sign_with(&r.signer_b, &handle, &three).await;
    assert_eq!(send(&handle, &retry).await, Answer::status(200));
    assert_eq!(
        upstream.applied_keys(),
        [one.idempotency_key().as_str(), three.idempotency_key().as_str()]
    );
    handle.shutdown().await.unwrap();
}
