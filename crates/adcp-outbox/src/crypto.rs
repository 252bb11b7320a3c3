//! Encryption at rest of stored bodies and legacy credentials
//! (AES-256-GCM on the aws-lc the tree already has), off by default.
//!
//! A sealed value names its key, so old keys keep decrypting rows written
//! before a rotation, and is bound to its row and field (the associated
//! data is `event id` + field), so a sealed body cannot be moved to
//! another row. Bodies are stored as bytes (`AGCM1` | key id length | key
//! id | nonce | ciphertext and tag); credentials, stored as text, as
//! `enc:v1:` + base64 of the same.

use crate::error::OutboxError;
use adcp_sign::{OsRandom, RandomSource};
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use base64::Engine as _;
use std::collections::HashMap;
use std::sync::Arc;

const MAGIC: &[u8] = b"AGCM1";
const TEXT_PREFIX: &str = "enc:v1:";

/// The keys sealing stored bodies and credentials: one current key (new
/// rows) and any number of old ones (reading older rows).
#[derive(Clone)]
pub struct Keyring {
    current: String,
    keys: Arc<HashMap<String, Arc<LessSafeKey>>>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyring")
            .field("current", &self.current)
            .field("keys", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn key(bytes: &[u8]) -> Result<LessSafeKey, OutboxError> {
    if bytes.len() != 32 {
        return Err(OutboxError::Crypto("an AES-256 key is 32 bytes".to_owned()));
    }
    UnboundKey::new(&AES_256_GCM, bytes)
        .map(LessSafeKey::new)
        .map_err(|_| OutboxError::Crypto("invalid AES-256 key".to_owned()))
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Keyring {
    /// A keyring whose current key is `id` (1–64 of `A-Za-z0-9-_`) with
    /// 32 bytes of key material.
    ///
    /// # Errors
    ///
    /// [`OutboxError::Crypto`] for a bad id or key length.
    pub fn new(id: &str, key_bytes: &[u8]) -> Result<Self, OutboxError> {
        if !valid_id(id) {
            return Err(OutboxError::Crypto(format!("invalid key id {id:?}")));
        }
        Ok(Self {
            current: id.to_owned(),
            keys: Arc::new(HashMap::from([(id.to_owned(), Arc::new(key(key_bytes)?))])),
        })
    }

    /// Adds an old key, kept for decrypting rows sealed with it.
    ///
    /// # Errors
    ///
    /// [`OutboxError::Crypto`] for a bad id, a bad key length, or an id
    /// already in the ring.
    pub fn with_old_key(mut self, id: &str, key_bytes: &[u8]) -> Result<Self, OutboxError> {
        if !valid_id(id) || self.keys.contains_key(id) {
            return Err(OutboxError::Crypto(format!("invalid or repeated key id {id:?}")));
        }
        let mut keys = (*self.keys).clone();
        keys.insert(id.to_owned(), Arc::new(key(key_bytes)?));
        self.keys = Arc::new(keys);
        Ok(self)
    }

    /// The current key's id (stored with each row it seals).
    #[must_use]
    pub fn current_id(&self) -> &str {
        &self.current
    }

    /// Seals `plaintext` for `row`'s `field` with the current key.
    ///
    /// # Errors
    ///
    /// [`OutboxError::Crypto`] when randomness or sealing fails.
    pub fn seal(&self, row: &str, field: &str, plaintext: &[u8]) -> Result<Vec<u8>, OutboxError> {
        let key = self
            .keys
            .get(&self.current)
            .ok_or_else(|| OutboxError::Crypto("the current key is missing".to_owned()))?;
        let mut nonce = [0_u8; NONCE_LEN];
        OsRandom
            .fill(&mut nonce)
            .map_err(|_| OutboxError::Crypto("randomness unavailable".to_owned()))?;
        let mut sealed = plaintext.to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad(row, field)),
            &mut sealed,
        )
        .map_err(|_| OutboxError::Crypto("sealing failed".to_owned()))?;
        let mut out = Vec::with_capacity(MAGIC.len() + 1 + self.current.len() + NONCE_LEN + sealed.len());
        out.extend_from_slice(MAGIC);
        out.push(self.current.len() as u8);
        out.extend_from_slice(self.current.as_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// [`seal`](Self::seal) as text (for credentials).
    ///
    /// # Errors
    ///
    /// As [`seal`](Self::seal).
    pub fn seal_text(&self, row: &str, field: &str, plaintext: &str) -> Result<String, OutboxError> {
        let sealed = self.seal(row, field, plaintext.as_bytes())?;
        Ok(format!(
            "{TEXT_PREFIX}{}",
            base64::engine::general_purpose::STANDARD_NO_PAD.encode(sealed)
        ))
    }

    /// Opens a value sealed for `row`'s `field`.
    ///
    /// # Errors
    ///
    /// [`OutboxError::Crypto`]: an unknown key id, a value that is not
    /// sealed, or one that does not authenticate (tampered, or moved from
    /// another row).
    pub fn open(&self, row: &str, field: &str, sealed: &[u8]) -> Result<Vec<u8>, OutboxError> {
        let bad = || OutboxError::Crypto(format!("the stored {field} of {row} does not decrypt"));
        let rest = sealed.strip_prefix(MAGIC).ok_or_else(bad)?;
        let (&len, rest) = rest.split_first().ok_or_else(bad)?;
        let len = usize::from(len);
        if rest.len() < len + NONCE_LEN {
            return Err(bad());
        }
        let id = std::str::from_utf8(&rest[..len]).map_err(|_| bad())?;
        let key = self.keys.get(id).ok_or_else(|| {
            OutboxError::Crypto(format!(
                "the stored {field} of {row} needs key {id:?}, not in the keyring"
            ))
        })?;
        let mut nonce = [0_u8; NONCE_LEN];
        nonce.copy_from_slice(&rest[len..len + NONCE_LEN]);
        let mut buf = rest[len + NONCE_LEN..].to_vec();
        let plain = key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(row, field)),
                &mut buf,
            )
            .map_err(|_| bad())?;
        Ok(plain.to_vec())
    }

    /// [`open`](Self::open) of a value from [`seal_text`](Self::seal_text).
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open).
    pub fn open_text(&self, row: &str, field: &str, sealed: &str) -> Result<String, OutboxError> {
        let bad = || OutboxError::Crypto(format!("the stored {field} of {row} does not decrypt"));
        let b64 = sealed.strip_prefix(TEXT_PREFIX).ok_or_else(bad)?;
        let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(b64)
            .map_err(|_| bad())?;
        String::from_utf8(self.open(row, field, &bytes)?).map_err(|_| bad())
    }
}

