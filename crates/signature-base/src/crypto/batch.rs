//! Batch verification of Ed25519 signatures (`ed25519-dalek`'s
//! random-linear-combination check), for receivers that verify many
//! webhooks at once.
//!
//! # How the batch check relates to [`VerifyingKey::verify`]
//!
//! Single verification decides as `verify_strict`: the cofactorless equation
//! `[s]B = R + [k]A`, with `s` canonical, `A` not of small order (checked
//! when the key is loaded) and `R` not of small order. The batch check
//! draws a random 128-bit coefficient `z_i` per signature (derived from the
//! batch's own contents) and tests that `Σ z_i([s_i]B − R_i − [k_i]A_i)` is
//! the identity. This module adds `verify_strict`'s remaining input rules —
//! canonical `s` (checked by `ed25519-dalek`) and `R` not of small order
//! (checked here) — so the two differ only when a point carries a
//! small-order (torsion) component that does not cancel in the single
//! equation but may in the combination, or the other way round.
//!
//! Only the holder of the private key can produce such a signature: for
//! honestly generated keys and signatures `R = [r]B` and `A = [a]B` have no
//! torsion and both checks agree; a forger without the key fails both
//! (except with probability about 2⁻¹²⁸ for the batch). A key holder who
//! crafts torsion can at most make their own signature verify under one
//! check and not the other; it cannot make anyone else's key sign, so
//! sender authenticity is unaffected. Callers that must give
//! bit-identical answers to `verify_strict` even for such deliberately
//! inconsistent signatures must not use the batch path: it is opt-in.

use super::{Algorithm, CryptoError, VerifyingKey};
use curve25519_dalek::edwards::CompressedEdwardsY;

/// One signature in a batch: the key, the signed message (signature base)
/// and the signature bytes.
#[derive(Clone, Copy)]
pub struct Ed25519BatchItem<'a> {
    /// The signer's key; must be an Ed25519 key.
    pub key: &'a VerifyingKey,
    /// The signed bytes.
    pub message: &'a [u8],
    /// The 64-byte signature.
    pub signature: &'a [u8],
}

impl std::fmt::Debug for Ed25519BatchItem<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ed25519BatchItem")
            .field("message_len", &self.message.len())
            .field("signature_len", &self.signature.len())
            .finish_non_exhaustive()
    }
}

/// Verifies every item at once. `Ok(())` means every signature is valid
/// (see the module docs for how this relates to single verification); an
/// error means at least one is not, or an item is not an Ed25519 key and
/// 64-byte signature — verify the items one by one to find which.
///
/// # Errors
///
/// [`CryptoError::VerificationFailed`] when the batch does not verify or
/// an item's `R` is of small order; the usual key and length errors for an
/// item that is not an Ed25519 key with a 64-byte signature.
pub fn verify_ed25519_batch(items: &[Ed25519BatchItem<'_>]) -> Result<(), CryptoError> {
    if items.is_empty() {
        return Ok(());
    }
    let mut messages = Vec::with_capacity(items.len());
    let mut signatures = Vec::with_capacity(items.len());
    let mut keys = Vec::with_capacity(items.len());
    for item in items {
        let Some(key) = item.key.as_ed25519() else {
            return Err(CryptoError::AlgorithmKeyMismatch {
                algorithm: Algorithm::Ed25519,
                key: item.key.algorithm(),
            });
        };
        let bytes: &[u8; 64] = item
            .signature
            .try_into()
            .map_err(|_| CryptoError::InvalidSignatureLength {
                algorithm: Algorithm::Ed25519,
                expected: 64,
                actual: item.signature.len(),
            })?;
        let signature = ed25519_dalek::Signature::from_bytes(bytes);
        // verify_strict refuses a small-order R; so does the batch.
        let r_small_order = CompressedEdwardsY(*signature.r_bytes())
            .decompress()
            .is_none_or(|r| r.is_small_order());
        if r_small_order {
            return Err(CryptoError::VerificationFailed);
        }
        messages.push(item.message);
        signatures.push(signature);
        keys.push(*key.dalek());
    }
    ed25519_dalek::verify_batch(&messages, &signatures, &keys).map_err(|_| CryptoError::VerificationFailed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::crypto::SigningKey;

    fn signed(seed: u8, message: &[u8]) -> (VerifyingKey, Vec<u8>) {
        let key = SigningKey::ed25519_from_seed(&[seed; 32]).unwrap();
        (key.verifying_key(), key.sign(message).unwrap().as_bytes().to_vec())
    }

    #[test]
    fn valid_batches_verify_and_one_bad_signature_fails_them() {
        let pairs: Vec<_> = (1..=8).map(|i| signed(i, &[i; 40])).collect();
        let messages: Vec<[u8; 40]> = (1..=8).map(|i| [i; 40]).collect();
        let items: Vec<_> = pairs
            .iter()
            .zip(&messages)
            .map(|((key, sig), message)| Ed25519BatchItem {
                key,
                message,
                signature: sig,
            })
            .collect();
        assert_eq!(verify_ed25519_batch(&items), Ok(()));
        assert_eq!(verify_ed25519_batch(&[]), Ok(()));

        let mut bad = items.clone();
        bad[5].message = &messages[4];
        assert_eq!(verify_ed25519_batch(&bad), Err(CryptoError::VerificationFailed));
    }

    #[test]
    fn refuses_what_verify_strict_refuses_up_front() {
        let (key, mut sig) = signed(9, b"m");
        // R = the identity point (small order).
        sig[..32].copy_from_slice(&{
            let mut id = [0u8; 32];
            id[0] = 1;
            id
        });
        let item = Ed25519BatchItem {
            key: &key,
            message: b"m",
            signature: &sig,
        };
        assert!(key.verify(Algorithm::Ed25519, b"m", &sig).is_err());
        assert_eq!(
            verify_ed25519_batch(&[item, item]),
            Err(CryptoError::VerificationFailed)
        );

        let short = Ed25519BatchItem {
            signature: &sig[..63],
            ..item
        };
        assert!(matches!(
            verify_ed25519_batch(&[short]),
            Err(CryptoError::InvalidSignatureLength { .. })
        ));

        let p256 = SigningKey::generate_p256().unwrap().verifying_key();
        let wrong = Ed25519BatchItem { key: &p256, ..item };
        assert!(matches!(
            verify_ed25519_batch(&[wrong]),
            Err(CryptoError::AlgorithmKeyMismatch { .. })
        ));
    }
}
