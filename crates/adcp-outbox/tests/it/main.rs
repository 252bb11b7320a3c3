//! The SQLite outbox and its dispatcher, end to end against a loopback
//! sink: idempotent and transactional enqueue, fencing, the spec's
//! outcomes, `Retry-After` and the horizon on an injected clock, breakers,
//! coalescing, the pre-attempt hook, activity records against the 3.2
//! schema, graceful shutdown, and the `webhook_signing` capability block
//! (against the 3.2 `get_adcp_capabilities` response schema) with its
//! start-up check.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod capabilities;
mod channels;
mod delivery;
mod enqueue;
mod records;
mod relay_api;
mod relay_props;
mod relay_reporting;
mod reporting;
mod support;
