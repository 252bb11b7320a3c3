//! Property tests for `Signature-Input` and `Signature` parsing: round trip
//! through serialization, and no panics on arbitrary bytes.

use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::{Error, SignatureInput, Signatures, MAX_SIGNATURE_INPUT_LEN};
use proptest::prelude::*;

fn component() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "\"@method\"",
            "\"@target-uri\"",
            "\"@authority\"",
            "\"@path\"",
            "\"@query\"",
            "\"@scheme\"",
            "\"@request-target\"",
            "\"content-type\"",
            "\"content-digest\"",
            "\"content-digest\";sf",
            "\"example-dict\";key=\"a\"",
            "\"x-h\";bs",
            "\"@method\";req",
        ])
        .prop_map(str::to_owned),
        "[a-z][a-z0-9-]{0,10}".prop_map(|n| format!("\"x-{n}\"")),
        "[a-zA-Z0-9_]{1,8}".prop_map(|n| format!("\"@query-param\";name=\"{n}\"")),
    ]
}

fn param() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        (0i64..=999_999_999_999_999).prop_map(|v| ("created".to_owned(), v.to_string())),
        (0i64..=999_999_999_999_999).prop_map(|v| ("expires".to_owned(), v.to_string())),
        "[ -!#-\\[\\]-~]{0,24}".prop_map(|v| ("nonce".to_owned(), format!("\"{v}\""))),
        "[a-z0-9-]{1,24}".prop_map(|v| ("keyid".to_owned(), format!("\"{v}\""))),
        prop::sample::select(vec!["\"ed25519\"", "\"ecdsa-p256-sha256\"", "\"hmac-sha256\""])
            .prop_map(|v| ("alg".to_owned(), v.to_owned())),
        "[a-z/0-9-]{1,24}".prop_map(|v| ("tag".to_owned(), format!("\"{v}\""))),
        "[a-z][a-z0-9]{0,6}".prop_map(|k| (format!("x{k}"), "?1".to_owned())),
    ]
}

