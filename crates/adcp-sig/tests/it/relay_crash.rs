//! Crash safety of `adcp-sig relay` (acceptance): events posted by
//! concurrent clients, the relay SIGKILLed twice during the run and
//! restarted on the same store, a receiver that answers `503` to the first
//! attempt of every key. Between the relay and that receiver sits our
//! verifying gateway (in-process, the relay's key in a static JWKS), its
//! router mounted in a recording layer that keeps every delivery.
//!
//! Asserted: every event reaches the upstream and is applied exactly once;
//! every delivery of one event carries the same `idempotency_key` and a
//! JCS-identical body under a fresh signature nonce; no delivery went out
//! without its attempt recorded first; after the run every event is
//! `delivered` and no row is left `in_flight` (leased).
//!
//! Sizes: 1,500 events by default, 10,000 with
//! `ADCP_RELAY_ACCEPTANCE_FULL=1`, all to one sink (one origin). The
//! receiver fails every first attempt: its breaker may open when a run of
//! first deliveries fails for 5 s, and its probe, an event already
//! attempted, then succeeds and closes it
//! (`one_origin_failing_every_first_attempt_still_delivers` checks that
//! case without crashes).

use crate::relay_support::{
    all_events, drop_postgres_tables, enqueue, for_each_concurrently, key, nonce, outbox_list, postgres_supported,
    prefix, size, task_event, until, Base, Ports, Relay, RelaySpec,
};
use crate::support::gateway::{http_client, TempDir};
use adcp_gateway::{Gateway, GatewayOptions};
use adcp_outbox::EventState;
use adcp_store::{StoreOptions, StoreUrl};
use adcp_verify::StaticKeyResolver;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tower::ServiceExt as _;

const AGENT: &str = "https://seller.example/mcp";

/// The upstream behind the gateway: per idempotency key, requests seen and
/// times applied; the first request of each key is answered `503`.
#[derive(Default)]
struct Counting {
    keys: Mutex<HashMap<String, (usize, usize)>>,
}

impl Counting {
    fn applied(&self) -> usize {
        self.keys.lock().unwrap().values().filter(|(_, a)| *a > 0).count()
    }
}

