//! The cases of the contract, one `async fn` per property, each taking
//! the [`Backend`] to open stores from. [`contract_tests!`](super::contract_tests)
//! and [`run_all`](super::run_all) run them all; call one directly
//! through [`run`](super::run) to run it alone.

use super::{Backend, DAY, NOW};
use crate::idempotency::{
    ClaimOutcome, ClaimRequest, ClaimToken, Fingerprint, IdempotencyConfig, IdempotencyError, IdempotencyStore,
    RecordState, SenderAliases, SenderKey,
};
use adcp_verify::{CapKey, InsertOutcome, ReplayKey, ReplayLimits, ReplayStore};
use std::sync::Arc;

mod notification;
pub use notification::*;

fn key<'a>(keyid: &'a str, nonce: &'a [u8]) -> ReplayKey<'a> {
    ReplayKey {
        agent: None,
        keyid,
        nonce,
        scope: None,
    }
}

/// `key` signed by `agent` (counted toward `(agent, keyid)`).
fn agent_key<'a>(agent: &'a str, keyid: &'a str, nonce: &'a [u8]) -> ReplayKey<'a> {
    ReplayKey {
        agent: Some(agent),
        ..key(keyid, nonce)
    }
}

/// The cap partition of `keyid` without an agent.
fn cap(keyid: &str) -> CapKey<'_> {
    CapKey { agent: None, keyid }
}

/// The cap partition of `(agent, keyid)`.
fn agent_cap<'a>(agent: &'a str, keyid: &'a str) -> CapKey<'a> {
    CapKey {
        agent: Some(agent),
        keyid,
    }
}

/// Two sellers publishing the same `kid` (kids are unique per JWKS only).
const SELLER_A: &str = "https://seller-a.example/mcp";
const SELLER_B: &str = "https://seller-b.example/mcp";
const SHARED_KID: &str = "key-1";

