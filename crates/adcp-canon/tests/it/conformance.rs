//! The official `request-signing/canonicalization.json` cases (AdCP
//! compliance release 3.2.4), read from the suite on disk.

use adcp_canon::{canonicalize, canonicalize_received, Profile};
use serde_json::Value;

fn cases() -> Option<Vec<Value>> {
    let suite = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}"))?;
    let doc =
        adcp_vectors::load_json(&suite, "request-signing/canonicalization.json").unwrap_or_else(|e| panic!("{e}"));
    Some(doc["cases"].as_array().cloned().unwrap_or_default())
}

fn s<'a>(case: &'a Value, key: &str) -> &'a str {
    case[key]
        .as_str()
        .unwrap_or_else(|| panic!("case {} lacks {key}", case["name"]))
}

#[test]
fn every_canonicalization_vector_passes_both_entry_points() {
    let Some(cases) = cases() else { return };
    assert_eq!(cases.len(), 41, "release 3.2.4 has 41 canonicalization cases");
    let mut checked = 0;
    for case in &cases {
        let name = s(case, "name");
        let input = s(case, "input_url");
        let producer = canonicalize(input);
        if case["reject"].as_bool() == Some(true) {
            let err = producer.expect_err(name);
            assert_eq!(err.code(Profile::Request), s(case, "expected_error_code"), "{name}");
            if input.is_ascii() {
                let err = canonicalize_received(input).expect_err(name);
                assert_eq!(err.code(Profile::Request), s(case, "expected_error_code"), "{name}");
            }
        } else {
            let url = producer.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(url.as_str(), s(case, "expected_target_uri"), "{name}");
            assert_eq!(url.authority(), s(case, "expected_authority"), "{name}");
            // The canonical form is itself a valid received URL and a fixed point.
            let again = canonicalize_received(url.as_str()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(again, url, "{name}: not idempotent");
            if input.is_ascii() {
                let received = canonicalize_received(input).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(received, url, "{name}: entry points disagree");
            } else {
                assert!(
                    canonicalize_received(input).is_err(),
                    "{name}: raw non-ASCII must be rejected when received"
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 41);
}
