//! [`SoftwareSigner`]: an Ed25519 or P-256 private key held in memory.

use core::fmt;

use adcp_sigbase::crypto::{Algorithm, CryptoError, KeyKind, KeyRejection, SigningKey, VerifyingKey};
use adcp_sigbase::jwk::{Jwk, JwkError, Jwks};

use crate::key_id::check_key_id;
use crate::{KeyPurpose, SignError, Signer, SignerError};

/// The built-in [`Signer`]: an Ed25519 or ECDSA P-256 private key in
/// process memory, with its `kid` and the `adcp_use` it is published with.
///
/// Secret material is wiped when the signer is dropped (Ed25519 by
/// `ed25519-dalek`, P-256 by AWS-LC), the type is not `Clone` (share it
/// with an `Arc`), and `Debug` prints the `kid` and algorithm only.
///
/// Keys load from a private JWK (`d`), PKCS#8 (PEM or DER, whose algorithm
/// identifier names the key type), or raw bytes with an explicit algorithm
/// (32 raw bytes are a valid Ed25519 seed *and* a valid P-256 scalar, so
/// guessing would be the classic mistake). The public half exports as a
/// JWK / JWK Set ready to publish at the agent's `jwks_uri`.
///
/// ```
/// use adcp_sign::SoftwareSigner;
/// use adcp_sigbase::crypto::Algorithm;
///
/// let signer = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-01")?;
/// let public = signer.public_jwk()?.to_public_json();
/// assert_eq!(public["kid"], "seller-2026-01");
/// assert_eq!(public["alg"], "EdDSA");
/// assert_eq!(public["use"], "sig");
/// assert_eq!(public["key_ops"], serde_json::json!(["verify"]));
/// assert_eq!(public["adcp_use"], "request-signing");
/// assert!(public.get("d").is_none());
///
/// // Misuse is a typed error.
/// let public_only = serde_json::to_vec(&public)?;
/// assert_eq!(SoftwareSigner::from_jwk_json(&public_only).unwrap_err().code(), "private_key_missing");
/// assert_eq!(
///     signer.require_algorithm(Algorithm::EcdsaP256Sha256).unwrap_err().code(),
///     "key_algorithm_mismatch"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SoftwareSigner {
    key: SigningKey,
    kid: String,
    purpose: KeyPurpose,
}

impl SoftwareSigner {
    /// A signer for `key` published under `kid`, with purpose
    /// `request-signing`.
    ///
    /// # Errors
    ///
    /// `alg_not_allowed` for an HMAC key; `key_id_invalid`.
    pub fn new(key: SigningKey, kid: impl Into<String>) -> Result<Self, SignError> {
        let algorithm = key.algorithm();
        if !crate::http_signer::ALLOWED.contains(&algorithm) {
            return Err(SignError::AlgorithmNotAllowed { algorithm });
        }
        let kid = kid.into();
        check_key_id(&kid)?;
        Ok(Self {
            key,
            kid,
            purpose: KeyPurpose::RequestSigning,
        })
    }

    /// A new key from the operating system's CSPRNG.
    ///
    /// # Errors
    ///
    /// `alg_not_allowed` for `hmac-sha256`; `key_id_invalid`;
    /// `randomness_unavailable`.
    pub fn generate(algorithm: Algorithm, kid: impl Into<String>) -> Result<Self, SignError> {
        let key = match algorithm {
            Algorithm::Ed25519 => SigningKey::generate_ed25519(),
            Algorithm::EcdsaP256Sha256 => SigningKey::generate_p256(),
            other => return Err(SignError::AlgorithmNotAllowed { algorithm: other }),
        }
        .map_err(key_error)?;
        Self::new(key, kid)
    }

    /// A signer from a private JWK: its `kid`, its `d`, and its
    /// `adcp_use` if it has one.
    ///
    /// # Errors
    ///
    /// `key_id_missing`, `key_id_invalid`; `private_key_missing` for a
    /// public JWK; `key_purpose_invalid` if `adcp_use` is present and not
    /// `request-signing` / `webhook-signing`.
    pub fn from_jwk(jwk: &Jwk) -> Result<Self, SignError> {
        let kid = jwk.kid().ok_or(SignError::KeyIdMissing)?;
        let purpose = match jwk.member("adcp_use") {
            None => KeyPurpose::RequestSigning,
            Some(value) => value
                .as_str()
                .and_then(KeyPurpose::from_adcp_use)
                .ok_or(SignError::KeyPurposeInvalid)?,
        };
        let key = jwk.signing_key().map_err(jwk_error)?;
        Ok(Self::new(key, kid)?.with_key_purpose(purpose))
    }

    /// A signer from the bytes of a private JWK file (strict JSON, as
    /// [`Jwk::parse`]).
    ///
    /// # Errors
    ///
    /// `key_algorithm_mismatch` if the JWK's `alg` contradicts its `kty` /
    /// `crv`; `key_invalid` for anything else [`Jwk::parse`] rejects; then
    /// as [`SoftwareSigner::from_jwk`].
    pub fn from_jwk_json(bytes: &[u8]) -> Result<Self, SignError> {
        Self::from_jwk(&Jwk::parse(bytes).map_err(jwk_error)?)
    }

    /// A signer from a PEM `PRIVATE KEY` (unencrypted PKCS#8) holding an
    /// Ed25519 or P-256 key.
    ///
    /// # Errors
    ///
    /// `key_invalid`; `key_id_invalid`.
    pub fn from_pkcs8_pem(pem: &str, kid: impl Into<String>) -> Result<Self, SignError> {
        Self::new(SigningKey::from_pkcs8_pem(pem).map_err(key_error)?, kid)
    }

