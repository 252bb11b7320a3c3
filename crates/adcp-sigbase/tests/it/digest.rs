//! RFC 9530 `Content-Digest`: RFC examples, every rejection class, the
//! classification of every `Content-Digest` in the conformance suite, and
//! properties (no panics, round trip, differential against `sfv`).

use std::path::{Path, PathBuf};

use adcp_sigbase::digest::{
    verify, ContentDigest, DigestAlgorithm, DigestError, DigestErrorKind, DigestPolicy, SyntaxErrorKind, MAX_FIELD_LEN,
    MAX_MEMBERS,
};
use adcp_sigbase::encoding::{BinaryDecoding, BinaryEncoding, EncodingError, PaddingErrorKind};
use proptest::prelude::*;
use serde_json::Value;

const PADDED: BinaryEncoding = BinaryEncoding::Base64Padded;
const URL: BinaryEncoding = BinaryEncoding::Base64UrlUnpadded;
const EITHER: BinaryDecoding = BinaryDecoding::EitherCanonical;
const SHA256: DigestAlgorithm = DigestAlgorithm::Sha256;
const SHA512: DigestAlgorithm = DigestAlgorithm::Sha512;

/// RFC 9530 §2 and Appendix B: the representation `{"hello": "world"}`.
const HELLO: &[u8] = br#"{"hello": "world"}"#;
const HELLO_256: &str = "X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=";
const HELLO_512: &str = "WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==";

fn hello_field() -> String {
    format!("sha-256=:{HELLO_256}:, sha-512=:{HELLO_512}:")
}

#[test]
fn rfc9530_examples() {
    assert_eq!(
        ContentDigest::compute(HELLO, &[SHA256], PADDED),
        format!("sha-256=:{HELLO_256}:")
    );
    assert_eq!(
        ContentDigest::compute(HELLO, &[SHA512], PADDED),
        format!("sha-512=:{HELLO_512}:")
    );
    assert_eq!(
        ContentDigest::compute(HELLO, &DigestAlgorithm::ALL, PADDED),
        hello_field()
    );
    // A repeated algorithm is emitted once.
    assert_eq!(
        ContentDigest::compute(HELLO, &[SHA256, SHA256], PADDED),
        format!("sha-256=:{HELLO_256}:")
    );
    assert_eq!(ContentDigest::compute(HELLO, &[], PADDED), "");
    // The legacy spelling of the same digest.
    assert_eq!(
        ContentDigest::compute(HELLO, &[SHA256], URL),
        "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE:"
    );

    let parsed = ContentDigest::parse(&hello_field(), PADDED).unwrap();
    assert_eq!(parsed.len(), 2);
    assert_eq!(parsed.get(SHA256).unwrap(), SHA256.compute(HELLO));
    assert_eq!(parsed.get(SHA512).unwrap(), SHA512.compute(HELLO));
    let ok = verify(&parsed, HELLO, &DigestPolicy::default()).unwrap();
    assert_eq!(ok.algorithms(), [SHA256, SHA512]);
    assert!(ok.contains(SHA512));

    // RFC 9530 §2: the digest of a different representation does not match.
    assert_eq!(
        parsed.verify(b"{\"hello\": \"world\"}\n", &DigestPolicy::default()),
        Err(DigestError::Mismatch { algorithm: SHA256 })
    );
}

#[test]
fn algorithm_metadata() {
    assert_eq!(DigestAlgorithm::from_key("sha-256"), Some(SHA256));
    assert_eq!(DigestAlgorithm::from_key("sha-512"), Some(SHA512));
    for unknown in ["SHA-256", "sha256", "sha", "md5", "id-sha-256", ""] {
        assert_eq!(DigestAlgorithm::from_key(unknown), None, "{unknown}");
    }
    for alg in DigestAlgorithm::ALL {
        assert_eq!(alg.compute(b"").len(), alg.output_len());
        assert_eq!(alg.to_string(), alg.key());
    }
}

