//! RFC 8141 §3 URN-equivalence tests for `adcp_canon::urn`.

use std::collections::HashSet;

use adcp_canon::urn::{equivalent, Urn, UrnError, UrnKey, UrnPart, MAX_URN_LEN};
use proptest::prelude::*;

/// The example URNs of RFC 8141 §3.2, grouped so that members of a group
/// are pairwise URN-equivalent and members of different groups are not.
const RFC_GROUPS: &[&[&str]] = &[
    // Scheme and NID case are ignored, as are r-, q- and f-components.
    &[
        "urn:example:a123,z456",
        "URN:example:a123,z456",
        "urn:EXAMPLE:a123,z456",
        "urn:example:a123,z456?+abc",
        "urn:example:a123,z456?=xyz",
        "urn:example:a123,z456#789",
    ],
    // A "/" and what follows it is part of the NSS.
    &["urn:example:a123,z456/foo"],
    &["urn:example:a123,z456/bar"],
    &["urn:example:a123,z456/baz"],
    // Escapes compare with case-folded hex digits but are never decoded.
    &["urn:example:a123%2Cz456", "URN:EXAMPLE:a123%2cz456"],
    // The rest of the NSS is case-sensitive.
    &["urn:example:A123,z456"],
    &["urn:example:a123,Z456"],
    // A Cyrillic "a" (escaped) is not a Latin "a".
    &["urn:example:%D0%B0123,z456"],
];

fn all_rfc_examples() -> impl Iterator<Item = (usize, &'static str)> {
    RFC_GROUPS
        .iter()
        .enumerate()
        .flat_map(|(g, members)| members.iter().map(move |m| (g, *m)))
}

#[test]
fn rfc8141_examples_all_pairs() -> Result<(), UrnError> {
    let mut checked = 0usize;
    for (ga, a) in all_rfc_examples() {
        for (gb, b) in all_rfc_examples() {
            let expected = ga == gb;
            assert_eq!(
                equivalent(a, b)?,
                expected,
                "equivalent({a:?}, {b:?}) should be {expected}"
            );
            let (ua, ub) = (Urn::parse(a)?, Urn::parse(b)?);
            assert_eq!(ua.is_equivalent(&ub), expected, "{a:?} vs {b:?}");
            assert_eq!(
                ua.equivalence_key() == ub.equivalence_key(),
                expected,
                "keys of {a:?} and {b:?}"
            );
            checked += 1;
        }
    }
    // 14 URNs, every ordered pair (so both directions) including self-pairs.
    assert_eq!(checked, 14 * 14);
    Ok(())
}

#[test]
fn rfc8141_example_keys() -> Result<(), UrnError> {
    let expected = [
        ("urn:example:a123,z456", "urn:example:a123,z456"),
        ("URN:example:a123,z456", "urn:example:a123,z456"),
        ("urn:EXAMPLE:a123,z456", "urn:example:a123,z456"),
        ("urn:example:a123,z456?+abc", "urn:example:a123,z456"),
        ("urn:example:a123,z456?=xyz", "urn:example:a123,z456"),
        ("urn:example:a123,z456#789", "urn:example:a123,z456"),
        ("urn:example:a123,z456/foo", "urn:example:a123,z456/foo"),
        ("urn:example:a123%2Cz456", "urn:example:a123%2Cz456"),
        ("URN:EXAMPLE:a123%2cz456", "urn:example:a123%2Cz456"),
        ("urn:example:A123,z456", "urn:example:A123,z456"),
        ("urn:example:%D0%B0123,z456", "urn:example:%D0%B0123,z456"),
    ];
    for (input, key) in expected {
        let urn = Urn::parse(input)?;
        assert_eq!(urn.equivalence_key().as_str(), key, "key of {input:?}");
    }
    Ok(())
}

#[test]
fn rfc8141_groups_collapse_in_a_hash_set() -> Result<(), UrnError> {
    let mut keys: HashSet<UrnKey> = HashSet::new();
    for (_, urn) in all_rfc_examples() {
        keys.insert(Urn::parse(urn)?.equivalence_key());
    }
    assert_eq!(keys.len(), RFC_GROUPS.len());
    Ok(())
}

