//! The integration tests of adcp-request, one binary with a module per area.

mod common;
mod seller_composition;
mod seller_config;
mod seller_extract;
mod seller_hostile;
mod seller_limits;
mod seller_policy;
mod seller_vectors;
