//! [`Outbox`]: the front door. It turns a [`NewEvent`] into a stored row
//! (fingerprint, origin, coalescing window, horizon) and answers the
//! queries; the [`Dispatcher`](crate::Dispatcher) delivers.

use crate::activity::ActivityRecord;
use crate::clock::{Clock, SystemClock};
use crate::coalesce::CoalescingPolicy;
use crate::crypto::Keyring;
use crate::dispatch::HandoffSlot;
use crate::error::OutboxError;
use crate::event::{origin_of, NewEvent};
use crate::id::EventId;
use crate::schedule::ms;
use crate::store::{
    lease_token, ActivityQuery, Claimed, Enqueued, EventView, Finish, Insert, ListFilter, OutboxStats, OutboxStore,
};
use adcp_sign::{OsRandom, RandomSource};
use adcp_webhook::RetryPolicy;
use std::sync::Arc;
use std::time::Duration;

/// The shortest retention of terminal events and activity records: the
/// spec keeps `webhook_activity` at least 30 days.
pub const MIN_RETENTION: Duration = Duration::from_secs(30 * 86_400);

/// Settings shared by the enqueue side and the workers.
#[derive(Clone)]
pub struct OutboxConfig {
    /// Backoff, horizon (86,400–604,800 s, measured from the first
    /// attempt; from enqueue while never attempted), attempt timeout.
    pub retry: RetryPolicy,
    /// Coalescing windows per type.
    pub coalescing: CoalescingPolicy,
    /// How long terminal events and activity records are kept (at least
    /// [`MIN_RETENTION`]).
    pub retention: Duration,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// Randomness for ids and jitter.
    pub random: Arc<dyn RandomSource>,
    /// Encryption at rest of bodies and legacy credentials (off: `None`).
    pub encryption: Option<Keyring>,
}

impl std::fmt::Debug for OutboxConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxConfig")
            .field("retry", &self.retry)
            .field("coalescing", &self.coalescing)
            .field("retention", &self.retention)
            .field("encryption", &self.encryption)
            .finish_non_exhaustive()
    }
}

impl Default for OutboxConfig {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            coalescing: CoalescingPolicy::default(),
            retention: MIN_RETENTION,
            clock: Arc::new(SystemClock),
            random: Arc::new(OsRandom),
            encryption: None,
        }
    }
}

impl OutboxConfig {
    /// The shortest horizon the spec allows: 24 hours.
    pub const MIN_HORIZON: Duration = Duration::from_secs(86_400);

    /// Checks the settings against the spec's bounds.
    ///
    /// # Errors
    ///
    /// [`OutboxError::Config`].
    pub fn validate(&self) -> Result<(), OutboxError> {
        let horizon = self.retry.horizon();
        if horizon < Self::MIN_HORIZON || horizon > RetryPolicy::MAX_HORIZON {
            return Err(OutboxError::Config(format!(
                "the retry horizon must be 86400-604800 s, not {} s",
                horizon.as_secs()
            )));
        }
        if self.retention < MIN_RETENTION {
            return Err(OutboxError::Config(
                "retention must be at least 30 days (the webhook_activity window)".to_owned(),
            ));
        }
        Ok(())
    }
}

