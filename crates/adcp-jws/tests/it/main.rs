//! The integration tests of `adcp-jws`, one test binary: the published
//! governance vectors ([`vectors`]), bindings beyond them ([`bindings`]), brand.json discovery and
//! fetched revocation lists ([`discovery`]), issuance ([`issuance`]), tampering
//! ([`tamper`]), replay across verifiers ([`replay`]) and key-purpose
//! separation ([`purpose`]); shared helpers in [`support`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

/// The local HTTPS test server of `adcp-jwks`'s tests (the same file, not
/// a copy).
#[path = "../../../adcp-jwks/tests/common/mod.rs"]
mod common;
mod support;

mod bindings;
mod discovery;
mod issuance;
mod purpose;
mod replay;
mod tamper;
mod vectors;
