//! The official AdCP conformance vectors that exercise duplicate keys, read
//! at run time from the suite (never copied into this repository).

use adcp_strict_json::{check, parse_value, Limits, StrictJsonError};
use serde_json::Value;
use std::path::PathBuf;

const HMAC_VECTORS: &str = "webhooks/webhook-hmac-sha256.json";

fn suite() -> Option<PathBuf> {
    adcp_vectors::require_dir().unwrap()
}

fn hmac_vectors() -> Option<Value> {
    let dir = suite()?;
    Some(adcp_vectors::load_json(&dir, HMAC_VECTORS).unwrap())
}

fn assert_duplicate(body: &str, expected: &[&str], id: &str) {
    let err = check(body.as_bytes(), &Limits::default()).expect_err(id);
    assert_eq!(err.error_code(), "duplicate_key_input", "{id}: {err}");
    let dups = err.duplicate_keys().unwrap();
    assert_eq!(dups.names(), expected, "{id}");
    assert_eq!(dups.total(), expected.len(), "{id}");
    assert!(dups.overflow_marker().is_none(), "{id}");
    // parse_value must refuse too: no last-wins value ever escapes.
    assert_eq!(
        parse_value(body.as_bytes(), &Limits::default()).unwrap_err(),
        err,
        "{id}"
    );
}

