//! The application idempotency keyspace: `(authenticated sender, idempotency_key)`.
//!
//! The user-facing documentation is on [`IdempotencyStore`] (re-exported at the
//! crate root).

use crate::notification::{self, MemoryNotifications};
use async_trait::async_trait;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// One idempotency key, scoped by the verified sender identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SenderKey<'a> {
    /// The authenticated sender identity: the signer's `agents[]` entry URL
    /// under RFC 9421, or the credential binding under legacy HMAC / Bearer.
    /// Never the `keyid` (a key rotation must not reopen applied events) and
    /// never a payload field.
    pub sender: &'a str,
    /// The payload's `idempotency_key`, byte for byte.
    pub idempotency_key: &'a str,
}

/// A digest of the canonical payload (for example SHA-256 over its RFC 8785
/// JCS form), bound to the key by the first claim. Backends store it
/// verbatim. Its length is checked once, here: a `Fingerprint` holds at
/// most [`Fingerprint::MAX_LEN`] bytes, so no store checks it again.
///
/// ```
/// use adcp_store::{Fingerprint, IdempotencyError};
///
/// let digest = [0x5a; 32]; // SHA-256 of the JCS payload
/// let fingerprint = Fingerprint::from_array(&digest); // length checked at compile time
/// assert_eq!(fingerprint.as_bytes(), &digest);
/// assert_eq!(Fingerprint::new(&digest), Ok(fingerprint));
/// assert_eq!(Fingerprint::new(&[0; 65]), Err(IdempotencyError::FingerprintTooLong));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint<'a>(&'a [u8]);

impl<'a> Fingerprint<'a> {
    /// The longest fingerprint a store accepts (a SHA-512 digest).
    pub const MAX_LEN: usize = 64;

    /// `bytes` as a fingerprint.
    ///
    /// # Errors
    ///
    /// [`IdempotencyError::FingerprintTooLong`] beyond [`Self::MAX_LEN`] bytes.
    pub const fn new(bytes: &'a [u8]) -> Result<Self, IdempotencyError> {
        if bytes.len() > Self::MAX_LEN {
            return Err(IdempotencyError::FingerprintTooLong);
        }
        Ok(Self(bytes))
    }

    /// A digest of a fixed size as a fingerprint: infallible, the size is
    /// checked at compile time (a digest longer than [`Self::MAX_LEN`]
    /// bytes does not build). Usable in constants.
    ///
    /// ```compile_fail,E0080
    /// let too_long = adcp_store::Fingerprint::from_array(&[0; 65]);
    /// ```
    #[must_use]
    pub const fn from_array<const N: usize>(digest: &'a [u8; N]) -> Self {
        const {
            assert!(
                N <= Fingerprint::MAX_LEN,
                "a fingerprint holds at most Fingerprint::MAX_LEN bytes"
            )
        };
        Self(digest)
    }

    /// The fingerprint's bytes, at most [`Self::MAX_LEN`] of them.
    #[must_use]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
}

impl fmt::Debug for Fingerprint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint(")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// One claim of a batch ([`IdempotencyStore::claim_many`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClaimRequest<'a> {
    /// The key to claim.
    pub key: SenderKey<'a>,
    /// The payload fingerprint to bind.
    pub fingerprint: Fingerprint<'a>,
}

/// The fencing token of one claim. It names the claim generation: a takeover
/// after lease expiry issues a new token and the old one stops working.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClaimToken(pub i64);

/// A successful claim: the caller owns the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Claim {
    /// Pass to [`IdempotencyStore::complete`] or [`IdempotencyStore::release`].
    pub token: ClaimToken,
    /// 1 for the first claim; greater after takeovers of expired leases
    /// (an earlier owner crashed or overran its lease).
    pub attempt: u32,
    /// Unix second after which another receiver may take the claim over.
    pub lease_expires_at: i64,
}

/// Result of [`IdempotencyStore::claim`], with the HTTP answer the spec asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClaimOutcome {
    /// The caller owns the event: apply side effects, then
    /// [`complete`](IdempotencyStore::complete).
    Claimed(Claim),
    /// Another owner holds an unexpired lease: respond `503` (retryable).
    InProgress {
        /// When the current lease expires.
        lease_expires_at: i64,
    },
    /// Already durably completed: respond `2xx` without reapplying.
    Completed,
    /// Same key, different payload fingerprint: respond `409`; the first
    /// binding is kept.
    Conflict,
    /// The sender holds [`IdempotencyConfig::per_sender_cap`] live records:
    /// respond `429`. Nothing was stored or evicted.
    SenderCapReached,
}