/// Replay: a first insert is `Inserted`, the same key again `Replayed`; nonces compare byte for byte.
pub async fn replay_first_sighting_then_replay<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::webhook()).await;
    let k = key("seller", b"nonce-1");
    assert!(!store.contains(k, NOW).await.unwrap());
    assert_eq!(store.insert(k, NOW + 360, NOW).await.unwrap(), InsertOutcome::Inserted);
    assert!(store.contains(k, NOW + 1).await.unwrap());
    assert_eq!(
        store.insert(k, NOW + 360, NOW + 1).await.unwrap(),
        InsertOutcome::Replayed
    );
    assert_eq!(
        store.insert(key("seller", b"nonce-2"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key("other", b"nonce-1"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    // Binary nonces with zero bytes are exact.
    assert_eq!(
        store.insert(key("seller", &[0, 1, 0]), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key("seller", &[0, 1]), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
}

/// Replay: an entry is live up to and including its `expires_at`.
pub async fn replay_ttl_boundary_is_inclusive<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::webhook()).await;
    let k = key("seller", b"n");
    let expires_at = NOW + 360;
    assert_eq!(store.insert(k, expires_at, NOW).await.unwrap(), InsertOutcome::Inserted);
    assert!(store.contains(k, expires_at).await.unwrap());
    assert_eq!(
        store.insert(k, expires_at, expires_at).await.unwrap(),
        InsertOutcome::Replayed
    );
    assert!(!store.contains(k, expires_at + 1).await.unwrap());
    assert_eq!(
        store.insert(k, expires_at + 361, expires_at + 1).await.unwrap(),
        InsertOutcome::Inserted
    );
}

/// Replay: an expired entry is replaced by a fresh insert of its key.
pub async fn replay_expired_entry_is_replaced<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(1, 1)).await;
    let k = key("seller", b"n");
    assert_eq!(store.insert(k, NOW + 10, NOW).await.unwrap(), InsertOutcome::Inserted);
    assert_eq!(
        store.insert(k, NOW + 1_000, NOW + 500).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(k, NOW + 1_000, NOW + 999).await.unwrap(),
        InsertOutcome::Replayed
    );
}

/// Replay: inserting an already expired entry stores nothing and takes no capacity.
pub async fn replay_already_expired_insert_stores_nothing<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(1, 1)).await;
    assert_eq!(
        store.insert(key("k", b"old"), NOW - 1, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert!(!store.contains(key("k", b"old"), NOW - 1).await.unwrap());
    assert_eq!(
        store.insert(key("k", b"fresh"), NOW + 60, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
}

/// Replay: at the per-keyid cap new nonces are rejected, live entries are kept.
pub async fn replay_per_keyid_cap_rejects_instead_of_evicting<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(3, 100)).await;
    for n in 0u8..3 {
        assert_eq!(
            store.insert(key("abuser", &[n]), NOW + 360, NOW).await.unwrap(),
            InsertOutcome::Inserted
        );
    }
    assert!(store.keyid_cap_reached(cap("abuser"), NOW).await.unwrap());
    assert_eq!(
        store.insert(key("abuser", &[3]), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    for n in 0u8..3 {
        assert!(store.contains(key("abuser", &[n]), NOW + 1).await.unwrap());
        assert_eq!(
            store.insert(key("abuser", &[n]), NOW + 360, NOW + 1).await.unwrap(),
            InsertOutcome::Replayed
        );
    }
    assert!(!store.contains(key("abuser", &[3]), NOW + 1).await.unwrap());
    assert!(!store.keyid_cap_reached(cap("honest"), NOW).await.unwrap());
    assert_eq!(
        store.insert(key("honest", &[0]), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
}

/// Replay: a replay is reported as such even when the keyid is at its cap.
pub async fn replay_is_reported_even_at_the_cap<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(1, 1)).await;
    assert_eq!(
        store.insert(key("k", b"a"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key("k", b"a"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Replayed
    );
    assert_eq!(
        store.insert(key("k", b"b"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
}

/// Replay: at the aggregate cap every keyid is rejected.
pub async fn replay_aggregate_cap_rejects_every_keyid<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(10, 4)).await;
    for i in 0..4 {
        let keyid = format!("seller-{i}");
        assert_eq!(
            store.insert(key(&keyid, b"n"), NOW + 360, NOW).await.unwrap(),
            InsertOutcome::Inserted
        );
    }
    assert_eq!(
        store.insert(key("seller-9", b"n"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::AggregateCapReached
    );
    assert_eq!(
        store.insert(key("seller-0", b"m"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::AggregateCapReached
    );
    assert!(!store.keyid_cap_reached(cap("seller-0"), NOW).await.unwrap());
    for i in 0..4 {
        let keyid = format!("seller-{i}");
        assert!(store.contains(key(&keyid, b"n"), NOW).await.unwrap());
    }
}

/// Replay: when both caps are reached, the keyid cap is the one reported.
pub async fn replay_keyid_cap_is_reported_before_aggregate_cap<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(2, 2)).await;
    assert_eq!(
        store.insert(key("k", b"a"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key("k", b"b"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key("k", b"c"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    assert_eq!(
        store.insert(key("j", b"a"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::AggregateCapReached
    );
}

/// Replay: zero caps refuse every insert.
pub async fn replay_zero_caps_refuse_everything<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(0, 10)).await;
    assert!(store.keyid_cap_reached(cap("k"), NOW).await.unwrap());
    assert_eq!(
        store.insert(key("k", b"a"), NOW + 1, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    let store = b.replay(ReplayLimits::new(10, 0)).await;
    assert_eq!(
        store.insert(key("k", b"a"), NOW + 1, NOW).await.unwrap(),
        InsertOutcome::AggregateCapReached
    );
}

/// Replay: expired entries stop counting toward both caps.
pub async fn replay_expired_entries_free_capacity<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(2, 3)).await;
    assert_eq!(
        store.insert(key("k", b"a"), NOW + 100, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key("k", b"b"), NOW + 200, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key("j", b"a"), NOW + 300, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key("k", b"c"), NOW + 300, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    assert_eq!(
        store.insert(key("i", b"a"), NOW + 300, NOW).await.unwrap(),
        InsertOutcome::AggregateCapReached
    );
    assert!(store.keyid_cap_reached(cap("k"), NOW + 100).await.unwrap());
    assert_eq!(
        store.insert(key("k", b"c"), NOW + 300, NOW + 100).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    assert!(!store.keyid_cap_reached(cap("k"), NOW + 101).await.unwrap());
    assert_eq!(
        store.insert(key("k", b"c"), NOW + 400, NOW + 101).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key("i", b"a"), NOW + 400, NOW + 101).await.unwrap(),
        InsertOutcome::AggregateCapReached
    );
    assert_eq!(
        store.insert(key("i", b"a"), NOW + 800, NOW + 401).await.unwrap(),
        InsertOutcome::Inserted
    );
}

/// Replay: the scope is part of the key; scoped entries count toward the keyid cap.
pub async fn replay_scope_separates_entries<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(5, 100)).await;
    let a = "https://buyer.example.com/adcp/webhook/a";
    let unscoped = key("seller", b"n");
    let at_a = ReplayKey {
        scope: Some(a),
        ..unscoped
    };
    let at_b = ReplayKey {
        scope: Some("https://buyer.example.com/adcp/webhook/b"),
        ..unscoped
    };
    let at_empty = ReplayKey {
        scope: Some(""),
        ..unscoped
    };
    for k in [unscoped, at_a, at_b, at_empty] {
        assert_eq!(store.insert(k, NOW + 360, NOW).await.unwrap(), InsertOutcome::Inserted);
    }
    for k in [unscoped, at_a, at_b, at_empty] {
        assert_eq!(store.insert(k, NOW + 360, NOW).await.unwrap(), InsertOutcome::Replayed);
    }
    let shifted = ReplayKey {
        agent: None,
        keyid: "seller",
        nonce: b"nh",
        scope: Some(&a[1..]),
    };
    assert_eq!(
        store.insert(shifted, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    // Scoped entries count toward the keyid's cap.
    assert_eq!(
        store.insert(key("seller", b"x"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
}

/// Replay: concurrent inserts of one key yield exactly one `Inserted`.
pub async fn replay_concurrent_inserts_of_one_key_yield_one_insert<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::webhook()).await;
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                store
                    .insert(key("seller", b"same-nonce"), NOW + 360, NOW)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut inserted = 0;
    for task in tasks {
        match task.await.unwrap() {
            InsertOutcome::Inserted => inserted += 1,
            other => assert_eq!(other, InsertOutcome::Replayed),
        }
    }
    assert_eq!(inserted, 1);
}

/// Replay: concurrent inserts never exceed the per-keyid cap.
pub async fn replay_concurrent_inserts_never_exceed_the_keyid_cap<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(100, 1_000)).await;
    let tasks: Vec<_> = (0u32..8)
        .map(|t| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut inserted = 0;
                for i in 0u32..50 {
                    let nonce = [t.to_be_bytes(), i.to_be_bytes()].concat();
                    if store.insert(key("abuser", &nonce), NOW + 360, NOW).await.unwrap() == InsertOutcome::Inserted {
                        inserted += 1;
                    }
                }
                inserted
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    assert_eq!(total, 100);
}

/// Replay: concurrent inserts never exceed the aggregate cap.
pub async fn replay_concurrent_inserts_never_exceed_the_aggregate_cap<B: Backend>(b: &B) {
    // 16 tasks, each its own keyid, race for 100 aggregate slots; every
    // keyid could take 50 on its own.
    let store = b.replay(ReplayLimits::new(50, 100)).await;
    let tasks: Vec<_> = (0u32..16)
        .map(|t| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let keyid = format!("seller-{t}");
                let mut inserted = 0;
                for i in 0u32..20 {
                    match store
                        .insert(key(&keyid, &i.to_be_bytes()), NOW + 360, NOW)
                        .await
                        .unwrap()
                    {
                        InsertOutcome::Inserted => inserted += 1,
                        other => assert_eq!(other, InsertOutcome::AggregateCapReached),
                    }
                }
                inserted
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    assert_eq!(total, 100);
}

/// Replay: two agents publishing the same `kid` each have a cap of their own.
pub async fn replay_agents_sharing_a_keyid_have_their_own_cap<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(2, 100)).await;
    for n in 0u8..2 {
        assert_eq!(
            store
                .insert(agent_key(SELLER_A, SHARED_KID, &[n]), NOW + 360, NOW)
                .await
                .unwrap(),
            InsertOutcome::Inserted
        );
    }
    // Seller A flooded its cap under the shared kid...
    assert!(store
        .keyid_cap_reached(agent_cap(SELLER_A, SHARED_KID), NOW)
        .await
        .unwrap());
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, SHARED_KID, &[2]), NOW + 360, NOW)
            .await
            .unwrap(),
        InsertOutcome::KeyidCapReached
    );
    // ...and seller B, same kid, still has all of its own.
    assert!(!store
        .keyid_cap_reached(agent_cap(SELLER_B, SHARED_KID), NOW)
        .await
        .unwrap());
    for n in 10u8..12 {
        assert_eq!(
            store
                .insert(agent_key(SELLER_B, SHARED_KID, &[n]), NOW + 360, NOW)
                .await
                .unwrap(),
            InsertOutcome::Inserted
        );
    }
    assert!(store
        .keyid_cap_reached(agent_cap(SELLER_B, SHARED_KID), NOW)
        .await
        .unwrap());
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, SHARED_KID, &[12]), NOW + 360, NOW)
            .await
            .unwrap(),
        InsertOutcome::KeyidCapReached
    );
    // An agent whose URL is empty is not "no agent", and neither the
    // agent-less partition nor another kid of seller A is touched.
    assert!(!store.keyid_cap_reached(agent_cap("", SHARED_KID), NOW).await.unwrap());
    assert!(!store.keyid_cap_reached(cap(SHARED_KID), NOW).await.unwrap());
    assert!(!store
        .keyid_cap_reached(agent_cap(SELLER_A, "key-2"), NOW)
        .await
        .unwrap());
    assert_eq!(
        store
            .insert(agent_key("", SHARED_KID, &[20]), NOW + 360, NOW)
            .await
            .unwrap(),
        InsertOutcome::Inserted
    );
}

/// Replay: uniqueness is per `(keyid, nonce, scope)`, whatever the agent.
pub async fn replay_uniqueness_ignores_the_agent<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(10, 100)).await;
    let by_a = agent_key(SELLER_A, SHARED_KID, b"captured");
    let by_b = agent_key(SELLER_B, SHARED_KID, b"captured");
    assert_eq!(
        store.insert(by_a, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    // A captured request replayed under the other seller sharing the kid
    // (or by a verifier that does not know the agent) is still a replay.
    assert!(store.contains(by_b, NOW + 1).await.unwrap());
    assert!(store.contains(key(SHARED_KID, b"captured"), NOW + 1).await.unwrap());
    assert_eq!(
        store.insert(by_b, NOW + 360, NOW + 1).await.unwrap(),
        InsertOutcome::Replayed
    );
    assert_eq!(
        store
            .insert(key(SHARED_KID, b"captured"), NOW + 360, NOW + 1)
            .await
            .unwrap(),
        InsertOutcome::Replayed
    );
    // Also the other way round, and within one scope.
    let scoped_none = ReplayKey {
        scope: Some("https://buyer.example.com/adcp/webhook"),
        ..key(SHARED_KID, b"scoped")
    };
    let scoped_b = ReplayKey {
        agent: Some(SELLER_B),
        ..scoped_none
    };
    assert_eq!(
        store.insert(scoped_none, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(scoped_b, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Replayed
    );
    // A replay is reported even when the replaying agent is at its cap.
    // (Another kid: some backends' stores of one case share one server.)
    let store = b.replay(ReplayLimits::new(1, 100)).await;
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, "key-9", b"b"), NOW + 360, NOW)
            .await
            .unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, "key-9", b"a"), NOW + 360, NOW)
            .await
            .unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, "key-9", b"a"), NOW + 360, NOW)
            .await
            .unwrap(),
        InsertOutcome::Replayed
    );
}

/// Replay: entries without an agent count toward the bare keyid.
pub async fn replay_without_agent_counts_per_keyid<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(2, 100)).await;
    let scoped = ReplayKey {
        scope: Some("https://buyer.example.com/adcp/webhook"),
        ..key(SHARED_KID, b"s")
    };
    assert_eq!(
        store.insert(key(SHARED_KID, b"a"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(scoped, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert!(store.keyid_cap_reached(cap(SHARED_KID), NOW).await.unwrap());
    assert_eq!(
        store.insert(key(SHARED_KID, b"c"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    // `None` is a partition of its own: agents sharing the kid are not
    // capped by it, and do not add to it.
    assert!(!store
        .keyid_cap_reached(agent_cap(SELLER_A, SHARED_KID), NOW)
        .await
        .unwrap());
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, SHARED_KID, b"c"), NOW + 360, NOW)
            .await
            .unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(key(SHARED_KID, b"c"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Replayed
    );
    assert_eq!(
        store.insert(key(SHARED_KID, b"d"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    assert!(!store.keyid_cap_reached(cap("other"), NOW).await.unwrap());
}

/// Replay: expiry frees the `(agent, keyid)` count.
pub async fn replay_expiry_frees_the_agent_keyid_count<B: Backend>(b: &B) {
    let store = b.replay(ReplayLimits::new(1, 100)).await;
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, SHARED_KID, b"a"), NOW + 100, NOW)
            .await
            .unwrap(),
        InsertOutcome::Inserted
    );
    assert!(store
        .keyid_cap_reached(agent_cap(SELLER_A, SHARED_KID), NOW + 100)
        .await
        .unwrap());
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, SHARED_KID, b"b"), NOW + 300, NOW + 100)
            .await
            .unwrap(),
        InsertOutcome::KeyidCapReached
    );
    // One second after its expiry A's entry no longer counts.
    assert!(!store
        .keyid_cap_reached(agent_cap(SELLER_A, SHARED_KID), NOW + 101)
        .await
        .unwrap());
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, SHARED_KID, b"b"), NOW + 300, NOW + 101)
            .await
            .unwrap(),
        InsertOutcome::Inserted
    );
    // B signs the nonce of an entry of A's that has expired: a first
    // sighting, counted toward B only.
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, SHARED_KID, b"a"), NOW + 300, NOW + 101)
            .await
            .unwrap(),
        InsertOutcome::Inserted
    );
    assert!(store
        .keyid_cap_reached(agent_cap(SELLER_B, SHARED_KID), NOW + 101)
        .await
        .unwrap());
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, SHARED_KID, b"a"), NOW + 300, NOW + 101)
            .await
            .unwrap(),
        InsertOutcome::Replayed
    );
    // Everything expires; both partitions are free again.
    for agent in [SELLER_A, SELLER_B] {
        assert!(!store
            .keyid_cap_reached(agent_cap(agent, SHARED_KID), NOW + 301)
            .await
            .unwrap());
        assert_eq!(
            store
                .insert(agent_key(agent, SHARED_KID, b"c"), NOW + 700, NOW + 301)
                .await
                .unwrap(),
            if agent == SELLER_A {
                InsertOutcome::Inserted
            } else {
                // A's fresh entry holds the nonce: uniqueness ignores the agent.
                InsertOutcome::Replayed
            }
        );
    }
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, SHARED_KID, b"d"), NOW + 700, NOW + 301)
            .await
            .unwrap(),
        InsertOutcome::Inserted
    );
}

