//! Signed AdCP requests, both ends: sellers verify buyers' RFC 9421-signed
//! calls, buyers sign them.
//!
//! # Sellers
//!
//! A seller verifies buyers' signed calls under its own advertised
//! `request_signing` capability, in front of its MCP, A2A or REST handlers:
//!
//! - [`RequestVerifier`], the framework-agnostic core, built by
//!   [`RequestVerifier::builder`] from the signers' keys (an
//!   `adcp_jwks::HttpsKeyResolver`, or a `StaticKeyResolver` for a
//!   configured JWKS), a replay store (`adcp_store`'s SQLite, Redis or
//!   PostgreSQL backends share it across a fleet) and the capability
//!   ([`request_signing_capability`] reads it from the
//!   `get_adcp_capabilities` response). The profile is 3.2 unless a legacy
//!   3.0/3.1 one is configured explicitly; the binding (JSON-RPC, A2A
//!   HTTP+JSON, one operation per path) is configuration, inferred from
//!   the path by default, never read from the body.
//! - [`RequestVerifierLayer`], the tower middleware: refusals are answered
//!   by the layer ([`Reply`]: `401` with exactly one
//!   `WWW-Authenticate: Signature error="<code>"`, `400` for
//!   `request_body_malformed`, `413` over the body limit before any
//!   cryptography, `503` with `Retry-After` for store or key-discovery
//!   outages); accepted requests reach the handler with the raw body and a
//!   [`RequestAuth`] extension.
//! - [`Authenticator`], the application's hook for independent
//!   credentials (bearer, API key, mTLS), composed exactly as the spec's
//!   "Composition with fallback authenticators" says: an unsigned request
//!   with a valid credential is not refused for its missing signature; a
//!   malformed `Signature` / `Signature-Input` pair always rejects; a
//!   well-formed signature that fails under `warn_for` establishes no
//!   identity (the request proceeds only on the credential; without one it
//!   gets a plain `401`, no signature challenge); a webhook registration
//!   carrying `authentication` must arrive signed.
//! - With the `axum` feature (default), the extractors [`RequestAuth`] and
//!   [`VerifiedAgent`] (which requires a verified signer).
//!
//! Rejection details (code, checklist step, reason) are logged under
//! [`SELLER_TRACING_TARGET`], never sent to the caller.
//!
//! ```
//! use adcp_request::{RequestAuth, RequestVerifier, RequestVerifierLayer, VerifiedAgent};
//! use adcp_verify::request_policy::{FallbackCredential, VerifierCapability};
//! use adcp_verify::{MemoryReplayStore, StaticKeyResolver};
//! use axum::{routing::post, Router};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! // A handler that needs the signing agent, and one that accepts any
//! // caller the gate let through.
//! async fn create_media_buy(agent: VerifiedAgent) -> String {
//!     format!("accepted from {}", agent.agent_url())
//! }
//! async fn mcp(auth: RequestAuth) -> String {
//!     format!("{:?} for {:?}", auth.source(), auth.operation())
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The seller's own advertised block (from its get_adcp_capabilities).
//! let capability = VerifierCapability::from_json(&json!({
//!     "supported": true,
//!     "covers_content_digest": "required",
//!     "required_for": ["create_media_buy"],
//!     "warn_for": ["update_media_buy"]
//! }))?;
//! let buyers_jwks = json!({"keys": []}); // the buyer agents' published keys
//! let verifier = RequestVerifier::builder(
//!     Arc::new(StaticKeyResolver::new().with_jwks(&buyers_jwks, "https://buyer.example/")),
//!     Arc::new(MemoryReplayStore::request()),
//!     capability,
//! )
//! // Bearer tokens the seller issued remain a valid credential.
//! .authenticator_fn(|parts, _request| match parts.headers.get("authorization") {
//!     Some(token) if token == "Bearer issued-token" => FallbackCredential::Valid,
//!     _ => FallbackCredential::Absent,
//! })
//! .build()?;
//!
//! let app: Router = Router::new()
//!     .route("/mcp", post(mcp))
//!     .route("/adcp/create_media_buy", post(create_media_buy))
//!     .layer(RequestVerifierLayer::new(verifier));
//! # let _ = app;
//! # Ok(())
//! # }
//! ```
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

mod capability;
mod client;
#[cfg(feature = "conformance")]
pub mod conformance;
pub use capability::request_signing_capability;
pub use client::{
    AgentCapabilities, CallResponse, CapabilityCache, ClientError, Counterparty, SigningClient, SigningClientBuilder,
    SigningDecision, SigningReason, SigningVersion, TargetPolicy, Transport, DEFAULT_CAPABILITIES_TIMEOUT,
    DEFAULT_CAPABILITY_TTL, DEFAULT_TIMEOUT, MAX_RESPONSE_BYTES,
};
mod seller;
#[cfg(feature = "axum")]
pub use seller::{AuthRejection, VerifiedAgent};
pub use seller::{
    AuthSource, Authenticator, AuthenticatorFuture, Binding, BuildError, FallbackCredential, NoFallback, Reply,
    RequestAuth, RequestVerifier, RequestVerifierBuilder, RequestVerifierLayer, RequestVerifierService,
    ResolvedRequest, BODY_TOO_LARGE, BODY_UNREADABLE, DEFAULT_MAX_BODY_BYTES, SELLER_TRACING_TARGET, UNAUTHENTICATED,
    UNAVAILABLE_RETRY_AFTER_SECS,
};