#[test]
fn percent_hex_digits_only_are_uppercased() -> Result<(), UrnError> {
    let urn = Urn::parse("urn:Ab-C:x%aa%bBy%Cc/z%0f:%2a")?;
    assert_eq!(urn.equivalence_key().to_string(), "urn:ab-c:x%AA%BBy%CC/z%0F:%2A");
    // Letters outside escapes keep their case.
    assert!(!equivalent("urn:ex:xaa", "urn:ex:xAA")?);
    // Escapes are not decoded, not even for unreserved characters.
    assert!(!equivalent("urn:ex:%41", "urn:ex:A")?);
    assert!(equivalent("urn:ex:%4a", "urn:ex:%4A")?);
    Ok(())
}

#[test]
fn nid_case_folding_is_ascii_only_and_nss_length_matters() -> Result<(), UrnError> {
    assert!(equivalent("urn:ISBN-x:1", "uRn:isbn-X:1")?);
    assert!(!equivalent("urn:ex:a", "urn:ex:ab")?);
    assert!(!equivalent("urn:ex:a", "urn:exa:a")?);
    Ok(())
}

#[test]
fn partial_eq_is_structural() -> Result<(), UrnError> {
    let a = Urn::parse("urn:example:a")?;
    let b = Urn::parse("URN:example:a")?;
    assert_ne!(a, b);
    assert!(a.is_equivalent(&b));
    assert_eq!(a, Urn::parse("urn:example:a")?);
    Ok(())
}

#[test]
fn accessors_full() -> Result<(), UrnError> {
    let input = "URN:Example:a%2cb/c:d@e?+r/1?+x?=q/2?+y?z#f/3?w";
    let urn: Urn = input.parse()?;
    assert_eq!(urn.as_str(), input);
    assert_eq!(urn.to_string(), input);
    assert_eq!(urn.nid(), "Example");
    assert_eq!(urn.nss(), "a%2cb/c:d@e");
    assert_eq!(urn.assigned_name(), "URN:Example:a%2cb/c:d@e");
    assert_eq!(urn.r_component(), Some("r/1?+x"));
    assert_eq!(urn.q_component(), Some("q/2?+y?z"));
    assert_eq!(urn.f_component(), Some("f/3?w"));
    assert_eq!(urn.equivalence_key().as_str(), "urn:example:a%2Cb/c:d@e");
    Ok(())
}

#[test]
fn accessors_optional_components() -> Result<(), UrnError> {
    let urn = Urn::parse("urn:ex:abc")?;
    assert_eq!(urn.r_component(), None);
    assert_eq!(urn.q_component(), None);
    assert_eq!(urn.f_component(), None);

    let urn = Urn::parse("urn:ex:abc?=q")?;
    assert_eq!(urn.r_component(), None);
    assert_eq!(urn.q_component(), Some("q"));
    assert_eq!(urn.f_component(), None);

    let urn = Urn::parse("urn:ex:abc?+r#")?;
    assert_eq!(urn.r_component(), Some("r"));
    assert_eq!(urn.q_component(), None);
    assert_eq!(urn.f_component(), Some(""));

    let urn = Urn::parse("urn:ex:abc#")?;
    assert_eq!(urn.f_component(), Some(""));

    // ':' is a pchar, so the NSS may itself contain or be colons.
    let urn = Urn::parse("urn:ex::")?;
    assert_eq!(urn.nss(), ":");
    let urn = Urn::parse("urn:ex:a:b:c")?;
    assert_eq!((urn.nid(), urn.nss()), ("ex", "a:b:c"));

    // NID length bounds.
    let nid32 = format!("a{}b", "-".repeat(30));
    let urn = Urn::parse(&format!("urn:{nid32}:x"))?;
    assert_eq!(urn.nid(), nid32);
    assert_eq!(Urn::parse("urn:a1:x")?.nid(), "a1");
    Ok(())
}

#[test]
fn from_str_and_try_from_agree_with_parse() -> Result<(), UrnError> {
    let s = "urn:ex:a?+b?=c#d";
    let a = Urn::parse(s)?;
    let b: Urn = s.parse()?;
    let c = Urn::try_from(s)?;
    assert_eq!(a, b);
    assert_eq!(a, c);
    Ok(())
}

/// Parses `input`, which must fail, and returns the error.
#[track_caller]
#[allow(clippy::panic)] // Test helper: failing the test is the point.
fn parse_err(input: &str) -> UrnError {
    match Urn::parse(input) {
        Ok(urn) => panic!("{input:?} unexpectedly parsed as {urn:?}"),
        Err(e) => e,
    }
}

