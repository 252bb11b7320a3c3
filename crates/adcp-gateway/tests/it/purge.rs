//! The periodic purge of the store's expired rows: a running gateway on
//! SQLite (and PostgreSQL, with the `postgres` feature) deletes the
//! replay entries, dedup records and notification records that expired
//! long ago, written through the store API, and keeps the live ones; a
//! gateway built from its parts purges the store it is given.

use crate::support::{metrics_text, serve_loopback, Seller, TempDir, Upstream, AGENT};
use adcp_gateway::{Gateway, GatewayConfig, GatewayOptions, PurgeExpired, Store};
use adcp_sigbase::Clock;
use adcp_store::{ClaimOutcome, Fingerprint, SenderKey, StoreOptions};
use adcp_verify::{InsertOutcome, ReplayKey};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When the expired rows were written: long before any test runs.
const PAST: i64 = 1_700_000_000;
/// How often the gateways of these tests purge.
const INTERVAL: Duration = Duration::from_millis(100);
/// How long a test waits for the purge before failing.
const DEADLINE: Duration = Duration::from_secs(10);

const KEYID: &str = "purge-test-key";
const EXPIRED_NONCE: &[u8] = b"expired-nonce-0001";
const LIVE_NONCE: &[u8] = b"live-nonce-000001";

fn nonce(nonce: &[u8]) -> ReplayKey<'_> {
    ReplayKey {
        agent: None,
        keyid: KEYID,
        nonce,
        scope: None,
    }
}

fn event(idempotency_key: &str) -> SenderKey<'_> {
    SenderKey {
        sender: AGENT,
        idempotency_key,
    }
}

fn now() -> i64 {
    adcp_sigbase::SystemClock.now()
}

/// Writes, through the store API, one replay entry and one completed
/// event with its notification record at `at`.
async fn write_rows(store: &dyn Store, at: i64, replay: &[u8], key: &str, notification_id: &str) {
    assert_eq!(
        store.insert(nonce(replay), at + 360, at).await.unwrap(),
        InsertOutcome::Inserted
    );
    let ClaimOutcome::Claimed(claim) = store
        .claim(event(key), Fingerprint::from_array(&[0x5a; 32]), at)
        .await
        .unwrap()
    else {
        panic!("expected a fresh claim of {key}");
    };
    store
        .complete_with_notification(event(key), claim.token, Some(notification_id), at)
        .await
        .unwrap();
}

/// Live rows first (a write at `now` expires older rows itself), then rows
/// written at [`PAST`], long expired now; each of them is still there when
/// looked up at `PAST`.
async fn seed(store: &dyn Store) {
    write_rows(store, now(), LIVE_NONCE, "whk_live", "ntf_live").await;
    write_rows(store, PAST, EXPIRED_NONCE, "whk_expired", "ntf_expired").await;
    assert_eq!(expired_rows_left(store).await, 3, "the expired rows are in the store");
}

/// How many of the expired rows the store still holds: looked up at
/// [`PAST`], when they were live, so only a deleted row is missing.
async fn expired_rows_left(store: &dyn Store) -> usize {
    let replay = store.contains(nonce(EXPIRED_NONCE), PAST).await.unwrap();
    let record = store.lookup(event("whk_expired"), PAST).await.unwrap().is_some();
    let notification = store
        .notification_origin(AGENT, "ntf_expired", PAST)
        .await
        .unwrap()
        .is_some();
    [replay, record, notification].into_iter().filter(|held| *held).count()
}

