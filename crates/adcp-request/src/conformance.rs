//! The request-signing suite's two policy files as concrete requests
//! (feature `conformance`), shared by the seller layer's tests and the
//! gateway's request mode so both run the same cases.
//!
//! `body-integrity-policy.json` describes each case by its facts
//! (`has_body`, `covers_content_digest`, `signature_present`,
//! `cryptographic_signature_valid`, `digest_matches_body`,
//! `fallback_auth_valid`, …) rather than by bytes: [`body_integrity_case`]
//! makes a real signature with a fresh key to those facts and returns the
//! request as it arrives on the wire, the verifier configuration the case
//! assumes and the keys that trust the signer.
//! `protocol-method-names.json` needs only unsigned JSON-RPC calls
//! ([`protocol_method_call`]) and the capability requiring a set of
//! methods ([`requiring_methods`]).

use adcp_sigbase::crypto::Algorithm;
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sign::{Body, HttpSigner, LegacyDigest, SigningProfile, SoftwareSigner, UnsignedRequest};
use adcp_verify::request_policy::VerifierCapability;
use adcp_verify::{DigestCoverage, FixedClock, Profile, StaticKeyResolver};
use serde_json::{json, Value};

/// The clock every case is signed and verified at.
pub const POLICY_NOW: i64 = 1_776_520_800;
/// The agent the case's signing key is attributed to.
pub const POLICY_AGENT: &str = "https://buyer.example/";
/// The independent credential a case with `fallback_auth_valid: true`
/// carries in `Authorization`.
pub const POLICY_BEARER: &str = "Bearer seller-issued-token";
/// The URL of every signed case with a body (an MCP endpoint).
pub const POLICY_URL: &str = "https://seller.example.com/mcp";

/// One `body-integrity-policy.json` case made concrete.
#[derive(Debug)]
pub struct PolicyCase {
    /// The case's `id`.
    pub id: String,
    /// The verification profile of the case's endpoint.
    pub profile: Profile,
    /// The seller's capability: the case's digest policy, the operation in
    /// the list the case's `mode` names.
    pub capability: VerifierCapability,
    /// Trusts the case's signing key for [`POLICY_AGENT`].
    pub keys: StaticKeyResolver,
    /// The request line and headers as received (`Host` not included).
    pub method: String,
    /// The absolute request URL.
    pub url: String,
    /// Header lines in order, `Authorization` included when the case has a
    /// valid fallback credential.
    pub headers: Vec<(String, String)>,
    /// The body bytes (empty when the case has none).
    pub body: Vec<u8>,
}

fn fact(case: &Value, name: &str) -> Result<Option<bool>, String> {
    case.get(name)
        .map(|v| v.as_bool().ok_or_else(|| format!("{name}: not a boolean")))
        .transpose()
}

fn required(case: &Value, name: &str) -> Result<bool, String> {
    fact(case, name)?.ok_or_else(|| format!("{name}: missing"))
}

/// `sig1=:<bytes>:` re-encoded from `from` to `to`, optionally with the
/// first signature byte flipped.
fn reencode(value: &str, from: BinaryEncoding, to: BinaryEncoding, flip: bool) -> Result<String, String> {
    let inner = value
        .strip_prefix("sig1=:")
        .and_then(|v| v.strip_suffix(':'))
        .ok_or("unexpected Signature header")?;
    let mut bytes = from.decode(inner).map_err(|e| format!("{e:?}"))?;
    if flip {
        if let Some(first) = bytes.first_mut() {
            *first ^= 0x01;
        }
    }
    Ok(format!("sig1=:{}:", to.encode(&bytes)))
}

/// A JSON-RPC `tools/call` body.
fn tools_call(operation: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": operation, "arguments": arguments}})
}

