//! [`SigningKey`]: a private key (or HMAC secret) that produces signatures.

use core::fmt;

use super::backend::{ecdsa_p256, ed25519, hmac_sha256, pkix};
use super::verifying_key::Hex;
use super::{policy, Algorithm, CryptoError, KeyKind, KeyRejection, SecretBytes, Signature, VerifyingKey};

/// A key that signs RFC 9421 signature bases: an Ed25519 private key, a
/// P-256 private key, or an HMAC-SHA256 shared secret.
///
/// Private key material is zeroized on drop (Ed25519 by `ed25519-dalek`,
/// P-256 by AWS-LC's `OPENSSL_free`, HMAC secrets by `zeroize`), and `Debug`
/// prints only the algorithm and the public key. Ed25519 and HMAC signatures
/// are deterministic; ECDSA signatures are randomized.
///
/// ```
/// use adcp_sigbase::crypto::{Algorithm, SigningKey, VerifyingKey};
///
/// let signer = SigningKey::generate_p256()?;
/// let base = b"\"@method\": POST\n\"@signature-params\": (\"@method\");alg=\"ecdsa-p256-sha256\"";
/// let signature = signer.sign(base)?;
/// assert_eq!(signature.as_bytes().len(), 64);
///
/// // Publish the public key, e.g. as JWK x / y:
/// let point = signer.verifying_key().public_key_bytes().map(<[u8]>::to_vec).unwrap_or_default();
/// let verifier = VerifyingKey::p256_from_coordinates(&point[1..33], &point[33..65])?;
/// verifier.verify(Algorithm::EcdsaP256Sha256, base, signature.as_bytes())?;
/// # Ok::<(), adcp_sigbase::crypto::CryptoError>(())
/// ```
#[derive(Clone)]
pub struct SigningKey {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    Ed25519(ed25519::PrivateKey),
    EcdsaP256(ecdsa_p256::PrivateKey),
    Hmac(hmac_sha256::Key),
}

fn wrap<T>(kind: KeyKind, result: Result<T, KeyRejection>) -> Result<T, CryptoError> {
    result.map_err(|reason| CryptoError::invalid_key(kind, reason))
}

impl SigningKey {
    fn ed25519(key: ed25519::PrivateKey) -> Self {
        Self {
            inner: Inner::Ed25519(key),
        }
    }

    fn p256(key: ecdsa_p256::PrivateKey) -> Self {
        Self {
            inner: Inner::EcdsaP256(key),
        }
    }

    /// A new Ed25519 key from the CSPRNG (AWS-LC's, seeded from the
    /// operating system).
    ///
    /// # Errors
    ///
    /// [`CryptoError::RandomnessUnavailable`] if the random generator fails.
    pub fn generate_ed25519() -> Result<Self, CryptoError> {
        ed25519::PrivateKey::generate().map(Self::ed25519)
    }

    /// A new P-256 key from the CSPRNG (AWS-LC's, seeded from the operating
    /// system).
    ///
    /// # Errors
    ///
    /// [`CryptoError::RandomnessUnavailable`] if key generation fails.
    pub fn generate_p256() -> Result<Self, CryptoError> {
        ecdsa_p256::PrivateKey::generate().map(Self::p256)
    }

