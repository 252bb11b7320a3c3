//! The Redis backend on a test-owned three-primary Redis Cluster, through a
//! `redis+cluster://` URL: the whole contract suite (each case on its own
//! key prefix), keys spread over the primaries, batched claims across
//! senders on different primaries, and clean-up across nodes.

use adcp_store::testing as contract;
use adcp_test_support::redis_server;

use crate::fixtures::redis_store;
use adcp_store::{open, StoreOptions, StoreUrl};
use adcp_store::{ClaimOutcome, ClaimRequest, Fingerprint, IdempotencyConfig, IdempotencyStore, SenderKey};
use adcp_store::{RedisOptions, RedisStore};
use adcp_verify::{InsertOutcome, ReplayKey, ReplayLimits, ReplayStore};
use async_trait::async_trait;
use redis_server::Cluster;
use std::sync::Mutex;

/// The cluster URL of the running test, read by [`OnCluster`].
static URL: Mutex<Option<String>> = Mutex::new(None);

/// Each store on the running cluster under a key prefix of its own, whose
/// keys are deleted afterwards.
struct OnCluster;

#[async_trait]
impl contract::Tier for OnCluster {
    type Store = RedisStore;

    async fn open(replay_limits: ReplayLimits, idempotency: IdempotencyConfig) -> RedisStore {
        let url = URL.lock().unwrap().clone().expect("cluster started");
        redis_store(&url, replay_limits, idempotency).await
    }

    async fn remove(store: &RedisStore) {
        store.delete_all().await.unwrap();
    }
}

contract::contract_tests!(sequential every_contract_case, contract::Shared<OnCluster>);

const NOW: i64 = contract::NOW;
const FP: Fingerprint<'static> = Fingerprint::from_array(&[7; 32]);

async fn dbsize(port_url: &str) -> u64 {
    let client = redis::Client::open(port_url).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("DBSIZE").query_async(&mut con).await.unwrap()
}

/// One test owns the cluster (started once, stopped on drop) and runs
/// every case against it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_three_primary_cluster() {
    let cluster = tokio::task::spawn_blocking(|| Cluster::start(3)).await.unwrap();
    *URL.lock().unwrap() = Some(cluster.url());

    // The one-flag configuration reaches the cluster too.
    let url: StoreUrl = cluster.url().parse().unwrap();
    let opened = open(
        &url,
        StoreOptions {
            namespace: "adcp-mn-open".to_owned(),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();

    // Replay entries over 16 shards and claims of 32 senders land on every
    // primary.
    let sharded = RedisStore::connect(
        &cluster.url(),
        RedisOptions {
            key_prefix: "adcp-mn-spread".to_owned(),
            replay_shards: 16,
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap();
    for i in 0..64u32 {
        let keyid = format!("seller-{i}");
        let nonce = ReplayKey {
            agent: None,
            keyid: &keyid,
            nonce: &i.to_be_bytes(),
            scope: None,
        };
        assert_eq!(
            sharded.insert(nonce, NOW + 360, NOW).await.unwrap(),
            InsertOutcome::Inserted
        );
        assert_eq!(
            sharded.insert(nonce, NOW + 360, NOW).await.unwrap(),
            InsertOutcome::Replayed
        );
    }
    // A batch across 32 senders (so across primaries), with a duplicate.
    let names: Vec<(String, String)> = (0..96)
        .map(|i| (format!("https://seller-{}.example/mcp", i % 32), format!("whk_{i}")))
        .collect();
    let mut requests: Vec<ClaimRequest<'_>> = names
        .iter()
        .map(|(sender, key)| ClaimRequest {
            key: SenderKey {
                sender,
                idempotency_key: key,
            },
            fingerprint: FP,
        })
        .collect();
    requests.push(requests[5]);
    let outcomes = sharded.claim_many(&requests, NOW).await;
    for outcome in &outcomes[..96] {
        assert!(matches!(outcome, Ok(ClaimOutcome::Claimed(_))), "{outcome:?}");
    }
    assert!(
        matches!(outcomes[96], Ok(ClaimOutcome::InProgress { .. })),
        "{:?}",
        outcomes[96]
    );
    for node in &cluster.nodes {
        assert!(dbsize(&node.url()).await > 0, "a primary holds none of the keys");
    }
    // 64 entries, 64 keyid sets, the shard sets, the shard count, 96
    // records and 32 sender sets, deleted on every primary.
    assert!(sharded.delete_all().await.unwrap() >= 64 + 64 + 1 + 96 + 32);
    for node in &cluster.nodes {
        let client = redis::Client::open(node.url()).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let left: Vec<String> = redis::cmd("KEYS")
            .arg("adcp-mn-spread:*")
            .query_async(&mut con)
            .await
            .unwrap();
        assert!(left.is_empty(), "{left:?}");
    }

    let nonce = ReplayKey {
        agent: None,
        keyid: "k",
        nonce: b"n",
        scope: None,
    };
    assert_eq!(
        opened.insert(nonce, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    drop(opened);
    every_contract_case().await;
    drop(cluster);
}
