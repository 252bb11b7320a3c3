//! Limits: depth bombs, huge inputs and strings, bounded behaviour.

use adcp_strict_json::{
    check, parse_value, Limits, StrictJsonError, DEFAULT_MAX_DEPTH, DEFAULT_MAX_LEN, SERDE_JSON_MAX_DEPTH,
};

fn nested(open: &str, close: &str, depth: usize, inner: &str) -> String {
    let mut s = String::with_capacity(depth * (open.len() + close.len()) + inner.len());
    for _ in 0..depth {
        s.push_str(open);
    }
    s.push_str(inner);
    for _ in 0..depth {
        s.push_str(close);
    }
    s
}

#[test]
fn defaults() {
    let l = Limits::default();
    assert_eq!(l.max_depth, DEFAULT_MAX_DEPTH);
    assert_eq!(l.max_depth, 64);
    assert_eq!(l.max_len, DEFAULT_MAX_LEN);
    assert_eq!(l.max_string_len, usize::MAX);
    assert_eq!(Limits::new(10), Limits::default().with_max_len(10));
}

#[test]
fn depth_limit_is_exact() {
    let limits = Limits::default().with_max_depth(5);
    // (open, close, inner, containers per level, containers in inner)
    for (open, close, inner, per_level, extra) in [
        ("[", "]", "0", 1, 0),
        ("{\"a\":", "}", "1", 1, 0),
        ("[{\"k\":", "}]", "[]", 2, 1),
    ] {
        for levels in 0..8 {
            let doc = nested(open, close, levels, inner);
            let depth = levels * per_level + extra;
            let result = check(doc.as_bytes(), &limits);
            if depth <= 5 {
                result.unwrap_or_else(|e| panic!("{doc}: {e}"));
            } else {
                assert_eq!(result, Err(StrictJsonError::TooDeep { max: 5 }), "{doc}");
            }
        }
    }
    // Depth 0 admits scalars only.
    let zero = Limits::default().with_max_depth(0);
    check(b"\"x\"", &zero).unwrap();
    assert_eq!(check(b"[]", &zero), Err(StrictJsonError::TooDeep { max: 0 }));
    assert_eq!(check(b"{}", &zero), Err(StrictJsonError::TooDeep { max: 0 }));
}

#[test]
fn depth_bombs_do_not_overflow_the_stack() {
    const N: usize = 100_000;
    let limits = Limits::new(usize::MAX);
    // Unclosed and closed bombs, arrays and objects, with the default depth.
    for doc in [
        "[".repeat(N),
        "{\"a\":".repeat(N),
        nested("[", "]", N, ""),
        nested("{\"a\":", "}", N, "null"),
        nested("[{\"a\":", "}]", N, "0"),
    ] {
        assert_eq!(
            check(doc.as_bytes(), &limits),
            Err(StrictJsonError::TooDeep { max: 64 })
        );
        assert_eq!(
            parse_value(doc.as_bytes(), &limits),
            Err(StrictJsonError::TooDeep { max: 64 })
        );
    }
    // Without a depth limit the heap-allocated path still copes, and the
    // unclosed bombs are plain syntax errors at the end of input.
    let unlimited = limits.with_max_depth(usize::MAX);
    check(nested("[", "]", N, "").as_bytes(), &unlimited).unwrap();
    check(nested("{\"a\":", "}", N, "{}").as_bytes(), &unlimited).unwrap();
    check(nested("[{\"a\":", "}]", N, "[]").as_bytes(), &unlimited).unwrap();
    let unclosed = "[".repeat(N);
    assert!(matches!(
        check(unclosed.as_bytes(), &unlimited),
        Err(StrictJsonError::Syntax { offset, .. }) if offset == N
    ));
    let unclosed = "{\"a\":".repeat(N);
    assert!(matches!(
        check(unclosed.as_bytes(), &unlimited),
        Err(StrictJsonError::Syntax { .. })
    ));
    // Duplicates deep down are still found.
    let deep_dup = nested("{\"a\":", "}", N, "{\"x\":1,\"x\":2}");
    let err = check(deep_dup.as_bytes(), &unlimited).unwrap_err();
    assert_eq!(err.duplicate_keys().unwrap().names(), ["x"]);
}

#[test]
fn parse_value_never_hits_serde_json_recursion_limit() {
    let limits = Limits::new(usize::MAX).with_max_depth(usize::MAX);
    let ok = nested("[", "]", SERDE_JSON_MAX_DEPTH, "");
    check(ok.as_bytes(), &limits).unwrap();
    parse_value(ok.as_bytes(), &limits).unwrap();
    serde_json::from_str::<serde_json::Value>(&ok).unwrap();
    let deeper = nested("[", "]", SERDE_JSON_MAX_DEPTH + 1, "");
    check(deeper.as_bytes(), &limits).unwrap();
    assert!(
        serde_json::from_str::<serde_json::Value>(&deeper).is_err(),
        "serde_json's limit moved"
    );
    assert_eq!(
        parse_value(deeper.as_bytes(), &limits),
        Err(StrictJsonError::TooDeep {
            max: SERDE_JSON_MAX_DEPTH
        })
    );
}

