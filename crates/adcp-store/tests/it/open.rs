//! `adcp_store::open`: one URL opens each compiled-in backend, and names the
//! missing feature otherwise. Redis and PostgreSQL read `REDIS_URL` /
//! `DATABASE_URL` through `adcp_test_support` (defaults, and a private
//! server when they do not answer, as in the other backend tests).

// Built without any backend, only the parsing and feature tests remain.
#![cfg_attr(
    not(any(feature = "sqlite", feature = "redis", feature = "postgres")),
    allow(dead_code, unused_imports)
)]

use adcp_store::{open, Store, StoreOptions, StoreUrl};
use adcp_store::{ClaimOutcome, ConfigError, Fingerprint, IdempotencyConfig, IdempotencyStore, SenderKey};
use adcp_verify::{InsertOutcome, ReplayKey, ReplayLimits, ReplayStore};
use std::sync::Arc;

const NOW: i64 = 1_776_520_800;
const FP: Fingerprint<'static> = Fingerprint::from_array(&[0x44; 32]);
const EVENT: SenderKey<'static> = SenderKey {
    sender: "https://seller.example/mcp",
    idempotency_key: "whk_open",
};
const NONCE: ReplayKey<'static> = ReplayKey {
    agent: None,
    keyid: "seller-2026",
    nonce: b"0123456789abcdef",
    scope: None,
};

fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("adcp_open_{tag}_{}_{nanos}", std::process::id())
}

/// The opened store is usable wherever a `ReplayStore` or an
/// `IdempotencyStore` is expected (a verifier, a receiver).
async fn exercise(store: Arc<dyn Store>) {
    async fn as_replay(store: impl ReplayStore) -> InsertOutcome {
        store.insert(NONCE, NOW + 360, NOW).await.unwrap()
    }
    assert_eq!(as_replay(Arc::clone(&store)).await, InsertOutcome::Inserted);
    assert_eq!(as_replay(Arc::clone(&store)).await, InsertOutcome::Replayed);
    let ClaimOutcome::Claimed(claim) = store.claim(EVENT, FP, NOW).await.unwrap() else {
        panic!("fresh claim expected")
    };
    store.complete(EVENT, claim.token, NOW + 1).await.unwrap();
    assert_eq!(store.config().per_sender_cap, 500);
}

/// A second store opened from the same URL sees the first one's writes.
async fn reopen_sees_writes(url: &StoreUrl, options: StoreOptions) {
    let again = open(url, options).await.unwrap();
    assert_eq!(again.claim(EVENT, FP, NOW + 2).await.unwrap(), ClaimOutcome::Completed);
    assert!(again.contains(NONCE, NOW + 2).await.unwrap());
}

fn options(namespace: &str) -> StoreOptions {
    StoreOptions {
        replay_limits: ReplayLimits::new(10, 100),
        idempotency: IdempotencyConfig::new(86_400, 30, 500).unwrap(),
        namespace: namespace.to_owned(),
        ..StoreOptions::default()
    }
}

