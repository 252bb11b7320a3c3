//! The AdCP RFC 9421 verifier: one checklist, the profile as data.
//!
//! A buyer's webhook receiver and a seller's request verifier both run
//! [`verifier::Verifier`]. The endpoint's configuration picks the
//! [`profile::Profile`] (webhook v1, request 3.2, or an explicitly
//! configured legacy request endpoint); nothing about the profile is ever
//! guessed from the request. Every rejection is a [`error::VerifyError`]
//! whose code is the exact spec string (`webhook_signature_invalid`,
//! `request_signature_replayed`, …), with the checklist step and a
//! server-side detail.
//!
//! - [`keys`]: the [`keys::KeyResolver`] trait (refetch-on-miss contract,
//!   revocation status) and a static resolver; the HTTPS resolver lives in
//!   `adcp-jwks`.
//! - [`replay`]: the [`replay::ReplayStore`] trait (atomic insert-with-cap,
//!   fail closed) and an in-memory store; durable backends live in
//!   `adcp-store`.
//! - [`admission`]: new-keyid admission-pressure alarms (clauses a–d,
//!   `threshold_tuning_overdue`).
//! - [`request_policy`]: the request profile's pre-checklist (`required_for`,
//!   `warn_for`, protocol methods, A2A operation resolution, the
//!   webhook-registration downgrade guard, the body-integrity matrix).
//! - `conformance` (feature `conformance`): the official suite runner.
//!
//! ```
//! use adcp_sigbase::Message;
//! use adcp_verify::clock::FixedClock;
//! use adcp_verify::keys::StaticKeyResolver;
//! use adcp_verify::profile::Profile;
//! use adcp_verify::replay::MemoryReplayStore;
//! use adcp_verify::verifier::Verifier;
//!
//! # async fn demo(jwks: serde_json::Value) {
//! let verifier = Verifier::new(
//!     Profile::webhook_v1(),
//!     StaticKeyResolver::new().with_jwks(&jwks, "https://seller.example/mcp"),
//!     MemoryReplayStore::webhook(),
//!     FixedClock(1_776_520_800),
//! );
//! let msg = Message::request("POST", "https://buyer.example.com/hooks/op_1")
//!     .with_header("Host", "buyer.example.com")
//!     .with_header("Content-Type", "application/json")
//!     .with_body(&b"{}"[..]);
//! match verifier.verify(&msg).await {
//!     Ok(signer) => println!("from {}", signer.agent_url),
//!     Err(e) => {
//!         // 401 + `WWW-Authenticate: Signature error="webhook_signature_header_malformed"`
//!         assert_eq!(e.code_str(), "webhook_signature_header_malformed");
//!         assert!(e.www_authenticate().is_some());
//!     }
//! }
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod admission;
pub mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod error;
mod error_message;
pub mod keys;
pub mod legacy;
pub mod profile;
pub mod replay;
pub mod request_policy;
pub mod verifier;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
