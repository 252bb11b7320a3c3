//! Strict Base64 decoding: RFC 4648 vectors, every rejection class, the
//! either-canonical legacy grammar, the conformance suite's `Signature`
//! tokens, and properties (round trip, canonicity, no panics).

use adcp_sigbase::encoding::{
    decode_sf_binary_token, encode_sf_binary, BinaryDecoding, BinaryEncoding, EncodingError, PaddingErrorKind,
};
use proptest::prelude::*;

const PADDED: BinaryEncoding = BinaryEncoding::Base64Padded;
const URL: BinaryEncoding = BinaryEncoding::Base64UrlUnpadded;
const EITHER: BinaryDecoding = BinaryDecoding::EitherCanonical;

/// RFC 4648 §10.
const RFC4648: [(&str, &str, &str); 7] = [
    ("", "", ""),
    ("f", "Zg==", "Zg"),
    ("fo", "Zm8=", "Zm8"),
    ("foo", "Zm9v", "Zm9v"),
    ("foob", "Zm9vYg==", "Zm9vYg"),
    ("fooba", "Zm9vYmE=", "Zm9vYmE"),
    ("foobar", "Zm9vYmFy", "Zm9vYmFy"),
];

#[test]
fn rfc4648_test_vectors_in_both_encodings() {
    for (plain, padded, url) in RFC4648 {
        assert_eq!(PADDED.encode(plain.as_bytes()), padded);
        assert_eq!(URL.encode(plain.as_bytes()), url);
        assert_eq!(PADDED.decode(padded).unwrap(), plain.as_bytes());
        assert_eq!(URL.decode(url).unwrap(), plain.as_bytes());
        assert_eq!(EITHER.decode(padded).unwrap(), plain.as_bytes());
        assert_eq!(EITHER.decode(url).unwrap(), plain.as_bytes());
        assert_eq!(PADDED.encoded_len(plain.len()), padded.len());
        assert_eq!(URL.encoded_len(plain.len()), url.len());
    }
}

#[test]
fn the_62nd_and_63rd_symbols_differ_between_alphabets() {
    let bytes = [0xfb, 0xef, 0xbe, 0xff, 0xff];
    assert_eq!(PADDED.encode(&bytes), "++++//8=");
    assert_eq!(URL.encode(&bytes), "----__8");
    assert_eq!(PADDED.decode("++++//8=").unwrap(), bytes);
    assert_eq!(URL.decode("----__8").unwrap(), bytes);
}

fn padding(offset: usize, kind: PaddingErrorKind) -> EncodingError {
    EncodingError::Padding { offset, kind }
}

#[test]
fn padded_rejections() {
    let cases: &[(&str, EncodingError)] = &[
        ("Zg", padding(2, PaddingErrorKind::Missing)),
        ("Zg=", padding(3, PaddingErrorKind::Missing)),
        ("Zm9vYg", padding(6, PaddingErrorKind::Missing)),
        ("Zg===", padding(4, PaddingErrorKind::Excess)),
        ("Zm8==", padding(4, PaddingErrorKind::Excess)),
        ("Zm9v=", padding(4, PaddingErrorKind::Excess)),
        ("Zm9v====", padding(4, PaddingErrorKind::Excess)),
        ("=", padding(0, PaddingErrorKind::Excess)),
        ("Z=g=", padding(1, PaddingErrorKind::Misplaced)),
        ("Zg==Zg==", padding(2, PaddingErrorKind::Misplaced)),
        ("Z", EncodingError::InvalidLength { symbols: 1 }),
        ("Z===", EncodingError::InvalidLength { symbols: 1 }),
        ("Zm9vY", EncodingError::InvalidLength { symbols: 5 }),
        // Non-zero trailing bits: "Zh==" would decode to "f" as well.
        ("Zh==", EncodingError::NonCanonical { offset: 1 }),
        ("Zm9=", EncodingError::NonCanonical { offset: 2 }),
        (
            "Zm-v",
            EncodingError::WrongAlphabet {
                offset: 2,
                byte: b'-',
                expected: PADDED,
            },
        ),
        (
            "Zm_v",
            EncodingError::WrongAlphabet {
                offset: 2,
                byte: b'_',
                expected: PADDED,
            },
        ),
        (" Zg==", EncodingError::InvalidCharacter { offset: 0, byte: b' ' }),
        ("Zg==\n", EncodingError::InvalidCharacter { offset: 4, byte: b'\n' }),
        ("Zm9v.", EncodingError::InvalidCharacter { offset: 4, byte: b'.' }),
        ("Zm\u{e9}", EncodingError::InvalidCharacter { offset: 2, byte: 0xc3 }),
    ];
    for (text, expected) in cases {
        assert_eq!(PADDED.decode(text).as_ref(), Err(expected), "{text:?}");
    }
}

