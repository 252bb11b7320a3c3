//! Backend-independent acceptance policy for key material.

use super::KeyRejection;

/// The minimum accepted length, in bytes, of an HMAC-SHA256 secret.
///
/// RFC 2104 §3 recommends keys at least as long as the hash output (32 bytes
/// for SHA-256) and AdCP requires webhook HMAC secrets of at least 32 bytes
/// (256 bits). Shorter secrets, including the empty secret, are rejected with
/// [`KeyRejection::TooShort`]. Secrets made of a single repeated byte (all
/// zeros, `"aaaa…"`) are rejected with [`KeyRejection::WeakKey`]. There is no
/// upper bound: secrets longer than the SHA-256 block (64 bytes) are hashed
/// first, as HMAC specifies.
pub const HMAC_MIN_SECRET_LEN: usize = 32;

/// Applies the HMAC secret policy documented on [`HMAC_MIN_SECRET_LEN`].
pub(crate) fn check_hmac_secret(secret: &[u8]) -> Result<(), KeyRejection> {
    if secret.len() < HMAC_MIN_SECRET_LEN {
        return Err(KeyRejection::TooShort {
            minimum: HMAC_MIN_SECRET_LEN,
            actual: secret.len(),
        });
    }
    if let Some((first, rest)) = secret.split_first() {
        if rest.iter().all(|b| b == first) {
            return Err(KeyRejection::WeakKey);
        }
    }
    Ok(())
}
