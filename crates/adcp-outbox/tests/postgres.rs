//! The PostgreSQL outbox against a live server (`DATABASE_URL`, default
//! `postgres://root@127.0.0.1:5432/test`, else a private server): the
//! enqueue's idempotency and coalescing, concurrent claims by several
//! stores, fencing, breakers and their single probe across stores, expiry,
//! redrive, activity records, the application's own transaction, `NOTIFY`
//! wake-ups (and their reconnection), migrations, the reporting
//! schedule's streams moved by racing schedulers. Every test works in a
//! schema (or table prefix) of its own, dropped afterwards.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use adcp_outbox::{
    enqueue_postgres, migrate_postgres, ActivityQuery, ActivitySelector, ActivityStatus, AttemptFacts, BreakerPolicy,
    ClaimRequest, Claimed, Clock as _, EventState, Finish, Health, ListFilter, ManualClock, NewEvent, Outbox,
    OutboxConfig, OutboxDestination, OutboxError, OutboxStore, Outcome, PostgresOutbox, PostgresOutboxOptions,
};
use adcp_sign::{IdempotencyKey, WebhookEvent};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const T0: i64 = 1_800_000_000_000;

fn url() -> String {
    adcp_test_support::database_url()
}

/// A name no other test (or test process) uses.
fn unique(tag: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "ot_{tag}_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        nanos % 1_000_000
    )
}

/// Runs `statements` on a fresh connection from a thread of its own (so
/// that it works from `Drop`, inside or outside a runtime).
fn run_blocking(statements: String) {
    let url = url();
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            if let Ok((client, connection)) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
                tokio::spawn(connection);
                let _ = client
                    .batch_execute(&format!("SET lock_timeout = '10s'; {statements}"))
                    .await;
            }
        });
    })
    .join();
}

/// A schema dropped (with everything in it) when the test ends, even on
/// a failure.
struct Schema(String);

impl Schema {
    fn new(tag: &str) -> Self {
        Self(unique(tag))
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // A failed test may leave a transaction open on its tables (its
        // connection's driver no longer runs): end it first.
        run_blocking(format!(
            "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = '{0}' AND l.pid <> pg_backend_pid();
             DROP SCHEMA IF EXISTS {0} CASCADE",
            self.0
        ));
    }
}

/// Tables with a prefix in `public`, dropped when the test ends.
struct Prefix(String);

impl Prefix {
    fn new(tag: &str) -> Self {
        Self(format!("{}_", unique(tag)))
    }
}

impl Drop for Prefix {
    fn drop(&mut self) {
        let p = &self.0;
        run_blocking(format!(
            "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' AND starts_with(c.relname, '{p}') AND l.pid <> pg_backend_pid();
             DROP TABLE IF EXISTS public.{p}events, public.{p}resources, public.{p}activity, public.{p}breakers, \
             public.{p}report_streams, public.{p}channels, public.{p}schema_version, public.{p}orders CASCADE"
        ));
    }
}

fn options(schema: &str) -> PostgresOutboxOptions {
    PostgresOutboxOptions {
        schema: schema.to_owned(),
        pool_size: 3,
        ..PostgresOutboxOptions::default()
    }
}

async fn store(schema: &str) -> PostgresOutbox {
    PostgresOutbox::connect(&url(), options(schema)).await.unwrap()
}

fn outbox(store: &PostgresOutbox, clock: &ManualClock) -> Outbox {
    let config = OutboxConfig {
        clock: Arc::new(clock.clone()),
        ..OutboxConfig::default()
    };
    Outbox::new(Arc::new(store.clone()), config).unwrap()
}

fn event(payload: Value, url: &str) -> NewEvent {
    NewEvent::new(WebhookEvent::new(&payload).unwrap(), OutboxDestination::new(url))
}

fn keyed(key: &str, payload: Value, url: &str) -> NewEvent {
    NewEvent::new(
        WebhookEvent::with_idempotency_key(IdempotencyKey::new(key).unwrap(), &payload).unwrap(),
        OutboxDestination::new(url),
    )
}

fn typed(n: u32) -> Value {
    json!({"notification_type": "account.status_changed", "notification_id": format!("n{n}"), "n": n})
}

fn impairment(id: &str, state: &str) -> Value {
    json!({
        "task_id": "mb_1",
        "status": "working",
        "timestamp": "2026-04-18T12:00:00Z",
        "result": {"notification_type": "impairment", "impairment_id": id, "state": state},
    })
}

fn claim(now: i64, limit: usize) -> ClaimRequest {
    ClaimRequest {
        now_ms: now,
        lease_ms: 10_000,
        owner: "test".into(),
        limit,
        per_origin_cap: 1_000,
        in_flight: HashMap::new(),
    }
}

fn facts(status: ActivityStatus, http: Option<u16>, health: Health, at: i64) -> AttemptFacts {
    AttemptFacts {
        status,
        http_status: http,
        response_time_ms: Some(12),
        error_message: (status != ActivityStatus::Success).then(|| format!("HTTP {}", http.unwrap_or(0))),
        completed_at_ms: at,
        health,
    }
}

fn finish(c: &Claimed, outcome: Outcome, facts: Option<AttemptFacts>, now: i64) -> Finish {
    Finish {
        id: c.id.clone(),
        lease_token: c.lease_token,
        origin: c.origin.clone(),
        outcome,
        facts,
        now_ms: now,
    }
}

fn delivered(c: &Claimed, now: i64) -> Finish {
    finish(
        c,
        Outcome::Delivered,
        Some(facts(ActivityStatus::Success, Some(200), Health::Up, now)),
        now,
    )
}

fn failed(c: &Claimed, retry_at: i64, now: i64) -> Finish {
    finish(
        c,
        Outcome::RetryAt(retry_at),
        Some(facts(ActivityStatus::Failed, Some(503), Health::Down, now)),
        now,
    )
}

/// Whether `wake` is notified within `limit`.
async fn woken(wake: &tokio::sync::Notify, limit: Duration) -> bool {
    tokio::time::timeout(limit, wake.notified()).await.is_ok()
}

