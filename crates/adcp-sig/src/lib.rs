//! The library side of `adcp-sig`: the verifying gateway and the demo,
//! usable in-process (tests, embedding) as well as from the binary.
//!
//! - [`gateway`]: an axum server that verifies AdCP webhooks (RFC 9421
//!   webhook profile, or a legacy HMAC registration), deduplicates them in a
//!   shared store and forwards only verified, first-seen events upstream.
//! - [`demo`]: a self-contained run of the gateway against signed,
//!   duplicated, replayed, tampered and expired webhooks.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod demo;
pub mod gateway;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
