//! Signing AdCP webhooks and requests (RFC 9421), keys, and the legacy
//! HMAC scheme.
//!
//! A seller's backend builds each webhook event once ([`WebhookEvent`]:
//! idempotency key plus the body bytes), then signs every delivery attempt
//! with an [`HttpSigner`], which returns a [`SignedRequest`]: the URL to
//! send to, the headers, and the exact body bytes. The signature has the
//! AdCP profile's shape and nothing else: label `sig1`, components
//! `@method @target-uri @authority content-type content-digest`,
//! parameters `created expires nonce keyid alg tag`, binary values in the
//! [`SigningProfile`]'s encodings.
//!
//! - [`Body`]: serialize once (`serde::Serialize` or raw bytes), check
//!   strictly, reject duplicate-key input (`duplicate_key_input`).
//! - [`Signer`]: the async key trait (KMS / HSM), [`SoftwareSigner`]: the
//!   built-in Ed25519 / P-256 signer (JWK, PKCS#8, raw; public JWK/JWKS
//!   export), [`p256_signature_from_der`] for KMS output.
//! - [`Clock`] and [`RandomSource`]: injected time and randomness
//!   ([`SystemClock`] and [`OsRandom`] by default).
//! - [`LegacyHmacSigner`]: the deprecated `X-ADCP-Signature` scheme.
//! - [`SignError`]: every refusal, with a stable [`SignError::code`].
//!
//! ```
//! use adcp_sign::{HttpSigner, SoftwareSigner, WebhookEvent};
//! use adcp_sigbase::crypto::Algorithm;
//!
//! #[derive(serde::Serialize)]
//! struct TaskUpdate<'a> {
//!     task_id: &'a str,
//!     status: &'a str,
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
//! // Once, at start-up: the key, and its JWKS to publish at the jwks_uri.
//! let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-01")?;
//! let jwks = key.jwks()?.to_public_json();
//! assert_eq!(jwks["keys"][0]["adcp_use"], "request-signing");
//! let signer = HttpSigner::webhook(key)?;
//!
//! // Once per event: the idempotency key and the body bytes.
//! let event = WebhookEvent::new(&TaskUpdate { task_id: "task_456", status: "completed" })?;
//!
//! // Once per delivery attempt: a fresh signature over the same bytes.
//! let signed = signer.sign_webhook("https://buyer.example.com/adcp/webhook", &event).await?;
//! assert_eq!(signed.method(), "POST");
//! assert_eq!(signed.body().map(|b| b.as_bytes()), Some(event.body().as_bytes()));
//! let names: Vec<&str> = signed.headers().iter().map(|(name, _)| *name).collect();
//! assert_eq!(names, ["Content-Type", "Content-Digest", "Signature-Input", "Signature"]);
//! assert!(signed.header("Content-Digest").is_some_and(|d| d.starts_with("sha-256=:")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Decisions
//!
//! Recorded with their reasons in `docs/signing.md`:
//!
//! - **Webhook `Content-Digest` in padded standard Base64**, as the
//!   conformance vectors, the Python SDK and the published JS SDK emit it,
//!   although the spec text names unpadded base64url; `Signature` is
//!   unpadded base64url as the spec requires. Request 3.2 uses RFC 8941
//!   Base64 for both; legacy requests (3.0/3.1) unpadded base64url for
//!   both, only when [`SigningProfile::request_legacy`] is chosen.
//! - **The URL sent is the canonical URL** (the signed `@target-uri`), so
//!   a receiver that canonicalizes what it received gets the same bytes;
//!   IDN hosts go out in A-label form.
//! - **Bodies are JSON and checked strictly** on every path, including
//!   serializer output: a signer must not emit duplicate keys either.
//! - **The idempotency key is fixed by the event**, not by the signing
//!   call, so a retry cannot change it.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod base;
mod body;
mod clock;
mod der;
mod error;
mod event;
mod http_signer;
mod idempotency;
mod key_id;
mod legacy_hmac;
mod nonce;
mod options;
mod profile;
mod purpose;
mod random;
mod request;
mod signed;
mod signer;
mod software;

pub use body::Body;
pub use clock::{Clock, FixedClock, SystemClock};
pub use der::p256_signature_from_der;
pub use error::SignError;
pub use event::WebhookEvent;
pub use http_signer::{HttpSigner, LABEL, MAX_VALIDITY};
pub use idempotency::IdempotencyKey;
pub use legacy_hmac::{HmacSignedBody, LegacyHmacSigner, SIGNATURE_HEADER, TIMESTAMP_HEADER};
pub use nonce::Nonce;
pub use options::SignOptions;
pub use profile::{LegacyDigest, SigningProfile};
pub use purpose::KeyPurpose;
pub use random::{OsRandom, RandomSource, RandomnessUnavailable};
pub use request::{UnsignedRequest, JSON_CONTENT_TYPE};
pub use signed::SignedRequest;
pub use signer::{BoxSigner, Signer, SignerError, SignerErrorKind};
pub use software::SoftwareSigner;

// Re-exported so that callers need not depend on the crates directly for
// the types in this API.
pub use adcp_sigbase::crypto::Algorithm;
pub use adcp_strict_json::{DuplicateKeys, Limits};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
