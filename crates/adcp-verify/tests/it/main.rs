//! Integration tests of `adcp-verify`, in one binary: the official AdCP
//! conformance suite through the verifier, the hostile-input table,
//! tamper properties, batch verification, the request-signing gate
//! (vectors, body-integrity matrix, method names, scenarios), legacy HMAC
//! and Bearer webhooks and the mode switch, and `MemoryReplayStore`.
//!
//! `tests/support/mod.rs` (signed requests re-made from a conformance
//! vector) stays where it is: `allocations.rs` and `benches/scaling.rs`
//! include it too. Three files stay binaries of their own, each saying why
//! in its header: `allocations.rs` (a counting `#[global_allocator]`),
//! `admission.rs` (sets and removes process environment variables) and
//! `admission_logging.rs` (relies on `tracing`'s process-wide callsite
//! interest).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

#[path = "../support/mod.rs"]
mod support;

mod batch;
mod conformance;
mod hostile_inputs;
mod legacy_bearer;
mod legacy_hmac;
mod legacy_hmac_vectors;
mod legacy_mode;
mod replay_memory;
mod request_policy_a2a;
mod request_policy_body_integrity;
mod request_policy_method_names;
mod request_policy_precheck;
mod request_policy_scenarios;
mod tamper;
