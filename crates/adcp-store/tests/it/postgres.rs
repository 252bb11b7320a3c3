//! The contract suite and durability of the PostgreSQL backend. Reads
//! `DATABASE_URL` (default `postgres://root@127.0.0.1:5432/test`), else starts
//! a private server (`adcp_test_support::database_url`); every store gets
//! its own schema, dropped afterwards.

use crate::fixtures::{database_url, event, unique_name};
use adcp_store::testing as contract;
use adcp_store::{ClaimOutcome, Fingerprint, IdempotencyConfig, IdempotencyStore};
use adcp_store::{PostgresOptions, PostgresStore};
use adcp_verify::{ReplayKey, ReplayLimits, ReplayStore};
use async_trait::async_trait;
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

contract::contract_tests!(contract::Shared<Postgres>);

const NOW: i64 = contract::NOW;
const FP: Fingerprint<'static> = Fingerprint::from_array(&[0x22; 32]);

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
        agent: None,
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

/// The replay tables of the per-keyid schema (before agents), as an older
/// build created them, with three live entries.
fn schema_v1_replay(s: &str) -> String {
    format!(
        "CREATE SCHEMA {s};
CREATE TABLE {s}.replay (
    keyid TEXT NOT NULL, scoped BOOLEAN NOT NULL, scope TEXT NOT NULL, nonce BYTEA NOT NULL,
    expires_at BIGINT NOT NULL, PRIMARY KEY (keyid, scoped, scope, nonce));
CREATE INDEX replay_expires ON {s}.replay (expires_at);
CREATE TABLE {s}.replay_counts (keyid TEXT PRIMARY KEY, n BIGINT NOT NULL);
CREATE TABLE {s}.replay_total (id INT PRIMARY KEY CHECK (id = 0), n BIGINT NOT NULL);
INSERT INTO {s}.replay_total (id, n) VALUES (0, 0);
CREATE FUNCTION {s}.replay_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {s}.replay_counts (keyid, n) VALUES (NEW.keyid, 1)
            ON CONFLICT (keyid) DO UPDATE SET n = {s}.replay_counts.n + 1;
        UPDATE {s}.replay_total SET n = n + 1 WHERE id = 0;
    ELSE
        UPDATE {s}.replay_counts SET n = n - 1 WHERE keyid = OLD.keyid;
        UPDATE {s}.replay_total SET n = n - 1 WHERE id = 0;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER replay_count AFTER INSERT OR DELETE ON {s}.replay
    FOR EACH ROW EXECUTE FUNCTION {s}.replay_count();
INSERT INTO {s}.replay VALUES ('key-1', false, '', '\\x01', {exp});
INSERT INTO {s}.replay VALUES ('key-1', true, 'https://buyer.example/hook', '\\x02', {exp});
INSERT INTO {s}.replay VALUES ('other', false, '', '\\x01', {exp});",
        exp = NOW + 360
    )
}

#[tokio::test]
async fn a_per_keyid_schema_is_migrated_keeping_its_entries() {
    use adcp_verify::{CapKey, InsertOutcome};
    let schema = unique_schema();
    let (client, connection) = tokio_postgres::connect(&database_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.batch_execute(&schema_v1_replay(&schema)).await.unwrap();
    let options = PostgresOptions {
        schema: schema.clone(),
        replay_limits: ReplayLimits::new(2, 4),
        ..PostgresOptions::default()
    };
    // Several stores connecting at once migrate once (advisory lock).
    let stores = futures_join(&options).await;
    let store = &stores[0];
    let key = |agent, keyid, nonce| ReplayKey {
        agent,
        keyid,
        nonce,
        scope: None,
    };
    // The live entries survived and still reject replays, from any agent.
    let held = key(Some("https://seller-b.example/mcp"), "key-1", &[1][..]);
    assert!(store.contains(held, NOW).await.unwrap());
    assert_eq!(
        store.insert(held, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Replayed
    );
    // They count toward the `agent: None` partition, as they did per keyid.
    let none = CapKey {
        agent: None,
        keyid: "key-1",
    };
    assert!(store.keyid_cap_reached(none, NOW).await.unwrap());
    assert_eq!(
        store.insert(key(None, "key-1", &[3]), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    // An agent sharing the kid has its own count; the aggregate (3 migrated
    // + 1) is exact.
    let by_a = key(Some("https://seller-a.example/mcp"), "key-1", &[3]);
    assert_eq!(
        store.insert(by_a, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key(None, "new", &[1]), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::AggregateCapReached
    );
    let old = client
        .query_one(&format!("SELECT to_regclass('{schema}.replay_counts') IS NULL"), &[])
        .await
        .unwrap();
    assert!(old.get::<_, bool>(0), "the per-keyid counters are gone");
    // Expiry frees the migrated counts through the new trigger.
    assert_eq!(store.purge_expired(NOW + 361).await.unwrap(), 4);
    assert!(!store.keyid_cap_reached(none, NOW + 361).await.unwrap());
    let sums = client
        .query_one(
            &format!(
                "SELECT (SELECT COALESCE(SUM(n), 0) FROM {schema}.replay_cap_counts)::BIGINT, \
                 (SELECT n FROM {schema}.replay_total)"
            ),
            &[],
        )
        .await
        .unwrap();
    assert_eq!((sums.get::<_, i64>(0), sums.get::<_, i64>(1)), (0, 0));
    store.drop_schema().await.unwrap();
}

#[tokio::test]
async fn a_schema_without_notification_records_gains_them_at_connect() {
    let schema = unique_schema();
    let options = PostgresOptions {
        schema: schema.clone(),
        ..PostgresOptions::default()
    };
    let first = PostgresStore::connect(&database_url(), options.clone()).await.unwrap();
    let before = event("whk_before");
    let ClaimOutcome::Claimed(claim) = first.claim(before, FP, NOW).await.unwrap() else {
        panic!()
    };
    first.complete(before, claim.token, NOW).await.unwrap();
    drop(first);
    // The schema as the build before notification records left it.
    let (client, connection) = tokio_postgres::connect(&database_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP TABLE {schema}.idempotency_notifications"))
        .await
        .unwrap();
    // Several stores connecting at once add the table once (advisory lock).
    let stores = futures_join(&options).await;
    let store = &stores[0];
    assert_eq!(store.claim(before, FP, NOW + 1).await.unwrap(), ClaimOutcome::Completed);
    let after = event("whk_after");
    let ClaimOutcome::Claimed(claim) = store.claim(after, FP, NOW + 1).await.unwrap() else {
        panic!()
    };
    store
        .complete_with_notification(after, claim.token, Some("ntf_1"), NOW + 1)
        .await
        .unwrap();
    for other in &stores {
        assert_eq!(
            other
                .notification_origin(crate::fixtures::SELLER, "ntf_1", NOW + 1)
                .await
                .unwrap()
                .as_deref(),
            Some("whk_after")
        );
    }
    // Purged with the rest once expired: two dedup records, one notification.
    assert_eq!(store.purge_expired(NOW + 2 * contract::DAY).await.unwrap(), 3);
    store.drop_schema().await.unwrap();
}

/// Connects four stores with `options` at once.
async fn futures_join(options: &PostgresOptions) -> Vec<PostgresStore> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let options = options.clone();
        tasks.spawn(async move { PostgresStore::connect(&database_url(), options).await.unwrap() });
    }
    let mut stores = Vec::new();
    while let Some(store) = tasks.join_next().await {
        stores.push(store.unwrap());
    }
    stores
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
