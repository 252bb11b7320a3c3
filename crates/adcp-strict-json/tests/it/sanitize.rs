//! Step 14b key-name sanitization, against every example derivable from
//! the spec text and the AdCP reference signer's harness.

use adcp_strict_json::{is_non_printable, sanitize_key_name, MAX_KEY_NAME_BYTES};
use proptest::prelude::*;

fn s(raw: &str) -> String {
    sanitize_key_name(raw)
}

#[test]
fn printable_names_pass_through() {
    assert_eq!(s("status"), "status");
    assert_eq!(s("signed_authorized_agents"), "signed_authorized_agents"); // the spec's longest realistic name
    assert_eq!(s(""), "");
    assert_eq!(s("key with spaces"), "key with spaces");
    assert_eq!(s("café"), "café");
    assert_eq!(s("日本"), "日本");
    assert_eq!(s("😀"), "😀");
    assert_eq!(s("a\u{A0}b"), "a\u{A0}b"); // NBSP is a visible space, not a control
    assert_eq!(s("\"quoted\" \\ <tag>"), "\"quoted\" \\ <tag>");
}

#[test]
fn rule_a_c0_del_and_c1_controls() {
    assert_eq!(s("foo\nbar"), "<sanitized:3>");
    assert_eq!(s("\u{1b}[31mred\u{1b}[0m"), "<sanitized:0>"); // ANSI escape at position 0
    assert_eq!(s("foo\u{7f}bar"), "<sanitized:3>");
    assert_eq!(s("\0"), "<sanitized:0>");
    assert_eq!(s("a\0b"), "<sanitized:1>");
    assert_eq!(s("key\r\nInjected: yes"), "<sanitized:3>");
    assert_eq!(s("tab\there"), "<sanitized:3>");
    assert_eq!(s("foo\u{85}bar"), "<sanitized:3>"); // NEL
    assert_eq!(s("foo\u{9b}31mred"), "<sanitized:3>"); // CSI
    assert_eq!(s("\u{80}"), "<sanitized:0>");
    assert_eq!(s("\u{9f}"), "<sanitized:0>");
}

#[test]
fn rule_a_unicode_format_and_separator_characters() {
    assert_eq!(s("admin\u{202E}renimda"), "<sanitized:5>"); // RLO
    assert_eq!(s("key\u{2028}injected"), "<sanitized:3>"); // LINE SEPARATOR
    assert_eq!(s("foo\u{2029}bar"), "<sanitized:3>"); // PARAGRAPH SEPARATOR
    assert_eq!(s("admin\u{200B}user"), "<sanitized:5>"); // ZWSP
    assert_eq!(s("a\u{200C}b"), "<sanitized:1>"); // ZWNJ
    assert_eq!(s("a\u{200D}b"), "<sanitized:1>"); // ZWJ
    assert_eq!(s("ok\u{FEFF}bad"), "<sanitized:2>"); // BOM
    assert_eq!(s("\u{FEFF}status"), "<sanitized:0>");
    for bidi in [
        '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{2066}', '\u{2067}', '\u{2068}',
        '\u{2069}',
    ] {
        assert_eq!(s(&format!("ab{bidi}cd")), "<sanitized:2>", "U+{:04X}", bidi as u32);
    }
    // The prefix length counts bytes, not characters.
    assert_eq!(s("é\u{202E}"), "<sanitized:2>");
    assert_eq!(s("日本\u{2028}"), "<sanitized:6>");
    assert_eq!(s("😀\0"), "<sanitized:4>");
}

#[test]
fn rule_a_only_the_first_non_printable_matters() {
    // Everything after the first non-printable is elided: the count and
    // positions of later ones cannot be read back from the log.
    assert_eq!(s("ab\ncd\u{202E}ef\0"), "<sanitized:2>");
    assert_eq!(
        s("ab\nX"),
        s("ab\nXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\u{2028}\u{2029}")
    );
}

#[test]
fn rule_a_extension_beyond_the_minimum() {
    for c in [
        '\u{AD}',
        '\u{61C}',
        '\u{180E}',
        '\u{2060}',
        '\u{2064}',
        '\u{206A}',
        '\u{FFF9}',
        '\u{E0001}',
        '\u{E0041}',
        '\u{E007F}',
    ] {
        assert_eq!(s(&format!("x{c}")), "<sanitized:1>", "U+{:04X}", c as u32);
    }
}

