//! Signed AdCP requests, both ends: sellers verify buyers' RFC 9421-signed
//! calls, buyers sign them.
//!
//! # Sellers
//!
//! (Seller side: the tower layer, the axum extractors and the
//! framework-agnostic core. Documented here as it lands.)
//!
//! # Buyers
//!
//! (Buyer side: the reqwest signing client with capability priming.
//! Documented here as it lands.)
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod client;
pub use client::{
    read_capability, CallResponse, CapabilityCache, ClientError, Counterparty, SigningClient, SigningClientBuilder,
    SigningDecision, SigningReason, SigningVersion, TargetPolicy, Transport, DEFAULT_CAPABILITY_TTL, DEFAULT_TIMEOUT,
    MAX_RESPONSE_BYTES,
};
mod seller;
