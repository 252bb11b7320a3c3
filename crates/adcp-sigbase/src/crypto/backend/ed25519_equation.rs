//! The strict Ed25519 verification equation, decided exactly as
//! `ed25519-dalek`'s `verify_strict` decides it, without its second
//! curve-point conversion.
//!
//! `verify_strict` (ed25519-dalek 2.2) decompresses `R` to reject points of
//! small order, then computes `[s]B - [k]A` and *compresses* it to compare
//! bytes with `R`. Compression costs a field inversion: about 8 % of the
//! whole verification. Comparing the two points in projective coordinates
//! instead costs four multiplications, and decides the same thing once the
//! one difference between the two comparisons is checked explicitly:
//!
//! * `compress(P) == R_bytes` holds iff `P == decompress(R_bytes)` **and**
//!   `R_bytes` is the canonical encoding of that point. `curve25519-dalek`
//!   decompresses two kinds of non-canonical encodings: a `y` coordinate in
//!   `[p, 2^255)` (read modulo `p`), and `x = 0` with the sign bit set. The
//!   first is rejected by [`y_is_canonical`]; the second only occurs for
//!   `y = ±1`, the identity and the point of order 2, which the small-order
//!   check rejects before the comparison.
//!
//! Everything else is the same as in `verify_strict`, in the same order: `s`
//! must be canonical (`< ℓ`), `R` must decompress and not be of small order,
//! `A` not of small order (checked once, when the key is loaded),
//! `k = SHA-512(R_bytes || A_bytes || M) mod ℓ`, cofactorless equation.
//! `tests/it/ed25519_equivalence.rs` checks the two decisions agree on honest,
//! mutated and deliberately crafted signatures (small-order and
//! non-canonical `R`, unreduced `s`, torsion components in `R` and `A`).

use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use sha2::{Digest, Sha512};

/// A signature that passed the input rules, with its challenge: what the
/// equation `[s]B = R + [k]A` needs. Shared by single and batch
/// verification, so both apply exactly the same rules.
pub(crate) struct Checked {
    /// `s`, canonical (`< ℓ`).
    pub(crate) s: Scalar,
    /// `R`, canonically encoded and not of small order.
    pub(crate) r: EdwardsPoint,
    /// `k = SHA-512(R_bytes || A_bytes || M) mod ℓ`.
    pub(crate) k: Scalar,
}

/// Applies `verify_strict`'s input rules to `signature` (`R || s`) and
/// computes the challenge for `message` under `key` (a key already checked
/// to be canonical and not of small order); `None` when a rule fails.
pub(crate) fn check_inputs(key: &ed25519_dalek::VerifyingKey, message: &[u8], signature: &[u8; 64]) -> Option<Checked> {
    let (r_half, s_half) = signature.split_at(32);
    let mut r_bytes = [0u8; 32];
    r_bytes.copy_from_slice(r_half);
    let mut s_bytes = [0u8; 32];
    s_bytes.copy_from_slice(s_half);

    let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes))?;
    if !y_is_canonical(&r_bytes) {
        return None;
    }
    let r = CompressedEdwardsY(r_bytes).decompress()?;
    if r.is_small_order() {
        return None;
    }

    let mut hash = Sha512::new();
    hash.update(r_bytes);
    hash.update(key.as_bytes());
    hash.update(message);
    let k = Scalar::from_bytes_mod_order_wide(&hash.finalize().into());
    Some(Checked { s, r, k })
}

/// Whether `signature` (`R || s`) is a valid strict Ed25519 signature of
/// `message` under `key`, a key already checked to be canonical and not of
/// small order.
pub(crate) fn verify(key: &ed25519_dalek::VerifyingKey, message: &[u8], signature: &[u8; 64]) -> bool {
    let Some(Checked { s, r, k }) = check_inputs(key, message, signature) else {
        return false;
    };
    let minus_a = -key.to_edwards();
    EdwardsPoint::vartime_double_scalar_mul_basepoint(&k, &minus_a, &s) == r
}

/// Whether the 255-bit `y` of an encoded point is below `p = 2^255 - 19`.
/// The encodings at or above `p` are `ed ff … ff 7f` to `ff ff … ff 7f`
/// (little-endian, sign bit masked).
pub(crate) fn y_is_canonical(encoding: &[u8; 32]) -> bool {
    let top_is_max = encoding[31] & 0x7f == 0x7f;
    let middle_is_max = encoding[1..31].iter().all(|&byte| byte == 0xff);
    !(top_is_max && middle_is_max && encoding[0] >= 0xed)
}

#[cfg(test)]
mod tests {
    use super::y_is_canonical;

    fn encoding_of(low: u8, sign: bool) -> [u8; 32] {
        let mut bytes = [0xff; 32];
        bytes[0] = low;
        bytes[31] = if sign { 0xff } else { 0x7f };
        bytes
    }

    #[test]
    fn y_at_or_above_p_is_not_canonical_whatever_the_sign_bit() {
        for low in 0xed..=0xff {
            assert!(!y_is_canonical(&encoding_of(low, false)), "{low:#x}");
            assert!(!y_is_canonical(&encoding_of(low, true)), "{low:#x} signed");
        }
        assert!(y_is_canonical(&encoding_of(0xec, false)), "p - 1");
        assert!(y_is_canonical(&encoding_of(0xec, true)), "p - 1 signed");
        let mut below = encoding_of(0xff, false);
        below[17] = 0xfe;
        assert!(y_is_canonical(&below));
        assert!(y_is_canonical(&[0u8; 32]));
    }
}
