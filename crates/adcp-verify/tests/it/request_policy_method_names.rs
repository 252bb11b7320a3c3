//! `request-signing/protocol-method-names.json`: the `protocol_methods_*`
//! declaration grammar (2 families, 21 valid names; 7 invalid names) and
//! exact decoded-string matching (8 cases).

use adcp_sigbase::Message;
use adcp_verify::request_policy::{
    decide, is_protocol_method_name, resolve, AuthSource, Binding, CapabilityError, Decision, FallbackCredential, Mode,
    VerifierCapability,
};
use adcp_verify::DigestCoverage;
use serde_json::Value;

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect()
}

/// A JSON-RPC body calling `method_json` (already a JSON string literal,
/// quotes included), with a harmless A2A message in `params`.
fn body(method_json: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":{method_json},"params":{{"taskId":"task_1","message":{{"parts":[{{"data":{{"skill":"get_products"}}}}]}}}}}}"#
    )
}

/// `s` as a JSON string literal whose first character is `\u`-escaped.
fn escaped_first(s: &str) -> String {
    let mut chars = s.chars();
    let first = chars.next().unwrap();
    format!("\"\\u{:04x}{}\"", u32::from(first), chars.as_str())
}

#[test]
fn protocol_method_name_vectors() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let file = adcp_vectors::load_json(&suite, "request-signing/protocol-method-names.json").unwrap();
    assert_eq!(file["profile_version"], "3.2");

    // Valid declarations: accepted in every protocol_methods_* list, refused
    // in the operation lists as a namespace violation.
    let families = file["valid_declarations"].as_array().unwrap();
    let mut valid = 0;
    for family in families {
        let methods = strings(&family["methods"]);
        for method in &methods {
            assert!(is_protocol_method_name(method), "{method}");
            for list in [
                "protocol_methods_required_for",
                "protocol_methods_warn_for",
                "protocol_methods_supported_for",
            ] {
                let cap = VerifierCapability::from_json(&serde_json::json!({
                    "supported": true, "covers_content_digest": "required", list: [method]
                }));
                assert!(cap.is_ok(), "{list} {method}: {cap:?}");
            }
            let err = VerifierCapability::builder(DigestCoverage::Required)
                .required_for([*method])
                .build()
                .unwrap_err();
            assert!(matches!(
                err,
                CapabilityError::NamespaceViolation { .. } | CapabilityError::InvalidName { .. }
            ));
        }
        // One capability may declare a whole family.
        let cap = VerifierCapability::builder(DigestCoverage::Required)
            .protocol_methods_supported_for(methods.iter().copied())
            .build()
            .unwrap();
        assert_eq!(cap.protocol_methods_supported_for().len(), methods.len());
        valid += methods.len();
    }
    assert_eq!(families.len(), 2);
    assert_eq!(valid, 21);

    // Invalid declarations: refused at configuration time.
    let invalid = strings(&file["invalid_declarations"]);
    for method in &invalid {
        assert!(!is_protocol_method_name(method), "{method}");
        let err = VerifierCapability::builder(DigestCoverage::Required)
            .protocol_methods_required_for([*method])
            .build()
            .unwrap_err();
        let namespace = matches!(err, CapabilityError::NamespaceViolation { .. });
        // AdCP operation names, `tools/call` and bare lowercase words sit in the other namespace.
        assert_eq!(
            namespace,
            matches!(*method, "create_media_buy" | "tools/call" | "tasks"),
            "{method}: {err}"
        );
    }
    assert_eq!(invalid.len(), 7);

    // Exact, case-sensitive matching on the decoded method, no 0.3 / 1.0 translation.
    let cases = file["exact_match_cases"].as_array().unwrap();
    let mut matched = 0;
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let declared = strings(&case["declared_methods"]);
        let wire = case["wire_method"].as_str().unwrap();
        let matches = case["matches"].as_bool().unwrap();
        let cap = VerifierCapability::builder(DigestCoverage::Required)
            .protocol_methods_required_for(declared.iter().copied())
            .build()
            .unwrap();
        assert_eq!(cap.protocol_method_mode(wire) == Mode::Required, matches, "{id}");

        // End to end, with the method written plainly and with a JSON escape:
        // matching happens on the decoded string.
        for literal in [Value::from(wire).to_string(), escaped_first(wire)] {
            let body = body(&literal);
            let msg = Message::request("POST", "https://seller.example.com/a2a/jsonrpc").with_body(body.as_bytes());
            let request = resolve(Binding::JsonRpc, &msg).unwrap();
            assert_eq!(request.protocol_method(), Some(wire), "{id} {literal}");
            match decide(&cap, Binding::JsonRpc, &msg, FallbackCredential::Absent) {
                Decision::Reject(_) if matches => {}
                Decision::Accept { acceptance, .. } if !matches => {
                    assert_eq!(acceptance.source, AuthSource::Anonymous, "{id}");
                }
                other => panic!("{id} {literal}: {other:?}"),
            }
        }
        matched += usize::from(matches);
    }
    assert_eq!(cases.len(), 8);
    assert_eq!(matched, 3);
}