#[test]
fn url_unpadded_rejections() {
    let cases: &[(&str, EncodingError)] = &[
        ("Zg==", padding(2, PaddingErrorKind::Unexpected)),
        ("Zm8=", padding(3, PaddingErrorKind::Unexpected)),
        ("=", padding(0, PaddingErrorKind::Unexpected)),
        (
            "Zm+v",
            EncodingError::WrongAlphabet {
                offset: 2,
                byte: b'+',
                expected: URL,
            },
        ),
        (
            "Zm/v",
            EncodingError::WrongAlphabet {
                offset: 2,
                byte: b'/',
                expected: URL,
            },
        ),
        ("Z", EncodingError::InvalidLength { symbols: 1 }),
        ("Zm9vY", EncodingError::InvalidLength { symbols: 5 }),
        ("Zh", EncodingError::NonCanonical { offset: 1 }),
        ("Zm9", EncodingError::NonCanonical { offset: 2 }),
        ("Zm9v*", EncodingError::InvalidCharacter { offset: 4, byte: b'*' }),
    ];
    for (text, expected) in cases {
        assert_eq!(URL.decode(text).as_ref(), Err(expected), "{text:?}");
    }
}

#[test]
fn alphabet_mixing_is_rejected_by_every_decoder() {
    let mixing = EncodingError::AlphabetMixing {
        standard_offset: 1,
        url_safe_offset: 3,
    };
    for text in ["A+B-", "A/B_", "A+B_==", "A/B-"] {
        assert_eq!(PADDED.decode(text), Err(mixing), "{text}");
        assert_eq!(URL.decode(text), Err(mixing), "{text}");
        assert_eq!(EITHER.decode(text), Err(mixing), "{text}");
    }
    // Distinguishable from the single-alphabet errors.
    assert!(matches!(
        PADDED.decode("AAB-"),
        Err(EncodingError::WrongAlphabet { .. })
    ));
    assert!(matches!(URL.decode("AAB+"), Err(EncodingError::WrongAlphabet { .. })));
}

#[test]
fn either_canonical_picks_one_encoding_by_the_value_s_own_characters() {
    // Standard markers or a length that is a multiple of 4: padded rules.
    assert_eq!(EITHER.decode("+/8=").unwrap(), [0xfb, 0xff]);
    assert_eq!(EITHER.decode("AQID").unwrap(), [1, 2, 3]);
    assert_eq!(EITHER.decode("AQ=="), Ok(vec![1]));
    assert_eq!(EITHER.decode("AQ="), Err(padding(3, PaddingErrorKind::Missing)));
    assert_eq!(EITHER.decode("+/8"), Err(padding(3, PaddingErrorKind::Missing)));
    // URL-safe markers, or alphanumeric with a length that is not: unpadded
    // URL rules.
    assert_eq!(EITHER.decode("-_8").unwrap(), [0xfb, 0xff]);
    assert_eq!(EITHER.decode("AQ").unwrap(), [1]);
    assert_eq!(EITHER.decode("-_8="), Err(padding(3, PaddingErrorKind::Unexpected)));
    assert_eq!(EITHER.decode("AR"), Err(EncodingError::NonCanonical { offset: 1 }));
    assert_eq!(EITHER.decode("AAAAA"), Err(EncodingError::InvalidLength { symbols: 5 }));
    // `Only` is exactly the strict decoder.
    assert_eq!(BinaryDecoding::from(URL).decode("AQ=="), URL.decode("AQ=="));
    assert_eq!(BinaryDecoding::Only(PADDED).decode("AQ"), PADDED.decode("AQ"));
}

#[test]
fn decode_into_appends_and_leaves_the_buffer_alone_on_error() {
    let mut out = vec![9];
    PADDED.decode_into("AQID", &mut out).unwrap();
    assert_eq!(out, [9, 1, 2, 3]);
    URL.decode_into("BAU", &mut out).unwrap();
    assert_eq!(out, [9, 1, 2, 3, 4, 5]);
    for bad in ["AR==", "AQ", "A-==", "AAAAA"] {
        assert!(PADDED.decode_into(bad, &mut out).is_err());
        assert_eq!(out, [9, 1, 2, 3, 4, 5], "{bad}");
    }
    assert!(EITHER.decode_into("AR", &mut out).is_err());
    assert_eq!(out, [9, 1, 2, 3, 4, 5]);
    let mut s = String::from("x");
    URL.encode_into(&[0xff], &mut s);
    assert_eq!(s, "x_w");
}

