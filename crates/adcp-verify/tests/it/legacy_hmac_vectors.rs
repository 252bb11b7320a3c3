//! The official `webhooks/webhook-hmac-sha256.json` fixture through the
//! legacy HMAC verifier, read at run time from the conformance suite (never
//! copied into the repository), with the clock pinned to each vector's
//! time. Every verifier-side case runs and its exact outcome is asserted;
//! the case counts are asserted too, so a fixture change is noticed.

use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::Message;
use adcp_verify::legacy::hmac::{HmacSecrets, HmacVerified, SecretSlot};
use adcp_verify::legacy::{BearerToken, ConfigError, Credential};
use adcp_verify::FixedClock;
use adcp_verify::{ErrorCode, Step, VerifyError};
use serde_json::Value;

const FILE: &str = "webhooks/webhook-hmac-sha256.json";

/// Positive vectors whose body is not JSON at all: the MAC verifies (the
/// rejection comes at step 14, after step 4), then the body is refused as
/// `webhook_body_malformed`. `empty-body` is empty; `null-bytes` carries a
/// raw U+0000 inside a string, which RFC 8259 forbids unescaped.
const NOT_JSON: [&str; 2] = ["empty-body", "null-bytes"];

/// This crate's code and step for each `rejection_vectors` id (the fixture
/// gives reasons, not codes).
const REJECTIONS: [(&str, ErrorCode, u8); 10] = [
    ("truncated-signature", ErrorCode::HeaderMalformed, 4),
    ("wrong-algorithm-prefix", ErrorCode::AlgNotAllowed, 4),
    ("empty-signature", ErrorCode::HeaderMalformed, 1),
    ("missing-signature", ErrorCode::HeaderMalformed, 1),
    ("timestamp-too-old", ErrorCode::WindowInvalid, 3),
    ("timestamp-too-future", ErrorCode::WindowInvalid, 3),
    ("non-numeric-timestamp", ErrorCode::HeaderMalformed, 2),
    ("body-tampered", ErrorCode::SignatureInvalid, 4),
    ("double-prefix", ErrorCode::HeaderMalformed, 4),
    ("signer-spaced-wire-compact", ErrorCode::SignatureInvalid, 4),
];

/// The clock for vectors that name no time and whose timestamp is not a
/// number (only `non-numeric-timestamp`): the time of every other vector.
const DEFAULT_NOW: i64 = 1_700_000_000;

fn fixture() -> Option<Value> {
    let dir = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}"))?;
    Some(adcp_vectors::load_json(&dir, FILE).unwrap_or_else(|e| panic!("{e}")))
}

fn array<'v>(v: &'v Value, key: &str) -> &'v [Value] {
    v[key].as_array().unwrap_or_else(|| panic!("{key} must be an array"))
}

fn text<'v>(v: &'v Value, key: &str) -> &'v str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} must be a string in {v}"))
}

/// The `X-ADCP-Timestamp` value a vector puts on the wire.
fn timestamp_header(v: &Value) -> String {
    match &v["timestamp"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        other => panic!("timestamp {other}"),
    }
}

/// The pinned clock: `current_time` if given, else the vector's timestamp.
fn now(v: &Value) -> i64 {
    v["current_time"]
        .as_i64()
        .or_else(|| v["timestamp"].as_i64())
        .unwrap_or(DEFAULT_NOW)
}

fn message<'a>(signature: Option<&'a str>, timestamp: &'a str, body: &'a str) -> Message<'a> {
    let mut msg = Message::request("POST", "https://buyer.example.com/webhooks/adcp")
        .with_header("Content-Type", "application/json")
        .with_header("X-ADCP-Timestamp", timestamp);
    if let Some(signature) = signature {
        msg.push_header("X-ADCP-Signature", signature);
    }
    msg.with_body(body.as_bytes())
}

fn assert_rejected(result: Result<HmacVerified, VerifyError>, code: ErrorCode, step: u8, id: &str) {
    let err = result.expect_err(id);
    assert_eq!((err.code(), err.step()), (code, Step::new(step)), "{id}: {err}");
    assert!(err.code_str().starts_with("webhook_"), "{id}: {}", err.code_str());
    assert!(!err.is_retryable(), "{id}");
}

