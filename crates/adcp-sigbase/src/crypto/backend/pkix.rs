//! The X.509 SubjectPublicKeyInfo / PKCS#8 / PEM envelopes: which key type a
//! DER structure holds, and PEM to DER.

use p256::pkcs8::der::{pem::PemLabel, Decode, Document, SecretDocument};
use p256::pkcs8::spki::{AlgorithmIdentifierRef, SubjectPublicKeyInfoRef};
use p256::pkcs8::{AssociatedOid, ObjectIdentifier, PrivateKeyInfo};

use crate::crypto::KeyRejection;

/// The key type named by an SPKI or PKCS#8 `AlgorithmIdentifier`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyType {
    /// id-Ed25519 (RFC 8410).
    Ed25519,
    /// id-ecPublicKey with namedCurve secp256r1 (RFC 5480).
    P256,
    /// Anything else.
    Other,
}

fn key_type(algorithm: &AlgorithmIdentifierRef<'_>) -> KeyType {
    if algorithm.oid == ed25519_dalek::pkcs8::ALGORITHM_OID {
        return if algorithm.parameters.is_none() {
            KeyType::Ed25519
        } else {
            KeyType::Other
        };
    }
    if algorithm.oid == p256::elliptic_curve::ALGORITHM_OID {
        let curve: Option<ObjectIdentifier> = algorithm.parameters_oid().ok();
        if curve == Some(p256::NistP256::OID) {
            return KeyType::P256;
        }
    }
    KeyType::Other
}

/// Parses a DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7): its key type and
/// the raw key bits (the 32-byte Ed25519 key, or the SEC1 P-256 point).
pub(crate) fn parse_spki(der: &[u8]) -> Result<(KeyType, &[u8]), KeyRejection> {
    let spki = SubjectPublicKeyInfoRef::from_der(der).map_err(|_| KeyRejection::Malformed)?;
    let key = spki.subject_public_key.as_bytes().ok_or(KeyRejection::Malformed)?;
    Ok((key_type(&spki.algorithm), key))
}

/// The key type of a DER PKCS#8 `PrivateKeyInfo` (v1 or v2).
pub(crate) fn pkcs8_key_type(der: &[u8]) -> Result<KeyType, KeyRejection> {
    let info = PrivateKeyInfo::from_der(der).map_err(|_| KeyRejection::Malformed)?;
    Ok(key_type(&info.algorithm))
}

/// Requires `actual` to be `expected`, else `WrongKeyType` / `UnsupportedKeyType`.
pub(crate) fn expect_key_type(actual: KeyType, expected: KeyType) -> Result<(), KeyRejection> {
    match actual {
        a if a == expected => Ok(()),
        KeyType::Other => Err(KeyRejection::UnsupportedKeyType),
        _ => Err(KeyRejection::WrongKeyType),
    }
}

/// Decodes a `-----BEGIN PUBLIC KEY-----` PEM document to SPKI DER.
pub(crate) fn public_key_pem_to_der(pem: &str) -> Result<Document, KeyRejection> {
    let (label, doc) = Document::from_pem(pem).map_err(|_| KeyRejection::Malformed)?;
    if label != SubjectPublicKeyInfoRef::PEM_LABEL {
        return Err(KeyRejection::Malformed);
    }
    Ok(doc)
}

/// Decodes a `-----BEGIN PRIVATE KEY-----` PEM document to PKCS#8 DER.
/// Encrypted PKCS#8 (`ENCRYPTED PRIVATE KEY`) is rejected as malformed.
pub(crate) fn private_key_pem_to_der(pem: &str) -> Result<SecretDocument, KeyRejection> {
    secret_pem_to_der(pem, PrivateKeyInfo::PEM_LABEL)
}

/// Decodes a secret PEM document with the given label to DER.
pub(crate) fn secret_pem_to_der(pem: &str, expected_label: &str) -> Result<SecretDocument, KeyRejection> {
    let (label, doc) = SecretDocument::from_pem(pem).map_err(|_| KeyRejection::Malformed)?;
    if label != expected_label {
        return Err(KeyRejection::Malformed);
    }
    Ok(doc)
}
