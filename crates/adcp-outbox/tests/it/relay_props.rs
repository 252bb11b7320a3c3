//! Property tests of the relay's request parser: arbitrary bodies and
//! arbitrary mutations of a valid one never panic, and a refusal is always
//! a 4xx with a code.

use adcp_outbox::relay::parse_event_request;
use adcp_webhook::DestinationPolicy;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::HashSet;

fn scopes() -> HashSet<String> {
    ["default".to_owned()].into()
}

fn valid() -> Value {
    json!({
        "destination": {"url": "https://buyer.example/hooks/op_1", "operation_id": "op_1"},
        "payload": {"task_id": "t1", "task_type": "create_media_buy", "status": "completed",
                    "timestamp": "2026-04-18T12:00:00Z", "operation_id": "op_1", "result": {"media_buy_id": "mb_1"}},
        "principal": "buyer-1",
        "resources": ["media_buy:mb_1"]
    })
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[ -~]{0,24}".prop_map(Value::from),
        Just(json!({})),
        Just(json!([])),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Err(e) = parse_event_request(&bytes, &DestinationPolicy::default(), &scopes()) {
            prop_assert!(e.status.is_client_error());
            prop_assert!(!e.code.is_empty());
        }
    }

    #[test]
    fn mutated_requests_are_accepted_or_refused_with_a_code(
        path in proptest::sample::select(vec![
            "/destination", "/destination/url", "/destination/operation_id", "/destination/token",
            "/destination/authentication", "/payload", "/payload/task_id", "/payload/status",
            "/payload/operation_id", "/payload/idempotency_key", "/payload/result", "/principal",
            "/resources", "/notification_type", "/coalescing_key", "/coalescing_window_seconds",
            "/signing_scope", "/payload/notification_type",
        ]),
        value in leaf(),
    ) {
        let mut request = valid();
        let (parent, key) = path.rsplit_once('/').unwrap_or(("", path));
        if let Some(Value::Object(o)) = request.pointer_mut(if parent.is_empty() { "" } else { parent }) {
            o.insert(key.to_owned(), value);
        }
        let bytes = serde_json::to_vec(&request).unwrap_or_default();
        match parse_event_request(&bytes, &DestinationPolicy::default(), &scopes()) {
            Ok(event) => prop_assert!(!event.idempotency_key().is_empty()),
            Err(e) => {
                prop_assert_eq!(e.status.as_u16(), 400);
                prop_assert!(!e.message.is_empty());
            }
        }
    }
}