/// Waits until the expired rows are gone, then checks that the live ones
/// are all there.
async fn expect_purged(store: &dyn Store, gateway: &Gateway) {
    let started = Instant::now();
    loop {
        let left = expired_rows_left(store).await;
        if left == 0 {
            break;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "{left} expired rows still in the store after {DEADLINE:?} (purges {}, failed {})",
            gateway.metrics().purged_count(),
            gateway.metrics().purge_failure_count()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let now = now();
    assert!(store.contains(nonce(LIVE_NONCE), now).await.unwrap(), "live nonce kept");
    assert!(
        store.lookup(event("whk_live"), now).await.unwrap().is_some(),
        "live record kept"
    );
    assert_eq!(
        store
            .notification_origin(AGENT, "ntf_live", now)
            .await
            .unwrap()
            .as_deref(),
        Some("whk_live"),
        "live notification record kept"
    );
    assert!(gateway.metrics().purged_count() >= 3, "the purged rows are counted");
    assert_eq!(gateway.metrics().purge_failure_count(), 0);
}

/// A gateway from TOML settings on `store` (namespace `namespace`),
/// purging every [`INTERVAL`]; serves it, seeds the store through a store
/// of its own on the same location, and waits for the purge.
async fn a_running_gateway_purges(store: &str, namespace: &str) {
    let dir = TempDir::new("purge");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    std::fs::write(dir.0.join("seller-jwks.json"), seller.jwks.to_string()).unwrap();
    let toml = format!(
        "listen = \"127.0.0.1:0\"\nupstream = \"{}\"\njwks = \"seller-jwks.json\"\njwks_agent = \"{AGENT}\"\nstore = \"{store}\"\nstore_namespace = \"{namespace}\"\n",
        upstream.url(),
    );
    std::fs::write(dir.0.join("gateway.toml"), toml).unwrap();
    let mut config = GatewayConfig::from_toml_file(dir.0.join("gateway.toml")).unwrap();
    config.access_log = false;
    config.purge_interval = INTERVAL;

    let options = StoreOptions {
        namespace: namespace.to_owned(),
        ..StoreOptions::default()
    };
    let seeded = adcp_store::open(config.store.url(), options).await.unwrap();
    seed(&*seeded).await;

    let gateway = Gateway::from_config(&config).await.unwrap();
    let handle = serve_loopback(&gateway).await;
    expect_purged(&*seeded, &gateway).await;
    let metrics = metrics_text(&handle.base_url()).await;
    assert!(
        metrics.contains("adcp_gateway_store_purge_failures_total 0\n"),
        "{metrics}"
    );
    assert!(!metrics.contains("adcp_gateway_store_purged_total 0\n"), "{metrics}");
    // The purge task stops with the server.
    tokio::time::timeout(Duration::from_secs(10), handle.shutdown())
        .await
        .expect("shutdown with a purge task")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_gateway_purges_expired_rows_from_sqlite() {
    let dir = TempDir::new("purge-sqlite");
    let store = format!("sqlite:{}", dir.0.join("dedup.sqlite").display());
    a_running_gateway_purges(&store, "adcp").await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_gateway_purges_expired_rows_from_postgres() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let schema = format!("gw_purge_{}_{nanos}", std::process::id());
    let url = adcp_test_support::database_url();
    a_running_gateway_purges(&url, &schema).await;
    let options = adcp_store::PostgresOptions {
        schema,
        pool_size: 1,
        ..adcp_store::PostgresOptions::default()
    };
    let store = adcp_store::PostgresStore::connect(&url, options).await.unwrap();
    store.drop_schema().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_built_from_its_parts_purges_the_store_it_is_given() {
    let store =
        Arc::new(adcp_store::MemoryStore::new(adcp_verify::ReplayLimits::webhook(), Default::default()).unwrap());
    seed(&*store).await;
    let mut options = GatewayOptions::new(url::Url::parse("http://127.0.0.1:1/events").unwrap());
    options.purge = Some(Arc::clone(&store) as Arc<dyn PurgeExpired>);
    options.purge_interval = INTERVAL;
    let gateway = Gateway::new(
        Arc::new(adcp_verify::StaticKeyResolver::new()),
        Arc::clone(&store) as Arc<dyn Store>,
        options,
    )
    .unwrap();
    let handle = serve_loopback(&gateway).await;
    expect_purged(&*store, &gateway).await;
    handle.shutdown().await.unwrap();
}
