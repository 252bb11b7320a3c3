//! What only `MemoryReplayStore` has: its limits constructors, the entry
//! counts (`len`, `keyid_len`, `cap_len`, `is_empty`, `purge_expired`)
//! through the shared scenarios, the per-`(agent, keyid)` cap bookkeeping,
//! the conformance fill helpers, `Debug`, and atomicity across OS threads.
//!
//! The behaviour every replay store shares (first sighting and replay, the
//! inclusive TTL boundary, caps that refuse instead of evicting, scoping,
//! concurrent inserts) is the adcp-store contract suite
//! (`crates/adcp-store/tests/contract`), which runs against `MemoryReplayStore`
//! in `crates/adcp-store/tests/memory.rs`; it is not repeated here.

use adcp_verify::InsertOutcome::{self, AggregateCapReached, Inserted, KeyidCapReached, Replayed};
use adcp_verify::{CapKey, MemoryReplayStore, ReplayKey, ReplayLimits, ReplayStore};
use std::sync::{Arc, Barrier};

const NOW: i64 = 1_776_520_800;

fn key<'a>(keyid: &'a str, nonce: &'a [u8]) -> ReplayKey<'a> {
    ReplayKey {
        agent: None,
        keyid,
        nonce,
        scope: None,
    }
}

/// `key` counted toward `agent`'s partition of `keyid`.
fn agent_key<'a>(agent: &'a str, keyid: &'a str, nonce: &'a [u8]) -> ReplayKey<'a> {
    ReplayKey {
        agent: Some(agent),
        ..key(keyid, nonce)
    }
}

/// The per-keyid cap partition of `keyid` without an agent.
fn cap(keyid: &str) -> CapKey<'_> {
    CapKey { agent: None, keyid }
}

/// Live entries at `now` (the helpers count as of the latest `now` seen).
fn len_at(store: &MemoryReplayStore, now: i64) -> usize {
    store.purge_expired(now);
    store.len()
}

fn keyid_len_at(store: &MemoryReplayStore, keyid: &str, now: i64) -> usize {
    store.purge_expired(now);
    store.keyid_len(keyid)
}

fn empty_at(store: &MemoryReplayStore, now: i64) -> bool {
    store.purge_expired(now);
    store.is_empty()
}