/// The state of a stored record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordState {
    /// Owned by a receiver applying side effects.
    Claimed {
        /// The current claim generation.
        token: ClaimToken,
        /// 1 for the first claim, more after takeovers.
        attempt: u32,
        /// When another receiver may take it over.
        lease_expires_at: i64,
    },
    /// Durably completed.
    Completed {
        /// The token of the claim that completed it.
        token: ClaimToken,
        /// When it was completed (Unix seconds).
        completed_at: i64,
    },
}

/// A live record, as returned by [`IdempotencyStore::lookup`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyRecord {
    /// Claimed or completed.
    pub state: RecordState,
    /// The fingerprint bound by the first claim.
    pub fingerprint: Vec<u8>,
    /// Unix second of the first claim.
    pub created_at: i64,
    /// Last Unix second at which the record is live (inclusive).
    pub expires_at: i64,
}

/// Idempotency store settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdempotencyConfig {
    /// How long a record lives after its latest claim or completion
    /// (seconds). At least [`MIN_WINDOW_SECS`](Self::MIN_WINDOW_SECS); set it
    /// to the sender's `delivery_retry_horizon_seconds` when that is longer.
    pub window_secs: i64,
    /// How long a claim is exclusive before another receiver may take it
    /// over (seconds). Longer than the slowest side effect you apply.
    pub lease_secs: i64,
    /// Most live records one sender may hold (the `429` bound).
    pub per_sender_cap: u64,
}

impl IdempotencyConfig {
    /// The spec's floor for the dedup window: 24 hours.
    pub const MIN_WINDOW_SECS: i64 = 86_400;
    /// Default lease: 60 seconds.
    pub const DEFAULT_LEASE_SECS: i64 = 60;
    /// Default per-sender cap: 1,000,000 live records.
    pub const DEFAULT_PER_SENDER_CAP: u64 = 1_000_000;

    /// Validated settings. Refuses a window under 24 h
    /// ([`ConfigError::WindowTooShort`]) and a lease that is not positive or
    /// longer than the window ([`ConfigError::InvalidLease`]).
    pub fn new(window_secs: i64, lease_secs: i64, per_sender_cap: u64) -> Result<Self, ConfigError> {
        let config = Self {
            window_secs,
            lease_secs,
            per_sender_cap,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks the invariants [`new`](Self::new) enforces (for settings built
    /// as a struct literal). Every backend calls it at construction.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.window_secs < Self::MIN_WINDOW_SECS {
            return Err(ConfigError::WindowTooShort {
                window_secs: self.window_secs,
            });
        }
        if self.lease_secs <= 0 || self.lease_secs > self.window_secs {
            return Err(ConfigError::InvalidLease {
                lease_secs: self.lease_secs,
            });
        }
        Ok(())
    }
}

impl Default for IdempotencyConfig {
    /// 24 h window, 60 s lease, 1,000,000 records per sender.
    fn default() -> Self {
        Self {
            window_secs: Self::MIN_WINDOW_SECS,
            lease_secs: Self::DEFAULT_LEASE_SECS,
            per_sender_cap: Self::DEFAULT_PER_SENDER_CAP,
        }
    }
}

/// Settings or a backend refused at construction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The dedup window is shorter than the spec's 24 h floor.
    #[error("idempotency window of {window_secs} s is shorter than the required 24 h")]
    WindowTooShort {
        /// The refused window.
        window_secs: i64,
    },
    /// The lease is not positive or exceeds the window.
    #[error("idempotency lease of {lease_secs} s must be positive and no longer than the window")]
    InvalidLease {
        /// The refused lease.
        lease_secs: i64,
    },
    /// A store URL that names no supported backend, or a malformed one.
    #[error("invalid store URL: {0}")]
    Url(String),
    /// The URL names a backend this build does not include: rebuild
    /// `adcp-store` with the named cargo feature.
    #[error("the {backend} store backend is not compiled in (enable the `{backend}` feature of adcp-store)")]
    FeatureDisabled {
        /// The backend, which is also the cargo feature's name.
        backend: &'static str,
    },
    /// The backend cannot hold the configured guarantees (for example a Redis
    /// server that may evict keys), or could not be opened.
    #[error("store backend refused: {0}")]
    Backend(String),
}

