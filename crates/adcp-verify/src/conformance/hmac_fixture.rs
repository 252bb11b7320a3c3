//! `webhooks/webhook-hmac-sha256.json` (legacy HMAC scheme): every
//! verifier-side case and the signer-side input-validation cases.

use super::runner::Outcome;
use super::vector::Expected;
use crate::clock::FixedClock;
use crate::legacy::hmac::HmacSecrets;
use adcp_sigbase::Message;
use std::path::Path;

/// Relative path of the fixture in the suite.
pub(super) const FILE: &str = "webhooks/webhook-hmac-sha256.json";

/// Runs the fixture. Cases: `vectors` (the published MAC verifies; the
/// duplicate-key body ends in `webhook_body_malformed`), `rejection_vectors`
/// (rejected before step 14), `secret_rejection_vectors` (refused at
/// configuration), `signer_side` (duplicate-key input refused with
/// `duplicate_key_input`, clean input accepted).
pub(super) fn run(suite: &Path) -> Vec<Outcome> {
    let doc = match adcp_vectors::load_json(suite, FILE) {
        Ok(doc) => doc,
        Err(e) => return vec![not_run(FILE.to_owned(), e)],
    };
    let mut out = Vec::new();
    let secret = doc["secret"].as_str().unwrap_or_default();
    let secrets = match HmacSecrets::new(secret) {
        Ok(s) => s,
        Err(e) => return vec![not_run(format!("{FILE}#secret"), e.to_string())],
    };
    let list = |key: &str| doc[key].as_array().cloned().unwrap_or_default();

    for v in list("vectors") {
        let id = v["id"].as_str().unwrap_or("?");
        let malformed_expected = v["expected_verifier_action"] == "reject-malformed";
        let signature = v["expected_signature"].as_str();
        let result = verify(&secrets, &v, signature);
        // The MAC is valid for every vector: success, or a body rejection
        // at step 14 (after the MAC verified).
        let mac_ok = match &result {
            Ok(()) => true,
            Err((_, step, _)) => step == "14",
        };
        let passed = if malformed_expected {
            matches!(&result, Err((code, _, _)) if code == "webhook_body_malformed")
        } else {
            mac_ok
        };
        out.push(outcome(
            format!("{FILE}#vectors/{id}"),
            if malformed_expected {
                Expected::Reject {
                    code: "webhook_body_malformed".into(),
                    step: Some(14),
                }
            } else {
                Expected::Accept
            },
            result,
            passed,
        ));
    }
    for v in list("rejection_vectors") {
        let id = v["id"].as_str().unwrap_or("?");
        let result = verify(&secrets, &v, v["signature"].as_str());
        let passed = matches!(&result, Err((_, step, _)) if step != "14");
        out.push(outcome(
            format!("{FILE}#rejection_vectors/{id}"),
            Expected::Reject {
                code: "webhook_signature_*".into(),
                step: None,
            },
            result,
            passed,
        ));
    }
    for (i, v) in list("secret_rejection_vectors").iter().enumerate() {
        let refused = HmacSecrets::new(v["secret"].as_str().unwrap_or_default()).is_err();
        out.push(outcome(
            format!("{FILE}#secret_rejection_vectors/{i}"),
            Expected::Reject {
                code: "configuration_rejected".into(),
                step: Some(0),
            },
            if refused {
                Err(("configuration_rejected".into(), "0".into(), String::new()))
            } else {
                Ok(())
            },
            refused,
        ));
    }
    let signer = &doc["signer_side"];
    for (section, reject) in [("rejection_vectors", true), ("positive_vectors", false)] {
        for v in signer[section].as_array().cloned().unwrap_or_default() {
            let id = v["id"].as_str().unwrap_or("?");
            let input = v["signer_input_body"].as_str().unwrap_or_default();
            let check = adcp_strict_json::check(input.as_bytes(), &adcp_strict_json::Limits::default());
            let result = match &check {
                Ok(()) => Ok(()),
                Err(e) => Err((e.error_code().to_owned(), "0".to_owned(), e.to_string())),
            };
            let passed = if reject {
                matches!(&result, Err((code, _, _)) if code == "duplicate_key_input")
            } else {
                result.is_ok()
            };
            out.push(outcome(
                format!("{FILE}#signer_side/{section}/{id}"),
                if reject {
                    Expected::Reject {
                        code: "duplicate_key_input".into(),
                        step: Some(0),
                    }
                } else {
                    Expected::Accept
                },
                result,
                passed,
            ));
        }
    }
    out
}

type Got = Result<(), (String, String, String)>;

fn verify(secrets: &HmacSecrets, v: &serde_json::Value, signature: Option<&str>) -> Got {
    let timestamp = match &v["timestamp"] {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => s.clone(),
        _ => String::new(),
    };
    let now = v["current_time"]
        .as_i64()
        .or_else(|| v["timestamp"].as_i64())
        .unwrap_or(1_700_000_000);
    let body = v["raw_body"].as_str().unwrap_or_default();
    let mut msg = Message::request("POST", "https://buyer.example.com/webhooks/adcp")
        .with_header("Content-Type", "application/json")
        .with_header("X-ADCP-Timestamp", timestamp.as_str());
    if let Some(sig) = signature {
        msg.push_header("X-ADCP-Signature", sig);
    }
    let msg = msg.with_body(body.as_bytes());
    secrets
        .verify(&msg, &FixedClock(now))
        .map(|_| ())
        .map_err(|e| (e.code_str().to_owned(), e.step().to_string(), e.detail().to_owned()))
}

fn outcome(relative: String, expected: Expected, got: Got, passed: bool) -> Outcome {
    let detail = match &got {
        Err((_, _, d)) => d.clone(),
        Ok(()) => String::new(),
    };
    Outcome {
        relative,
        expected,
        got: got.map(|()| "hmac".to_owned()).map_err(|(c, s, _)| (c, s)),
        passed,
        detail,
    }
}

fn not_run(relative: String, detail: String) -> Outcome {
    Outcome {
        relative,
        expected: Expected::Accept,
        got: Err(("not_run".into(), "-".into())),
        passed: false,
        detail,
    }
}
