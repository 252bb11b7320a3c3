//! RFC 8259 strictness: what is JSON and what is not, in the style of
//! JSONTestSuite's `y_` / `n_` cases, cross-checked against `serde_json`.

use adcp_strict_json::{check, parse_value, Limits, StrictJsonError};

fn ok(json: &[u8]) {
    if let Err(e) = check(json, &Limits::default()) {
        panic!("{:?} rejected: {e}", String::from_utf8_lossy(json));
    }
    // Everything accepted is accepted by serde_json, with the same value.
    let value = parse_value(json, &Limits::default()).unwrap();
    assert_eq!(value, serde_json::from_slice::<serde_json::Value>(json).unwrap());
}

fn syntax(json: &[u8]) -> (usize, &'static str) {
    match check(json, &Limits::default()) {
        Err(StrictJsonError::Syntax { offset, reason }) => {
            assert!(offset <= json.len());
            (offset, reason)
        }
        other => panic!(
            "{:?}: expected a syntax error, got {other:?}",
            String::from_utf8_lossy(json)
        ),
    }
}

fn bad(json: &[u8]) {
    syntax(json);
}

#[test]
fn accepts_every_value_kind_at_top_level() {
    for json in [
        &b"{}"[..],
        b"[]",
        b"\"\"",
        b"\"x\"",
        b"0",
        b"-0",
        b"1",
        b"-1",
        b"123456789",
        b"0.5",
        b"-0.0",
        b"1e5",
        b"1E5",
        b"1e+5",
        b"1e-5",
        b"1.5E-10",
        b"0e0",
        b"true",
        b"false",
        b"null",
        b" \t\r\n{} \t\r\n",
        b"[[]]",
        b"[{}]",
        b"{\"a\":[]}",
        b"[1,\"2\",true,false,null,{},[]]",
        b"{\"a\" : 1 , \"b\" :\n2}",
        b"[ 1 , 2 ]",
        b"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
        b"\"\\u0000\"",
        b"\"\\u00e9\\u00E9\"",
        b"\"\\ud83d\\ude00\"",
        b"\"\\uD834\\uDD1E\"",
        b"\"\\uFFFF\"",
        "\"café 日本語 😀\"".as_bytes(),
        "\"\u{7f}\u{80}\u{2028}\u{feff}\"".as_bytes(), // raw DEL, C1, LS and BOM are legal inside strings
        b"{\"\":0}",
        b"{\"a\":1,\"b\":2,\"A\":3}",
        b"1e308",
        b"-1e308",
        b"1e-400",
        b"0e99999999999999999999",
        b"0.000000000000000000000000000000000000000001e350",
        b"[1.7976931348623157e307]",
    ] {
        ok(json);
    }
}

#[test]
fn rejects_non_json() {
    for json in [
        &b""[..],
        b" ",
        b"\n\t",
        b"{",
        b"}",
        b"[",
        b"]",
        b"[1",
        b"[1,",
        b"{\"a\"",
        b"{\"a\":",
        b"{\"a\":1",
        b"{\"a\":1,",
        b"[1,]",
        b"[,1]",
        b"[1,,2]",
        b"{\"a\":1,}",
        b"{,}",
        b"{\"a\" 1}",
        b"{\"a\":1 \"b\":2}",
        b"{\"a\"::1}",
        b"{a:1}",
        b"{'a':1}",
        b"['a']",
        b"{1:1}",
        b"{null:1}",
        b"[1 2]",
        b"[1]]",
        b"[1]x",
        b"{}{}",
        b"1 2",
        b"\"a\" \"b\"",
        b"[1}",
        b"{\"a\":1]",
        b"tru",
        b"True",
        b"nul",
        b"NULL",
        b"falsey",
        b"NaN",
        b"-NaN",
        b"Infinity",
        b"-Infinity",
        b"[NaN]",
        b"+1",
        b"01",
        b"-01",
        b"00",
        b"0.",
        b".5",
        b"-.5",
        b"1.e5",
        b"1e",
        b"1e+",
        b"1E-",
        b"-",
        b"--1",
        b"0x10",
        b"1_000",
        b"\"abc",
        b"\"\\\"",
        b"\"\\",
        b"\"\\x41\"",
        b"\"\\a\"",
        b"\"\\U0041\"",
        b"\"\\u004\"",
        b"\"\\u00G1\"",
        b"\"\\u\"",
        b"\"a\tb\"",
        b"\"a\nb\"",
        b"\"a\x00b\"",
        b"\"\x1f\"",
        b"/* c */ 1",
        b"1 // c",
        b"# c\n1",
        b"[1] /**/",
        b"\xEF\xBB\xBF{}",
        b"\x0c{}",
        b"\xC2\xA0{}", // NBSP is not JSON whitespace
        b"{}\x00",
    ] {
        bad(json);
        assert!(
            serde_json::from_slice::<serde_json::Value>(json).is_err(),
            "{:?}: serde_json accepts it",
            String::from_utf8_lossy(json)
        );
    }
}

