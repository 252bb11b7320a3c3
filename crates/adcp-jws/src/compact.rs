//! Checklist steps 1 to 4: the compact serialization, `alg`, `typ`, `crit`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, GovError};

/// The protected-header `typ` of a governance token, matched byte for byte.
pub const TYP: &str = "adcp-gov+jws";

/// Longest token accepted: the spec's 4096-character envelope limit.
pub const MAX_TOKEN_LEN: usize = 4096;

/// The authorization-changing claims, each with a same-named boolean
/// protected-header marker and a `crit` entry, in the order issuance
/// lists them.
pub const CRITICAL_CLAIMS: [&str; 3] = ["authorized_commitment", "authorized_task", "authorized_payload_hash"];

/// The header `alg` values the profile allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JwsAlgorithm {
    /// Ed25519 (`EdDSA`).
    EdDsa,
    /// ECDSA P-256 SHA-256 (`ES256`).
    Es256,
}

impl JwsAlgorithm {
    /// The header value.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::EdDsa => "EdDSA",
            Self::Es256 => "ES256",
        }
    }
}

/// A governance token that passed steps 1 to 4: well-formed compact JWS,
/// allowed `alg`, exact `typ`, every `crit` extension understood and each
/// critical marker, `crit` entry and claim present together. Nothing in it
/// is authenticated yet.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedToken {
    pub(crate) alg: JwsAlgorithm,
    pub(crate) kid: String,
    pub(crate) header: Map<String, Value>,
    pub(crate) claims: Map<String, Value>,
    pub(crate) signing_input: String,
    pub(crate) signature_b64: String,
}

impl ParsedToken {
    /// The header `alg`.
    #[must_use]
    pub const fn alg(&self) -> JwsAlgorithm {
        self.alg
    }

    /// The header `kid`.
    #[must_use]
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The protected header.
    #[must_use]
    pub const fn header(&self) -> &Map<String, Value> {
        &self.header
    }

    /// The claims (unverified until the signature is).
    #[must_use]
    pub const fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }

    /// A string claim, if present and a string.
    #[must_use]
    pub fn claim_str(&self, name: &str) -> Option<&str> {
        self.claims.get(name).and_then(Value::as_str)
    }
}

fn invalid(step: u8, detail: impl Into<String>) -> GovError {
    GovError::new(ErrorCode::TokenInvalid, step, detail)
}

/// Strict unpadded base64url: the alphabet only, and the canonical
/// encoding of the bytes (no stray trailing bits).
fn decode_segment(segment: &str, what: &str) -> Result<Vec<u8>, GovError> {
    if segment.is_empty() {
        return Err(invalid(1, format!("{what} segment is empty")));
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(segment)
        .map_err(|_| invalid(1, format!("{what} segment is not unpadded base64url")))?;
    Ok(bytes)
}

fn json_object(bytes: &[u8], what: &str) -> Result<Map<String, Value>, GovError> {
    let limits = adcp_strict_json::Limits::default();
    match adcp_strict_json::parse_value(bytes, &limits) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(invalid(1, format!("{what} is not a JSON object"))),
        Err(e) => Err(invalid(1, format!("{what} is not strict JSON: {e}"))),
    }
}

/// Checklist steps 1 to 4 on a compact token.
///
/// # Errors
///
/// `governance_token_invalid` at step 1 (not three strict base64url
/// segments of strict JSON objects — duplicate member names included —,
/// no string `kid`, over [`MAX_TOKEN_LEN`]), 2 (`alg` not `EdDSA`/`ES256`),
/// 3 (`typ` not exactly [`TYP`]) or 4 (`crit` malformed or naming an
/// extension this verifier does not process, a critical marker that is not
/// `true`, a marker, `crit` entry and claim not all present together, or
/// `authorized_task` without `authorized_payload_hash` or the reverse).
pub fn parse_compact(token: &str) -> Result<ParsedToken, GovError> {
    // Step 1.
    if token.len() > MAX_TOKEN_LEN {
        return Err(invalid(1, format!("token is longer than {MAX_TOKEN_LEN} bytes")));
    }
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(invalid(1, "not a compact JWS (three dot-separated segments)"));
    };
    let header = json_object(&decode_segment(h, "header")?, "header")?;
    let claims = json_object(&decode_segment(p, "payload")?, "payload")?;
    decode_segment(s, "signature")?;
    let kid = match header.get("kid") {
        Some(Value::String(k)) if !k.is_empty() => k.clone(),
        _ => return Err(invalid(1, "header kid is absent, empty or not a string")),
    };
    // Step 2: the allowlist on the header itself.
    let alg = match header.get("alg") {
        Some(Value::String(a)) if a == "EdDSA" => JwsAlgorithm::EdDsa,
        Some(Value::String(a)) if a == "ES256" => JwsAlgorithm::Es256,
        other => return Err(invalid(2, format!("alg {other:?} is not allowed"))),
    };
    // Step 3: byte-exact, no normalization of the structured suffix.
    if header.get("typ").and_then(Value::as_str) != Some(TYP) {
        return Err(invalid(3, format!("typ {:?} is not {TYP}", header.get("typ"))));
    }
    // Step 4.
    check_crit(&header, &claims)?;
    Ok(ParsedToken {
        alg,
        kid,
        header,
        claims,
        signing_input: format!("{h}.{p}"),
        signature_b64: s.to_owned(),
    })
}

