//! Integration tests of `adcp-jwks`, in one binary, against local HTTPS
//! servers (a test CA minted with rcgen; only loopback is contacted, through
//! the test-only SSRF exception): key discovery and fetch limits, the
//! `brand_json_url` chain, the `adagents.json` redirect vectors, and the
//! typed codes the verifier reports for discovery failures.
//!
//! `tests/common/mod.rs` (the local HTTPS server) stays where it is:
//! `cached_allocations.rs`, `benches/cached_resolve.rs` and the `adcp-sig`
//! tests include it too. Two files stay binaries of their own, each saying
//! why in its header: `cached_allocations.rs` (a counting
//! `#[global_allocator]`) and `ssrf_suite.rs` (installs rustls's
//! process-wide default crypto provider).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

#[path = "../common/mod.rs"]
mod common;

mod adagents_vectors;
mod brand_json_url;
mod discovery;
mod discovery_codes;
mod fetch_limits;
mod verifier_errors;
