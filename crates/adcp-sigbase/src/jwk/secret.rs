//! The raw private key of a [`SigningKey`] (the JWK `d`), recovered from its
//! PKCS#8 export.
//!
//! [`SigningKey`] deliberately exposes no raw key bytes; its only export is
//! PKCS#8 DER. This file reads the 32-byte Ed25519 seed (RFC 8410
//! `CurvePrivateKey`) or P-256 scalar (RFC 5915 `ECPrivateKey`) back out of
//! that DER with the PKCS#8 decoders of `ed25519-dalek` and `p256`. Every
//! intermediate copy is wiped on drop, and the caller checks the result
//! against the key's public key.

use ed25519_dalek::pkcs8::DecodePrivateKey as _;
use zeroize::Zeroizing;

use crate::crypto::{Algorithm, CryptoError, SecretBytes, SigningKey};

use super::{JwkError, JwkMember};

/// The 32-byte Ed25519 seed or P-256 scalar of `key`.
pub(super) fn export(key: &SigningKey) -> Result<SecretBytes, JwkError> {
    let failed = JwkError::Crypto {
        error: CryptoError::KeyExportFailed,
    };
    let der = match key.to_pkcs8_der() {
        Ok(der) => der,
        Err(CryptoError::Unsupported { .. }) => return Err(JwkError::Unsupported { member: JwkMember::Kty }),
        Err(error) => return Err(JwkError::Crypto { error }),
    };
    let bytes: Zeroizing<Vec<u8>> = match key.algorithm() {
        Algorithm::Ed25519 => {
            let key = ed25519_dalek::SigningKey::from_pkcs8_der(der.expose_secret()).map_err(|_| failed)?;
            let seed = Zeroizing::new(key.to_bytes());
            Zeroizing::new(seed.to_vec())
        }
        Algorithm::EcdsaP256Sha256 => {
            let key = <p256::SecretKey as p256::pkcs8::DecodePrivateKey>::from_pkcs8_der(der.expose_secret())
                .map_err(|_| failed)?;
            let scalar = Zeroizing::new(key.to_bytes());
            Zeroizing::new(scalar.to_vec())
        }
        Algorithm::HmacSha256 => return Err(JwkError::Unsupported { member: JwkMember::Kty }),
    };
    let mut bytes = bytes;
    Ok(SecretBytes::new(core::mem::take(&mut *bytes)))
}