#[test]
fn rule_b_truncates_at_a_code_point_boundary() {
    assert_eq!(s(&"a".repeat(100)), "a".repeat(32));
    assert_eq!(s(&"a".repeat(32)), "a".repeat(32));
    assert_eq!(s(&"a".repeat(33)), "a".repeat(32));
    assert_eq!(s(&"日".repeat(11)), "日".repeat(10)); // 33 bytes -> 30
    assert_eq!(s(&"😀".repeat(10)), "😀".repeat(8)); // exactly 32
    assert_eq!(s(&format!("{}日日", "a".repeat(28))), format!("{}日", "a".repeat(28))); // 34 -> 31
    assert_eq!(s(&format!("{}é", "a".repeat(31))), "a".repeat(31)); // 33 -> 31
    assert_eq!(s(&format!("{}é", "a".repeat(30))), format!("{}é", "a".repeat(30))); // exactly 32
    assert_eq!(s(&format!("{}😀", "a".repeat(29))), "a".repeat(29)); // 33 -> 29
}

#[test]
fn rules_a_then_b_cap_n_at_32() {
    // N is the prefix length after the 32-byte truncation.
    assert_eq!(s(&format!("{}\n", "a".repeat(40))), "<sanitized:32>");
    assert_eq!(s(&format!("{}\n", "a".repeat(32))), "<sanitized:32>");
    assert_eq!(s(&format!("{}\n", "a".repeat(31))), "<sanitized:31>");
    assert_eq!(s(&format!("{}\u{202E}", "日".repeat(11))), "<sanitized:30>");
    assert_eq!(s(&format!("{}é\n", "a".repeat(31))), "<sanitized:31>");
    // A non-printable past byte 32 is still found: the name is flagged.
    assert_eq!(s(&format!("{}\u{2028}tail", "a".repeat(1000))), "<sanitized:32>");
}

#[test]
fn classification_matches_the_documented_set() {
    let minimum = |cp: u32| {
        matches!(cp, 0..=0x1F | 0x7F | 0x80..=0x9F | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069
            | 0x2028 | 0x2029 | 0x200B..=0x200D | 0xFEFF)
    };
    // Unicode 15.1 Cf, the documented extension.
    let cf = |cp: u32| {
        matches!(cp, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890 | 0x891 | 0x8E2 | 0x180E
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF
            | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F)
    };
    let mut flagged = 0;
    for c in (0..=0x10FFFF).filter_map(char::from_u32) {
        let cp = c as u32;
        let got = is_non_printable(c);
        if minimum(cp) {
            assert!(got, "U+{cp:04X} is in the spec's mandatory set");
        }
        assert_eq!(got, minimum(cp) || cf(cp) || c.is_control(), "U+{cp:04X}");
        flagged += usize::from(got);
    }
    // Cc (65) + Zl/Zp (2) + Cf (170).
    let cf_count = 1 + 6 + 1 + 1 + 1 + 2 + 1 + 1 + 5 + 5 + 5 + 10 + 1 + 3 + 1 + 1 + 16 + 4 + 8 + 1 + 96;
    assert_eq!(flagged, 65 + 2 + cf_count);
    for printable in [' ', 'A', '~', 'é', '\u{A0}', '\u{3000}', '日', '😀', '\u{FFFD}'] {
        assert!(!is_non_printable(printable), "U+{:04X}", printable as u32);
    }
}

proptest! {
    #[test]
    fn output_is_bounded_printable_and_stable(raw in any::<String>()) {
        let out = sanitize_key_name(&raw);
        prop_assert!(out.len() <= MAX_KEY_NAME_BYTES);
        prop_assert!(!out.chars().any(is_non_printable));
        prop_assert_eq!(sanitize_key_name(&out), out.clone(), "idempotent");
        if raw.chars().any(is_non_printable) {
            prop_assert!(out.starts_with("<sanitized:") && out.ends_with('>'));
        } else {
            prop_assert!(raw.starts_with(&out));
        }
    }

    #[test]
    fn names_with_controls(prefix in "[a-z日é😀]{0,40}", c in prop::sample::select(vec!['\0', '\n', '\u{1b}', '\u{7f}', '\u{85}', '\u{200B}', '\u{202E}', '\u{2028}', '\u{FEFF}', '\u{E0041}']), tail in ".{0,10}") {
        let raw = format!("{prefix}{c}{tail}");
        let mut n = prefix.len().min(32);
        while !prefix.is_char_boundary(n) {
            n -= 1;
        }
        prop_assert_eq!(sanitize_key_name(&raw), format!("<sanitized:{n}>"));
    }
}
