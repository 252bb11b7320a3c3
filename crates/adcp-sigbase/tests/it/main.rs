//! Integration tests of `adcp-sigbase`, in one binary: the RFC 9421
//! examples byte for byte, the AdCP conformance vectors (signature bases and
//! structural rejections), `Signature-Input` / `Signature` parsing
//! properties, the message abstraction, RFC 9530 `Content-Digest`, strict
//! Base64, the crypto backends (with the Ed25519 equation checked against
//! `ed25519-dalek`'s `verify_strict`) and JWK parsing.
//!
//! proptest keeps the regression seeds of `it/<name>.rs` in
//! `tests/proptest-regressions/<name>.txt` (next to the directory holding
//! `main.rs`). `allocations.rs` stays a binary of its own: it installs a
//! counting `#[global_allocator]`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod common;

mod crypto;
mod digest;
mod ed25519_equivalence;
mod encoding;
mod header_properties;
mod jwk;
mod message;
mod rfc9421_appendix_b;
mod structural_vectors;
mod vectors_base;
