//! Integration tests of `adcp-webhook`, in one binary: sender and receiver
//! end to end over loopback (interop for both algorithms, over TLS too,
//! and the positive conformance vectors replayed live), exactly-once
//! delivery on every store backend enabled by features, single attempts
//! (`AttemptClient`) and their verdicts, failure paths, the
//! payload model and its schemas, the extraction and envelope vectors,
//! hostile input. The runnable examples are in the workspace's examples package.
//!
//! `common` holds the shared fixtures (seller keys, loopback receivers,
//! short-backoff senders, payload fixtures from `tests/fixtures/`).
//! proptest keeps the regression seeds of `it/<name>.rs` in
//! `tests/proptest-regressions/<name>.txt` (next to the directory holding
//! `main.rs`). `observability.rs` stays a binary of its own: it relies on
//! `tracing`'s process-wide callsite interest (see its header).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod common;

mod attempt;
mod exactly_once;
mod failures;
mod hostile_input;
mod interop;
mod notify;
mod payloads;
mod vectors;
