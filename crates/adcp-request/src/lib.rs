//! Signed AdCP requests, both ends: sellers verify buyers' RFC 9421-signed
//! calls, buyers sign them.
//!
//! # Sellers
//!
//! (Seller side: the tower layer, the axum extractors and the
//! framework-agnostic core. Documented here as it lands.)
//!
//! # Buyers
//!
//! [`SigningClient`] signs each outbound AdCP call the way the
//! counterparty's `request_signing` capability asks:
//!
//! - it primes the capability with `get_adcp_capabilities` over the
//!   counterparty's [`Transport`] (MCP `tools/call`, A2A `SendMessage`
//!   with one DataPart `{skill, input}`, or a raw `POST <url>/<operation>`)
//!   and caches it per agent URL for a TTL ([`CapabilityCache`]); a
//!   capability can also be supplied ([`Counterparty::with_capability`]);
//! - it resolves the operation from its own request bytes with the
//!   verifier's resolver, so it signs what the seller will look up:
//!   `required_for`, `warn_for` and `supported_for` calls (and the
//!   `protocol_methods_*` lists by JSON-RPC method), everything when the
//!   seller supports signing and lists nothing, calls in no list unless
//!   [`SigningClientBuilder::sign_unlisted`] is off, nothing when
//!   `supported` is false ([`SigningDecision`], [`SigningReason`]);
//! - AdCP 3.2 encodings (RFC 8941 Base64, `content-digest` always
//!   covered) unless the counterparty is configured as 3.0/3.1
//!   ([`SigningVersion::Legacy`]: unpadded Base64URL, `content-digest`
//!   covered unless `forbidden`);
//! - a fresh nonce per attempt over the same body bytes, and one signed
//!   retry, after refreshing the capability, when an unsigned call is
//!   answered `401` `Signature error="request_signature_required"`;
//! - every URL passes the SSRF rules first ([`TargetPolicy`]: public HTTPS
//!   only unless the development switch is on), and the built-in reqwest
//!   client pins connections to the checked addresses and never follows
//!   redirects.
//!
//! Each call returns a [`CallResponse`]: status, headers, body (and the
//! AdCP result unwrapped from the transport), and the [`SigningDecision`].
//! `cargo run -p adcp-examples --example buyer_call` runs it against a
//! seller on loopback; `adcp-sig call` is the same client on the command
//! line.
//!
//! ```
//! use adcp_request::{Counterparty, SigningClient, SigningReason, TargetPolicy};
//! use adcp_sign::{Algorithm, SoftwareSigner};
//! use serde_json::json;
//!
//! // Once: the buyer's key (a KMS-backed `adcp_sign::Signer` works the same way).
//! let key = SoftwareSigner::generate(Algorithm::Ed25519, "buyer-2026-01")?;
//! let client = SigningClient::builder(key).build()?;
//! let seller = Counterparty::mcp("https://seller.example/mcp");
//!
//! async fn buy(client: &SigningClient, seller: &Counterparty) -> Result<(), adcp_request::ClientError> {
//!     // Primes get_adcp_capabilities on first use, then signs as it says.
//!     let response = client
//!         .call(seller, "create_media_buy", &json!({"idempotency_key": "6f1c…", "plan_id": "p1"}))
//!         .await?;
//!     if response.decision().reason == SigningReason::RequiredFor {
//!         assert!(response.decision().signed);
//!     }
//!     println!("{} signed={} ({})", response.status(), response.decision().signed, response.decision().reason);
//!     Ok(())
//! }
//! # let _ = buy;
//!
//! // Production rules: plain HTTP and loopback are refused before anything is sent.
//! assert!(TargetPolicy::default().check("http://127.0.0.1:3000/mcp").is_err());
//! assert!(TargetPolicy::default().check(seller.url()).is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod client;
pub use client::{
    read_capability, CallResponse, CapabilityCache, ClientError, Counterparty, SigningClient, SigningClientBuilder,
    SigningDecision, SigningReason, SigningVersion, TargetPolicy, Transport, DEFAULT_CAPABILITY_TTL, DEFAULT_TIMEOUT,
    MAX_RESPONSE_BYTES,
};
mod seller;
