//! Integration tests of `adcp-strict-json`, in one binary: RFC 8259
//! strictness, duplicate-key semantics and reporting, limits, step 14b
//! key-name sanitization, the official conformance vectors with duplicate
//! keys, and differential properties against a reference parser and
//! `serde_json`.
//!
//! proptest keeps the regression seeds of `it/<name>.rs` in
//! `tests/proptest-regressions/<name>.txt` (next to the directory holding
//! `main.rs`). `allocations.rs` stays a binary of its own: it installs a
//! counting `#[global_allocator]`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod differential;
mod duplicates;
mod limits;
mod sanitize;
mod syntax;
mod vectors;
