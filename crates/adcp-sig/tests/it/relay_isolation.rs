//! Destination isolation under `adcp-sig relay` (acceptance): twenty
//! healthy destinations (twenty origins: one port each) and a black hole
//! (accepts connections, never answers) holding many queued events.
//!
//! Two relays run side by side, each on a store of its own: one has the
//! black hole's events queued first, the other not. The same burst of
//! events to the healthy destinations then goes to both, interleaved (one
//! set of clients alternating between them), so that whatever else loads
//! the machine meanwhile (other tests, on two cores) weighs on both runs
//! alike. Asserted: the healthy destinations' p99 enqueue-to-delivery
//! latency (from the start of the `POST` to the arrival at the sink) with
//! the black hole is within 2× of the one without; the black hole's
//! breaker opens (`adcp_outbox_open_breakers 1`)
//! and its events stay `pending` without spending attempts; once it
//! answers again, one probe alone goes out, the breaker closes and every
//! one of its events is delivered.
//!
//! Sizes: 500 black-hole events and 20 × 50 healthy ones by default;
//! 5,000 and 20 × 100 with `ADCP_RELAY_ACCEPTANCE_FULL=1`. Attempts time
//! out after 1 s (`--attempt-timeout-seconds 1`). The relays' CPU time
//! during the burst is printed beside the latencies.
//!
//! Found at the full size: the relay with 5,000 black-hole events queued
//! spends 1.6–1.8× the CPU of the other on the same healthy burst, and
//! its p99 lands around 1.9–2.5× (the 2× bound fails about every other
//! run). Every claim and every `next_due` walks the due-time index past
//! all of the blocked origin's pending rows (`adcp-outbox`,
//! `store/sqlite.rs` `claim_in` / `next_due_in`, the same shape in
//! `store/postgres/sql.rs` `Candidates`), so their cost grows with the
//! dead destination's queue.

use crate::relay_support::{
    all_events, cpu_time, enqueue, for_each_concurrently, key, metric, prefix, quantile, size, task_event, until, Base,
    Ports, Relay, RelaySpec,
};
use crate::support::gateway::{http_client, TempDir};
use adcp_outbox::EventState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Router;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const HEALTHY: usize = 20;