#[test]
fn malformed_nid() {
    assert!(matches!(
        parse_err("urn:a:x"),
        UrnError::NidLength { ref nid, offset: 4 } if nid == "a"
    ));
    assert!(matches!(
        parse_err("urn::x"),
        UrnError::NidLength { ref nid, .. } if nid.is_empty()
    ));
    let nid33 = "a".repeat(33);
    assert!(matches!(
        parse_err(&format!("urn:{nid33}:x")),
        UrnError::NidLength { ref nid, .. } if *nid == nid33
    ));
    assert_eq!(
        parse_err("urn:-ab:x"),
        UrnError::NidHyphen {
            nid: "-ab".into(),
            offset: 4
        }
    );
    assert_eq!(
        parse_err("urn:ab-:x"),
        UrnError::NidHyphen {
            nid: "ab-".into(),
            offset: 6
        }
    );
    assert_eq!(
        parse_err("urn:ex_ample:x"),
        UrnError::InvalidNidChar { offset: 6, ch: '_' }
    );
    assert_eq!(
        parse_err("urn:ex.ample:x"),
        UrnError::InvalidNidChar { offset: 6, ch: '.' }
    );
    assert_eq!(
        parse_err("urn:example/x"),
        UrnError::InvalidNidChar { offset: 11, ch: '/' }
    );
}

#[test]
fn malformed_structure() {
    assert_eq!(parse_err("urn:ex:"), UrnError::EmptyNss { offset: 7 });
    assert_eq!(parse_err("urn:ex:?+r"), UrnError::EmptyNss { offset: 7 });
    assert_eq!(parse_err("urn:ex:#f"), UrnError::EmptyNss { offset: 7 });
    assert_eq!(parse_err("urn:example"), UrnError::MissingNssSeparator { offset: 11 });
    assert_eq!(parse_err("urn:ex:abc?"), UrnError::BareQuestionMark { offset: 10 });
    assert_eq!(parse_err("urn:ex:abc?x"), UrnError::BareQuestionMark { offset: 10 });
    assert_eq!(
        parse_err("urn:ex:abc?+"),
        UrnError::EmptyComponent {
            part: UrnPart::RComponent,
            offset: 12
        }
    );
    assert_eq!(
        parse_err("urn:ex:abc?+?=q"),
        UrnError::EmptyComponent {
            part: UrnPart::RComponent,
            offset: 12
        }
    );
    assert_eq!(
        parse_err("urn:ex:abc?="),
        UrnError::EmptyComponent {
            part: UrnPart::QComponent,
            offset: 12
        }
    );
    assert_eq!(
        parse_err("urn:ex:abc?=#f"),
        UrnError::EmptyComponent {
            part: UrnPart::QComponent,
            offset: 12
        }
    );
    assert_eq!(
        parse_err("urn:ex:/abc"),
        UrnError::InvalidLeadingChar {
            part: UrnPart::Nss,
            offset: 7,
            ch: '/'
        }
    );
    assert_eq!(
        parse_err("urn:ex:abc?+/r"),
        UrnError::InvalidLeadingChar {
            part: UrnPart::RComponent,
            offset: 12,
            ch: '/'
        }
    );
    assert_eq!(
        parse_err("urn:ex:abc?=?q"),
        UrnError::InvalidLeadingChar {
            part: UrnPart::QComponent,
            offset: 12,
            ch: '?'
        }
    );
    assert_eq!(
        parse_err("urn:ex:a b"),
        UrnError::InvalidChar {
            part: UrnPart::Nss,
            offset: 8,
            ch: ' '
        }
    );
    assert_eq!(
        parse_err("urn:ex:a[b]"),
        UrnError::InvalidChar {
            part: UrnPart::Nss,
            offset: 8,
            ch: '['
        }
    );
    assert_eq!(
        parse_err("urn:ex:a#b#c"),
        UrnError::InvalidChar {
            part: UrnPart::FComponent,
            offset: 10,
            ch: '#'
        }
    );
    assert_eq!(
        parse_err("urn:ex:a?=q\"x"),
        UrnError::InvalidChar {
            part: UrnPart::QComponent,
            offset: 11,
            ch: '"'
        }
    );
}

