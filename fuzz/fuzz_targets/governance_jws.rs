//! The governance compact-JWS parser (checklist steps 1–4) and the exact
//! decimal amounts. Checks more than "no panic": an accepted token obeys
//! every header rule the parser promises (size cap, non-empty `kid`,
//! allowlisted `alg`, exact `typ`, each critical marker `true` and present
//! with its `crit` entry and claim, task and payload hash as a pair), and
//! an accepted amount is a fixed point of its normal form.
#![no_main]
#![forbid(unsafe_code)]

use adcp_jws::{parse_compact, Amount, CRITICAL_CLAIMS, MAX_TOKEN_LEN, TYP};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(token) = parse_compact(text) {
        assert!(text.len() <= MAX_TOKEN_LEN);
        assert!(!token.kid().is_empty());
        assert!(matches!(token.header()["alg"].as_str(), Some("EdDSA" | "ES256")));
        assert_eq!(token.header()["typ"].as_str(), Some(TYP));
        let crit: Vec<&str> = token
            .header()
            .get("crit")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(crit.iter().all(|c| CRITICAL_CLAIMS.contains(c)));
        for name in CRITICAL_CLAIMS {
            let marker = token.header().get(name);
            assert!(marker.is_none() || marker == Some(&Value::Bool(true)));
            assert_eq!(marker.is_some(), crit.contains(&name));
            assert_eq!(marker.is_some(), token.claims().contains_key(name));
        }
        assert_eq!(
            token.claims().contains_key("authorized_task"),
            token.claims().contains_key("authorized_payload_hash")
        );
        let _ = adcp_jws::payload_hash(&Value::Object(token.claims().clone()));
    }
    if let Ok(amount) = text.parse::<Amount>() {
        let normal = amount.to_string();
        assert_eq!(normal.parse::<Amount>().ok(), Some(amount), "normal form is not a fixed point");
    }
});