/// An idempotency operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdempotencyError {
    /// The backend could not answer (unreachable, timed out, full). Retryable:
    /// respond `503`; nothing was decided.
    #[error("idempotency store unavailable: {0}")]
    Unavailable(String),
    /// The token no longer owns the record: its lease expired and another
    /// receiver took the claim over, or it was released, or the record expired.
    #[error("claim token no longer owns the idempotency record")]
    NotOwner,
    /// The fingerprint is longer than [`Fingerprint::MAX_LEN`]: refused
    /// by [`Fingerprint::new`], before any store sees it.
    #[error("payload fingerprint longer than {} bytes", Fingerprint::MAX_LEN)]
    FingerprintTooLong,
    /// The `notification_id` is longer than [`MAX_NOTIFICATION_ID_LEN`]:
    /// refused rather than stored (or truncated into another id's record).
    /// Nothing was written; the claim is still held.
    #[error("notification_id longer than {MAX_NOTIFICATION_ID_LEN} bytes")]
    NotificationIdTooLong,
    /// The store does not implement the named operation (an
    /// [`IdempotencyStore`] written before it existed). Not retryable: the
    /// deployment needs a store that does, and guessing would hide it.
    #[error("idempotency store does not support {0}")]
    Unsupported(&'static str),
}

/// The longest `notification_id` a store records, in bytes (the schema's
/// bound; the receiver checks the id's pattern before).
pub const MAX_NOTIFICATION_ID_LEN: usize = 255;

impl IdempotencyError {
    /// Whether the caller should answer with a retryable status (`503`).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

/// A durable `(sender, idempotency_key)` keyspace.
///
/// The application idempotency keyspace: `(authenticated sender, idempotency_key)`.
///
/// AdCP receivers MUST apply each webhook event exactly once, deduplicating on
/// the verified sender identity and the payload's `idempotency_key` for at
/// least 24 hours, in storage that survives restarts and is shared by every
/// endpoint a sender can reach (`webhooks.mdx`, "Reliability").
///
/// # States
///
/// A record moves through these states; every transition is one atomic
/// backend operation:
///
/// ```text
///              claim (new key)                  complete(token)
///   absent ────────────────────▶ Claimed ─────────────────────────▶ Completed
///     ▲                          │  ▲  │                                 │
///     │      release(token)      │  │  │ claim after lease expiry        │
///     └──────────────────────────┘  └──┘ (takeover: attempt + 1,         │
///     ▲                                   new fencing token)             │
///     └────────────────────── window elapsed (expires_at < now) ─────────┘
/// ```
///
/// - **Claimed** — one receiver owns the event and is applying its side
///   effects. Claims of the same key answer [`ClaimOutcome::InProgress`]
///   (respond `503`, the sender retries) until the owner completes it.
/// - **Lease expiry (crash recovery)** — a claim carries a lease
///   ([`IdempotencyConfig::lease_secs`]). If the owner crashes, nothing is
///   lost: the record stays *Claimed*, and the first claim after
///   `lease_expires_at` takes it over ([`ClaimOutcome::Claimed`] with
///   [`Claim::attempt`] > 1 and a new [`ClaimToken`]). The old owner's token
///   is fenced off: its [`IdempotencyStore::complete`] fails with
///   [`IdempotencyError::NotOwner`]. Side effects must therefore be
///   idempotent or keyed on the event, or the lease long enough to cover
///   them.
/// - **Completed** — durably acknowledged; duplicates answer
///   [`ClaimOutcome::Completed`] (respond `2xx`, never `409`).
/// - **Conflict** — the same key with a different payload fingerprint answers
///   [`ClaimOutcome::Conflict`] (respond `409`) in every state; the first
///   binding is kept.
/// - **Expiry** — a record lives until `expires_at`, which is at least
///   [`IdempotencyConfig::window_secs`] after its latest claim or completion.
///   A window shorter than 24 h is refused at construction
///   ([`ConfigError::WindowTooShort`]).
/// - **Caps** — at most [`IdempotencyConfig::per_sender_cap`] live records per
///   sender; at the cap, new keys answer [`ClaimOutcome::SenderCapReached`]
///   (respond `429`). Live records are never evicted.
///
/// # Notification identity
///
/// AdCP 3.2 state-shaped notifications also carry a `notification_id`,
/// stable across re-emissions of one logical notification under fresh
/// `idempotency_key`s (`webhooks.mdx`, "At-least-once delivery"). The
/// stores keep, per `(sender, notification_id)`, the **first**
/// `idempotency_key` completed with it
/// ([`IdempotencyStore::complete_with_notification`], read back with
/// [`IdempotencyStore::notification_origin`]): a delivery whose
/// notification already has another origin is a re-emission, not a
/// transport retry. The record is written in the same atomic step as the
/// completion (a released or fenced-off claim records nothing), lives
/// [`IdempotencyConfig::window_secs`] after its latest completion (like a
/// dedup record), keeps its first key while live, and counts toward no cap.
///
/// # Fail closed
///
/// When the backend cannot answer (unreachable, timed out, disk full) every
/// operation returns [`IdempotencyError::Unavailable`], which is retryable
/// (respond `503`). A store never reports an event as new or as a duplicate by
/// guess.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// The settings the store enforces.
    fn config(&self) -> IdempotencyConfig;