/// Replay: concurrent agents never exceed their own caps.
pub async fn replay_concurrent_agents_never_exceed_their_own_cap<B: Backend>(b: &B) {
    // 8 tasks, half signing for A and half for B, all under one kid, race
    // for caps of 40 each.
    let store = b.replay(ReplayLimits::new(40, 1_000)).await;
    let tasks: Vec<_> = (0u32..8)
        .map(|t| {
            let store = Arc::clone(&store);
            let agent = if t % 2 == 0 { SELLER_A } else { SELLER_B };
            tokio::spawn(async move {
                let mut inserted = 0;
                for i in 0u32..30 {
                    let nonce = [t.to_be_bytes(), i.to_be_bytes()].concat();
                    match store
                        .insert(agent_key(agent, SHARED_KID, &nonce), NOW + 360, NOW)
                        .await
                        .unwrap()
                    {
                        InsertOutcome::Inserted => inserted += 1,
                        other => assert_eq!(other, InsertOutcome::KeyidCapReached),
                    }
                }
                (agent, inserted)
            })
        })
        .collect();
    let (mut a, mut b_total) = (0, 0);
    for task in tasks {
        match task.await.unwrap() {
            (SELLER_A, n) => a += n,
            (_, n) => b_total += n,
        }
    }
    assert_eq!((a, b_total), (40, 40));
    for agent in [SELLER_A, SELLER_B] {
        assert!(store
            .keyid_cap_reached(agent_cap(agent, SHARED_KID), NOW)
            .await
            .unwrap());
    }
}

