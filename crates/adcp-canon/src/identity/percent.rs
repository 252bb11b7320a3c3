//! Step 6 (percent-encoding normalization) for the path and the query.
//!
//! One pass per component: `%xx` triplets get uppercase hex, triplets that
//! encode an unreserved character are decoded, reserved ones stay encoded.
//! Raw bytes are validated at the same time:
//!
//! - control characters, space and DEL are rejected everywhere;
//! - a backslash is rejected in the path (servers that fold `\` into `/` would
//!   route a different resource than the one signed);
//! - other printable ASCII that RFC 3986 does not allow raw (`"`, `<`, `>`,
//!   `^`, `` ` ``, `{`, `|`, `}`, `[`, `]`) is preserved byte-for-byte: HTTP
//!   stacks pass such request targets through unchanged and peers sign them
//!   as received, so rejecting or re-encoding them would break interop;
//! - raw non-ASCII is percent-encoded as UTF-8 on the producer side (the
//!   RFC 3987 IRI-to-URI mapping) and rejected on the received side, where a
//!   conformant peer can never have sent it.

use super::Mode;
use crate::chars::{hex_value, is_hex, is_unreserved, is_visible, upper_hex};
use crate::{CanonError, Component, ErrorKind};

/// Appends `input` (the raw bytes of `component`, found at byte `base` of the
/// whole input) to `out` with percent-encoding normalized.
pub(crate) fn normalize_into(
    input: &[u8],
    base: usize,
    component: Component,
    mode: Mode,
    out: &mut Vec<u8>,
) -> Result<(), CanonError> {
    let mut i = 0;
    while i < input.len() {
        // Copy the run of ordinary bytes in one go: most paths and queries
        // contain no `%` at all.
        let run_start = i;
        while i < input.len() {
            let b = input[i];
            if b == b'%' || !is_visible(b) || (b == b'\\' && component == Component::Path) {
                break;
            }
            i += 1;
        }
        out.extend_from_slice(&input[run_start..i]);
        let Some(&b) = input.get(i) else { break };
        match b {
            b'%' => {
                let (hi, lo) = match (input.get(i + 1), input.get(i + 2)) {
                    (Some(&hi), Some(&lo)) if is_hex(hi) && is_hex(lo) => (hi, lo),
                    _ => {
                        let end = (i + 3).min(input.len());
                        return Err(CanonError::new(
                            ErrorKind::InvalidPercentEncoding,
                            component,
                            base + i,
                            &input[i..end],
                        ));
                    }
                };
                let value = (hex_value(hi) << 4) | hex_value(lo);
                if is_unreserved(value) {
                    out.push(value);
                } else {
                    out.extend_from_slice(&[b'%', hi.to_ascii_uppercase(), lo.to_ascii_uppercase()]);
                }
                i += 3;
            }
            b'\\' => {
                return Err(CanonError::new(ErrorKind::Backslash, component, base + i, input));
            }
            0x80.. if mode == Mode::Producer => {
                out.extend_from_slice(&[b'%', upper_hex(b >> 4), upper_hex(b)]);
                i += 1;
            }
            0x80.. => {
                return Err(CanonError::new(ErrorKind::NonAscii, component, base + i, input));
            }
            _ => {
                return Err(CanonError::new(
                    ErrorKind::InvalidCharacter,
                    component,
                    base + i,
                    &input[i..=i],
                ));
            }
        }
    }
    Ok(())
}