#[test]
fn fixture_header() {
    let Some(f) = fixture() else { return };
    assert_eq!(f["version"], 1);
    assert_eq!(f["algorithm"], "HMAC-SHA256");
    assert_eq!(f["status"], "legacy");
    assert_eq!(array(&f, "vectors").len(), 15);
    assert_eq!(array(&f, "rejection_vectors").len(), REJECTIONS.len());
    assert_eq!(array(&f, "secret_rejection_vectors").len(), 4);
    assert_eq!(array(&f["signer_side"], "rejection_vectors").len(), 4);
    assert_eq!(array(&f["signer_side"], "positive_vectors").len(), 1);
    // The only verifier action the fixture defines for a vector.
    assert!(f["verifier_action_values"]["reject-malformed"].is_string());
}

/// `vectors`: the published signature is what HMAC-SHA256 over
/// `{timestamp}.{raw_body}` gives under the fixture secret (its ASCII
/// bytes), and the verifier's outcome is `accept`, or `reject-malformed`
/// where the fixture says so (and for the two non-JSON bodies).
#[test]
fn signature_vectors() {
    let Some(f) = fixture() else { return };
    let secret = text(&f, "secret");
    let secrets = HmacSecrets::new(secret).unwrap();
    let signer = SigningKey::hmac_sha256(secret.as_bytes()).unwrap();
    let (mut accepted, mut malformed) = (0, 0);
    for v in array(&f, "vectors") {
        let id = text(v, "id");
        let (ts, body, expected) = (timestamp_header(v), text(v, "raw_body"), text(v, "expected_signature"));

        // Signature-level conformance: the MAC input is the raw bytes.
        let mac = signer.sign(format!("{ts}.{body}").as_bytes()).unwrap();
        let hex: String = mac.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(format!("sha256={hex}"), expected, "{id}");

        let result = secrets.verify(&message(Some(expected), &ts, body), &FixedClock(now(v)));
        let action = v["expected_verifier_action"].as_str();
        if action == Some("reject-malformed") || NOT_JSON.contains(&id) {
            // Step 14 runs only after the MAC verified at step 4: the
            // failure class is malformed body, never signature mismatch.
            let err = result.expect_err(id);
            assert_eq!(
                (err.code(), err.step()),
                (ErrorCode::BodyMalformed, Step::new(14)),
                "{id}: {err}"
            );
            assert_eq!(err.code_str(), "webhook_body_malformed", "{id}");
            assert_eq!(err.code().http_status(), 400, "{id}");
            if let Some(code) = v["rfc9421_error_code"].as_str() {
                assert_eq!(err.code_str(), code, "{id}");
            }
            if NOT_JSON.contains(&id) {
                assert!(serde_json::from_str::<Value>(body).is_err(), "{id} is JSON after all");
            } else {
                assert!(err.detail().contains("duplicate"), "{id}: {}", err.detail());
            }
            malformed += 1;
        } else {
            assert_eq!(action, None, "{id}: unknown expected_verifier_action");
            let verified = result.unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(verified.timestamp, now(v), "{id}");
            assert_eq!(verified.secret, SecretSlot::Current, "{id}");
            accepted += 1;
        }
    }
    assert_eq!((accepted, malformed), (12, 3));
}

/// `vectors` under rotation: the fixture secret as the previous secret
/// still verifies (slot `Previous`), and under an unrelated secret nothing
/// does (`webhook_signature_invalid`, not `body_malformed`, even for the
/// duplicate-key body).
#[test]
fn signature_vectors_under_rotation() {
    let Some(f) = fixture() else { return };
    let secret = text(&f, "secret");
    let other = "an-unrelated-current-secret-0123456789abcdef";
    let rotated = HmacSecrets::new(other).unwrap().with_previous(secret).unwrap();
    let foreign = HmacSecrets::new(other).unwrap();
    for v in array(&f, "vectors") {
        let id = text(v, "id");
        let (ts, body) = (timestamp_header(v), text(v, "raw_body"));
        let msg = message(Some(text(v, "expected_signature")), &ts, body);
        let clock = FixedClock(now(v));
        match rotated.verify(&msg, &clock) {
            Ok(verified) => assert_eq!(verified.secret, SecretSlot::Previous, "{id}"),
            Err(e) => assert_eq!(e.code(), ErrorCode::BodyMalformed, "{id}: {e}"),
        }
        assert_rejected(foreign.verify(&msg, &clock), ErrorCode::SignatureInvalid, 4, id);
    }
}

