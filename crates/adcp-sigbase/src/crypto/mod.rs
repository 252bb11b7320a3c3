//! Signing and verifying an RFC 9421 signature base.
//!
//! This module is profile-agnostic: it takes the signature base as bytes
//! (built elsewhere in this crate) and the signature as decoded bytes (the
//! RFC 8941 byte-sequence / base64 decoding of the `Signature` header is the
//! caller's business), and implements the three RFC 9421 algorithms AdCP
//! uses:
//!
//! | [`Algorithm`]                   | RFC 9421 name       | JOSE    | signature            |
//! |---------------------------------|---------------------|---------|----------------------|
//! | [`Algorithm::Ed25519`]          | `ed25519`           | `EdDSA` | 64 bytes, `verify_strict` |
//! | [`Algorithm::EcdsaP256Sha256`]  | `ecdsa-p256-sha256` | `ES256` | 64 bytes `r \|\| s` (no DER) |
//! | [`Algorithm::HmacSha256`]       | `hmac-sha256`       | `HS256` | 32 bytes, constant-time check |
//!
//! [`VerifyingKey::verify`] takes the algorithm explicitly (the `alg`
//! parameter or the JWK `alg`) and fails with
//! [`CryptoError::AlgorithmKeyMismatch`] when it is not the key's algorithm,
//! so a public key can never be used as an HMAC secret or the reverse.
//!
//! # Backend
//!
//! The cryptography lives in one private `backend` module, one file per
//! algorithm, in the manner of rustls' crypto providers: ECDSA P-256 signing
//! and verification use `aws-lc-rs` (several times faster than RustCrypto
//! `p256` for verification), Ed25519 uses `ed25519-dalek`, HMAC uses
//! RustCrypto `hmac` + `sha2`; key encodings are parsed with RustCrypto
//! `p256` / `pkcs8`. No backend type appears in the public API.
//!
//! # Decisions
//!
//! - Ed25519 verification decides exactly as `ed25519-dalek`'s
//!   `verify_strict` (RFC 8032 with canonical `S` and `R`, `R` and `A` not of
//!   small order, cofactorless equation), computed without its second point
//!   conversion (differential tests and a fuzz target keep the decisions
//!   identical); small-order and non-canonical public keys are rejected when
//!   the key is built.
//! - ECDSA signatures must be the 64-byte `r || s` form (RFC 9421 §3.3.4);
//!   DER is rejected with [`CryptoError::InvalidSignatureEncoding`]. High-S
//!   signatures are accepted (nothing in RFC 9421 or IEEE P1363 forbids
//!   them), so ECDSA signatures are malleable: replay caches must key on the
//!   nonce / signature parameters, never on the signature bytes.
//! - HMAC secrets must be at least [`HMAC_MIN_SECRET_LEN`] bytes and not a
//!   single repeated byte; tags must be the full 32 bytes.
//!
//! # Example
//!
//! ```
//! use adcp_sigbase::crypto::{Algorithm, CryptoError, SigningKey, VerifyingKey};
//!
//! let base = b"\"@method\": POST\n\
//! \"@authority\": buyer.example.com\n\
//! \"@signature-params\": (\"@method\" \"@authority\");created=1776520800;keyid=\"k1\";alg=\"ed25519\"";
//!
//! // Sign with a fresh key.
//! let signer = SigningKey::generate_ed25519()?;
//! let signature = signer.sign(base)?;
//!
//! // Verify with the public key, as a receiver would after a JWKS lookup.
//! let public = signer.verifying_key();
//! let verifier = VerifyingKey::ed25519_from_bytes(public.public_key_bytes().unwrap_or_default())?;
//! let alg: Algorithm = "ed25519".parse()?;
//! verifier.verify(alg, base, signature.as_bytes())?;
//!
//! // Any change to the base fails, with no detail.
//! assert_eq!(
//!     verifier.verify(alg, b"\"@method\": GET", signature.as_bytes()),
//!     Err(CryptoError::VerificationFailed)
//! );
//! // The algorithm must match the key.
//! assert!(matches!(
//!     verifier.verify(Algorithm::EcdsaP256Sha256, base, signature.as_bytes()),
//!     Err(CryptoError::AlgorithmKeyMismatch { .. })
//! ));
//! # Ok::<(), CryptoError>(())
//! ```

mod algorithm;
mod backend;
mod batch;
mod error;
mod policy;
mod secret;
mod signature;
mod signing_key;
mod verifying_key;

pub use algorithm::Algorithm;
pub use batch::{verify_ed25519_batch, Ed25519BatchItem};
pub use error::{CryptoError, KeyKind, KeyRejection};
pub use policy::HMAC_MIN_SECRET_LEN;
pub use secret::SecretBytes;
pub use signature::Signature;
pub use signing_key::SigningKey;
pub use verifying_key::VerifyingKey;
