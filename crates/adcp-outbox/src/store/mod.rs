//! The outbox's storage: one trait, [`OutboxStore`], and its backends.
//! Every state change of an event (enqueue, claim, attempt, outcome,
//! breaker) is one transaction of the store, so a crash between two of
//! them loses nothing and applies nothing twice.

mod open;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod schema;

pub use open::open_store;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

use crate::activity::{ActivityRecord, ActivityStatus};
use crate::breaker::Health;
use crate::clock::rfc3339_ms;
use crate::error::OutboxError;
use crate::event::OutboxDestination;
use crate::id::EventId;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Notify;

/// The state of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventState {
    /// Waiting for its next attempt (or its coalescing window, or its
    /// destination's breaker).
    Pending,
    /// Leased by a worker; an attempt is under way.
    InFlight,
    /// The receiver answered `2xx`.
    Delivered,
    /// Stopped for good: `401` with a `webhook_*` code, `409`, a
    /// destination refused at attempt time, or suppressed by the
    /// pre-attempt hook. The reason says which.
    Refused,
    /// The retry horizon (or the attempt cap) passed without a delivery.
    Expired,
    /// Replaced by a newer event inside its coalescing window; never sent.
    Superseded,
}

impl EventState {
    /// Every state.
    pub const ALL: [Self; 6] = [
        Self::Pending,
        Self::InFlight,
        Self::Delivered,
        Self::Refused,
        Self::Expired,
        Self::Superseded,
    ];

    /// `pending`, `in_flight`, `delivered`, `refused`, `expired`, `superseded`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InFlight => "in_flight",
            Self::Delivered => "delivered",
            Self::Refused => "refused",
            Self::Expired => "expired",
            Self::Superseded => "superseded",
        }
    }

    /// Reads the spelling of [`as_str`](Self::as_str).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Whether nothing will change it any more (redrive aside).
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        !matches!(self, Self::Pending | Self::InFlight)
    }
}

/// One row to insert: everything the outbox stores about a new event. The
/// column each field fills is documented in `docs/relay.md` (the insert
/// contract for applications enqueueing from other database libraries).
#[derive(Debug, Clone)]
pub struct Insert {
    pub(crate) id: EventId,
    pub(crate) signing_scope: String,
    pub(crate) idempotency_key: String,
    pub(crate) fingerprint: [u8; 32],
    pub(crate) body: Vec<u8>,
    pub(crate) body_size: u64,
    pub(crate) key_id: Option<String>,
    pub(crate) notification_type: Option<String>,
    pub(crate) notification_id: Option<String>,
    pub(crate) subscriber_id: Option<String>,
    pub(crate) sequence_number: Option<i64>,
    pub(crate) channel_id: Option<String>,
    pub(crate) principal: Option<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) url: String,
    pub(crate) origin: String,
    pub(crate) operation_id: Option<String>,
    pub(crate) auth_scheme: Option<String>,
    pub(crate) auth_credentials: Option<Vec<u8>>,
    pub(crate) coalescing_key: Option<String>,
    pub(crate) coalescing_window_ms: i64,
    pub(crate) enqueued_at_ms: i64,
    pub(crate) horizon_ms: i64,
}

impl Insert {
    /// The id the event gets.
    #[must_use]
    pub fn id(&self) -> EventId {
        self.id.clone()
    }

    /// Its `idempotency_key`.
    #[must_use]
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }
}

/// What an enqueue did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueued {
    /// The event's id.
    pub id: EventId,
    /// Its `idempotency_key`.
    pub idempotency_key: String,
    /// `true` when the same key and payload were already enqueued (the id
    /// is the first enqueue's; nothing new was stored).
    pub duplicate: bool,
    /// The pending event this one replaced inside its coalescing window.
    pub superseded: Option<EventId>,
}

/// What a worker asks of [`OutboxStore::claim`].
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    /// Now (Unix ms).
    pub now_ms: i64,
    /// The lease each claimed event gets.
    pub lease_ms: i64,
    /// Who claims (for operators: `host:pid:n`).
    pub owner: String,
    /// Most events to claim.
    pub limit: usize,
    /// Most attempts in flight per origin in this process.
    pub per_origin_cap: usize,
    /// This process's attempts in flight per origin.
    pub in_flight: HashMap<String, usize>,
}

