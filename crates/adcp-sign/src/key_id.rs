//! The `keyid` signature parameter's syntax.

use crate::SignError;

/// The longest `keyid` accepted, in bytes.
pub(crate) const MAX_KEY_ID_LEN: usize = 256;

/// Checks that `kid` can be a `keyid`: 1 to 256 bytes of printable ASCII
/// (an RFC 8941 string carries nothing else).
pub(crate) fn check_key_id(kid: &str) -> Result<(), SignError> {
    let printable = kid.bytes().all(|b| (0x20..=0x7e).contains(&b));
    if kid.is_empty() || kid.len() > MAX_KEY_ID_LEN || !printable {
        return Err(SignError::KeyIdInvalid);
    }
    Ok(())
}
