//! The contract suite and durability of the PostgreSQL backend. Reads
//! `DATABASE_URL` (default `postgres://root@127.0.0.1:5432/test`); every store
//! gets its own schema, dropped afterwards.

#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod contract;
mod fixtures;

use adcp_store::idempotency::{ClaimOutcome, Fingerprint, IdempotencyConfig, IdempotencyStore};
use adcp_store::postgres::{PostgresOptions, PostgresStore};
use adcp_verify::replay::{ReplayKey, ReplayLimits, ReplayStore};
use async_trait::async_trait;
use fixtures::{database_url, event, unique_name};
use std::time::Duration;

/// Each store in a schema of its own, dropped afterwards.
struct Postgres;

#[async_trait]
impl contract::Tier for Postgres {
    type Store = PostgresStore;

    async fn open(replay_limits: ReplayLimits, idempotency: IdempotencyConfig) -> PostgresStore {
        let options = PostgresOptions {
            replay_limits,
            idempotency,
            schema: unique_schema(),
            ..PostgresOptions::default()
        };
        PostgresStore::connect(&database_url(), options).await.unwrap()
    }

    async fn remove(store: &PostgresStore) {
        store.drop_schema().await.unwrap();
    }
}

fn unique_schema() -> String {
    unique_name("adcp_test", '_')
}

contract_tests!(contract::Shared<Postgres>);

const NOW: i64 = contract::NOW;
const FP: Fingerprint<'static> = Fingerprint(&[0x22; 32]);

#[tokio::test]
async fn claims_survive_a_new_pool_and_schema_is_reused() {
    let schema = unique_schema();
    let options = PostgresOptions {
        schema: schema.clone(),
        ..PostgresOptions::default()
    };
    let first = PostgresStore::connect(&database_url(), options.clone()).await.unwrap();
    let e = event("whk_pool");
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
    let second = PostgresStore::connect(&database_url(), options).await.unwrap();
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
    assert!(PostgresStore::connect(&database_url(), bad).await.is_err());
    let short = PostgresOptions {
        idempotency: IdempotencyConfig {
            window_secs: 60,
            ..IdempotencyConfig::default()
        },
        ..PostgresOptions::default()
    };
    assert!(PostgresStore::connect(&database_url(), short).await.is_err());
}
