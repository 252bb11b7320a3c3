//! One pass over a candidate Base64 value: rejects bytes outside both
//! alphabets and values mixing them, and records where each alphabet's own
//! characters and the padding first appear, so that the strict decoders can
//! report precise errors.

use super::EncodingError;

/// Where the distinguishing characters of a value first appear.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Scan {
    /// First `+` or `/` (standard alphabet only).
    pub(super) standard: Option<(usize, u8)>,
    /// First `-` or `_` (URL-safe alphabet only).
    pub(super) url_safe: Option<(usize, u8)>,
    /// First `=`.
    pub(super) first_pad: Option<usize>,
}

/// Scans `text`. Fails on the first byte that is in neither alphabet nor
/// `=`, then on a value that uses characters of both alphabets.
pub(super) fn scan(text: &[u8]) -> Result<Scan, EncodingError> {
    let mut found = Scan::default();
    for (offset, &byte) in text.iter().enumerate() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => {}
            b'+' | b'/' => {
                found.standard.get_or_insert((offset, byte));
            }
            b'-' | b'_' => {
                found.url_safe.get_or_insert((offset, byte));
            }
            b'=' => {
                found.first_pad.get_or_insert(offset);
            }
            _ => return Err(EncodingError::InvalidCharacter { offset, byte }),
        }
    }
    if let (Some((standard_offset, _)), Some((url_safe_offset, _))) = (found.standard, found.url_safe) {
        return Err(EncodingError::AlphabetMixing {
            standard_offset,
            url_safe_offset,
        });
    }
    Ok(found)
}