#[test]
fn verifier_duplicate_keys_conflicting_values_is_rejected() {
    let Some(v) = hmac_vectors() else { return };
    let vector = v["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == "duplicate-keys-conflicting-values")
        .expect("vector duplicate-keys-conflicting-values");
    assert_eq!(vector["expected_verifier_action"], "reject-malformed");
    assert_eq!(vector["rfc9421_error_code"], "webhook_body_malformed");
    assert_duplicate(
        vector["raw_body"].as_str().unwrap(),
        &["status"],
        "duplicate-keys-conflicting-values",
    );
}

#[test]
fn every_vector_with_a_verifier_action_gets_it() {
    let Some(v) = hmac_vectors() else { return };
    let mut seen = 0;
    for vector in v["vectors"].as_array().unwrap() {
        let Some(action) = vector["expected_verifier_action"].as_str() else {
            continue;
        };
        seen += 1;
        let result = check(vector["raw_body"].as_str().unwrap().as_bytes(), &Limits::default());
        match action {
            "reject-malformed" => assert!(result.is_err(), "{}", vector["id"]),
            "accept" => assert!(result.is_ok(), "{}", vector["id"]),
            other => panic!("unknown verifier action {other}"),
        }
    }
    assert!(seen >= 1);
}

#[test]
fn signer_side_rejection_vectors_are_rejected() {
    let Some(v) = hmac_vectors() else { return };
    let expected = [
        ("signer-upstream-duplicate-key-rejection", "status"),
        ("signer-upstream-duplicate-key-deep-nested", "media_buy_id"),
        ("signer-upstream-duplicate-key-array-contained", "package_id"),
        ("signer-upstream-duplicate-key-three-deep", "level_3_key"),
    ];
    let vectors = v["signer_side"]["rejection_vectors"].as_array().unwrap();
    // Every shape class the spec names is present, and nothing is skipped.
    for (id, _) in expected {
        assert!(vectors.iter().any(|x| x["id"] == id), "missing fixture {id}");
    }
    for vector in vectors {
        let id = vector["id"].as_str().unwrap();
        assert_eq!(vector["expected_signer_action"], "reject-input-before-sign", "{id}");
        let body = vector["signer_input_body"].as_str().unwrap();
        match expected.iter().find(|(e, _)| *e == id) {
            Some((_, name)) => assert_duplicate(body, &[name], id),
            // A fixture added after this test was written: still rejected.
            None => assert_eq!(
                check(body.as_bytes(), &Limits::default()).unwrap_err().error_code(),
                "duplicate_key_input",
                "{id}"
            ),
        }
    }
}

#[test]
fn signer_side_positive_vectors_are_accepted() {
    let Some(v) = hmac_vectors() else { return };
    let vectors = v["signer_side"]["positive_vectors"].as_array().unwrap();
    assert!(vectors.iter().any(|x| x["id"] == "signer-upstream-clean-input"));
    for vector in vectors {
        assert_eq!(vector["expected_signer_action"], "sign-and-emit");
        let body = vector["signer_input_body"].as_str().unwrap();
        check(body.as_bytes(), &Limits::default()).unwrap_or_else(|e| panic!("{}: {e}", vector["id"]));
        let value = parse_value(body.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(value, serde_json::from_str::<Value>(body).unwrap());
    }
}

/// The HMAC vectors only assert signatures (no `expected_verifier_action`),
/// but their bodies show what the strict check says about real traffic.
#[test]
fn hmac_signature_vector_bodies() {
    let Some(v) = hmac_vectors() else { return };
    for list in ["vectors", "rejection_vectors"] {
        for vector in v[list].as_array().unwrap() {
            let id = vector["id"].as_str().unwrap();
            let body = vector["raw_body"].as_str().unwrap().as_bytes();
            let result = check(body, &Limits::default());
            match id {
                "duplicate-keys-conflicting-values" => {
                    assert_eq!(result.unwrap_err().error_code(), "duplicate_key_input");
                }
                // Not JSON: an empty body has no value.
                "empty-body" => {
                    assert!(matches!(result, Err(StrictJsonError::Syntax { offset: 0, .. })), "{id}");
                }
                // A raw U+0000 inside a string is not JSON (RFC 8259 §7).
                "null-bytes" => {
                    let offset = body.iter().position(|&b| b == 0).unwrap();
                    assert_eq!(
                        result,
                        Err(StrictJsonError::Syntax {
                            offset,
                            reason: "unescaped control character in string"
                        }),
                        "{id}"
                    );
                    assert!(serde_json::from_slice::<Value>(body).is_err());
                }
                _ => {
                    result.unwrap_or_else(|e| panic!("{id}: {e}"));
                    assert_eq!(
                        parse_value(body, &Limits::default()).unwrap(),
                        serde_json::from_slice::<Value>(body).unwrap(),
                        "{id}"
                    );
                }
            }
        }
    }
}

fn a2a_body(file: &str) -> Option<(String, Value)> {
    let dir = suite()?;
    let vector = adcp_vectors::load_json(&dir, &format!("request-signing/a2a/negative/{file}")).unwrap();
    let request = adcp_vectors::VectorRequest::from_json(&vector["request"]).unwrap();
    Some((request.body.unwrap(), vector))
}

#[test]
fn a2a_duplicate_skill_key_is_rejected() {
    let Some((body, vector)) = a2a_body("014-duplicate-skill-key.json") else {
        return;
    };
    assert_eq!(vector["expected_outcome"]["error_code"], "request_body_malformed");
    assert_duplicate(&body, &["skill"], "a2a/014");
}

#[test]
fn a2a_escaped_duplicate_skill_key_is_rejected() {
    let Some((body, vector)) = a2a_body("021-escaped-duplicate-skill-key.json") else {
        return;
    };
    assert_eq!(vector["expected_outcome"]["error_code"], "request_body_malformed");
    assert!(
        body.contains(r#""sk\u0069ll""#),
        "the vector must spell the name with an escape"
    );
    // The name is reported unescaped (the duplicate *is* "skill").
    assert_duplicate(&body, &["skill"], "a2a/021");
    let err = check(body.as_bytes(), &Limits::default()).unwrap_err();
    let first = err.duplicate_keys().unwrap().first_offset();
    assert_eq!(&body[first..first + 12], r#""sk\u0069ll""#);
}

#[test]
fn a2a_duplicate_method_key_is_rejected() {
    let Some((body, vector)) = a2a_body("024-duplicate-method-key.json") else {
        return;
    };
    assert_eq!(vector["expected_outcome"]["error_code"], "request_body_malformed");
    assert_duplicate(&body, &["method"], "a2a/024");
}

/// `skill` / `Skill` is not a duplicate for JSON: names are case-sensitive.
/// The vector is rejected by the A2A operation resolver's case-variant rule,
/// which needs the strictly parsed value this crate hands it.
#[test]
fn a2a_case_variant_member_name_is_not_a_json_duplicate() {
    let Some((body, vector)) = a2a_body("020-case-variant-member-name.json") else {
        return;
    };
    assert_eq!(vector["expected_outcome"]["error_code"], "request_body_malformed");
    check(body.as_bytes(), &Limits::default()).unwrap();
    let value = parse_value(body.as_bytes(), &Limits::default()).unwrap();
    let data = &value["params"]["message"]["parts"][0]["data"];
    assert_eq!(data["skill"], "get_products");
    assert_eq!(data["Skill"], "create_media_buy");
}

/// Every A2A vector body: the only JSON-level failures are the duplicate
/// vectors; all the other negative vectors fail on operation resolution.
#[test]
fn a2a_vector_bodies_are_otherwise_well_formed() {
    let Some(dir) = suite() else { return };
    let files = adcp_vectors::json_files(&dir, "request-signing/a2a");
    assert!(!files.is_empty());
    for path in files {
        let vector: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if vector.get("request").is_none() {
            continue;
        }
        let request = adcp_vectors::VectorRequest::from_json(&vector["request"]).unwrap();
        let Some(body) = request.body else { continue };
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let result = check(body.as_bytes(), &Limits::default());
        if name.starts_with("014-") || name.starts_with("021-") || name.starts_with("024-") {
            assert_eq!(result.unwrap_err().error_code(), "duplicate_key_input", "{name}");
        } else {
            result.unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
