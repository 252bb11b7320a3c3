//! JSON Web Keys (RFC 7517) and JWK Sets for Ed25519 (`kty` `OKP`,
//! RFC 8037) and ECDSA P-256 (`kty` `EC`, RFC 7518 §6.2), strictly.
//!
//! This module is profile-agnostic: it knows the JOSE members, not AdCP key
//! purposes. A profile verifier reads what it needs through the accessors
//! ([`Jwk::member`] for `adcp_use`, [`Jwk::key_ops`], [`Jwk::key_use`],
//! [`Jwks::get`]) and applies its policy on top.
//!
//! - [`Jwk`]: one key, validated completely when parsed or built: it exists
//!   only if it is usable, so [`Jwk::algorithm`], [`Jwk::verifying_key`] and
//!   [`Jwk::thumbprint`] cannot fail. Unknown members are kept verbatim and
//!   written back by [`Jwk::to_json`]; the private key (`d`) is wiped on
//!   drop and never printed.
//! - [`Jwks`]: a JWK Set. A structurally broken set (not an object, `keys`
//!   not an array of objects, too large) is rejected; a key inside it that
//!   is not usable (including every key whose `kid` another key shares) is
//!   kept as a [`JwksEntry::Unusable`] with its `kid` and its error.
//! - [`JwkError`]: every rejection, typed, with no key material or
//!   caller-supplied text.
//!
//! ```
//! use adcp_sigbase::crypto::{Algorithm, SigningKey};
//! use adcp_sigbase::jwk::{JwkError, Jwk, Jwks};
//!
//! // A signer publishes its public key with a profile member...
//! let signer = SigningKey::generate_ed25519()?;
//! let jwk = Jwk::from_signing_key(&signer, "k1")?.with_member("adcp_use", "request-signing".into())?;
//! let published = Jwks::from_keys([jwk])?.to_public_json().to_string();
//!
//! // ...and a verifier reads the set, looks the kid up and verifies.
//! let jwks = Jwks::parse(published.as_bytes())?;
//! let entry = jwks.get("k1").ok_or("key_unknown")?;
//! let key = entry.jwk()?; // Err: the kid exists but the key is unusable
//! assert_eq!(key.member("adcp_use").and_then(|v| v.as_str()), Some("request-signing"));
//! assert_eq!(key.key_ops(), Some(&["verify".to_owned()][..]));
//! let signature = signer.sign(b"signature base")?;
//! key.verifying_key().verify(key.algorithm(), b"signature base", signature.as_bytes())?;
//!
//! // Parameters must agree: alg EdDSA on an EC key is rejected.
//! let bad = br#"{"kty":"EC","crv":"P-256","alg":"EdDSA","x":"gWUqzATUcUco5Q8fZZXn8aWwb7DQbYGBiqUzLiSDDJo"}"#;
//! assert_eq!(Jwk::parse(bad).err(), Some(JwkError::AlgorithmMismatch));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Decisions
//!
//! - **Validated on construction.** Parsing checks `kty`, `crv`, `alg`,
//!   member types, the base64url of `x`/`y`/`d`, the point and that `d`
//!   belongs to it, in a fixed order (see [`JwkError`]), so one input
//!   always yields the same error. `alg` is optional; when present it must
//!   be `EdDSA` or `Ed25519` (RFC 9864) for `OKP`/`Ed25519` and `ES256` for
//!   `EC`/`P-256`, exactly (anything else is
//!   [`JwkError::AlgorithmMismatch`]).
//! - **Strict base64url**: unpadded, URL-safe alphabet, canonical trailing
//!   bits, exact lengths (32 bytes for every component; RFC 7518 §6.2.1.2
//!   requires full-length coordinates). `y` on an `OKP` key is rejected.
//! - **Unsupported keys in a set are listed, not fatal**: an `RSA`, `oct`,
//!   `X25519`, `Ed448` or `P-384` key (or any key failing validation) is a
//!   [`JwksEntry::Unusable`] entry keeping its `kid` and its extension
//!   members, so a verifier reports "unknown key" only when no entry has
//!   the `kid`. Its `d`, if any, is dropped.
//! - **`kid` is optional** on a key (RFC 7517 §4.5) but must be distinct
//!   within a set, usable and unusable entries alike. A parsed set keeps
//!   going when it is not: every entry of a shared `kid` is unusable
//!   ([`JwkError::KidCollision`], independent of their order and of their
//!   purposes), the other `kid`s stay usable. [`Jwks::from_keys`], which
//!   builds a set to publish, refuses it ([`JwkError::DuplicateKid`]).
//! - **`use` and `key_ops` values are not interpreted** (only their types,
//!   and the distinctness of `key_ops`): which values a key must carry is
//!   profile policy.
//! - **Raw input is capped** ([`JwksLimits`], 64 KiB / 100 keys), read
//!   by `serde_json`, then passed through a strict JSON check that rejects
//!   duplicate member names ([`JwkError::StrictJson`]). **Pending:** the
//!   check is the `adcp-strict-json` crate, wired at one call site
//!   (`reject_duplicate_keys` in `jwk/json.rs`); until that crate is a
//!   dependency, duplicate names are not rejected.
//! - **Member order** is the order of the parsed `serde_json` object
//!   (sorted unless `serde_json`'s `preserve_order` feature is enabled).
//! - **Private keys from test members are opt-in**: the AdCP conformance
//!   key files carry `_private_d_for_test_only`; it is an ordinary
//!   extension member until [`Jwk::with_test_private_member`] adopts it.

mod b64;
mod convert;
mod error;
mod json;
mod key;
mod limits;
mod parse;
mod secret;
mod set;
mod thumbprint;

pub use error::{JwkError, JwkMember};
pub use key::Jwk;
pub use limits::{JwksLimits, MAX_JWKS_KEYS, MAX_JWKS_LEN};
pub use set::{Jwks, JwksEntry, UnusableJwk};