/// A lease offered with an enqueue: when the event can be attempted at
/// once (no coalescing hold, its origin's breaker closed), the store
/// inserts it already leased for its first attempt, so the enqueueing
/// process's dispatcher makes the attempt without a claim of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseGrant {
    /// The fencing token.
    pub token: i64,
    /// Who holds it (as in [`ClaimRequest::owner`]).
    pub owner: String,
    /// When it expires (Unix ms).
    pub until_ms: i64,
}

/// One event leased to a worker for one attempt.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The event.
    pub id: EventId,
    /// The fencing token: only the holder of the current lease can finish it.
    pub lease_token: i64,
    /// The attempt number (1 for the first).
    pub attempt: u32,
    /// The exact body bytes.
    pub body: Vec<u8>,
    /// Its `idempotency_key`.
    pub idempotency_key: String,
    /// Where it goes.
    pub destination: OutboxDestination,
    /// The origin of the destination.
    pub origin: String,
    /// Which key signs it.
    pub signing_scope: String,
    /// Its notification type, when it has one (then the attempt has a
    /// pending activity record).
    pub notification_type: Option<String>,
    /// Its `notification_id`.
    pub notification_id: Option<String>,
    /// Its `subscriber_id`.
    pub subscriber_id: Option<String>,
    /// Its principal.
    pub principal: Option<String>,
    /// The end of its horizon (Unix ms).
    pub deadline_ms: i64,
    /// Whether this attempt is its origin's breaker probe.
    pub probe: bool,
    /// When it was enqueued (Unix ms).
    pub enqueued_at_ms: i64,
}

/// How one leased event ends its attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Delivered.
    Delivered,
    /// Retry at this time (Unix ms).
    RetryAt(i64),
    /// Terminal refusal, with the reason.
    Refused(String),
    /// Horizon or attempt cap passed, with the reason.
    Expired(String),
    /// Not attempted after all (no signing key yet, signer unavailable):
    /// back to pending at this time, the attempt and its pending record
    /// undone.
    Release(i64),
    /// Not attempted, and never will be (suppressed by the pre-attempt
    /// hook, a destination the SSRF rules refuse): refused with this
    /// reason, the attempt and its pending record undone.
    Withdrawn(String),
}

/// What one attempt observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptFacts {
    /// The record's status.
    pub status: ActivityStatus,
    /// The answer's status.
    pub http_status: Option<u16>,
    /// Request to answer.
    pub response_time_ms: Option<i64>,
    /// Why it failed (clipped to 500 characters when stored).
    pub error_message: Option<String>,
    /// When it ended (Unix ms).
    pub completed_at_ms: i64,
    /// What it says about the destination's breaker.
    pub health: Health,
}

/// One lease to finish.
#[derive(Debug, Clone)]
pub struct Finish {
    /// The event.
    pub id: EventId,
    /// The lease's fencing token.
    pub lease_token: i64,
    /// The event's origin (its breaker).
    pub origin: String,
    /// The outcome.
    pub outcome: Outcome,
    /// What the attempt observed (`None` with [`Outcome::Release`] and
    /// [`Outcome::Withdrawn`]).
    pub facts: Option<AttemptFacts>,
    /// Now (Unix ms).
    pub now_ms: i64,
}

impl Finish {
    /// `c`'s lease given back untried: pending again, due at `now_ms`, the
    /// attempt undone.
    pub(crate) fn untried(c: Claimed, now_ms: i64) -> Self {
        Self {
            id: c.id,
            lease_token: c.lease_token,
            origin: c.origin,
            outcome: Outcome::Release(now_ms),
            facts: None,
            now_ms,
        }
    }
}

