//! The integration tests of adcp-request, one binary with a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod client_priming;
mod client_seller;
mod client_signing;
mod client_transport;
