//! The contract suite and fault behaviour of the Redis backend. The contract
//! reads `REDIS_URL` (default `redis://127.0.0.1:6379`), else starts a
//! private server (`adcp_test_support::redis_url`); every store gets its
//! own key prefix, whose keys are deleted afterwards. The fault test starts
//! its own `redis-server` on a free port.

use adcp_store::testing as contract;
use adcp_test_support::redis_server;

use crate::fixtures::{claim_when_back, claimed, event, redis_store, redis_url, unique_name, SELLER, SELLER_NONCE};
use adcp_store::{ClaimOutcome, ConfigError, Fingerprint, IdempotencyConfig, IdempotencyError, IdempotencyStore};
use adcp_store::{RedisOptions, RedisStore};
use adcp_verify::{CapKey, InsertOutcome, ReplayKey, ReplayLimits, ReplayStore};
use async_trait::async_trait;
use redis_server::{free_port, temp_dir, Server};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Each store under a key prefix of its own, whose keys are deleted
/// afterwards.
struct Redis;

#[async_trait]
impl contract::Tier for Redis {
    type Store = RedisStore;

    async fn open(replay_limits: ReplayLimits, idempotency: IdempotencyConfig) -> RedisStore {
        redis_store(&redis_url(), replay_limits, idempotency).await
    }

    async fn remove(store: &RedisStore) {
        store.delete_all().await.unwrap();
    }
}

fn unique_prefix() -> String {
    unique_name("adcp-test", ':')
}

contract::contract_tests!(contract::Shared<Redis>);

const NOW: i64 = contract::NOW;
const FP: Fingerprint<'static> = Fingerprint::from_array(&[0x33; 32]);

#[tokio::test]
async fn refuses_short_windows_and_bad_prefixes() {
    let short = RedisOptions {
        idempotency: IdempotencyConfig {
            window_secs: 3_600,
            ..IdempotencyConfig::default()
        },
        ..RedisOptions::default()
    };
    assert!(matches!(
        RedisStore::connect(&redis_url(), short).await.unwrap_err(),
        ConfigError::WindowTooShort { window_secs: 3_600 }
    ));
    let braces = RedisOptions {
        key_prefix: "a{b}".to_owned(),
        ..RedisOptions::default()
    };
    assert!(RedisStore::connect(&redis_url(), braces).await.is_err());
}