/// Inserts `keyid`/`nonce`, live until `expires_at`, at `now`.
async fn put(store: &MemoryReplayStore, keyid: &str, nonce: &[u8], expires_at: i64, now: i64) -> InsertOutcome {
    store.insert(key(keyid, nonce), expires_at, now).await.unwrap()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn limits_constructors() {
    assert_eq!(
        ReplayLimits::webhook(),
        ReplayLimits {
            per_keyid_cap: 100_000,
            aggregate_cap: 10_000_000
        }
    );
    assert_eq!(
        ReplayLimits::request(),
        ReplayLimits {
            per_keyid_cap: 1_000_000,
            aggregate_cap: 10_000_000
        }
    );
    assert_eq!(
        ReplayLimits::new(7, 9),
        ReplayLimits {
            per_keyid_cap: 7,
            aggregate_cap: 9
        }
    );
    assert_eq!(MemoryReplayStore::webhook().limits(), ReplayLimits::webhook());
    assert_eq!(MemoryReplayStore::request().limits(), ReplayLimits::request());
}

#[tokio::test]
async fn a_replay_is_counted_once() {
    let store = MemoryReplayStore::webhook();
    assert_eq!(put(&store, "seller", b"nonce-1", NOW + 360, NOW).await, Inserted);
    assert_eq!(put(&store, "seller", b"nonce-1", NOW + 360, NOW + 1).await, Replayed);
    // A replay does not extend or duplicate the entry.
    assert_eq!(len_at(&store, NOW + 1), 1);
    assert_eq!(keyid_len_at(&store, "seller", NOW + 1), 1);
    // Another nonce, and the same nonce under another keyid, are distinct.
    assert_eq!(put(&store, "seller", b"nonce-2", NOW + 360, NOW).await, Inserted);
    assert_eq!(put(&store, "other", b"nonce-1", NOW + 360, NOW).await, Inserted);
    assert_eq!(len_at(&store, NOW), 3);
}

#[tokio::test]
async fn an_entry_is_not_counted_after_its_expiry() {
    let store = MemoryReplayStore::webhook();
    let expires_at = NOW + 360;
    assert_eq!(put(&store, "seller", b"n", expires_at, NOW).await, Inserted);
    assert_eq!(put(&store, "seller", b"n", expires_at, expires_at).await, Replayed);
    // Gone one second later.
    assert_eq!(len_at(&store, expires_at + 1), 0);
    assert!(empty_at(&store, expires_at + 1));
}

#[tokio::test]
async fn an_expired_entry_replaced_before_any_sweep_is_counted_once() {
    let store = MemoryReplayStore::webhook();
    assert_eq!(put(&store, "seller", b"n", NOW + 10, NOW).await, Inserted);
    // The next call is the re-insert itself, long after expiry.
    assert_eq!(put(&store, "seller", b"n", NOW + 1_000, NOW + 500).await, Inserted);
    assert_eq!(put(&store, "seller", b"n", NOW + 1_000, NOW + 999).await, Replayed);
    assert_eq!(keyid_len_at(&store, "seller", NOW + 999), 1);
}

#[tokio::test]
async fn an_already_expired_insert_is_not_counted() {
    let store = MemoryReplayStore::new(ReplayLimits::new(1, 1));
    assert_eq!(put(&store, "k", b"old", NOW - 1, NOW).await, Inserted);
    assert_eq!(len_at(&store, NOW), 0);
}

#[tokio::test]
async fn refused_inserts_are_not_counted() {
    let store = MemoryReplayStore::new(ReplayLimits::new(3, 100));
    for n in 0u8..3 {
        assert_eq!(put(&store, "abuser", &[n], NOW + 360, NOW).await, Inserted);
    }
    assert_eq!(put(&store, "abuser", &[3], NOW + 360, NOW).await, KeyidCapReached);
    assert_eq!(keyid_len_at(&store, "abuser", NOW + 1), 3);

    let store = MemoryReplayStore::new(ReplayLimits::new(10, 4));
    for i in 0..4 {
        assert_eq!(
            put(&store, &format!("seller-{i}"), b"n", NOW + 360, NOW).await,
            Inserted
        );
    }
    assert_eq!(put(&store, "seller-9", b"n", NOW + 360, NOW).await, AggregateCapReached);
    assert_eq!(put(&store, "seller-0", b"m", NOW + 360, NOW).await, AggregateCapReached);
    assert_eq!(len_at(&store, NOW), 4);
}

#[tokio::test]
async fn expired_entries_leave_the_counts() {
    let store = MemoryReplayStore::new(ReplayLimits::new(2, 3));
    assert_eq!(put(&store, "k", b"a", NOW + 100, NOW).await, Inserted);
    assert_eq!(put(&store, "k", b"b", NOW + 200, NOW).await, Inserted);
    assert_eq!(put(&store, "j", b"a", NOW + 300, NOW).await, Inserted);
    // One second after its expiry "k"/"a" no longer counts.
    assert_eq!(keyid_len_at(&store, "k", NOW + 101), 1);
    assert_eq!(len_at(&store, NOW + 101), 2);
    assert_eq!(put(&store, "k", b"c", NOW + 400, NOW + 101).await, Inserted);
    // Everything expires; the store is empty.
    assert_eq!(store.purge_expired(NOW + 401), 3);
    assert!(empty_at(&store, NOW + 401));
}

#[tokio::test]
async fn scoped_entries_count_toward_their_keyid() {
    let store = MemoryReplayStore::webhook();
    let a = "https://buyer.example.com/adcp/webhook/a";
    let unscoped = key("seller", b"n");
    let scopes = [
        None,
        Some(a),
        Some("https://buyer.example.com/adcp/webhook/b"),
        Some(""),
    ];
    for scope in scopes {
        let k = ReplayKey { scope, ..unscoped };
        assert_eq!(store.insert(k, NOW + 360, NOW).await.unwrap(), Inserted);
    }
    let shifted = ReplayKey {
        agent: None,
        keyid: "seller",
        nonce: b"nh",
        scope: Some(&a[1..]),
    };
    assert_eq!(store.insert(shifted, NOW + 360, NOW).await.unwrap(), Inserted);
    assert_eq!(keyid_len_at(&store, "seller", NOW), 5);
}

#[tokio::test]
async fn helpers_count_as_of_the_latest_now_seen() {
    let store = MemoryReplayStore::webhook();
    assert_eq!(
        store.insert(key("k", b"a"), NOW + 10, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(store.len(), 1);
    assert_eq!(
        store.insert(key("j", b"a"), NOW + 100, NOW + 20).await.unwrap(),
        InsertOutcome::Inserted
    );
    // "k"/"a" expired at NOW + 10 and the store has since seen NOW + 20.
    assert_eq!(store.len(), 1);
    assert_eq!(store.keyid_len("k"), 0);
    assert_eq!(store.keyid_len("j"), 1);
    // A call with an earlier `now` does not move the store's clock back.
    assert!(!store.contains(key("k", b"a"), NOW).await.unwrap());
    assert_eq!(store.len(), 1);
}

#[tokio::test]
async fn sweeps_many_entries_with_staggered_expiry() {
    let store = MemoryReplayStore::new(ReplayLimits::new(20_000, 20_000));
    for i in 0u32..10_000 {
        let keyid = format!("seller-{}", i % 7);
        let outcome = store
            .insert(key(&keyid, &i.to_be_bytes()), NOW + i64::from(i), NOW)
            .await
            .unwrap();
        assert_eq!(outcome, InsertOutcome::Inserted);
    }
    assert_eq!(len_at(&store, NOW), 10_000);
    // Entry i is live while now <= NOW + i.
    assert_eq!(len_at(&store, NOW + 2_500), 10_000 - 2_500);
    assert_eq!(len_at(&store, NOW + 9_999), 1);
    assert!(empty_at(&store, NOW + 10_000));
    assert!(!store
        .contains(key("seller-0", &0u32.to_be_bytes()), NOW + 10_000)
        .await
        .unwrap());
}

#[tokio::test]
async fn fill_keyid_to_cap_blocks_the_keyid_without_allocating_entries() {
    let store = MemoryReplayStore::webhook();
    let keyid = "test-ed25519-webhook-2026";
    assert_eq!(
        store.insert(key(keyid, b"real"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    let started = std::time::Instant::now();
    let added = store.fill_keyid_to_cap(keyid, NOW + 360);
    assert!(
        started.elapsed() < std::time::Duration::from_millis(100),
        "no per-entry work"
    );
    assert_eq!(added, 100_000 - 1);
    assert_eq!(keyid_len_at(&store, keyid, NOW), 100_000);
    assert_eq!(len_at(&store, NOW), 100_000);

    assert!(store.keyid_cap_reached(cap(keyid), NOW).await.unwrap());
    assert_eq!(
        store.insert(key(keyid, b"new"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    // The real entry is still a replay; other keyids are unaffected.
    assert_eq!(
        store.insert(key(keyid, b"real"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Replayed
    );
    assert!(!store.keyid_cap_reached(cap("other"), NOW).await.unwrap());
    assert_eq!(
        store.insert(key("other", b"new"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );

    // The synthetic occupancy expires like real entries.
    assert!(!store.keyid_cap_reached(cap(keyid), NOW + 361).await.unwrap());
    assert_eq!(keyid_len_at(&store, keyid, NOW + 361), 0);
    assert_eq!(
        store.insert(key(keyid, b"new"), NOW + 800, NOW + 361).await.unwrap(),
        InsertOutcome::Inserted
    );
}

#[tokio::test]
async fn fill_replaces_previous_fill_and_respects_the_aggregate_cap() {
    let store = MemoryReplayStore::new(ReplayLimits::new(50, 80));
    assert_eq!(store.fill_keyid_to_cap("a", NOW + 100), 50);
    // Only 30 slots remain under the aggregate cap.
    assert_eq!(store.fill_keyid_to_cap("b", NOW + 100), 30);
    assert_eq!(len_at(&store, NOW), 80);
    assert_eq!(
        store.insert(key("c", b"n"), NOW + 100, NOW).await.unwrap(),
        InsertOutcome::AggregateCapReached
    );
    // Refilling "a" with a later expiry replaces its occupancy.
    assert_eq!(store.fill_keyid_to_cap("a", NOW + 500), 50);
    assert_eq!(len_at(&store, NOW), 80);
    assert_eq!(len_at(&store, NOW + 101), 50);
    assert!(store.keyid_cap_reached(cap("a"), NOW + 101).await.unwrap());
    assert!(!store.keyid_cap_reached(cap("a"), NOW + 501).await.unwrap());
    // An already-expired fill adds nothing (and clears the previous one).
    assert_eq!(store.fill_keyid_to_cap("a", NOW - 1), 0);
    assert_eq!(keyid_len_at(&store, "a", NOW), 0);
}

const SELLER_A: &str = "https://seller-a.example/mcp";
const SELLER_B: &str = "https://seller-b.example/mcp";

#[tokio::test]
async fn agents_sharing_a_keyid_have_their_own_cap_and_one_uniqueness() {
    let store = MemoryReplayStore::new(ReplayLimits::new(2, 100));
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, "key-1", b"a1"), NOW + 360, NOW)
            .await
            .unwrap(),
        Inserted
    );
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, "key-1", b"a2"), NOW + 360, NOW)
            .await
            .unwrap(),
        Inserted
    );
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, "key-1", b"a3"), NOW + 360, NOW)
            .await
            .unwrap(),
        KeyidCapReached
    );
    let cap_a = agent_key(SELLER_A, "key-1", b"").cap_key();
    let cap_b = agent_key(SELLER_B, "key-1", b"").cap_key();
    assert!(store.keyid_cap_reached(cap_a, NOW).await.unwrap());
    assert_eq!(store.keyid_cap_reached_now(cap_a, NOW), Some(Ok(true)));
    // Seller B, same kid: its own cap, untouched by A's flood.
    assert!(!store.keyid_cap_reached(cap_b, NOW).await.unwrap());
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, "key-1", b"b1"), NOW + 360, NOW)
            .await
            .unwrap(),
        Inserted
    );
    // Uniqueness ignores the agent: A's nonce is a replay for B (and for a
    // caller that does not know the agent), not a first sighting.
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, "key-1", b"a1"), NOW + 360, NOW)
            .await
            .unwrap(),
        Replayed
    );
    assert_eq!(
        store.insert(key("key-1", b"a1"), NOW + 360, NOW).await.unwrap(),
        Replayed
    );
    assert!(store.contains(agent_key(SELLER_B, "key-1", b"a2"), NOW).await.unwrap());
    // `agent: None` is a partition of its own.
    assert_eq!(
        store.insert(key("key-1", b"n1"), NOW + 360, NOW).await.unwrap(),
        Inserted
    );
    assert_eq!(store.cap_len(cap_a), 2);
    assert_eq!(store.cap_len(cap_b), 1);
    assert_eq!(store.cap_len(cap("key-1")), 1);
    assert_eq!(store.keyid_len("key-1"), 4);
    assert_eq!(store.len(), 4);
}