fn key_of(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["idempotency_key"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// How long a healthy destination takes to answer: a buyer's ordinary
/// answer time, and long enough that the burst outruns the relay's
/// attempts in flight (64 by default, against 20 destinations × 4), so
/// that the latencies compared measure delivery capacity (what a black
/// hole holding slots or slowing claims would take away) rather than
/// scheduling noise on a loaded two-core machine.
const ANSWER_TIME: Duration = Duration::from_millis(200);

/// The healthy destinations: `200` after [`ANSWER_TIME`]; when each key
/// first arrived.
#[derive(Default)]
struct Arrivals {
    first: Mutex<HashMap<String, Instant>>,
}

async fn healthy(State(a): State<Arc<Arrivals>>, body: Bytes) -> StatusCode {
    let now = Instant::now();
    a.first.lock().unwrap().entry(key_of(&body)).or_insert(now);
    tokio::time::sleep(ANSWER_TIME).await;
    StatusCode::OK
}

/// One request the black hole answered once it was switched on: its key,
/// when it arrived and when its answer was ready.
struct Served {
    key: String,
    arrived: Instant,
    answered: Instant,
}

/// Accepts connections and holds them unanswered until [`BlackHole::wake`];
/// then serves `200`, recording every request.
struct BlackHole {
    port: u16,
    wake: Option<tokio::sync::oneshot::Sender<()>>,
    served: Arc<Mutex<Vec<Served>>>,
    held: Arc<Mutex<usize>>,
    task: tokio::task::JoinHandle<()>,
}

impl BlackHole {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (wake, mut woken) = tokio::sync::oneshot::channel::<()>();
        let served: Arc<Mutex<Vec<Served>>> = Arc::default();
        let held: Arc<Mutex<usize>> = Arc::default();
        let (served2, held2) = (Arc::clone(&served), Arc::clone(&held));
        let task = tokio::spawn(async move {
            let mut sockets = Vec::new();
            loop {
                tokio::select! {
                    _ = &mut woken => break,
                    accepted = listener.accept() => {
                        if let Ok((socket, _)) = accepted {
                            sockets.push(socket);
                            *held2.lock().unwrap() += 1;
                        }
                    }
                }
            }
            drop(sockets);
            let app = Router::new().fallback(move |body: Bytes| {
                let served = Arc::clone(&served2);
                async move {
                    let arrived = Instant::now();
                    let key = key_of(&body);
                    // The first request (the probe) takes long enough that
                    // a second attempt started meanwhile would overlap it.
                    if served.lock().unwrap().is_empty() {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    served.lock().unwrap().push(Served {
                        key,
                        arrived,
                        answered: Instant::now(),
                    });
                    StatusCode::OK
                }
            });
            let _ = axum::serve(listener, app).await;
        });
        Self {
            port,
            wake: Some(wake),
            served,
            held,
            task,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn wake(&mut self) {
        if let Some(w) = self.wake.take() {
            let _ = w.send(());
        }
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Posts each request to its relay with 16 clients; when each `POST`
/// started, by key.
async fn post_burst(requests: Vec<(Base, Value)>) -> HashMap<String, Instant> {
    let requests = Arc::new(requests);
    let client = http_client(Duration::from_secs(30)).unwrap();
    let reqs = Arc::clone(&requests);
    let started = for_each_concurrently(requests.len(), 16, move |i| {
        let (requests, client) = (Arc::clone(&reqs), client.clone());
        async move {
            let started = Instant::now();
            let (base, request) = &requests[i];
            enqueue(&client, base, request, Duration::from_secs(60)).await;
            started
        }
    })
    .await;
    requests
        .iter()
        .zip(started)
        .map(|((_, r), t)| (r["payload"]["idempotency_key"].as_str().unwrap().to_owned(), t))
        .collect()
}

/// The same healthy burst to each relay of `relays` (named by `runs`),
/// interleaved: enqueue-to-delivery latency per event, per relay.
async fn healthy_bursts(
    relays: [&Relay; 2],
    runs: [&str; 2],
    sinks: &Ports,
    arrivals: &Arrivals,
    per_destination: usize,
) -> [Vec<Duration>; 2] {
    let n = HEALTHY * per_destination;
    let bases = relays.map(|r| Base::new(&r.base));
    let requests: Vec<(Base, Value)> = (0..2 * n)
        .map(|k| {
            let (which, i) = (k % 2, k / 2);
            let op = format!("{}_{i}", runs[which]);
            let request = task_event(
                &sinks.url(i, &format!("/hooks/{op}")),
                &op,
                &format!("whk_iso_{}_{i:06}", runs[which]),
            );
            (bases[which].clone(), request)
        })
        .collect();
    let started = post_burst(requests).await;
    let all = until(Duration::from_secs(120), async || {
        let first = arrivals.first.lock().unwrap();
        started.keys().all(|k| first.contains_key(k))
    })
    .await;
    assert!(
        all,
        "healthy events not delivered:\n{}\n{}",
        relays[0].log_text(),
        relays[1].log_text()
    );
    let first = arrivals.first.lock().unwrap();
    runs.map(|run| {
        let prefix = format!("whk_iso_{run}_");
        started
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, t)| first[k].saturating_duration_since(*t))
            .collect()
    })
}

fn summary(latencies: &[Duration]) -> String {
    format!(
        "p50 {} ms, p99 {} ms, max {} ms",
        quantile(latencies, 0.5).as_millis(),
        quantile(latencies, 0.99).as_millis(),
        quantile(latencies, 1.0).as_millis()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_black_hole_does_not_slow_healthy_destinations_and_recovers_through_a_probe() {
    let black_hole_events = size(500, 5_000);
    let per_destination = size(50, 100);
    let dir = TempDir::new("relay-isolation");
    let key = key(&dir.0, "relay-iso-1");
    let arrivals = Arc::new(Arrivals::default());
    let app = Router::new()
        .fallback(axum::routing::post(healthy))
        .with_state(Arc::clone(&arrivals));
    let sinks = Ports::serve(HEALTHY, app).await;
    let pid = std::process::id();
    let spec_for = |name: &str| {
        RelaySpec::new(
            format!("sqlite:{}", dir.0.join(format!("{name}.sqlite")).display()),
            &key,
            &prefix("iso"),
            &dir.0,
        )
        .arg("--attempt-timeout-seconds", 1)
    };

    // Both relays; the black hole's events queued on one of them, then
    // the same healthy burst to both.
    let mut hole = BlackHole::start().await;
    let mut baseline_relay = Relay::start(&spec_for("baseline")).await;
    let spec = spec_for("hole");
    let mut relay = Relay::start(&spec).await;
    let hole_base = Base::new(&relay.base);
    let hole_requests: Vec<(Base, Value)> = (0..black_hole_events)
        .map(|i| {
            let op = format!("bh{pid}_{i}");
            let request = task_event(
                &hole.url(&format!("/hooks/{op}")),
                &op,
                &format!("whk_hole_{pid}_{i:06}"),
            );
            (hole_base.clone(), request)
        })
        .collect();
    let hole_started = Instant::now();
    post_burst(hole_requests).await;
    let hole_posted_in = hole_started.elapsed();
    let cpu_before = [baseline_relay.pid(), relay.pid()].map(cpu_time);
    let [baseline, with_hole] = healthy_bursts(
        [&baseline_relay, &relay],
        [&format!("base{pid}"), &format!("hole{pid}")],
        &sinks,
        &arrivals,
        per_destination,
    )
    .await;
    let cpu_after = [baseline_relay.pid(), relay.pid()].map(cpu_time);
    let cpu = [0, 1].map(|i| match (cpu_before[i], cpu_after[i]) {
        (Some(b), Some(a)) => format!("{} ms", (a - b).as_millis()),
        _ => "?".to_owned(),
    });
    assert_eq!(baseline_relay.terminate(Duration::from_secs(30)).await, Some(0));

    let (p99_base, p99_hole) = (quantile(&baseline, 0.99), quantile(&with_hole, 0.99));
    eprintln!(
        "relay isolation: {} healthy events over {HEALTHY} origins; without the black hole {} (relay CPU {}); \
         with {black_hole_events} queued for it (posted in {hole_posted_in:.1?}) {} (relay CPU {})",
        baseline.len(),
        summary(&baseline),
        cpu[0],
        summary(&with_hole),
        cpu[1]
    );
    assert!(
        p99_hole <= p99_base * 2,
        "healthy p99 with the black hole {p99_hole:?} is over twice the p99 without it {p99_base:?}"
    );

    // Its breaker opens; its events stay pending, attempts not spent.
    let opened = until(Duration::from_secs(30), async || {
        metric(&relay.metrics().await, "adcp_outbox_open_breakers") == Some(1.0)
    })
    .await;
    assert!(
        opened,
        "the black hole's breaker did not open:\n{}",
        relay.metrics().await
    );
    let store = spec.store.clone();
    let hole_prefix = spec.prefix.clone();
    let events = all_events(&store, &hole_prefix).await;
    let hole_url = hole.url("/hooks/");
    let hole_events: Vec<_> = events.iter().filter(|e| e.url.starts_with(&hole_url)).collect();
    assert_eq!(hole_events.len(), black_hole_events);
    // Pending, but for the attempts still timing out when it opened (at
    // most the per-destination cap) or a probe under way.
    let in_flight = hole_events.iter().filter(|e| e.state == EventState::InFlight).count();
    assert!(
        hole_events
            .iter()
            .all(|e| matches!(e.state, EventState::Pending | EventState::InFlight))
            && in_flight <= 4,
        "black-hole events must stay pending: {:?}",
        hole_events
            .iter()
            .map(|e| e.state)
            .collect::<std::collections::HashSet<_>>()
    );
    let spent: u32 = hole_events.iter().map(|e| e.attempts).sum();
    // Its breaker opens once failures have run for 5 s (the default
    // `BreakerPolicy::min_failing`): with 1 s attempts at the
    // per-destination cap (4), up to 5 + 2 rounds of 4, and a probe or two.
    assert!(
        spent <= 4 * (5 + 2) + 2,
        "{spent} attempts spent on the black hole while its breaker was open"
    );
    let held = *hole.held.lock().unwrap();

    // It answers again: one probe alone, the breaker closes, everything
    // is delivered.
    let woke_at = Instant::now();
    hole.wake();
    let limit = Duration::from_secs(if black_hole_events > 1_000 { 600 } else { 180 });
    let delivered = until(limit, async || {
        metric(&relay.metrics().await, "adcp_outbox_events{state=\"delivered\"}")
            == Some((black_hole_events + with_hole.len()) as f64)
    })
    .await;
    assert!(
        delivered,
        "black-hole events not delivered after it recovered:\n{}",
        relay.log_text()
    );
    let closed_in = woke_at.elapsed();
    assert_eq!(metric(&relay.metrics().await, "adcp_outbox_open_breakers"), Some(0.0));
    assert_eq!(relay.terminate(Duration::from_secs(30)).await, Some(0));
    let served = std::mem::take(&mut *hole.served.lock().unwrap());
    let mut by_arrival: Vec<&Served> = served.iter().collect();
    by_arrival.sort_by_key(|s| s.arrived);
    assert!(by_arrival.len() >= black_hole_events);
    let probe = by_arrival[0];
    assert!(
        by_arrival[1].arrived >= probe.answered,
        "a second request reached the black hole while its probe was under way"
    );
    let distinct: std::collections::HashSet<&str> = served.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(distinct.len(), black_hole_events);
    let probe_after = probe.arrived.saturating_duration_since(woke_at);
    eprintln!(
        "relay isolation: black hole held {held} connections, {spent} attempts while open; after it answered, \
         probe {probe_after:.1?} after waking it, all {black_hole_events} delivered within {closed_in:.1?}"
    );
}
