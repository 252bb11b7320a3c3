//! The relay's `POST /v1/events` parser on arbitrary bodies: it must never
//! panic, must be deterministic, and whatever it accepts must carry a body
//! that is a JSON object with the idempotency_key it reports.
#![no_main]
#![forbid(unsafe_code)]

use adcp_outbox::relay::parse_event_request;
use adcp_webhook::DestinationPolicy;
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;

fuzz_target!(|data: &[u8]| {
    let scopes: HashSet<String> = ["default".to_owned(), "tenant-2".to_owned()].into();
    let policy = DestinationPolicy::default();
    let first = parse_event_request(data, &policy, &scopes);
    let second = parse_event_request(data, &policy, &scopes);
    match (&first, &second) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.destination(), b.destination());
            assert_eq!(a.notification_type(), b.notification_type());
            assert!(!a.idempotency_key().is_empty());
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.code, b.code);
            assert_eq!(a.status, b.status);
        }
        _ => panic!("parse is not deterministic"),
    }
});
