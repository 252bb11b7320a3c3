//! [`JwkError`]: why a JWK or JWK Set was rejected, and [`JwkMember`]: which
//! member it was about.
//!
//! Like [`CryptoError`], every error is a small `Copy` value that carries no
//! key material and no caller-supplied strings (no `kid`, no member values),
//! so it can be logged or reported to a peer.

use core::fmt;

use crate::crypto::CryptoError;
use crate::encoding::EncodingError;

/// A JWK or JWK Set member named in a [`JwkError`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JwkMember {
    /// `kty`, the key type (RFC 7517 §4.1).
    Kty,
    /// `kid`, the key ID (RFC 7517 §4.5).
    Kid,
    /// `alg`, the algorithm (RFC 7517 §4.4).
    Alg,
    /// `crv`, the curve (RFC 7518 §6.2.1.1, RFC 8037 §2).
    Crv,
    /// `use`, the public key use (RFC 7517 §4.2).
    Use,
    /// `key_ops`, the key operations (RFC 7517 §4.3).
    KeyOps,
    /// `x`, the public key (OKP) or x coordinate (EC).
    X,
    /// `y`, the y coordinate (EC only).
    Y,
    /// `d`, the private key (Ed25519 seed or P-256 scalar).
    D,
    /// `keys`, the key array of a JWK Set (RFC 7517 §5.1).
    Keys,
    /// The non-standard member named in
    /// [`Jwk::with_test_private_member`](super::Jwk::with_test_private_member)
    /// (AdCP conformance keys: `_private_d_for_test_only`).
    TestPrivate,
}

impl JwkMember {
    /// The member name as it appears in JSON (`"key_ops"`), or a
    /// description for [`JwkMember::TestPrivate`].
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Kty => "kty",
            Self::Kid => "kid",
            Self::Alg => "alg",
            Self::Crv => "crv",
            Self::Use => "use",
            Self::KeyOps => "key_ops",
            Self::X => "x",
            Self::Y => "y",
            Self::D => "d",
            Self::Keys => "keys",
            Self::TestPrivate => "test private key member",
        }
    }
}

impl fmt::Display for JwkMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a JWK or JWK Set was rejected, or a conversion failed.
///
/// Parsing a JWK checks, in this order, so one input always gives the same
/// error: [`NotAnObject`](Self::NotAnObject); `kty` (missing, not a string,
/// [`Unsupported`](Self::Unsupported)); `crv` (likewise); `alg`
/// ([`AlgorithmMismatch`](Self::AlgorithmMismatch)); the types of `kid`,
/// `use` and `key_ops`; `x` then `y` (base64url, length); the public key
/// ([`InvalidKey`](Self::InvalidKey)); `d` (base64url, length,
/// [`InvalidPrivateKey`](Self::InvalidPrivateKey),
/// [`PrivateKeyMismatch`](Self::PrivateKeyMismatch)).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JwkError {
    /// The input is larger than the accepted maximum (see
    /// [`JwksLimits`](super::JwksLimits)).
    TooLarge {
        /// The maximum length in bytes.
        limit: usize,
        /// The length of the input.
        actual: usize,
    },
    /// The JWK Set has more keys than the accepted maximum (see
    /// [`JwksLimits`](super::JwksLimits)).
    TooManyKeys {
        /// The maximum number of keys.
        limit: usize,
        /// The number of keys in the input.
        actual: usize,
    },
    /// The input is not JSON (syntax error, invalid UTF-8, trailing data,
    /// nesting too deep). Line and column are 1-based, as reported by
    /// `serde_json`.
    Json {
        /// The line of the error.
        line: usize,
        /// The column of the error.
        column: usize,
    },
    /// The input is JSON but fails the strict JSON check (for example an
    /// object with two members of the same name, which a lenient parser
    /// would silently resolve to the last one).
    StrictJson,
    /// The JWK (or the JWK Set) is not a JSON object.
    NotAnObject,
    /// A required member is absent (`kty`, `crv`, `x`, `y` for EC, `keys`,
    /// or the member named for [`JwkMember::TestPrivate`]).
    MissingMember {
        /// The member.
        member: JwkMember,
    },
    /// A member has the wrong JSON type or shape: `kid`, `use`, `alg`,
    /// `kty`, `crv`, `x`, `y` or `d` not a string; `key_ops` not an array of
    /// distinct strings; `y` on an `OKP` key; `keys` not an array of
    /// objects.
    InvalidMember {
        /// The member.
        member: JwkMember,
    },
    /// The key type (`kty`, e.g. `RSA`, `oct`) or the curve (`crv`, e.g.
    /// `X25519`, `Ed448`, `P-384`) is not one this module supports (only
    /// `OKP`/`Ed25519` and `EC`/`P-256` are).
    Unsupported {
        /// [`JwkMember::Kty`] or [`JwkMember::Crv`].
        member: JwkMember,
    },
    /// `alg` is present and is not an algorithm of the key's type and
    /// curve: `EdDSA` or `Ed25519` for `OKP`/`Ed25519`, `ES256` for
    /// `EC`/`P-256`. Any other value (`EdDSA` on an `EC` key, `RS256`,
    /// `HS256`, `none`, a different case) is a mismatch.
    AlgorithmMismatch,
    /// A binary member is not strict unpadded base64url (RFC 7515 §2):
    /// padding, the standard alphabet (`+`, `/`), non-zero trailing bits or
    /// another character.
    InvalidBase64 {
        /// The member.
        member: JwkMember,
        /// What the strict decoder rejected.
        error: EncodingError,
    },
    /// A binary member does not decode to the exact length its curve
    /// requires (32 bytes for Ed25519 `x` and `d`, P-256 `x`, `y` and `d`).
    InvalidLength {
        /// The member.
        member: JwkMember,
        /// The required length in bytes.
        expected: usize,
        /// The decoded length in bytes.
        actual: usize,
    },
    /// The public key is rejected: a P-256 point not on the curve, an
    /// Ed25519 key that is not a canonical point or is of small order.
    InvalidKey {
        /// The rejection from the [`crypto`](crate::crypto) module.
        error: CryptoError,
    },
    /// The private key is rejected (a P-256 scalar that is zero or not below
    /// the group order).
    InvalidPrivateKey {
        /// The rejection from the [`crypto`](crate::crypto) module.
        error: CryptoError,
    },
    /// The private key does not belong to the public key in the same JWK.
    PrivateKeyMismatch,
    /// A private key was required ([`Jwk::signing_key`](super::Jwk::signing_key))
    /// but the JWK is public only.
    MissingPrivateKey,
    /// Two keys given to [`Jwks::from_keys`](super::Jwks::from_keys) have
    /// the same `kid` (building a set to publish: a caller error).
    DuplicateKid {
        /// The index in `keys` of the second key with the `kid`.
        index: usize,
    },
    /// The `kid` of this entry of a parsed JWK Set is shared by another
    /// entry, whatever their purposes: neither can be told apart by `kid`,
    /// so every entry with that `kid` is unusable (the set itself, and its
    /// other `kid`s, stay usable).
    KidCollision,
    /// [`Jwk::with_member`](super::Jwk::with_member) was given the name of a
    /// member this module models (`kty`, `kid`, `alg`, `crv`, `use`,
    /// `key_ops`, `x`, `y`, `d`); those are set through the typed API.
    ReservedMember,
    /// The signing key cannot be represented as a JWK here (an HMAC secret)
    /// or its private key could not be exported.
    Crypto {
        /// The error from the [`crypto`](crate::crypto) module.
        error: CryptoError,
    },
}

