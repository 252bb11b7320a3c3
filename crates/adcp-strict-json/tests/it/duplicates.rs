//! Duplicate-key semantics: what counts as the same name, where duplicates
//! are looked for, and how they are reported (step 14b (c)).

use adcp_strict_json::{check, DuplicateKeys, Limits, StrictJsonError, DUPLICATE_KEY_INPUT, MAX_REPORTED_KEYS};

fn dups(json: &str) -> DuplicateKeys {
    match check(json.as_bytes(), &Limits::default()) {
        Err(StrictJsonError::DuplicateKeys(d)) => d,
        other => panic!("{json}: expected duplicates, got {other:?}"),
    }
}

fn names(json: &str) -> Vec<String> {
    dups(json).names().to_vec()
}

fn clean(json: &str) {
    if let Err(e) = check(json.as_bytes(), &Limits::default()) {
        panic!("{json}: {e}");
    }
}

#[test]
fn names_are_compared_after_unescaping() {
    assert_eq!(names(r#"{"a":1,"\u0061":2}"#), ["a"]);
    assert_eq!(names(r#"{"\u0061":1,"a":2}"#), ["a"]);
    assert_eq!(names(r#"{"skill":1,"sk\u0069ll":2}"#), ["skill"]);
    assert_eq!(
        names(r#"{"sk\u0069ll":1,"\u0073\u006B\u0069\u006C\u006C":2}"#),
        ["skill"]
    );
    assert_eq!(names(r#"{"a/b":1,"a\/b":2}"#), ["a/b"]);
    assert_eq!(names(r#"{"q\"":1,"q\u0022":2}"#), ["q\""]);
    assert_eq!(names(r#"{"caf\u00e9":1,"café":2}"#), ["café"]);
    assert_eq!(names(r#"{"caf\u00E9":1,"caf\u00e9":2}"#), ["café"]);
    assert_eq!(names(r#"{"😀":1,"\ud83d\ude00":2}"#), ["😀"]);
    assert_eq!(names(r#"{"\uD83D\uDE00":1,"\ud83d\ude00":2}"#), ["😀"]);
    assert_eq!(names(r#"{"tab\t":1,"tab\u0009":2}"#), ["<sanitized:3>"]);
    assert_eq!(names(r#"{"":1,"":2}"#), [""]);
}

#[test]
fn names_are_case_sensitive_and_not_normalized() {
    clean(r#"{"skill":1,"Skill":2,"SKILL":3}"#);
    clean(r#"{"status":1,"st\u0041tus":2}"#);
    clean(r#"{"é":1,"e\u0301":2}"#); // NFC vs NFD
    clean(r#"{"a":1,"a ":2," a":3}"#);
    clean(r#"{"\u0000":1,"":2}"#);
    clean(r#"{"K":1,"\u212A":2}"#); // KELVIN SIGN is not K
}

#[test]
fn escaped_nul_in_a_member_name() {
    // `\u0000` is valid JSON; the name is reported as non-printable.
    clean(r#"{"\u0000":1}"#);
    clean(r#"{"a\u0000b":1,"a\u0000c":2}"#);
    assert_eq!(names(r#"{"\u0000":1,"\u0000":2}"#), ["<sanitized:0>"]);
    assert_eq!(names(r#"{"role\u0000":1,"role\u0000":2}"#), ["<sanitized:4>"]);
    assert_eq!(names(r#"{"a\u0000b":1,"a\u0000b":2}"#), ["<sanitized:1>"]);
    // Log-injection attempts through escapes.
    assert_eq!(
        names(r#"{"x\nINFO forged":1,"x\u000aINFO forged":2}"#),
        ["<sanitized:1>"]
    );
    assert_eq!(names(r#"{"admin\u202euser":1,"admin\u202Euser":2}"#), ["<sanitized:5>"]);
    assert_eq!(names(r#"{"\u001b[2J":1,"\u001b[2J":2}"#), ["<sanitized:0>"]);
}

#[test]
fn duplicates_are_found_at_every_depth() {
    assert_eq!(names(r#"{"a":1,"a":2}"#), ["a"]);
    assert_eq!(names(r#"{"r":{"m":1,"m":2}}"#), ["m"]);
    assert_eq!(names(r#"[{"p":1,"p":2}]"#), ["p"]);
    assert_eq!(names(r#"{"x":[1,[2,{"y":[{"z":0,"z":0}]}]]}"#), ["z"]);
    assert_eq!(names(r#"{"l1":{"l2":{"l3":"o","l3":"t"}}}"#), ["l3"]);
    assert_eq!(names(r#"[[[[[[[[{"deep":1,"deep":1}]]]]]]]]"#), ["deep"]);
    // Identical values are still duplicates.
    assert_eq!(names(r#"{"a":null,"a":null}"#), ["a"]);
    // A duplicate after a nested object closes.
    assert_eq!(names(r#"{"a":{"b":1,"c":2},"a":3}"#), ["a"]);
    assert_eq!(names(r#"{"a":{"b":1},"c":[{"d":1}],"c":2}"#), ["c"]);
}

#[test]
fn same_names_in_different_objects_are_fine() {
    clean(r#"{"a":{"a":{"a":1}}}"#);
    clean(r#"[{"id":1},{"id":2},{"id":3}]"#);
    clean(r#"{"a":{"b":1},"b":{"a":2}}"#);
    clean(r#"{"packages":[{"package_id":"pkg_1"},{"package_id":"pkg_2"}],"package_id":"x"}"#);
    // Strings and values that look like names.
    clean(r#"["a","a",{"a":"a","b":"a"}]"#);
    clean(r#"{"a":"\"a\":1","b":"a"}"#);
}

#[test]
fn one_duplicate_per_object_and_name() {
    let d = dups(r#"{"a":1,"a":2,"a":3,"a":4}"#);
    assert_eq!(d.names(), ["a"]);
    assert_eq!(d.total(), 1);
    let d = dups(r#"[{"a":1,"a":2},{"a":1,"a":2}]"#);
    assert_eq!(d.names(), ["a", "a"]);
    assert_eq!(d.total(), 2);
    // Document order of the repetitions.
    let d = dups(r#"{"b":1,"a":1,"a":2,"b":2,"c":{"z":1,"z":2}}"#);
    assert_eq!(d.names(), ["a", "b", "z"]);
    // Inner duplicate repeated before the outer one.
    assert_eq!(names(r#"{"o":1,"i":{"x":1,"x":2},"o":2}"#), ["x", "o"]);
}

#[test]
fn report_is_capped_at_four_with_an_overflow_marker() {
    assert_eq!(MAX_REPORTED_KEYS, 4);
    let d = dups(r#"{"a":1,"a":1,"b":1,"b":1,"c":1,"c":1,"d":1,"d":1}"#);
    assert_eq!(d.names(), ["a", "b", "c", "d"]);
    assert_eq!((d.total(), d.omitted()), (4, 0));
    assert_eq!(d.overflow_marker(), None);
    assert_eq!(d.to_string(), r#"duplicate object keys: "a", "b", "c", "d""#);

    let d = dups(r#"{"a":1,"a":1,"b":1,"b":1,"c":1,"c":1,"d":1,"d":1,"e":1,"e":1,"f":[{"g":1,"g":2}]}"#);
    assert_eq!(d.names(), ["a", "b", "c", "d"]);
    assert_eq!((d.total(), d.omitted()), (6, 2));
    assert_eq!(d.overflow_marker().as_deref(), Some("<...2 more>"));
    assert_eq!(
        d.to_string(),
        r#"duplicate object keys: "a", "b", "c", "d", <...2 more>"#
    );

    // Thousands of duplicates: bounded report, full count.
    let mut doc = String::from("[");
    for i in 0..5000 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(r#"{{"k{i}":1,"k{i}":2}}"#));
    }
    doc.push(']');
    let d = dups(&doc);
    assert_eq!(d.names(), ["k0", "k1", "k2", "k3"]);
    assert_eq!(d.total(), 5000);
    assert_eq!(d.overflow_marker().as_deref(), Some("<...4996 more>"));
}

#[test]
fn reported_names_are_sanitized() {
    let long = "n".repeat(100);
    let doc = format!(
        r#"{{"{long}":1,"{long}":2,"a\u2028b":1,"a\u2028b":2,"日日日日日日日日日日日":1,"日日日日日日日日日日日":2,"\ufeff":1,"\ufeff":2,"late\u0000":1,"late\u0000":2}}"#
    );
    let d = dups(&doc);
    assert_eq!(
        d.names(),
        [
            "n".repeat(32),
            "<sanitized:1>".into(),
            "日".repeat(10),
            "<sanitized:0>".into()
        ]
    );
    assert_eq!(d.overflow_marker().as_deref(), Some("<...1 more>"));
    // Display quotes names with escapes: nothing raw reaches a log line.
    let d = dups(r#"{"say \"hi\"":1,"say \"hi\"":2}"#);
    assert_eq!(d.to_string(), r#"duplicate object keys: "say \"hi\"""#);
}

#[test]
fn first_offset_names_the_first_repetition() {
    let doc = r#"{"a":1,"b":{"c":1,"c":2},"a":2}"#;
    let d = dups(doc);
    assert_eq!(d.first_offset(), doc.find(r#""c":2"#).unwrap());
    assert_eq!(&doc[d.first_offset()..d.first_offset() + 3], r#""c""#);
}

#[test]
fn wide_objects_use_the_index_correctly() {
    // Across the linear/indexed boundary (16 names) and with escapes.
    for n in [1usize, 2, 15, 16, 17, 31, 32, 33, 100, 1000] {
        let members: Vec<String> = (0..n).map(|i| format!("\"m{i}\":{i}")).collect();
        let base = members.join(",");
        clean(&format!("{{{base}}}"));
        for dup in [0, n / 2, n - 1] {
            let doc = format!("{{{base},\"m{dup}\":true}}");
            assert_eq!(names(&doc), [format!("m{dup}")], "n={n} dup={dup}");
            // The same name written with an escaped first character.
            let doc = format!("{{{base},\"\\u006d{dup}\":true}}");
            assert_eq!(names(&doc), [format!("m{dup}")], "n={n} dup={dup} (escaped)");
        }
        // Every name repeated: one duplicate each, reported in order.
        let doc = format!("{{{base},{base}}}");
        let d = dups(&doc);
        assert_eq!(d.total(), n);
        assert_eq!(d.names().len(), n.min(4));
        assert_eq!(d.names()[0], "m0");
    }
    // A wide object closed, then a sibling with the same names: not dups.
    let members: Vec<String> = (0..50).map(|i| format!("\"m{i}\":{i}")).collect();
    let obj = format!("{{{}}}", members.join(","));
    clean(&format!("[{obj},{obj},{{\"in\":{obj}}}]"));
    clean(&format!("{{\"a\":{obj},\"m0\":{obj}}}"));
}

#[test]
fn error_code_is_the_normative_identifier() {
    assert_eq!(DUPLICATE_KEY_INPUT, "duplicate_key_input");
    let err = check(br#"{"status":"approved","status":"rejected"}"#, &Limits::default()).unwrap_err();
    assert_eq!(err.error_code(), "duplicate_key_input");
    assert_eq!(err.to_string(), r#"duplicate object keys: "status""#);
    // Clone + PartialEq: errors can be stored and compared.
    assert_eq!(err.clone(), err);
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err);
    assert!(boxed.to_string().contains("status"));
}
