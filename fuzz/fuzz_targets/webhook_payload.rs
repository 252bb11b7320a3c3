//! The webhook payload classifier on arbitrary bodies: every channel,
//! both acceptance modes. It must never panic, must be deterministic, and
//! whatever it accepts must serialize back to the value it read.
#![no_main]
#![forbid(unsafe_code)]

use adcp_strict_json::{parse_value, Limits};
use adcp_webhook::payload::{AcceptKinds, Channel, WebhookPayload};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The receiver parses once, with duplicate keys refused, before
    // classifying; do the same so inputs look like what it sees.
    let Ok(value) = parse_value(data, &Limits::default()) else {
        return;
    };
    let channels = std::iter::once(None).chain(Channel::ALL.into_iter().map(Some));
    for channel in channels {
        for accept in [AcceptKinds::All, AcceptKinds::NamedOnly] {
            let first = WebhookPayload::classify(&value, channel, accept);
            assert_eq!(first, WebhookPayload::classify(&value, channel, accept));
            if let Ok(payload) = first {
                assert_eq!(serde_json::to_value(&payload).ok().as_ref(), Some(&value));
                if let Some(channel) = channel {
                    assert!(channel.carries(payload.kind()));
                }
            }
        }
    }
});
