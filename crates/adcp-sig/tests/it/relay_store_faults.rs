//! Store faults under `adcp-sig relay` (acceptance): the outbox store
//! cannot be written for a while during a run.
//!
//! - SQLite: another connection holds `BEGIN EXCLUSIVE` on the relay's
//!   file (file modes would not do: the tests may run as root, which
//!   ignores them). The relay's writes wait out its busy timeout (5 s)
//!   and fail.
//! - PostgreSQL (when this build's outbox has it): a private server the
//!   test owns is stopped (`pg_ctl stop -m immediate`) and started again
//!   on the same port.
//!
//! Asserted, for both: while the store is down the API answers `503`
//! `store_unavailable` and enqueues nothing (`/healthz` says `503` too),
//! no attempt starts (a request reaching the sink meanwhile belongs to an
//! attempt recorded as fired before the fault began), and every attempt that
//! did go out was recorded (per event: requests at the sink = attempts =
//! activity records); once the store is back, the same relay process
//! delivers everything, including the events refused meanwhile and posted
//! again.
//!
//! Sizes: 1,000 events (+ 40 refused and posted again) by default, 10,000
//! with `ADCP_RELAY_ACCEPTANCE_FULL=1`.

use crate::relay_support::{
    all_events, for_each_concurrently, get_json, get_text, key, notification_event, outbox_list, post_event,
    postgres_supported, prefix, size, until, PgServer, Relay, RelaySpec,
};
use crate::support::gateway::{http_client, TempDir};
use adcp_outbox::EventState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A sink answering `200` after a short delay; per key, when each request
/// arrived.
#[derive(Default)]
struct Sink {
    hits: Mutex<HashMap<String, Vec<Instant>>>,
}

impl Sink {
    fn keys(&self) -> usize {
        self.hits.lock().unwrap().len()
    }

    /// Per key, how many requests arrived between `from` and `to`.
    fn arrived_between(&self, from: Instant, to: Instant) -> HashMap<String, usize> {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(key, times)| {
                let n = times.iter().filter(|t| **t > from && **t < to).count();
                (n > 0).then(|| (key.clone(), n))
            })
            .collect()
    }
}

async fn sink(State(sink): State<Arc<Sink>>, body: Bytes) -> StatusCode {
    let key = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["idempotency_key"].as_str().map(str::to_owned))
        .unwrap_or_default();
    sink.hits.lock().unwrap().entry(key).or_default().push(Instant::now());
    tokio::time::sleep(Duration::from_millis(25)).await;
    StatusCode::OK
}

/// One `POST /v1/events`: the answer (or transport error), and how long it
/// took.
type Answer = (Result<(u16, Value), String>, Duration);

/// What makes the store unwritable, and undoes it.
enum Fault {
    /// `BEGIN EXCLUSIVE` held by a connection of the test.
    SqliteLock(std::path::PathBuf, Option<rusqlite::Connection>),
    /// The test's own PostgreSQL, stopped.
    PostgresDown(PgServer),
}

impl Fault {
    async fn begin(&mut self) {
        match self {
            Self::SqliteLock(path, held) => {
                let path = path.clone();
                let conn = tokio::task::spawn_blocking(move || {
                    let conn = rusqlite::Connection::open(path).unwrap();
                    conn.busy_timeout(Duration::from_secs(30)).unwrap();
                    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
                    conn
                })
                .await
                .unwrap();
                *held = Some(conn);
            }
            Self::PostgresDown(server) => server.stop().unwrap(),
        }
    }

    async fn end(&mut self) {
        match self {
            Self::SqliteLock(_, held) => {
                let conn = held.take().unwrap();
                tokio::task::spawn_blocking(move || conn.execute_batch("ROLLBACK").unwrap())
                    .await
                    .unwrap();
            }
            Self::PostgresDown(server) => server.restart().unwrap(),
        }
    }
}

