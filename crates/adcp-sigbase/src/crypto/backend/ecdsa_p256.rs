//! ECDSA P-256 with SHA-256.
//!
//! Signing and verification go through `aws-lc-rs` (`ECDSA_P256_SHA256_FIXED`
//! and `ECDSA_P256_SHA256_FIXED_SIGNING`: IEEE P1363 `r || s` signatures, as
//! RFC 9421 §3.3.4 requires). The parsed `aws-lc-rs` key objects are built
//! once, when the key is constructed, so verifying many signatures with one
//! key does not re-parse it. Key encodings (SEC1 points, JWK coordinates,
//! SPKI, PKCS#8, SEC1 `ECPrivateKey`, PEM) are parsed and validated with
//! RustCrypto `p256`, which rejects off-curve points, the identity and
//! out-of-range scalars before anything reaches `aws-lc-rs`.
//!
//! High-S signatures (`s > n/2`) are accepted: neither RFC 9421, FIPS 186-4
//! nor IEEE P1363 forbids them, and common signers (WebCrypto, OpenSSL) emit
//! them. ECDSA signatures are therefore malleable: `(r, n - s)` verifies
//! whenever `(r, s)` does.

use aws_lc_rs::signature::{
    EcdsaKeyPair, KeyPair, ParsedPublicKey, ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING,
};
use p256::elliptic_curve::sec1::{FromEncodedPoint, ToEncodedPoint};
use p256::pkcs8::DecodePrivateKey;

use super::pkix::{self, KeyType};
use super::zeroize::Zeroizing;
use crate::crypto::{Algorithm, CryptoError, KeyRejection, SecretBytes};

/// Length of an uncompressed SEC1 point: `0x04 || x || y`.
pub(crate) const UNCOMPRESSED_LEN: usize = 65;
/// Length of a field element (a JWK `x` or `y`) and of a private scalar.
pub(crate) const SCALAR_LEN: usize = 32;
/// Length of an `r || s` signature.
pub(crate) const SIGNATURE_LEN: usize = 64;

/// A validated P-256 public key with its cached `aws-lc-rs` parsed form.
#[derive(Clone)]
pub(crate) struct PublicKey {
    parsed: ParsedPublicKey,
    uncompressed: [u8; UNCOMPRESSED_LEN],
}

impl PublicKey {
    fn from_p256(key: &p256::PublicKey) -> Result<Self, KeyRejection> {
        let point = key.to_encoded_point(false);
        let uncompressed: [u8; UNCOMPRESSED_LEN] =
            point.as_bytes().try_into().map_err(|_| KeyRejection::InvalidPoint)?;
        let parsed =
            ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, uncompressed).map_err(|_| KeyRejection::InvalidPoint)?;
        Ok(Self { parsed, uncompressed })
    }

    /// From an uncompressed SEC1 point (`0x04 || x || y`, 65 bytes).
    pub(crate) fn from_uncompressed(bytes: &[u8]) -> Result<Self, KeyRejection> {
        if bytes.len() != UNCOMPRESSED_LEN {
            return Err(KeyRejection::Length {
                expected: UNCOMPRESSED_LEN,
                actual: bytes.len(),
            });
        }
        if bytes.first() != Some(&0x04) {
            return Err(KeyRejection::Malformed);
        }
        Self::from_sec1(bytes)
    }

    /// From any SEC1 point encoding (compressed or uncompressed). Rejects the
    /// identity and off-curve points.
    fn from_sec1(bytes: &[u8]) -> Result<Self, KeyRejection> {
        let key = p256::PublicKey::from_sec1_bytes(bytes).map_err(|_| KeyRejection::InvalidPoint)?;
        Self::from_p256(&key)
    }

    /// From JWK-style affine coordinates, each exactly 32 big-endian bytes
    /// (RFC 7518 §6.2.1.2-3 forbids shortened coordinates).
    pub(crate) fn from_coordinates(x: &[u8], y: &[u8]) -> Result<Self, KeyRejection> {
        for c in [x, y] {
            if c.len() != SCALAR_LEN {
                return Err(KeyRejection::Length {
                    expected: SCALAR_LEN,
                    actual: c.len(),
                });
            }
        }
        let point = p256::EncodedPoint::from_affine_coordinates(x.into(), y.into(), false);
        let key: Option<p256::PublicKey> = p256::PublicKey::from_encoded_point(&point).into();
        Self::from_p256(&key.ok_or(KeyRejection::InvalidPoint)?)
    }

    /// From a DER SubjectPublicKeyInfo (RFC 5480: id-ecPublicKey, namedCurve
    /// secp256r1; the point may be compressed or uncompressed).
    pub(crate) fn from_spki_der(der: &[u8]) -> Result<Self, KeyRejection> {
        let (key_type, key) = pkix::parse_spki(der)?;
        pkix::expect_key_type(key_type, KeyType::P256)?;
        Self::from_sec1(key)
    }

    /// The uncompressed SEC1 encoding.
    pub(crate) fn as_uncompressed(&self) -> &[u8; UNCOMPRESSED_LEN] {
        &self.uncompressed
    }

    /// Verifies a 64-byte `r || s` signature. A DER `ECDSA-Sig-Value` is
    /// reported as an encoding error; any other length as a length error.
    pub(crate) fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), CryptoError> {
        if signature.len() != SIGNATURE_LEN {
            if looks_like_der(signature) {
                return Err(CryptoError::InvalidSignatureEncoding {
                    algorithm: Algorithm::EcdsaP256Sha256,
                });
            }
            return Err(CryptoError::InvalidSignatureLength {
                algorithm: Algorithm::EcdsaP256Sha256,
                expected: SIGNATURE_LEN,
                actual: signature.len(),
            });
        }
        self.parsed
            .verify_sig(message, signature)
            .map_err(|_| CryptoError::VerificationFailed)
    }
}

