//! Transport replay dedup (checklist steps 9a, 12 and 13).
//!
//! Keys are `(keyid, nonce)` with the nonce as its decoded bytes, optionally
//! scoped by the canonical destination URL for receivers that cannot share
//! one cache across endpoints. Implementations must be fail-closed: when the
//! store cannot answer, return [`StoreError`] and the request is not accepted.
//!
//! # Uniqueness and caps are keyed differently
//!
//! Several sellers ("agents") configured on one verifier may publish the
//! same `kid` (a kid is unique within one JWKS only). Replay *uniqueness*
//! stays on `(scope, keyid, nonce)` whoever signed, so a captured request
//! cannot be replayed once per seller sharing its kid. The per-keyid *cap*
//! is counted per [`CapKey`], `(agent, keyid)`, when the verifier knows the
//! signer's agent ([`ReplayKey::agent`]), so one seller flooding under a
//! shared kid cannot exhaust another seller's cap. `agent: None` is a
//! partition of its own: a verifier that never passes an agent counts per
//! keyid exactly as before. The aggregate cap counts every entry.

mod durability;
mod memory;

pub use durability::Durability;
pub use memory::{MemoryReplayStore, ReplayLimits};

use async_trait::async_trait;
use std::fmt;

/// One replay-cache key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplayKey<'a> {
    /// The agent URL of the verified (or candidate) signer, when the
    /// verifier knows it; `None` counts the entry under the keyid alone
    /// (single-seller deployments, callers that do not know the agent).
    ///
    /// It only partitions the per-keyid cap (see [`CapKey`]); it is never
    /// part of replay uniqueness: `(scope, keyid, nonce)` inserted by one
    /// agent is [`InsertOutcome::Replayed`] for every other agent too.
    pub agent: Option<&'a str>,
    /// The signature's `keyid`.
    pub keyid: &'a str,
    /// The decoded nonce bytes (so two spellings of one nonce collide).
    pub nonce: &'a [u8],
    /// The canonical destination `@target-uri`, when dedup is scoped per
    /// endpoint (spec option 2); `None` for a cache shared by every endpoint.
    pub scope: Option<&'a str>,
}

impl<'a> ReplayKey<'a> {
    /// The per-keyid cap partition this entry counts toward:
    /// `(agent, keyid)`.
    #[must_use]
    pub const fn cap_key(&self) -> CapKey<'a> {
        CapKey {
            agent: self.agent,
            keyid: self.keyid,
        }
    }
}

/// The partition the per-keyid cap ([`ReplayLimits::per_keyid_cap`]) is
/// counted in: live entries inserted with the same `(agent, keyid)`.
///
/// `agent: None` is its own partition (not the sum over agents), so a
/// verifier that never knows the agent counts per keyid as before. A
/// caller should pass the same agent to the step 9a check and the step 13
/// insert of one request, or the cheap guard and the authoritative check
/// look at different counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CapKey<'a> {
    /// The signer's agent URL, or `None` to count per keyid alone.
    pub agent: Option<&'a str>,
    /// The signature's `keyid`.
    pub keyid: &'a str,
}

/// Result of the atomic insert-with-cap at step 13.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InsertOutcome {
    /// Inserted; first sighting.
    Inserted,
    /// Already present and not expired: a replay.
    Replayed,
    /// The entry cap of the key's `(agent, keyid)` ([`ReplayKey::cap_key`])
    /// is reached (reject with `*_rate_abuse`).
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
    /// Step 9a: whether the `(agent, keyid)` partition `cap` has reached its
    /// entry cap (a cheap guard before cryptography; step 13 is the
    /// authoritative check).
    async fn keyid_cap_reached(&self, cap: CapKey<'_>, now: i64) -> Result<bool, StoreError>;

    /// Step 12: whether `key` is present and unexpired.
    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError>;

    /// Step 13: insert `key` until `expires_at`, atomically with the
    /// replay check (on `(scope, keyid, nonce)`, whatever the agent), the
    /// per-keyid cap check (on [`ReplayKey::cap_key`]) and the aggregate
    /// cap check.
    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError>;

    /// [`Self::insert`], answered possibly before the entry is durable,
    /// with the [`Durability`] that tells when it is. A group-committing
    /// store answers as soon as the insert ran in its open transaction, so
    /// the caller's next operation on the same store can share the commit
    /// instead of waiting for one of its own. The outcome is the one
    /// [`Self::insert`] would have given; the caller must wait for the
    /// durability of an [`InsertOutcome::Inserted`] before accepting the
    /// request (see [`Durability`]).
    ///
    /// The default awaits [`Self::insert`] and returns
    /// [`Durability::durable`].
    async fn insert_early(
        &self,
        key: ReplayKey<'_>,
        expires_at: i64,
        now: i64,
    ) -> Result<(InsertOutcome, Durability), StoreError> {
        let outcome = self.insert(key, expires_at, now).await?;
        Ok((outcome, Durability::durable()))
    }

    /// [`Self::keyid_cap_reached`] answered without I/O (an in-process
    /// store, or a durable one answering from what it observed itself);
    /// `None` (the default) sends the caller to the async call. `true`
    /// must be as exact as the async answer, while `false` may come from a
    /// process-local view that misses other processes' entries: the check
    /// is a guard before cryptography, and [`Self::insert`] enforces the
    /// cap exactly.
    fn keyid_cap_reached_now(&self, cap: CapKey<'_>, now: i64) -> Option<Result<bool, StoreError>> {
        let _ = (cap, now);
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
    async fn keyid_cap_reached(&self, cap: CapKey<'_>, now: i64) -> Result<bool, StoreError> {
        (**self).keyid_cap_reached(cap, now).await
    }

    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError> {
        (**self).contains(key, now).await
    }

    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError> {
        (**self).insert(key, expires_at, now).await
    }

    async fn insert_early(
        &self,
        key: ReplayKey<'_>,
        expires_at: i64,
        now: i64,
    ) -> Result<(InsertOutcome, Durability), StoreError> {
        (**self).insert_early(key, expires_at, now).await
    }

    fn keyid_cap_reached_now(&self, cap: CapKey<'_>, now: i64) -> Option<Result<bool, StoreError>> {
        (**self).keyid_cap_reached_now(cap, now)
    }

    fn insert_now(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Option<Result<InsertOutcome, StoreError>> {
        (**self).insert_now(key, expires_at, now)
    }
}