#[test]
fn unknown_algorithms_are_kept_visible_and_ignored() {
    let field = format!("md5=:AAAAAAAAAAAAAAAAAAAAAA==:, sha-256=:{HELLO_256}:, id-sha-256=:AQ==:, sha=:AAAA:");
    let parsed = ContentDigest::parse(&field, PADDED).unwrap();
    let unknown: Vec<_> = parsed.unrecognized().map(|m| m.key()).collect();
    assert_eq!(unknown, ["md5", "id-sha-256", "sha"]);
    assert_eq!(parsed.members()[2].value(), [1]);
    assert_eq!(
        parsed.verify(HELLO, &DigestPolicy::default()).unwrap().algorithms(),
        [SHA256]
    );

    let only_unknown = ContentDigest::parse("md5=:AAAAAAAAAAAAAAAAAAAAAA==:", PADDED).unwrap();
    let err = only_unknown.verify(HELLO, &DigestPolicy::default()).unwrap_err();
    assert_eq!(
        err,
        DigestError::NoAcceptableAlgorithm {
            present: vec!["md5".into()]
        }
    );
    assert_eq!(err.kind(), DigestErrorKind::Unsupported);
}

#[test]
fn policy_rule() {
    let parsed = ContentDigest::parse(&hello_field(), PADDED).unwrap();
    // Only SHA-512 accepted: both still checked.
    let only512 = DigestPolicy::only(SHA512);
    assert!(only512.accepts(SHA512) && !only512.accepts(SHA256));
    assert_eq!(parsed.verify(HELLO, &only512).unwrap().algorithms(), [SHA256, SHA512]);

    // A wrong SHA-512 fails verification even when the policy only asks for
    // SHA-256 and SHA-256 matches.
    let wrong512 = format!("sha-256=:{HELLO_256}:, sha-512=:{}:", PADDED.encode(&[0; 64]));
    let parsed = ContentDigest::parse(&wrong512, PADDED).unwrap();
    assert_eq!(
        parsed.verify(HELLO, &DigestPolicy::only(SHA256)),
        Err(DigestError::Mismatch { algorithm: SHA512 })
    );

    // SHA-256 alone does not satisfy a SHA-512-only policy.
    let parsed = ContentDigest::parse(&format!("sha-256=:{HELLO_256}:"), PADDED).unwrap();
    assert!(matches!(
        parsed.verify(HELLO, &DigestPolicy::only(SHA512)),
        Err(DigestError::NoAcceptableAlgorithm { .. })
    ));
    assert!(matches!(
        parsed.verify(HELLO, &DigestPolicy::new(&[])),
        Err(DigestError::NoAcceptableAlgorithm { .. })
    ));
    assert_eq!(DigestPolicy::default(), DigestPolicy::ANY);
    assert_eq!(DigestPolicy::new(&[SHA512, SHA256]), DigestPolicy::ANY);

    // The empty field parses (an empty Dictionary) and never verifies.
    let empty = ContentDigest::parse("", PADDED).unwrap();
    assert!(empty.is_empty());
    let err = empty.verify(b"", &DigestPolicy::default()).unwrap_err();
    assert_eq!(err.to_string(), "Content-Digest has no members");
}

#[test]
fn combined_field_lines_and_whitespace() {
    let lines = [format!("sha-256=:{HELLO_256}:"), format!("sha-512=:{HELLO_512}:")];
    let combined = lines.join(", ");
    assert!(ContentDigest::parse(&combined, PADDED)
        .unwrap()
        .verify(HELLO, &DigestPolicy::default())
        .is_ok());
    for field in [
        format!("sha-256=:{HELLO_256}:,sha-512=:{HELLO_512}:"),
        format!("  sha-256=:{HELLO_256}:\t,\t sha-512=:{HELLO_512}:  "),
        format!("sha-256=:{HELLO_256}:;p=1;q, sha-512=:{HELLO_512}:;r=\"x\""),
    ] {
        let parsed = ContentDigest::parse(&field, PADDED).unwrap_or_else(|e| panic!("{field:?}: {e}"));
        assert_eq!(parsed.len(), 2);
    }
    // A second line repeating the algorithm is a duplicate.
    let repeated = [lines[0].clone(), lines[0].clone()].join(", ");
    assert_eq!(
        ContentDigest::parse(&repeated, PADDED),
        Err(DigestError::DuplicateAlgorithm { key: "sha-256".into() })
    );
}

fn syntax(offset: usize, kind: SyntaxErrorKind) -> DigestError {
    DigestError::Syntax { offset, kind }
}

