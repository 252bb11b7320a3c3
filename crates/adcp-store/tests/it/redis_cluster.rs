//! The Redis backend on a Redis Cluster node (a test-owned, single-node
//! cluster owning all 16,384 slots, one per test process). Cluster mode
//! refuses any script whose keys span slots (`CROSSSLOT`), so the whole
//! contract suite passing here shows that every script touches one slot;
//! `CLUSTER KEYSLOT` confirms the layout key by key. Each store gets its
//! own key prefix, whose keys are deleted afterwards (a node per case
//! would cost the two seconds a node takes to turn writable, per case).

use adcp_store::testing as contract;

use crate::fixtures::unique_name;
use adcp_store::{ClaimOutcome, Fingerprint, IdempotencyConfig, IdempotencyStore, SenderKey};
use adcp_store::{RedisOptions, RedisStore};
use adcp_test_support::redis_server::private_cluster_node_url;
use adcp_verify::{InsertOutcome, ReplayKey, ReplayLimits, ReplayStore};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet};

/// Each store under a key prefix of its own on the process's cluster node.
struct ClusterNode;

#[async_trait]
impl contract::Tier for ClusterNode {
    type Store = RedisStore;

    async fn open(replay_limits: ReplayLimits, idempotency: IdempotencyConfig) -> RedisStore {
        open(RedisOptions {
            replay_limits,
            idempotency,
            ..RedisOptions::default()
        })
        .await
    }

    async fn remove(store: &RedisStore) {
        store.delete_all().await.unwrap();
    }
}

/// A store on the node under a fresh key prefix (`options.key_prefix` is
/// replaced).
async fn open(options: RedisOptions) -> RedisStore {
    open_at(&unique_name("adcp-test", ':'), options).await
}

async fn open_at(prefix: &str, options: RedisOptions) -> RedisStore {
    let url = tokio::task::spawn_blocking(private_cluster_node_url).await.unwrap();
    let options = RedisOptions {
        key_prefix: prefix.to_owned(),
        ..options
    };
    RedisStore::connect(&url, options).await.unwrap()
}

contract::contract_tests!(contract::Shared<ClusterNode>);

const NOW: i64 = contract::NOW;

async fn connection() -> redis::aio::MultiplexedConnection {
    let url = tokio::task::spawn_blocking(private_cluster_node_url).await.unwrap();
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The harness can fail: a script over two slots is refused by this node.
#[tokio::test]
async fn the_node_refuses_scripts_across_slots() {
    let mut con = connection().await;
    let err = redis::cmd("EVAL")
        .arg("return redis.call('SET', KEYS[1], 1)")
        .arg(2)
        .arg("{a}x")
        .arg("{b}x")
        .query_async::<redis::Value>(&mut con)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("same slot"), "{err}");
}

/// Every key the store writes, grouped by the slot the server computes
/// (`CLUSTER KEYSLOT`): one slot per shard and one per sender.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_puts_each_shard_and_each_sender_in_one_slot() {
    let prefix = unique_name("adcp-test", ':');
    let store = open_at(
        &prefix,
        RedisOptions {
            replay_shards: 8,
            ..RedisOptions::default()
        },
    )
    .await;
    let fp = Fingerprint::from_array(&[1; 32]);
    for i in 0..40 {
        let keyid = format!("seller-{i}");
        let sender = format!("https://seller-{}.example/mcp", i % 5);
        for n in 0u8..3 {
            assert_eq!(
                store
                    .insert(
                        ReplayKey {
                            agent: None,
                            keyid: &keyid,
                            nonce: &[n],
                            scope: (n == 2).then_some("https://buyer.example/hook"),
                        },
                        NOW + 360,
                        NOW
                    )
                    .await
                    .unwrap(),
                InsertOutcome::Inserted
            );
            let k = format!("whk_{i}_{n}");
            let event = SenderKey {
                sender: &sender,
                idempotency_key: &k,
            };
            let ClaimOutcome::Claimed(claim) = store.claim(event, fp, NOW).await.unwrap() else {
                panic!()
            };
            store.complete(event, claim.token, NOW).await.unwrap();
        }
    }
    let mut con = connection().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut con)
        .await
        .unwrap();
    let mut by_tag: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
    for key in &keys {
        if key == &format!("{prefix}:replay:shards") {
            continue;
        }
        let slot: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query_async(&mut con)
            .await
            .unwrap();
        let tag = key.split(['{', '}']).nth(1).unwrap().to_owned();
        by_tag.entry(tag).or_default().insert(slot);
    }
    // 8 replay shards (40 keyids reach all of them) and 5 senders.
    let replay_tags = by_tag.keys().filter(|t| t.starts_with('r')).count();
    let sender_tags = by_tag.keys().filter(|t| t.starts_with('s')).count();
    assert_eq!((replay_tags, sender_tags), (8, 5), "{by_tag:?}");
    for (tag, slots) in &by_tag {
        assert_eq!(slots.len(), 1, "tag {tag} spans slots {slots:?}");
    }
    let distinct: BTreeSet<i64> = by_tag.values().flatten().copied().collect();
    assert_eq!(distinct.len(), 13, "every tag is its own slot");
    store.delete_all().await.unwrap();
}
