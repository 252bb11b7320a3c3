//! Reading and validating one JWK: [`Jwk::parse`] and
//! [`Jwk::from_json_value`], in the order documented on [`JwkError`].

use serde_json::{Map, Value};

use crate::crypto::{Algorithm, SecretBytes, SigningKey, VerifyingKey};

use super::key::{is_standard, PrivateKey, PublicKey};
use super::{b64, json, Jwk, JwkError, JwkMember, MAX_JWKS_LEN};

/// The supported (`kty`, `crv`) pairs.
#[derive(Clone, Copy)]
pub(super) enum Curve {
    Ed25519,
    P256,
}

impl Curve {
    pub(super) fn of(public: &PublicKey) -> Self {
        match public {
            PublicKey::Ed25519 { .. } => Self::Ed25519,
            PublicKey::P256 { .. } => Self::P256,
        }
    }

    fn algorithm(self) -> Algorithm {
        match self {
            Self::Ed25519 => Algorithm::Ed25519,
            Self::P256 => Algorithm::EcdsaP256Sha256,
        }
    }
}

impl Jwk {
    /// Parses one JWK from JSON bytes: at most [`MAX_JWKS_LEN`] bytes, JSON
    /// syntax, strict JSON (duplicate member names rejected), then
    /// [`Jwk::from_json_value`].
    ///
    /// # Errors
    ///
    /// [`JwkError::TooLarge`], [`JwkError::Json`], [`JwkError::StrictJson`],
    /// then every error of [`Jwk::from_json_value`].
    pub fn parse(bytes: &[u8]) -> Result<Self, JwkError> {
        let value = json::parse(bytes, MAX_JWKS_LEN)?;
        Self::from_json_value(&value)
    }

    /// Reads and validates one JWK from a parsed JSON value.
    ///
    /// Only `OKP`/`Ed25519` and `EC`/`P-256` keys are accepted. A value
    /// parsed elsewhere has already lost any duplicate member names; parse
    /// untrusted bytes with [`Jwk::parse`].
    ///
    /// # Errors
    ///
    /// In this order: [`JwkError::NotAnObject`]; `kty` missing, not a string
    /// or not `OKP`/`EC` ([`JwkError::MissingMember`],
    /// [`JwkError::InvalidMember`], [`JwkError::Unsupported`]); `crv`
    /// likewise (`Ed25519` for `OKP`, `P-256` for `EC`); `alg` not a string,
    /// or not `EdDSA`/`Ed25519` (OKP) / `ES256` (EC)
    /// ([`JwkError::AlgorithmMismatch`]); `kid`, `use` not strings, `key_ops`
    /// not an array of distinct strings; `x`, then `y` (required for EC,
    /// rejected for OKP): missing, not a string, not strict base64url
    /// ([`JwkError::InvalidBase64`]), not 32 bytes
    /// ([`JwkError::InvalidLength`]); the public key
    /// ([`JwkError::InvalidKey`]); `d`: not a string, not strict base64url,
    /// not 32 bytes, an invalid scalar ([`JwkError::InvalidPrivateKey`]), or
    /// not the private key of `x`/`y` ([`JwkError::PrivateKeyMismatch`]).
    pub fn from_json_value(value: &Value) -> Result<Self, JwkError> {
        value.as_object().ok_or(JwkError::NotAnObject).and_then(from_object)
    }
}

/// Reads and validates one JWK object.
pub(super) fn from_object(object: &Map<String, Value>) -> Result<Jwk, JwkError> {
    let curve = curve(object)?;
    let alg = optional_string(object, JwkMember::Alg)?;
    if let Some(alg) = alg {
        if Algorithm::from_jose(alg) != Ok(curve.algorithm()) {
            return Err(JwkError::AlgorithmMismatch);
        }
    }
    let kid = optional_string(object, JwkMember::Kid)?;
    let key_use = optional_string(object, JwkMember::Use)?;
    let key_ops = key_ops(object)?;
    let (public, verifying_key) = public_key(object, curve)?;
    let private = match optional_string(object, JwkMember::D)? {
        Some(text) => {
            let d = b64::decode_secret(JwkMember::D, text)?;
            check_private(&verifying_key, curve, &d)?;
            Some(PrivateKey {
                d,
                in_d: true,
                test_member: None,
            })
        }
        None => None,
    };
    let members = object
        .iter()
        .filter(|(name, _)| !is_standard(name))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    Ok(Jwk {
        public,
        verifying_key,
        kid: kid.map(str::to_owned),
        alg: alg.map(str::to_owned),
        key_use: key_use.map(str::to_owned),
        key_ops,
        private,
        members,
    })
}

