//! The legacy HMAC-SHA256 signer against
//! `webhooks/webhook-hmac-sha256.json`: the signer-side fixtures, the
//! signatures of every vector, the secret rejections, and the deprecation
//! warning.

use adcp_sign::{Body, FixedClock, LegacyHmacSigner, WebhookEvent};
use serde_json::Value;

fn fixture() -> Option<Value> {
    let suite = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}"))?;
    Some(adcp_vectors::load_json(&suite, "webhooks/webhook-hmac-sha256.json").unwrap())
}

fn signer(doc: &Value) -> LegacyHmacSigner {
    LegacyHmacSigner::new(doc["secret"].as_str().unwrap().as_bytes()).unwrap()
}

fn array<'a>(value: &'a Value, what: &str) -> &'a Vec<Value> {
    value.as_array().unwrap_or_else(|| panic!("{what} is not an array"))
}

#[test]
fn signer_side_rejection_vectors_are_rejected_with_duplicate_key_input() {
    let Some(doc) = fixture() else { return };
    let vectors = array(&doc["signer_side"]["rejection_vectors"], "rejection_vectors");
    assert_eq!(vectors.len(), 4);
    for vector in vectors {
        let id = vector["id"].as_str().unwrap();
        assert_eq!(vector["expected_signer_action"], "reject-input-before-sign", "{id}");
        let input = vector["signer_input_body"].as_str().unwrap();
        // Refused when the body is built: the signers take only a `Body`, so
        // no MAC is computed and no header is produced for this input.
        let err = Body::from_json_bytes(input).unwrap_err();
        assert_eq!(err.code(), "duplicate_key_input", "{id}");
        assert_eq!(err.to_string().split(':').next(), Some("duplicate_key_input"), "{id}");
        let names = err.duplicate_keys().unwrap().names().to_vec();
        assert_eq!(names.len(), 1, "{id}");
        assert!(input.contains(&format!("\"{}\"", names[0])), "{id}: {names:?}");
        // Same through the webhook event path.
        assert_eq!(
            WebhookEvent::from_json_bytes(input).unwrap_err().code(),
            "duplicate_key_input",
            "{id}"
        );
    }
}

#[test]
fn signer_side_clean_input_is_signed_and_emitted() {
    let Some(doc) = fixture() else { return };
    let vectors = array(&doc["signer_side"]["positive_vectors"], "positive_vectors");
    assert_eq!(vectors.len(), 1);
    let signer = signer(&doc).with_clock(FixedClock(1_700_000_000));
    for vector in vectors {
        let id = vector["id"].as_str().unwrap();
        assert_eq!(vector["expected_signer_action"], "sign-and-emit", "{id}");
        let input = vector["signer_input_body"].as_str().unwrap();
        let body = Body::from_json_bytes(input).unwrap();
        let signed = signer.sign(&body).unwrap();
        assert_eq!(signed.body().as_str(), input, "{id}: bytes unchanged");
        assert_eq!(signed.timestamp(), 1_700_000_000);
        let [(sig_name, sig), (ts_name, ts)] = signed.headers();
        assert_eq!((sig_name, ts_name), ("X-ADCP-Signature", "X-ADCP-Timestamp"));
        assert_eq!(ts, "1700000000");
        assert_eq!(sig, signer.signature(1_700_000_000, input.as_bytes()).unwrap());
        assert_eq!(sig.len(), "sha256=".len() + 64);
    }
}

#[test]
fn the_signer_reproduces_every_vector_signature() {
    let Some(doc) = fixture() else { return };
    let vectors = array(&doc["vectors"], "vectors");
    assert_eq!(vectors.len(), 15);
    let signer = signer(&doc);
    let mut through_body = 0;
    for vector in vectors {
        let id = vector["id"].as_str().unwrap();
        let ts = vector["timestamp"].as_i64().unwrap();
        let raw = vector["raw_body"].as_str().unwrap();
        let expected = vector["expected_signature"].as_str().unwrap();
        // The bare MAC, over the raw bytes as-is.
        assert_eq!(signer.signature(ts, raw.as_bytes()).unwrap(), expected, "{id}");
        // The sending path: every body that is strict JSON signs to the
        // same value; the duplicate-key body cannot be built.
        match Body::from_json_bytes(raw) {
            Ok(body) => {
                assert_eq!(signer.sign_at(&body, ts).unwrap().signature(), expected, "{id}");
                through_body += 1;
            }
            Err(e) if id == "duplicate-keys-conflicting-values" => assert_eq!(e.code(), "duplicate_key_input"),
            // Not JSON at all: an empty body and a raw NUL in a string.
            Err(e) => {
                assert!(matches!(id, "empty-body" | "null-bytes"), "{id}: {e}");
                assert_eq!(e.code(), "invalid_json_input", "{id}");
            }
        }
    }
    assert_eq!(through_body, 12);
}

#[test]
fn weak_and_short_secrets_are_rejected_at_configuration_time() {
    let Some(doc) = fixture() else { return };
    let vectors = array(&doc["secret_rejection_vectors"], "secret_rejection_vectors");
    assert_eq!(vectors.len(), 4);
    for vector in vectors {
        let secret = vector["secret"].as_str().unwrap();
        let err = LegacyHmacSigner::new(secret.as_bytes()).unwrap_err();
        let expected = if secret.len() < 32 {
            "hmac_secret_too_short"
        } else {
            "hmac_secret_weak"
        };
        assert_eq!(err.code(), expected, "{}", vector["description"]);
    }
    let err = LegacyHmacSigner::new(&[7_u8; 31]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "hmac_secret_too_short: HMAC secret of 31 bytes, at least 32 required"
    );
}

#[test]
fn negative_timestamps_are_refused_and_debug_hides_the_secret() {
    let signer = LegacyHmacSigner::new(b"0123456789abcdef0123456789abcdef").unwrap();
    assert_eq!(signer.signature(-1, b"{}").unwrap_err().code(), "timestamp_invalid");
    let debug = format!("{signer:?}");
    assert!(!debug.contains("0123456789"), "{debug}");
    assert!(debug.contains("REDACTED"));
}