#[test]
fn malformed_fields() {
    let d = HELLO_256;
    let cases: Vec<(String, DigestError)> = vec![
        (
            format!("SHA-256=:{d}:, sha-256=:{d}:"),
            syntax(0, SyntaxErrorKind::InvalidKey),
        ),
        (format!("Sha-256=:{d}:"), syntax(0, SyntaxErrorKind::InvalidKey)),
        (format!("sha-256=:{d}:, "), syntax(56, SyntaxErrorKind::TrailingComma)),
        (format!("sha-256=:{d}: x"), syntax(55, SyntaxErrorKind::ExpectedComma)),
        (
            format!("sha-256=:{d}"),
            syntax(8, SyntaxErrorKind::UnterminatedByteSequence),
        ),
        (
            "sha-256=:AA AA:".into(),
            syntax(11, SyntaxErrorKind::InvalidByteSequence),
        ),
        (
            "sha-256=:AA.A:".into(),
            syntax(11, SyntaxErrorKind::InvalidByteSequence),
        ),
        (format!("sha-256 =:{d}:"), syntax(8, SyntaxErrorKind::ExpectedComma)),
        ("sha-256=:AA==:\u{e9}".into(), syntax(14, SyntaxErrorKind::NonAscii)),
        (
            format!("sha-256=:{d}:, sha-256=:{d}:"),
            DigestError::DuplicateAlgorithm { key: "sha-256".into() },
        ),
        (
            "md5=:AA==:, md5=:AQ==:".into(),
            DigestError::DuplicateAlgorithm { key: "md5".into() },
        ),
        (
            "sha-256=abc".into(),
            DigestError::NotByteSequence {
                key: "sha-256".into(),
                found: "token",
            },
        ),
        (
            "sha-256".into(),
            DigestError::NotByteSequence {
                key: "sha-256".into(),
                found: "boolean",
            },
        ),
        (
            format!("sha-256=(:{d}:)"),
            DigestError::NotByteSequence {
                key: "sha-256".into(),
                found: "inner list",
            },
        ),
        (
            format!("sha-256=\"{d}\""),
            DigestError::NotByteSequence {
                key: "sha-256".into(),
                found: "string",
            },
        ),
        (
            format!("sha-256=:{d}:, md5=1"),
            DigestError::NotByteSequence {
                key: "md5".into(),
                found: "integer",
            },
        ),
        (
            "sha-256=:AAAA:".into(),
            DigestError::InvalidDigestLength {
                algorithm: SHA256,
                expected: 32,
                actual: 3,
            },
        ),
        (
            format!("sha-512=:{d}:"),
            DigestError::InvalidDigestLength {
                algorithm: SHA512,
                expected: 64,
                actual: 32,
            },
        ),
        (
            "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE:".into(),
            DigestError::InvalidEncoding {
                key: "sha-256".into(),
                offset: 9,
                source: EncodingError::Padding {
                    offset: 43,
                    kind: PaddingErrorKind::Missing,
                },
            },
        ),
        (
            "sha-256=:qgPvy3VlFK_BtENbAvUhJn_MsgGdHhxlZHKt2itYaxc:".into(),
            DigestError::InvalidEncoding {
                key: "sha-256".into(),
                offset: 9,
                source: EncodingError::WrongAlphabet {
                    offset: 10,
                    byte: b'_',
                    expected: PADDED,
                },
            },
        ),
        (
            format!("sha-256=:{d}:;p=:AQ:"),
            DigestError::InvalidEncoding {
                key: "sha-256".into(),
                offset: 58,
                source: EncodingError::Padding {
                    offset: 2,
                    kind: PaddingErrorKind::Missing,
                },
            },
        ),
        (
            "md5=:A+B-:".into(),
            DigestError::InvalidEncoding {
                key: "md5".into(),
                offset: 5,
                source: EncodingError::AlphabetMixing {
                    standard_offset: 1,
                    url_safe_offset: 3,
                },
            },
        ),
    ];
    for (field, expected) in cases {
        let err = ContentDigest::parse(&field, PADDED).unwrap_err();
        assert_eq!(err, expected, "{field:?}");
        assert_eq!(err.kind(), DigestErrorKind::Malformed, "{field:?}");
    }
}