    /// Atomically claims `key` for the payload `fingerprint` at `now` (Unix
    /// seconds), before any side effect. Exactly one of many concurrent
    /// claims of an absent key wins.
    async fn claim(
        &self,
        key: SenderKey<'_>,
        fingerprint: Fingerprint<'_>,
        now: i64,
    ) -> Result<ClaimOutcome, IdempotencyError>;

    /// Claims several keys at `now`, each exactly as [`claim`](Self::claim)
    /// would, in as few round trips as the backend allows (Redis: one
    /// pipeline). Returns one result per request, in order.
    ///
    /// Each claim is atomic on its own; the batch is not a transaction.
    /// An error is per request: when the backend fails mid-batch, the
    /// requests it may or may not have applied answer
    /// [`IdempotencyError::Unavailable`] (respond `503`). Such a claim, if it
    /// was applied, is recovered like a crashed owner's: the sender's retry
    /// sees [`ClaimOutcome::InProgress`] until the lease expires, then takes
    /// it over. The default implementation claims one request after another.
    async fn claim_many(&self, requests: &[ClaimRequest<'_>], now: i64) -> Vec<Result<ClaimOutcome, IdempotencyError>> {
        let mut outcomes = Vec::with_capacity(requests.len());
        for request in requests {
            outcomes.push(self.claim(request.key, request.fingerprint, now).await);
        }
        outcomes
    }

    /// Marks the claim `token` completed, durably, and extends the record to
    /// `now + window`. Fails with [`IdempotencyError::NotOwner`] when the
    /// token was fenced off; completing twice with the owning token is a no-op.
    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError>;

    /// [`complete`](Self::complete), and with `Some(notification_id)` in
    /// the same atomic step (one transaction, one script) the notification
    /// record `(sender, notification_id) → key.idempotency_key`, inserted
    /// only if no live record holds another key (a re-emission keeps the
    /// first key and extends the record to `now + window`). A fenced-off
    /// token records nothing; completing again with the owning token
    /// records (it is idempotent). `None` is exactly `complete`.
    ///
    /// Fails with [`IdempotencyError::NotificationIdTooLong`] before any
    /// write when the id exceeds [`MAX_NOTIFICATION_ID_LEN`]. The default
    /// implementation, for stores written before notification records,
    /// completes `None` and refuses `Some` with
    /// [`IdempotencyError::Unsupported`] (it cannot be atomic).
    async fn complete_with_notification(
        &self,
        key: SenderKey<'_>,
        token: ClaimToken,
        notification_id: Option<&str>,
        now: i64,
    ) -> Result<(), IdempotencyError> {
        match notification_id {
            None => self.complete(key, token, now).await,
            Some(_) => Err(IdempotencyError::Unsupported("notification records")),
        }
    }

    /// The first `idempotency_key` completed with `notification_id` from
    /// `sender`, if its record is live at `now`; `None` when the
    /// notification is unknown or its record expired. Fails with
    /// [`IdempotencyError::NotificationIdTooLong`] for an id no store could
    /// hold, and (default implementation) with
    /// [`IdempotencyError::Unsupported`]: never a guessed `None`.
    async fn notification_origin(
        &self,
        sender: &str,
        notification_id: &str,
        now: i64,
    ) -> Result<Option<String>, IdempotencyError> {
        let _ = (sender, notification_id, now);
        Err(IdempotencyError::Unsupported("notification records"))
    }

    /// Gives up the claim `token` (side effects were not applied), so that
    /// the sender's next retry can claim at once. Fails with
    /// [`IdempotencyError::NotOwner`] when the token was fenced off or the
    /// record is already completed.
    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError>;

    /// The live record for `key` at `now`, if any.
    async fn lookup(&self, key: SenderKey<'_>, now: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError>;

    /// Live records held by `sender` at `now`.
    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError>;
}

#[async_trait]
impl<S: IdempotencyStore + ?Sized> IdempotencyStore for Arc<S> {
    fn config(&self) -> IdempotencyConfig {
        (**self).config()
    }

    async fn claim(
        &self,
        key: SenderKey<'_>,
        fingerprint: Fingerprint<'_>,
        now: i64,
    ) -> Result<ClaimOutcome, IdempotencyError> {
        (**self).claim(key, fingerprint, now).await
    }

    async fn claim_many(&self, requests: &[ClaimRequest<'_>], now: i64) -> Vec<Result<ClaimOutcome, IdempotencyError>> {
        (**self).claim_many(requests, now).await
    }

    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        (**self).complete(key, token, now).await
    }

    async fn complete_with_notification(
        &self,
        key: SenderKey<'_>,
        token: ClaimToken,
        notification_id: Option<&str>,
        now: i64,
    ) -> Result<(), IdempotencyError> {
        (**self)
            .complete_with_notification(key, token, notification_id, now)
            .await
    }

    async fn notification_origin(
        &self,
        sender: &str,
        notification_id: &str,
        now: i64,
    ) -> Result<Option<String>, IdempotencyError> {
        (**self).notification_origin(sender, notification_id, now).await
    }

    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        (**self).release(key, token, now).await
    }

    async fn lookup(&self, key: SenderKey<'_>, now: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError> {
        (**self).lookup(key, now).await
    }

    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError> {
        (**self).sender_len(sender, now).await
    }
}

/// The pure decision of a claim against the current live record, shared by
/// backends that read-then-write inside one transaction or lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaimDecision {
    /// Insert a fresh record (generation 1).
    Insert,
    /// Take over an expired lease: write generation `token`, `attempt`.
    TakeOver { token: i64, attempt: u32 },
    /// Answer without writing.
    Answer(ClaimOutcome),
}