#[tokio::test]
async fn one_key_is_one_event_another_payload_is_refused_and_fan_out_needs_a_key_per_destination() {
    let schema = Schema::new("idem");
    let a = store(&schema.0).await;
    let b = store(&schema.0).await;
    let clock = ManualClock::new(T0);
    let (oa, ob) = (outbox(&a, &clock), outbox(&b, &clock));
    let key = "whk_0123456789abcdef";
    let url = "https://buyer.example/hooks";
    let first = oa.enqueue(keyed(key, json!({"a": 1, "b": [1, 2]}), url)).await.unwrap();
    assert!(!first.duplicate);
    // The same JCS payload, from another store: the first event.
    let again = ob.enqueue(keyed(key, json!({"b": [1, 2], "a": 1}), url)).await.unwrap();
    assert_eq!((again.id.clone(), again.duplicate), (first.id.clone(), true));
    let err = oa.enqueue(keyed(key, json!({"a": 2}), url)).await.unwrap_err();
    assert!(matches!(err, OutboxError::KeyConflict { .. }), "{err:?}");
    let err = oa
        .enqueue(keyed(key, json!({"a": 1, "b": [1, 2]}), "https://other.example/hooks"))
        .await
        .unwrap_err();
    assert!(matches!(err, OutboxError::KeyUsedForOtherDestination { .. }), "{err:?}");
    let other = oa
        .enqueue(keyed(key, json!({"a": 2}), url).signing_scope("tenant-2"))
        .await
        .unwrap();
    assert_ne!(other.id, first.id);

    // Sixteen enqueues of one new key at once, through both stores: one
    // event, fifteen duplicates of it.
    let racing = (0..16).map(|i| {
        let o = if i % 2 == 0 { oa.clone() } else { ob.clone() };
        async move {
            o.enqueue(keyed("whk_race_0123456789", json!({"race": true}), url))
                .await
        }
    });
    let results: Vec<_> = futures_util::future::join_all(racing).await;
    let results: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    assert_eq!(results.iter().filter(|r| !r.duplicate).count(), 1);
    assert!(results.iter().all(|r| r.id == results[0].id));

    let all = oa
        .list(&ListFilter {
            limit: 10,
            ..ListFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 3);
    assert!(all.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    let page = oa
        .list(&ListFilter {
            limit: 10,
            before: Some(all[0].id.clone()),
            state: Some(EventState::Pending),
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 2);
}

#[tokio::test]
async fn coalescing_replaces_a_held_event_and_keeps_its_time() {
    let schema = Schema::new("coal");
    let s = store(&schema.0).await;
    let clock = ManualClock::new(T0);
    let o = outbox(&s, &clock);
    let url = "https://buyer.example/hooks";
    let first = o
        .enqueue(event(impairment("imp_a", "s0"), url).coalescing_key("imp_a"))
        .await
        .unwrap();
    assert_eq!(first.superseded, None);
    let held_until = o.get(&first.id).await.unwrap().unwrap().next_attempt_at_ms.unwrap();
    assert_eq!(held_until, T0 + 300_000);
    clock.advance_ms(1_000);
    let second = o
        .enqueue(event(impairment("imp_a", "s1"), url).coalescing_key("imp_a"))
        .await
        .unwrap();
    assert_eq!(second.superseded.as_ref(), Some(&first.id));
    let view = o.get(&second.id).await.unwrap().unwrap();
    assert_eq!(
        view.next_attempt_at_ms,
        Some(held_until),
        "the window is fixed by the first"
    );
    let old = o.get(&first.id).await.unwrap().unwrap();
    assert_eq!(old.state, EventState::Superseded);
    assert_eq!(old.superseded_by.as_ref(), Some(&second.id));
    assert_eq!(old.finished_at_ms, Some(T0 + 1_000));
    let third = o
        .enqueue(event(impairment("imp_a", "s2"), url).coalescing_key("imp_a"))
        .await
        .unwrap();
    assert_eq!(third.superseded.as_ref(), Some(&second.id));
    // Another key, another destination, a zero window: nothing replaced.
    let other_key = o
        .enqueue(event(impairment("imp_b", "open"), url).coalescing_key("imp_b"))
        .await
        .unwrap();
    assert_eq!(other_key.superseded, None);
    let other_url = o
        .enqueue(event(impairment("imp_a", "s3"), "https://else.example/h").coalescing_key("imp_a"))
        .await
        .unwrap();
    assert_eq!(other_url.superseded, None);
    let now = o
        .enqueue(
            event(impairment("imp_a", "fraud"), url)
                .coalescing_key("imp_a")
                .coalescing_window(Duration::ZERO),
        )
        .await
        .unwrap();
    assert_eq!(now.superseded, None);
    assert_eq!(
        o.get(&now.id).await.unwrap().unwrap().next_attempt_at_ms,
        Some(clock.now_ms())
    );
    // Only the zero-window event is due now; the held one goes out at the
    // first event's time, once.
    let claimed = s.claim(claim(clock.now_ms(), 10)).await.unwrap();
    assert_eq!(
        claimed.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        vec![now.id.clone()]
    );
    assert_eq!(
        s.finish(vec![delivered(&claimed[0], clock.now_ms())]).await.unwrap(),
        vec![true]
    );
    let later = s.claim(claim(held_until, 10)).await.unwrap();
    assert_eq!(
        later.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        vec![third.id.clone()]
    );
    // The other key and the other destination hold from their own first.
    let last = s.claim(claim(T0 + 301_000, 10)).await.unwrap();
    let ids: HashSet<_> = last.iter().map(|c| c.id.clone()).collect();
    assert_eq!(ids, HashSet::from([other_key.id.clone(), other_url.id.clone()]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_claiming_at_once_never_take_one_event_twice() {
    let schema = Schema::new("race");
    let a = store(&schema.0).await;
    let b = store(&schema.0).await;
    let clock = ManualClock::new(T0);
    let o = outbox(&a, &clock);
    let rows: Vec<_> = (0..500)
        .map(|i| {
            o.prepare(event(json!({"i": i}), &format!("https://b{}.example/hook", i % 5)))
                .unwrap()
        })
        .collect();
    let enqueues = rows.chunks(50).map(|chunk| {
        let a = a.clone();
        let chunk = chunk.to_vec();
        async move {
            for row in chunk {
                a.enqueue(row).await.unwrap();
            }
        }
    });
    futures_util::future::join_all(enqueues).await;

    let worker = |s: PostgresOutbox| {
        tokio::spawn(async move {
            let mut mine = Vec::new();
            let mut empty = 0;
            while empty < 3 {
                let batch = s.claim(claim(T0, 37)).await.unwrap();
                if batch.is_empty() {
                    empty += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                empty = 0;
                let finishes: Vec<_> = batch.iter().map(|c| delivered(c, T0 + 1)).collect();
                let applied = s.finish(finishes).await.unwrap();
                assert!(applied.iter().all(|ok| *ok));
                mine.extend(batch.into_iter().map(|c| c.id));
            }
            mine
        })
    };
    let (from_a, from_b) = tokio::join!(worker(a.clone()), worker(b.clone()));
    let (from_a, from_b) = (from_a.unwrap(), from_b.unwrap());
    let mut seen = HashSet::new();
    for id in from_a.iter().chain(&from_b) {
        assert!(seen.insert(id.clone()), "{id} claimed twice");
    }
    assert_eq!(seen.len(), 500, "a: {}, b: {}", from_a.len(), from_b.len());
    let stats = a.stats(T0).await.unwrap();
    assert_eq!(stats.count(EventState::Delivered), 500);
    assert_eq!(stats.count(EventState::Pending), 0);
    assert_eq!(stats.oldest_pending_enqueued_ms, None);
}

#[tokio::test]
async fn a_finish_after_its_lease_expired_or_was_taken_over_changes_nothing() {
    let schema = Schema::new("fence");
    let a = store(&schema.0).await;
    let b = store(&schema.0).await;
    let clock = ManualClock::new(T0);
    let o = outbox(&a, &clock);
    let e = o
        .enqueue(event(typed(1), "https://b.example/x").principal("p1"))
        .await
        .unwrap();
    let first = a.claim(claim(T0, 10)).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].attempt, 1);
    assert!(b.claim(claim(T0 + 1, 10)).await.unwrap().is_empty(), "leased");
    // At the lease's end, it no longer holds.
    let late = delivered(&first[0], T0 + 10_000);
    assert_eq!(a.finish(vec![late]).await.unwrap(), vec![false]);
    let view = o.get(&e.id).await.unwrap().unwrap();
    assert_eq!((view.state, view.attempts), (EventState::InFlight, 1));
    // Another store takes it over.
    let second = b.claim(claim(T0 + 10_001, 10)).await.unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].attempt, 2);
    assert_ne!(second[0].lease_token, first[0].lease_token);
    let stale = delivered(&first[0], T0 + 10_002);
    assert_eq!(a.finish(vec![stale]).await.unwrap(), vec![false]);
    let view = o.get(&e.id).await.unwrap().unwrap();
    assert_eq!((view.state, view.attempts), (EventState::InFlight, 2));
    assert_eq!(view.last_status, Some(ActivityStatus::ConnectionError));
    // The current holder's outcome applies, once.
    let ok = delivered(&second[0], T0 + 10_003);
    assert_eq!(b.finish(vec![ok.clone(), ok]).await.unwrap(), vec![true, false]);
    let view = o.get(&e.id).await.unwrap().unwrap();
    assert_eq!(view.state, EventState::Delivered);
    assert_eq!(view.finished_at_ms, Some(T0 + 10_003));
    let records = o
        .activity(&ActivityQuery {
            selector: ActivitySelector::Principal {
                principal: "p1".into(),
                resource: None,
            },
            limit: 50,
        })
        .await
        .unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!((records[0].attempt, records[0].status), (2, ActivityStatus::Success));
    assert_eq!(
        (records[1].attempt, records[1].status),
        (1, ActivityStatus::ConnectionError)
    );
    assert!(records[1].error_message.as_deref().unwrap().contains("abandoned"));
    assert_eq!(records[1].completed_at_ms, Some(T0 + 10_001));
}

#[tokio::test]
async fn a_breaker_opens_at_its_threshold_and_lets_one_probe_through_across_stores() {
    let schema = Schema::new("brk");
    let policy = BreakerPolicy {
        failure_threshold: 2,
        initial_open: Duration::from_secs(1),
        max_open: Duration::from_secs(10),
        ..BreakerPolicy::default()
    };
    let db = url();
    let connect = || {
        PostgresOutbox::connect(
            &db,
            PostgresOutboxOptions {
                breaker: policy,
                ..options(&schema.0)
            },
        )
    };
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());
    let clock = ManualClock::new(T0);
    let o = outbox(&a, &clock);
    for i in 0..6 {
        o.enqueue(event(json!({"i": i}), "https://down.example/hook"))
            .await
            .unwrap();
    }
    o.enqueue(event(json!({"up": true}), "https://up.example/hook"))
        .await
        .unwrap();
    let batch = a
        .claim(ClaimRequest {
            per_origin_cap: 2,
            ..claim(T0, 10)
        })
        .await
        .unwrap();
    assert_eq!(batch.len(), 3, "two of the failing origin (its cap), one of the other");
    // The two failures 5 s apart: it opens at the second.
    let opened_at = T0 + 5_010;
    let mut failures = 0;
    let finishes: Vec<_> = batch
        .iter()
        .map(|c| {
            if c.origin.contains("down") {
                failures += 1;
                let now = if failures == 1 { T0 + 10 } else { opened_at };
                failed(c, now + 90, now)
            } else {
                delivered(c, T0 + 10)
            }
        })
        .collect();
    assert!(a.finish(finishes).await.unwrap().iter().all(|ok| *ok));
    assert_eq!(a.stats(opened_at).await.unwrap().open_breakers, 1);
    // Open: its events wait (the two retried and the four never sent)
    // until the probe is due.
    assert!(a.claim(claim(opened_at + 500, 10)).await.unwrap().is_empty());
    assert!(b.claim(claim(opened_at + 500, 10)).await.unwrap().is_empty());
    assert_eq!(a.next_due(opened_at + 500).await.unwrap(), Some(opened_at + 1_000));

    // Both stores ask at once: one probe between them.
    let at = opened_at + 1_000;
    let (ca, cb) = tokio::join!(a.claim(claim(at, 10)), b.claim(claim(at, 10)));
    let probes: Vec<Claimed> = ca.unwrap().into_iter().chain(cb.unwrap()).collect();
    assert_eq!(probes.len(), 1, "{probes:?}");
    assert!(probes[0].probe);
    assert!(
        a.claim(claim(at + 1, 10)).await.unwrap().is_empty(),
        "its probe is in flight"
    );
    assert!(b.claim(claim(at + 1, 10)).await.unwrap().is_empty());
    // The probe fails: open twice as long.
    assert_eq!(
        b.finish(vec![failed(&probes[0], at + 5, at + 5)]).await.unwrap(),
        vec![true]
    );
    assert!(a.claim(claim(at + 1_000, 10)).await.unwrap().is_empty());
    assert_eq!(a.next_due(at + 1_000).await.unwrap(), Some(at + 5 + 2_000));
    // The next probe answers: closed, everything flows.
    let probe = b.claim(claim(at + 2_005, 10)).await.unwrap();
    assert_eq!(probe.len(), 1);
    assert!(probe[0].probe);
    assert_eq!(
        a.finish(vec![delivered(&probe[0], at + 2_006)]).await.unwrap(),
        vec![true]
    );
    assert_eq!(a.stats(at + 2_006).await.unwrap().open_breakers, 0);
    let rest = a.claim(claim(at + 2_007, 10)).await.unwrap();
    assert_eq!(rest.len(), 5);
    assert!(rest.iter().all(|c| !c.probe));
}

/// Stores with `policy` on tables of their own.
async fn breaker_stores(schema: &str, policy: BreakerPolicy, n: usize) -> Vec<PostgresOutbox> {
    let mut stores = Vec::with_capacity(n);
    for _ in 0..n {
        stores.push(
            PostgresOutbox::connect(
                &url(),
                PostgresOutboxOptions {
                    breaker: policy,
                    ..options(schema)
                },
            )
            .await
            .unwrap(),
        );
    }
    stores
}

/// Opens the breaker of every origin of `claimed` (one attempt each, of
/// a policy with a threshold of 2): a failure at `at`, another 5 s later.
/// Returns the breaker's retry time.
async fn open_breakers(s: &PostgresOutbox, first: &[Claimed], second: &[Claimed], at: i64) -> i64 {
    let failures: Vec<_> = first.iter().map(|c| failed(c, at + 100, at)).collect();
    assert!(s.finish(failures).await.unwrap().iter().all(|ok| *ok));
    let later = at + 5_000;
    let failures: Vec<_> = second.iter().map(|c| failed(c, later + 100, later)).collect();
    assert!(s.finish(failures).await.unwrap().iter().all(|ok| *ok));
    later + 1_000
}

async fn next_attempt(o: &Outbox, id: &adcp_outbox::EventId) -> i64 {
    let view = o.get(id).await.unwrap().unwrap();
    assert_eq!(view.state, EventState::Pending, "{view:?}");
    view.next_attempt_at_ms.unwrap()
}

#[tokio::test]
async fn an_opened_breaker_pushes_its_events_back_and_its_probe_prefers_an_attempted_event() {
    let schema = Schema::new("push");
    let policy = BreakerPolicy {
        failure_threshold: 2,
        initial_open: Duration::from_secs(1),
        max_open: Duration::from_secs(10),
        ..BreakerPolicy::default()
    };
    let stores = breaker_stores(&schema.0, policy, 2).await;
    let (a, b) = (&stores[0], &stores[1]);
    let clock = ManualClock::new(T0);
    let o = outbox(a, &clock);
    let mut down = Vec::new();
    for i in 0..5 {
        down.push(
            o.enqueue(event(json!({"i": i}), "https://down.example/hook"))
                .await
                .unwrap()
                .id,
        );
    }
    let up = o
        .enqueue(event(json!({"up": true}), "https://up.example/hook"))
        .await
        .unwrap()
        .id;
    let batch = a
        .claim(ClaimRequest {
            per_origin_cap: 3,
            ..claim(T0, 10)
        })
        .await
        .unwrap();
    let (failing, rest): (Vec<Claimed>, Vec<Claimed>) = batch.into_iter().partition(|c| c.origin.contains("down"));
    assert_eq!((failing.len(), rest.len()), (3, 1));
    // One batch: the second failure (5 s after the first) opens it; the
    // third, an attempt that started before it opened, keeps its own
    // retry time, as when outcomes apply one after the other.
    let opened_at = T0 + 5_010;
    let retry_at = opened_at + 1_000;
    let applied = a
        .finish(vec![
            failed(&failing[0], T0 + 100, T0 + 10),
            failed(&failing[1], T0 + 100, opened_at),
            delivered(&rest[0], opened_at),
            failed(&failing[2], retry_at - 100, opened_at + 1),
        ])
        .await
        .unwrap();
    assert_eq!(applied, vec![true; 4]);
    assert_eq!(a.stats(opened_at).await.unwrap().open_breakers, 1);
    let attempted: Vec<_> = failing.iter().map(|c| c.id.clone()).collect();
    let fresh: Vec<_> = down.iter().filter(|id| !attempted.contains(id)).cloned().collect();
    assert_eq!(fresh.len(), 2);
    for id in attempted[..2].iter().chain(&fresh) {
        assert_eq!(
            next_attempt(&o, id).await,
            retry_at,
            "{id} pushed back to the retry time"
        );
    }
    assert_eq!(next_attempt(&o, &attempted[2]).await, retry_at - 100);
    assert_eq!(o.get(&up).await.unwrap().unwrap().state, EventState::Delivered);

    // An event enqueued while it is open is due before the others...
    clock.set_ms(opened_at + 500);
    let late = o
        .enqueue(event(json!({"late": true}), "https://down.example/hook"))
        .await
        .unwrap()
        .id;
    assert_eq!(next_attempt(&o, &late).await, opened_at + 500);
    assert!(a.claim(claim(retry_at - 1, 10)).await.unwrap().is_empty());
    // ... but the probe is an event already attempted (the earliest due).
    let (pa, pb) = tokio::join!(a.claim(claim(retry_at, 10)), b.claim(claim(retry_at, 10)));
    let probes: Vec<Claimed> = pa.unwrap().into_iter().chain(pb.unwrap()).collect();
    assert_eq!(probes.len(), 1, "{probes:?}");
    let probe = &probes[0];
    assert!(probe.probe);
    assert_eq!((&probe.id, probe.attempt), (&attempted[2], 2));
    // It fails: reopened for twice as long, every pending event of the
    // origin (the probe's own included) pushed back to the new time.
    let reopened_at = retry_at + 5;
    let retry_again = reopened_at + 2_000;
    assert_eq!(
        b.finish(vec![failed(probe, reopened_at + 50, reopened_at)])
            .await
            .unwrap(),
        vec![true]
    );
    for id in attempted.iter().chain(&fresh).chain([&late]) {
        assert_eq!(next_attempt(&o, id).await, retry_again, "{id}");
    }
    assert_eq!(a.next_due(reopened_at).await.unwrap(), Some(retry_again));
    // The next probe is again an attempted event, not the fresh ones.
    let probe = b.claim(claim(retry_again, 10)).await.unwrap();
    assert_eq!(probe.len(), 1);
    assert!(probe[0].probe && probe[0].attempt >= 2, "{probe:?}");
    assert_eq!(
        a.finish(vec![delivered(&probe[0], retry_again + 1)]).await.unwrap(),
        vec![true]
    );
    // Closed: everything flows, at once.
    let flowing = a.claim(claim(retry_again + 2, 10)).await.unwrap();
    assert_eq!(flowing.len(), 5);
    assert!(flowing.iter().all(|c| !c.probe));
}

#[tokio::test]
async fn failures_open_a_breaker_only_when_they_span_five_seconds_across_batches_and_stores() {
    let schema = Schema::new("span");
    let policy = BreakerPolicy {
        failure_threshold: 2,
        initial_open: Duration::from_secs(1),
        max_open: Duration::from_secs(10),
        ..BreakerPolicy::default()
    };
    assert_eq!(policy.min_failing, Duration::from_secs(5));
    let stores = breaker_stores(&schema.0, policy, 2).await;
    let (a, b) = (&stores[0], &stores[1]);
    let clock = ManualClock::new(T0);
    let o = outbox(a, &clock);
    for i in 0..4 {
        o.enqueue(event(json!({"i": i}), "https://flaky.example/hook"))
            .await
            .unwrap();
    }
    let claimed = a.claim(claim(T0, 10)).await.unwrap();
    assert_eq!(claimed.len(), 4);
    // Three failures within 5 s, one outcome per call, from either
    // store: the run's start is kept with the breaker, so it stays closed.
    for (i, (c, s)) in claimed[..3].iter().zip([a, b, a]).enumerate() {
        let now = T0 + 10 + 2_000 * i64::try_from(i).unwrap();
        assert_eq!(s.finish(vec![failed(c, now + 100, now)]).await.unwrap(), vec![true]);
        assert_eq!(s.stats(now).await.unwrap().open_breakers, 0, "failure {i} at {now}");
    }
    // The fourth, 5 s after the first: open.
    let now = T0 + 5_010;
    assert_eq!(
        b.finish(vec![failed(&claimed[3], now + 100, now)]).await.unwrap(),
        vec![true]
    );
    assert_eq!(a.stats(now).await.unwrap().open_breakers, 1);
    assert_eq!(a.next_due(now).await.unwrap(), Some(now + 1_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_probe_per_open_origin_across_stores_none_for_an_origin_busy_in_this_process() {
    let schema = Schema::new("probe");
    let policy = BreakerPolicy {
        failure_threshold: 2,
        initial_open: Duration::from_secs(1),
        max_open: Duration::from_secs(10),
        ..BreakerPolicy::default()
    };
    let stores = breaker_stores(&schema.0, policy, 2).await;
    let (a, b) = (&stores[0], &stores[1]);
    let clock = ManualClock::new(T0);
    let o = outbox(a, &clock);
    let origins = 4;
    for i in 0..origins * 5 {
        o.enqueue(event(
            json!({"i": i}),
            &format!("https://d{}.example/hook", i % origins),
        ))
        .await
        .unwrap();
    }
    let first = a
        .claim(ClaimRequest {
            per_origin_cap: 2,
            ..claim(T0, 100)
        })
        .await
        .unwrap();
    assert_eq!(first.len(), origins * 2);
    let mut by_origin: HashMap<String, Vec<Claimed>> = HashMap::new();
    for c in first {
        by_origin.entry(c.origin.clone()).or_default().push(c);
    }
    let one: Vec<Claimed> = by_origin.values().map(|v| v[0].clone()).collect();
    let two: Vec<Claimed> = by_origin.values().map(|v| v[1].clone()).collect();
    let mut due = open_breakers(a, &one, &two, T0 + 10).await;
    assert_eq!(a.stats(due).await.unwrap().open_breakers, origins as u64);
    assert!(b.claim(claim(due - 1, 100)).await.unwrap().is_empty());

    // A store with an attempt in flight to an origin sends no probe there
    // (nor anything else); another store may. Probes count against the
    // limit.
    let busy = "https://d0.example".to_owned();
    let mut in_flight = HashMap::new();
    in_flight.insert(busy.clone(), 1);
    let limited = a
        .claim(ClaimRequest {
            in_flight: in_flight.clone(),
            ..claim(due, 2)
        })
        .await
        .unwrap();
    assert_eq!(limited.len(), 2);
    let mine = a
        .claim(ClaimRequest {
            in_flight,
            ..claim(due, 100)
        })
        .await
        .unwrap();
    assert_eq!(mine.len(), origins - 3, "{mine:?}");
    let theirs = b.claim(claim(due, 100)).await.unwrap();
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0].origin, busy);
    let mut probes: Vec<Claimed> = limited.into_iter().chain(mine).chain(theirs).collect();
    for round in 0..5 {
        assert!(probes.iter().all(|c| c.probe), "{probes:?}");
        let distinct: HashSet<&str> = probes.iter().map(|c| c.origin.as_str()).collect();
        assert_eq!(
            (probes.len(), distinct.len()),
            (origins, origins),
            "round {round}: {probes:?}"
        );
        // Every probe fails: each breaker reopens, twice as long.
        let failed_at = due + 5;
        let failures: Vec<_> = probes.iter().map(|c| failed(c, failed_at + 10, failed_at)).collect();
        assert!(b.finish(failures).await.unwrap().iter().all(|ok| *ok));
        due = failed_at + 1_000 * (1 << (round + 1)).min(10);
        assert!(a.claim(claim(due - 1, 100)).await.unwrap().is_empty());
        // Four claims at once, two per store: one probe per origin.
        let claims = [a, a, b, b].map(|s| {
            let s = s.clone();
            tokio::spawn(async move { s.claim(claim(due, 100)).await.unwrap() })
        });
        probes = Vec::new();
        for c in claims {
            probes.extend(c.await.unwrap());
        }
    }
}

#[tokio::test]
async fn expiry_withdrawal_release_and_redrive() {
    let schema = Schema::new("exp");
    let s = store(&schema.0).await;
    let clock = ManualClock::new(T0);
    let o = outbox(&s, &clock);
    let horizon = i64::try_from(o.config().retry.horizon().as_millis()).unwrap();
    let never = o.enqueue(event(typed(1), "https://b.example/x")).await.unwrap();
    assert_eq!(s.expire_due(T0 + horizon - 1).await.unwrap(), 0);
    assert_eq!(s.expire_due(T0 + horizon).await.unwrap(), 1);
    let view = o.get(&never.id).await.unwrap().unwrap();
    assert_eq!(view.state, EventState::Expired);
    assert_eq!(view.reason.as_deref(), Some("retry horizon passed before any attempt"));
    assert_eq!(view.next_attempt_at_ms, None);
    let err = s.redrive(&never.id, T0 + horizon).await.unwrap_err();
    assert!(matches!(err, OutboxError::NotRedrivable(_)), "{err:?}");

    let e = o
        .enqueue(event(typed(2), "https://b.example/x").principal("p"))
        .await
        .unwrap();
    // Released: the attempt and its pending record undone.
    let c = s.claim(claim(T0, 10)).await.unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(
        s.finish(vec![finish(&c[0], Outcome::Release(T0 + 5_000), None, T0 + 1)])
            .await
            .unwrap(),
        vec![true]
    );
    let view = o.get(&e.id).await.unwrap().unwrap();
    assert_eq!((view.state, view.attempts), (EventState::Pending, 0));
    assert_eq!(
        (view.first_attempt_at_ms, view.next_attempt_at_ms),
        (None, Some(T0 + 5_000))
    );
    let by_p = ActivityQuery {
        selector: ActivitySelector::Principal {
            principal: "p".into(),
            resource: None,
        },
        limit: 10,
    };
    assert!(o.activity(&by_p).await.unwrap().is_empty());
    // Withdrawn: refused, never attempted.
    let c = s.claim(claim(T0 + 5_000, 10)).await.unwrap();
    assert_eq!(c[0].attempt, 1);
    let withdrawn = finish(&c[0], Outcome::Withdrawn("suppressed: test".into()), None, T0 + 5_001);
    assert_eq!(s.finish(vec![withdrawn]).await.unwrap(), vec![true]);
    let view = o.get(&e.id).await.unwrap().unwrap();
    assert_eq!((view.state, view.attempts), (EventState::Refused, 0));
    assert_eq!(view.reason.as_deref(), Some("suppressed: test"));
    assert_eq!(view.finished_at_ms, Some(T0 + 5_001));
    // Redriven: pending again, due now, within its horizon.
    let back = s.redrive(&e.id, T0 + 6_000).await.unwrap();
    assert_eq!(back.state, EventState::Pending);
    assert_eq!(
        (back.next_attempt_at_ms, back.reason, back.finished_at_ms),
        (Some(T0 + 6_000), None, None)
    );
    assert_eq!(back.deadline_ms, T0 + horizon);
    let err = s.redrive(&e.id, T0 + 6_001).await.unwrap_err();
    assert!(matches!(err, OutboxError::NotRedrivable(_)), "{err:?}");
    let missing = adcp_outbox::EventId::generate(T0, &adcp_sign::OsRandom).unwrap();
    assert!(matches!(
        s.redrive(&missing, T0).await.unwrap_err(),
        OutboxError::NotFound(_)
    ));
    assert!(s.get(&missing).await.unwrap().is_none());
    // The connection used by the refusals is still good.
    assert_eq!(s.claim(claim(T0 + 6_000, 10)).await.unwrap().len(), 1);
    // An expired lease is due again at once; next_due says when.
    assert_eq!(s.next_due(T0 + 6_000).await.unwrap(), Some(T0 + 16_000));
}

#[tokio::test]
async fn activity_records_by_principal_resource_and_url_then_purged() {
    let schema = Schema::new("act");
    let s = store(&schema.0).await;
    let clock = ManualClock::new(T0);
    let o = outbox(&s, &clock);
    let url = "https://buyer.example/hook?token=secret";
    let e1 = o
        .enqueue(event(typed(1), url).principal("p1").resource("media_buy:mb_1"))
        .await
        .unwrap();
    let e2 = o
        .enqueue(
            event(typed(2), "https://other.example/hook")
                .principal("p1")
                .resource("media_buy:mb_2"),
        )
        .await
        .unwrap();
    let first = s.claim(claim(T0, 10)).await.unwrap();
    assert_eq!(first.len(), 2);
    let finishes: Vec<_> = first
        .iter()
        .map(|c| {
            if c.id == e1.id {
                failed(c, T0 + 10, T0 + 5)
            } else {
                delivered(c, T0 + 5)
            }
        })
        .collect();
    assert_eq!(s.finish(finishes).await.unwrap(), vec![true, true]);
    let again = s.claim(claim(T0 + 10, 10)).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].id.clone(), again[0].attempt), (e1.id.clone(), 2));
    assert_eq!(s.finish(vec![delivered(&again[0], T0 + 20)]).await.unwrap(), vec![true]);

    let query = |selector| ActivityQuery { selector, limit: 50 };
    let all = o
        .activity(&query(ActivitySelector::Principal {
            principal: "p1".into(),
            resource: None,
        }))
        .await
        .unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!((all[0].attempt, all[0].fired_at_ms), (2, T0 + 10), "newest first");
    assert!(all.iter().all(|r| !r.url.contains("secret")));
    let mb1 = o
        .activity(&query(ActivitySelector::Principal {
            principal: "p1".into(),
            resource: Some("media_buy:mb_1".into()),
        }))
        .await
        .unwrap();
    assert_eq!(
        mb1.iter().map(|r| (r.attempt, r.status)).collect::<Vec<_>>(),
        vec![(2, ActivityStatus::Success), (1, ActivityStatus::Failed)]
    );
    assert_eq!(mb1[1].http_status_code, Some(503));
    assert_eq!(mb1[1].error_message.as_deref(), Some("HTTP 503"));
    assert_eq!(mb1[1].completed_at_ms, Some(T0 + 5));
    assert_eq!(mb1[1].notification_type, "account.status_changed");
    let by_url = o.activity(&query(ActivitySelector::Url(url.into()))).await.unwrap();
    assert_eq!(by_url.len(), 2);
    let limited = o
        .activity(&ActivityQuery {
            limit: 1,
            ..query(ActivitySelector::Url(url.into()))
        })
        .await
        .unwrap();
    assert_eq!(limited.len(), 1);
    let view = o.get(&e1.id).await.unwrap().unwrap();
    assert_eq!(view.url, adcp_outbox::redact_url(url));
    assert_eq!(view.last_status, Some(ActivityStatus::Success));

    // Purged once past the retention: events, records, resources.
    let retention = 30 * 86_400_000;
    // Finished before T0 + 20: e2, its record and resource, e1's first record.
    assert_eq!(s.purge(T0 + 20 + retention, retention).await.unwrap(), 4);
    assert_eq!(
        o.activity(&query(ActivitySelector::Url(url.into())))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(o.get(&e2.id).await.unwrap().is_none());
    // Then e1, its last record and its resource.
    assert_eq!(s.purge(T0 + 21 + retention, retention).await.unwrap(), 3);
    assert!(o.get(&e1.id).await.unwrap().is_none());
    assert!(o
        .activity(&query(ActivitySelector::Url(url.into())))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn an_application_transaction_rolls_back_or_commits_its_webhook() {
    let prefix = Prefix::new("app");
    let p = prefix.0.clone();
    // The default schema, so that the application's session finds the
    // tables through its search_path.
    let s = PostgresOutbox::connect(
        &url(),
        PostgresOutboxOptions {
            table_prefix: p.clone(),
            ..options("public")
        },
    )
    .await
    .unwrap();
    let clock = ManualClock::new(T0);
    let o = outbox(&s, &clock);
    let (mut app, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    app.batch_execute(&format!(
        "CREATE TABLE {p}orders (id BIGSERIAL PRIMARY KEY, state TEXT)"
    ))
    .await
    .unwrap();

    let tx = app.transaction().await.unwrap();
    tx.execute(&format!("INSERT INTO {p}orders (state) VALUES ('booked')"), &[])
        .await
        .unwrap();
    let row = o.prepare(event(typed(1), "https://buyer.example/a")).unwrap();
    let done = enqueue_postgres(&tx, &p, &row).await.unwrap();
    assert_eq!(done.id, row.id());
    tx.rollback().await.unwrap();
    assert!(s.get(&row.id()).await.unwrap().is_none());

    let tx = app.transaction().await.unwrap();
    tx.execute(&format!("INSERT INTO {p}orders (state) VALUES ('booked')"), &[])
        .await
        .unwrap();
    let row = o.prepare(event(typed(2), "https://buyer.example/a")).unwrap();
    enqueue_postgres(&tx, &p, &row).await.unwrap();
    assert!(s.get(&row.id()).await.unwrap().is_none(), "not before the commit");
    // A refusal leaves the transaction usable and unchanged.
    let conflicting = o
        .prepare(keyed(
            row.idempotency_key(),
            json!({"other": 1}),
            "https://buyer.example/a",
        ))
        .unwrap();
    let err = enqueue_postgres(&tx, &p, &conflicting).await.unwrap_err();
    assert!(matches!(err, OutboxError::KeyConflict { .. }), "{err:?}");
    let dup = enqueue_postgres(&tx, &p, &row).await.unwrap();
    assert!(dup.duplicate);
    tx.commit().await.unwrap();
    let n: i64 = app
        .query_one(&format!("SELECT COUNT(*) FROM {p}orders"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    let claimed = s.claim(claim(T0, 10)).await.unwrap();
    assert_eq!(claimed.iter().map(|c| c.id.clone()).collect::<Vec<_>>(), vec![row.id()]);
    assert!(enqueue_postgres(&app.transaction().await.unwrap(), "Bad-Prefix", &row)
        .await
        .is_err());
}

#[tokio::test]
async fn a_commit_anywhere_wakes_every_store_and_the_listener_comes_back() {
    let schema = Schema::new("wake");
    let app_name = unique("app");
    let tagged = format!(
        "{}{}application_name={app_name}",
        url(),
        if url().contains('?') { '&' } else { '?' }
    );
    // A prefix of its own: the channel (`{prefix}wakeup`) is per prefix,
    // shared across schemas, and other tests enqueue meanwhile.
    let own = PostgresOutboxOptions {
        table_prefix: format!("{}_", unique("w")),
        ..options(&schema.0)
    };
    let a = PostgresOutbox::connect(&url(), own.clone()).await.unwrap();
    let b = PostgresOutbox::connect(&tagged, own).await.unwrap();
    let clock = ManualClock::new(T0);
    let o = outbox(&a, &clock);
    let wake = b.wakeups();
    let _ = woken(&wake, Duration::from_millis(50)).await;
    // Another store's enqueue.
    o.enqueue(event(typed(1), "https://b.example/x")).await.unwrap();
    assert!(woken(&wake, Duration::from_secs(5)).await, "NOTIFY from another store");
    // An application's transaction: at its commit, not before.
    let (mut app, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let tx = app.transaction().await.unwrap();
    let row = o.prepare(event(typed(2), "https://b.example/x")).unwrap();
    b.enqueue_in_transaction(&tx, &row).await.unwrap();
    assert!(!woken(&wake, Duration::from_millis(300)).await, "not before the commit");
    tx.commit().await.unwrap();
    assert!(woken(&wake, Duration::from_secs(5)).await, "NOTIFY at commit");
    // A redrive wakes too.
    let c = a.claim(claim(T0, 10)).await.unwrap();
    let f: Vec<_> = c
        .iter()
        .map(|c| finish(c, Outcome::Refused("test".into()), None, T0 + 1))
        .collect();
    a.finish(f).await.unwrap();
    let _ = woken(&wake, Duration::from_millis(50)).await;
    a.redrive(&row.id(), T0 + 2).await.unwrap();
    assert!(woken(&wake, Duration::from_secs(5)).await, "NOTIFY on redrive");

    // The server drops every connection of `b`: its pool and its listener
    // come back by themselves.
    let (admin, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let killed: i64 = admin
        .query_one(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            &[&app_name],
        )
        .await
        .unwrap()
        .get(0);
    assert!(killed >= 2, "the pool's connection and the listener: {killed}");
    assert!(
        woken(&wake, Duration::from_secs(10)).await,
        "a reconnected listener wakes once"
    );
    let mut answered = false;
    for _ in 0..3 {
        match b.stats(T0).await {
            Ok(_) => {
                answered = true;
                break;
            }
            Err(e) => assert!(e.is_retryable(), "{e:?}"),
        }
    }
    assert!(answered, "the pool reconnects");
    let _ = woken(&wake, Duration::from_millis(50)).await;
    let tx = app.transaction().await.unwrap();
    let row = o.prepare(event(typed(3), "https://b.example/x")).unwrap();
    b.enqueue_in_transaction(&tx, &row).await.unwrap();
    tx.commit().await.unwrap();
    assert!(
        woken(&wake, Duration::from_secs(5)).await,
        "NOTIFY after the listener came back"
    );
}

#[tokio::test]
async fn migrations_are_serialized_and_a_newer_schema_is_refused() {
    let schema = Schema::new("mig");
    let db = url();
    let stores = futures_util::future::join_all((0..4).map(|_| PostgresOutbox::connect(&db, options(&schema.0)))).await;
    assert!(
        stores.iter().all(Result::is_ok),
        "{:?}",
        stores.iter().filter_map(|s| s.as_ref().err()).collect::<Vec<_>>()
    );
    let (admin, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let table = format!("{}.adcp_outbox_schema_version", schema.0);
    // Each version applied once by the four racing connections.
    let row = admin
        .query_one(&format!("SELECT COUNT(*), MAX(version) FROM {table}"), &[])
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (4, 4));
    admin
        .batch_execute(&format!("INSERT INTO {table} (version, applied_at) VALUES (99, 0)"))
        .await
        .unwrap();
    let err = PostgresOutbox::connect(&url(), options(&schema.0)).await.unwrap_err();
    assert!(matches!(err, OutboxError::Schema(_)), "{err:?}");

    // migrate_postgres on the session's schema, twice.
    let prefix = Prefix::new("mig");
    migrate_postgres(&admin, &prefix.0).await.unwrap();
    migrate_postgres(&admin, &prefix.0).await.unwrap();
    let row = admin
        .query_one(
            &format!("SELECT COUNT(*), MAX(version) FROM public.{}schema_version", prefix.0),
            &[],
        )
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (4, 4));
    assert!(matches!(
        migrate_postgres(&admin, "Bad").await,
        Err(OutboxError::Config(_))
    ));
    let bad = PostgresOutbox::connect(
        &url(),
        PostgresOutboxOptions {
            schema: "1x".into(),
            ..options("x")
        },
    )
    .await;
    assert!(matches!(bad, Err(OutboxError::Config(_))));
}

#[tokio::test]
async fn an_unreachable_server_is_a_retryable_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let err = PostgresOutbox::connect(
        &format!("postgres://root@127.0.0.1:{port}/test"),
        PostgresOutboxOptions {
            op_timeout: Duration::from_secs(2),
            ..PostgresOutboxOptions::default()
        },
    )
    .await
    .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
}

/// Claims and outcomes as the dispatcher drives them (64 attempts in
/// flight, outcomes recorded in batches by another task), without HTTP:
/// the store's share of a delivery. Run with `--ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement, not a check"]
async fn store_throughput_with_64_attempts_in_flight() {
    let schema = Schema::new("thr");
    let s = PostgresOutbox::connect(
        &url(),
        PostgresOutboxOptions {
            pool_size: 8,
            ..options(&schema.0)
        },
    )
    .await
    .unwrap();
    let clock = ManualClock::new(T0);
    let o = outbox(&s, &clock);
    let n = 20_000;
    let rows: Vec<_> = (0..n)
        .map(|i| {
            o.prepare(event(json!({"i": i}), &format!("https://b{}.example/hook", i % 50)))
                .unwrap()
        })
        .collect();
    let started = std::time::Instant::now();
    let enqueues = rows.chunks(n / 32).map(|chunk| {
        let s = s.clone();
        let chunk = chunk.to_vec();
        async move {
            for row in chunk {
                s.enqueue(row).await.unwrap();
            }
        }
    });
    futures_util::future::join_all(enqueues).await;
    let enqueued = started.elapsed();
    eprintln!(
        "enqueue: {n} in {enqueued:?} ({:.0}/s, 32 concurrent)",
        n as f64 / enqueued.as_secs_f64()
    );

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Finish>();
    let busy = Arc::new(AtomicUsize::new(0));
    let finisher = {
        let (s, busy) = (s.clone(), Arc::clone(&busy));
        tokio::spawn(async move {
            let (mut done, mut calls, mut spent) = (0, 0, Duration::ZERO);
            while let Some(first) = rx.recv().await {
                let mut batch = vec![first];
                while batch.len() < 256 {
                    match rx.try_recv() {
                        Ok(f) => batch.push(f),
                        Err(_) => break,
                    }
                }
                let t = std::time::Instant::now();
                let applied = s.finish(batch).await.unwrap();
                spent += t.elapsed();
                calls += 1;
                done += applied.len();
                busy.fetch_sub(applied.len(), Ordering::SeqCst);
            }
            eprintln!("finish: {calls} calls, {:?} each", spent / calls.max(1));
            done
        })
    };
    let started = std::time::Instant::now();
    let (mut claimed, mut calls, mut spent) = (0, 0_u32, Duration::ZERO);
    while claimed < n {
        let free = 64 - busy.load(Ordering::SeqCst);
        if free == 0 {
            tokio::task::yield_now().await;
            continue;
        }
        let t = std::time::Instant::now();
        let batch = s.claim(claim(T0, free)).await.unwrap();
        spent += t.elapsed();
        calls += 1;
        claimed += batch.len();
        busy.fetch_add(batch.len(), Ordering::SeqCst);
        for c in batch {
            let tx = tx.clone();
            tokio::spawn(async move {
                let _ = tx.send(delivered(&c, T0 + 1));
            });
        }
    }
    drop(tx);
    eprintln!("claim: {calls} calls, {:?} each", spent / calls.max(1));
    let done = finisher.await.unwrap();
    let elapsed = started.elapsed();
    eprintln!(
        "claim+finish: {done} in {elapsed:?} ({:.0}/s)",
        done as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(s.stats(T0).await.unwrap().count(EventState::Delivered), n as u64);
}

/// A source whose every period is ready and whose closing is closed.
struct Ready;

#[async_trait::async_trait]
impl adcp_outbox::reporting::DeliverySource for Ready {
    async fn period(
        &self,
        reg: &adcp_outbox::reporting::ReportingRegistration,
        _: adcp_outbox::reporting::Period,
    ) -> Result<adcp_outbox::reporting::PeriodDelivery, String> {
        Ok(adcp_outbox::reporting::PeriodDelivery::Ready(json!([{
            "media_buy_id": reg.media_buy_id(), "status": "active",
            "totals": {"impressions": 10, "spend": 1.0}, "by_package": []
        }])))
    }

    async fn closing(
        &self,
        _: &adcp_outbox::reporting::ReportingRegistration,
        _: adcp_outbox::reporting::Period,
    ) -> Result<adcp_outbox::reporting::Closing, String> {
        Ok(adcp_outbox::reporting::Closing::Closed(json!([])))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn schedulers_on_several_stores_fire_each_period_once() {
    use adcp_outbox::reporting::{BuyEnd, ReportingConfig, ReportingRegistration, ReportingScheduler};
    const HOUR: i64 = 3_600_000;
    let schema = Schema::new("rpt");
    let clock = ManualClock::new(T0);
    let stores = futures_util::future::join_all((0..3).map(|_| store(&schema.0))).await;
    let schedulers: Vec<ReportingScheduler> = stores
        .iter()
        .map(|s| ReportingScheduler::new(outbox(s, &clock), Arc::new(Ready), ReportingConfig::default()))
        .collect();
    let hook = json!({"url": "https://buyer.example/r", "token": "tok_0123456789abcdef",
                      "reporting_frequency": "hourly"});
    let reg = ReportingRegistration::new("mb_pg", &hook, "Europe/Paris", Duration::ZERO, T0, T0 + 12 * HOUR).unwrap();
    // Registered by all three at once: one stream.
    let registered = futures_util::future::join_all(schedulers.iter().map(|s| s.register(reg.clone()))).await;
    let ops: HashSet<String> = registered.into_iter().map(|r| r.unwrap().operation_id).collect();
    assert_eq!(ops.len(), 1);
    for step in 1..=13 {
        clock.set_ms(T0 + step * HOUR - (step % 2));
        let fired = futures_util::future::join_all(schedulers.iter().map(ReportingScheduler::tick)).await;
        assert!(fired.iter().all(Result::is_ok), "{fired:?}");
    }
    schedulers[0]
        .end("mb_pg", BuyEnd::Completed, T0 + 12 * HOUR)
        .await
        .unwrap();
    let o = outbox(&stores[0], &clock);
    // No relay runs here: the reports are marked delivered so the final may go.
    let (admin, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!(
            "UPDATE {}.adcp_outbox_events SET state = 'delivered'",
            schema.0
        ))
        .await
        .unwrap();
    let fired = futures_util::future::join_all(schedulers.iter().map(ReportingScheduler::tick)).await;
    assert_eq!(fired.into_iter().map(Result::unwrap).sum::<usize>(), 1, "one final");
    let events = o
        .list(&ListFilter {
            limit: 100,
            ..ListFilter::default()
        })
        .await
        .unwrap();
    let rows = admin
        .query(
            &format!(
                "SELECT convert_from(body, 'UTF8') FROM {}.adcp_outbox_events WHERE channel_id = 'reporting_webhook:mb_pg'",
                schema.0
            ),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), events.len());
    let bodies: Vec<Value> = rows
        .iter()
        .map(|r| serde_json::from_str(r.get::<_, &str>(0)).unwrap())
        .collect();
    let mut sequences: Vec<u64> = bodies
        .iter()
        .map(|b| b["result"]["sequence_number"].as_u64().unwrap())
        .collect();
    sequences.sort_unstable();
    assert_eq!(
        sequences,
        (1..=13).collect::<Vec<_>>(),
        "12 hourly periods and the final, each once"
    );
    let periods: HashSet<&str> = bodies
        .iter()
        .filter(|b| b["result"]["notification_type"] == "scheduled")
        .map(|b| b["result"]["reporting_period"]["start"].as_str().unwrap())
        .collect();
    assert_eq!(periods.len(), 12);
}

#[tokio::test]
async fn a_channel_paused_or_closed_on_one_store_refuses_enqueues_on_another() {
    use adcp_outbox::channels::{ChannelRegistration, ChannelState, Channels};
    let schema = Schema::new("chan");
    let clock = ManualClock::new(T0);
    let (a, b) = (store(&schema.0).await, store(&schema.0).await);
    let (oa, ob) = (outbox(&a, &clock), outbox(&b, &clock));
    let (ca, cb) = (Channels::new(oa.clone()), Channels::new(ob.clone()));
    let config = json!({"url": "https://buyer.example/h", "token": "tok_0123456789abcdef", "operation_id": "op"});
    let reg = ChannelRegistration::push_notification_config("mb_c", &config).unwrap();
    ca.put(reg).await.unwrap();
    let task = |n: u32| {
        json!({"task_id": format!("t{n}"), "task_type": "create_media_buy", "status": "working",
                                "timestamp": "2026-04-18T12:00:00Z", "operation_id": "op"})
    };
    let pending = ob
        .enqueue(cb.event("push_notification_config:mb_c", &task(1)).await.unwrap())
        .await
        .unwrap();
    assert_eq!(
        ca.pause("push_notification_config:mb_c").await.unwrap().state,
        ChannelState::Paused
    );
    assert_eq!(ob.get(&pending.id).await.unwrap().unwrap().state, EventState::Refused);
    let err = ob
        .enqueue(cb.event("push_notification_config:mb_c", &task(2)).await.unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "channel_paused");
    // Rotated while paused, resumed: the next event carries the new token.
    let rotated = json!({"url": "https://buyer.example/h2", "token": "tok_new_0123456789", "operation_id": "op",
                         "active": true});
    cb.put(ChannelRegistration::push_notification_config("mb_c", &rotated).unwrap())
        .await
        .unwrap();
    let view = ca.get("push_notification_config:mb_c").await.unwrap().unwrap();
    assert_eq!(view.state, ChannelState::Active);
    let sent = ob
        .enqueue(cb.event("push_notification_config:mb_c", &task(3)).await.unwrap())
        .await
        .unwrap();
    assert_eq!(ob.get(&sent.id).await.unwrap().unwrap().url, "https://buyer.example/h2");
    ca.close("push_notification_config:mb_c").await.unwrap();
    let err = ob
        .enqueue(cb.event("push_notification_config:mb_c", &task(4)).await.unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "channel_closed");
}
