//! Integration tests of `adcp-sign`, in one binary: key loading and public
//! JWK export, misuse as typed errors, property tests (duplicate keys,
//! serialize-once bodies, nonces, idempotency keys), sign → verify round
//! trips through `adcp-verify`, determinism against the AdCP conformance
//! vectors, and the legacy HMAC-SHA256 signer.
//!
//! `legacy_hmac_logging.rs` stays a binary of its own: it counts a
//! `tracing` event under a thread-local subscriber, and `tracing` caches
//! per-callsite interest process-wide, so `legacy_hmac.rs` building signers
//! without a subscriber in parallel could make it miss the event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod common;

mod keys;
mod legacy_hmac;
mod misuse;
mod properties;
mod roundtrip;
mod vectors;
