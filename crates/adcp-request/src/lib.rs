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
//! (Buyer side: the reqwest signing client with capability priming.
//! Documented here as it lands.)
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod client;
mod seller;
pub use seller::{
    request_signing_capability, AuthSource, Authenticator, AuthenticatorFuture, Binding, BuildError,
    FallbackCredential, NoFallback, Reply, RequestAuth, RequestVerifier, RequestVerifierBuilder, RequestVerifierLayer,
    RequestVerifierService, ResolvedRequest, BODY_TOO_LARGE, BODY_UNREADABLE, DEFAULT_MAX_BODY_BYTES,
    SELLER_TRACING_TARGET, UNAUTHENTICATED, UNAVAILABLE_RETRY_AFTER_SECS,
};
#[cfg(feature = "axum")]
pub use seller::{AuthRejection, VerifiedAgent};