fn ev<'a>(sender: &'a str, idempotency_key: &'a str) -> SenderKey<'a> {
    SenderKey {
        sender,
        idempotency_key,
    }
}

const FP: Fingerprint<'static> = Fingerprint::from_array(&[0xab; 32]);
const OTHER_FP: Fingerprint<'static> = Fingerprint::from_array(&[0xcd; 32]);
const SELLER: &str = "https://seller.example/mcp";

fn claimed(outcome: ClaimOutcome) -> crate::idempotency::Claim {
    match outcome {
        ClaimOutcome::Claimed(claim) => claim,
        other => panic!("expected a claim, got {other:?}"),
    }
}

fn config(lease_secs: i64, per_sender_cap: u64) -> IdempotencyConfig {
    IdempotencyConfig::new(DAY, lease_secs, per_sender_cap).unwrap()
}

/// Idempotency: claim, complete, then a duplicate is `Completed`; the record reads back.
pub async fn idem_claim_complete_then_duplicate<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let e = ev(SELLER, "whk_1");
    assert_eq!(store.lookup(e, NOW).await.unwrap(), None);
    let claim = claimed(store.claim(e, FP, NOW).await.unwrap());
    assert_eq!(claim.attempt, 1);
    assert_eq!(claim.lease_expires_at, NOW + 60);
    let record = store.lookup(e, NOW).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        RecordState::Claimed {
            token: claim.token,
            attempt: 1,
            lease_expires_at: NOW + 60
        }
    );
    assert_eq!(record.fingerprint, FP.as_bytes());
    assert_eq!(record.created_at, NOW);
    assert!(record.expires_at >= NOW + DAY);
    store.complete(e, claim.token, NOW + 5).await.unwrap();
    // Completing again with the owning token is a no-op.
    store.complete(e, claim.token, NOW + 6).await.unwrap();
    let record = store.lookup(e, NOW + 6).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        RecordState::Completed {
            token: claim.token,
            completed_at: NOW + 5
        }
    );
    assert_eq!(record.expires_at, NOW + 5 + DAY);
    assert_eq!(store.claim(e, FP, NOW + 600).await.unwrap(), ClaimOutcome::Completed);
    // A completed record cannot be released.
    assert_eq!(
        store.release(e, claim.token, NOW + 601).await,
        Err(IdempotencyError::NotOwner)
    );
    assert_eq!(store.sender_len(SELLER, NOW + 601).await.unwrap(), 1);
}

