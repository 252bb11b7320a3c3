//! What the examples share: the demo identity and each role's counterpart,
//! so every example runs offline on loopback with no set-up.
//!
//! **The key is derived from a public constant: it is a demo key and must
//! never be trusted outside these examples.** A real seller loads its key
//! from a KMS or a file and publishes its JWKS at its brand.json
//! `agents[].jwks_uri`; a real buyer resolves it with
//! `adcp_jwks::HttpsKeyResolver`.
#![allow(dead_code)] // each example uses the part it needs

pub mod counterpart;
pub mod request_seller;

use adcp_sign::{Algorithm, SoftwareSigner};

/// The seller's agent URL (the sender identity the buyer dedups on).
pub const AGENT_URL: &str = "https://seller.example/mcp";
/// The demo key's `kid`.
pub const KID: &str = "demo-seller-ed25519";
/// The seller account the buyer's notification subscription belongs to.
pub const ACCOUNT_ID: &str = "acct_demo";
/// The buyer-chosen subscriber identifier of that subscription.
pub const SUBSCRIBER_ID: &str = "trafficking-desk";
/// The event type it subscribes to.
pub const EVENT_TYPE: &str = "creative.status_changed";

/// An example's result: `Err` (exit code 1) names the first expectation
/// that did not hold.
pub type Outcome<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The demo seller key (Ed25519 from a fixed, public seed).
pub fn seller_key() -> Result<SoftwareSigner, adcp_sign::SignError> {
    SoftwareSigner::from_raw(Algorithm::Ed25519, b"adcp-webhook demo seed, public!!", KID)
}

/// The demo key's public JWKS, as the seller would publish it.
pub fn seller_jwks() -> Result<serde_json::Value, adcp_sign::SignError> {
    Ok(seller_key()?.jwks()?.to_public_json())
}

/// The demo buyer agent's request-signing key `kid`.
pub const BUYER_KID: &str = "demo-buyer-ed25519";

/// The demo buyer key (Ed25519 from a fixed, public seed): signs the
/// buyer's requests in `buyer_call`.
pub fn buyer_key() -> Result<SoftwareSigner, adcp_sign::SignError> {
    SoftwareSigner::from_raw(Algorithm::Ed25519, b"adcp-request demo seed, public!!", BUYER_KID)
}

/// `--name value` from the command line, else `default`.
pub fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_owned())
}

/// Whether `--name` is on the command line.
pub fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

/// Fails the example with `what` unless `holds`.
pub fn expect(holds: bool, what: impl Into<String>) -> Outcome {
    if holds {
        Ok(())
    } else {
        Err(format!("expectation failed: {}", what.into()).into())
    }
}
