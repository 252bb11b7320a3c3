//! Ed25519 through `ed25519-dalek` 2: RFC 8032 signing, RFC 8410 SPKI /
//! PKCS#8 parsing, and verification with exactly the decisions of
//! `verify_strict`, computed by [`ed25519_equation`] on `curve25519-dalek`.

use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};

use super::ed25519_equation;
use super::pkix::{self, KeyType};
use super::zeroize::Zeroizing;
use crate::crypto::{Algorithm, CryptoError, KeyRejection, SecretBytes};

/// Length of a raw Ed25519 public key.
pub(crate) const PUBLIC_KEY_LEN: usize = ed25519_dalek::PUBLIC_KEY_LENGTH;
/// Length of an Ed25519 private key seed.
pub(crate) const SEED_LEN: usize = ed25519_dalek::SECRET_KEY_LENGTH;
/// Length of an Ed25519 signature.
pub(crate) const SIGNATURE_LEN: usize = ed25519_dalek::SIGNATURE_LENGTH;

/// A validated Ed25519 public key: canonical encoding, not of small order.
#[derive(Clone)]
pub(crate) struct PublicKey {
    dalek: ed25519_dalek::VerifyingKey,
}

impl PublicKey {
    /// From the raw 32-byte encoding (RFC 8032 §5.1.2; a JWK `x`).
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self, KeyRejection> {
        let array: &[u8; PUBLIC_KEY_LEN] = bytes.try_into().map_err(|_| KeyRejection::Length {
            expected: PUBLIC_KEY_LEN,
            actual: bytes.len(),
        })?;
        let key = ed25519_dalek::VerifyingKey::from_bytes(array).map_err(|_| KeyRejection::InvalidPoint)?;
        // curve25519-dalek decompresses some non-canonical encodings (y >= p,
        // or x = 0 with the sign bit set); accept only the canonical one.
        if key.to_edwards().compress().as_bytes() != array {
            return Err(KeyRejection::NonCanonical);
        }
        // Small-order keys (including the identity and the all-zero
        // encoding) make forgeries trivial; verify_strict would reject every
        // signature, reject the key up front instead.
        if key.is_weak() {
            return Err(KeyRejection::WeakKey);
        }
        Ok(Self::from_dalek(key))
    }

    fn from_dalek(dalek: ed25519_dalek::VerifyingKey) -> Self {
        Self { dalek }
    }

    /// From a DER SubjectPublicKeyInfo (RFC 8410).
    pub(crate) fn from_spki_der(der: &[u8]) -> Result<Self, KeyRejection> {
        let (key_type, key) = pkix::parse_spki(der)?;
        pkix::expect_key_type(key_type, KeyType::Ed25519)?;
        Self::from_bytes(key)
    }

    /// The raw 32-byte encoding.
    pub(crate) fn as_bytes(&self) -> &[u8; PUBLIC_KEY_LEN] {
        self.dalek.as_bytes()
    }

    /// The `ed25519-dalek` key, for batch verification.
    pub(crate) fn dalek(&self) -> &ed25519_dalek::VerifyingKey {
        &self.dalek
    }

    /// Strict RFC 8032 verification, deciding exactly as `ed25519-dalek`'s
    /// `verify_strict` (canonical `S` and `R`, `R` and `A` not of small
    /// order, cofactorless equation); see [`ed25519_equation`].
    pub(crate) fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), CryptoError> {
        let bytes: &[u8; SIGNATURE_LEN] = signature.try_into().map_err(|_| CryptoError::InvalidSignatureLength {
            algorithm: Algorithm::Ed25519,
            expected: SIGNATURE_LEN,
            actual: signature.len(),
        })?;
        if ed25519_equation::verify(&self.dalek, message, bytes) {
            Ok(())
        } else {
            Err(CryptoError::VerificationFailed)
        }
    }
}

/// An Ed25519 private key. `ed25519_dalek::SigningKey` zeroizes on drop.
#[derive(Clone)]
pub(crate) struct PrivateKey(ed25519_dalek::SigningKey);

impl PrivateKey {
    /// From the 32-byte seed (RFC 8032 §5.1.5; a JWK `d`).
    pub(crate) fn from_seed(seed: &[u8]) -> Result<Self, KeyRejection> {
        let array: &[u8; SEED_LEN] = seed.try_into().map_err(|_| KeyRejection::Length {
            expected: SEED_LEN,
            actual: seed.len(),
        })?;
        Ok(Self(ed25519_dalek::SigningKey::from_bytes(array)))
    }

    /// From a DER PKCS#8 v1 or v2 document (RFC 8410); a v2 embedded public
    /// key must match the private key.
    pub(crate) fn from_pkcs8_der(der: &[u8]) -> Result<Self, KeyRejection> {
        pkix::expect_key_type(pkix::pkcs8_key_type(der)?, KeyType::Ed25519)?;
        ed25519_dalek::SigningKey::from_pkcs8_der(der)
            .map(Self)
            .map_err(|_| KeyRejection::Malformed)
    }

    /// A new key from AWS-LC's CSPRNG (seeded from the operating system).
    pub(crate) fn generate() -> Result<Self, CryptoError> {
        let mut seed = Zeroizing::new([0u8; SEED_LEN]);
        aws_lc_rs::rand::fill(seed.as_mut()).map_err(|_| CryptoError::RandomnessUnavailable)?;
        Ok(Self(ed25519_dalek::SigningKey::from_bytes(&seed)))
    }

    /// Deterministic RFC 8032 signature.
    pub(crate) fn sign(&self, message: &[u8]) -> [u8; SIGNATURE_LEN] {
        use ed25519_dalek::Signer;
        self.0.sign(message).to_bytes()
    }

    /// The public key. Never weak: it is `seed`-derived and clamped.
    pub(crate) fn public_key(&self) -> PublicKey {
        PublicKey::from_dalek(self.0.verifying_key())
    }

    /// PKCS#8 v2 DER (with the public key).
    pub(crate) fn to_pkcs8_der(&self) -> Result<SecretBytes, CryptoError> {
        let doc = self.0.to_pkcs8_der().map_err(|_| CryptoError::KeyExportFailed)?;
        Ok(SecretBytes::new(doc.as_bytes().to_vec()))
    }
}