async fn store_fault_run(tag: &str, store: &str, table_prefix: &str, dir: &TempDir, mut fault: Fault) {
    let n = size(1_000, 10_000);
    let refused_n = 40;
    let started = Instant::now();
    let key = key(&dir.0, "relay-faults-1");
    let sink_state = Arc::new(Sink::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks/acct", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/hooks/acct", post(sink))
        .with_state(Arc::clone(&sink_state));
    let sink_task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let spec = RelaySpec::new(store, &key, table_prefix, &dir.0).arg("--attempt-timeout-seconds", 2);
    let mut relay = Relay::start(&spec).await;
    let base = relay.base.clone();

    // Events 0..n/2 before the fault, n/2..n after it, and `refused_n`
    // more posted during it (refused) and again after it. One principal
    // per 40 events keeps each activity query within its 200 records.
    let run = format!("{tag}{}", std::process::id());
    let total = n + refused_n;
    let requests: Arc<Vec<Value>> = Arc::new(
        (0..total)
            .map(|i| {
                notification_event(
                    &url,
                    i,
                    &format!("whk_fault_{run}_{i:06}"),
                    &format!("p_{run}_{}", i / 40),
                )
            })
            .collect(),
    );
    let post_all = |range: std::ops::Range<usize>, workers: usize| {
        let (requests, base) = (Arc::clone(&requests), base.clone());
        let client = http_client(Duration::from_secs(60)).unwrap();
        let offset = range.start;
        for_each_concurrently(range.len(), workers, move |i| {
            let (requests, base, client) = (Arc::clone(&requests), base.clone(), client.clone());
            async move {
                let started = Instant::now();
                let answer = post_event(&client, &base, &requests[offset + i]).await;
                (answer, started.elapsed())
            }
        })
    };
    let expect_accepted = |answers: Vec<Answer>| {
        answers
            .into_iter()
            .map(|(a, _)| match a {
                Ok((202, v)) => v["id"].as_str().unwrap().to_owned(),
                other => panic!("expected 202: {other:?}"),
            })
            .collect::<Vec<_>>()
    };

    let mut ids = expect_accepted(post_all(0..n / 2, 8).await);
    fault.begin().await;
    let down_at = Instant::now();
    let down_wall = adcp_outbox::rfc3339_ms(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap(),
    );
    let delivered_when_down = sink_state.keys();
    // All at once: each waits out the store's busy timeout.
    let refused = post_all(n..total, refused_n).await;
    let (health, _) = get_text(&format!("{base}/healthz")).await;
    let still_running = relay.running();
    // The dispatcher keeps failing to claim for a while (at least 3 s
    // down in all) before the store returns.
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::time::sleep((down_at + Duration::from_secs(3)).saturating_duration_since(Instant::now())).await;
    let up_at = Instant::now();
    fault.end().await;

    assert!(
        still_running,
        "the relay exited while its store was down:\n{}",
        relay.log_text()
    );
    assert!(
        delivered_when_down < n / 2,
        "every event was delivered before the fault began: nothing pending to test"
    );
    let mut slowest = Duration::ZERO;
    for (answer, took) in &refused {
        match answer {
            Ok((503, v)) if v["error"] == "store_unavailable" => {}
            other => panic!("while the store is down, POST must answer 503 store_unavailable: {other:?}"),
        }
        slowest = slowest.max(*took);
    }
    assert_eq!(health, 503, "/healthz while the store is down");
    // Attempts claimed before the fault may still arrive after it began
    // (how long after depends on the machine's load); none may start while
    // it lasts: each arrival is checked below against its attempt's
    // record (fired before the fault began).
    let during = sink_state.arrived_between(down_at, up_at);
    // Nothing of what was refused was stored.
    let stored = all_events(store, table_prefix).await;
    assert_eq!(
        stored.len(),
        n / 2,
        "events stored after the fault, before posting again"
    );
    let refused_keys: HashSet<String> = (n..total).map(|i| format!("whk_fault_{run}_{i:06}")).collect();
    assert!(stored.iter().all(|e| !refused_keys.contains(&e.idempotency_key)));

    // The same process delivers everything once the store is back.
    ids.extend(expect_accepted(post_all(n / 2..total, 8).await));
    let limit = Duration::from_secs(if n > 2_000 { 900 } else { 180 });
    assert!(
        until(limit, async || sink_state.keys() >= total).await,
        "{} of {total} delivered after the store came back:\n{}",
        sink_state.keys(),
        relay.log_text()
    );
    assert!(
        until(Duration::from_secs(60), async || {
            crate::relay_support::metric(&relay.metrics().await, "adcp_outbox_events{state=\"delivered\"}")
                == Some(total as f64)
        })
        .await,
        "the store does not say delivered for all {total}"
    );
    let delivered_in = started.elapsed();
    let store_errors = crate::relay_support::metric(&relay.metrics().await, "adcp_outbox_store_errors_total");
    assert!(
        store_errors.is_some_and(|e| e > 0.0),
        "the dispatcher never saw the store fail: {store_errors:?}"
    );

    // Every attempt recorded: requests at the sink = attempts = activity
    // records, per event, all of them completed.
    let mut records: HashMap<String, Vec<Value>> = HashMap::new();
    for p in 0..total.div_ceil(40) {
        let page = get_json(&format!("{base}/v1/activity?principal=p_{run}_{p}&limit=200")).await;
        for r in page["webhook_activity"].as_array().unwrap() {
            records
                .entry(r["idempotency_key"].as_str().unwrap().to_owned())
                .or_default()
                .push(r.clone());
        }
    }
    assert_eq!(
        relay.terminate(Duration::from_secs(30)).await,
        Some(0),
        "{}",
        relay.log_text()
    );
    assert_eq!(
        outbox_list(store, table_prefix, "in_flight").await,
        Vec::<String>::new()
    );
    let events = all_events(store, table_prefix).await;
    assert_eq!(events.len(), total);
    assert_eq!(
        events.iter().map(|e| e.id.as_str()).collect::<HashSet<_>>(),
        ids.iter().map(String::as_str).collect::<HashSet<_>>()
    );
    for (key, arrived) in &during {
        let fired_before = records
            .get(key)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            // The records' times are all `rfc3339_ms` (UTC, milliseconds,
            // zero-padded): they compare as strings.
            .filter(|r| r["fired_at"].as_str().is_some_and(|t| t <= down_wall.as_str()))
            .count();
        assert!(
            fired_before >= *arrived,
            "{key}: {arrived} request(s) reached the sink while the store was down, {fired_before} attempt(s) \
             started before it went down"
        );
    }
    let hits = sink_state.hits.lock().unwrap();
    let mut attempts = 0;
    for e in &events {
        assert_eq!(e.state, EventState::Delivered, "{}", e.id);
        let at_sink = hits.get(&e.idempotency_key).map_or(0, Vec::len);
        let recorded = records.get(&e.idempotency_key).map_or(&[][..], Vec::as_slice);
        assert_eq!(
            (at_sink, recorded.len()),
            (e.attempts as usize, e.attempts as usize),
            "{}: requests at the sink and activity records must equal the attempts",
            e.id
        );
        assert!(
            recorded.iter().all(|r| r["status"] != "pending"),
            "{}: an attempt left pending: {recorded:?}",
            e.id
        );
        assert!(recorded.iter().any(|r| r["status"] == "success"), "{}", e.id);
        attempts += e.attempts;
    }
    eprintln!(
        "relay store fault ({tag}): {total} events, store down {:.1?} ({} delivered before; refused POSTs answered \
         503 within {slowest:.1?}; {} store errors in the dispatcher); all delivered in {delivered_in:.1?}, \
         {attempts} attempts",
        up_at - down_at,
        delivered_when_down,
        store_errors.unwrap_or_default()
    );
    sink_task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_locked_refuses_with_503_then_delivers_everything() {
    let dir = TempDir::new("relay-faults");
    let path = dir.0.join("relay.sqlite");
    let store = format!("sqlite:{}", path.display());
    let fault = Fault::SqliteLock(path, None);
    store_fault_run("sqlite", &store, &prefix("fault"), &dir, fault).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_stopped_refuses_with_503_then_delivers_everything() {
    if !postgres_supported().await {
        eprintln!("skipped: open_store does not accept postgres:// in this build");
        return;
    }
    let server = match PgServer::start() {
        Ok(s) => s,
        Err(e) => panic!("a private PostgreSQL is needed for this test: {e}"),
    };
    let dir = TempDir::new("relay-faults-pg");
    let url = server.url();
    store_fault_run("postgres", &url, &prefix("fault"), &dir, Fault::PostgresDown(server)).await;
}
