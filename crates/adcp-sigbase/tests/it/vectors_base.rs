//! Every AdCP conformance vector that carries `expected_signature_base`
//! (webhook-signing and request-signing, positive and negative, including
//! profile-3.2) gets a byte-identical base from this crate.

use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_vectors::VectorRequest;
use std::path::Path;

fn base_for(path: &Path, doc: &serde_json::Value) -> Result<String, String> {
    let req = VectorRequest::from_json(&doc["request"])?;
    let mut msg = Message::request(req.method.as_str(), req.url.as_str());
    for (name, value) in &req.headers {
        msg.push_header(name.as_str(), value.as_str());
    }
    if let Some(body) = &req.body {
        msg = msg.with_body(body.as_bytes());
    }
    // The AdCP profiles sign the canonical @target-uri and @authority.
    let canonical = adcp_canon::canonicalize_received(&req.url).map_err(|e| format!("{}: {e}", path.display()))?;
    let input = SignatureInput::from_message(&msg)
        .map_err(|e| e.to_string())?
        .ok_or("no Signature-Input")?;
    let sig1 = input.require("sig1").map_err(|e| e.to_string())?;
    let opts = BaseOptions {
        target_uri: Some(canonical.as_str()),
        authority: Some(canonical.authority()),
        ..BaseOptions::default()
    };
    let base = signature_base(&msg, sig1, &opts).map_err(|e| e.to_string())?;
    Ok(base.to_str_lossy().into_owned())
}

#[test]
fn every_expected_signature_base_is_reproduced() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let mut checked = 0;
    let mut unbuildable = Vec::new();
    let mut mismatched = Vec::new();
    let mut mutated_params = Vec::new();
    for dir in ["webhook-signing", "request-signing"] {
        for path in adcp_vectors::json_files(&suite, dir) {
            let text = std::fs::read_to_string(&path).unwrap();
            let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            let Some(expected) = doc["expected_signature_base"].as_str() else {
                continue;
            };
            match base_for(&path, &doc) {
                Ok(got) if got == expected => checked += 1,
                Ok(got) if params_line_only_differs(&got, expected) && rejected_before_base(&doc) => {
                    // The vector removed a parameter from the wire (e.g.
                    // `expires`) but kept the sender's original base; a
                    // verifier rejects it at step 2, before any base exists.
                    mutated_params.push(path.display().to_string());
                }
                Ok(got) => {
                    eprintln!("MISMATCH {}\n got: {got:?}\nwant: {expected:?}", path.display());
                    mismatched.push(path.display().to_string());
                }
                Err(e) => {
                    // A base cannot exist when the signature metadata or the
                    // target URI itself is rejected; those vectors must be
                    // rejections at exactly that layer.
                    let code = doc["expected_outcome"]["error_code"].as_str().unwrap_or("");
                    assert!(
                        code.ends_with("_signature_header_malformed") || code.ends_with("_target_uri_malformed"),
                        "{}: {e} (vector expects {code:?})",
                        path.display()
                    );
                    unbuildable.push(path.file_name().map(|n| n.to_string_lossy().into_owned()));
                }
            }
        }
    }
    assert!(mismatched.is_empty(), "{mismatched:#?}");
    eprintln!(
        "{checked} bases reproduced; not buildable by design: {unbuildable:?}; wire params mutated after signing: {mutated_params:?}"
    );
    assert!(mutated_params.len() <= 2, "{mutated_params:#?}");
    assert!(
        checked >= 68,
        "only {checked} vectors with expected_signature_base reproduced"
    );
    assert!(
        unbuildable.len() <= 7,
        "too many vectors rejected before the base: {unbuildable:?}"
    );
}

fn params_line_only_differs(got: &str, expected: &str) -> bool {
    let strip = |s: &str| {
        s.rsplit_once("\n\"@signature-params\": ")
            .map(|(head, _)| head.to_owned())
    };
    strip(got).is_some() && strip(got) == strip(expected)
}

/// The vector expects rejection at a checklist step before base
/// construction (step 10).
fn rejected_before_base(doc: &serde_json::Value) -> bool {
    doc["expected_outcome"]["success"] == false
        && doc["expected_outcome"]["failed_step"].as_u64().is_some_and(|s| s < 10)
}
