//! The JOSE `Base64urlUInt` / base64url member encoding (RFC 7515 §2, RFC
//! 7518 §6.2): unpadded URL-safe Base64, decoded strictly with
//! [`BinaryEncoding::Base64UrlUnpadded`] (padding, the standard alphabet and
//! non-zero trailing bits are rejected, so every accepted value is the only
//! spelling of its bytes and re-encoding reproduces it).

use crate::crypto::SecretBytes;
use crate::encoding::BinaryEncoding;

use super::{JwkError, JwkMember};

/// The length of every key component this module handles: Ed25519 `x` and
/// `d` (RFC 8037 §2), P-256 `x`, `y` and `d` (RFC 7518 §6.2.1.2, §6.2.2.1).
pub(super) const COMPONENT_LEN: usize = 32;

/// Encodes bytes as unpadded base64url.
pub(super) fn encode(bytes: &[u8]) -> String {
    BinaryEncoding::Base64UrlUnpadded.encode(bytes)
}

/// Decodes a public 32-byte component strictly.
pub(super) fn decode_component(member: JwkMember, text: &str) -> Result<[u8; COMPONENT_LEN], JwkError> {
    let bytes = BinaryEncoding::Base64UrlUnpadded
        .decode(text)
        .map_err(|error| JwkError::InvalidBase64 { member, error })?;
    <[u8; COMPONENT_LEN]>::try_from(bytes.as_slice()).map_err(|_| JwkError::InvalidLength {
        member,
        expected: COMPONENT_LEN,
        actual: bytes.len(),
    })
}

/// Decodes a private 32-byte component strictly, into a buffer that is
/// wiped on drop (the `Vec` the decoder fills is wiped too).
pub(super) fn decode_secret(member: JwkMember, text: &str) -> Result<SecretBytes, JwkError> {
    let mut out = zeroize::Zeroizing::new(Vec::with_capacity(COMPONENT_LEN + 2));
    BinaryEncoding::Base64UrlUnpadded
        .decode_into(text, &mut out)
        .map_err(|error| JwkError::InvalidBase64 { member, error })?;
    if out.len() != COMPONENT_LEN {
        return Err(JwkError::InvalidLength {
            member,
            expected: COMPONENT_LEN,
            actual: out.len(),
        });
    }
    Ok(SecretBytes::new(core::mem::take(&mut *out)))
}
