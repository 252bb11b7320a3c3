//! Key-name sanitization for logs and error output: AdCP webhook verifier
//! checklist step 14b, rules (a) and (b); rule (c) is applied by
//! [`DuplicateKeys`](crate::DuplicateKeys).

/// Byte budget of one sanitized key name (step 14b (b)).
pub const MAX_KEY_NAME_BYTES: usize = 32;

/// Whether `c` is non-printable for step 14b (a).
///
/// The set is the spec's mandatory minimum — C0 controls (U+0000–U+001F),
/// DEL (U+007F), C1 controls (U+0080–U+009F), bidi controls and isolates
/// (U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), line and paragraph
/// separators (U+2028, U+2029), zero-width characters (U+200B–U+200D) and
/// the byte-order mark (U+FEFF) — extended, as the spec permits, to every
/// code point of the Unicode 15.1 general categories `Cc`, `Cf`, `Zl` and
/// `Zp`. The extension adds the remaining invisible format characters with
/// known smuggling or rendering semantics: the soft hyphen (U+00AD), the
/// Arabic letter mark (U+061C, a bidi control the spec's list omits), the
/// Mongolian vowel separator (U+180E), the word joiner and invisible
/// operators (U+2060–U+2064), the deprecated format controls
/// (U+206A–U+206F), the interlinear annotation controls (U+FFF9–U+FFFB),
/// the tag characters (U+E0001, U+E0020–U+E007F, used for invisible "ASCII
/// smuggling"), and a few script-specific format controls.
///
/// ```
/// use adcp_strict_json::is_non_printable;
///
/// assert!(is_non_printable('\n'));
/// assert!(is_non_printable('\u{202E}')); // RIGHT-TO-LEFT OVERRIDE
/// assert!(is_non_printable('\u{E0041}')); // TAG LATIN CAPITAL LETTER A
/// assert!(!is_non_printable(' '));
/// assert!(!is_non_printable('é'));
/// ```
#[must_use]
pub const fn is_non_printable(c: char) -> bool {
    matches!(
        c as u32,
        // Cc: C0 controls, DEL, C1 controls (spec minimum).
        0x0000..=0x001F | 0x007F..=0x009F
        // Cf, spec minimum: zero-width space / non-joiner / joiner, LRM, RLM;
        // bidi embeddings and overrides; isolates; byte-order mark.
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2066..=0x2069 | 0xFEFF
        // Zl, Zp (spec minimum).
        | 0x2028 | 0x2029
        // Cf, extension (Unicode 15.1).
        | 0x00AD
        | 0x0600..=0x0605
        | 0x061C
        | 0x06DD
        | 0x070F
        | 0x0890..=0x0891
        | 0x08E2
        | 0x180E
        | 0x2060..=0x2064
        | 0x206A..=0x206F
        | 0xFFF9..=0xFFFB
        | 0x110BD
        | 0x110CD
        | 0x13430..=0x1343F
        | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A
        | 0xE0001
        | 0xE0020..=0xE007F
    )
}

/// Sanitizes one (unescaped) member name for logs and error output, per
/// AdCP webhook verifier checklist step 14b, rules (a) then (b):
///
/// - **(a)** The name is cut at its first non-printable code point (see
///   [`is_non_printable`]); what precedes it is the *truncation prefix*.
/// - **(b)** The prefix is cut to at most [`MAX_KEY_NAME_BYTES`] (32) bytes,
///   at the last complete UTF-8 code point boundary at or below 32.
/// - If (a) found a non-printable code point, the result is only the marker
///   `<sanitized:N>`, where `N` is the byte length of the prefix after (b)
///   (so `0..=32`); none of the name's bytes are emitted. Otherwise the
///   result is the prefix after (b).
///
/// The marker-only form and the value of `N` follow the AdCP reference
/// signer and its conformance harness (`foo\nbar` → `<sanitized:3>`,
/// `ESC[31m…` → `<sanitized:0>`); the normative text ("truncate at the
/// first non-printable codepoint and emit `<sanitized:N>` where N is the
/// byte length of the truncation prefix") can also be read as keeping the
/// prefix before the marker. Emitting the marker alone is the reading that
/// lands fewer attacker-chosen bytes in logs. The output is always valid
/// UTF-8, free of non-printable code points and at most 32 bytes long
/// (the longest marker, `<sanitized:32>`, is 14 bytes).
///
/// ```
/// use adcp_strict_json::sanitize_key_name;
///
/// assert_eq!(sanitize_key_name("status"), "status");
/// assert_eq!(sanitize_key_name("foo\nbar"), "<sanitized:3>");
/// assert_eq!(sanitize_key_name("admin\u{202E}nimda"), "<sanitized:5>");
/// assert_eq!(sanitize_key_name(&"日".repeat(11)), "日".repeat(10)); // 30 of 33 bytes
/// ```
#[must_use]
pub fn sanitize_key_name(raw: &str) -> String {
    let (prefix, flagged) = match raw.char_indices().find(|&(_, c)| is_non_printable(c)) {
        Some((at, _)) => (raw.get(..at).unwrap_or_default(), true),
        None => (raw, false),
    };
    let kept = truncate_to_char_boundary(prefix, MAX_KEY_NAME_BYTES);
    if flagged {
        format!("<sanitized:{}>", kept.len())
    } else {
        kept.to_owned()
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char
/// boundary.
fn truncate_to_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_never_splits_a_code_point() {
        for s in ["a", "é", "日", "😀"] {
            for n in 0..40 {
                let name = s.repeat(n);
                let out = truncate_to_char_boundary(&name, 32);
                assert!(out.len() <= 32);
                assert!(name.len() <= 32 || out.len() > 32 - s.len());
            }
        }
    }
}
