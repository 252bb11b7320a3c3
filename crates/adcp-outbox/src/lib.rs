//! Durable signed delivery of AdCP webhooks, for sellers: an outbox in the
//! same transactional store as the event (SQLite embedded by default,
//! PostgreSQL for a fleet), leased attempts, a persisted retry schedule,
//! a circuit breaker and an in-flight cap per destination origin,
//! coalescing, and one `webhook_activity` record per attempt.
//!
//! - [`Outbox`] enqueues: idempotent on the signing scope and
//!   `idempotency_key` with the same RFC 8785 payload; on the
//!   application's own transaction (`enqueue_sqlite`, `enqueue_postgres`
//!   with the `postgres` feature) so a business change and its webhook
//!   commit or roll back together.
//! - [`Dispatcher`] delivers: claims due events under a lease, signs each
//!   attempt afresh (the same key and bytes every time), classifies the
//!   answer by the spec, and records the outcome fenced by the lease.
//!   Delivery is at-least-once: a worker that dies mid-attempt leaves a
//!   lease that expires, and the event is sent again.
//! - [`reporting::ReportingScheduler`] fires the delivery reports of the
//!   buys' `reporting_webhook`s on schedule, into the outbox.
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use adcp_outbox::{NewEvent, Outbox, OutboxConfig, OutboxDestination, SqliteOutbox};
//! use adcp_sign::WebhookEvent;
//! use std::sync::Arc;
//!
//! let dir = std::env::temp_dir().join(format!("adcp-outbox-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let store = SqliteOutbox::open(dir.join("outbox.sqlite"), Default::default())?;
//! let outbox = Outbox::new(Arc::new(store), OutboxConfig::default())?;
//!
//! let payload = serde_json::json!({
//!     "notification_type": "creative.status_changed",
//!     "notification_id": "crn_1",
//!     "creative_id": "cr_9",
//! });
//! let event = NewEvent::new(
//!     WebhookEvent::new(&payload)?,
//!     OutboxDestination::new("https://buyer.example/webhooks/adcp"),
//! )
//! .principal("buyer-1")
//! .resource("creative:cr_9");
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let first = outbox.enqueue(event.clone()).await?;
//!     // The same key and payload again: the same event, nothing new stored.
//!     let again = outbox.enqueue(event).await?;
//!     assert_eq!(again.id, first.id);
//!     assert!(again.duplicate);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlite"))]
//! # fn main() {}
//! ```
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
// Without a store backend only the relay's request parser is usable (its
// fuzz target builds that way); the row machinery is then unused.
#![cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]

mod activity;
mod breaker;
pub mod capabilities;
pub mod channels;
mod clock;
mod coalesce;
mod crypto;
mod dispatch;
mod error;
mod event;
mod id;
mod outbox;
#[cfg(feature = "relay")]
pub mod relay;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod reporting;
mod schedule;
mod store;

pub use activity::{clip_message, redact_url, ActivityRecord, ActivityStatus, MAX_ERROR_MESSAGE_CHARS};
pub use breaker::{BreakerPolicy, BreakerState, Health};
pub use clock::{rfc3339_ms, Clock, ManualClock, SystemClock};
pub use coalesce::{CoalescingPolicy, NEVER_COALESCED};
pub use crypto::Keyring;
pub use dispatch::{
    AttemptHook, DispatchMetrics, Dispatcher, DispatcherConfig, HookDecision, SignerResolver, StaticSigners,
    DISPATCH_TRACING_TARGET, MIN_LEASE_MARGIN,
};
pub use error::OutboxError;
pub use event::{NewEvent, OutboxDestination, DEFAULT_SIGNING_SCOPE};
pub use id::EventId;
pub use outbox::{Outbox, OutboxConfig, MIN_RETENTION};
pub use schedule::{next_attempt, NextAttempt, RETRY_AFTER_CAP};
#[cfg(feature = "postgres")]
pub use store::postgres::{enqueue_postgres, migrate_postgres, PostgresOutbox, PostgresOutboxOptions};
pub use store::schema::{check_prefix, DEFAULT_TABLE_PREFIX};
#[cfg(feature = "sqlite")]
pub use store::sqlite::{enqueue_sqlite, migrate_sqlite, SqliteOutbox, SqliteOutboxOptions};
pub use store::{
    open_store, ActivityQuery, ActivitySelector, AttemptFacts, ChannelRow, ChannelWrite, ClaimRequest, Claimed,
    Enqueued, EventState, EventView, Finish, Insert, LeaseGrant, ListFilter, OutboxStats, OutboxStore, Outcome,
    StreamRow, StreamUpdate, Unattempted, DEFAULT_ACTIVITY_LIMIT, MAX_ACTIVITY_LIMIT,
};

/// The README's examples, compiled as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