/// Whether `bytes` has the outer shape of a DER `ECDSA-Sig-Value`:
/// `SEQUENCE { INTEGER, INTEGER }` with a short-form length covering the
/// rest. Only used to pick a clearer error; never to accept anything.
fn looks_like_der(bytes: &[u8]) -> bool {
    match bytes {
        [0x30, len, 0x02, ..] => usize::from(*len) == bytes.len() - 2,
        _ => false,
    }
}

/// A P-256 private key: the cached `aws-lc-rs` key pair plus its public key.
///
/// AWS-LC frees the private scalar with `OPENSSL_free`, which cleanses the
/// memory; intermediate copies made while parsing are `Zeroizing`.
#[derive(Clone)]
pub(crate) struct PrivateKey {
    pair: EcdsaKeyPair,
    public: PublicKey,
}

impl PrivateKey {
    fn from_p256(secret: &p256::SecretKey) -> Result<Self, KeyRejection> {
        let public = PublicKey::from_p256(&secret.public_key())?;
        let scalar = Zeroizing::new(secret.to_bytes());
        let pair = EcdsaKeyPair::from_private_key_and_public_key(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            &scalar,
            &public.uncompressed,
        )
        .map_err(|_| KeyRejection::InvalidScalar)?;
        Ok(Self { pair, public })
    }

    /// From the 32-byte big-endian private scalar (a JWK `d`).
    pub(crate) fn from_scalar(bytes: &[u8]) -> Result<Self, KeyRejection> {
        // `SecretKey::from_slice` left-pads 24..32-byte inputs; require the
        // exact length instead.
        if bytes.len() != SCALAR_LEN {
            return Err(KeyRejection::Length {
                expected: SCALAR_LEN,
                actual: bytes.len(),
            });
        }
        let secret = p256::SecretKey::from_slice(bytes).map_err(|_| KeyRejection::InvalidScalar)?;
        Self::from_p256(&secret)
    }

    /// From a DER PKCS#8 document (RFC 5208 / RFC 5915 inside).
    pub(crate) fn from_pkcs8_der(der: &[u8]) -> Result<Self, KeyRejection> {
        pkix::expect_key_type(pkix::pkcs8_key_type(der)?, KeyType::P256)?;
        let secret = p256::SecretKey::from_pkcs8_der(der).map_err(|_| KeyRejection::Malformed)?;
        Self::from_p256(&secret)
    }

    /// From a DER SEC1 `ECPrivateKey` (RFC 5915).
    pub(crate) fn from_sec1_der(der: &[u8]) -> Result<Self, KeyRejection> {
        let secret = p256::SecretKey::from_sec1_der(der).map_err(|_| KeyRejection::Malformed)?;
        Self::from_p256(&secret)
    }

    /// A new key generated by AWS-LC (its CSPRNG is seeded from the
    /// operating system).
    pub(crate) fn generate() -> Result<Self, CryptoError> {
        let pair =
            EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).map_err(|_| CryptoError::RandomnessUnavailable)?;
        let public =
            PublicKey::from_uncompressed(pair.public_key().as_ref()).map_err(|_| CryptoError::SigningFailed)?;
        Ok(Self { pair, public })
    }

    /// A randomized ECDSA signature in `r || s` form.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<[u8; SIGNATURE_LEN], CryptoError> {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let signature = self.pair.sign(&rng, message).map_err(|_| CryptoError::SigningFailed)?;
        signature.as_ref().try_into().map_err(|_| CryptoError::SigningFailed)
    }

    /// The public key.
    pub(crate) fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// PKCS#8 v1 DER.
    pub(crate) fn to_pkcs8_der(&self) -> Result<SecretBytes, CryptoError> {
        let doc = self.pair.to_pkcs8v1().map_err(|_| CryptoError::KeyExportFailed)?;
        Ok(SecretBytes::new(doc.as_ref().to_vec()))
    }
}
