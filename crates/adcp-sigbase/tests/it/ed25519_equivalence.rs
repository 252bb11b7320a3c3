//! Our Ed25519 verification must decide exactly as `ed25519-dalek`'s
//! `verify_strict`, which it replaces on the hot path (one field inversion
//! fewer; see `crypto/backend/ed25519_equation.rs`). `verify_strict` is the
//! oracle: every case below runs both and compares the decisions, on honest
//! signatures, on mutated ones, and on signatures a key holder crafts to
//! exploit the corners of the equation (small-order and non-canonical `R`,
//! unreduced `s`, torsion components in `R` and in `A`).

use adcp_sigbase::crypto::{Algorithm, VerifyingKey};
use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::scalar::Scalar;
use ed25519_dalek::Signer as _;
use proptest::prelude::*;
use sha2::{Digest, Sha512};

/// ℓ, the order of the base point, little-endian.
const ELL: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// Both decisions for one (key, message, signature); `None` when the key
/// encoding is rejected (both loaders must then agree it is unusable).
fn decisions(key: &[u8; 32], message: &[u8], signature: &[u8; 64]) -> Option<(bool, bool)> {
    let ours = VerifyingKey::ed25519_from_bytes(key).ok();
    let theirs = ed25519_dalek::VerifyingKey::from_bytes(key).ok();
    let theirs = theirs.filter(|k| !k.is_weak() && k.to_edwards().compress().as_bytes() == key);
    assert_eq!(
        ours.is_some(),
        theirs.is_some(),
        "key acceptance differs for {key:02x?}"
    );
    let (ours, theirs) = (ours?, theirs?);
    let our_decision = ours.verify(Algorithm::Ed25519, message, signature).is_ok();
    let their_decision = theirs
        .verify_strict(message, &ed25519_dalek::Signature::from_bytes(signature))
        .is_ok();
    Some((our_decision, their_decision))
}

fn assert_same(key: &[u8; 32], message: &[u8], signature: &[u8; 64]) -> Option<bool> {
    let (ours, theirs) = decisions(key, message, signature)?;
    assert_eq!(
        ours, theirs,
        "decisions differ (ours {ours}, verify_strict {theirs}) for key {key:02x?} signature {signature:02x?}"
    );
    Some(ours)
}

fn signature_of(r: &[u8; 32], s: &[u8; 32]) -> [u8; 64] {
    let mut signature = [0u8; 64];
    signature[..32].copy_from_slice(r);
    signature[32..].copy_from_slice(s);
    signature
}

fn challenge(r: &[u8; 32], a: &[u8; 32], message: &[u8]) -> Scalar {
    let mut hash = Sha512::new();
    hash.update(r);
    hash.update(a);
    hash.update(message);
    Scalar::from_bytes_mod_order_wide(&hash.finalize().into())
}

/// A signature made with the raw secret scalar `a` of `A = [a]B + torsion_a`
/// and the nonce point `R = [r]B + torsion_r`: what a key holder who wants
/// the cofactored and cofactorless equations to disagree would produce.
fn crafted(
    a: Scalar,
    torsion_a: EdwardsPoint,
    r: Scalar,
    torsion_r: EdwardsPoint,
    message: &[u8],
) -> ([u8; 32], [u8; 64]) {
    let key = (ED25519_BASEPOINT_POINT * a + torsion_a).compress().to_bytes();
    let r_bytes = (ED25519_BASEPOINT_POINT * r + torsion_r).compress().to_bytes();
    let k = challenge(&r_bytes, &key, message);
    let s = r + k * a;
    (key, signature_of(&r_bytes, &s.to_bytes()))
}

fn dalek_key(seed: [u8; 32]) -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&seed)
}

/// Every encoding the equation has to treat specially as `R`: the eight
/// small-order points with both sign bits, and every `y >= p`.
fn special_r_encodings() -> Vec<[u8; 32]> {
    let mut encodings = Vec::new();
    for point in EIGHT_TORSION {
        let canonical = point.compress().to_bytes();
        let mut flipped = canonical;
        flipped[31] ^= 0x80;
        encodings.push(canonical);
        encodings.push(flipped);
    }
    for low in 0xed..=0xffu8 {
        for top in [0x7f, 0xff] {
            let mut bytes = [0xff; 32];
            bytes[0] = low;
            bytes[31] = top;
            encodings.push(bytes);
        }
    }
    // y = 1 + p and y = p - 1 + p do not fit; the small y values with the
    // sign bit set cover x = 0 with a set sign bit.
    for y in 0..20u8 {
        let mut bytes = [0u8; 32];
        bytes[0] = y;
        encodings.push(bytes);
        bytes[31] = 0x80;
        encodings.push(bytes);
    }
    encodings
}

