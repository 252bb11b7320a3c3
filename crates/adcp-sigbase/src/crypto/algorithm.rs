//! The signature algorithms this module implements, with their RFC 9421 and
//! JOSE names.

use core::fmt;
use core::str::FromStr;

use super::CryptoError;

/// An RFC 9421 signature algorithm (HTTP Signature Algorithms registry,
/// RFC 9421 §6.2.2).
///
/// The RFC 9421 names are matched exactly and case-sensitively by
/// [`FromStr`]: `"ed25519"` parses, `"ED25519"` and `"Ed25519"` do not.
/// [`Algorithm::from_jose`] and [`Algorithm::jose_name`] map the JOSE `alg`
/// values (RFC 7518, RFC 8037, RFC 9864) carried by AdCP JWKs.
///
/// ```
/// use adcp_sigbase::crypto::Algorithm;
///
/// let alg: Algorithm = "ecdsa-p256-sha256".parse()?;
/// assert_eq!(alg, Algorithm::EcdsaP256Sha256);
/// assert_eq!(alg.jose_name(), "ES256");
/// assert!("ECDSA-P256-SHA256".parse::<Algorithm>().is_err());
/// # Ok::<(), adcp_sigbase::crypto::CryptoError>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// `ed25519`: EdDSA using curve edwards25519 (RFC 9421 §3.3.6, RFC 8032).
    /// JOSE `EdDSA` (or the fully-specified `Ed25519`, RFC 9864).
    Ed25519,
    /// `ecdsa-p256-sha256`: ECDSA using curve P-256 and SHA-256
    /// (RFC 9421 §3.3.4); the signature is the fixed 64-byte `r || s`.
    /// JOSE `ES256`.
    EcdsaP256Sha256,
    /// `hmac-sha256`: HMAC using SHA-256 (RFC 9421 §3.3.3); the signature is
    /// the full 32-byte tag. JOSE `HS256`.
    HmacSha256,
}

impl Algorithm {
    /// Every supported algorithm, in a stable order.
    pub const ALL: [Self; 3] = [Self::Ed25519, Self::EcdsaP256Sha256, Self::HmacSha256];

    /// The RFC 9421 name, as used in the `alg` signature parameter.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ed25519 => "ed25519",
            Self::EcdsaP256Sha256 => "ecdsa-p256-sha256",
            Self::HmacSha256 => "hmac-sha256",
        }
    }

    /// The JOSE `alg` name (RFC 7518 / RFC 8037): `EdDSA`, `ES256`, `HS256`.
    #[must_use]
    pub const fn jose_name(self) -> &'static str {
        match self {
            Self::Ed25519 => "EdDSA",
            Self::EcdsaP256Sha256 => "ES256",
            Self::HmacSha256 => "HS256",
        }
    }

    /// Maps a JOSE `alg` value to an algorithm, exactly and
    /// case-sensitively.
    ///
    /// Accepts `EdDSA` and the fully-specified `Ed25519` (RFC 9864), `ES256`
    /// and `HS256`. Note that JOSE `EdDSA` alone also names Ed448; callers
    /// that read a JWK must also check `kty` = `OKP` and `crv` = `Ed25519`.
    ///
    /// # Errors
    ///
    /// [`CryptoError::UnknownAlgorithm`] for any other value.
    pub fn from_jose(name: &str) -> Result<Self, CryptoError> {
        match name {
            "EdDSA" | "Ed25519" => Ok(Self::Ed25519),
            "ES256" => Ok(Self::EcdsaP256Sha256),
            "HS256" => Ok(Self::HmacSha256),
            _ => Err(CryptoError::UnknownAlgorithm),
        }
    }

    /// The exact length in bytes of a signature under this algorithm:
    /// 64 for `ed25519` and `ecdsa-p256-sha256`, 32 for `hmac-sha256`.
    #[must_use]
    pub const fn signature_len(self) -> usize {
        match self {
            Self::Ed25519 | Self::EcdsaP256Sha256 => 64,
            Self::HmacSha256 => 32,
        }
    }

    /// Whether the algorithm uses a shared secret (`hmac-sha256`) rather
    /// than a key pair.
    #[must_use]
    pub const fn is_symmetric(self) -> bool {
        matches!(self, Self::HmacSha256)
    }
}

impl FromStr for Algorithm {
    type Err = CryptoError;

    /// Parses an RFC 9421 algorithm name, exactly and case-sensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ed25519" => Ok(Self::Ed25519),
            "ecdsa-p256-sha256" => Ok(Self::EcdsaP256Sha256),
            "hmac-sha256" => Ok(Self::HmacSha256),
            _ => Err(CryptoError::UnknownAlgorithm),
        }
    }
}

impl fmt::Display for Algorithm {
    /// Writes the RFC 9421 name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
