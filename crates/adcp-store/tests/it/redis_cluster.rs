//! The Redis backend on a Redis Cluster node (a test-owned, single-node
//! cluster owning all 16,384 slots). Cluster mode refuses any script whose
//! keys span slots (`CROSSSLOT`), so the whole contract suite passing here
//! shows that every script touches one slot; `CLUSTER KEYSLOT` confirms the
//! layout key by key. Each case gets its own server.

use adcp_store::testing as contract;
use adcp_test_support::redis_server;

use adcp_store::{ClaimOutcome, Fingerprint, IdempotencyConfig, IdempotencyStore, SenderKey};
use adcp_store::{RedisOptions, RedisStore};
use adcp_verify::{InsertOutcome, ReplayKey, ReplayLimits, ReplayStore};
use async_trait::async_trait;
use redis_server::{free_port, temp_dir, Server};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

struct ClusterNode {
    server: Server,
}

impl ClusterNode {
    async fn open(&self, options: RedisOptions) -> Arc<RedisStore> {
        Arc::new(RedisStore::connect(&self.server.url(), options).await.unwrap())
    }
}

#[async_trait]
impl contract::Backend for ClusterNode {
    type Replay = RedisStore;
    type Idem = RedisStore;

    async fn new() -> Self {
        let server = tokio::task::spawn_blocking(|| Server::start_cluster_node(free_port(), temp_dir("cluster")))
            .await
            .unwrap();
        ClusterNode { server }
    }

    async fn replay(&self, limits: ReplayLimits) -> Arc<RedisStore> {
        self.open(RedisOptions {
            replay_limits: limits,
            ..RedisOptions::default()
        })
        .await
    }

    async fn idem(&self, config: IdempotencyConfig) -> Arc<RedisStore> {
        self.open(RedisOptions {
            idempotency: config,
            ..RedisOptions::default()
        })
        .await
    }

    async fn cleanup(&self) {}
}

contract::contract_tests!(ClusterNode);

const NOW: i64 = contract::NOW;

async fn connection(server: &Server) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The harness can fail: a script over two slots is refused by this node.
#[tokio::test]
async fn the_node_refuses_scripts_across_slots() {
    let node = ClusterNode::new_for_test().await;
    let mut con = connection(&node.server).await;
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

impl ClusterNode {
    async fn new_for_test() -> Self {
        <Self as contract::Backend>::new().await
    }
}

/// Every key the store writes, grouped by the slot the server computes
/// (`CLUSTER KEYSLOT`): one slot per shard and one per sender.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_puts_each_shard_and_each_sender_in_one_slot() {
    let node = ClusterNode::new_for_test().await;
    let store = node
        .open(RedisOptions {
            replay_shards: 8,
            ..RedisOptions::default()
        })
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
    let mut con = connection(&node.server).await;
    let keys: Vec<String> = redis::cmd("KEYS").arg("adcp:*").query_async(&mut con).await.unwrap();
    let mut by_tag: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
    for key in &keys {
        if key == "adcp:replay:shards" {
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
}