#[tokio::test]
async fn an_expired_entry_taken_over_by_another_agent_moves_its_count() {
    let store = MemoryReplayStore::new(ReplayLimits::new(1, 100));
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, "key-1", b"n"), NOW + 10, NOW)
            .await
            .unwrap(),
        Inserted
    );
    // After A's entry expired (not yet swept), B signs the same nonce: the
    // expired entry leaves A's count, the new one enters B's.
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, "key-1", b"n"), NOW + 400, NOW + 11)
            .await
            .unwrap(),
        Inserted
    );
    let cap_a = CapKey {
        agent: Some(SELLER_A),
        keyid: "key-1",
    };
    let cap_b = CapKey {
        agent: Some(SELLER_B),
        ..cap_a
    };
    assert_eq!(store.cap_len(cap_a), 0);
    assert_eq!(store.cap_len(cap_b), 1);
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, "key-1", b"m"), NOW + 400, NOW + 11)
            .await
            .unwrap(),
        Inserted
    );
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, "key-1", b"m2"), NOW + 400, NOW + 11)
            .await
            .unwrap(),
        KeyidCapReached
    );
    // Expiry frees each partition; the keyid's state is released.
    assert_eq!(store.purge_expired(NOW + 401), 2);
    assert_eq!(store.cap_len(cap_a), 0);
    assert_eq!(store.cap_len(cap_b), 0);
    assert!(store.is_empty());
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, "key-1", b"m2"), NOW + 900, NOW + 401)
            .await
            .unwrap(),
        Inserted
    );
}

