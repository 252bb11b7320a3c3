//! The integration tests of `adcp-jws`, one test binary: the published
//! governance vectors ([`vectors`]), bindings beyond them ([`bindings`]), issuance ([`issuance`]), tampering
//! ([`tamper`]), replay across verifiers ([`replay`]) and key-purpose
//! separation ([`purpose`]); shared helpers in [`support`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod support;

mod bindings;
mod issuance;
mod purpose;
mod replay;
mod tamper;
mod vectors;