#[test]
fn limits() {
    let long = format!("md5=:{}:", "A".repeat(MAX_FIELD_LEN));
    assert_eq!(
        ContentDigest::parse(&long, PADDED),
        Err(DigestError::FieldTooLong {
            len: MAX_FIELD_LEN + 6,
            max: MAX_FIELD_LEN
        })
    );
    let many: Vec<String> = (0..=MAX_MEMBERS).map(|i| format!("k{i}=:AA==:")).collect();
    assert_eq!(
        ContentDigest::parse(&many.join(", "), PADDED),
        Err(DigestError::TooManyMembers { max: MAX_MEMBERS })
    );
    let max = &many[..MAX_MEMBERS];
    assert_eq!(
        ContentDigest::parse(&max.join(", "), PADDED).unwrap().len(),
        MAX_MEMBERS
    );
}

#[test]
fn decoding_is_the_caller_s_choice() {
    let url_field = "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE:";
    let padded_field = format!("sha-256=:{HELLO_256}:");
    assert!(ContentDigest::parse(url_field, URL)
        .unwrap()
        .verify(HELLO, &DigestPolicy::default())
        .is_ok());
    assert!(matches!(
        ContentDigest::parse(&padded_field, URL),
        Err(DigestError::InvalidEncoding {
            source: EncodingError::Padding {
                kind: PaddingErrorKind::Unexpected,
                ..
            },
            ..
        })
    ));
    for field in [url_field, padded_field.as_str()] {
        assert!(ContentDigest::parse(field, EITHER)
            .unwrap()
            .verify(HELLO, &DigestPolicy::default())
            .is_ok());
    }
}

#[test]
fn messages_name_the_offending_part() {
    let msg = |field: &str| ContentDigest::parse(field, PADDED).unwrap_err().to_string();
    assert_eq!(
        msg("SHA-256=:AA==:"),
        "Content-Digest is not an RFC 8941 dictionary: key must start with a lowercase letter or '*' at byte 0"
    );
    assert_eq!(
        msg("sha-512=:AA==:, sha-512=:AA==:"),
        "Content-Digest lists `sha-512` more than once"
    );
    assert_eq!(
        msg("sha-256=?1"),
        "Content-Digest member `sha-256` is a boolean, not a byte sequence"
    );
    assert_eq!(
        msg("md5=:AQ:"),
        "Content-Digest member `md5` (value at byte 5): missing padding at offset 2"
    );
    assert_eq!(
        msg("sha-256=:AQ==:"),
        "Content-Digest member `sha-256` is 1 bytes long, not the 32 of a sha-256 digest"
    );
    assert_eq!(
        DigestError::Mismatch { algorithm: SHA512 }.to_string(),
        "Content-Digest `sha-512` does not match the body"
    );
    let err = ContentDigest::parse("md5=:AQ:", PADDED).unwrap_err();
    assert!(std::error::Error::source(&err).is_some());
}

// ---------------------------------------------------------------------------
// The conformance suite.

/// What parsing + verifying a vector's `Content-Digest` against its body
/// gives.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Accept,
    Duplicate(&'static str),
    InvalidKeyAt(usize),
    Mismatch(DigestAlgorithm),
}

/// The vectors whose `Content-Digest` is not accepted. Every other vector
/// that carries one must verify (single-fault rule of the suite).
const REJECTED: [(&str, Outcome); 7] = [
    (
        "request-signing/negative/010-content-digest-mismatch.json",
        Outcome::Mismatch(SHA256),
    ),
    (
        "request-signing/negative/023-multi-valued-content-digest.json",
        Outcome::Duplicate("sha-256"),
    ),
    (
        "request-signing/negative/030-content-digest-key-case.json",
        Outcome::InvalidKeyAt(0),
    ),
    (
        "request-signing/profile-3.2/negative/010-content-digest-mismatch.json",
        Outcome::Mismatch(SHA256),
    ),
    (
        "request-signing/profile-3.2/negative/023-multi-valued-content-digest.json",
        Outcome::Duplicate("sha-256"),
    ),
    (
        "request-signing/profile-3.2/negative/030-content-digest-key-case.json",
        Outcome::InvalidKeyAt(0),
    ),
    (
        "webhook-signing/negative/009-content-digest-mismatch.json",
        Outcome::Mismatch(SHA256),
    ),
];