async fn upstream(State(c): State<Arc<Counting>>, headers: HeaderMap) -> StatusCode {
    let key = headers
        .get("x-adcp-idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut keys = c.keys.lock().unwrap();
    let entry = keys.entry(key).or_default();
    entry.0 += 1;
    if entry.0 == 1 {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    entry.1 += 1;
    StatusCode::OK
}

/// One request as it reached the gateway.
struct Delivery {
    path: String,
    key: String,
    body: Bytes,
    nonce: String,
}

/// The recording layer: keeps each delivery, then hands it to the gateway
/// in a task of its own (so that a relay killed mid-request does not
/// cancel the gateway between its claim and its answer).
struct Front {
    deliveries: Mutex<Vec<Delivery>>,
    gateway: Router,
}

async fn front(State(front): State<Arc<Front>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 4 << 20).await.unwrap_or_default();
    let key = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v["idempotency_key"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let nonce = parts
        .headers
        .get("signature-input")
        .and_then(|v| v.to_str().ok())
        .and_then(nonce)
        .unwrap_or_default();
    front.deliveries.lock().unwrap().push(Delivery {
        path: parts.uri.path().to_owned(),
        key,
        body: bytes.clone(),
        nonce,
    });
    let gateway = front.gateway.clone();
    let request = Request::from_parts(parts, Body::from(bytes));
    tokio::spawn(async move { gateway.oneshot(request).await.unwrap() })
        .await
        .unwrap()
}

async fn crash_run(tag: &str, store: &str, table_prefix: &str, dir: &TempDir) {
    let n = size(1_500, 10_000);
    let started = Instant::now();
    let key = key(&dir.0, "relay-crash-1");

    let counting = Arc::new(Counting::default());
    let up_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up_addr = up_listener.local_addr().unwrap();
    let up_app = Router::new()
        .route("/events", post(upstream))
        .with_state(Arc::clone(&counting));
    let up_task = tokio::spawn(async move {
        let _ = axum::serve(up_listener, up_app).await;
    });

    let gw_store: StoreUrl = format!("sqlite:{}", dir.0.join("gateway.sqlite").display())
        .parse()
        .unwrap();
    let gw_store = adcp_store::open(
        &gw_store,
        StoreOptions {
            namespace: "relay_crash".to_owned(),
            op_timeout: Duration::from_secs(5),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    let mut options = GatewayOptions::new(format!("http://{up_addr}/events").parse().unwrap());
    options.upstream_timeout = Duration::from_secs(5);
    let gateway = Gateway::new(
        Arc::new(StaticKeyResolver::new().with_jwks(&key.jwks, AGENT)),
        gw_store,
        options,
    )
    .unwrap();
    let front_state = Arc::new(Front {
        deliveries: Mutex::new(Vec::new()),
        gateway: gateway.router(),
    });
    let app = Router::new().fallback(front).with_state(Arc::clone(&front_state));
    let ports = Ports::serve(1, app).await;

    let spec = RelaySpec::new(store, &key, table_prefix, &dir.0)
        .arg("--concurrency", 32)
        .arg("--per-destination", 32)
        .arg("--attempt-timeout-seconds", 2);
    let mut relay = Relay::start(&spec).await;
    let base = Base::new(&relay.base);

    let run = format!("{tag}{}", std::process::id());
    let requests: Arc<Vec<Value>> = Arc::new(
        (0..n)
            .map(|i| {
                let op = format!("op_{i}");
                task_event(
                    &ports.url(i, &format!("/hooks/{op}")),
                    &op,
                    &format!("whk_crash_{run}_{i:06}"),
                )
            })
            .collect(),
    );
    let accepted = Arc::new(AtomicUsize::new(0));
    let client = http_client(Duration::from_secs(30)).unwrap();
    let posting = {
        let (requests, base, accepted, client) = (
            Arc::clone(&requests),
            base.clone(),
            Arc::clone(&accepted),
            client.clone(),
        );
        tokio::spawn(for_each_concurrently(n, 16, move |i| {
            let (requests, base, accepted, client) = (
                Arc::clone(&requests),
                base.clone(),
                Arc::clone(&accepted),
                client.clone(),
            );
            async move {
                let id = enqueue(&client, &base, &requests[i], Duration::from_secs(120)).await;
                accepted.fetch_add(1, Ordering::Relaxed);
                id
            }
        }))
    };

    // Kill 1: a third of the events accepted.
    assert!(
        until(Duration::from_secs(120), async || accepted.load(Ordering::Relaxed)
            >= n / 3)
        .await,
        "posting stalled"
    );
    let accepted_at_kill1 = accepted.load(Ordering::Relaxed);
    let hits_at_kill1 = front_state.deliveries.lock().unwrap().len();
    relay.kill9();
    relay = Relay::start(&spec).await;
    base.set(&relay.base);
    let hits_at_restart = front_state.deliveries.lock().unwrap().len();
    // Kill 2: two thirds accepted, and the restarted relay has delivered.
    assert!(
        until(Duration::from_secs(120), async || {
            accepted.load(Ordering::Relaxed) >= 2 * n / 3
                && front_state.deliveries.lock().unwrap().len() >= hits_at_restart + (n / 10).min(100)
        })
        .await,
        "no progress after the first restart:\n{}",
        relay.log_text()
    );
    let accepted_at_kill2 = accepted.load(Ordering::Relaxed);
    let hits_at_kill2 = front_state.deliveries.lock().unwrap().len();
    relay.kill9();
    relay = Relay::start(&spec).await;
    base.set(&relay.base);

    let ids: Vec<String> = posting.await.unwrap();
    let posted_in = started.elapsed();
    let limit = Duration::from_secs(if n > 2_000 { 900 } else { 240 });
    let all_applied = until(limit, async || counting.applied() >= n).await;
    assert!(
        all_applied,
        "{} of {n} events applied after {limit:?}:\n{}",
        counting.applied(),
        relay.log_text()
    );
    let recorded = until(Duration::from_secs(60), async || {
        crate::relay_support::metric(&relay.metrics().await, "adcp_outbox_events{state=\"delivered\"}")
            == Some(n as f64)
    })
    .await;
    assert!(recorded, "the store does not say delivered for all {n}");
    let delivered_in = started.elapsed();
    assert_eq!(
        relay.terminate(Duration::from_secs(30)).await,
        Some(0),
        "{}",
        relay.log_text()
    );

    // The upstream applied every event exactly once.
    {
        let keys = counting.keys.lock().unwrap();
        let expected: HashSet<String> = (0..n).map(|i| format!("whk_crash_{run}_{i:06}")).collect();
        let seen: HashSet<String> = keys.keys().cloned().collect();
        assert_eq!(seen, expected, "the upstream saw other keys than those posted");
        for (k, (requests, applied)) in keys.iter() {
            assert_eq!(*applied, 1, "{k}: applied {applied} times ({requests} requests)");
        }
    }
    // One id per event, each posted exactly once whatever the retries.
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), n);

    // Every delivery of one event: same key, JCS-identical body, its own
    // nonce.
    let deliveries = std::mem::take(&mut *front_state.deliveries.lock().unwrap());
    let total_deliveries = deliveries.len();
    let mut by_path: HashMap<String, Vec<Delivery>> = HashMap::new();
    for d in deliveries {
        by_path.entry(d.path.clone()).or_default().push(d);
    }
    assert_eq!(by_path.len(), n, "deliveries to other paths than the events'");
    let mut per_event: HashMap<String, usize> = HashMap::new();
    for (i, request) in requests.iter().enumerate() {
        let path = format!("/hooks/op_{i}");
        let key = request["payload"]["idempotency_key"].as_str().unwrap();
        let list = &by_path[&path];
        assert!(
            list.len() >= 2,
            "{path}: {} deliveries, the first must have failed",
            list.len()
        );
        let canonical: HashSet<String> = list
            .iter()
            .map(|d| {
                let v: Value = serde_json::from_slice(&d.body).unwrap();
                adcp_strict_json::jcs::canonicalize(&v)
            })
            .collect();
        assert_eq!(canonical.len(), 1, "{path}: bodies differ between deliveries");
        assert!(list.iter().all(|d| d.key == key), "{path}: another idempotency_key");
        let nonces: HashSet<&str> = list.iter().map(|d| d.nonce.as_str()).collect();
        assert!(!nonces.contains(""), "{path}: a delivery without a nonce");
        assert_eq!(nonces.len(), list.len(), "{path}: a signature nonce reused");
        per_event.insert(key.to_owned(), list.len());
    }

    // The store: every event delivered, none leased; no delivery without
    // its attempt recorded first.
    assert_eq!(
        outbox_list(store, table_prefix, "in_flight").await,
        Vec::<String>::new()
    );
    assert_eq!(outbox_list(store, table_prefix, "pending").await, Vec::<String>::new());
    let events = all_events(store, table_prefix).await;
    assert_eq!(events.len(), n);
    let stored_ids: HashSet<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(stored_ids, ids.iter().map(String::as_str).collect());
    let mut attempts = 0_usize;
    for e in &events {
        assert_eq!(e.state, EventState::Delivered, "{}: {:?}", e.id, e.state);
        let seen = per_event[&e.idempotency_key];
        assert!(
            seen <= e.attempts as usize,
            "{}: {seen} deliveries but {} attempts recorded",
            e.id,
            e.attempts
        );
        attempts += e.attempts as usize;
    }
    eprintln!(
        "relay crash ({tag}): {n} events, killed at {} and {} accepted ({hits_at_kill1} / {hits_at_kill2} deliveries); \
         posted in {posted_in:.1?}, all delivered in {delivered_in:.1?}; {total_deliveries} deliveries \
         ({} beyond two per event), {attempts} attempts recorded",
        accepted_at_kill1,
        accepted_at_kill2,
        total_deliveries - 2 * n
    );
    drop(ports);
    up_task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_relay_killed_twice_delivers_everything_exactly_once() {
    let dir = TempDir::new("relay-crash");
    let store = format!("sqlite:{}", dir.0.join("relay.sqlite").display());
    crash_run("sqlite", &store, &prefix("crash"), &dir).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_relay_killed_twice_delivers_everything_exactly_once() {
    if !postgres_supported().await {
        eprintln!("skipped: open_store does not accept postgres:// in this build");
        return;
    }
    let dir = TempDir::new("relay-crash-pg");
    let url = adcp_test_support::database_url();
    let table_prefix = prefix("crash");
    crash_run("postgres", &url, &table_prefix, &dir).await;
    drop_postgres_tables(&url, &table_prefix).await;
}

/// The acceptance's receiver (`503` to the first attempt of every key)
/// behind one origin, no crash: every event must still be delivered
/// within a minute.
///
/// The first deliveries fail in a burst; the breaker opens only if such a
/// run lasts 5 s, and its probe is an event already attempted (whose retry
/// succeeds), so the origin never stays shut.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_origin_failing_every_first_attempt_still_delivers() {
    let n = 200;
    let dir = TempDir::new("relay-one-origin");
    let key = key(&dir.0, "relay-one-origin-1");
    let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let counts = Arc::clone(&seen);
    let app = Router::new().fallback(move |body: Bytes| {
        let counts = Arc::clone(&counts);
        async move {
            let key = serde_json::from_slice::<Value>(&body).unwrap()["idempotency_key"]
                .as_str()
                .unwrap()
                .to_owned();
            let mut counts = counts.lock().unwrap();
            let seen = counts.entry(key).or_default();
            *seen += 1;
            if *seen == 1 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }
    });
    let ports = Ports::serve(1, app).await;
    let spec = RelaySpec::new(
        format!("sqlite:{}", dir.0.join("relay.sqlite").display()),
        &key,
        &prefix("one"),
        &dir.0,
    );
    let mut relay = Relay::start(&spec).await;
    let base = Base::new(&relay.base);
    let client = http_client(Duration::from_secs(30)).unwrap();
    for i in 0..n {
        let request = task_event(
            &ports.url(0, &format!("/hooks/op_{i}")),
            &format!("op_{i}"),
            &format!("whk_one_origin_{i:06}"),
        );
        enqueue(&client, &base, &request, Duration::from_secs(10)).await;
    }
    let delivered = until(Duration::from_secs(60), async || {
        crate::relay_support::metric(&relay.metrics().await, "adcp_outbox_events{state=\"delivered\"}")
            == Some(n as f64)
    })
    .await;
    let metrics = relay.metrics().await;
    assert_eq!(relay.terminate(Duration::from_secs(30)).await, Some(0));
    assert!(delivered, "not all {n} delivered within 60 s:\n{metrics}");
}