#[test]
fn sf_binary_tokens() {
    assert_eq!(decode_sf_binary_token("::", PADDED).unwrap(), b"");
    assert_eq!(decode_sf_binary_token(":Zm9v:", PADDED).unwrap(), b"foo");
    assert_eq!(decode_sf_binary_token(b":Zm8:", URL).unwrap(), b"fo");
    assert_eq!(decode_sf_binary_token(":Zm8:", EITHER).unwrap(), b"fo");
    // Offsets point into the token, colon included.
    assert_eq!(
        decode_sf_binary_token(":Zm8:", PADDED),
        Err(padding(4, PaddingErrorKind::Missing))
    );
    for bad in ["", ":", "Zm9v", ":Zm9v", "Zm9v:"] {
        assert_eq!(
            decode_sf_binary_token(bad, PADDED),
            Err(EncodingError::MissingColons),
            "{bad:?}"
        );
    }
    assert_eq!(encode_sf_binary(b"foo", PADDED), ":Zm9v:");
    assert_eq!(encode_sf_binary(b"fo", URL), ":Zm8:");
    assert_eq!(encode_sf_binary(b"", PADDED), "::");
}

#[test]
fn messages_name_the_offending_part() {
    let msg = |e: EncodingError| e.to_string();
    assert_eq!(
        msg(PADDED.decode("Zm-v").unwrap_err()),
        "'-' at offset 2 is not in the alphabet of padded standard Base64"
    );
    assert_eq!(
        msg(URL.decode("A+B-").unwrap_err()),
        "value mixes the standard Base64 alphabet (offset 1) and the URL-safe alphabet (offset 3)"
    );
    assert_eq!(msg(PADDED.decode("Zg").unwrap_err()), "missing padding at offset 2");
    assert_eq!(
        msg(URL.decode("Zg==").unwrap_err()),
        "padding in an unpadded encoding at offset 2"
    );
    assert_eq!(
        msg(PADDED.decode("Zh==").unwrap_err()),
        "non-canonical Base64: the symbol at offset 1 has non-zero trailing bits"
    );
    assert_eq!(
        msg(PADDED.decode("Z\u{1}==").unwrap_err()),
        "byte 0x01 at offset 1 is not a Base64 character"
    );
    assert_eq!(
        msg(URL.decode("AAAAA").unwrap_err()),
        "5 Base64 symbols is not a possible length (1 mod 4)"
    );
    let _: &dyn std::error::Error = &EncodingError::MissingColons;
}

/// The `Signature` tokens of the conformance suite: the webhook and 3.1
/// request corpus use unpadded Base64URL, the 3.2 corpus padded Base64, and
/// the two alphabet negatives fail the way the encoding layer says.
#[test]
fn conformance_signature_tokens() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let token = |rel: &str| -> String {
        let doc = adcp_vectors::load_json(&suite, rel).unwrap_or_else(|e| panic!("{e}"));
        let sig = doc["request"]["headers"]["Signature"].as_str().unwrap().to_owned();
        let inner = sig.strip_prefix("sig1=:").and_then(|s| s.split(':').next()).unwrap();
        inner.to_owned()
    };
    let webhook = token("webhook-signing/positive/001-basic-post.json");
    assert_eq!(URL.decode(&webhook).unwrap().len(), 64);
    assert!(PADDED.decode(&webhook).is_err());
    let v32 = token("request-signing/profile-3.2/positive/001-post-with-content-digest.json");
    assert_eq!(PADDED.decode(&v32).unwrap().len(), 64);
    assert!(URL.decode(&v32).is_err());

    let mixed = token("webhook-signing/negative/021-base64-alphabet-mixing.json");
    assert!(matches!(URL.decode(&mixed), Err(EncodingError::AlphabetMixing { .. })));
    assert!(matches!(
        PADDED.decode(&mixed),
        Err(EncodingError::AlphabetMixing { .. })
    ));
    assert!(matches!(
        EITHER.decode(&mixed),
        Err(EncodingError::AlphabetMixing { .. })
    ));

    let legacy_in_32 = token("request-signing/profile-3.2/negative/001-base64url-sf-binary.json");
    assert!(matches!(
        PADDED.decode(&legacy_in_32),
        Err(EncodingError::WrongAlphabet {
            expected: BinaryEncoding::Base64Padded,
            ..
        })
    ));
    assert_eq!(URL.decode(&legacy_in_32).unwrap().len(), 64);
}