/// Idempotency: `InProgress` within the lease, takeover with a new token after it; the old token is fenced off.
pub async fn idem_in_progress_then_takeover_after_lease<B: Backend>(b: &B) {
    let store = b.idem(config(30, 100)).await;
    let e = ev(SELLER, "whk_crash");
    let first = claimed(store.claim(e, FP, NOW).await.unwrap());
    // Within the lease (inclusive) another receiver is told to retry.
    assert_eq!(
        store.claim(e, FP, NOW + 30).await.unwrap(),
        ClaimOutcome::InProgress {
            lease_expires_at: NOW + 30
        }
    );
    // The owner crashed; after the lease the claim is taken over.
    let second = claimed(store.claim(e, FP, NOW + 31).await.unwrap());
    assert_eq!(second.attempt, 2);
    assert_ne!(second.token, first.token);
    assert_eq!(second.lease_expires_at, NOW + 61);
    // The old owner is fenced off.
    assert_eq!(
        store.complete(e, first.token, NOW + 32).await,
        Err(IdempotencyError::NotOwner)
    );
    assert_eq!(
        store.release(e, first.token, NOW + 32).await,
        Err(IdempotencyError::NotOwner)
    );
    assert_eq!(
        store.claim(e, FP, NOW + 40).await.unwrap(),
        ClaimOutcome::InProgress {
            lease_expires_at: NOW + 61
        }
    );
    store.complete(e, second.token, NOW + 41).await.unwrap();
    assert_eq!(store.claim(e, FP, NOW + 100).await.unwrap(), ClaimOutcome::Completed);
    assert_eq!(
        store.complete(e, ClaimToken(999), NOW + 100).await,
        Err(IdempotencyError::NotOwner)
    );
    // Unknown keys have no owner.
    assert_eq!(
        store.complete(ev(SELLER, "nope"), first.token, NOW).await,
        Err(IdempotencyError::NotOwner)
    );
}