#[test]
fn length_limit_is_checked_before_scanning() {
    let limits = Limits::new(8);
    check(b"[1,2,3] ", &limits).unwrap();
    assert_eq!(check(b"[1,2,3]  ", &limits), Err(StrictJsonError::TooLong { max: 8 }));
    // Even garbage and invalid UTF-8 report the length first.
    assert_eq!(check(&[0xff; 9], &limits), Err(StrictJsonError::TooLong { max: 8 }));
    assert_eq!(
        check(b"", &Limits::new(0)),
        Err(StrictJsonError::Syntax {
            offset: 0,
            reason: "unexpected end of input, expected a JSON value"
        })
    );
    let e = check(&[b' '; 9], &limits).unwrap_err();
    assert_eq!(e.to_string(), "JSON input longer than 8 bytes");
    assert_eq!(e.error_code(), "json_too_long");
}

#[test]
fn huge_strings() {
    let body = "x".repeat(4 * 1024 * 1024);
    let doc = format!("{{\"k\":\"{body}\",\"{body}\":1}}");
    check(doc.as_bytes(), &Limits::new(usize::MAX)).unwrap();
    let dup = format!("{{\"{body}\":1,\"{body}\":2}}");
    let err = check(dup.as_bytes(), &Limits::new(usize::MAX)).unwrap_err();
    // The 4 MiB name is reported as its first 32 bytes.
    assert_eq!(err.duplicate_keys().unwrap().names(), ["x".repeat(32)]);
    // Unterminated huge string.
    let open = format!("[\"{body}");
    assert!(matches!(
        check(open.as_bytes(), &Limits::new(usize::MAX)),
        Err(StrictJsonError::Syntax {
            reason: "unterminated string",
            ..
        })
    ));
}

#[test]
fn string_length_limit() {
    let limits = Limits::default().with_max_string_len(4);
    check(br#"{"abcd":"wxyz"}"#, &limits).unwrap();
    // Raw length counts escapes as written: `\u0041` is 6 bytes.
    check(br#""\n\t""#, &limits).unwrap();
    let too_long = |json: &[u8], offset| {
        assert_eq!(
            check(json, &limits),
            Err(StrictJsonError::StringTooLong { offset, max: 4 })
        );
    };
    too_long(br#"{"abcde":1}"#, 1);
    too_long(br#"{"a":"vwxyz"}"#, 5);
    too_long(br#"["\u0041"]"#, 1);
    too_long(br#"["abcd\n"]"#, 1);
    // Unterminated and over the limit: the limit is reported, without
    // scanning the rest of the input.
    too_long(br#"["abcdefghij"#, 1);
    // Unterminated within the limit: a syntax error.
    assert!(matches!(
        check(br#"["abc"#, &limits),
        Err(StrictJsonError::Syntax { .. })
    ));
    let e = check(br#"["abcde"]"#, &limits).unwrap_err();
    assert_eq!(e.to_string(), "JSON string at byte 1 longer than 4 bytes");
    assert_eq!(e.error_code(), "json_string_too_long");
    // Zero: only empty strings.
    let zero = Limits::default().with_max_string_len(0);
    check(br#"{"":""}"#, &zero).unwrap();
    assert!(check(br#"{"":"a"}"#, &zero).is_err());
}

#[test]
fn wide_objects_stay_linear() {
    // 200 000 distinct members, then a duplicate of the first.
    let n = 200_000;
    let mut doc = String::from("{");
    for i in 0..n {
        doc.push_str(&format!("\"member_{i}\":{i},"));
    }
    doc.push_str("\"member_0\":0}");
    let start = std::time::Instant::now();
    let err = check(doc.as_bytes(), &Limits::new(usize::MAX)).unwrap_err();
    assert_eq!(err.duplicate_keys().unwrap().names(), ["member_0"]);
    // Quadratic behaviour would take minutes here, even in debug builds.
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
    // Same names in sibling objects are not duplicates, and each object's
    // names are dropped when it closes.
    let mut siblings = String::from("[");
    for i in 0..1000 {
        if i > 0 {
            siblings.push(',');
        }
        siblings.push('{');
        for j in 0..40 {
            if j > 0 {
                siblings.push(',');
            }
            siblings.push_str(&format!("\"k{j}\":{j}"));
        }
        siblings.push('}');
    }
    siblings.push(']');
    check(siblings.as_bytes(), &Limits::new(usize::MAX)).unwrap();
}