/// Decides a claim: `existing` is the live record (`expires_at >= now`) or
/// `None`; `sender_live` the sender's live records.
pub(crate) fn decide_claim(
    existing: Option<(&IdempotencyRecord, bool)>,
    sender_live: u64,
    config: &IdempotencyConfig,
    now: i64,
) -> ClaimDecision {
    match existing {
        None if sender_live >= config.per_sender_cap => ClaimDecision::Answer(ClaimOutcome::SenderCapReached),
        None => ClaimDecision::Insert,
        Some((_, false)) => ClaimDecision::Answer(ClaimOutcome::Conflict),
        Some((record, true)) => match record.state {
            RecordState::Completed { .. } => ClaimDecision::Answer(ClaimOutcome::Completed),
            RecordState::Claimed { lease_expires_at, .. } if now <= lease_expires_at => {
                ClaimDecision::Answer(ClaimOutcome::InProgress { lease_expires_at })
            }
            RecordState::Claimed { token, attempt, .. } => ClaimDecision::TakeOver {
                token: token.0.saturating_add(1),
                attempt: attempt.saturating_add(1),
            },
        },
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// What a claim answers, for a backend that reads the live record and then
/// writes inside one transaction ([`plan_claim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaimStep {
    /// Answer without writing.
    Answer(ClaimOutcome),
    /// Write the claim, then answer [`ClaimWrite::outcome`].
    Write(ClaimWrite),
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// A claim to write: a fresh record (generation 1, attempt 1) or the
/// takeover of an expired lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClaimWrite {
    /// The claim handed out; its lease ends at `now + lease`.
    pub(crate) claim: Claim,
    /// `now + window`: a fresh record's expiry, the least a taken-over
    /// record keeps.
    pub(crate) expires_at: i64,
    /// `true` to take over the existing record, `false` to insert one.
    pub(crate) takeover: bool,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl ClaimWrite {
    /// The answer once the write is applied.
    pub(crate) fn outcome(&self) -> ClaimOutcome {
        ClaimOutcome::Claimed(self.claim)
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// [`decide_claim`] against the stored `existing` record (compared with the
/// claim's `fingerprint`), with the lease and expiry of the claim to write.
pub(crate) fn plan_claim(
    existing: Option<&IdempotencyRecord>,
    fingerprint: &[u8],
    sender_live: u64,
    config: &IdempotencyConfig,
    now: i64,
) -> ClaimStep {
    let decision = decide_claim(
        existing.map(|r| (r, r.fingerprint == fingerprint)),
        sender_live,
        config,
        now,
    );
    let (token, attempt, takeover) = match decision {
        ClaimDecision::Answer(outcome) => return ClaimStep::Answer(outcome),
        ClaimDecision::Insert => (1, 1, false),
        ClaimDecision::TakeOver { token, attempt } => (token, attempt, true),
    };
    ClaimStep::Write(ClaimWrite {
        claim: Claim {
            token: ClaimToken(token),
            attempt,
            lease_expires_at: now.saturating_add(config.lease_secs),
        },
        expires_at: now.saturating_add(config.window_secs),
        takeover,
    })
}

/// A stored record from its columns, in the order the SQL backends select
/// them: `fingerprint`, `completed`, then the integers `token` (2),
/// `attempt` (3), `lease_expires_at` (4), `completed_at` (5), `created_at`
/// (6) and `expires_at` (7), read by `int`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn record_from_columns<E>(
    fingerprint: Vec<u8>,
    completed: bool,
    int: impl Fn(usize) -> Result<i64, E>,
) -> Result<IdempotencyRecord, E> {
    let token = ClaimToken(int(2)?);
    let state = if completed {
        RecordState::Completed {
            token,
            completed_at: int(5)?,
        }
    } else {
        RecordState::Claimed {
            token,
            attempt: u32::try_from(int(3)?).unwrap_or(u32::MAX),
            lease_expires_at: int(4)?,
        }
    };
    Ok(IdempotencyRecord {
        state,
        fingerprint,
        created_at: int(6)?,
        expires_at: int(7)?,
    })
}

/// The records of one sender, by idempotency key.
type SenderRecords = HashMap<String, IdempotencyRecord>;

/// The in-memory keyspace: one table per sender, so a claim costs one hash
/// lookup (plus, at the sender's cap, one pass over that sender's records to
/// drop expired ones before refusing).
#[derive(Debug, Default)]
struct MemoryState {
    senders: HashMap<String, SenderRecords>,
    /// Claims since the last full sweep of expired records.
    writes_since_sweep: usize,
    /// Records held, live or expired-but-unswept.
    held: usize,
    /// Notification records, swept with the dedup records.
    notifications: MemoryNotifications,
}

impl MemoryState {
    /// The live record of `key` at `now`.
    fn live(&self, key: SenderKey<'_>, now: i64) -> Option<&IdempotencyRecord> {
        self.senders
            .get(key.sender)
            .and_then(|records| records.get(key.idempotency_key))
            .filter(|r| r.expires_at >= now)
    }

    fn live_mut(&mut self, key: SenderKey<'_>, now: i64) -> Option<&mut IdempotencyRecord> {
        self.senders
            .get_mut(key.sender)
            .and_then(|records| records.get_mut(key.idempotency_key))
            .filter(|r| r.expires_at >= now)
    }

    /// Drops `sender`'s expired records; returns its live count.
    fn sweep_sender(&mut self, sender: &str, now: i64) -> u64 {
        let Some(records) = self.senders.get_mut(sender) else {
            return 0;
        };
        let before = records.len();
        records.retain(|_, r| r.expires_at >= now);
        let live = records.len();
        self.held = self.held.saturating_sub(before - live);
        live as u64
    }

    /// Drops every expired record once as many claims as records were made
    /// since the last sweep (amortized O(1) per claim), so memory follows
    /// the live records.
    fn maybe_sweep_all(&mut self, now: i64) {
        self.writes_since_sweep += 1;
        if self.writes_since_sweep < self.held.max(1_024) {
            return;
        }
        self.sweep_all(now);
    }

    /// Drops every expired record and notification record; returns how
    /// many.
    fn sweep_all(&mut self, now: i64) -> usize {
        self.writes_since_sweep = 0;
        let notes = self.notifications.sweep(now);
        let before: usize = self.senders.values().map(HashMap::len).sum();
        let mut held = 0;
        self.senders.retain(|_, records| {
            records.retain(|_, r| r.expires_at >= now);
            held += records.len();
            !records.is_empty()
        });
        self.held = held;
        before.saturating_sub(held) + notes
    }

    fn remove(&mut self, key: SenderKey<'_>) {
        if let Some(records) = self.senders.get_mut(key.sender) {
            if records.remove(key.idempotency_key).is_some() {
                self.held = self.held.saturating_sub(1);
            }
            if records.is_empty() {
                self.senders.remove(key.sender);
            }
        }
    }
}

/// An in-process [`IdempotencyStore`]: the reference semantics and a test
/// double. **Not conformant for production** — the spec requires the keyspace
/// to survive restarts and be shared across endpoints; use the SQLite,
/// Redis or PostgreSQL backend.
#[derive(Debug)]
pub struct MemoryIdempotencyStore {
    config: IdempotencyConfig,
    state: Mutex<MemoryState>,
}

impl MemoryIdempotencyStore {
    /// An empty store; refuses invalid settings.
    pub fn new(config: IdempotencyConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            config,
            state: Mutex::new(MemoryState::default()),
        })
    }

    /// Deletes every record and notification record expired at `now`
    /// and returns how many were removed. Optional: claims sweep expired
    /// records anyway (all of them once as many claims as records were
    /// made); an idle receiver can call it from a timer to give memory
    /// back.
    ///
    /// # Errors
    ///
    /// [`IdempotencyError::Unavailable`] when the store's lock is
    /// poisoned.
    pub fn purge_expired(&self, now: i64) -> Result<u64, IdempotencyError> {
        Ok(self.lock()?.sweep_all(now) as u64)
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, MemoryState>, IdempotencyError> {
        self.state
            .lock()
            .map_err(|_| IdempotencyError::Unavailable("in-memory idempotency store lock poisoned".to_owned()))
    }
}

#[async_trait]
impl IdempotencyStore for MemoryIdempotencyStore {
    fn config(&self) -> IdempotencyConfig {
        self.config
    }

    async fn claim(
        &self,
        key: SenderKey<'_>,
        fingerprint: Fingerprint<'_>,
        now: i64,
    ) -> Result<ClaimOutcome, IdempotencyError> {
        let mut state = self.lock()?;
        state.maybe_sweep_all(now);
        let existing = state.live(key, now).map(|r| (r, r.fingerprint == fingerprint.0));
        let sender_live = match existing {
            Some(_) => 0,
            None => {
                let held = state.senders.get(key.sender).map_or(0, HashMap::len) as u64;
                if held >= self.config.per_sender_cap {
                    state.sweep_sender(key.sender, now)
                } else {
                    held
                }
            }
        };
        let existing = state.live(key, now).map(|r| (r, r.fingerprint == fingerprint.0));
        let lease_expires_at = now.saturating_add(self.config.lease_secs);
        let expires_at = now.saturating_add(self.config.window_secs);
        match decide_claim(existing, sender_live, &self.config, now) {
            ClaimDecision::Answer(outcome) => Ok(outcome),
            ClaimDecision::Insert => {
                let claim = Claim {
                    token: ClaimToken(1),
                    attempt: 1,
                    lease_expires_at,
                };
                let record = IdempotencyRecord {
                    state: RecordState::Claimed {
                        token: claim.token,
                        attempt: 1,
                        lease_expires_at,
                    },
                    fingerprint: fingerprint.0.to_vec(),
                    created_at: now,
                    expires_at,
                };
                let replaced = state
                    .senders
                    .entry(key.sender.to_owned())
                    .or_default()
                    .insert(key.idempotency_key.to_owned(), record);
                if replaced.is_none() {
                    state.held += 1;
                }
                Ok(ClaimOutcome::Claimed(claim))
            }
            ClaimDecision::TakeOver { token, attempt } => {
                let claim = Claim {
                    token: ClaimToken(token),
                    attempt,
                    lease_expires_at,
                };
                if let Some(record) = state.live_mut(key, now) {
                    record.state = RecordState::Claimed {
                        token: claim.token,
                        attempt,
                        lease_expires_at,
                    };
                    record.expires_at = record.expires_at.max(expires_at);
                }
                Ok(ClaimOutcome::Claimed(claim))
            }
        }
    }

    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        self.complete_with_notification(key, token, None, now).await
    }

    /// Under the one lock, so no reader sees the completion without its
    /// notification record.
    async fn complete_with_notification(
        &self,
        key: SenderKey<'_>,
        token: ClaimToken,
        notification_id: Option<&str>,
        now: i64,
    ) -> Result<(), IdempotencyError> {
        notification::check_optional(notification_id)?;
        let until = now.saturating_add(self.config.window_secs);
        let mut state = self.lock()?;
        let Some(record) = state.live_mut(key, now) else {
            return Err(IdempotencyError::NotOwner);
        };
        match record.state {
            RecordState::Claimed { token: held, .. } if held == token => {
                record.state = RecordState::Completed {
                    token,
                    completed_at: now,
                };
                record.expires_at = record.expires_at.max(until);
            }
            RecordState::Completed { token: held, .. } if held == token => {}
            _ => return Err(IdempotencyError::NotOwner),
        }
        if let Some(notification_id) = notification_id {
            state
                .notifications
                .record(key.sender, notification_id, key.idempotency_key, until, now);
        }
        Ok(())
    }

    async fn notification_origin(
        &self,
        sender: &str,
        notification_id: &str,
        now: i64,
    ) -> Result<Option<String>, IdempotencyError> {
        notification::check(notification_id)?;
        Ok(self.lock()?.notifications.origin(sender, notification_id, now))
    }

    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        let mut state = self.lock()?;
        match state.live(key, now).map(|r| r.state) {
            Some(RecordState::Claimed { token: held, .. }) if held == token => {
                state.remove(key);
                Ok(())
            }
            _ => Err(IdempotencyError::NotOwner),
        }
    }

    async fn lookup(&self, key: SenderKey<'_>, now: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError> {
        let state = self.lock()?;
        Ok(state.live(key, now).cloned())
    }

    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError> {
        let state = self.lock()?;
        Ok(state
            .senders
            .get(sender)
            .map_or(0, |records| records.values().filter(|r| r.expires_at >= now).count()) as u64)
    }
}

