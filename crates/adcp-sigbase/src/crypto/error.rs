//! The error type of the [`crypto`](super) module.
//!
//! Every failure is a small `Copy` value: no variant carries key material,
//! signature bytes, message bytes or caller-supplied strings, so an error can
//! be logged or returned to a peer without leaking anything.

use core::fmt;

use super::Algorithm;

/// Which kind of key material was being read when a key was rejected.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// An Ed25519 public key (raw 32 bytes or SubjectPublicKeyInfo).
    Ed25519PublicKey,
    /// An Ed25519 private key (32-byte seed or PKCS#8).
    Ed25519PrivateKey,
    /// A P-256 public key (SEC1 point, JWK coordinates or SubjectPublicKeyInfo).
    P256PublicKey,
    /// A P-256 private key (32-byte scalar, PKCS#8 or SEC1 `ECPrivateKey`).
    P256PrivateKey,
    /// An HMAC-SHA256 shared secret.
    HmacSecret,
    /// A SubjectPublicKeyInfo whose key type was not yet known (generic
    /// `from_spki_*` constructors).
    PublicKey,
    /// A PKCS#8 private key whose key type was not yet known (generic
    /// `from_pkcs8_*` constructors).
    PrivateKey,
}

impl KeyKind {
    fn describe(self) -> &'static str {
        match self {
            Self::Ed25519PublicKey => "Ed25519 public key",
            Self::Ed25519PrivateKey => "Ed25519 private key",
            Self::P256PublicKey => "P-256 public key",
            Self::P256PrivateKey => "P-256 private key",
            Self::HmacSecret => "HMAC-SHA256 secret",
            Self::PublicKey => "public key",
            Self::PrivateKey => "private key",
        }
    }
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Why key material was rejected.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyRejection {
    /// A fixed-size encoding had the wrong length.
    Length {
        /// The required length in bytes.
        expected: usize,
        /// The length that was supplied.
        actual: usize,
    },
    /// A variable-size secret is shorter than the accepted minimum
    /// (see [`HMAC_MIN_SECRET_LEN`](super::HMAC_MIN_SECRET_LEN)).
    TooShort {
        /// The minimum length in bytes.
        minimum: usize,
        /// The length that was supplied.
        actual: usize,
    },
    /// The DER, PEM or SEC1 structure could not be parsed, had the wrong PEM
    /// label, was encrypted, or its embedded public key does not match its
    /// private key.
    Malformed,
    /// The structure is well formed but holds a key of another type or curve
    /// (for example a P-256 SubjectPublicKeyInfo given to an Ed25519
    /// constructor).
    WrongKeyType,
    /// The structure holds a key of a type this module does not support
    /// (neither Ed25519 nor P-256).
    UnsupportedKeyType,
    /// The public point is not on the curve, is the identity, or (Ed25519)
    /// does not decompress.
    InvalidPoint,
    /// The Ed25519 public key is not the canonical encoding of its point.
    NonCanonical,
    /// The key is weak: an Ed25519 public key of small order, or an HMAC
    /// secret made of one repeated byte.
    WeakKey,
    /// The P-256 private scalar is zero or not below the group order.
    InvalidScalar,
}

impl fmt::Display for KeyRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length { expected, actual } => write!(f, "expected {expected} bytes, got {actual}"),
            Self::TooShort { minimum, actual } => write!(f, "at least {minimum} bytes required, got {actual}"),
            Self::Malformed => f.write_str("malformed encoding"),
            Self::WrongKeyType => f.write_str("the encoding holds a key of another type"),
            Self::UnsupportedKeyType => f.write_str("unsupported key type (only Ed25519 and P-256 are supported)"),
            Self::InvalidPoint => f.write_str("not a valid curve point"),
            Self::NonCanonical => f.write_str("non-canonical point encoding"),
            Self::WeakKey => f.write_str("weak key"),
            Self::InvalidScalar => f.write_str("private scalar out of range"),
        }
    }
}

/// An error from key parsing, signing or verification.
///
/// `Display` messages never contain key material, signature bytes or the
/// signature base. [`CryptoError::VerificationFailed`] deliberately carries
/// no detail.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CryptoError {
    /// The string is not an algorithm name this module knows (RFC 9421 names
    /// are matched exactly and case-sensitively; see [`Algorithm`]).
    UnknownAlgorithm,
    /// Key material was rejected.
    InvalidKey {
        /// What was being read.
        kind: KeyKind,
        /// Why it was rejected.
        reason: KeyRejection,
    },
    /// The signature does not have the fixed length the algorithm requires
    /// (64 bytes for `ed25519` and `ecdsa-p256-sha256`, 32 for `hmac-sha256`).
    InvalidSignatureLength {
        /// The algorithm the signature was checked under.
        algorithm: Algorithm,
        /// The required length in bytes.
        expected: usize,
        /// The supplied length in bytes.
        actual: usize,
    },
    /// The signature is in an encoding RFC 9421 does not allow: an ASN.1 DER
    /// `ECDSA-Sig-Value` where RFC 9421 §3.3.4 requires the fixed 64-byte
    /// `r || s` form.
    InvalidSignatureEncoding {
        /// The algorithm the signature was checked under.
        algorithm: Algorithm,
    },
    /// The algorithm requested for the operation is not the key's algorithm.
    AlgorithmKeyMismatch {
        /// The algorithm that was requested (e.g. from the `alg` parameter).
        algorithm: Algorithm,
        /// The algorithm the key is for.
        key: Algorithm,
    },
    /// The signature does not verify. No further detail is given on purpose.
    VerificationFailed,
    /// The backend failed to produce a signature (an internal error).
    SigningFailed,
    /// The system random number generator failed while generating a key.
    RandomnessUnavailable,
    /// The backend failed to serialize a private key (an internal error).
    KeyExportFailed,
    /// The operation does not exist for this kind of key (for example
    /// exporting an HMAC secret as PKCS#8).
    Unsupported {
        /// The algorithm of the key.
        algorithm: Algorithm,
    },
}

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownAlgorithm => f.write_str("unknown signature algorithm"),
            Self::InvalidKey { kind, reason } => write!(f, "invalid {kind}: {reason}"),
            Self::InvalidSignatureLength {
                algorithm,
                expected,
                actual,
            } => write!(
                f,
                "invalid {algorithm} signature length: expected {expected} bytes, got {actual}"
            ),
            Self::InvalidSignatureEncoding { algorithm } => write!(
                f,
                "invalid {algorithm} signature encoding: DER-encoded ECDSA signature, \
                 RFC 9421 requires the fixed-size r||s form"
            ),
            Self::AlgorithmKeyMismatch { algorithm, key } => {
                write!(f, "algorithm {algorithm} does not match the key's algorithm {key}")
            }
            Self::VerificationFailed => f.write_str("signature verification failed"),
            Self::SigningFailed => f.write_str("signing failed"),
            Self::RandomnessUnavailable => f.write_str("system random number generator unavailable"),
            Self::KeyExportFailed => f.write_str("private key export failed"),
            Self::Unsupported { algorithm } => write!(f, "operation not supported for {algorithm} keys"),
        }
    }
}

impl std::error::Error for CryptoError {}

impl CryptoError {
    pub(crate) const fn invalid_key(kind: KeyKind, reason: KeyRejection) -> Self {
        Self::InvalidKey { kind, reason }
    }
}