/// Builds one `body-integrity-policy.json` case: a real signature made
/// with a fresh Ed25519 key to the case's facts.
///
/// - The endpoint profile is 3.2 (digest `required`) or legacy with the
///   case's `legacy_digest_policy`.
/// - The operation (`create_media_buy`, or `tasks/cancel` for a
///   `protocol_methods_*` mode) is in the list the case's `mode` names.
/// - A case without a body signs a bodiless POST to a per-operation path.
/// - `cryptographic_signature_valid: false` flips a signature byte;
///   `digest_matches_body: false` changes the body after signing;
///   `signature_header_state: "malformed_pair"` drops `Signature-Input`;
///   `signature_present: false` drops both headers;
///   `fallback_auth_valid: true` adds [`POLICY_BEARER`].
///
/// # Errors
///
/// A case whose facts cannot be read, or a signing failure.
pub async fn body_integrity_case(case: &Value) -> Result<PolicyCase, String> {
    let id = case["id"].as_str().ok_or("case without id")?.to_owned();
    let legacy = case["endpoint_profile"] != "3.2";
    let (profile, policy) = if legacy {
        let name = case["legacy_digest_policy"]
            .as_str()
            .ok_or("legacy case without legacy_digest_policy")?;
        let coverage = match name {
            "either" => DigestCoverage::Either,
            "forbidden" => DigestCoverage::Forbidden,
            _ => DigestCoverage::Required,
        };
        (Profile::request_legacy(coverage), name)
    } else {
        (Profile::request_v3_2(), "required")
    };
    let mode = case["mode"].as_str().ok_or("case without mode")?;
    let protocol = mode.starts_with("protocol_methods_");
    let capability = VerifierCapability::from_json(&json!({
        "supported": true,
        "covers_content_digest": policy,
        mode: [if protocol { "tasks/cancel" } else { "create_media_buy" }],
    }))
    .map_err(|e| format!("{id}: {e}"))?;

    let has_body = required(case, "has_body")?;
    let covers = fact(case, "covers_content_digest")?.unwrap_or(false);
    let signing = match (legacy, covers) {
        (false, true) => SigningProfile::request_v3_2(),
        (true, true) => SigningProfile::request_legacy(LegacyDigest::Cover),
        (_, false) => SigningProfile::request_legacy(LegacyDigest::Omit),
    };
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "policy-buyer-2026").map_err(|e| e.to_string())?;
    let jwks = key.jwks().map_err(|e| e.to_string())?.to_public_json();
    let keys = StaticKeyResolver::new().with_jwks(&jwks, POLICY_AGENT);
    let signer = HttpSigner::new(signing, key)
        .map_err(|e| e.to_string())?
        .with_clock(FixedClock(POLICY_NOW));

    let mut arguments = json!({"media_buy_id": "mb_1", "idempotency_key": id});
    if let Some(version) = case.get("request_body_adcp_version") {
        arguments["adcp_version"] = version.clone();
    }
    let body = if protocol {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"taskId": "task_1"}})
    } else {
        tools_call("create_media_buy", arguments)
    };
    let signed = if has_body {
        let body = Body::json(&body).map_err(|e| e.to_string())?;
        signer.sign(&UnsignedRequest::post(POLICY_URL, &body)).await
    } else {
        // Without a body a JSON-RPC call has no operation: one operation
        // per path instead (the outcome of this case does not depend on
        // the list the operation is in).
        let unsigned = UnsignedRequest::new("POST", "https://seller.example.com/adcp/create_media_buy");
        signer.sign(&unsigned).await
    }
    .map_err(|e| format!("{id}: {e}"))?;

    let mut headers: Vec<(String, String)> = signed
        .headers()
        .iter()
        .map(|(n, v)| ((*n).to_ascii_lowercase(), v.clone()))
        .collect();
    let mut body = signed.body().map(|b| b.as_bytes().to_vec()).unwrap_or_default();
    // The signer writes the 3.2 encoding; a case's wire encoding follows
    // its endpoint profile (and a signature without digest coverage was
    // made under the legacy signing profile).
    let wire = if legacy {
        BinaryEncoding::Base64UrlUnpadded
    } else {
        BinaryEncoding::Base64Padded
    };
    let from = if covers || legacy {
        wire
    } else {
        BinaryEncoding::Base64UrlUnpadded
    };
    let crypto_valid = fact(case, "cryptographic_signature_valid")?.unwrap_or(true);
    for (name, value) in &mut headers {
        if name == "signature" {
            *value = reencode(value, from, wire, !crypto_valid)?;
        }
    }
    match (required(case, "signature_present")?, case.get("signature_header_state")) {
        (true, Some(state)) if state == "malformed_pair" => headers.retain(|(n, _)| n != "signature-input"),
        (true, Some(state)) => return Err(format!("{id}: signature_header_state {state}")),
        (true, None) => {}
        (false, _) => headers.retain(|(n, _)| n != "signature-input" && n != "signature"),
    }
    if required(case, "fallback_auth_valid")? {
        headers.push(("authorization".to_owned(), POLICY_BEARER.to_owned()));
    }
    if fact(case, "digest_matches_body")? == Some(false) {
        // Same operation, other bytes: the digest no longer matches.
        let text = String::from_utf8(body).map_err(|e| e.to_string())?;
        let tampered = text.replacen("\"id\":1", "\"id\":2", 1);
        if tampered == text {
            return Err(format!("{id}: nothing to tamper with"));
        }
        body = tampered.into_bytes();
    }
    Ok(PolicyCase {
        id,
        profile,
        capability,
        keys,
        method: signed.method().to_owned(),
        url: signed.url().to_owned(),
        headers,
        body,
    })
}

/// The URL of every [`protocol_method_call`] (an A2A JSON-RPC endpoint).
pub const PROTOCOL_METHOD_URL: &str = "https://seller.example.com/a2a/jsonrpc";

/// An unsigned JSON-RPC call of `method` with a harmless A2A message: its
/// headers (`Content-Type`) and body, for a POST to
/// [`PROTOCOL_METHOD_URL`].
#[must_use]
pub fn protocol_method_call(method: &str) -> (Vec<(String, String)>, Vec<u8>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {
        "taskId": "task_1",
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"data": {"skill": "get_products"}}]}
    }});
    (
        vec![("Content-Type".to_owned(), "application/json".to_owned())],
        body.to_string().into_bytes(),
    )
}

/// A 3.2 capability whose `protocol_methods_required_for` is `methods`.
///
/// # Errors
///
/// A method name the spec does not allow in that list.
pub fn requiring_methods<'a>(methods: impl IntoIterator<Item = &'a str>) -> Result<VerifierCapability, String> {
    VerifierCapability::builder(DigestCoverage::Required)
        .protocol_methods_required_for(methods)
        .build()
        .map_err(|e| e.to_string())
}
