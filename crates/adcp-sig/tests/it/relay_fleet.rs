//! A fleet of `adcp-sig relay` processes (acceptance; PostgreSQL only):
//! two relays on one store, events posted to both, a receiver that takes
//! a small random time to answer and answers `503` to the first attempt of
//! one event in five.
//!
//! Asserted: every event delivered; both relays made attempts; no two
//! attempts of one event overlapped in time (the sink records when each
//! request began and ended, per key); per event, the requests the sink saw,
//! the attempts the store counts and the `webhook_activity` records agree
//! (every record completed, the last a success, the others the `503`s).
//!
//! Sizes: 1,500 events by default, 10,000 with
//! `ADCP_RELAY_ACCEPTANCE_FULL=1`. Four events per destination origin at
//! most, so that the failed first attempts never open a breaker (see
//! `relay_crash.rs`).

use crate::relay_support::{
    all_events, drop_postgres_tables, enqueue, for_each_concurrently, get_json, key, metric, mix, notification_event,
    outbox_list, postgres_supported, prefix, size, until, Base, Ports, Relay, RelaySpec,
};
use crate::support::gateway::{http_client, TempDir};
use adcp_outbox::EventState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Router;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request at the sink: when it began, when it ended, its answer.
type Span = (Instant, Instant, u16);

/// Per key, every request's start and end (in arrival order).
#[derive(Default)]
struct Timeline {
    requests: Mutex<HashMap<String, Vec<Span>>>,
    next: AtomicU64,
}

