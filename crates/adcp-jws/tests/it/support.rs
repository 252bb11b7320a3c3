//! Helpers: the governance vector file, its test key, verifiers, signing
//! arbitrary headers and claims.

use std::path::PathBuf;
use std::sync::Arc;

use adcp_jws::{Amount, Commitment, GovernanceVerifier, Phase, VerificationRequest};
use adcp_sigbase::jwk::Jwk;
use adcp_sign::{Signer, SoftwareSigner};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;

/// The vector file, relative to the suite.
pub const GOVERNANCE_FILE: &str = "governance/governance-authorization.json";

/// The governance vector file, or `None` (skip) outside CI when the suite
/// is missing.
pub fn vectors() -> Option<Value> {
    let suite: PathBuf = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}"))?;
    Some(adcp_vectors::load_json(&suite, GOVERNANCE_FILE).unwrap_or_else(|e| panic!("{e}")))
}

/// The published test key, public form (no private member).
pub fn test_public_jwk(doc: &Value) -> Value {
    let mut jwk = doc["signed_jws"]["test_key"].clone();
    let obj = jwk.as_object_mut().unwrap();
    obj.remove("_private_d_for_test_only");
    obj.remove("$comment");
    jwk
}

/// A signer holding the published test key.
pub fn test_signer(doc: &Value) -> SoftwareSigner {
    let jwk = Jwk::from_json_value(&doc["signed_jws"]["test_key"])
        .unwrap()
        .with_test_private_member("_private_d_for_test_only")
        .unwrap();
    SoftwareSigner::new(jwk.signing_key().unwrap(), jwk.kid().unwrap()).unwrap()
}

/// A governance JWK (public) for `signer`.
pub fn governance_jwk(signer: &SoftwareSigner) -> Value {
    let mut jwk = signer.public_jwk().unwrap().to_json();
    jwk["adcp_use"] = "governance-signing".into();
    jwk
}

/// A verifier over a static JWKS at a fixed time, with a memory store.
pub fn verifier(jwks: Value, now: i64) -> GovernanceVerifier {
    GovernanceVerifier::builder()
        .static_jwks(jwks)
        .replay_store(Arc::new(adcp_verify::MemoryReplayStore::webhook()))
        .clock(Arc::new(adcp_sigbase::FixedClock(now)))
        .build()
        .unwrap()
}

/// A commitment from a JSON `{amount, currency}`.
pub fn commitment(v: &Value) -> Commitment {
    Commitment {
        amount: Amount::from_json(v["amount"].as_number().unwrap()).unwrap(),
        currency: v["currency"].as_str().unwrap().to_owned(),
    }
}

/// The request of the vectors' verification defaults, with a case's
/// overrides applied.
pub fn request(defaults: &Value, overrides: Option<&Value>) -> VerificationRequest {
    let pick = |name: &str| overrides.and_then(|o| o.get(name)).unwrap_or(&defaults[name]).clone();
    let mut r = VerificationRequest::new(
        pick("payload"),
        defaults["expected_task"].as_str().unwrap(),
        defaults["expected_audience"].as_str().unwrap(),
        defaults["authenticated_caller"].as_str().unwrap(),
        defaults["expected_phase"].as_str().unwrap().parse::<Phase>().unwrap(),
    );
    r.commitment = Some(commitment(&pick("actual_commitment")));
    r.expected_issuer = Some(defaults["expected_issuer"].as_str().unwrap().to_owned());
    r
}

/// Signs raw header and claims JSON texts (any shape, for negative cases).
pub async fn sign_raw(signer: &SoftwareSigner, header: &str, claims: &str) -> String {
    let input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode(claims));
    let sig = signer.sign(input.as_bytes()).await.unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
}