/// Every vector file that carries a `Content-Digest` header, by path
/// relative to the suite.
fn vectors_with_content_digest(suite: &Path) -> Vec<(String, Value)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&suite.join("request-signing"), &mut files);
    walk(&suite.join("webhook-signing"), &mut files);
    let mut out = Vec::new();
    for path in files {
        let rel = path.strip_prefix(suite).unwrap().to_string_lossy().replace('\\', "/");
        let doc = adcp_vectors::load_json(suite, &rel).unwrap();
        if content_digest(&doc).is_some() {
            out.push((rel, doc));
        }
    }
    out
}

fn content_digest(doc: &Value) -> Option<&str> {
    doc["request"]["headers"]
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-digest"))
        .and_then(|(_, v)| v.as_str())
}

/// The decoding a receiver of this vector's profile uses (see the module
/// docs of `digest`).
fn decoding_for(rel: &str, doc: &Value) -> BinaryDecoding {
    let v32 = rel.starts_with("request-signing/profile-3.2/")
        || rel.starts_with("request-signing/a2a/")
        || doc["signing_profile_version"] == "3.2";
    if v32 {
        BinaryDecoding::Only(PADDED)
    } else {
        EITHER
    }
}

fn classify(field: &str, body: &[u8], decoding: BinaryDecoding) -> Result<Outcome, DigestError> {
    let result = ContentDigest::parse(field, decoding).and_then(|d| d.verify(body, &DigestPolicy::default()));
    match result {
        Ok(_) => Ok(Outcome::Accept),
        Err(DigestError::DuplicateAlgorithm { key }) if key == "sha-256" => Ok(Outcome::Duplicate("sha-256")),
        Err(DigestError::Syntax {
            offset,
            kind: SyntaxErrorKind::InvalidKey,
        }) => Ok(Outcome::InvalidKeyAt(offset)),
        Err(DigestError::Mismatch { algorithm }) => Ok(Outcome::Mismatch(algorithm)),
        Err(other) => Err(other),
    }
}

#[test]
fn every_conformance_content_digest_is_classified() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let vectors = vectors_with_content_digest(&suite);
    assert_eq!(vectors.len(), 83, "release 3.2.4 has 83 vectors with a Content-Digest");
    let mut rejected_seen = 0;
    for (rel, doc) in &vectors {
        let field = content_digest(doc).unwrap();
        let body = doc["request"]["body"].as_str().unwrap().as_bytes();
        let decoding = decoding_for(rel, doc);
        let outcome = classify(field, body, decoding).unwrap_or_else(|e| panic!("{rel}: unexpected {e:?}"));
        let expected = REJECTED
            .iter()
            .find(|(path, _)| path == rel)
            .map_or(Outcome::Accept, |(_, o)| o.clone());
        assert_eq!(outcome, expected, "{rel}");

        // The digest layer's verdict agrees with the vector's error code.
        let code = doc["expected_outcome"]["error_code"].as_str().unwrap_or("");
        match outcome {
            Outcome::Accept => assert!(!code.ends_with("digest_mismatch"), "{rel}"),
            Outcome::Mismatch(_) => {
                rejected_seen += 1;
                assert!(code.ends_with("_signature_digest_mismatch"), "{rel}: {code}");
                assert_eq!(doc["expected_outcome"]["failed_step"], 11, "{rel}");
            }
            Outcome::Duplicate(_) | Outcome::InvalidKeyAt(_) => {
                rejected_seen += 1;
                assert!(code.ends_with("_signature_header_malformed"), "{rel}: {code}");
                assert_eq!(doc["expected_outcome"]["failed_step"], 1, "{rel}");
            }
        }

        // Webhook vectors: exactly-padded decoding classifies them the same.
        if rel.starts_with("webhook-signing/") {
            assert_eq!(
                classify(field, body, BinaryDecoding::Only(PADDED)).unwrap(),
                expected,
                "{rel}"
            );
        }
    }
    assert_eq!(rejected_seen, REJECTED.len());
}