/// One event as operators and the relay API see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventView {
    /// Its id.
    pub id: EventId,
    /// Its `idempotency_key`.
    pub idempotency_key: String,
    /// Its state.
    pub state: EventState,
    /// Attempts made.
    pub attempts: u32,
    /// Its notification type.
    pub notification_type: Option<String>,
    /// Its `notification_id`.
    pub notification_id: Option<String>,
    /// Its `subscriber_id`.
    pub subscriber_id: Option<String>,
    /// Its signing scope.
    pub signing_scope: String,
    /// Its principal.
    pub principal: Option<String>,
    /// Its destination URL, redacted.
    pub url: String,
    /// When it was enqueued (Unix ms).
    pub enqueued_at_ms: i64,
    /// When it was first attempted.
    pub first_attempt_at_ms: Option<i64>,
    /// When it is next due (pending only).
    pub next_attempt_at_ms: Option<i64>,
    /// The end of its horizon.
    pub deadline_ms: i64,
    /// The last attempt's status.
    pub last_status: Option<ActivityStatus>,
    /// The last answer's status.
    pub last_http_status: Option<u16>,
    /// The last attempt's error.
    pub last_error: Option<String>,
    /// Why it is refused or expired.
    pub reason: Option<String>,
    /// The event that replaced it.
    pub superseded_by: Option<EventId>,
    /// When it became terminal.
    pub finished_at_ms: Option<i64>,
}

impl EventView {
    /// The relay API's JSON (`GET /v1/events/{id}`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let time = |t: Option<i64>| t.map_or(Value::Null, |t| rfc3339_ms(t).into());
        let text = |t: &Option<String>| t.clone().map_or(Value::Null, Value::from);
        let mut o = Map::new();
        o.insert("id".into(), self.id.as_str().into());
        o.insert("idempotency_key".into(), self.idempotency_key.clone().into());
        o.insert("state".into(), self.state.as_str().into());
        o.insert("attempts".into(), self.attempts.into());
        o.insert("notification_type".into(), text(&self.notification_type));
        o.insert("notification_id".into(), text(&self.notification_id));
        o.insert("subscriber_id".into(), text(&self.subscriber_id));
        o.insert("signing_scope".into(), self.signing_scope.clone().into());
        o.insert("principal".into(), text(&self.principal));
        o.insert("url".into(), self.url.clone().into());
        o.insert("enqueued_at".into(), time(Some(self.enqueued_at_ms)));
        o.insert("first_attempt_at".into(), time(self.first_attempt_at_ms));
        o.insert("next_attempt_at".into(), time(self.next_attempt_at_ms));
        o.insert("retry_deadline".into(), time(Some(self.deadline_ms)));
        o.insert(
            "last_status".into(),
            self.last_status.map_or(Value::Null, |s| s.as_str().into()),
        );
        o.insert(
            "last_http_status".into(),
            self.last_http_status.map_or(Value::Null, Value::from),
        );
        o.insert("last_error".into(), text(&self.last_error));
        o.insert("reason".into(), text(&self.reason));
        o.insert(
            "superseded_by".into(),
            self.superseded_by.as_ref().map_or(Value::Null, |id| id.as_str().into()),
        );
        o.insert("finished_at".into(), time(self.finished_at_ms));
        Value::Object(o)
    }
}

/// Which events [`OutboxStore::list`] returns, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only this state.
    pub state: Option<EventState>,
    /// Only events older than this id (paging).
    pub before: Option<EventId>,
    /// Most events (1–1000; default 50).
    pub limit: usize,
}

/// Which records [`OutboxStore::activity`] returns, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActivitySelector {
    /// The records of one principal's events, optionally only those
    /// naming one resource.
    Principal {
        /// The principal.
        principal: String,
        /// The resource (`media_buy:mb_1`, …).
        resource: Option<String>,
    },
    /// The records of events sent to this URL (as registered).
    Url(String),
}

/// A `webhook_activity` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityQuery {
    /// What to select.
    pub selector: ActivitySelector,
    /// Most records, 1–200.
    pub limit: u32,
}

/// The most records one activity query returns.
pub const MAX_ACTIVITY_LIMIT: u32 = 200;
/// The records one activity query returns by default.
pub const DEFAULT_ACTIVITY_LIMIT: u32 = 50;

/// Queue figures for metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboxStats {
    /// Events per state.
    pub by_state: Vec<(EventState, u64)>,
    /// When the oldest pending event was enqueued (Unix ms).
    pub oldest_pending_enqueued_ms: Option<i64>,
    /// Origins whose breaker is open.
    pub open_breakers: u64,
}