/// `rejection_vectors`: each is rejected with its code and step.
#[test]
fn rejection_vectors() {
    let Some(f) = fixture() else { return };
    let secrets = HmacSecrets::new(text(&f, "secret")).unwrap();
    let vectors = array(&f, "rejection_vectors");
    for v in vectors {
        let id = text(v, "id");
        let &(_, code, step) = REJECTIONS
            .iter()
            .find(|(name, ..)| *name == id)
            .unwrap_or_else(|| panic!("rejection vector {id} has no expected code"));
        let ts = timestamp_header(v);
        let msg = message(v["signature"].as_str(), &ts, text(v, "raw_body"));
        assert_rejected(secrets.verify(&msg, &FixedClock(now(v))), code, step, id);
    }
    for (name, ..) in REJECTIONS {
        assert!(
            vectors.iter().any(|v| v["id"] == name),
            "{name} is gone from the fixture"
        );
    }
}

/// `secret_rejection_vectors`: refused when configured (HMAC secrets and,
/// under the same policy, Bearer tokens).
#[test]
fn secret_rejection_vectors() {
    let Some(f) = fixture() else { return };
    let vectors = array(&f, "secret_rejection_vectors");
    for v in vectors {
        let secret = text(v, "secret");
        let hmac = HmacSecrets::new(secret).unwrap_err();
        let bearer = BearerToken::new(secret).unwrap_err();
        if secret.len() < 32 {
            let short = |credential| ConfigError::TooShort {
                credential,
                minimum: 32,
                actual: secret.len(),
            };
            assert_eq!(hmac, short(Credential::HmacSecret), "{secret:?}");
            assert_eq!(bearer, short(Credential::BearerToken), "{secret:?}");
        } else {
            assert_eq!(
                hmac,
                ConfigError::Weak {
                    credential: Credential::HmacSecret
                },
                "{secret:?}"
            );
            assert_eq!(
                bearer,
                ConfigError::Weak {
                    credential: Credential::BearerToken
                },
                "{secret:?}"
            );
        }
        // Nor as a previous or rotated-in secret.
        let good = HmacSecrets::new(text(&f, "secret")).unwrap();
        assert!(good.clone().with_previous(secret).is_err(), "{secret:?}");
        assert!(good.rotate(secret, 0).is_err(), "{secret:?}");
    }
}

/// `signer_side` is the signer's fixture, but its bodies also exercise the
/// verifier's step 14: signed correctly, every duplicate-key input (top
/// level, nested, inside an array, three deep) is `webhook_body_malformed`
/// and the clean input is accepted.
#[test]
fn signer_side_bodies_at_the_verifier() {
    let Some(f) = fixture() else { return };
    let secret = text(&f, "secret");
    let secrets = HmacSecrets::new(secret).unwrap();
    let signer = SigningKey::hmac_sha256(secret.as_bytes()).unwrap();
    let ts = DEFAULT_NOW.to_string();
    let sign = |body: &str| {
        let mac = signer.sign(format!("{ts}.{body}").as_bytes()).unwrap();
        format!(
            "sha256={}",
            mac.as_bytes().iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    };
    let side = &f["signer_side"];
    for v in array(side, "rejection_vectors") {
        assert_eq!(v["expected_signer_action"], "reject-input-before-sign");
        let body = text(v, "signer_input_body");
        let sig = sign(body);
        let result = secrets.verify(&message(Some(&sig), &ts, body), &FixedClock(DEFAULT_NOW));
        assert_rejected(result, ErrorCode::BodyMalformed, 14, text(v, "id"));
    }
    for v in array(side, "positive_vectors") {
        assert_eq!(v["expected_signer_action"], "sign-and-emit");
        let body = text(v, "signer_input_body");
        let sig = sign(body);
        let verified = secrets.verify(&message(Some(&sig), &ts, body), &FixedClock(DEFAULT_NOW));
        assert!(verified.is_ok(), "{}: {verified:?}", text(v, "id"));
    }
}
