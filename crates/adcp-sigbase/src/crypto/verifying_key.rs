//! [`VerifyingKey`]: a public key (or HMAC secret) that checks signatures.

use core::fmt;

use super::backend::{ecdsa_p256, ed25519, hmac_sha256, pkix};
use super::{policy, Algorithm, CryptoError, KeyKind, KeyRejection};

/// A key that verifies RFC 9421 signatures: an Ed25519 public key, a P-256
/// public key, or an HMAC-SHA256 shared secret.
///
/// Every constructor validates the key completely, so a `VerifyingKey` that
/// exists is usable: Ed25519 keys are canonical and not of small order,
/// P-256 points are on the curve and not the identity, HMAC secrets meet
/// [`HMAC_MIN_SECRET_LEN`](super::HMAC_MIN_SECRET_LEN). Parsed backend key
/// objects are cached, so verifying many signatures with one key does not
/// re-parse it; keep and reuse (or share) the `VerifyingKey`. It is `Send +
/// Sync` and cheap to clone.
///
/// `Debug` prints public keys and redacts HMAC secrets. Equality compares
/// the key material (HMAC secrets in constant time).
#[derive(Clone)]
pub struct VerifyingKey {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    Ed25519(ed25519::PublicKey),
    EcdsaP256(ecdsa_p256::PublicKey),
    Hmac(hmac_sha256::Key),
}

fn wrap<T>(kind: KeyKind, result: Result<T, KeyRejection>) -> Result<T, CryptoError> {
    result.map_err(|reason| CryptoError::invalid_key(kind, reason))
}

impl VerifyingKey {
    pub(crate) fn from_ed25519(key: ed25519::PublicKey) -> Self {
        Self {
            inner: Inner::Ed25519(key),
        }
    }

    pub(crate) fn from_p256(key: ecdsa_p256::PublicKey) -> Self {
        Self {
            inner: Inner::EcdsaP256(key),
        }
    }

    /// The Ed25519 key inside, for batch verification.
    pub(crate) fn as_ed25519(&self) -> Option<&ed25519::PublicKey> {
        match &self.inner {
            Inner::Ed25519(key) => Some(key),
            _ => None,
        }
    }

    pub(crate) fn from_hmac(key: hmac_sha256::Key) -> Self {
        Self {
            inner: Inner::Hmac(key),
        }
    }