    /// A signer from a DER PKCS#8 document holding an Ed25519 or P-256 key.
    ///
    /// # Errors
    ///
    /// `key_invalid`; `key_id_invalid`.
    pub fn from_pkcs8_der(der: &[u8], kid: impl Into<String>) -> Result<Self, SignError> {
        Self::new(SigningKey::from_pkcs8_der(der).map_err(key_error)?, kid)
    }

    /// A signer from raw private key bytes, read as `algorithm` says: the
    /// 32-byte Ed25519 seed or the 32-byte big-endian P-256 scalar.
    ///
    /// # Errors
    ///
    /// `alg_not_allowed` for `hmac-sha256`; `key_invalid` (length, scalar
    /// out of range); `key_id_invalid`.
    pub fn from_raw(algorithm: Algorithm, bytes: &[u8], kid: impl Into<String>) -> Result<Self, SignError> {
        let key = match algorithm {
            Algorithm::Ed25519 => SigningKey::ed25519_from_seed(bytes),
            Algorithm::EcdsaP256Sha256 => SigningKey::p256_from_scalar(bytes),
            other => return Err(SignError::AlgorithmNotAllowed { algorithm: other }),
        }
        .map_err(key_error)?;
        Self::new(key, kid)
    }

    /// This signer, if its key is for `algorithm`.
    ///
    /// # Errors
    ///
    /// `key_algorithm_mismatch`.
    pub fn require_algorithm(self, algorithm: Algorithm) -> Result<Self, SignError> {
        let key = self.key.algorithm();
        if key == algorithm {
            Ok(self)
        } else {
            Err(SignError::KeyAlgorithmMismatch {
                requested: Some(algorithm),
                key: Some(key),
            })
        }
    }

    /// The same signer published with `purpose`.
    #[must_use]
    pub fn with_key_purpose(mut self, purpose: KeyPurpose) -> Self {
        self.purpose = purpose;
        self
    }

    /// The `adcp_use` the key is published with.
    #[must_use]
    pub fn key_purpose(&self) -> KeyPurpose {
        self.purpose
    }

    /// The public key.
    #[must_use]
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The public JWK to publish: `kty`, `crv`, `x` (and `y`), `kid`, `alg`
    /// (`EdDSA` / `ES256`), `use: "sig"`, `key_ops: ["verify"]`,
    /// `adcp_use`.
    ///
    /// # Errors
    ///
    /// `key_invalid` (not expected for a key this type accepted).
    pub fn public_jwk(&self) -> Result<Jwk, SignError> {
        Jwk::from_signing_key(&self.key, self.kid.as_str())
            .and_then(|jwk| jwk.with_member("adcp_use", self.purpose.as_str().into()))
            .map_err(jwk_error)
    }

    /// The private JWK (the public JWK plus `d`), for a private-key file.
    /// Its JSON holds the secret in an ordinary `String`: write it out and
    /// drop it.
    ///
    /// # Errors
    ///
    /// `key_invalid` if the key cannot be exported.
    pub fn private_jwk(&self) -> Result<Jwk, SignError> {
        Jwk::with_private(&self.key, self.kid.as_str())
            .and_then(|jwk| jwk.with_member("adcp_use", self.purpose.as_str().into()))
            .map_err(jwk_error)
    }

    /// A JWK Set holding the public JWK alone.
    ///
    /// # Errors
    ///
    /// As [`SoftwareSigner::public_jwk`].
    pub fn jwks(&self) -> Result<Jwks, SignError> {
        Jwks::from_keys([self.public_jwk()?]).map_err(jwk_error)
    }
}

impl Signer for SoftwareSigner {
    fn key_id(&self) -> &str {
        &self.kid
    }

    fn algorithm(&self) -> Algorithm {
        self.key.algorithm()
    }

    fn key_purpose(&self) -> Option<KeyPurpose> {
        Some(self.purpose)
    }

    async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignerError> {
        self.key
            .sign(message)
            .map(adcp_sigbase::crypto::Signature::into_bytes)
            .map_err(SignerError::failed)
    }
}

impl fmt::Debug for SoftwareSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SoftwareSigner")
            .field("kid", &self.kid)
            .field("algorithm", &self.key.algorithm().as_str())
            .field("purpose", &self.purpose.as_str())
            .finish_non_exhaustive()
    }
}

/// Maps a key-material error from the crypto module.
pub(crate) fn key_error(error: CryptoError) -> SignError {
    match error {
        CryptoError::InvalidKey {
            kind: KeyKind::HmacSecret,
            reason: KeyRejection::TooShort { minimum, actual },
        } => SignError::HmacSecretTooShort { minimum, actual },
        CryptoError::InvalidKey {
            kind: KeyKind::HmacSecret,
            reason: KeyRejection::WeakKey,
        } => SignError::HmacSecretWeak,
        CryptoError::RandomnessUnavailable => SignError::RandomnessUnavailable,
        CryptoError::AlgorithmKeyMismatch { algorithm, key } => SignError::KeyAlgorithmMismatch {
            requested: Some(algorithm),
            key: Some(key),
        },
        other => SignError::KeyInvalid {
            reason: other.to_string(),
        },
    }
}

/// Maps a JWK error.
fn jwk_error(error: JwkError) -> SignError {
    match error {
        JwkError::MissingPrivateKey => SignError::PrivateKeyMissing,
        JwkError::AlgorithmMismatch => SignError::KeyAlgorithmMismatch {
            requested: None,
            key: None,
        },
        other => SignError::KeyInvalid {
            reason: other.to_string(),
        },
    }
}
