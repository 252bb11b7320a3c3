//! Both dedup duties in process memory: [`MemoryStore`], what `memory:`
//! opens.
//!
//! Not conformant for production receivers: AdCP requires the idempotency
//! keyspace to survive restarts for the whole window, and a process
//! restart forgets every claim. It exists for benchmarks (the gateway's
//! comparison against a server that verifies nothing), tests and demos,
//! where the backend's own cost would hide what is being measured.
//! [`open`](crate::open) logs a warning when it opens one.

use crate::idempotency::{
    ClaimOutcome, ClaimRequest, ClaimToken, ConfigError, Fingerprint, IdempotencyConfig, IdempotencyError,
    IdempotencyRecord, IdempotencyStore, MemoryIdempotencyStore, SenderKey,
};
use adcp_verify::{CapKey, InsertOutcome, MemoryReplayStore, ReplayKey, ReplayLimits, ReplayStore, StoreError};
use async_trait::async_trait;

/// The in-memory replay cache and idempotency store behind one value.
///
/// ```
/// use adcp_store::MemoryStore;
/// use adcp_store::{ClaimOutcome, Fingerprint, IdempotencyConfig, IdempotencyStore, SenderKey};
/// use adcp_verify::{InsertOutcome, ReplayKey, ReplayLimits, ReplayStore};
///
/// let store = MemoryStore::new(ReplayLimits::webhook(), IdempotencyConfig::default())?;
/// let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let nonce = ReplayKey { agent: None, keyid: "k1", nonce: b"0123456789abcdef", scope: None };
///     assert_eq!(store.insert(nonce, 1_000_360, 1_000_000).await?, InsertOutcome::Inserted);
///     let event = SenderKey { sender: "https://seller.example/mcp", idempotency_key: "whk_1" };
///     assert!(matches!(store.claim(event, Fingerprint::from_array(&[1; 32]), 1_000_000).await?, ClaimOutcome::Claimed(_)));
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    replay: MemoryReplayStore,
    idempotency: MemoryIdempotencyStore,
}

impl MemoryStore {
    /// An empty store with these caps and idempotency settings.
    ///
    /// # Errors
    ///
    /// The idempotency settings are invalid (see [`IdempotencyConfig::validate`]).
    pub fn new(replay_limits: ReplayLimits, idempotency: IdempotencyConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            replay: MemoryReplayStore::new(replay_limits),
            idempotency: MemoryIdempotencyStore::new(idempotency)?,
        })
    }
}

impl MemoryStore {
    /// Deletes every replay entry, idempotency record and notification
    /// record expired at `now` and returns how many were removed.
    /// Optional: both halves sweep expired entries as they are written;
    /// an idle process can call it from a timer to give memory back.
    ///
    /// # Errors
    ///
    /// The idempotency half's lock is poisoned.
    pub fn purge_expired(&self, now: i64) -> Result<u64, StoreError> {
        let replay = self.replay.purge_expired(now) as u64;
        let idempotency = self
            .idempotency
            .purge_expired(now)
            .map_err(|e| StoreError(e.to_string()))?;
        Ok(replay + idempotency)
    }
}

#[async_trait]
impl crate::PurgeExpired for MemoryStore {
    async fn purge_expired(&self, now: i64) -> Result<u64, StoreError> {
        MemoryStore::purge_expired(self, now)
    }
}

#[async_trait]
impl ReplayStore for MemoryStore {
    async fn keyid_cap_reached(&self, cap: CapKey<'_>, now: i64) -> Result<bool, StoreError> {
        self.replay.keyid_cap_reached(cap, now).await
    }

    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError> {
        self.replay.contains(key, now).await
    }

    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError> {
        self.replay.insert(key, expires_at, now).await
    }

    fn keyid_cap_reached_now(&self, cap: CapKey<'_>, now: i64) -> Option<Result<bool, StoreError>> {
        self.replay.keyid_cap_reached_now(cap, now)
    }

    fn insert_now(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Option<Result<InsertOutcome, StoreError>> {
        self.replay.insert_now(key, expires_at, now)
    }
}

#[async_trait]
impl IdempotencyStore for MemoryStore {
    fn config(&self) -> IdempotencyConfig {
        self.idempotency.config()
    }

    async fn claim(
        &self,
        key: SenderKey<'_>,
        fingerprint: Fingerprint<'_>,
        now: i64,
    ) -> Result<ClaimOutcome, IdempotencyError> {
        self.idempotency.claim(key, fingerprint, now).await
    }

    async fn claim_many(&self, requests: &[ClaimRequest<'_>], now: i64) -> Vec<Result<ClaimOutcome, IdempotencyError>> {
        self.idempotency.claim_many(requests, now).await
    }

    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        self.idempotency.complete(key, token, now).await
    }

    async fn complete_with_notification(
        &self,
        key: SenderKey<'_>,
        token: ClaimToken,
        notification_id: Option<&str>,
        now: i64,
    ) -> Result<(), IdempotencyError> {
        self.idempotency
            .complete_with_notification(key, token, notification_id, now)
            .await
    }

    async fn notification_origin(
        &self,
        sender: &str,
        notification_id: &str,
        now: i64,
    ) -> Result<Option<String>, IdempotencyError> {
        self.idempotency.notification_origin(sender, notification_id, now).await
    }

    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        self.idempotency.release(key, token, now).await
    }

    async fn lookup(&self, key: SenderKey<'_>, now: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError> {
        self.idempotency.lookup(key, now).await
    }

    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError> {
        self.idempotency.sender_len(sender, now).await
    }
}