/// The durable outbox: enqueue events (idempotently, optionally in the
/// application's own transaction), and read them back. Cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    store: Arc<dyn OutboxStore>,
    config: OutboxConfig,
    handoff: Arc<HandoffSlot>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Outbox {
    /// An outbox on `store`.
    ///
    /// # Errors
    ///
    /// [`OutboxError::Config`] for settings outside the spec's bounds.
    pub fn new(store: Arc<dyn OutboxStore>, config: OutboxConfig) -> Result<Self, OutboxError> {
        config.validate()?;
        Ok(Self {
            store,
            config,
            handoff: Arc::default(),
        })
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn OutboxStore> {
        &self.store
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &OutboxConfig {
        &self.config
    }

    /// Where a dispatcher running on this outbox takes events enqueued here.
    pub(crate) fn handoff(&self) -> &HandoffSlot {
        &self.handoff
    }

    /// The row `event` is stored as: JCS fingerprint, origin, coalescing
    /// window, horizon, a fresh id. For enqueueing in an application's own
    /// transaction (`enqueue_sqlite`, and `enqueue_postgres` with the
    /// `postgres` feature).
    ///
    /// # Errors
    ///
    /// `invalid_destination`, `coalescing_window_too_long`,
    /// `encryption_error`, `store_unavailable` (no randomness for the id).
    pub fn prepare(&self, event: NewEvent) -> Result<Insert, OutboxError> {
        let now = self.config.clock.now_ms();
        let body = event.event.body().as_bytes().to_vec();
        let origin = origin_of(event.destination.url())?;
        let window = self.config.coalescing.window(
            event.notification_type.as_deref(),
            event.coalescing_key.is_some(),
            event.coalescing_window,
            event.destination.coalescing_opt_in(),
        )?;
        let id = EventId::generate(now, self.config.random.as_ref())
            .map_err(|_| OutboxError::Unavailable("randomness unavailable".to_owned()))?;
        let (auth_scheme, auth_credentials) = match event.destination.legacy() {
            Some((scheme, credentials)) => {
                let stored = match &self.config.encryption {
                    Some(ring) => ring.seal_text(id.as_str(), "credentials", credentials)?,
                    None => credentials.to_owned(),
                };
                (Some(scheme.to_owned()), Some(stored.into_bytes()))
            }
            None => (None, None),
        };
        let body_size = body.len() as u64;
        let (body, key_id) = match &self.config.encryption {
            Some(ring) => (
                ring.seal(id.as_str(), "body", &body)?,
                Some(ring.current_id().to_owned()),
            ),
            None => (body, None),
        };
        Ok(Insert {
            id,
            signing_scope: event.signing_scope,
            idempotency_key: event.event.idempotency_key().as_str().to_owned(),
            fingerprint: event.fingerprint,
            body_size,
            body,
            key_id,
            notification_type: event.notification_type,
            notification_id: event.notification_id,
            subscriber_id: event.subscriber_id,
            sequence_number: event.sequence_number,
            channel_id: event.channel_id,
            principal: event.principal,
            resources: event.resources,
            url: event.destination.url().to_owned(),
            origin,
            operation_id: event.destination.operation_id().map(str::to_owned),
            auth_scheme,
            auth_credentials,
            coalescing_key: event.coalescing_key,
            coalescing_window_ms: ms(window),
            enqueued_at_ms: now,
            horizon_ms: ms(self.config.retry.horizon()),
        })
    }

    /// Enqueues `event` in its own transaction: durable when it returns.
    /// The same signing scope, key and JCS payload again returns the first
    /// id (`duplicate: true`).
    ///
    /// # Errors
    ///
    /// The refusals of [`prepare`](Self::prepare); `idempotency_key_conflict`
    /// for a key bound to another payload; `idempotency_key_other_destination`;
    /// `store_unavailable` (nothing enqueued).
    pub async fn enqueue(&self, event: NewEvent) -> Result<Enqueued, OutboxError> {
        let row = self.prepare(event)?;
        let reservation = match (row.coalescing_window_ms, self.handoff.current()) {
            (0, Some(handoff)) if self.store.leases_at_enqueue() => {
                handoff.reserve(&row.origin, row.enqueued_at_ms, lease_token())
            }
            _ => None,
        };
        let Some(reservation) = reservation else {
            return self.store.enqueue(row).await;
        };
        // A dispatcher in this process has a free slot for the origin: the
        // event is inserted leased for its first attempt and handed over.
        // In a task of its own, so that a caller that goes away (a relay
        // client hanging up) cannot leave a committed lease without its
        // worker.
        let store = Arc::clone(&self.store);
        let clock = Arc::clone(&self.config.clock);
        let handed = tokio::spawn(async move {
            let (done, claimed) = store.enqueue_leased(row, reservation.grant().clone()).await?;
            if let Some(claimed) = claimed {
                if let Some(orphan) = reservation.start(claimed) {
                    release(store.as_ref(), orphan, clock.now_ms()).await;
                }
            }
            Ok(done)
        });
        handed
            .await
            .map_err(|e| OutboxError::Unavailable(format!("enqueue task failed: {e}")))?
    }

    /// One event.
    ///
    /// # Errors
    ///
    /// `store_unavailable`.
    pub async fn get(&self, id: &EventId) -> Result<Option<EventView>, OutboxError> {
        self.store.get(id).await
    }

    /// Events, newest first.
    ///
    /// # Errors
    ///
    /// `store_unavailable`.
    pub async fn list(&self, filter: &ListFilter) -> Result<Vec<EventView>, OutboxError> {
        self.store.list(filter).await
    }

    /// Sends a refused or expired event again (same key, same bytes) if
    /// its horizon has not passed.
    ///
    /// # Errors
    ///
    /// `not_found`, `not_redrivable`, `store_unavailable`.
    pub async fn redrive(&self, id: &EventId) -> Result<EventView, OutboxError> {
        self.store.redrive(id, self.config.clock.now_ms()).await
    }

    /// `webhook_activity` records, newest first.
    ///
    /// # Errors
    ///
    /// `store_unavailable`.
    pub async fn activity(&self, query: &ActivityQuery) -> Result<Vec<ActivityRecord>, OutboxError> {
        self.store.activity(query).await
    }

    /// Deletes what the retention no longer keeps.
    ///
    /// # Errors
    ///
    /// `store_unavailable`.
    pub async fn purge(&self) -> Result<u64, OutboxError> {
        self.store
            .purge(self.config.clock.now_ms(), ms(self.config.retention))
            .await
    }

    /// Queue figures.
    ///
    /// # Errors
    ///
    /// `store_unavailable`.
    pub async fn stats(&self) -> Result<OutboxStats, OutboxError> {
        self.store.stats(self.config.clock.now_ms()).await
    }
}

/// Puts back an event leased for a dispatcher that stopped before taking
/// it: pending, due now, its attempt undone (a failure leaves the lease to
/// expire, after which any worker retries it).
async fn release(store: &dyn OutboxStore, c: Claimed, now: i64) {
    if let Err(e) = store.finish(vec![Finish::untried(c, now)]).await {
        tracing::warn!(target: crate::DISPATCH_TRACING_TARGET, error = %e, "releasing an event its dispatcher never took failed; it is retried when its lease expires");
    }
}