/// Maps several sender identities of one logical seller to one keyspace
/// (for example its legacy HMAC credential binding and its RFC 9421 agent
/// URL during a migration), so that a duplicate across schemes still
/// dedupes, and a re-emission across schemes is still recognized (the
/// notification records share the keyspace too). Identities without an
/// alias pass through unchanged.
///
/// ```
/// use adcp_store::{
///     ClaimOutcome, Fingerprint, IdempotencyConfig, IdempotencyStore, MemoryIdempotencyStore, SenderAliases,
///     SenderKey,
/// };
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = SenderAliases::new(MemoryIdempotencyStore::new(IdempotencyConfig::default())?)
///     .alias("hmac:seller-credential-7", "https://seller.example/mcp");
/// let fp = Fingerprint::from_array(&[7; 32]);
/// let hmac = SenderKey { sender: "hmac:seller-credential-7", idempotency_key: "whk_1" };
/// let rfc9421 = SenderKey { sender: "https://seller.example/mcp", idempotency_key: "whk_1" };
/// let ClaimOutcome::Claimed(claim) = store.claim(hmac, fp, 0).await? else { unreachable!() };
/// store.complete(hmac, claim.token, 1).await?;
/// assert_eq!(store.claim(rfc9421, fp, 2).await?, ClaimOutcome::Completed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct SenderAliases<S> {
    inner: S,
    aliases: HashMap<String, String>,
}