/// Idempotency: the same key with another fingerprint is a `Conflict` in every state.
pub async fn idem_conflict_on_changed_payload<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let e = ev(SELLER, "whk_2");
    claimed(store.claim(e, FP, NOW).await.unwrap());
    assert_eq!(store.claim(e, OTHER_FP, NOW + 1).await.unwrap(), ClaimOutcome::Conflict);
    // Even after the lease expires, a changed payload never takes over.
    assert_eq!(
        store.claim(e, OTHER_FP, NOW + 500).await.unwrap(),
        ClaimOutcome::Conflict
    );
    let takeover = claimed(store.claim(e, FP, NOW + 500).await.unwrap());
    store.complete(e, takeover.token, NOW + 501).await.unwrap();
    assert_eq!(
        store.claim(e, OTHER_FP, NOW + 502).await.unwrap(),
        ClaimOutcome::Conflict
    );
    assert_eq!(
        store.lookup(e, NOW + 502).await.unwrap().unwrap().fingerprint,
        FP.as_bytes()
    );
}

/// Idempotency: a released claim lets a retry claim the key afresh.
pub async fn idem_release_lets_a_retry_claim<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let e = ev(SELLER, "whk_3");
    let claim = claimed(store.claim(e, FP, NOW).await.unwrap());
    assert_eq!(
        store.release(e, ClaimToken(claim.token.0 + 7), NOW).await,
        Err(IdempotencyError::NotOwner)
    );
    store.release(e, claim.token, NOW + 1).await.unwrap();
    assert_eq!(store.lookup(e, NOW + 1).await.unwrap(), None);
    assert_eq!(store.sender_len(SELLER, NOW + 1).await.unwrap(), 0);
    let again = claimed(store.claim(e, OTHER_FP, NOW + 2).await.unwrap());
    assert_eq!(again.attempt, 1);
}

/// Idempotency: a record lives through its window, inclusive, then the key is new again.
pub async fn idem_window_expiry<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let e = ev(SELLER, "whk_4");
    let claim = claimed(store.claim(e, FP, NOW).await.unwrap());
    store.complete(e, claim.token, NOW).await.unwrap();
    // Live through the whole window, inclusive.
    assert_eq!(store.claim(e, FP, NOW + DAY).await.unwrap(), ClaimOutcome::Completed);
    assert!(store.lookup(e, NOW + DAY).await.unwrap().is_some());
    assert_eq!(store.lookup(e, NOW + DAY + 1).await.unwrap(), None);
    assert_eq!(store.sender_len(SELLER, NOW + DAY + 1).await.unwrap(), 0);
    // After the window the key is new again (even with another payload).
    let fresh = claimed(store.claim(e, OTHER_FP, NOW + DAY + 1).await.unwrap());
    assert_eq!(fresh.attempt, 1);
    // A claim that is never completed still blocks for the window.
    let stuck = ev(SELLER, "whk_5");
    claimed(store.claim(stuck, FP, NOW).await.unwrap());
    assert!(matches!(
        store.claim(stuck, FP, NOW + 10).await.unwrap(),
        ClaimOutcome::InProgress { .. }
    ));
}

/// Idempotency: at the per-sender cap new keys are rejected, live records are kept.
pub async fn idem_sender_cap_rejects_instead_of_evicting<B: Backend>(b: &B) {
    let store = b.idem(config(60, 3)).await;
    for i in 0..3 {
        let k = format!("whk_{i}");
        claimed(store.claim(ev(SELLER, &k), FP, NOW + i).await.unwrap());
    }
    assert_eq!(
        store.claim(ev(SELLER, "whk_9"), FP, NOW + 5).await.unwrap(),
        ClaimOutcome::SenderCapReached
    );
    assert_eq!(store.lookup(ev(SELLER, "whk_9"), NOW + 5).await.unwrap(), None);
    // Existing keys are still answered at the cap.
    assert!(matches!(
        store.claim(ev(SELLER, "whk_0"), FP, NOW + 5).await.unwrap(),
        ClaimOutcome::InProgress { .. }
    ));
    assert_eq!(store.sender_len(SELLER, NOW + 5).await.unwrap(), 3);
    // Another sender is unaffected.
    claimed(
        store
            .claim(ev("https://other.example/mcp", "whk_9"), FP, NOW + 5)
            .await
            .unwrap(),
    );
    // Expired records free capacity (whk_0 was created first).
    let later = NOW + DAY + 1;
    claimed(store.claim(ev(SELLER, "whk_9"), FP, later).await.unwrap());
    assert_eq!(store.sender_len(SELLER, later).await.unwrap(), 3);
}