fn check_crit(header: &Map<String, Value>, claims: &Map<String, Value>) -> Result<(), GovError> {
    let crit: Vec<&str> = match header.get("crit") {
        None => Vec::new(),
        Some(Value::Array(items)) if !items.is_empty() => {
            let mut names = Vec::with_capacity(items.len());
            for item in items {
                let name = item.as_str().ok_or_else(|| invalid(4, "crit entry is not a string"))?;
                if names.contains(&name) {
                    return Err(invalid(4, format!("crit lists {name:?} twice")));
                }
                if !CRITICAL_CLAIMS.contains(&name) {
                    return Err(invalid(4, format!("crit extension {name:?} is not understood")));
                }
                names.push(name);
            }
            names
        }
        Some(_) => return Err(invalid(4, "crit is not a non-empty array")),
    };
    for name in CRITICAL_CLAIMS {
        let in_crit = crit.contains(&name);
        let marker = header.get(name);
        if marker.is_some_and(|m| m != &Value::Bool(true)) {
            return Err(invalid(4, format!("header marker {name} is not true")));
        }
        let in_claims = claims.contains_key(name);
        if in_crit != marker.is_some() || in_crit != in_claims {
            return Err(invalid(
                4,
                format!("{name}: marker, crit entry and claim do not appear together"),
            ));
        }
    }
    if claims.contains_key("authorized_task") != claims.contains_key("authorized_payload_hash") {
        return Err(invalid(
            4,
            "authorized_task and authorized_payload_hash must appear as a pair",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        URL_SAFE_NO_PAD.encode(s)
    }

    fn token(header: &str, claims: &str) -> String {
        format!("{}.{}.{}", b64(header), b64(claims), b64("sig"))
    }

    #[test]
    fn header_rules() {
        let ok = token(r#"{"alg":"EdDSA","kid":"k","typ":"adcp-gov+jws"}"#, "{}");
        assert!(parse_compact(&ok).is_ok());
        let cases = [
            (r#"{"alg":"none","kid":"k","typ":"adcp-gov+jws"}"#, 2),
            (r#"{"alg":"HS256","kid":"k","typ":"adcp-gov+jws"}"#, 2),
            (r#"{"alg":"EdDSA","kid":"k","typ":"adcp-gov"}"#, 3),
            (r#"{"alg":"EdDSA","kid":"k","typ":"ADCP-GOV+JWS"}"#, 3),
            (
                r#"{"alg":"EdDSA","kid":"k","typ":"adcp-gov+jws","typ":"adcp-gov+jws"}"#,
                1,
            ),
            (r#"{"alg":"EdDSA","typ":"adcp-gov+jws"}"#, 1),
            (r#"{"alg":"EdDSA","kid":"k","typ":"adcp-gov+jws","crit":[]}"#, 4),
            (r#"{"alg":"EdDSA","kid":"k","typ":"adcp-gov+jws","crit":["exp"]}"#, 4),
        ];
        for (header, step) in cases {
            let e = parse_compact(&token(header, "{}")).err();
            assert_eq!(e.map(|e| e.step().number()), Some(step), "{header}");
        }
    }

    #[test]
    fn markers_must_be_true_booleans() {
        let h = r#"{"alg":"EdDSA","kid":"k","typ":"adcp-gov+jws","crit":["authorized_task","authorized_payload_hash"],"authorized_task":"yes","authorized_payload_hash":true}"#;
        let c = r#"{"authorized_task":"t","authorized_payload_hash":"h"}"#;
        assert_eq!(parse_compact(&token(h, c)).err().map(|e| e.step().number()), Some(4));
    }
}
