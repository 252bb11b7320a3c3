//! URN parsing and equivalence: no panics, the key is a fixed point and
//! every URN is equivalent to itself.
#![no_main]
#![forbid(unsafe_code)]

use adcp_canon::urn::Urn;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(urn) = Urn::parse(s) {
        assert!(urn.is_equivalent(&urn));
        let key = urn.equivalence_key();
        let reparsed = Urn::parse(key.as_str()).expect("key must parse");
        assert_eq!(reparsed.equivalence_key(), key);
        assert!(reparsed.is_equivalent(&urn));
    }
});
