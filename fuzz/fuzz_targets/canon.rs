//! URL identity canonicalization, both entry points, plus the authority
//! header paths. Checks more than "no panic": every accepted input is a
//! fixed point, ASCII input gets the same answer from both entry points,
//! and the output is ASCII and never longer than the input plus one byte
//! (ASCII) or a bounded expansion (producer, non-ASCII).
#![no_main]
#![forbid(unsafe_code)]

use adcp_canon::{
    canonicalize, canonicalize_authority_header, canonicalize_origin, canonicalize_received, derive_authority,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let received = canonicalize_received(data);
    if let Ok(url) = &received {
        assert!(url.as_str().is_ascii());
        assert!(url.as_str().len() <= data.len() + 1);
        let again = canonicalize_received(url.as_str()).expect("canonical output must be accepted");
        assert_eq!(again.as_str(), url.as_str(), "not idempotent");
        assert_eq!(
            derive_authority(url, None, Some(url.authority().as_bytes())).ok(),
            Some(url.authority())
        );
    }
    let _ = canonicalize_authority_header(data, "https");
    if let Ok(s) = std::str::from_utf8(data) {
        let produced = canonicalize(s);
        if s.is_ascii() {
            assert_eq!(
                produced.as_ref().map(|u| u.as_str()).map_err(|e| e.kind()),
                received.as_ref().map(|u| u.as_str()).map_err(|e| e.kind()),
                "entry points disagree on ASCII input"
            );
        }
        if let Ok(url) = &produced {
            let again = canonicalize(url.as_str()).expect("canonical output must be accepted");
            assert_eq!(again.as_str(), url.as_str(), "not idempotent (producer)");
        }
        let _ = canonicalize_origin(s);
    }
});
