//! Byte classes of RFC 3986, as lookup tables (one load per byte on hot paths).

const UNRESERVED: u8 = 1;
const SUB_DELIM: u8 = 1 << 1;
/// Printable ASCII that may stay raw in a path or query (see `identity::percent`).
const VISIBLE: u8 = 1 << 2;
const HEX: u8 = 1 << 3;
const SCHEME: u8 = 1 << 4;

const fn build() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut f = 0;
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_' || b == b'~' {
            f |= UNRESERVED;
        }
        if matches!(
            b,
            b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
        ) {
            f |= SUB_DELIM;
        }
        if b > 0x20 && b < 0x7f {
            f |= VISIBLE;
        }
        if b.is_ascii_hexdigit() {
            f |= HEX;
        }
        if b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.' {
            f |= SCHEME;
        }
        t[i] = f;
        i += 1;
    }
    t
}

static TABLE: [u8; 256] = build();

/// `ALPHA / DIGIT / "-" / "." / "_" / "~"` (RFC 3986 §2.3).
#[inline]
pub(crate) fn is_unreserved(b: u8) -> bool {
    TABLE[b as usize] & UNRESERVED != 0
}

/// `"!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="`.
#[inline]
pub(crate) fn is_sub_delim(b: u8) -> bool {
    TABLE[b as usize] & SUB_DELIM != 0
}

/// Printable ASCII other than space (0x21–0x7E).
#[inline]
pub(crate) fn is_visible(b: u8) -> bool {
    TABLE[b as usize] & VISIBLE != 0
}

/// An ASCII hex digit.
#[inline]
pub(crate) fn is_hex(b: u8) -> bool {
    TABLE[b as usize] & HEX != 0
}

/// A scheme character after the first (`ALPHA / DIGIT / "+" / "-" / "."`).
#[inline]
pub(crate) fn is_scheme_char(b: u8) -> bool {
    TABLE[b as usize] & SCHEME != 0
}

/// The value of an ASCII hex digit (caller has checked [`is_hex`]).
#[inline]
pub(crate) fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => (b | 0x20).wrapping_sub(b'a').wrapping_add(10),
    }
}

/// Uppercase hex digit for a nibble.
#[inline]
pub(crate) fn upper_hex(nibble: u8) -> u8 {
    b"0123456789ABCDEF"[(nibble & 0x0f) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_match_rfc3986() {
        for b in 0u8..=255 {
            let unreserved = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
            assert_eq!(is_unreserved(b), unreserved, "{b:#x}");
            assert_eq!(is_sub_delim(b), b"!$&'()*+,;=".contains(&b), "{b:#x}");
            assert_eq!(is_hex(b), b.is_ascii_hexdigit(), "{b:#x}");
            if b.is_ascii_hexdigit() {
                assert_eq!(u32::from(hex_value(b)), char::from(b).to_digit(16).unwrap_or(99));
            }
        }
        assert_eq!(upper_hex(0xa), b'A');
    }
}
