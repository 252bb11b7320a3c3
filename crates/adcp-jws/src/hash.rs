//! `authorized_payload_hash`: the business payload's binding.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The top-level members left out of the payload hash, exactly these two.
pub const EXCLUDED_MEMBERS: [&str; 2] = ["governance_context", "context"];

/// `base64url_no_pad(SHA-256(JCS(payload without top-level
/// governance_context and context)))`. Every other member, including
/// `idempotency_key`, stays bound. A payload that is not an object is
/// hashed as it is.
///
/// ```
/// let payload = serde_json::json!({"amount": 1, "context": {"trace": "x"}});
/// assert_eq!(adcp_jws::payload_hash(&payload), adcp_jws::payload_hash(&serde_json::json!({"amount": 1})));
/// ```
#[must_use]
pub fn payload_hash(payload: &Value) -> String {
    let canonical = match payload {
        Value::Object(map) => {
            let mut business = map.clone();
            for name in EXCLUDED_MEMBERS {
                business.remove(name);
            }
            adcp_strict_json::jcs::canonicalize(&Value::Object(business))
        }
        other => adcp_strict_json::jcs::canonicalize(other),
    };
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// Parses a received task request strictly (duplicate member names are
/// refused, as everywhere in AdCP), ready for [`payload_hash`].
///
/// # Errors
///
/// The strict-JSON error when the bytes are not one JSON value without
/// duplicate member names.
pub fn parse_payload(bytes: &[u8]) -> Result<Value, adcp_strict_json::StrictJsonError> {
    adcp_strict_json::parse_value(bytes, &adcp_strict_json::Limits::default())
}