impl OutboxStats {
    /// The count of one state.
    #[must_use]
    pub fn count(&self, state: EventState) -> u64 {
        self.by_state.iter().find(|(s, _)| *s == state).map_or(0, |(_, n)| *n)
    }
}

/// One reporting stream as stored (see [`crate::reporting`]): the
/// registration and progress are the scheduler's own encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRow {
    pub(crate) id: String,
    pub(crate) registration: Vec<u8>,
    pub(crate) state: Vec<u8>,
    pub(crate) version: i64,
    pub(crate) next_check_at: Option<i64>,
}

/// A compare-and-set of one stream: applied only while its version is
/// still `expected_version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamUpdate {
    pub(crate) id: String,
    pub(crate) expected_version: i64,
    pub(crate) registration: Option<Vec<u8>>,
    pub(crate) state: Vec<u8>,
    pub(crate) next_check_at: Option<i64>,
    pub(crate) now_ms: i64,
}

/// One channel as stored (see [`crate::channels`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelRow {
    pub(crate) id: String,
    pub(crate) kind: String,
    pub(crate) registration: Vec<u8>,
    pub(crate) fingerprint: Vec<u8>,
    pub(crate) proven: Option<Vec<u8>>,
    pub(crate) state: String,
    pub(crate) version: i64,
}

/// A write of one channel and what it does to the channel's events, all
/// in one transaction, fenced by the channel's version.
#[derive(Debug, Clone)]
pub struct ChannelWrite {
    /// The channel's new values; its `version` is the expected one.
    pub(crate) row: ChannelRow,
    /// Create it (only if absent) instead of updating it.
    pub(crate) create: bool,
    /// Withdraw every pending event of the channel (state `refused`,
    /// this reason): nothing is kept for later.
    pub(crate) withdraw: Option<String>,
    /// Make the channel's held (coalescing) events due now.
    pub(crate) flush_held: bool,
    /// Events never attempted, each replaced (`superseded`) by its rebuild,
    /// if it is still pending and unattempted.
    pub(crate) replace: Vec<(EventId, Insert)>,
    pub(crate) now_ms: i64,
}

/// A channel's pending event never attempted: what its rebuild for a new
/// registration needs.
#[derive(Debug, Clone)]
pub struct Unattempted {
    pub(crate) id: EventId,
    pub(crate) body: Vec<u8>,
    pub(crate) key_id: Option<String>,
    pub(crate) signing_scope: String,
    pub(crate) principal: Option<String>,
    pub(crate) coalescing_key: Option<String>,
    pub(crate) next_attempt_at: i64,
}