/// Why the 3.1 root corpus needs `EitherCanonical`: it carries both
/// spellings, and neither strict decoder alone classifies it.
#[test]
fn legacy_31_corpus_carries_both_spellings() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let load = |rel: &str| {
        let doc = adcp_vectors::load_json(&suite, rel).unwrap();
        let field = content_digest(&doc).unwrap().to_owned();
        let body = doc["request"]["body"].as_str().unwrap().as_bytes().to_vec();
        (field, body)
    };
    let strict = |rel: &str, decoding: BinaryEncoding| {
        let (field, body) = load(rel);
        classify(&field, &body, BinaryDecoding::Only(decoding))
    };
    let url_form = "request-signing/positive/014-content-digest-two-algorithms.json";
    let padded_mismatch = "request-signing/negative/010-content-digest-mismatch.json";
    let padded_forbidden = "request-signing/negative/018-digest-covered-when-forbidden.json";
    // Base64URL only: the padded 010 would be malformed (step 1), not a
    // mismatch (step 11); 018 would fail step 1 instead of step 6.
    assert_eq!(strict(url_form, URL).unwrap(), Outcome::Accept);
    assert!(matches!(
        strict(padded_mismatch, URL),
        Err(DigestError::InvalidEncoding { .. })
    ));
    assert!(matches!(
        strict(padded_forbidden, URL),
        Err(DigestError::InvalidEncoding { .. })
    ));
    // Padded only: the Base64URL positives would be malformed.
    assert!(matches!(
        strict(url_form, PADDED),
        Err(DigestError::InvalidEncoding { .. })
    ));
    // Either-canonical: all as the vectors expect.
    for rel in [url_form, padded_forbidden] {
        let (field, body) = load(rel);
        assert_eq!(classify(&field, &body, EITHER).unwrap(), Outcome::Accept, "{rel}");
    }
    // 3.2 vectors are padded: a 3.2 receiver rejects the legacy spelling.
    let (field, body) = load(url_form);
    assert!(classify(&field, &body, BinaryDecoding::Only(PADDED)).is_err());
}

// ---------------------------------------------------------------------------
// Properties.

fn any_decoding() -> impl Strategy<Value = BinaryDecoding> {
    prop_oneof![
        Just(BinaryDecoding::Only(PADDED)),
        Just(BinaryDecoding::Only(URL)),
        Just(EITHER),
    ]
}

/// Structured-field-looking values: mostly plausible members with faults
/// sprinkled in.
fn sf_like() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        3 => Just("sha-256".to_owned()),
        3 => Just("sha-512".to_owned()),
        2 => Just("md5".to_owned()),
        1 => Just("SHA-256".to_owned()),
        4 => "[a-z*][a-z0-9_.*-]{0,6}",
        1 => "[ -~]{0,3}",
    ];
    let value = prop_oneof![
        12 => prop::collection::vec(any::<u8>(), 0..70).prop_map(|b| format!(":{}:", PADDED.encode(&b))),
        2 => prop::collection::vec(any::<u8>(), 0..70).prop_map(|b| format!(":{}:", URL.encode(&b))),
        2 => "[:]?[A-Za-z0-9+/=_-]{0,12}[:]?",
        1 => "-?[0-9]{1,17}(\\.[0-9]{0,4})?",
        1 => "\"([ -!#-\\[\\]-~]|\\\\\"|\\\\\\\\|\\\\x){0,8}\"?",
        1 => "\\?[01x]?",
        1 => "[A-Za-z*][!-~]{0,6}",
        1 => "\\((:AA==:|1| |\"s\"|tok)*\\)?",
        1 => "[ -~\t]{0,6}",
    ];
    let params = prop_oneof![
        8 => Just(String::new()),
        3 => "(;[a-z*][a-z0-9]{0,2}(=[0-9a-z?:\"]{1,4})?){1,2}",
        1 => "[;]|;A",
    ];
    let member = (key, prop::option::weighted(0.9, value), params).prop_map(|(k, v, p)| match v {
        Some(v) => format!("{k}={v}{p}"),
        None => format!("{k}{p}"),
    });
    let sep = prop_oneof![
        8 => Just(", "),
        2 => Just(","),
        2 => Just(" ,\t"),
        1 => Just(" "),
        1 => Just(",, "),
    ];
    (
        "[ ]{0,2}",
        prop::collection::vec((member, sep), 0..5),
        prop::bool::weighted(0.1),
        prop_oneof![4 => Just(String::new()), 1 => "[ ,\t]{1,2}"],
    )
        .prop_map(|(lead, members, trailing_sep, tail)| {
            let mut out = lead;
            let n = members.len();
            for (i, (m, s)) in members.into_iter().enumerate() {
                out.push_str(&m);
                if i + 1 < n || trailing_sep {
                    out.push_str(s);
                }
            }
            out.push_str(&tail);
            out
        })
}