#[test]
fn honest_signatures_verify_under_both() {
    for seed in 0..64u8 {
        let key = dalek_key([seed; 32]);
        let message = vec![seed; usize::from(seed) * 7];
        let signature = key.sign(&message).to_bytes();
        assert_eq!(
            assert_same(key.verifying_key().as_bytes(), &message, &signature),
            Some(true)
        );
    }
}

#[test]
fn special_r_encodings_are_decided_alike() {
    let key = dalek_key([7; 32]);
    let message = b"special R";
    let honest = key.sign(message).to_bytes();
    let mut s = [0u8; 32];
    s.copy_from_slice(&honest[32..]);
    for r in special_r_encodings() {
        // With the honest s, and with the s that satisfies the equation for
        // this R if the key holder computed it (s = r + k·a needs r; for the
        // torsion points r = 0, so s = k·a).
        assert_eq!(
            assert_same(key.verifying_key().as_bytes(), message, &signature_of(&r, &s)),
            Some(false)
        );
        let a = key.to_scalar();
        let k = challenge(&r, key.verifying_key().as_bytes(), message);
        let forged = signature_of(&r, &(k * a).to_bytes());
        assert_same(key.verifying_key().as_bytes(), message, &forged);
    }
}

#[test]
fn unreduced_s_is_rejected_by_both() {
    let key = dalek_key([9; 32]);
    let message = b"malleable?";
    let honest = key.sign(message).to_bytes();
    let s = Scalar::from_canonical_bytes(honest[32..].try_into().unwrap()).unwrap();
    // s + ℓ as a 256-bit integer: the classic malleated signature.
    let mut plus_ell = [0u8; 32];
    let mut carry = 0u16;
    for (i, byte) in plus_ell.iter_mut().enumerate() {
        let sum = u16::from(s.as_bytes()[i]) + u16::from(ELL[i]) + carry;
        *byte = sum as u8;
        carry = sum >> 8;
    }
    let r: [u8; 32] = honest[..32].try_into().unwrap();
    for candidate in [plus_ell, ELL, [0xff; 32]] {
        assert_eq!(
            assert_same(key.verifying_key().as_bytes(), message, &signature_of(&r, &candidate)),
            Some(false)
        );
    }
}

#[test]
fn torsion_in_r_and_a_is_decided_alike_including_crafted_acceptances() {
    let message = b"crafted by the key holder";
    let mut accepted = 0;
    let mut rejected = 0;
    for (i, torsion_a) in EIGHT_TORSION.iter().enumerate() {
        for (j, torsion_r) in EIGHT_TORSION.iter().enumerate() {
            for nonce in 1..6u64 {
                let a = Scalar::from(1_000_003u64 * (i as u64 + 3));
                let r = Scalar::from(7_919u64 * nonce + j as u64);
                let (key, signature) = crafted(a, *torsion_a, r, *torsion_r, message);
                match assert_same(&key, message, &signature) {
                    Some(true) => accepted += 1,
                    Some(false) => rejected += 1,
                    None => {}
                }
            }
        }
    }
    // Both outcomes must occur, or the crafted cases would not exercise the
    // equation's corners.
    assert!(accepted > 0 && rejected > 0, "accepted {accepted}, rejected {rejected}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_single_byte_change_is_decided_alike(
        seed in any::<[u8; 32]>(),
        message in proptest::collection::vec(any::<u8>(), 0..300),
        position in 0usize..64,
        value in any::<u8>(),
    ) {
        let key = dalek_key(seed);
        let mut signature = key.sign(&message).to_bytes();
        signature[position] = value;
        assert_same(key.verifying_key().as_bytes(), &message, &signature);
    }

    #[test]
    fn arbitrary_keys_and_signatures_are_decided_alike(
        key in any::<[u8; 32]>(),
        r in any::<[u8; 32]>(),
        s in any::<[u8; 32]>(),
        message in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        assert_same(&key, &message, &signature_of(&r, &s));
    }

    #[test]
    fn crafted_signatures_with_random_scalars_are_decided_alike(
        a in any::<[u8; 32]>(),
        r in any::<[u8; 32]>(),
        torsion_a in 0usize..8,
        torsion_r in 0usize..8,
        message in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let (key, signature) = crafted(
            Scalar::from_bytes_mod_order(a),
            EIGHT_TORSION[torsion_a],
            Scalar::from_bytes_mod_order(r),
            EIGHT_TORSION[torsion_r],
            &message,
        );
        assert_same(&key, &message, &signature);
    }
}