/// A 22-symbol nonce whose last symbol carries non-zero unused bits: the
/// strict decoder refuses it, the nonce decoder reads the same 16 bytes as
/// the canonical spelling, and nothing else is relaxed.
#[test]
fn trailing_bits_can_be_ignored_and_nothing_else() {
    let canonical = "KXYnfEfJ0PBRZXQyVXfVQA";
    let odd = "KXYnfEfJ0PBRZXQyVXfVQB";
    assert_eq!(URL.decode(odd), Err(EncodingError::NonCanonical { offset: 21 }));
    let bytes = URL.decode(canonical).unwrap();
    assert_eq!(bytes.len(), 16);
    assert_eq!(URL.decode_ignoring_trailing_bits(odd).unwrap(), bytes);
    assert_eq!(URL.decode_ignoring_trailing_bits(canonical).unwrap(), bytes);
    assert_eq!(PADDED.decode_ignoring_trailing_bits("AR==").unwrap(), [1]);
    for (text, expected) in [
        ("KXYnfEfJ0PBRZXQyVXfVQB==", padding(22, PaddingErrorKind::Unexpected)),
        (
            "KXYnfEfJ0PBRZXQyVXfVQ+",
            EncodingError::WrongAlphabet {
                offset: 21,
                byte: b'+',
                expected: URL,
            },
        ),
        (
            "KXYnfEfJ0PBRZXQyVXfVQ.",
            EncodingError::InvalidCharacter { offset: 21, byte: b'.' },
        ),
        ("KXYnfEfJ0PBRZXQyVXfVQ", EncodingError::InvalidLength { symbols: 21 }),
    ] {
        assert_eq!(URL.decode_ignoring_trailing_bits(text), Err(expected), "{text:?}");
    }
}

/// Strings over both alphabets and `=`, biased towards near-valid values.
fn base64ish() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9+/=_-]{0,24}",
        "[A-Za-z0-9]{0,22}(|=|==|===)",
        "[A-Za-z0-9+/]{0,22}(|=|==)",
        "[A-Za-z0-9_-]{0,23}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(bytes in prop::collection::vec(any::<u8>(), 0..96)) {
        for encoding in [PADDED, URL] {
            let text = encoding.encode(&bytes);
            prop_assert_eq!(text.len(), encoding.encoded_len(bytes.len()));
            prop_assert_eq!(&encoding.decode(&text).unwrap(), &bytes);
            prop_assert_eq!(&EITHER.decode(&text).unwrap(), &bytes);
            prop_assert_eq!(&decode_sf_binary_token(&encode_sf_binary(&bytes, encoding), encoding).unwrap(), &bytes);
        }
    }

    /// Strictness: an accepted value is the one spelling of its bytes.
    #[test]
    fn accepted_values_are_canonical(text in base64ish()) {
        for encoding in [PADDED, URL] {
            if let Ok(bytes) = encoding.decode(&text) {
                prop_assert_eq!(encoding.encode(&bytes), text.clone());
            }
        }
    }

    /// Either-canonical accepts exactly the union of the two strict
    /// decoders, and no value decodes to different bytes under them.
    #[test]
    fn either_canonical_is_the_unambiguous_union(text in base64ish()) {
        let padded = PADDED.decode(&text);
        let url = URL.decode(&text);
        if let (Ok(a), Ok(b)) = (&padded, &url) {
            prop_assert_eq!(a, b);
            prop_assert!(text.len() % 4 == 0 && text.bytes().all(|b| b.is_ascii_alphanumeric()));
        }
        match EITHER.decode(&text) {
            Ok(bytes) => prop_assert!(padded.as_ref() == Ok(&bytes) || url.as_ref() == Ok(&bytes)),
            Err(_) => prop_assert!(padded.is_err() && url.is_err()),
        }
    }

    /// The lenient decoder accepts what the strict one does (same bytes)
    /// plus exactly the values refused only for trailing bits, and those
    /// read as the bytes of their canonical spelling.
    #[test]
    fn ignoring_trailing_bits_relaxes_only_trailing_bits(text in base64ish()) {
        for encoding in [PADDED, URL] {
            let strict = encoding.decode(&text);
            match (encoding.decode_ignoring_trailing_bits(&text), &strict) {
                (Ok(lax), Ok(bytes)) => prop_assert_eq!(&lax, bytes),
                (Ok(lax), Err(e)) => {
                    prop_assert!(matches!(e, EncodingError::NonCanonical { .. }), "{:?}", e);
                    // Same spelling but for the last symbol.
                    let canonical = encoding.encode(&lax);
                    let last = text.trim_end_matches('=').len() - 1;
                    prop_assert_eq!(canonical.len(), text.len());
                    prop_assert_eq!(&canonical[..last], &text[..last]);
                    prop_assert_eq!(&canonical[last + 1..], &text[last + 1..]);
                }
                (Err(lax), Err(e)) => {
                    prop_assert!(!matches!(e, EncodingError::NonCanonical { .. }), "{:?}", e);
                    prop_assert_eq!(&lax, e);
                }
                (Err(lax), Ok(_)) => prop_assert!(false, "{:?} refused leniently: {:?}", text, lax),
            }
        }
    }

    #[test]
    fn decoding_never_panics(text in any::<String>(), bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        for decoding in [BinaryDecoding::Only(PADDED), BinaryDecoding::Only(URL), EITHER] {
            let _ = decoding.decode(&text);
            let _ = decoding.decode(&bytes);
            let _ = decode_sf_binary_token(&bytes, decoding);
        }
    }
}