impl fmt::Display for JwkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { limit, actual } => write!(f, "JWK input too large: {actual} bytes, limit {limit}"),
            Self::TooManyKeys { limit, actual } => write!(f, "JWK Set has {actual} keys, limit {limit}"),
            Self::Json { line, column } => write!(f, "JWK input is not JSON (line {line}, column {column})"),
            Self::StrictJson => f.write_str("JWK input is not strict JSON (duplicate object member names)"),
            Self::NotAnObject => f.write_str("JWK is not a JSON object"),
            Self::MissingMember { member } => write!(f, "JWK member {member} is missing"),
            Self::InvalidMember { member } => write!(f, "JWK member {member} has the wrong type or shape"),
            Self::Unsupported { member } => write!(f, "unsupported JWK {member} (only OKP/Ed25519 and EC/P-256)"),
            Self::AlgorithmMismatch => f.write_str("JWK alg is not consistent with its kty and crv"),
            Self::InvalidBase64 { member, error } => write!(f, "JWK member {member} is not strict base64url: {error}"),
            Self::InvalidLength {
                member,
                expected,
                actual,
            } => write!(f, "JWK member {member} must be {expected} bytes, got {actual}"),
            Self::InvalidKey { error } => write!(f, "JWK public key rejected: {error}"),
            Self::InvalidPrivateKey { error } => write!(f, "JWK private key rejected: {error}"),
            Self::PrivateKeyMismatch => f.write_str("JWK private key does not match its public key"),
            Self::MissingPrivateKey => f.write_str("JWK has no private key"),
            Self::DuplicateKid { index } => write!(f, "JWK Set key {index} repeats the kid of an earlier key"),
            Self::KidCollision => f.write_str("JWK Set has several keys with this kid; none of them is usable"),
            Self::ReservedMember => f.write_str("JWK member is modelled by the typed API, not set as an extra member"),
            Self::Crypto { error } => write!(f, "key cannot be exported as a JWK: {error}"),
        }
    }
}

impl std::error::Error for JwkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::InvalidBase64 { error, .. } => Some(error),
            Self::InvalidKey { error } | Self::InvalidPrivateKey { error } | Self::Crypto { error } => Some(error),
            _ => None,
        }
    }
}
