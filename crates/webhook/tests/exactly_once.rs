//! Acceptance: a sender delivers 1,000 events over loopback; 10 % are
//! deliberately re-sent to the same receiver and 5 % to a second receiver
//! instance sharing the same store. The handler's side-effect counter must
//! be exactly 1,000 and every duplicate must be answered 2xx — for the
//! in-memory store and for every durable backend (SQLite; Redis and
//! PostgreSQL with their features, reading `REDIS_URL` / `DATABASE_URL`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use adcp_sign::Algorithm;
use adcp_store::idempotency::IdempotencyStore;
use adcp_verify::replay::ReplayStore;
use adcp_webhook::envelope::{McpWebhook, TaskStatus};
use adcp_webhook::receiver::{outcome, Receiver};
use adcp_webhook::sender::{DeliveryOutcome, Destination};
use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const EVENTS: usize = 1_000;
const CONCURRENCY: usize = 8;

/// One receiver instance's view of the shared backend.
struct Instance {
    replay: Arc<dyn ReplayStore>,
    idempotency: Arc<dyn IdempotencyStore>,
}

async fn run(first: Instance, second: Instance) {
    let (signer, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-e2e-2026");
    let effects = Arc::new(common::Effects::default());
    let build = |i: Instance| {
        Receiver::builder(keys_for(&jwks), i.replay, i.idempotency)
            .config(http_config())
            .build()
            .unwrap()
    };
    let (receiver_a, receiver_b) = (build(first), build(second));
    let addr_a = serve(receiver_a.clone(), Arc::clone(&effects)).await;
    let addr_b = serve(receiver_b.clone(), Arc::clone(&effects)).await;
    let sender = loopback_sender(signer, fast_retries());

    let duplicates_acknowledged = Arc::new(AtomicUsize::new(0));
    let semaphore = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..EVENTS {
        let permit = Arc::clone(&semaphore).acquire_owned().await.unwrap();
        let sender = sender.clone();
        let acked = Arc::clone(&duplicates_acknowledged);
        tasks.spawn(async move {
            let _permit = permit;
            let op = format!("op_{i:04}");
            let event = McpWebhook::new(
                format!("task_{i:04}"),
                "create_media_buy",
                TaskStatus::Completed,
                "2026-04-18T12:00:00Z",
            )
            .operation_id(op.as_str())
            .context(serde_json::json!({"trace_id": format!("trace-{i}")}))
            .result(serde_json::json!({"media_buy_id": format!("mb_{i}"), "n": i}))
            .into_event()
            .unwrap();
            let to_a = Destination::new(url(addr_a, &format!("/webhooks/{op}"))).with_operation_id(op.as_str());
            let report = sender.deliver(&to_a, &event).await;
            assert_eq!(
                report.outcome,
                DeliveryOutcome::Delivered { status: 200 },
                "event {i}: {report:?}"
            );
            let mut resend = Vec::new();
            if i % 10 == 0 {
                resend.push(to_a.clone());
            }
            if i % 20 == 1 {
                resend.push(Destination::new(url(addr_b, &format!("/webhooks/{op}"))).with_operation_id(op.as_str()));
            }
            for destination in resend {
                // A fresh signature (new nonce) over the same bytes: it
                // passes the replay cache and must be caught by the
                // idempotency keyspace, with a 2xx.
                let again = sender.deliver(&destination, &event).await;
                assert_eq!(again.attempts.len(), 1, "event {i}: {again:?}");
                assert!(
                    matches!(again.outcome, DeliveryOutcome::Delivered { status } if (200..300).contains(&status)),
                    "duplicate of event {i} not acknowledged: {again:?}"
                );
                acked.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.unwrap();
    }

    assert_eq!(effects.count(), EVENTS, "handler side effects");
    let keys = effects.keys.lock().unwrap();
    assert_eq!(keys.len(), EVENTS);
    assert!(keys.values().all(|n| *n == 1));
    let expected_duplicates = EVENTS / 10 + EVENTS / 20;
    assert_eq!(duplicates_acknowledged.load(Ordering::SeqCst), expected_duplicates);
    let (ma, mb) = (receiver_a.metrics(), receiver_b.metrics());
    assert_eq!(ma.get(outcome::ACCEPTED), EVENTS as u64);
    assert_eq!(mb.get(outcome::ACCEPTED), 0);
    assert_eq!(ma.get(outcome::DUPLICATE), (EVENTS / 10) as u64);
    assert_eq!(mb.get(outcome::DUPLICATE), (EVENTS / 20) as u64);
    // Nothing else happened: no rejection of any kind.
    assert_eq!(ma.snapshot().len(), 2, "{:?}", ma.snapshot());
    assert_eq!(mb.snapshot().len(), 1, "{:?}", mb.snapshot());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store() {
    let replay = memory_replay();
    let idempotency = memory_idempotency();
    let a = Instance {
        replay: Arc::clone(&replay),
        idempotency: idempotency.clone(),
    };
    let b = Instance { replay, idempotency };
    run(a, b).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store() {
    use adcp_store::sqlite::{SqliteOptions, SqliteStore};
    let dir = std::env::temp_dir().join(format!("adcp-webhook-e2e-{}-{}", std::process::id(), line!()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dedup.sqlite");
    // Two connections to one database file: two receiver processes.
    let a = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    let b = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    run(
        Instance {
            replay: a.clone(),
            idempotency: a,
        },
        Instance {
            replay: b.clone(),
            idempotency: b,
        },
    )
    .await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_store() {
    use adcp_store::redis::{RedisOptions, RedisStore};
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let options = RedisOptions {
        key_prefix: format!("adcp-webhook-test:{}:{}", std::process::id(), unique()),
        ..RedisOptions::default()
    };
    let a = Arc::new(RedisStore::connect(&url, options.clone()).await.unwrap());
    let b = Arc::new(RedisStore::connect(&url, options).await.unwrap());
    run(
        Instance {
            replay: a.clone(),
            idempotency: a.clone(),
        },
        Instance {
            replay: b.clone(),
            idempotency: b,
        },
    )
    .await;
    a.delete_all().await.unwrap();
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store() {
    use adcp_store::postgres::{PostgresOptions, PostgresStore};
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_owned());
    let options = PostgresOptions {
        schema: format!("adcp_webhook_test_{}_{}", std::process::id(), unique()),
        pool_size: 4,
        ..PostgresOptions::default()
    };
    let a = Arc::new(PostgresStore::connect(&url, options.clone()).await.unwrap());
    let b = Arc::new(PostgresStore::connect(&url, options).await.unwrap());
    run(
        Instance {
            replay: a.clone(),
            idempotency: a.clone(),
        },
        Instance {
            replay: b.clone(),
            idempotency: b,
        },
    )
    .await;
    a.drop_schema().await.unwrap();
}

#[allow(dead_code)]
fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}