impl<S> SenderAliases<S> {
    /// Wraps `inner` with no aliases.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            aliases: HashMap::new(),
        }
    }

    /// Maps `identity` to the keyspace of `canonical`.
    #[must_use]
    pub fn alias(mut self, identity: impl Into<String>, canonical: impl Into<String>) -> Self {
        self.aliases.insert(identity.into(), canonical.into());
        self
    }

    /// The keyspace `sender` maps to.
    #[must_use]
    pub fn keyspace<'a>(&'a self, sender: &'a str) -> &'a str {
        self.aliases.get(sender).map_or(sender, String::as_str)
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn map<'a>(&'a self, key: SenderKey<'a>) -> SenderKey<'a> {
        SenderKey {
            sender: self.keyspace(key.sender),
            idempotency_key: key.idempotency_key,
        }
    }
}

#[async_trait]
impl<S: IdempotencyStore> IdempotencyStore for SenderAliases<S> {
    fn config(&self) -> IdempotencyConfig {
        self.inner.config()
    }

    async fn claim(
        &self,
        key: SenderKey<'_>,
        fingerprint: Fingerprint<'_>,
        now: i64,
    ) -> Result<ClaimOutcome, IdempotencyError> {
        self.inner.claim(self.map(key), fingerprint, now).await
    }