    /// An Ed25519 public key from its raw 32-byte encoding (RFC 8032
    /// §5.1.5; the decoded JWK `x` of an `OKP`/`Ed25519` key).
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`] with kind [`KeyKind::Ed25519PublicKey`]:
    /// wrong length, not a point, non-canonical encoding, or a small-order
    /// (weak) point such as the identity or the all-zero encoding.
    pub fn ed25519_from_bytes(bytes: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::Ed25519PublicKey, ed25519::PublicKey::from_bytes(bytes)).map(Self::from_ed25519)
    }

    /// An Ed25519 public key from a DER SubjectPublicKeyInfo (RFC 8410).
    ///
    /// # Errors
    ///
    /// As [`VerifyingKey::ed25519_from_bytes`], plus `Malformed` DER and
    /// `WrongKeyType` / `UnsupportedKeyType` for other key types.
    pub fn ed25519_from_spki_der(der: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::Ed25519PublicKey, ed25519::PublicKey::from_spki_der(der)).map(Self::from_ed25519)
    }

    /// An Ed25519 public key from a PEM `PUBLIC KEY` document (RFC 8410).
    ///
    /// # Errors
    ///
    /// As [`VerifyingKey::ed25519_from_spki_der`]; a PEM error or another
    /// label is `Malformed`.
    pub fn ed25519_from_spki_pem(pem: &str) -> Result<Self, CryptoError> {
        let der = wrap(KeyKind::Ed25519PublicKey, pkix::public_key_pem_to_der(pem))?;
        Self::ed25519_from_spki_der(der.as_bytes())
    }

    /// A P-256 public key from an uncompressed SEC1 point
    /// (`0x04 || x || y`, 65 bytes).
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`] with kind [`KeyKind::P256PublicKey`]:
    /// wrong length, another point form (`Malformed`), or a point not on the
    /// curve (`InvalidPoint`).
    pub fn p256_from_uncompressed(bytes: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::P256PublicKey, ecdsa_p256::PublicKey::from_uncompressed(bytes)).map(Self::from_p256)
    }

    /// A P-256 public key from JWK-style affine coordinates: the decoded
    /// `x` and `y` of an `EC`/`P-256` JWK, each exactly 32 bytes.
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`] with kind [`KeyKind::P256PublicKey`]:
    /// a coordinate that is not 32 bytes (`Length`), or a point not on the
    /// curve (`InvalidPoint`).
    pub fn p256_from_coordinates(x: &[u8], y: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::P256PublicKey, ecdsa_p256::PublicKey::from_coordinates(x, y)).map(Self::from_p256)
    }

    /// A P-256 public key from a DER SubjectPublicKeyInfo (RFC 5480,
    /// namedCurve secp256r1; compressed points are accepted here).
    ///
    /// # Errors
    ///
    /// As [`VerifyingKey::p256_from_uncompressed`], plus `Malformed` DER and
    /// `WrongKeyType` / `UnsupportedKeyType` for other key types or curves.
    pub fn p256_from_spki_der(der: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::P256PublicKey, ecdsa_p256::PublicKey::from_spki_der(der)).map(Self::from_p256)
    }

    /// A P-256 public key from a PEM `PUBLIC KEY` document.
    ///
    /// # Errors
    ///
    /// As [`VerifyingKey::p256_from_spki_der`]; a PEM error or another label
    /// is `Malformed`.
    pub fn p256_from_spki_pem(pem: &str) -> Result<Self, CryptoError> {
        let der = wrap(KeyKind::P256PublicKey, pkix::public_key_pem_to_der(pem))?;
        Self::p256_from_spki_der(der.as_bytes())
    }

    /// An Ed25519 or P-256 public key from a DER SubjectPublicKeyInfo,
    /// whichever it holds.
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`]: kind [`KeyKind::PublicKey`] when the DER
    /// is malformed or holds another key type (`UnsupportedKeyType`),
    /// otherwise the errors of the type-specific constructor.
    pub fn from_spki_der(der: &[u8]) -> Result<Self, CryptoError> {
        let (key_type, _) = wrap(KeyKind::PublicKey, pkix::parse_spki(der))?;
        match key_type {
            pkix::KeyType::Ed25519 => Self::ed25519_from_spki_der(der),
            pkix::KeyType::P256 => Self::p256_from_spki_der(der),
            pkix::KeyType::Other => Err(CryptoError::invalid_key(
                KeyKind::PublicKey,
                KeyRejection::UnsupportedKeyType,
            )),
        }
    }

    /// An Ed25519 or P-256 public key from a PEM `PUBLIC KEY` document.
    ///
    /// # Errors
    ///
    /// As [`VerifyingKey::from_spki_der`].
    pub fn from_spki_pem(pem: &str) -> Result<Self, CryptoError> {
        let der = wrap(KeyKind::PublicKey, pkix::public_key_pem_to_der(pem))?;
        Self::from_spki_der(der.as_bytes())
    }

    /// An HMAC-SHA256 verification key from the shared secret (copied and
    /// zeroized on drop).
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`] with kind [`KeyKind::HmacSecret`]:
    /// shorter than [`HMAC_MIN_SECRET_LEN`](super::HMAC_MIN_SECRET_LEN)
    /// (`TooShort`), or a single repeated byte (`WeakKey`).
    pub fn hmac_sha256(secret: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::HmacSecret, policy::check_hmac_secret(secret))?;
        Ok(Self::from_hmac(hmac_sha256::Key::new(secret)))
    }

    /// The algorithm this key verifies.
    #[must_use]
    pub fn algorithm(&self) -> Algorithm {
        match self.inner {
            Inner::Ed25519(_) => Algorithm::Ed25519,
            Inner::EcdsaP256(_) => Algorithm::EcdsaP256Sha256,
            Inner::Hmac(_) => Algorithm::HmacSha256,
        }
    }

    /// The public key bytes: the raw 32-byte Ed25519 key, or the 65-byte
    /// uncompressed SEC1 P-256 point (`0x04 || x || y`, from which JWK `x`
    /// and `y` are bytes 1..33 and 33..65). `None` for an HMAC secret.
    #[must_use]
    pub fn public_key_bytes(&self) -> Option<&[u8]> {
        match &self.inner {
            Inner::Ed25519(key) => Some(key.as_bytes()),
            Inner::EcdsaP256(key) => Some(key.as_uncompressed()),
            Inner::Hmac(_) => None,
        }
    }

    /// Verifies `signature` over the signature base `base` under `algorithm`
    /// (typically the `alg` parameter, or the JWK's `alg`).
    ///
    /// `signature` is the decoded byte sequence from the `Signature` header:
    /// exactly 64 bytes for `ed25519` (decided as `verify_strict` decides) and
    /// `ecdsa-p256-sha256` (`r || s`; high-S accepted), exactly 32 bytes for
    /// `hmac-sha256` (compared in constant time).
    ///
    /// # Errors
    ///
    /// - [`CryptoError::AlgorithmKeyMismatch`] if `algorithm` is not this
    ///   key's algorithm (checked first, before looking at the signature);
    /// - [`CryptoError::InvalidSignatureLength`] for a wrong length;
    /// - [`CryptoError::InvalidSignatureEncoding`] for a DER-encoded ECDSA
    ///   signature;
    /// - [`CryptoError::VerificationFailed`] if the signature does not verify.
    pub fn verify(&self, algorithm: Algorithm, base: &[u8], signature: &[u8]) -> Result<(), CryptoError> {
        let key = self.algorithm();
        if algorithm != key {
            return Err(CryptoError::AlgorithmKeyMismatch { algorithm, key });
        }
        match &self.inner {
            Inner::Ed25519(k) => k.verify(base, signature),
            Inner::EcdsaP256(k) => k.verify(base, signature),
            Inner::Hmac(k) => k.verify(base, signature),
        }
    }
}

impl PartialEq for VerifyingKey {
    fn eq(&self, other: &Self) -> bool {
        match (&self.inner, &other.inner) {
            (Inner::Ed25519(a), Inner::Ed25519(b)) => a.as_bytes() == b.as_bytes(),
            (Inner::EcdsaP256(a), Inner::EcdsaP256(b)) => a.as_uncompressed() == b.as_uncompressed(),
            (Inner::Hmac(a), Inner::Hmac(b)) => a.ct_eq(b),
            _ => false,
        }
    }
}

impl Eq for VerifyingKey {}

/// Lower-case hex, for `Debug` of public keys.
pub(crate) struct Hex<'a>(pub(crate) &'a [u8]);

impl fmt::Debug for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("VerifyingKey");
        s.field("algorithm", &self.algorithm().as_str());
        match self.public_key_bytes() {
            Some(bytes) => s.field("public_key", &Hex(bytes)),
            None => s.field("secret", &"[REDACTED]"),
        };
        s.finish()
    }
}
