//! `adcp-sig canon`, `urn-eq` end to end: the conformance vectors through
//! the binary, output shapes and exit codes.

use crate::support::{adcp_sig, json_lines};
use serde_json::Value;

#[test]
fn canonicalization_vectors_through_the_cli() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let doc =
        adcp_vectors::load_json(&suite, "request-signing/canonicalization.json").unwrap_or_else(|e| panic!("{e}"));
    let cases = doc["cases"].as_array().cloned().unwrap_or_default();
    assert_eq!(cases.len(), 41);
    let inputs: Vec<&str> = cases.iter().filter_map(|c| c["input_url"].as_str()).collect();
    let mut args = vec!["canon", "--json", "--profile", "request"];
    args.extend(&inputs);
    let out = adcp_sig(&args);
    assert_eq!(out.status.code(), Some(1), "some vectors are rejections");
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 41);
    for (case, line) in cases.iter().zip(&lines) {
        let name = &case["name"];
        assert_eq!(line["input"], case["input_url"], "{name}");
        if case["reject"].as_bool() == Some(true) {
            assert_eq!(line["error"], case["expected_error_code"], "{name}");
            assert!(line["message"].as_str().is_some_and(|m| !m.is_empty()), "{name}");
        } else {
            assert_eq!(line["target_uri"], case["expected_target_uri"], "{name}");
            assert_eq!(line["authority"], case["expected_authority"], "{name}");
        }
    }
}

#[test]
fn canon_text_output_and_exit_codes() {
    let out = adcp_sig(&["canon", "HTTPS://Example.COM:443/a/./b"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "https://example.com/a/b\texample.com\n"
    );

    let out = adcp_sig(&["canon", "--received", "--json", "https://bücher.example/"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_lines(&out)[0]["error"], "webhook_target_uri_malformed");

    let out = adcp_sig(&["canon", "https://ok.example/", "https:///p"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("webhook_target_uri_malformed"));

    assert_eq!(
        adcp_sig(&["canon"]).status.code(),
        Some(2),
        "missing URL is a usage error"
    );
    assert_eq!(
        adcp_sig(&["canon", "--profile", "x", "https://h/"]).status.code(),
        Some(2)
    );
    assert_eq!(adcp_sig(&["no-such-command"]).status.code(), Some(2));
}

#[test]
fn urn_eq_exit_codes() {
    assert_eq!(
        adcp_sig(&["urn-eq", "urn:example:a123,z456", "URN:EXAMPLE:a123,z456#789"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        adcp_sig(&["urn-eq", "urn:example:a123,z456", "urn:example:a123%2Cz456"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        adcp_sig(&["urn-eq", "urn:example:a123%2cz456", "URN:EXAMPLE:a123%2Cz456"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(adcp_sig(&["urn-eq", "urn:x:a", "urn:example:a"]).status.code(), Some(2));
    let out = adcp_sig(&["urn-eq", "--json", "urn:example:A", "urn:example:a"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_lines(&out)[0]["equivalent"], false);
}

#[test]
fn normalize_command() {
    let out = adcp_sig(&["normalize", "HTTP://Example.COM:80/a/./b?z=1#f"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "http://example.com/a/b?z=1\n");

    let out = adcp_sig(&[
        "normalize",
        "--sort-query",
        "--remove-param",
        "utm_*",
        "--www-alias",
        "--json",
        "https://www.example.com/p?z=1&utm_source=x&a=2",
        "https:///p",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let lines = json_lines(&out);
    assert_eq!(lines[0]["normalized"], "https://example.com/p?a=2&z=1");
    assert_eq!(lines[1]["error"], "url_malformed");

    let rules = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/data/site-rules.toml");
    let out = adcp_sig(&["normalize", "--rules", rules, "http://www.example.com/index.html"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    assert_eq!(
        adcp_sig(&["normalize", "--rules", "/nonexistent/rules.json", "https://h/"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        adcp_sig(&["normalize", "--remove-param", "[", "https://h/"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn base_command_reproduces_a_vector_base() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let vector = suite.join("webhook-signing/positive/001-basic-post.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&vector).unwrap()).unwrap();
    let path = vector.to_string_lossy().into_owned();

    let out = adcp_sig(&["base", "--request", &path]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end_matches('\n'),
        doc["expected_signature_base"].as_str().unwrap()
    );

    let out = adcp_sig(&["base", "--json", "--request", &path]);
    assert_eq!(json_lines(&out)[0]["signature_base"], doc["expected_signature_base"]);

    // A stand-alone request file (just the request object) works too.
    let dir = std::env::temp_dir().join(format!("adcp-sig-base-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let req = dir.join("request.json");
    std::fs::write(&req, doc["request"].to_string()).unwrap();
    let out = adcp_sig(&["base", "--json", "--request", &req.to_string_lossy(), "--label", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(json_lines(&out)[0]["error"].as_str().unwrap().contains("nope"));
    std::fs::remove_dir_all(&dir).unwrap();

    assert_eq!(
        adcp_sig(&["base", "--request", "/nonexistent.json"]).status.code(),
        Some(2)
    );
}