/// A member's key and, for a byte sequence, its bytes.
type KeyedBytes = (String, Option<Vec<u8>>);

/// `sfv`'s verdict on the same field (RFC 8941 mode, as the rest of the
/// crate), with byte sequences by key.
fn sfv_parse(field: &str) -> Result<Vec<KeyedBytes>, sfv::Error> {
    let dict: sfv::Dictionary = sfv::Parser::new(field).with_version(sfv::Version::Rfc8941).parse()?;
    Ok(dict
        .iter()
        .map(|(k, v)| {
            let bytes = match v {
                sfv::ListEntry::Item(sfv::Item {
                    bare_item: sfv::BareItem::ByteSequence(b),
                    ..
                }) => Some(b.clone()),
                _ => None,
            };
            (k.as_str().to_owned(), bytes)
        })
        .collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_on_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..256),
        decoding in any_decoding(),
    ) {
        if let Ok(parsed) = ContentDigest::parse(&bytes, decoding) {
            let _ = parsed.verify(&bytes, &DigestPolicy::default());
        }
    }

    #[test]
    fn parse_never_panics_on_sf_like_fields(field in sf_like(), decoding in any_decoding()) {
        if let Ok(parsed) = ContentDigest::parse(&field, decoding) {
            let _ = parsed.verify(field.as_bytes(), &DigestPolicy::default());
        }
    }

    /// Differential against `sfv` for RFC 8941 fields: every field accepted
    /// here is a valid Dictionary with the same keys and bytes; every syntax
    /// error here is one for `sfv` too; everything `sfv` rejects is rejected.
    #[test]
    fn agrees_with_sfv_on_standard_fields(field in sf_like()) {
        let ours = ContentDigest::parse(&field, PADDED);
        let theirs = sfv_parse(&field);
        match (&ours, &theirs) {
            (Ok(parsed), Ok(dict)) => {
                let ours: Vec<_> = parsed.members().iter().map(|m| (m.key().to_owned(), Some(m.value().to_vec()))).collect();
                prop_assert_eq!(&ours, dict);
            }
            (Ok(_), Err(e)) => prop_assert!(false, "sfv rejects {field:?} ({e}) but we accept it"),
            (Err(DigestError::Syntax { .. }), Ok(_)) => prop_assert!(false, "{field:?}: {ours:?} but sfv accepts it"),
            (Err(_), _) => {}
        }
    }

    #[test]
    fn compute_serialize_parse_verify(
        body in prop::collection::vec(any::<u8>(), 0..512),
        algs in prop::sample::subsequence(DigestAlgorithm::ALL.to_vec(), 1..=2),
        url in any::<bool>(),
        either in any::<bool>(),
    ) {
        let encoding = if url { URL } else { PADDED };
        let decoding = if either { EITHER } else { BinaryDecoding::Only(encoding) };
        let field = ContentDigest::compute(&body, &algs, encoding);
        let parsed = ContentDigest::parse(&field, decoding).unwrap();
        prop_assert_eq!(&parsed, &ContentDigest::of_body(&body, &algs));
        prop_assert_eq!(parsed.serialize(encoding), field);
        let ok = verify(&parsed, &body, &DigestPolicy::default()).unwrap();
        prop_assert_eq!(ok.algorithms(), &algs[..]);

        let mut tampered = body.clone();
        tampered.push(0);
        prop_assert_eq!(
            verify(&parsed, &tampered, &DigestPolicy::default()),
            Err(DigestError::Mismatch { algorithm: algs[0] })
        );
    }

    /// Any field listing a key twice is rejected, whatever the values.
    #[test]
    fn duplicates_are_always_rejected(
        body in prop::collection::vec(any::<u8>(), 0..64),
        other in prop::collection::vec(any::<u8>(), 0..64),
        first in any::<bool>(),
    ) {
        let a = ContentDigest::compute(&body, &[SHA256], PADDED);
        let b = ContentDigest::compute(&other, &[SHA256], PADDED);
        let field = if first { format!("{a}, {b}") } else { format!("{b}, md5=:AA==:, {a}") };
        prop_assert_eq!(
            ContentDigest::parse(&field, PADDED),
            Err(DigestError::DuplicateAlgorithm { key: "sha-256".into() })
        );
    }
}
