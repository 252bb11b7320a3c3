//! The AdCP RFC 9421 verifier: one checklist, the profile as data.
//!
//! A buyer's webhook receiver and a seller's request verifier both run
//! [`Verifier`]. The endpoint's configuration picks the
//! [`Profile`] (webhook v1, request 3.2, or an explicitly
//! configured legacy request endpoint); nothing about the profile is ever
//! guessed from the request. Every rejection is a [`VerifyError`]
//! whose code is the exact spec string (`webhook_signature_invalid`,
//! `request_signature_replayed`, …), with the checklist step and a
//! server-side detail.
//!
//! At the root, with one path each:
//!
//! - Keys: the [`KeyResolver`] trait (refetch-on-miss contract, revocation
//!   status) and [`StaticKeyResolver`]; the HTTPS resolver lives in
//!   `adcp-jwks`.
//! - Replay: the [`ReplayStore`] trait (atomic insert-with-cap, fail closed)
//!   and [`MemoryReplayStore`]; durable backends live in `adcp-store`.
//! - Time: [`Clock`], [`SystemClock`], [`FixedClock`] (shared with the
//!   signer, defined in `adcp-sigbase`).
//!
//! Namespaces:
//!
//! - [`admission`]: new-keyid admission-pressure alarms (clauses a–d,
//!   `threshold_tuning_overdue`).
//! - [`request_policy`]: the request profile's pre-checklist (`required_for`,
//!   `warn_for`, protocol methods, A2A operation resolution, the
//!   webhook-registration downgrade guard, the body-integrity matrix).
//! - `conformance` (feature `conformance`): the official suite runner.
//!
//! ```
//! use adcp_sigbase::Message;
//! use adcp_verify::{FixedClock, MemoryReplayStore, Profile, StaticKeyResolver, Verifier};
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
#![warn(unreachable_pub)]

pub mod admission;
mod batcher;
mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod error_message;
mod keys;
pub mod legacy;
mod profile;
mod replay;
pub mod request_policy;
mod verifier;

pub use batcher::{BatcherStats, SignatureBatcher, DEFAULT_MAX_BATCH, FALLBACK_SIGNATURES};
pub use clock::{Clock, FixedClock, SystemClock};
pub use error::{CodePrefix, ErrorCode, Step, VerifyError};
pub use keys::{
    KeyCandidates, KeyResolver, ResolveError, ResolvedKey, RevocationStatus, StaticKeyResolver, MAX_KEY_CANDIDATES,
};
pub use profile::{DigestCoverage, Profile};
pub use replay::{
    CapKey, Durability, InsertOutcome, MemoryReplayStore, ReplayKey, ReplayLimits, ReplayStore, StoreError,
};
pub use verifier::{VerifiedSigner, Verifier, CLOCK_SKEW, LABEL, MAX_VALIDITY, MIN_NONCE_BYTES};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
