//! The store's integration tests, one binary: the exported contract suite
//! (`adcp_store::testing`) against every backend compiled in, and each
//! backend's own durability, migration and fail-closed tests. The shared
//! tiers read `DATABASE_URL` / `REDIS_URL` (else private servers, see
//! `adcp_test_support`); the fault, cluster and verifier tests start
//! `redis-server` processes of their own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixtures;
mod memory;
mod open;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_fault;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redis_cluster;
#[cfg(feature = "redis")]
mod redis_multinode;
#[cfg(feature = "redis")]
mod redis_verify;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_model;
