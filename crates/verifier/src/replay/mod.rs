//! Transport replay dedup (checklist steps 9a, 12 and 13).
//!
//! Keys are `(keyid, nonce)` with the nonce as its decoded bytes, optionally
//! scoped by the canonical destination URL for receivers that cannot share
//! one cache across endpoints. Implementations must be fail-closed: when the
//! store cannot answer, return [`StoreError`] and the request is not accepted.

mod memory;

pub use memory::{MemoryReplayStore, ReplayLimits};

use async_trait::async_trait;
use std::fmt;

/// One replay-cache key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplayKey<'a> {
    /// The signature's `keyid`.
    pub keyid: &'a str,
    /// The decoded nonce bytes (so two spellings of one nonce collide).
    pub nonce: &'a [u8],
    /// The canonical destination `@target-uri`, when dedup is scoped per
    /// endpoint (spec option 2); `None` for a cache shared by every endpoint.
    pub scope: Option<&'a str>,
}

/// Result of the atomic insert-with-cap at step 13.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InsertOutcome {
    /// Inserted; first sighting.
    Inserted,
    /// Already present and not expired: a replay.
    Replayed,
    /// The keyid's entry cap is reached (reject with `*_rate_abuse`).
    KeyidCapReached,
    /// The aggregate cap is reached (reject with `*_rate_abuse`).
    AggregateCapReached,
}

/// The store could not answer; the verifier fails closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "replay store unavailable: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// A replay cache. Entries expire at `expires_at` (Unix seconds; the
/// verifier passes `signature expires + 60 s`); nothing is ever evicted
/// early to make room: at a cap, inserts are refused instead.
#[async_trait]
pub trait ReplayStore: Send + Sync {
    /// Step 9a: whether `keyid` has reached its entry cap (a cheap guard
    /// before cryptography; step 13 is the authoritative check).
    async fn keyid_cap_reached(&self, keyid: &str, now: i64) -> Result<bool, StoreError>;

    /// Step 12: whether `key` is present and unexpired.
    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError>;

    /// Step 13: insert `key` until `expires_at`, atomically with the
    /// replay, per-keyid and aggregate cap checks.
    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError>;

    /// [`Self::keyid_cap_reached`] answered without I/O (an in-process
    /// store); `None` (the default) sends the caller to the async call.
    fn keyid_cap_reached_now(&self, keyid: &str, now: i64) -> Option<Result<bool, StoreError>> {
        let _ = (keyid, now);
        None
    }

    /// [`Self::insert`] answered without I/O (an in-process store); `None`
    /// (the default) sends the caller to the async call. The verifier
    /// tries this first, so an in-process store costs no boxed future.
    fn insert_now(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Option<Result<InsertOutcome, StoreError>> {
        let _ = (key, expires_at, now);
        None
    }
}

#[async_trait]
impl<S: ReplayStore + ?Sized> ReplayStore for std::sync::Arc<S> {
    async fn keyid_cap_reached(&self, keyid: &str, now: i64) -> Result<bool, StoreError> {
        (**self).keyid_cap_reached(keyid, now).await
    }

    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError> {
        (**self).contains(key, now).await
    }

    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError> {
        (**self).insert(key, expires_at, now).await
    }

    fn keyid_cap_reached_now(&self, keyid: &str, now: i64) -> Option<Result<bool, StoreError>> {
        (**self).keyid_cap_reached_now(keyid, now)
    }

    fn insert_now(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Option<Result<InsertOutcome, StoreError>> {
        (**self).insert_now(key, expires_at, now)
    }
}