/// Idempotency: senders have separate keyspaces.
pub async fn idem_senders_are_isolated<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let a = ev("https://a.example/mcp", "whk_same");
    let c = ev("https://c.example/mcp", "whk_same");
    let claim = claimed(store.claim(a, FP, NOW).await.unwrap());
    store.complete(a, claim.token, NOW).await.unwrap();
    let other = claimed(store.claim(c, OTHER_FP, NOW).await.unwrap());
    assert_eq!(other.attempt, 1);
    assert_eq!(
        store.complete(c, ClaimToken(other.token.0 + 1), NOW).await,
        Err(IdempotencyError::NotOwner)
    );
    assert_eq!(store.sender_len("https://a.example/mcp", NOW).await.unwrap(), 1);
    assert_eq!(store.sender_len("https://c.example/mcp", NOW).await.unwrap(), 1);
}

/// Idempotency: identities aliased with `SenderAliases` share one keyspace.
pub async fn idem_aliases_share_one_keyspace<B: Backend>(b: &B) {
    let store = SenderAliases::new(b.idem(config(60, 100)).await).alias("hmac:cred-7", SELLER);
    let hmac = ev("hmac:cred-7", "whk_mig");
    let rfc9421 = ev(SELLER, "whk_mig");
    let claim = claimed(store.claim(hmac, FP, NOW).await.unwrap());
    assert!(matches!(
        store.claim(rfc9421, FP, NOW).await.unwrap(),
        ClaimOutcome::InProgress { .. }
    ));
    store.complete(rfc9421, claim.token, NOW + 1).await.unwrap();
    assert_eq!(store.claim(hmac, FP, NOW + 2).await.unwrap(), ClaimOutcome::Completed);
    // Unaliased identities stay separate.
    claimed(store.claim(ev("hmac:cred-8", "whk_mig"), FP, NOW).await.unwrap());
}

/// Idempotency: concurrent claims have exactly one winner per key.
pub async fn idem_concurrent_claims_have_one_winner_per_key<B: Backend>(b: &B) {
    const TASKS: usize = 64;
    const KEYS: usize = 1_000;
    let store = b.idem(config(600, 1_000_000)).await;
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut wins = 0usize;
                for i in 0..KEYS {
                    // Each task walks the keys from a different start.
                    let k = format!("whk_{}", (i + t * 37) % KEYS);
                    match store.claim(ev(SELLER, &k), FP, NOW).await.unwrap() {
                        ClaimOutcome::Claimed(_) => wins += 1,
                        ClaimOutcome::InProgress { .. } => {}
                        other => panic!("unexpected {other:?}"),
                    }
                }
                wins
            })
        })
        .collect();
    let mut wins = 0;
    for task in tasks {
        wins += task.await.unwrap();
    }
    assert_eq!(wins, KEYS);
    assert_eq!(store.sender_len(SELLER, NOW).await.unwrap(), KEYS as u64);
}

/// Idempotency: a fingerprint of `Fingerprint::MAX_LEN` bytes is stored
/// verbatim; a longer one is refused before it reaches any store.
pub async fn idem_rejects_long_fingerprints<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let long = [0u8; Fingerprint::MAX_LEN + 1];
    assert_eq!(Fingerprint::new(&long), Err(IdempotencyError::FingerprintTooLong));
    let max: Vec<u8> = (0..Fingerprint::MAX_LEN).map(|i| i as u8).collect();
    let max = Fingerprint::new(&max).unwrap();
    claimed(store.claim(ev(SELLER, "k"), max, NOW).await.unwrap());
    assert_eq!(
        store.lookup(ev(SELLER, "k"), NOW).await.unwrap().unwrap().fingerprint,
        max.as_bytes()
    );
    assert_eq!(
        store.claim(ev(SELLER, "k"), max, NOW + 1).await.unwrap(),
        ClaimOutcome::InProgress {
            lease_expires_at: NOW + 60
        }
    );
}