/// `kty` and `crv`.
fn curve(object: &Map<String, Value>) -> Result<Curve, JwkError> {
    let okp = match required_string(object, JwkMember::Kty)? {
        "OKP" => true,
        "EC" => false,
        _ => return Err(JwkError::Unsupported { member: JwkMember::Kty }),
    };
    match (okp, required_string(object, JwkMember::Crv)?) {
        (true, "Ed25519") => Ok(Curve::Ed25519),
        (false, "P-256") => Ok(Curve::P256),
        _ => Err(JwkError::Unsupported { member: JwkMember::Crv }),
    }
}

/// `key_ops`: an array of distinct strings (RFC 7517 §4.3).
fn key_ops(object: &Map<String, Value>) -> Result<Option<Vec<String>>, JwkError> {
    let invalid = JwkError::InvalidMember {
        member: JwkMember::KeyOps,
    };
    let Some(value) = object.get(JwkMember::KeyOps.as_str()) else {
        return Ok(None);
    };
    let items = value.as_array().ok_or(invalid)?;
    let mut ops: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let op = item.as_str().ok_or(invalid)?;
        if ops.iter().any(|seen| seen == op) {
            return Err(invalid);
        }
        ops.push(op.to_owned());
    }
    Ok(Some(ops))
}

/// `x` and `y`, and the key they form.
fn public_key(object: &Map<String, Value>, curve: Curve) -> Result<(PublicKey, VerifyingKey), JwkError> {
    let x = b64::decode_component(JwkMember::X, required_string(object, JwkMember::X)?)?;
    let invalid_key = |error| JwkError::InvalidKey { error };
    match curve {
        Curve::Ed25519 => {
            if object.contains_key(JwkMember::Y.as_str()) {
                return Err(JwkError::InvalidMember { member: JwkMember::Y });
            }
            let key = VerifyingKey::ed25519_from_bytes(&x).map_err(invalid_key)?;
            Ok((PublicKey::Ed25519 { x }, key))
        }
        Curve::P256 => {
            let y = b64::decode_component(JwkMember::Y, required_string(object, JwkMember::Y)?)?;
            let key = VerifyingKey::p256_from_coordinates(&x, &y).map_err(invalid_key)?;
            Ok((PublicKey::P256 { x, y }, key))
        }
    }
}

/// Builds the signing key of `d` and requires its public key to be `public`.
pub(super) fn check_private(public: &VerifyingKey, curve: Curve, d: &SecretBytes) -> Result<SigningKey, JwkError> {
    let signer = signing_key(curve, d)?;
    if signer.verifying_key() != *public {
        return Err(JwkError::PrivateKeyMismatch);
    }
    Ok(signer)
}

/// The signing key of a 32-byte Ed25519 seed or P-256 scalar.
pub(super) fn signing_key(curve: Curve, d: &SecretBytes) -> Result<SigningKey, JwkError> {
    match curve {
        Curve::Ed25519 => SigningKey::ed25519_from_seed(d.expose_secret()),
        Curve::P256 => SigningKey::p256_from_scalar(d.expose_secret()),
    }
    .map_err(|error| JwkError::InvalidPrivateKey { error })
}

fn required_string(object: &Map<String, Value>, member: JwkMember) -> Result<&str, JwkError> {
    optional_string(object, member)?.ok_or(JwkError::MissingMember { member })
}

fn optional_string(object: &Map<String, Value>, member: JwkMember) -> Result<Option<&str>, JwkError> {
    match object.get(member.as_str()) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(JwkError::InvalidMember { member }),
    }
}