    /// An Ed25519 key from its 32-byte seed (RFC 8032 §5.1.5; the decoded
    /// JWK `d`).
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`] with kind [`KeyKind::Ed25519PrivateKey`]
    /// if the seed is not 32 bytes.
    pub fn ed25519_from_seed(seed: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::Ed25519PrivateKey, ed25519::PrivateKey::from_seed(seed)).map(Self::ed25519)
    }

    /// An Ed25519 key from a DER PKCS#8 v1 or v2 document (RFC 8410). A v2
    /// embedded public key must match.
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`] with kind [`KeyKind::Ed25519PrivateKey`]:
    /// `Malformed`, or `WrongKeyType` / `UnsupportedKeyType`.
    pub fn ed25519_from_pkcs8_der(der: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::Ed25519PrivateKey, ed25519::PrivateKey::from_pkcs8_der(der)).map(Self::ed25519)
    }

    /// An Ed25519 key from a PEM `PRIVATE KEY` (unencrypted PKCS#8) document.
    ///
    /// # Errors
    ///
    /// As [`SigningKey::ed25519_from_pkcs8_der`]; a PEM error or another
    /// label (including `ENCRYPTED PRIVATE KEY`) is `Malformed`.
    pub fn ed25519_from_pkcs8_pem(pem: &str) -> Result<Self, CryptoError> {
        let der = wrap(KeyKind::Ed25519PrivateKey, pkix::private_key_pem_to_der(pem))?;
        Self::ed25519_from_pkcs8_der(der.as_bytes())
    }

    /// A P-256 key from its 32-byte big-endian private scalar (the decoded
    /// JWK `d`).
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`] with kind [`KeyKind::P256PrivateKey`]:
    /// not 32 bytes (`Length`), or zero / not below the group order
    /// (`InvalidScalar`).
    pub fn p256_from_scalar(scalar: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::P256PrivateKey, ecdsa_p256::PrivateKey::from_scalar(scalar)).map(Self::p256)
    }

    /// A P-256 key from a DER PKCS#8 document.
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`] with kind [`KeyKind::P256PrivateKey`]:
    /// `Malformed`, `WrongKeyType` / `UnsupportedKeyType`, or `InvalidScalar`.
    pub fn p256_from_pkcs8_der(der: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::P256PrivateKey, ecdsa_p256::PrivateKey::from_pkcs8_der(der)).map(Self::p256)
    }

    /// A P-256 key from a PEM `PRIVATE KEY` (unencrypted PKCS#8) document.
    ///
    /// # Errors
    ///
    /// As [`SigningKey::p256_from_pkcs8_der`]; a PEM error or another label
    /// is `Malformed`.
    pub fn p256_from_pkcs8_pem(pem: &str) -> Result<Self, CryptoError> {
        let der = wrap(KeyKind::P256PrivateKey, pkix::private_key_pem_to_der(pem))?;
        Self::p256_from_pkcs8_der(der.as_bytes())
    }

    /// A P-256 key from a DER SEC1 `ECPrivateKey` (RFC 5915). If the
    /// structure names a curve it must be P-256.
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`] with kind [`KeyKind::P256PrivateKey`]:
    /// `Malformed` or `InvalidScalar`.
    pub fn p256_from_sec1_der(der: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::P256PrivateKey, ecdsa_p256::PrivateKey::from_sec1_der(der)).map(Self::p256)
    }

    /// A P-256 key from a PEM `EC PRIVATE KEY` (SEC1) document.
    ///
    /// # Errors
    ///
    /// As [`SigningKey::p256_from_sec1_der`]; a PEM error or another label
    /// is `Malformed`.
    pub fn p256_from_sec1_pem(pem: &str) -> Result<Self, CryptoError> {
        let der = wrap(KeyKind::P256PrivateKey, pkix::secret_pem_to_der(pem, "EC PRIVATE KEY"))?;
        Self::p256_from_sec1_der(der.as_bytes())
    }

    /// An Ed25519 or P-256 key from a DER PKCS#8 document, whichever it
    /// holds.
    ///
    /// # Errors
    ///
    /// [`CryptoError::InvalidKey`]: kind [`KeyKind::PrivateKey`] when the DER
    /// is malformed or holds another key type (`UnsupportedKeyType`),
    /// otherwise the errors of the type-specific constructor.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<Self, CryptoError> {
        match wrap(KeyKind::PrivateKey, pkix::pkcs8_key_type(der))? {
            pkix::KeyType::Ed25519 => Self::ed25519_from_pkcs8_der(der),
            pkix::KeyType::P256 => Self::p256_from_pkcs8_der(der),
            pkix::KeyType::Other => Err(CryptoError::invalid_key(
                KeyKind::PrivateKey,
                KeyRejection::UnsupportedKeyType,
            )),
        }
    }

    /// An Ed25519 or P-256 key from a PEM `PRIVATE KEY` document.
    ///
    /// # Errors
    ///
    /// As [`SigningKey::from_pkcs8_der`].
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, CryptoError> {
        let der = wrap(KeyKind::PrivateKey, pkix::private_key_pem_to_der(pem))?;
        Self::from_pkcs8_der(der.as_bytes())
    }

    /// An HMAC-SHA256 signing key from the shared secret (copied and
    /// zeroized on drop).
    ///
    /// # Errors
    ///
    /// As [`VerifyingKey::hmac_sha256`].
    pub fn hmac_sha256(secret: &[u8]) -> Result<Self, CryptoError> {
        wrap(KeyKind::HmacSecret, policy::check_hmac_secret(secret))?;
        Ok(Self {
            inner: Inner::Hmac(hmac_sha256::Key::new(secret)),
        })
    }

    /// The algorithm this key signs with.
    #[must_use]
    pub fn algorithm(&self) -> Algorithm {
        match self.inner {
            Inner::Ed25519(_) => Algorithm::Ed25519,
            Inner::EcdsaP256(_) => Algorithm::EcdsaP256Sha256,
            Inner::Hmac(_) => Algorithm::HmacSha256,
        }
    }

    /// The matching verification key. For HMAC this is a copy of the secret.
    #[must_use]
    pub fn verifying_key(&self) -> VerifyingKey {
        match &self.inner {
            Inner::Ed25519(k) => VerifyingKey::from_ed25519(k.public_key()),
            Inner::EcdsaP256(k) => VerifyingKey::from_p256(k.public_key().clone()),
            Inner::Hmac(k) => VerifyingKey::from_hmac(k.clone()),
        }
    }

    /// Signs the signature base, producing the bytes for the `Signature`
    /// header (before RFC 8941 byte-sequence encoding).
    ///
    /// # Errors
    ///
    /// [`CryptoError::SigningFailed`] if the backend fails (ECDSA only; it
    /// does not happen with a valid key in practice).
    pub fn sign(&self, base: &[u8]) -> Result<Signature, CryptoError> {
        let algorithm = self.algorithm();
        let bytes = match &self.inner {
            Inner::Ed25519(k) => k.sign(base).to_vec(),
            Inner::EcdsaP256(k) => k.sign(base)?.to_vec(),
            Inner::Hmac(k) => k.sign(base)?.to_vec(),
        };
        Ok(Signature::new(algorithm, bytes))
    }

    /// The private key as DER PKCS#8 (v2 with the public key for Ed25519,
    /// v1 for P-256), for storing a generated key.
    ///
    /// # Errors
    ///
    /// [`CryptoError::Unsupported`] for an HMAC secret;
    /// [`CryptoError::KeyExportFailed`] if serialization fails.
    pub fn to_pkcs8_der(&self) -> Result<SecretBytes, CryptoError> {
        match &self.inner {
            Inner::Ed25519(k) => k.to_pkcs8_der(),
            Inner::EcdsaP256(k) => k.to_pkcs8_der(),
            Inner::Hmac(_) => Err(CryptoError::Unsupported {
                algorithm: Algorithm::HmacSha256,
            }),
        }
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("SigningKey");
        s.field("algorithm", &self.algorithm().as_str());
        match &self.inner {
            Inner::Ed25519(k) => s.field("public_key", &Hex(k.public_key().as_bytes())),
            Inner::EcdsaP256(k) => s.field("public_key", &Hex(k.public_key().as_uncompressed())),
            Inner::Hmac(_) => s.field("secret", &"[REDACTED]"),
        };
        s.finish_non_exhaustive()
    }
}