/// Idempotency: `claim_many` answers each request as `claim` would, in order.
pub async fn idem_claim_many_answers_each_request_like_claim<B: Backend>(b: &B) {
    let store = b.idem(config(60, 4)).await;
    let done = ev(SELLER, "whk_done");
    let c = claimed(store.claim(done, FP, NOW).await.unwrap());
    store.complete(done, c.token, NOW).await.unwrap();
    let request = |key, fingerprint| ClaimRequest { key, fingerprint };
    let requests = [
        request(ev(SELLER, "whk_a"), FP),
        // The same key again within the batch: the first request owns it.
        request(ev(SELLER, "whk_a"), FP),
        request(done, FP),
        request(done, OTHER_FP),
        request(ev("https://other.example/mcp", "whk_a"), FP),
        request(ev(SELLER, "whk_b"), FP),
        request(ev(SELLER, "whk_c"), FP),
        // The sender now holds 4 records (done, a, b, c): the cap.
        request(ev(SELLER, "whk_d"), FP),
    ];
    let outcomes = store.claim_many(&requests, NOW + 1).await;
    assert_eq!(outcomes.len(), requests.len());
    let first = claimed(outcomes[0].clone().unwrap());
    assert_eq!(first.attempt, 1);
    assert_eq!(
        outcomes[1],
        Ok(ClaimOutcome::InProgress {
            lease_expires_at: NOW + 61
        })
    );
    assert_eq!(outcomes[2], Ok(ClaimOutcome::Completed));
    assert_eq!(outcomes[3], Ok(ClaimOutcome::Conflict));
    claimed(outcomes[4].clone().unwrap());
    claimed(outcomes[5].clone().unwrap());
    claimed(outcomes[6].clone().unwrap());
    assert_eq!(outcomes[7], Ok(ClaimOutcome::SenderCapReached));
    // The batch's claims are real claims.
    store.complete(ev(SELLER, "whk_a"), first.token, NOW + 2).await.unwrap();
    assert_eq!(
        store.claim(ev(SELLER, "whk_a"), FP, NOW + 3).await.unwrap(),
        ClaimOutcome::Completed
    );
    assert_eq!(store.lookup(ev(SELLER, "whk_d"), NOW + 3).await.unwrap(), None);
    assert_eq!(store.sender_len(SELLER, NOW + 3).await.unwrap(), 4);
    assert!(store.claim_many(&[], NOW).await.is_empty());
}

/// Idempotency: in one `claim_many`, an expired lease is taken over once
/// (the key's later requests in the batch see the new claim), and the
/// requests of several senders, interleaved, are answered in batch order.
pub async fn idem_claim_many_takes_over_an_expired_lease_once<B: Backend>(b: &B) {
    let store = b.idem(config(30, 100)).await;
    let crashed = ev(SELLER, "whk_crash");
    let first = claimed(store.claim(crashed, FP, NOW).await.unwrap());
    // Sorts before SELLER, so a backend grouping by sender reorders it.
    let other = ev("https://a.example/mcp", "whk_crash");
    let request = |key| ClaimRequest { key, fingerprint: FP };
    let outcomes = store
        .claim_many(&[request(crashed), request(other), request(crashed)], NOW + 31)
        .await;
    let second = claimed(outcomes[0].clone().unwrap());
    assert_eq!(second.attempt, 2);
    assert_ne!(second.token, first.token);
    assert_eq!(claimed(outcomes[1].clone().unwrap()).attempt, 1);
    assert_eq!(
        outcomes[2],
        Ok(ClaimOutcome::InProgress {
            lease_expires_at: NOW + 61
        })
    );
    assert_eq!(
        store.complete(crashed, first.token, NOW + 32).await,
        Err(IdempotencyError::NotOwner)
    );
    store.complete(crashed, second.token, NOW + 32).await.unwrap();
}

/// Idempotency: concurrent batched claims have exactly one winner per key.
pub async fn idem_concurrent_batched_claims_have_one_winner_per_key<B: Backend>(b: &B) {
    const TASKS: usize = 64;
    const KEYS: usize = 1_000;
    const BATCH: usize = 100;
    let store = b.idem(config(600, 1_000_000)).await;
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let names: Vec<String> = (0..KEYS).map(|i| format!("whk_{}", (i + t * 37) % KEYS)).collect();
                let mut wins = 0usize;
                for chunk in names.chunks(BATCH) {
                    let requests: Vec<ClaimRequest<'_>> = chunk
                        .iter()
                        .map(|k| ClaimRequest {
                            key: ev(SELLER, k),
                            fingerprint: FP,
                        })
                        .collect();
                    for outcome in store.claim_many(&requests, NOW).await {
                        match outcome.unwrap() {
                            ClaimOutcome::Claimed(_) => wins += 1,
                            ClaimOutcome::InProgress { .. } => {}
                            other => panic!("unexpected {other:?}"),
                        }
                    }
                }
                wins
            })
        })
        .collect();
    let mut wins = 0;
    for task in tasks {
        wins += task.await.unwrap();
    }
    assert_eq!(wins, KEYS);
    assert_eq!(store.sender_len(SELLER, NOW).await.unwrap(), KEYS as u64);
}
