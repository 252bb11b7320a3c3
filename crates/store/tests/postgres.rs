//! The contract suite and durability of the PostgreSQL backend. Reads
//! `DATABASE_URL` (default `postgres://root@127.0.0.1:5432/test`); every store
//! gets its own schema, dropped afterwards.

#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod contract;

use adcp_store::idempotency::{ClaimOutcome, Fingerprint, IdempotencyConfig, IdempotencyStore, SenderKey};
use adcp_store::postgres::{PostgresOptions, PostgresStore};
use adcp_verify::replay::{ReplayKey, ReplayLimits, ReplayStore};
use async_trait::async_trait;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_owned())
}

fn unique_schema() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "adcp_test_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

struct Postgres {
    stores: Mutex<Vec<Arc<PostgresStore>>>,
}

impl Postgres {
    async fn open(&self, options: PostgresOptions) -> Arc<PostgresStore> {
        let store = Arc::new(PostgresStore::connect(&url(), options).await.unwrap());
        self.stores.lock().unwrap().push(Arc::clone(&store));
        store
    }
}

#[async_trait]
impl contract::Backend for Postgres {
    type Replay = PostgresStore;
    type Idem = PostgresStore;

    async fn new() -> Self {
        Postgres {
            stores: Mutex::new(Vec::new()),
        }
    }

    async fn replay(&self, limits: ReplayLimits) -> Arc<PostgresStore> {
        self.open(PostgresOptions {
            replay_limits: limits,
            schema: unique_schema(),
            ..PostgresOptions::default()
        })
        .await
    }

    async fn idem(&self, config: IdempotencyConfig) -> Arc<PostgresStore> {
        self.open(PostgresOptions {
            idempotency: config,
            schema: unique_schema(),
            ..PostgresOptions::default()
        })
        .await
    }

    async fn cleanup(&self) {
        let stores = std::mem::take(&mut *self.stores.lock().unwrap());
        for store in stores {
            store.drop_schema().await.unwrap();
        }
    }
}

contract_tests!(Postgres);

const NOW: i64 = contract::NOW;
const FP: Fingerprint<'static> = Fingerprint(&[0x22; 32]);

#[tokio::test]
async fn claims_survive_a_new_pool_and_schema_is_reused() {
    let schema = unique_schema();
    let options = PostgresOptions {
        schema: schema.clone(),
        ..PostgresOptions::default()
    };
    let first = PostgresStore::connect(&url(), options.clone()).await.unwrap();
    let e = SenderKey {
        sender: "https://seller.example/mcp",
        idempotency_key: "whk_pool",
    };
    let ClaimOutcome::Claimed(claim) = first.claim(e, FP, NOW).await.unwrap() else {
        panic!()
    };
    first.complete(e, claim.token, NOW).await.unwrap();
    let nonce = ReplayKey {
        keyid: "k",
        nonce: b"n",
        scope: None,
    };
    first.insert(nonce, NOW + 360, NOW).await.unwrap();
    drop(first);
    // A new pool (migrations run again, idempotently) sees every acknowledged write.
    let second = PostgresStore::connect(&url(), options).await.unwrap();
    assert_eq!(second.claim(e, FP, NOW + 5).await.unwrap(), ClaimOutcome::Completed);
    assert!(second.contains(nonce, NOW + 5).await.unwrap());
    assert_eq!(second.purge_expired(NOW + 2 * contract::DAY).await.unwrap(), 2);
    second.drop_schema().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_server_fails_closed_with_a_retryable_error() {
    // Nothing listens on port 1.
    let err = PostgresStore::connect(
        "postgres://root@127.0.0.1:1/test",
        PostgresOptions {
            op_timeout: Duration::from_secs(2),
            ..PostgresOptions::default()
        },
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("postgres"), "{err}");
}

#[tokio::test]
async fn refuses_bad_schema_names_and_short_windows() {
    let bad = PostgresOptions {
        schema: "x; DROP TABLE y".to_owned(),
        ..PostgresOptions::default()
    };
    assert!(PostgresStore::connect(&url(), bad).await.is_err());
    let short = PostgresOptions {
        idempotency: IdempotencyConfig {
            window_secs: 60,
            ..IdempotencyConfig::default()
        },
        ..PostgresOptions::default()
    };
    assert!(PostgresStore::connect(&url(), short).await.is_err());
}