#[tokio::test]
async fn fill_to_cap_fills_one_agent_partition_only() {
    let store = MemoryReplayStore::new(ReplayLimits::new(50, 1_000));
    let cap_a = CapKey {
        agent: Some(SELLER_A),
        keyid: "key-1",
    };
    assert_eq!(
        store
            .insert(agent_key(SELLER_A, "key-1", b"real"), NOW + 360, NOW)
            .await
            .unwrap(),
        Inserted
    );
    assert_eq!(store.fill_to_cap(cap_a, NOW + 100), 49);
    assert!(store.keyid_cap_reached(cap_a, NOW).await.unwrap());
    assert!(!store.keyid_cap_reached(cap("key-1"), NOW).await.unwrap());
    assert_eq!(
        store
            .insert(agent_key(SELLER_B, "key-1", b"b"), NOW + 360, NOW)
            .await
            .unwrap(),
        Inserted
    );
    assert_eq!(
        store.insert(key("key-1", b"none"), NOW + 360, NOW).await.unwrap(),
        Inserted
    );
    assert_eq!(len_at(&store, NOW), 52);
    // The synthetic occupancy expires with its partition's record.
    assert_eq!(store.purge_expired(NOW + 101), 49);
    assert_eq!(store.cap_len(cap_a), 1);
    assert!(!store.keyid_cap_reached(cap_a, NOW + 101).await.unwrap());
    // The per-keyid helper fills the `agent: None` partition.
    assert_eq!(store.fill_keyid_to_cap("key-1", NOW + 300), 49);
    assert!(store.keyid_cap_reached(cap("key-1"), NOW + 101).await.unwrap());
    assert!(!store.keyid_cap_reached(cap_a, NOW + 101).await.unwrap());
}