/// A valid Signature-Input member with distinct components and parameters.
fn member() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(component(), 0..7),
        prop::collection::vec(param(), 0..7),
        "[a-z][a-z0-9-]{0,8}",
    )
        .prop_map(|(mut comps, mut params, label)| {
            comps.sort();
            comps.dedup();
            let mut seen = std::collections::HashSet::new();
            params.retain(|(k, _)| seen.insert(k.clone()));
            let mut s = format!("{label}=({})", comps.join(" "));
            for (k, v) in params {
                if v == "?1" {
                    s.push_str(&format!(";{k}"));
                } else {
                    s.push_str(&format!(";{k}={v}"));
                }
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn signature_input_round_trips(members in prop::collection::vec(member(), 1..4)) {
        let header = members.join(", ");
        let labels: Vec<&str> = members.iter().map(|m| m.split('=').next().unwrap()).collect();
        let repeated = |label: &str| labels.iter().filter(|l| **l == label).count() > 1;
        match SignatureInput::parse(header.as_bytes()) {
            Ok(parsed) => {
                // A repeated label other than `sig1` is set aside; every
                // other member is usable and serializes as generated.
                let usable = members
                    .iter()
                    .zip(&labels)
                    .filter(|(_, l)| !repeated(l))
                    .map(|(m, _)| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                let serialized = parsed.serialize();
                prop_assert_eq!(&serialized, &usable, "canonical input must serialize to itself");
                for label in labels.iter().filter(|l| repeated(l)) {
                    let duplicate = matches!(parsed.require(label), Err(Error::DuplicateLabel { .. }));
                    prop_assert!(duplicate, "{}", label);
                }
                let again = SignatureInput::parse(serialized.as_bytes()).unwrap();
                prop_assert_eq!(again, parsed);
            }
            // A repeated `sig1` is fatal.
            Err(Error::DuplicateLabel { label, .. }) => prop_assert!(label == "sig1" && repeated("sig1")),
            Err(e) => prop_assert!(false, "{header}: {e}"),
        }
    }

    #[test]
    fn signature_input_whitespace_is_normalized(member in member()) {
        // Extra optional whitespace around members and inside inner lists
        // parses to the same value; the base uses the canonical spelling.
        let spaced = format!("  {}  ", member.replacen("(", "(  ", 1).replacen(")", "  )", 1));
        if let (Ok(a), Ok(b)) = (SignatureInput::parse(member.as_bytes()), SignatureInput::parse(spaced.as_bytes())) {
            prop_assert_eq!(a.serialize(), b.serialize());
        }
    }

    #[test]
    fn signature_input_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = SignatureInput::parse(&bytes);
    }

    #[test]
    fn signature_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(sigs) = Signatures::parse(&bytes) {
            let labels: Vec<String> = sigs.labels().map(str::to_owned).collect();
            for label in labels {
                let _ = sigs.decode(&label, BinaryEncoding::Base64Padded);
                let _ = sigs.decode(&label, BinaryEncoding::Base64UrlUnpadded);
            }
        }
    }

    #[test]
    fn signature_round_trips(sig in prop::collection::vec(any::<u8>(), 0..96), label in "[a-z][a-z0-9]{0,6}") {
        for encoding in [BinaryEncoding::Base64Padded, BinaryEncoding::Base64UrlUnpadded] {
            let header = format!("{label}=:{}:", encoding.encode(&sig));
            let parsed = Signatures::parse(header.as_bytes()).unwrap();
            prop_assert_eq!(parsed.decode(&label, encoding).unwrap(), sig.clone());
        }
    }
}

/// Whether an error is the expected kind.
type ErrorCheck = fn(&Error) -> bool;

/// Members beside `sig1` that are well-formed RFC 8941 but not valid
/// signature metadata, each with the problem `require` reports for it.
fn odd_extras() -> Vec<(&'static str, ErrorCheck)> {
    vec![
        (r#"relay=("@method" "@method")"#, |e| {
            matches!(e, Error::DuplicateComponent { .. })
        }),
        (r#"relay=("@foo")"#, |e| matches!(e, Error::InvalidComponentName { .. })),
        (r#"relay=("@method");keyid=abc"#, |e| {
            matches!(e, Error::UnquotedStringParameter { .. })
        }),
        (r#"relay=("@method");created="1""#, |e| {
            matches!(e, Error::ParameterType { .. })
        }),
        (r#"relay=("@method");created=1;created=2"#, |e| {
            matches!(e, Error::DuplicateParameter { .. })
        }),
        (r#"relay=("x";a=1;a=2)"#, |e| {
            matches!(e, Error::DuplicateParameter { .. })
        }),
        (r#"relay=("Content-Type")"#, |e| {
            matches!(e, Error::InvalidComponentName { .. })
        }),
        (r#"relay=("@method";bogus)"#, |e| {
            matches!(e, Error::InvalidComponentParameter { .. })
        }),
        (r#"relay=(tok 1 ?0 :AAAA:);d=1.5"#, |e| {
            matches!(e, Error::ComponentNotString { .. })
        }),
        (r#"relay="@method""#, |e| matches!(e, Error::NotInnerList { .. })),
        ("relay", |e| matches!(e, Error::NotInnerList { .. })),
        ("relay=1.5;a", |e| matches!(e, Error::NotInnerList { .. })),
        (r#"relay=("@method"), relay=("@path")"#, |e| {
            matches!(e, Error::DuplicateLabel { .. })
        }),
        (r#"relay=tok, relay=("@path")"#, |e| {
            matches!(e, Error::DuplicateLabel { .. })
        }),
    ]
}

