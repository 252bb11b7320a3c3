//! The profile-agnostic core of RFC 9421 HTTP Message Signatures.
//!
//! This crate knows nothing of AdCP tags or key purposes; the AdCP signer
//! and verifier are built on it, and so can any other RFC 9421 profile.
//!
//! - [`Message`]: a borrowed view of a request or response (method, target
//!   URI, header lines in received order with duplicates, body, trailers),
//!   with an adapter for [`http::Request`].
//! - [`SignatureInput`] / [`Signatures`]: strict parsing of the two headers.
//!   Lines are combined per RFC 9110 first, so a label repeated on a second
//!   line is a duplicate, never a fresh start. For the processed label
//!   (`sig1`), duplicate labels and parameters, unquoted string
//!   parameters, non-integer `created` / `expires` and malformed component
//!   identifiers are typed [`Error`]s; other members only have to be valid
//!   RFC 8941 and are otherwise set aside (a verifier ignores them).
//! - [`signature_base`]: the exact RFC 9421 §2.5 bytes, with every derived
//!   component of §2.2 and the `sf`, `key`, `bs`, `req`, `tr` field
//!   parameters. A profile can supply its canonical `@target-uri` and
//!   `@authority` through [`BaseOptions`].
//! - [`digest`]: RFC 9530 `Content-Digest` (`sha-256`, `sha-512`),
//!   strict parsing, constant-time comparison.
//! - [`encoding`]: binary values as an explicit choice: RFC 8941 padded
//!   Base64 or the legacy unpadded Base64URL, both decoded strictly.
//! - [`crypto`]: Ed25519 (`verify_strict` semantics), ECDSA P-256 SHA-256 (r‖s, via
//!   aws-lc-rs) and HMAC-SHA256 behind one small backend module.
//!
//! ```
//! use adcp_sigbase::crypto::{Algorithm, SigningKey};
//! use adcp_sigbase::encoding::BinaryEncoding;
//! use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput, Signatures};
//!
//! // A sender signs...
//! let key = SigningKey::generate_ed25519()?;
//! let input = r#"sig1=("@method" "@target-uri" "content-type");created=1700000000;keyid="k1";alg="ed25519""#;
//! let msg = Message::request("POST", "https://buyer.example.com/hooks")
//!     .with_header("Content-Type", "application/json")
//!     .with_header("Signature-Input", input);
//! let params = SignatureInput::from_message(&msg)?.ok_or("no Signature-Input")?;
//! let base = signature_base(&msg, params.require("sig1")?, &BaseOptions::default())?;
//! let sig = key.sign(base.as_bytes())?;
//! let header = format!("sig1=:{}:", BinaryEncoding::Base64Padded.encode(sig.as_bytes()));
//!
//! // ...and a receiver rebuilds the base from what arrived and verifies.
//! let received = msg.with_header("Signature", header.as_str());
//! let params = SignatureInput::from_message(&received)?.ok_or("no Signature-Input")?;
//! let base = signature_base(&received, params.require("sig1")?, &BaseOptions::default())?;
//! let sig = Signatures::from_message(&received)?.ok_or("no Signature")?.decode("sig1", BinaryEncoding::Base64Padded)?;
//! key.verifying_key().verify(Algorithm::Ed25519, base.as_bytes(), &sig)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Decisions
//!
//! - **`@signature-params` is re-serialized**, not copied: the value is the
//!   RFC 8941 §4 serialization of the parsed inner list and parameters,
//!   parameters in received order (RFC 9421 §2.3). A received
//!   `Signature-Input` with non-canonical spelling (extra spaces inside the
//!   inner list or around members, an integer with leading zeros) therefore
//!   yields the canonical line a conformant signer signed; a signer that
//!   signed its own non-canonical spelling does not verify.
//! - **`Signature` is not parsed with `sfv`**: the AdCP webhook v1 and legacy
//!   request profiles carry unpadded base64url between the colons, which is
//!   not an RFC 8941 byte sequence. A dedicated scanner reads the Dictionary
//!   and the caller's [`encoding::BinaryEncoding`] decodes strictly. Parameters on
//!   `Signature` members are rejected (RFC 9421 defines none).
//! - **Obsolete line folding and CR/LF/NUL in field values are rejected**
//!   rather than rewritten (RFC 9421 §2.1 allows replacing folding with a
//!   space; modern HTTP stacks never deliver it).
//! - **`@query-param` for a repeated name is an error** (RFC 9421 §2.2.8).
//! - **Singleton fields**: [`Message::single_field`] reports a field with
//!   several lines or a top-level comma (`Content-Type: a, b`) so profiles
//!   can reject multi-valued fields the signature covers.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod base;
mod clock;
mod component;
pub mod crypto;
pub mod digest;
pub mod encoding;
mod error;
pub mod jwk;
mod message;
mod sf;
mod sf_dictionary;
mod signature_header;
mod signature_input;
pub mod structured;

pub use base::{signature_base, BaseOptions, SignatureBase};
pub use clock::{Clock, FixedClock, SystemClock};
pub use component::ComponentId;
pub use error::{Error, SignatureHeader};
pub use message::{HeaderBytes, Message};
pub use sf::{BareValue, Parameters};
pub use signature_header::{Signatures, MAX_SIGNATURE_LEN};
pub use signature_input::{SignatureInput, SignatureParams, MAX_SIGNATURE_INPUT_LEN};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