#[test]
fn r_component_may_contain_question_marks() -> Result<(), UrnError> {
    // Inside the r-component, `?` not followed by `=` is ordinary data.
    let urn = Urn::parse("urn:ex:abc?+r?x")?;
    assert_eq!(urn.r_component(), Some("r?x"));
    assert_eq!(urn.q_component(), None);
    Ok(())
}

#[test]
fn malformed_percent_encoding() {
    for (input, part, offset) in [
        ("urn:ex:a%2", UrnPart::Nss, 8),
        ("urn:ex:a%", UrnPart::Nss, 8),
        ("urn:ex:a%g0", UrnPart::Nss, 8),
        ("urn:ex:a%0gb", UrnPart::Nss, 8),
        ("urn:ex:%%41", UrnPart::Nss, 7),
        ("urn:ex:a?+%zz", UrnPart::RComponent, 10),
        ("urn:ex:a?=q%", UrnPart::QComponent, 11),
        ("urn:ex:a#%4", UrnPart::FComponent, 9),
    ] {
        assert_eq!(
            parse_err(input),
            UrnError::InvalidPercentEncoding { part, offset },
            "{input:?}"
        );
    }
}

#[test]
fn malformed_bytes_and_scheme() {
    assert_eq!(
        parse_err("urn:example:\u{430}123"),
        UrnError::InvalidByte { offset: 12, byte: 0xD0 }
    );
    assert_eq!(
        parse_err("urn:ex:a\tb"),
        UrnError::InvalidByte { offset: 8, byte: b'\t' }
    );
    assert_eq!(
        parse_err("urn:ex:a\u{7f}"),
        UrnError::InvalidByte { offset: 8, byte: 0x7F }
    );
    for input in ["", "urn", "urn-ex:a", "urx:ex:a", "http://example.com/", " urn:ex:a"] {
        assert_eq!(parse_err(input), UrnError::NotUrn, "{input:?}");
    }
}

#[test]
fn length_cap() -> Result<(), UrnError> {
    let prefix = "urn:ex:";
    let at_cap = format!("{prefix}{}", "a".repeat(MAX_URN_LEN - prefix.len()));
    assert_eq!(Urn::parse(&at_cap)?.as_str().len(), MAX_URN_LEN);
    let over = format!("{at_cap}a");
    assert_eq!(
        parse_err(&over),
        UrnError::TooLong {
            len: MAX_URN_LEN + 1,
            max: MAX_URN_LEN
        }
    );
    Ok(())
}

#[test]
fn equivalent_propagates_parse_errors() {
    assert_eq!(equivalent("nope", "urn:ex:a"), Err(UrnError::NotUrn));
    assert_eq!(equivalent("urn:ex:a", "urn:ex:"), Err(UrnError::EmptyNss { offset: 7 }));
}

#[test]
fn error_messages_name_part_and_offset() {
    let cases = [
        ("urn:x:abc", "URN NID `x` at byte 4 must be 2 to 32 characters"),
        ("urn:ex:", "empty NSS at byte 7"),
        ("urn:ex:a123%2Xz456", "invalid percent-encoding at byte 11 in NSS"),
        ("urn:ex:a?b", "`?` at byte 8 after NSS must be followed by `+` or `=`"),
        ("x", "input does not start with the `urn:` scheme"),
        (
            "urn:ab-:x",
            "URN NID `ab-` must not begin or end with `-` (hyphen at byte 6)",
        ),
        ("urn:ex:a?+", "empty r-component at byte 10"),
        ("urn:ex:a\u{e9}", "non-ASCII byte 0xC3 at byte 8 in URN"),
        ("urn:ex:a\n", "control byte 0x0A at byte 8 in URN"),
        ("urn:ex:a b", "invalid character ` ` at byte 8 in NSS"),
    ];
    for (input, message) in cases {
        assert_eq!(parse_err(input).to_string(), message, "{input:?}");
    }
    let long_nid = "a".repeat(100);
    let msg = parse_err(&format!("urn:{long_nid}:x")).to_string();
    assert!(msg.contains("..."), "{msg}");
    assert!(msg.len() < 120, "{msg}");
}