#[tokio::test]
async fn entries_carry_a_ttl_and_counts_ignore_expired_members() {
    let prefix = unique_prefix();
    let store = RedisStore::connect(
        &redis_url(),
        RedisOptions {
            key_prefix: prefix.clone(),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap();
    let nonce = ReplayKey {
        agent: None,
        keyid: "k{1}",
        nonce: b"n",
        scope: None,
    };
    assert_eq!(
        store.insert(nonce, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    let ClaimOutcome::Claimed(claim) = store.claim(event("whk_ttl"), FP, NOW).await.unwrap() else {
        panic!()
    };
    store
        .complete_with_notification(event("whk_ttl"), claim.token, Some("ntf_ttl"), NOW)
        .await
        .unwrap();
    let client = redis::Client::open(redis_url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(keys.len(), 7, "{keys:?}");
    for key in &keys {
        let ttl: i64 = redis::cmd("TTL").arg(key).query_async(&mut con).await.unwrap();
        if key.ends_with(":replay:shards") {
            // The one persistent key: the shard count of the prefix.
            assert_eq!(ttl, -1, "{key}");
            continue;
        }
        assert!(ttl > 0, "{key} has no TTL ({ttl})");
        if key.contains(":replay:") {
            assert!(ttl <= 360 + 60 + 1, "{key}: {ttl}");
        }
    }
    // Hash tags keep each shard's and each sender's keys in one slot.
    assert!(keys.iter().any(|k| k.contains(":replay:{r0}:6b7b317d:n:")), "{keys:?}");
    assert!(keys.iter().any(|k| k.contains(":idem:{s")), "{keys:?}");
    // The notification record sits in its sender's slot (hex "ntf_ttl").
    let sender_tag = keys.iter().find(|k| k.ends_with(":z") && k.contains(":idem:")).unwrap();
    let note = sender_tag.replace(":z", ":n:6e74665f74746c");
    assert!(keys.contains(&note), "{note} not in {keys:?}");
    // It counts toward nothing.
    assert_eq!(store.sender_len(SELLER, NOW).await.unwrap(), 1);
    assert_eq!(store.sender_len(SELLER, NOW + contract::DAY + 1).await.unwrap(), 0);
    assert!(store.delete_all().await.unwrap() >= 5);
}

#[tokio::test]
async fn an_unreachable_server_fails_closed() {
    let err = RedisStore::connect(
        "redis://127.0.0.1:1",
        RedisOptions {
            op_timeout: Duration::from_secs(2),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("redis"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_an_evicting_server_unless_told_to_skip_the_check() {
    let server = Server::start(free_port(), temp_dir("evict"), "allkeys-lru");
    let err = RedisStore::connect(&server.url(), RedisOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("noeviction"), "{err}");
    let skip = RedisOptions {
        check_eviction_policy: false,
        ..RedisOptions::default()
    };
    RedisStore::connect(&server.url(), skip).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_fails_closed_and_aof_keeps_claims() {
    let mut server = Server::start(free_port(), temp_dir("fault"), "noeviction");
    let options = RedisOptions {
        op_timeout: Duration::from_millis(800),
        ..RedisOptions::default()
    };
    let store = RedisStore::connect(&server.url(), options).await.unwrap();
    let done = event("whk_done");
    let claim = claimed(&store, done, FP, NOW).await;
    store.complete(done, claim.token, NOW + 1).await.unwrap();
    let held = event("whk_held");
    let held_claim = claimed(&store, held, FP, NOW).await;
    let nonce = SELLER_NONCE;
    assert_eq!(
        store.insert(nonce, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );

    // SIGKILL mid-run: no graceful shutdown, only the AOF survives.
    server.kill();
    let started = Instant::now();
    let fresh = event("whk_new");
    assert!(matches!(
        store.claim(fresh, FP, NOW + 2).await,
        Err(IdempotencyError::Unavailable(_))
    ));
    assert!(matches!(
        store.claim(done, FP, NOW + 2).await,
        Err(IdempotencyError::Unavailable(_))
    ));
    assert!(store
        .complete(held, held_claim.token, NOW + 2)
        .await
        .unwrap_err()
        .is_retryable());
    let other = ReplayKey {
        nonce: b"other",
        ..nonce
    };
    assert!(store.insert(other, NOW + 360, NOW + 2).await.is_err());
    assert!(store.contains(nonce, NOW + 2).await.is_err());
    let seller = CapKey {
        agent: None,
        keyid: "seller",
    };
    assert!(store.keyid_cap_reached(seller, NOW + 2).await.is_err());
    assert!(store.lookup(done, NOW + 2).await.is_err());
    assert!(store.sender_len(SELLER, NOW + 2).await.is_err());
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    // Restart on the same AOF: every acknowledged write is back, and the
    // same store recovers by itself.
    server.spawn("noeviction");
    let outcome = claim_when_back(&store, done, FP, NOW + 3, Duration::from_secs(10)).await;
    assert_eq!(outcome, ClaimOutcome::Completed);
    assert_eq!(
        store.claim(held, FP, NOW + 3).await.unwrap(),
        ClaimOutcome::InProgress {
            lease_expires_at: held_claim.lease_expires_at
        }
    );
    assert_eq!(
        store.insert(nonce, NOW + 360, NOW + 3).await.unwrap(),
        InsertOutcome::Replayed
    );
    assert_eq!(store.lookup(fresh, NOW + 3).await.unwrap(), None);
    store.complete(held, held_claim.token, NOW + 4).await.unwrap();
    assert_eq!(store.sender_len(SELLER, NOW + 4).await.unwrap(), 2);
}

#[tokio::test]
async fn a_prefix_keeps_one_shard_count() {
    let prefix = unique_prefix();
    let options = |replay_shards| RedisOptions {
        key_prefix: prefix.clone(),
        replay_shards,
        ..RedisOptions::default()
    };
    let first = RedisStore::connect(&redis_url(), options(4)).await.unwrap();
    RedisStore::connect(&redis_url(), options(4)).await.unwrap();
    let err = RedisStore::connect(&redis_url(), options(1)).await.unwrap_err();
    assert!(err.to_string().contains("replay_shards"), "{err}");
    assert!(RedisStore::connect(&redis_url(), options(0)).await.is_err());
    assert!(
        RedisStore::connect(&redis_url(), options(RedisOptions::MAX_REPLAY_SHARDS + 1))
            .await
            .is_err()
    );
    first.delete_all().await.unwrap();
}

#[tokio::test]
async fn sharded_aggregate_cap_is_per_shard_and_never_exceeds_the_total() {
    // 4 shards, aggregate cap 40: each shard holds at most 10 entries.
    let store = RedisStore::connect(
        &redis_url(),
        RedisOptions {
            key_prefix: unique_prefix(),
            replay_shards: 4,
            replay_limits: ReplayLimits::new(1_000, 40),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap();
    let mut inserted = 0;
    let mut refused_keyids = 0;
    for k in 0..64 {
        let keyid = format!("seller-{k}");
        let mut refused = false;
        for n in 0u8..4 {
            match store
                .insert(
                    ReplayKey {
                        agent: None,
                        keyid: &keyid,
                        nonce: &[n],
                        scope: None,
                    },
                    NOW + 360,
                    NOW,
                )
                .await
                .unwrap()
            {
                InsertOutcome::Inserted => inserted += 1,
                InsertOutcome::AggregateCapReached => refused = true,
                other => panic!("unexpected {other:?}"),
            }
        }
        refused_keyids += usize::from(refused);
    }
    // 64 keyids × 4 nonces offered, 4 shards × 10 admitted: every shard
    // filled up (64 keyids reach all 4 shards), none overflowed.
    assert_eq!(inserted, 40);
    assert!(refused_keyids > 0);
    // Expiry frees every shard again.
    assert_eq!(
        store
            .insert(
                ReplayKey {
                    agent: None,
                    keyid: "seller-0",
                    nonce: b"later",
                    scope: None
                },
                NOW + 800,
                NOW + 361
            )
            .await
            .unwrap(),
        InsertOutcome::Inserted
    );
    store.delete_all().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_fails_closed_under_load_and_the_store_recovers_by_itself() {
    use std::sync::atomic::AtomicBool;
    let mut server = Server::start(free_port(), temp_dir("load"), "noeviction");
    let store = Arc::new(
        RedisStore::connect(
            &server.url(),
            RedisOptions {
                op_timeout: Duration::from_millis(500),
                ..RedisOptions::default()
            },
        )
        .await
        .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    // A receiver's traffic: fresh nonces and fresh idempotency keys, one
    // after the other, through the whole outage. Every answer must be the
    // right one (Inserted / Claimed for fresh keys) or a retryable error.
    let (oks, fails) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = {
        let store = Arc::clone(&store);
        let stop = Arc::clone(&stop);
        let (oks, fails) = (Arc::clone(&oks), Arc::clone(&fails));
        tokio::spawn(async move {
            let mut log = Vec::new(); // (ok, acknowledged key)
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let nonce = i.to_be_bytes();
                let replay = store
                    .insert(
                        ReplayKey {
                            agent: None,
                            keyid: "seller",
                            nonce: &nonce,
                            scope: None,
                        },
                        NOW + 360,
                        NOW,
                    )
                    .await;
                let k = format!("whk_load_{i}");
                let claim = store.claim(event(&k), FP, NOW).await;
                let ok = match (&replay, &claim) {
                    (Ok(InsertOutcome::Inserted), Ok(ClaimOutcome::Claimed(_))) => {
                        log.push((true, Some(k)));
                        true
                    }
                    (Ok(InsertOutcome::Inserted), Err(e)) | (Err(_), Err(e)) => {
                        assert!(e.is_retryable(), "{e}");
                        log.push((false, None));
                        false
                    }
                    (Err(_), Ok(ClaimOutcome::Claimed(_))) => {
                        log.push((false, Some(k)));
                        false
                    }
                    other => panic!("a fresh key was not answered as fresh: {other:?}"),
                };
                if ok {
                    oks.fetch_add(1, Ordering::SeqCst);
                } else {
                    fails.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            log
        })
    };
    // Waits (up to 10 s) until `counter` exceeds `above`.
    async fn past(counter: &AtomicUsize, above: usize, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while counter.load(Ordering::SeqCst) <= above {
            assert!(Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    past(&oks, 2, "the load did not run before the outage").await;
    server.kill();
    past(&fails, 0, "the load did not see the outage").await;
    // While the server is down, batched claims fail closed as well.
    let batch = [adcp_store::ClaimRequest {
        key: event("whk_batch"),
        fingerprint: FP,
    }; 3];
    for outcome in store.claim_many(&batch, NOW).await {
        assert!(outcome.unwrap_err().is_retryable());
    }
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    server.spawn("noeviction");
    // No new store, no reconnect call: the same object answers again.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ok = store.claim_many(&batch, NOW + 1).await.into_iter().all(|o| o.is_ok());
        if ok {
            break;
        }
        assert!(Instant::now() < deadline, "the store did not recover");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    past(&oks, oks.load(Ordering::SeqCst), "the load did not recover").await;
    stop.store(true, Ordering::Relaxed);
    let log = load.await.unwrap();
    let first_failure = log.iter().position(|(ok, _)| !ok).expect("the outage was seen");
    let recovered = log[first_failure..].iter().position(|(ok, _)| *ok);
    assert!(recovered.is_some(), "the load never succeeded again after the outage");
    assert!(first_failure > 0, "the load ran before the outage");
    // Every claim acknowledged to the load (before or after the outage) is
    // still held: AOF with appendfsync always.
    for (_, k) in &log {
        if let Some(k) = k {
            assert!(
                matches!(
                    store.claim(event(k), FP, NOW + 2).await.unwrap(),
                    ClaimOutcome::InProgress { .. }
                ),
                "{k}"
            );
        }
    }
}
