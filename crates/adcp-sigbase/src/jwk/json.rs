//! Reading untrusted JWK / JWK Set bytes: size cap, `serde_json`, then the
//! strict JSON check.

use serde_json::Value;

use super::JwkError;

/// Parses `bytes` as one JSON value: the size cap, then `serde_json` (syntax
/// errors are [`JwkError::Json`] with a position), then the strict check
/// (duplicate member names and anything else it refuses are
/// [`JwkError::StrictJson`]).
pub(super) fn parse(bytes: &[u8], max_len: usize) -> Result<Value, JwkError> {
    if bytes.len() > max_len {
        return Err(JwkError::TooLarge {
            limit: max_len,
            actual: bytes.len(),
        });
    }
    let value = serde_json::from_slice(bytes).map_err(|e| JwkError::Json {
        line: e.line(),
        column: e.column(),
    })?;
    reject_duplicate_keys(bytes)?;
    Ok(value)
}

/// The one place raw JWK / JWK Set bytes are checked for duplicate object
/// member names, which `serde_json` silently resolves to the last one (so
/// `{"alg":"ES256","alg":"EdDSA"}` would read as `EdDSA`). The size cap has
/// already been applied.
fn reject_duplicate_keys(bytes: &[u8]) -> Result<(), JwkError> {
    adcp_strict_json::check(bytes, &adcp_strict_json::Limits::new(bytes.len())).map_err(|_| JwkError::StrictJson)
}