#[tokio::test]
async fn invalid_settings_are_refused_before_any_backend_is_touched() {
    let short = StoreOptions {
        idempotency: IdempotencyConfig {
            window_secs: 3_600,
            ..IdempotencyConfig::default()
        },
        ..StoreOptions::default()
    };
    // Nothing listens there, and nothing is created: the window is refused first.
    for url in [
        "redis://127.0.0.1:1",
        "postgres://root@127.0.0.1:1/x",
        "sqlite:/nonexistent/dir/x.sqlite",
        "memory:",
    ] {
        let url: StoreUrl = url.parse().unwrap();
        assert!(matches!(
            open(&url, short.clone()).await.map(|_| ()),
            Err(ConfigError::WindowTooShort { window_secs: 3_600 })
        ));
    }
    assert!("sqlite:".parse::<StoreUrl>().is_err());
    assert_eq!("memory:".parse::<StoreUrl>().unwrap(), StoreUrl::Memory);
    assert!("memoryx".parse::<StoreUrl>().is_err());
    assert!("".parse::<StoreUrl>().is_err());
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn opens_sqlite_by_url() {
    let dir = std::env::temp_dir().join(unique("sqlite"));
    std::fs::create_dir_all(&dir).unwrap();
    let url: StoreUrl = format!("sqlite:{}", dir.join("dedup.sqlite").display())
        .parse()
        .unwrap();
    exercise(open(&url, options("ignored")).await.unwrap()).await;
    reopen_sees_writes(&url, options("ignored")).await;
    // With its purge: expired rows go, live ones stay.
    let opened = adcp_store::open_with_purge(&url, options("ignored")).await.unwrap();
    let purge = opened.purge.expect("SQLite needs purging");
    assert!(purge.purge_expired(NOW + 10 * 86_400).await.unwrap() > 0);
    assert_eq!(purge.purge_expired(NOW + 10 * 86_400).await.unwrap(), 0);
    // A path that cannot be created fails at open, not later.
    let bad: StoreUrl = format!("sqlite:{}", dir.join("missing").join("x.sqlite").display())
        .parse()
        .unwrap();
    assert!(matches!(
        open(&bad, StoreOptions::default()).await.map(|_| ()),
        Err(ConfigError::Backend(_))
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn opens_memory_by_url() {
    let url: StoreUrl = "memory:".parse().unwrap();
    exercise(open(&url, options("ignored")).await.unwrap()).await;
    // Not durable, by design: a second open starts empty.
    let again = open(&url, options("ignored")).await.unwrap();
    assert!(!again.contains(NONCE, NOW + 2).await.unwrap());
    assert!(matches!(
        again.claim(EVENT, FP, NOW + 2).await.unwrap(),
        ClaimOutcome::Claimed(_)
    ));
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn opens_redis_by_url() {
    use adcp_store::{RedisOptions, RedisStore};
    let raw = adcp_test_support::redis_url();
    let url: StoreUrl = raw.parse().unwrap();
    let prefix = unique("redis");
    exercise(open(&url, options(&prefix)).await.unwrap()).await;
    reopen_sees_writes(&url, options(&prefix)).await;
    // Redis expires its keys itself: no purge.
    let opened = adcp_store::open_with_purge(&url, options(&prefix)).await.unwrap();
    assert!(opened.purge.is_none());
    // The namespace is the key prefix: delete what the test wrote.
    let cleanup = RedisStore::connect(
        &raw,
        RedisOptions {
            key_prefix: prefix,
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap();
    assert!(cleanup.delete_all().await.unwrap() >= 5);
    let down: StoreUrl = "redis://127.0.0.1:1".parse().unwrap();
    let short = StoreOptions {
        op_timeout: std::time::Duration::from_secs(1),
        ..StoreOptions::default()
    };
    assert!(matches!(
        open(&down, short).await.map(|_| ()),
        Err(ConfigError::Backend(_))
    ));
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn opens_postgres_by_url() {
    use adcp_store::{PostgresOptions, PostgresStore};
    let raw = adcp_test_support::database_url();
    let url: StoreUrl = raw.parse().unwrap();
    let schema = unique("pg");
    exercise(open(&url, options(&schema)).await.unwrap()).await;
    reopen_sees_writes(&url, options(&schema)).await;
    // With its purge: expired rows go, live ones stay.
    let opened = adcp_store::open_with_purge(&url, options(&schema)).await.unwrap();
    let purge = opened.purge.expect("PostgreSQL needs purging");
    assert!(purge.purge_expired(NOW + 10 * 86_400).await.unwrap() > 0);
    assert_eq!(purge.purge_expired(NOW + 10 * 86_400).await.unwrap(), 0);
    // The namespace is the schema: drop it.
    PostgresStore::connect(
        &raw,
        PostgresOptions {
            schema,
            ..PostgresOptions::default()
        },
    )
    .await
    .unwrap()
    .drop_schema()
    .await
    .unwrap();
    let down: StoreUrl = "postgresql://root@127.0.0.1:1/test".parse().unwrap();
    let short = StoreOptions {
        op_timeout: std::time::Duration::from_secs(1),
        ..StoreOptions::default()
    };
    assert!(matches!(
        open(&down, short).await.map(|_| ()),
        Err(ConfigError::Backend(_))
    ));
}

/// Built without a backend's feature, its URL still parses and `open`
/// names the feature to enable.
#[tokio::test]
async fn a_backend_not_compiled_in_is_named() {
    let cases = [
        ("sqlite:/tmp/x.sqlite", "sqlite", cfg!(feature = "sqlite")),
        ("redis://127.0.0.1:1", "redis", cfg!(feature = "redis")),
        ("postgres://root@127.0.0.1:1/x", "postgres", cfg!(feature = "postgres")),
    ];
    for (raw, feature, compiled) in cases {
        let url: StoreUrl = raw.parse().unwrap();
        assert_eq!(url.feature(), feature);
        if compiled {
            continue;
        }
        let err = open(&url, StoreOptions::default()).await.map(|_| ()).unwrap_err();
        assert_eq!(err, ConfigError::FeatureDisabled { backend: feature });
        assert!(err.to_string().contains(&format!("`{feature}` feature")), "{err}");
    }
}
