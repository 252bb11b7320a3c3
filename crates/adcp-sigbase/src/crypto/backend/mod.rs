//! The cryptographic backend: the only place that names third-party crypto
//! crates.
//!
//! Like a rustls `crypto` provider module, this is a fixed, small contract
//! that the public types ([`VerifyingKey`](super::VerifyingKey),
//! [`SigningKey`](super::SigningKey)) are written against. Swapping the
//! implementation of an algorithm means rewriting one file here with the same
//! `pub(crate)` items; nothing outside `backend` changes.
//!
//! | file             | key parsing / validation     | sign / verify                               |
//! |------------------|------------------------------|---------------------------------------------|
//! | `ed25519.rs`     | `ed25519-dalek` (+ `pkcs8`)  | `ed25519-dalek` (sign), `ed25519_equation.rs` (verify) |
//! | `ed25519_equation.rs` | —                       | `verify_strict`'s decisions on `curve25519-dalek`, one inversion fewer |
//! | `ecdsa_p256.rs`  | RustCrypto `p256` (+ `pkcs8`)| `aws-lc-rs` (`ECDSA_P256_SHA256_FIXED[_SIGNING]`) |
//! | `hmac_sha256.rs` | —                            | RustCrypto `hmac` + `sha2`, `subtle`        |
//! | `pkix.rs`        | SPKI / PKCS#8 / PEM envelope (`pkcs8`, `der`) | —                          |
//!
//! Contract (per algorithm file): a `PublicKey` (or `Key` for HMAC) with
//! constructors returning `Result<_, KeyRejection>`, `verify(&self, msg, sig)
//! -> Result<(), CryptoError>` that checks the signature length itself, and a
//! `PrivateKey` with constructors, `sign(&self, msg)`, `public_key()`,
//! `to_pkcs8_der()` and `generate()`.

pub(crate) mod ecdsa_p256;
pub(crate) mod ed25519;
pub(crate) mod ed25519_equation;
pub(crate) mod hmac_sha256;
pub(crate) mod pkix;

/// Wipes secret buffers on drop.
pub(crate) use ::zeroize;
