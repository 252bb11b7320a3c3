//! Our Ed25519 verification (`ed25519_equation`, reached through the public
//! `VerifyingKey`) decides exactly as `ed25519-dalek`'s `verify_strict` on
//! any key, message and signature: arbitrary ones, and honest signatures
//! with one byte replaced (the inputs where a difference in the equation's
//! corners could show). The batch path (`verify_ed25519_batch`) must agree
//! too on these inputs: they carry no torsion crafted by a key holder, the
//! one case where the two equations may differ.
#![no_main]
#![forbid(unsafe_code)]

use adcp_sigbase::crypto::{verify_ed25519_batch, Algorithm, Ed25519BatchItem, VerifyingKey};
use ed25519_dalek::Signer as _;
use libfuzzer_sys::fuzz_target;

fn same_decision(key: &[u8; 32], message: &[u8], signature: &[u8; 64]) {
    let ours = VerifyingKey::ed25519_from_bytes(key).ok();
    let theirs = ed25519_dalek::VerifyingKey::from_bytes(key)
        .ok()
        .filter(|k| !k.is_weak() && k.to_edwards().compress().as_bytes() == key);
    assert_eq!(ours.is_some(), theirs.is_some(), "key acceptance differs");
    if let (Some(ours), Some(theirs)) = (ours, theirs) {
        let our_decision = ours.verify(Algorithm::Ed25519, message, signature).is_ok();
        let their_decision = theirs
            .verify_strict(message, &ed25519_dalek::Signature::from_bytes(signature))
            .is_ok();
        assert_eq!(our_decision, their_decision, "decisions differ");
        let item = Ed25519BatchItem {
            key: &ours,
            message,
            signature,
        };
        let batch_decision = verify_ed25519_batch(&[item, item]).is_ok();
        assert_eq!(batch_decision, our_decision, "batch and single decisions differ");
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 98 {
        return;
    }
    let (head, message) = data.split_at(98);
    let mut key = [0u8; 32];
    key.copy_from_slice(&head[..32]);
    let mut signature = [0u8; 64];
    signature.copy_from_slice(&head[32..96]);
    if head[96] & 1 == 0 {
        same_decision(&key, message, &signature);
    } else {
        // key is a seed: sign honestly, then replace one byte.
        let signing = ed25519_dalek::SigningKey::from_bytes(&key);
        let mut honest = signing.sign(message).to_bytes();
        honest[usize::from(head[97] % 64)] = signature[0];
        same_decision(signing.verifying_key().as_bytes(), message, &honest);
    }
});