#[test]
fn error_offset_and_part() {
    let e = parse_err("urn:ex:a%zz");
    assert_eq!(e.offset(), Some(8));
    assert_eq!(e.part(), Some(UrnPart::Nss));
    assert_eq!(parse_err("nope").offset(), None);
    assert_eq!(parse_err("nope").part(), Some(UrnPart::Scheme));
    let boxed: Box<dyn std::error::Error> = Box::new(parse_err("urn:ex:"));
    assert_eq!(boxed.to_string(), "empty NSS at byte 7");
}

/// Regex for one `pchar`, shared by the URN generator below.
macro_rules! pchar {
    () => {
        "([a-zA-Z0-9._~!$&'()*+,;=:@-]|%[0-9a-fA-F]{2})"
    };
}

/// Strategy for syntactically valid URNs, built from the grammar.
fn valid_urn() -> impl Strategy<Value = String> {
    let scheme = "[uU][rR][nN]";
    let nid = "[a-zA-Z0-9][a-zA-Z0-9-]{0,30}[a-zA-Z0-9]";
    let nss = concat!(pchar!(), "(", pchar!(), "|/){0,20}");
    // A `?` inside the r-component must not be followed by `=`.
    let rq = concat!(pchar!(), "(", pchar!(), "|/|\\?[a-zA-Z0-9+]){0,8}");
    let f = concat!("(", pchar!(), "|/|\\?){0,8}");
    (
        scheme,
        nid,
        nss,
        proptest::option::of(rq),
        proptest::option::of(rq),
        proptest::option::of(f),
    )
        .prop_map(|(s, n, nss, r, q, f)| {
            let mut out = format!("{s}:{n}:{nss}");
            if let Some(r) = r {
                out.push_str("?+");
                out.push_str(&r);
            }
            if let Some(q) = q {
                out.push_str("?=");
                out.push_str(&q);
            }
            if let Some(f) = f {
                out.push('#');
                out.push_str(&f);
            }
            out
        })
}

proptest! {
    #[test]
    fn parse_never_panics(s in any::<String>()) {
        let _ = Urn::parse(&s);
    }

    #[test]
    fn parse_never_panics_on_urn_like_input(
        s in "(urn|URN):[a-z0-9%:?+=#/-]{0,12}:?[a-zA-Z0-9%?+=#/:@ \u{e9}-]{0,24}"
    ) {
        if let Ok(urn) = Urn::parse(&s) {
            prop_assert_eq!(urn.as_str(), s.as_str());
        }
    }

    #[test]
    fn generated_urns_parse(s in valid_urn()) {
        let parsed = Urn::parse(&s);
        prop_assert!(parsed.is_ok(), "{:?}: {:?}", s, parsed);
    }

    #[test]
    fn reflexive(s in prop_oneof![valid_urn(), any::<String>()]) {
        if Urn::parse(&s).is_ok() {
            prop_assert_eq!(equivalent(&s, &s), Ok(true));
        }
    }

    #[test]
    fn symmetric(a in valid_urn(), b in valid_urn()) {
        prop_assert_eq!(equivalent(&a, &b), equivalent(&b, &a));
    }

    #[test]
    fn symmetric_on_near_variants(a in valid_urn(), upper_nid in any::<bool>()) {
        // Build b from a by changing case in the parts that do not matter,
        // so the equivalent == true branch is exercised too.
        let urn = Urn::parse(&a).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let nid = if upper_nid {
            urn.nid().to_ascii_uppercase()
        } else {
            urn.nid().to_ascii_lowercase()
        };
        let b = format!("URN:{nid}:{}#x", urn.nss());
        prop_assert_eq!(equivalent(&a, &b), Ok(true));
        prop_assert_eq!(equivalent(&b, &a), Ok(true));
    }

    #[test]
    fn key_is_idempotent(s in valid_urn()) {
        let urn = Urn::parse(&s).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let key = urn.equivalence_key();
        let reparsed = Urn::parse(key.as_str())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(reparsed.equivalence_key(), key.clone());
        prop_assert!(reparsed.is_equivalent(&urn));
        prop_assert_eq!(reparsed.r_component(), None);
        prop_assert_eq!(reparsed.q_component(), None);
        prop_assert_eq!(reparsed.f_component(), None);
    }

    #[test]
    fn key_equality_matches_is_equivalent(a in valid_urn(), b in valid_urn()) {
        let ua = Urn::parse(&a).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let ub = Urn::parse(&b).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(
            ua.equivalence_key() == ub.equivalence_key(),
            ua.is_equivalent(&ub)
        );
    }
}