    async fn claim_many(&self, requests: &[ClaimRequest<'_>], now: i64) -> Vec<Result<ClaimOutcome, IdempotencyError>> {
        let mapped: Vec<ClaimRequest<'_>> = requests
            .iter()
            .map(|r| ClaimRequest {
                key: self.map(r.key),
                fingerprint: r.fingerprint,
            })
            .collect();
        self.inner.claim_many(&mapped, now).await
    }

    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        self.inner.complete(self.map(key), token, now).await
    }

    async fn complete_with_notification(
        &self,
        key: SenderKey<'_>,
        token: ClaimToken,
        notification_id: Option<&str>,
        now: i64,
    ) -> Result<(), IdempotencyError> {
        self.inner
            .complete_with_notification(self.map(key), token, notification_id, now)
            .await
    }

    async fn notification_origin(
        &self,
        sender: &str,
        notification_id: &str,
        now: i64,
    ) -> Result<Option<String>, IdempotencyError> {
        self.inner
            .notification_origin(self.keyspace(sender), notification_id, now)
            .await
    }

    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        self.inner.release(self.map(key), token, now).await
    }

    async fn lookup(&self, key: SenderKey<'_>, now: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError> {
        self.inner.lookup(self.map(key), now).await
    }

    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError> {
        self.inner.sender_len(self.keyspace(sender), now).await
    }
}