fn key_of(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["idempotency_key"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Keys ending in a multiple of five fail their first attempt.
fn fails_first(key: &str) -> bool {
    key.rsplit('_')
        .next()
        .and_then(|n| n.parse::<usize>().ok())
        .is_some_and(|n| n % 5 == 0)
}

async fn sink(State(t): State<Arc<Timeline>>, body: Bytes) -> StatusCode {
    let start = Instant::now();
    let key = key_of(&body);
    let seen = t.requests.lock().unwrap().get(&key).map_or(0, Vec::len);
    let delay = 1 + mix(t.next.fetch_add(1, Ordering::Relaxed)) % 20;
    tokio::time::sleep(Duration::from_millis(delay)).await;
    let status = if seen == 0 && fails_first(&key) {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    t.requests
        .lock()
        .unwrap()
        .entry(key)
        .or_default()
        .push((start, Instant::now(), status.as_u16()));
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_relays_on_one_postgres_deliver_each_event_without_overlapping_attempts() {
    if !postgres_supported().await {
        eprintln!("skipped: open_store does not accept postgres:// in this build");
        return;
    }
    let n = size(1_500, 10_000);
    let started = Instant::now();
    let dir = TempDir::new("relay-fleet");
    let url = adcp_test_support::database_url();
    let table_prefix = prefix("fleet");
    let key = key(&dir.0, "relay-fleet-1");
    let timeline = Arc::new(Timeline::default());
    let app = Router::new()
        .fallback(axum::routing::post(sink))
        .with_state(Arc::clone(&timeline));
    let ports = Ports::serve(n.div_ceil(4), app).await;
    let spec = RelaySpec::new(&url, &key, &table_prefix, &dir.0)
        .arg("--concurrency", 16)
        .arg("--per-destination", 2)
        .arg("--attempt-timeout-seconds", 2);
    let mut relays = [Relay::start(&spec).await, Relay::start(&spec).await];
    let bases = [Base::new(&relays[0].base), Base::new(&relays[1].base)];

    // One principal per 40 events keeps each activity query within its
    // 200 records.
    let run = std::process::id();
    let requests: Arc<Vec<Value>> = Arc::new(
        (0..n)
            .map(|i| {
                notification_event(
                    &ports.url(i, &format!("/hooks/{i}")),
                    i,
                    &format!("whk_fleet_{run}_{i:06}"),
                    &format!("p_{run}_{}", i / 40),
                )
            })
            .collect(),
    );
    let client = http_client(Duration::from_secs(30)).unwrap();
    let (reqs, b) = (Arc::clone(&requests), bases.clone());
    let ids = for_each_concurrently(n, 16, move |i| {
        let (requests, base, client) = (Arc::clone(&reqs), b[i % 2].clone(), client.clone());
        async move { enqueue(&client, &base, &requests[i], Duration::from_secs(60)).await }
    })
    .await;
    let posted_in = started.elapsed();

    let limit = Duration::from_secs(if n > 2_000 { 900 } else { 240 });
    // The store's count, which every relay of the fleet reports.
    let delivered = until(limit, async || {
        metric(&relays[0].metrics().await, "adcp_outbox_events{state=\"delivered\"}") == Some(n as f64)
    })
    .await;
    assert!(
        delivered,
        "not all delivered:\n{}\n{}",
        relays[0].log_text(),
        relays[1].log_text()
    );
    let delivered_in = started.elapsed();
    let mut per_relay = Vec::new();
    for r in &relays {
        let m = r.metrics().await;
        let attempts: f64 = ["success", "failed", "timeout", "connection_error"]
            .iter()
            .map(|s| metric(&m, &format!("adcp_outbox_attempts_total{{status=\"{s}\"}}")).unwrap_or(0.0))
            .sum();
        per_relay.push(attempts as u64);
    }
    assert!(
        per_relay.iter().all(|a| *a > 0),
        "one relay made no attempt: {per_relay:?}"
    );

    // Activity records, through both relays' APIs.
    let mut records: HashMap<String, Vec<Value>> = HashMap::new();
    for p in 0..n.div_ceil(40) {
        let base = bases[p % 2].get();
        let page = get_json(&format!("{base}/v1/activity?principal=p_{run}_{p}&limit=200")).await;
        for r in page["webhook_activity"].as_array().unwrap() {
            records
                .entry(r["idempotency_key"].as_str().unwrap().to_owned())
                .or_default()
                .push(r.clone());
        }
    }
    for r in &mut relays {
        assert_eq!(r.terminate(Duration::from_secs(30)).await, Some(0), "{}", r.log_text());
    }
    assert_eq!(
        outbox_list(&url, &table_prefix, "in_flight").await,
        Vec::<String>::new()
    );
    let events = all_events(&url, &table_prefix).await;
    assert_eq!(events.len(), n);
    assert_eq!(
        events
            .iter()
            .map(|e| e.id.as_str())
            .collect::<std::collections::HashSet<_>>(),
        ids.iter().map(String::as_str).collect()
    );

    let timeline = std::mem::take(&mut *timeline.requests.lock().unwrap());
    let mut retried = 0;
    for e in &events {
        assert_eq!(e.state, EventState::Delivered, "{}", e.id);
        let key = &e.idempotency_key;
        let mut spans = timeline.get(key).cloned().unwrap_or_default();
        spans.sort_by_key(|s| s.0);
        for pair in spans.windows(2) {
            assert!(
                pair[1].0 >= pair[0].1,
                "{key}: two attempts overlapped ({:?} after the start of one still under way)",
                pair[1].0 - pair[0].0
            );
        }
        let expected = if fails_first(key) { 2 } else { 1 };
        let mut recs = records.get(key).cloned().unwrap_or_default();
        recs.sort_by_key(|r| r["attempt"].as_u64());
        assert_eq!(
            (spans.len(), recs.len(), e.attempts as usize),
            (expected, expected, expected),
            "{key}: requests at the sink, activity records and attempts must agree"
        );
        for (r, s) in recs.iter().zip(&spans) {
            let want = if s.2 == 200 { "success" } else { "failed" };
            assert_eq!(r["status"], want, "{key}: {r}");
            assert_eq!(r["http_status_code"], s.2, "{key}: {r}");
        }
        retried += usize::from(expected == 2);
    }
    eprintln!(
        "relay fleet: {n} events over two relays (attempts {per_relay:?}), {retried} retried once; posted in \
         {posted_in:.1?}, delivered in {delivered_in:.1?}; no overlapping attempts"
    );
    drop(ports);
    drop_postgres_tables(&url, &table_prefix).await;
}
