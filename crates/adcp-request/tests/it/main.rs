//! The integration tests of adcp-request, one binary with a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod client_priming;
mod client_seller;
mod client_signing;
mod client_transport;
mod common;
mod seller_composition;
mod seller_config;
mod seller_extract;
mod seller_hostile;
mod seller_limits;
mod seller_policy;
mod seller_vectors;