#[test]
fn parallel_agents_sharing_a_keyid_never_exceed_their_own_cap() {
    const THREADS: usize = 8;
    let store = Arc::new(MemoryReplayStore::new(ReplayLimits::new(40, 1_000)));
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            let barrier = Arc::clone(&barrier);
            // Even threads sign for A, odd for B, all under one kid.
            let agent = if t % 2 == 0 { SELLER_A } else { SELLER_B };
            std::thread::spawn(move || {
                barrier.wait();
                (0u32..30)
                    .filter(|i| {
                        let nonce = [t.to_be_bytes().as_slice(), &i.to_be_bytes()].concat();
                        block_on(store.insert(agent_key(agent, "key-1", &nonce), NOW + 360, NOW)).unwrap()
                            == InsertOutcome::Inserted
                    })
                    .count()
            })
        })
        .collect();
    let inserted: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(inserted, 80, "each agent fills exactly its own cap of 40");
    for agent in [SELLER_A, SELLER_B] {
        let partition = CapKey {
            agent: Some(agent),
            keyid: "key-1",
        };
        assert_eq!(store.cap_len(partition), 40);
    }
}

#[tokio::test]
async fn usable_as_shared_trait_object() {
    let store: Arc<dyn ReplayStore> = Arc::new(MemoryReplayStore::webhook());
    let shared = Arc::clone(&store);
    assert_eq!(
        store.insert(key("k", b"n"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        shared.insert(key("k", b"n"), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Replayed
    );
    // The blanket `impl ReplayStore for Arc<S>` also applies.
    let arc_store = Arc::new(MemoryReplayStore::webhook());
    assert!(!arc_store.contains(key("k", b"n"), NOW).await.unwrap());
}

#[test]
fn debug_shows_limits_not_entries() {
    let store = MemoryReplayStore::new(ReplayLimits::new(3, 4));
    let text = format!("{store:?}");
    assert!(text.contains("per_keyid_cap: 3"), "{text}");
}

#[test]
fn parallel_threads_inserting_one_key_yield_exactly_one_insert() {
    const THREADS: usize = 16;
    const ROUNDS: u32 = 200;
    let store = Arc::new(MemoryReplayStore::webhook());
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let store = Arc::clone(&store);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut inserted = 0;
                for round in 0..ROUNDS {
                    barrier.wait();
                    let nonce = round.to_be_bytes();
                    let outcome = block_on(store.insert(key("seller", &nonce), NOW + 360, NOW)).unwrap();
                    if outcome == InsertOutcome::Inserted {
                        inserted += 1;
                    } else {
                        assert_eq!(outcome, InsertOutcome::Replayed);
                    }
                }
                inserted
            })
        })
        .collect();
    let total: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, ROUNDS, "exactly one Inserted per nonce");
    assert_eq!(keyid_len_at(&store, "seller", NOW), ROUNDS as usize);
}

#[test]
fn parallel_inserts_never_exceed_the_keyid_cap() {
    const THREADS: usize = 8;
    let store = Arc::new(MemoryReplayStore::new(ReplayLimits::new(100, 1_000)));
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                (0u32..50)
                    .filter(|i| {
                        let nonce = [t.to_be_bytes().as_slice(), &i.to_be_bytes()].concat();
                        block_on(store.insert(key("abuser", &nonce), NOW + 360, NOW)).unwrap()
                            == InsertOutcome::Inserted
                    })
                    .count()
            })
        })
        .collect();
    let inserted: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(inserted, 100);
    assert_eq!(keyid_len_at(&store, "abuser", NOW), 100);
}