/// Whether a stored body is sealed (plain bodies are JSON objects).
pub(crate) fn is_sealed(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// Whether a stored credential is sealed.
pub(crate) fn is_sealed_text(value: &str) -> bool {
    value.starts_with(TEXT_PREFIX)
}

fn aad(row: &str, field: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(row.len() + field.len() + 1);
    out.extend_from_slice(row.as_bytes());
    out.push(b'/');
    out.extend_from_slice(field.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_opens_rotates_and_refuses_tampering_and_moves() {
        let ring = Keyring::new("k1", &[7; 32]).unwrap();
        let sealed = ring.seal("evt_a", "body", b"{\"a\":1}").unwrap();
        assert!(is_sealed(&sealed));
        assert_eq!(ring.open("evt_a", "body", &sealed).unwrap(), b"{\"a\":1}");
        assert!(ring.open("evt_b", "body", &sealed).is_err(), "bound to its row");
        let mut tampered = sealed.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert!(ring.open("evt_a", "body", &tampered).is_err());
        let rotated = Keyring::new("k2", &[9; 32])
            .unwrap()
            .with_old_key("k1", &[7; 32])
            .unwrap();
        assert_eq!(rotated.open("evt_a", "body", &sealed).unwrap(), b"{\"a\":1}");
        let text = rotated.seal_text("evt_a", "credentials", "s3cret").unwrap();
        assert!(is_sealed_text(&text));
        assert_eq!(rotated.open_text("evt_a", "credentials", &text).unwrap(), "s3cret");
        let without_old = Keyring::new("k2", &[9; 32]).unwrap();
        assert!(without_old
            .open("evt_a", "body", &sealed)
            .unwrap_err()
            .to_string()
            .contains("k1"));
        assert!(Keyring::new("bad id", &[0; 32]).is_err());
        assert!(Keyring::new("k", &[0; 31]).is_err());
        assert!(ring.open("evt_a", "body", b"AGCM1").is_err());
    }
}
