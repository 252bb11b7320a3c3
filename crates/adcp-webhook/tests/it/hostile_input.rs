//! Untrusted input never panics: arbitrary bodies, headers and JSON through
//! the receiver, the envelope check, extraction and the canonical form.

use crate::common::*;
use adcp_sign::Algorithm;
use adcp_strict_json::jcs;
use adcp_webhook::check_mcp_envelope;
use adcp_webhook::parse_retry_after;
use adcp_webhook::{detect_format, extract, PayloadFormat};
use adcp_webhook::{Decision, Receiver};
use bytes::Bytes;
use proptest::prelude::*;
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| Value::from(i64::from(n))),
        (-1e30_f64..1e30).prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "\\PC{0,12}".prop_map(Value::String),
        // Any characters, controls, quotes and backslashes included.
        prop::collection::vec(any::<char>(), 0..8).prop_map(|c| Value::String(c.into_iter().collect())),
        prop_oneof![
            Just("completed"),
            Just("working"),
            Just("TASK_STATE_WORKING"),
            Just("data")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("status".to_owned()),
                    Just("state".to_owned()),
                    Just("task_id".to_owned()),
                    Just("idempotency_key".to_owned()),
                    Just("artifacts".to_owned()),
                    Just("parts".to_owned()),
                    Just("data".to_owned()),
                    Just("kind".to_owned()),
                    Just("message".to_owned()),
                    Just("task".to_owned()),
                    Just("result".to_owned()),
                    "\\PC{0,6}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn payload_functions_never_panic(v in json_value()) {
        let _ = check_mcp_envelope(&v);
        let _ = detect_format(&v);
        let _ = extract(&v, None);
        let _ = extract(&v, Some(PayloadFormat::Mcp));
        let _ = extract(&v, Some(PayloadFormat::A2a));
    }

    #[test]
    fn canonical_form_parses_back_to_the_same_value(v in json_value()) {
        let text = jcs::canonicalize(&v);
        let back: Value = serde_json::from_str(&text).unwrap();
        // Numbers compare as doubles: JCS writes every number as one.
        prop_assert_eq!(jcs::canonicalize(&back), text);
        prop_assert_eq!(jcs::fingerprint(&back), jcs::fingerprint(&v));
    }

    #[test]
    fn retry_after_never_panics(s in "\\PC{0,40}") {
        let _ = parse_retry_after(&s, std::time::SystemTime::now());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn receiver_answers_hostile_requests_without_dispatching(
        body in prop::collection::vec(any::<u8>(), 0..512),
        headers in prop::collection::vec(
            (prop_oneof![
                Just("signature-input".to_owned()),
                Just("signature".to_owned()),
                Just("content-digest".to_owned()),
                Just("content-type".to_owned()),
                Just("x-adcp-signature".to_owned()),
                Just("authorization".to_owned()),
                Just("content-length".to_owned()),
                "[a-z-]{1,12}",
            ], "[ -~]{0,80}"),
            0..6,
        ),
        path in "/[a-zA-Z0-9%/?=&._-]{0,30}",
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (_, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-hostile");
        let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency()).build().unwrap();
        let mut builder = http::Request::post(path.as_str()).header("host", "buyer.example");
        for (name, value) in &headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Ok(request) = builder.body(Bytes::from(body)) {
            let decision = runtime.block_on(receiver.decide(request));
            // Nothing unsigned is ever dispatched.
            prop_assert!(matches!(decision, Decision::Reply(_)));
        }
    }
}