/// A store the outbox runs on: the SQLite and PostgreSQL backends of this
/// crate. Every method is one transaction; a failure changes nothing and
/// says [`OutboxError::Unavailable`].
#[async_trait::async_trait]
pub trait OutboxStore: Send + Sync + 'static {
    /// Enqueues one event: idempotent on `(signing_scope,
    /// idempotency_key)` with the same JCS payload and destination;
    /// supersedes a pending, never-attempted event with the same
    /// destination, type and coalescing key inside its window.
    async fn enqueue(&self, row: Insert) -> Result<Enqueued, OutboxError>;
    /// Whether [`enqueue_leased`](Self::enqueue_leased) may lease (a store
    /// that never does spares its callers the reservation of a slot).
    fn leases_at_enqueue(&self) -> bool {
        false
    }
    /// [`enqueue`](Self::enqueue), and when the new event can be attempted
    /// at once (not a duplicate, not held by a coalescing window, its
    /// origin's breaker closed), inserted already leased by `lease` for its
    /// first attempt (with its pending activity record), and returned for
    /// it. A store that does not offer this enqueues and returns `None`.
    async fn enqueue_leased(&self, row: Insert, lease: LeaseGrant) -> Result<(Enqueued, Option<Claimed>), OutboxError> {
        let _ = lease;
        Ok((self.enqueue(row).await?, None))
    }
    /// Leases due events: first returns expired leases to pending
    /// (closing their pending records as abandoned), skips origins whose
    /// breaker is open (one probe per due interval) and origins at their
    /// in-flight cap, increments the attempt, writes the pending activity
    /// record.
    async fn claim(&self, request: ClaimRequest) -> Result<Vec<Claimed>, OutboxError>;
    /// Finishes leases, fenced by their tokens: `false` for a lease that
    /// is no longer the current one (nothing changed for it).
    async fn finish(&self, batch: Vec<Finish>) -> Result<Vec<bool>, OutboxError>;
    /// Expires pending events whose horizon has passed, attempted or not.
    async fn expire_due(&self, now_ms: i64) -> Result<u64, OutboxError>;
    /// When something next becomes due (a pending event of an origin not
    /// blocked, a breaker's probe, an expiring lease), if anything.
    async fn next_due(&self, now_ms: i64) -> Result<Option<i64>, OutboxError>;
    /// One event.
    async fn get(&self, id: &EventId) -> Result<Option<EventView>, OutboxError>;
    /// Events, newest first.
    async fn list(&self, filter: &ListFilter) -> Result<Vec<EventView>, OutboxError>;
    /// Sends a refused or expired event again, same key and bytes, if its
    /// horizon has not passed.
    async fn redrive(&self, id: &EventId, now_ms: i64) -> Result<EventView, OutboxError>;
    /// Activity records, newest first.
    async fn activity(&self, query: &ActivityQuery) -> Result<Vec<ActivityRecord>, OutboxError>;
    /// Deletes terminal events and activity records the retention no
    /// longer keeps (each is kept at least `retention` after it finished or
    /// completed; SQLite purges by enqueue time and keeps them up to two
    /// longest horizons more), and breakers of origins with nothing left.
    async fn purge(&self, now_ms: i64, retention_ms: i64) -> Result<u64, OutboxError>;
    /// Queue figures.
    async fn stats(&self, now_ms: i64) -> Result<OutboxStats, OutboxError>;
    /// Creates the reporting stream `row` unless one with its id exists;
    /// returns the stored stream either way.
    async fn create_stream(&self, row: StreamRow) -> Result<StreamRow, OutboxError>;
    /// One reporting stream.
    async fn stream(&self, id: &str) -> Result<Option<StreamRow>, OutboxError>;
    /// Up to `limit` streams due at `now_ms`, the most overdue first.
    async fn due_streams(&self, now_ms: i64, limit: usize) -> Result<Vec<StreamRow>, OutboxError>;
    /// Applies `update` and enqueues `event` in one transaction, only if
    /// the stream is still at the expected version: `false` (nothing
    /// changed, nothing enqueued) when another scheduler moved it first.
    async fn advance_stream(&self, update: StreamUpdate, event: Option<Insert>) -> Result<bool, OutboxError>;
    /// Whether an event of `channel_id` is still pending or in flight.
    async fn channel_busy(&self, channel_id: &str) -> Result<bool, OutboxError>;
    /// One channel.
    async fn channel(&self, id: &str) -> Result<Option<ChannelRow>, OutboxError>;
    /// Applies `write`: `None` when the channel was not at the expected
    /// version (or, creating, already existed): nothing changed. Else the
    /// number of events replaced.
    async fn write_channel(&self, write: ChannelWrite) -> Result<Option<u64>, OutboxError>;
    /// Up to `limit` pending, never attempted events of `channel_id`.
    async fn unattempted(&self, channel_id: &str, limit: usize) -> Result<Vec<Unattempted>, OutboxError>;
    /// Notified when work may have arrived (an enqueue by this process;
    /// on PostgreSQL, any process's, through `LISTEN`).
    fn wakeups(&self) -> Arc<Notify>;
}

/// The message closing the pending record of an attempt whose lease was
/// taken over (its worker stopped before recording an outcome).
pub(crate) const ABANDONED: &str =
    "attempt abandoned: the worker holding its lease stopped before recording an outcome";

/// A fresh fencing token for one lease.
pub(crate) fn lease_token() -> i64 {
    use adcp_sign::RandomSource as _;
    let mut b = [0_u8; 8];
    // Without randomness the fencing still holds within one process
    // (tokens only need to differ between leases of one event); fall
    // back to the clock.
    if adcp_sign::OsRandom.fill(&mut b).is_err() {
        return crate::clock::Clock::now_ms(&crate::clock::SystemClock);
    }
    i64::from_le_bytes(b) & i64::MAX
}
