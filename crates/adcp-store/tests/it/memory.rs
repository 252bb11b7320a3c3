//! The contract suite against the in-memory reference stores.

use adcp_store::testing as contract;
use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
use adcp_verify::{MemoryReplayStore, ReplayLimits};
use async_trait::async_trait;
use std::sync::Arc;

struct Memory;

#[async_trait]
impl contract::Backend for Memory {
    type Replay = MemoryReplayStore;
    type Idem = MemoryIdempotencyStore;

    async fn new() -> Self {
        Memory
    }

    async fn replay(&self, limits: ReplayLimits) -> Arc<MemoryReplayStore> {
        Arc::new(MemoryReplayStore::new(limits))
    }

    async fn idem(&self, config: IdempotencyConfig) -> Arc<MemoryIdempotencyStore> {
        Arc::new(MemoryIdempotencyStore::new(config).unwrap())
    }

    async fn cleanup(&self) {}
}

contract::contract_tests!(Memory);

#[test]
fn config_refuses_a_window_under_24_hours() {
    use adcp_store::ConfigError;
    assert_eq!(
        IdempotencyConfig::new(86_399, 60, 10),
        Err(ConfigError::WindowTooShort { window_secs: 86_399 })
    );
    assert!(matches!(
        IdempotencyConfig::new(86_400, 0, 10),
        Err(ConfigError::InvalidLease { .. })
    ));
    assert!(matches!(
        IdempotencyConfig::new(86_400, 86_401, 10),
        Err(ConfigError::InvalidLease { .. })
    ));
    let short = IdempotencyConfig {
        window_secs: 3_600,
        ..IdempotencyConfig::default()
    };
    assert!(MemoryIdempotencyStore::new(short).is_err());
}

/// `MemoryStore::purge_expired` (what `open_with_purge` hands out for
/// `memory:`) deletes every expired replay entry, record and notification
/// record, whatever was written since, and keeps the live ones.
#[tokio::test]
async fn memory_store_purge_deletes_expired_entries_only() {
    use adcp_store::{ClaimOutcome, Fingerprint, IdempotencyStore, MemoryStore, SenderKey, StoreUrl};
    use adcp_verify::{InsertOutcome, ReplayKey, ReplayStore};
    const NOW: i64 = 1_776_520_800;
    const LATER: i64 = NOW + 2 * 86_400;
    let store = MemoryStore::new(ReplayLimits::webhook(), IdempotencyConfig::default()).unwrap();
    let nonce = |n: &'static [u8]| ReplayKey {
        agent: None,
        keyid: "k",
        nonce: n,
        scope: None,
    };
    let event = |key: &'static str| SenderKey {
        sender: "https://seller.example/mcp",
        idempotency_key: key,
    };
    for (at, n, key, note) in [
        (NOW, b"old-nonce-000001".as_slice(), "whk_old", "ntf_old"),
        (LATER, b"new-nonce-000001".as_slice(), "whk_new", "ntf_new"),
    ] {
        assert_eq!(
            store.insert(nonce(n), at + 360, at).await.unwrap(),
            InsertOutcome::Inserted
        );
        let ClaimOutcome::Claimed(claim) = store
            .claim(event(key), Fingerprint::from_array(&[1; 32]), at)
            .await
            .unwrap()
        else {
            panic!("expected a claim");
        };
        store
            .complete_with_notification(event(key), claim.token, Some(note), at)
            .await
            .unwrap();
    }
    // The old record and notification record, and the old replay entry
    // unless the later insert's own sweep took it first.
    let purged = store.purge_expired(LATER).unwrap();
    assert!((2..=3).contains(&purged), "{purged}");
    assert!(!store.contains(nonce(b"old-nonce-000001"), NOW).await.unwrap());
    assert!(store.lookup(event("whk_old"), NOW).await.unwrap().is_none());
    assert!(store
        .notification_origin("https://seller.example/mcp", "ntf_old", NOW)
        .await
        .unwrap()
        .is_none());
    assert!(store.contains(nonce(b"new-nonce-000001"), LATER).await.unwrap());
    assert!(store.lookup(event("whk_new"), LATER).await.unwrap().is_some());
    assert_eq!(store.purge_expired(LATER).unwrap(), 0);
    // `open_with_purge` hands out a purge for `memory:`.
    let opened = adcp_store::open_with_purge(&StoreUrl::Memory, adcp_store::StoreOptions::default())
        .await
        .unwrap();
    assert_eq!(opened.purge.unwrap().purge_expired(NOW).await.unwrap(), 0);
}