#[test]
fn rejects_lone_and_misordered_surrogates() {
    for (json, reason) in [
        (&b"\"\\ud800\""[..], "lone high surrogate escape"),
        (b"\"\\uDBFF x\"", "lone high surrogate escape"),
        (b"\"\\ud800\\n\"", "lone high surrogate escape"),
        (b"\"\\udc00\"", "lone low surrogate escape"),
        (b"\"\\uDFFF\\uD800\"", "lone low surrogate escape"),
        (
            b"\"\\ud800\\ud800\"",
            "high surrogate escape not followed by a low surrogate",
        ),
        (
            b"\"\\ud800\\u0041\"",
            "high surrogate escape not followed by a low surrogate",
        ),
        (b"{\"\\ud800\":1}", "lone high surrogate escape"),
    ] {
        let (offset, got) = syntax(json);
        assert_eq!(got, reason, "{:?}", String::from_utf8_lossy(json));
        assert_eq!(json[offset], b'\\', "the offset names the escape");
        assert!(serde_json::from_slice::<serde_json::Value>(json).is_err());
    }
    // A truncated low half.
    assert_eq!(syntax(b"\"\\ud800\\udc0\"").1, "expected a hex digit in \\u escape");
}

#[test]
fn rejects_invalid_utf8_with_its_offset() {
    for (json, offset) in [
        (&b"\"\xff\""[..], 1),
        (b"{\"a\":\"\xC3\"}", 6),     // truncated 2-byte sequence
        (b"[\"\xE6\x97\"]", 2),       // truncated 3-byte sequence
        (b"\"\xC0\xAF\"", 1),         // overlong '/'
        (b"\"\xED\xA0\x80\"", 1),     // CESU-8 / raw surrogate U+D800
        (b"\"\xF4\x90\x80\x80\"", 1), // above U+10FFFF
        (b"{\"k\xfe\":1}", 3),        // in a member name
        (b"[1]\x80", 3),              // after the value
    ] {
        assert_eq!(
            check(json, &Limits::default()),
            Err(StrictJsonError::Syntax {
                offset,
                reason: "invalid UTF-8"
            })
        );
    }
}

#[test]
fn numbers_beyond_double_range_are_rejected() {
    for json in [
        &b"1e309"[..],
        b"-1e309",
        b"1.8e308",
        b"1.7976931348623159e308",                // rounds to infinity
        b"1.7976931348623157e308",                // f64::MAX: inside the margin
        b"179769313486231570000000000000000e276", // f64::MAX again; serde_json overflows on it
        b"1.7976931348624e308",
        b"1e99999999999999999999",
        b"[0, 2e308]",
    ] {
        assert_eq!(
            syntax(json).1,
            "number out of range (magnitude above 1.7976931348623e308)"
        );
    }
    for json in [
        &b"1.7976931348623e308"[..],
        b"-1.7976931348623e308",
        b"1.5e308",
        b"1e308",
    ] {
        ok(json);
    }
    // Huge integers without exponent.
    let big = format!("1{}", "0".repeat(308)); // 1e308: fine
    ok(big.as_bytes());
    let big = format!("17{}", "0".repeat(307)); // 1.7e308: fine
    ok(big.as_bytes());
    let too_big = format!("18{}", "0".repeat(307));
    assert_eq!(syntax(too_big.as_bytes()).0, 0);
    let long_fraction = format!("0.{}1", "0".repeat(5000));
    ok(long_fraction.as_bytes());
}

#[test]
fn error_offsets_point_at_the_problem() {
    assert_eq!(syntax(b""), (0, "unexpected end of input, expected a JSON value"));
    assert_eq!(syntax(b"[1,]").0, 3);
    assert_eq!(syntax(b"{\"a\":1,}").0, 7);
    assert_eq!(syntax(b"[1 2]"), (3, "expected ',' or ']'"));
    assert_eq!(syntax(b"{\"a\":1 \"b\":2}"), (7, "expected ',' or '}'"));
    assert_eq!(syntax(b"{\"a\" 1}"), (5, "expected ':' after a member name"));
    assert_eq!(syntax(b"{1:1}"), (1, "expected a member name string"));
    assert_eq!(syntax(b"01"), (1, "leading zero in number"));
    assert_eq!(syntax(b"[1] x"), (4, "trailing characters after the JSON value"));
    assert_eq!(syntax(b"\"a\nb\""), (2, "unescaped control character in string"));
    assert_eq!(syntax(b"\"\\q\""), (2, "invalid escape character"));
    assert_eq!(syntax(b"\"abc"), (4, "unterminated string"));
    assert_eq!(syntax(b"[tru]"), (1, "invalid literal (expected true, false or null)"));
    assert_eq!(syntax(b"\xEF\xBB\xBF{}"), (0, "byte-order mark before the JSON value"));
    assert_eq!(
        syntax(b"[1,[2,{\"a\":"),
        (11, "unexpected end of input, expected a JSON value")
    );
    assert_eq!(syntax(b"[1,[2]"), (6, "unexpected end of input in a container"));
}

#[test]
fn syntax_errors_win_over_duplicates() {
    // The duplicate comes first, but the document is not JSON.
    assert!(matches!(
        check(br#"{"a":1,"a":2"#, &Limits::default()),
        Err(StrictJsonError::Syntax { offset: 12, .. })
    ));
    assert!(matches!(
        check(br#"[{"a":1,"a":2}, 01]"#, &Limits::default()),
        Err(StrictJsonError::Syntax { offset: 17, .. })
    ));
}

#[test]
fn display_and_codes() {
    let e = check(b"[1,]", &Limits::default()).unwrap_err();
    assert_eq!(e.to_string(), "invalid JSON at byte 3: expected a JSON value");
    assert_eq!(e.error_code(), "invalid_json");
    assert!(e.duplicate_keys().is_none());
    let as_dyn: &dyn std::error::Error = &e;
    assert!(as_dyn.source().is_none());
}
