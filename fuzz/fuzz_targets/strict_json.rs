//! Strict JSON checking. Checks more than "no panic": whatever `check`
//! accepts, `serde_json` accepts too (the check is never laxer than the
//! parser behind `parse_value`), `parse_value` returns exactly serde_json's
//! value, and serde_json's re-serialization of it (compact and pretty) is
//! accepted again. Duplicate reports stay within the step 14b bounds.
#![no_main]
#![forbid(unsafe_code)]

use adcp_strict_json::{check, parse_value, Limits, StrictJsonError, MAX_KEY_NAME_BYTES, MAX_REPORTED_KEYS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    let result = check(data, &limits);
    match &result {
        Ok(()) => {
            let value: serde_json::Value = match serde_json::from_slice(data) {
                Ok(v) => v,
                Err(e) => panic!("check accepted what serde_json refuses: {e}"),
            };
            assert_eq!(parse_value(data, &limits).ok().as_ref(), Some(&value));
            let compact = serde_json::to_vec(&value).expect("serialize");
            assert_eq!(check(&compact, &limits), Ok(()), "compact re-serialization refused");
            let pretty = serde_json::to_vec_pretty(&value).expect("serialize");
            assert_eq!(check(&pretty, &limits), Ok(()), "pretty re-serialization refused");
        }
        Err(StrictJsonError::DuplicateKeys(d)) => {
            assert!(!d.names().is_empty() && d.names().len() <= MAX_REPORTED_KEYS);
            assert!(d.total() >= d.names().len());
            assert!(d.first_offset() < data.len());
            for name in d.names() {
                assert!(name.len() <= MAX_KEY_NAME_BYTES);
                assert!(!name.chars().any(adcp_strict_json::is_non_printable));
            }
            assert_eq!(d.overflow_marker().is_some(), d.total() > MAX_REPORTED_KEYS);
            // serde_json collapses duplicates silently: it must have parsed.
            assert!(serde_json::from_slice::<serde_json::Value>(data).is_ok());
            assert_eq!(parse_value(data, &limits).err(), result.clone().err());
        }
        Err(StrictJsonError::Syntax { offset, .. }) | Err(StrictJsonError::StringTooLong { offset, .. }) => {
            assert!(*offset <= data.len());
        }
        Err(_) => {}
    }
    // Tight limits exercise the limit paths; they never make a document
    // acceptable that the defaults refuse.
    let tight = Limits::new(256).with_max_depth(4).with_max_string_len(8);
    if check(data, &tight).is_ok() {
        assert!(result.is_ok());
    }
});
