//! Helpers shared by this workspace's tests and benchmarks.
//!
//! - [`CountingAllocator`]: a global allocator that counts allocations per
//!   thread, for tests that pin "allocates only the output".
//! - [`criterion_mean_ns`]: reads a benchmark's mean from criterion's
//!   output, so a benchmark can print the ratio against its baseline
//!   measured in the same run.
//! - [`redis_server`]: a test-owned `redis-server` child process (free
//!   port, own directory and AOF, killed on drop) and a small cluster, for
//!   the durability and fault tests that kill, pause or restart Redis.
//! - [`rfc3339`]: Unix seconds as an RFC 3339 UTC timestamp, for test
//!   documents.
//! - [`http_client`]: a plain HTTP client for servers under test.
//! - [`database_url`] / [`redis_url`]: the PostgreSQL and Redis servers of
//!   the tests — `DATABASE_URL` / `REDIS_URL` when they answer, else a
//!   private server per test process started from the installed binaries
//!   ([`postgres_server`], [`redis_server`]) and removed after it exits.
//!
//! ```
//! use adcp_test_support::{allocations_during, CountingAllocator};
//! // In a test binary: #[global_allocator] static A: CountingAllocator = CountingAllocator;
//! let n = allocations_during(|| { let _v: Vec<u8> = Vec::new(); });
//! assert_eq!(n, 0); // the system allocator is in use here, nothing counted
//! ```
#![warn(unreachable_pub)]

mod alloc_count;
mod criterion_report;
mod http;
pub mod postgres_server;
pub mod redis_server;
mod rfc3339;
mod services;
mod watchdog;

pub use alloc_count::{allocations_during, CountingAllocator};
pub use criterion_report::{criterion_dir, criterion_mean_ns};
pub use http::http_client;
pub use rfc3339::rfc3339;
pub use services::{database_url, redis_url};
