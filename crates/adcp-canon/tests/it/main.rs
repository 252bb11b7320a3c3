//! Integration tests of `adcp-canon`, in one binary: the official
//! canonicalization vectors, the identity canonicalizer's documented
//! decisions and rejections, property tests of both entry points, RFC 8141
//! URN equivalence, and the lossy normalizer (`normalize` feature).
//!
//! `allocations.rs` stays a binary of its own: it installs a counting
//! `#[global_allocator]`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod conformance;
mod identity;
mod normalize;
mod properties;
mod urn_equivalence;
