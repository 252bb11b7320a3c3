//! Batch verification of Ed25519 signatures (a random linear combination
//! of the verification equations, as in `ed25519-dalek`'s `verify_batch`),
//! for receivers that verify many webhooks at once.
//!
//! # How the batch check relates to [`VerifyingKey::verify`]
//!
//! Single verification decides as `verify_strict`: the cofactorless equation
//! `[s]B = R + [k]A`, with `s` canonical, `R` canonical and not of small
//! order, and `A` not of small order (checked when the key is loaded). The
//! batch check applies exactly the same input rules to every item, then
//! draws a random 128-bit coefficient `z_i` per signature (from aws-lc's
//! CSPRNG) and tests that `Σ z_i([s_i]B − R_i − [k_i]A_i)` is the identity,
//! with one multi-scalar multiplication. The two therefore differ only when
//! a point carries a small-order (torsion) component that does not cancel in
//! the single equation but may in the combination, or the other way round.
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
//!
//! Why not `ed25519_dalek::verify_batch`: it decompresses every `R` itself,
//! and the small-order check on `R` that single verification makes needs
//! the decompressed point too, so calling it meant two decompressions per
//! item (≈ 15 % of an item's cost). Here each `R` is decompressed once and
//! the same point goes into the multi-scalar multiplication.

use super::backend::ed25519_equation::{check_inputs, Checked};
use super::{Algorithm, CryptoError, VerifyingKey};
use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity as _, VartimeMultiscalarMul as _};

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
    let mut randomness = vec![0u8; items.len() * 16];
    aws_lc_rs::rand::fill(&mut randomness).map_err(|_| CryptoError::RandomnessUnavailable)?;

    // Scalars and points in one order: B, then every R_i, then every A_i.
    let mut b_coefficient = Scalar::ZERO;
    let mut scalars = Vec::with_capacity(1 + 2 * items.len());
    let mut points = Vec::with_capacity(1 + 2 * items.len());
    scalars.push(Scalar::ZERO);
    points.push(ED25519_BASEPOINT_POINT);
    let mut key_terms = Vec::with_capacity(items.len());
    for (item, z_bytes) in items.iter().zip(randomness.chunks_exact(16)) {
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
        // The input rules of single verification, item by item.
        let dalek = key.dalek();
        let Checked { s, r, k } = check_inputs(dalek, item.message, bytes).ok_or(CryptoError::VerificationFailed)?;

        let mut z = [0u8; 16];
        z.copy_from_slice(z_bytes);
        let z = Scalar::from(u128::from_le_bytes(z));
        b_coefficient += z * s;
        scalars.push(z);
        points.push(r);
        key_terms.push((z * k, dalek.to_edwards()));
    }
    for (scalar, point) in key_terms {
        scalars.push(scalar);
        points.push(point);
    }
    scalars[0] = -b_coefficient;

    let sum = EdwardsPoint::vartime_multiscalar_mul(&scalars, &points);
    if sum.is_identity() {
        Ok(())
    } else {
        Err(CryptoError::VerificationFailed)
    }
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

    #[test]
    fn refuses_a_non_canonical_r_like_single_verification() {
        let (key, mut sig) = signed(11, b"m");
        // y = p + 2 (decompresses to the point with y = 2 if it exists;
        // either way single verification refuses the encoding).
        let mut r = [0xff; 32];
        r[0] = 0xef;
        r[31] = 0x7f;
        sig[..32].copy_from_slice(&r);
        let item = Ed25519BatchItem {
            key: &key,
            message: b"m",
            signature: &sig,
        };
        assert!(key.verify(Algorithm::Ed25519, b"m", &sig).is_err());
        assert_eq!(verify_ed25519_batch(&[item]), Err(CryptoError::VerificationFailed));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// The batch accepts exactly when every item verifies on its own,
        /// for honest signatures with at most one byte of one item changed
        /// (message, signature or nothing).
        #[test]
        fn agrees_with_single_verification(
            n in 1usize..10,
            seed in proptest::prelude::any::<u8>(),
            tamper in proptest::option::of((0usize..10, 0usize..104, proptest::prelude::any::<u8>())),
        ) {
            let messages: Vec<Vec<u8>> = (0..n).map(|i| vec![seed ^ i as u8; 40]).collect();
            let mut pairs: Vec<(VerifyingKey, Vec<u8>)> =
                (0..n).map(|i| signed(seed.wrapping_add(i as u8 % 3), &messages[i])).collect();
            let mut messages = messages;
            if let Some((which, at, value)) = tamper {
                let which = which % n;
                if at < 64 {
                    pairs[which].1[at] = value;
                } else {
                    messages[which][at - 64] = value;
                }
            }
            let items: Vec<_> = pairs
                .iter()
                .zip(&messages)
                .map(|((key, signature), message)| Ed25519BatchItem { key, message, signature })
                .collect();
            let every_one = items
                .iter()
                .all(|i| i.key.verify(Algorithm::Ed25519, i.message, i.signature).is_ok());
            proptest::prop_assert_eq!(verify_ed25519_batch(&items).is_ok(), every_one);
        }
    }
}
