//! Property tests for `Signature-Input` and `Signature` parsing: round trip
//! through serialization, and no panics on arbitrary bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::{Error, SignatureInput, Signatures};
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
        match SignatureInput::parse(header.as_bytes()) {
            Ok(parsed) => {
                let serialized = parsed.serialize();
                prop_assert_eq!(&serialized, &header, "canonical input must serialize to itself");
                let again = SignatureInput::parse(serialized.as_bytes()).unwrap();
                prop_assert_eq!(again, parsed);
            }
            // Generated labels can repeat: that must be the duplicate error.
            Err(Error::DuplicateLabel { .. }) => {}
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