const SIG1: &str = r#"sig1=("@method" "@target-uri" "@authority" "content-type" "content-digest");created=1776520800;expires=1776521100;nonce="KXYnfEfJ0PBRZXQyVXfVQA";keyid="test-ed25519-webhook-2026";alg="ed25519";tag="adcp/webhook-signing/v1""#;

#[test]
fn extra_signature_input_members_are_set_aside() {
    let alone = SignatureInput::parse(SIG1.as_bytes()).unwrap();
    for (extra, problem) in odd_extras() {
        for header in [format!("{SIG1}, {extra}"), format!("{extra}, {SIG1}")] {
            let input = SignatureInput::parse(header.as_bytes()).unwrap_or_else(|e| panic!("{header}: {e}"));
            assert_eq!(input.require("sig1"), alone.require("sig1"), "{header}");
            assert_eq!(input, alone, "{header}");
            assert_eq!(input.len(), 1, "{header}");
            assert_eq!(input.serialize(), SIG1, "{header}");
            let err = input.require("relay").unwrap_err();
            assert!(problem(&err), "{header}: {err:?}");
            assert!(input.get("relay").is_none(), "{header}");
            assert_eq!(
                input.set_aside_members().map(|(l, _)| l).collect::<Vec<_>>(),
                ["relay"],
                "{header}"
            );
        }
        // The same member is fatal when it is the one processed (the first
        // of two is judged before the repetition).
        let err = SignatureInput::parse_for(format!("{SIG1}, {extra}").as_bytes(), "relay").unwrap_err();
        assert!(problem(&err) || extra.contains(", "), "{extra} processed: {err:?}");
    }
    // A usable extra stays available; only `sig1` is processed strictly.
    let input = SignatureInput::parse(format!(r#"{SIG1}, sig2=("@method");created=1"#).as_bytes()).unwrap();
    assert_eq!(input.iter().map(|p| p.label()).collect::<Vec<_>>(), ["sig1", "sig2"]);
    // Only extras: the field parses, and the caller finds no `sig1`. Its
    // serialization (empty) parses to an equal value.
    let input = SignatureInput::parse(br#"relay=("@method" "@method")"#).unwrap();
    assert!(input.is_empty());
    assert!(matches!(input.require("sig1"), Err(Error::LabelNotFound { .. })));
    assert_eq!(input.serialize(), "");
    assert_eq!(SignatureInput::parse(b"").as_ref(), Ok(&input));
}

#[test]
fn sig1_problems_and_malformed_dictionaries_stay_fatal() {
    for (header, problem) in [
        (format!(r#"{SIG1}, relay=("@method"), {SIG1}"#), "duplicate label"),
        (format!(r#"{SIG1}, relay=tok, {SIG1}"#), "duplicate label"),
        (r#"sig1=("@method" "@method")"#.to_owned(), "duplicate component"),
        (r#"sig1=("@foo")"#.to_owned(), "unknown component"),
        (r#"sig1=("@method");keyid=abc"#.to_owned(), "token keyid"),
        (
            r#"sig1=("@method");created=1;created=2"#.to_owned(),
            "repeated parameter",
        ),
        (r#"sig1=(tok), relay=("@method")"#.to_owned(), "token component"),
        ("relay=tok, sig1".to_owned(), "sig1 not a list"),
        (format!(r#"{SIG1}, relay=("@method""#), "unterminated inner list"),
        (format!(r#"{SIG1}, relay=(@method)"#), "token in an inner list"),
        (format!(r#"{SIG1}, relay=("@method"),"#), "trailing comma"),
        (format!(r#"{SIG1}, Relay=("@method")"#), "uppercase key"),
        (format!("{SIG1}, relay=(\"caf\u{e9}\")"), "non-ASCII"),
        (format!(r#"{SIG1}, relay=("@method");d=1.5.5"#), "bad decimal"),
        (format!(r#"{SIG1}, relay=("@method") x"#), "garbage after a member"),
    ] {
        assert!(SignatureInput::parse(header.as_bytes()).is_err(), "{problem}: {header}");
    }
    let big = format!(r#"{SIG1}, relay=("{}")"#, "a".repeat(MAX_SIGNATURE_INPUT_LEN));
    assert!(matches!(
        SignatureInput::parse(big.as_bytes()),
        Err(Error::HeaderTooLong { .. })
    ));
}

#[test]
fn extra_signature_members_are_set_aside() {
    let sig1 = "sig1=:AQID:";
    for (extra, problem) in [
        ("relay=abc", "not a byte sequence"),
        ("relay", "bare key"),
        ("relay=(:AA:)", "inner list"),
        ("relay=1", "integer"),
        ("relay=:AA:;p=1", "parameters"),
        ("relay=:AA:, relay=:BB:", "repeated label"),
        ("relay=x, relay=:BB:", "repeated label"),
    ] {
        for header in [format!("{sig1}, {extra}"), format!("{extra}, {sig1}")] {
            let sigs = Signatures::parse(header.as_bytes()).unwrap_or_else(|e| panic!("{problem}: {header}: {e}"));
            assert_eq!(sigs.decode("sig1", BinaryEncoding::Base64Padded), Ok(vec![1, 2, 3]));
            assert_eq!(sigs.labels().collect::<Vec<_>>(), ["sig1"], "{header}");
            assert!(sigs.decode("relay", BinaryEncoding::Base64Padded).is_err(), "{header}");
            assert!(Signatures::parse_for(header.as_bytes(), "relay").is_err(), "{header}");
        }
    }
    for bad in [
        "sig1=:AQID:, sig1=:AQID:",
        "sig1=:AQID:, relay=:AA:, sig1=:AQID:",
        "sig1=abc, relay=:AA:",
        "sig1=:AQID:;p=1, relay=:AA:",
        "sig1=:AQID:, relay=@",
        "sig1=:AQID:, relay=:AA",
        "sig1=:AQID:, Relay=:AA:",
        "sig1=:AQID:, relay=:AA:,",
    ] {
        assert!(Signatures::parse(bad.as_bytes()).is_err(), "{bad}");
    }
}

/// Any well-formed extra member, usable or not.
fn extra_member() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(odd_extras().into_iter().map(|(e, _)| e).collect::<Vec<_>>()).prop_map(str::to_owned),
        member().prop_filter("not sig1", |m| !m.starts_with("sig1=")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Whatever well-formed members surround it, `sig1` parses exactly as
    /// it does alone, in both headers.
    #[test]
    fn extra_members_never_change_sig1(
        sig1 in member(),
        extras in prop::collection::vec(extra_member(), 0..4),
        at in 0usize..4,
        sig in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let sig1 = format!("sig1={}", sig1.split_once('=').unwrap().1);
        let alone = SignatureInput::parse(sig1.as_bytes()).unwrap();
        let mut members = extras.clone();
        members.insert(at.min(members.len()), sig1.clone());
        let header = members.join(", ");
        let parsed = SignatureInput::parse(header.as_bytes());
        prop_assert_eq!(parsed.as_ref().map(|p| p.get("sig1")), Ok(alone.get("sig1")), "{}", header);

        let token = format!("sig1=:{}:", BinaryEncoding::Base64UrlUnpadded.encode(&sig));
        let mut members: Vec<String> = extras
            .iter()
            .map(|e| match e.split_once('=') {
                Some((label, _)) if e.len() % 2 == 0 => format!("{label}=:AAAA:"),
                Some((label, _)) => format!("{label}=tok"),
                None => e.clone(),
            })
            .collect();
        members.insert(at.min(members.len()), token);
        let header = members.join(", ");
        let sigs = Signatures::parse(header.as_bytes()).map_err(|e| TestCaseError::fail(format!("{header}: {e}")))?;
        prop_assert_eq!(sigs.decode("sig1", BinaryEncoding::Base64UrlUnpadded), Ok(sig));
    }
}
