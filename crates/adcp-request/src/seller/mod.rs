//! The seller side: verify incoming signed AdCP requests under the
//! seller's own `request_signing` capability.
//!
//! The user-facing documentation is the crate root's "Sellers" section
//! (these types are re-exported there). One concept per file:
//!
//! - `verifier.rs`: [`RequestVerifier`], the framework-agnostic core;
//! - `builder.rs`: its configuration ([`RequestVerifierBuilder`], [`BuildError`]);
//! - `authenticator.rs`: the fallback-credential hook ([`Authenticator`]);
//! - `auth.rs`: what the handler learns ([`RequestAuth`]);
//! - `reply.rs`: what a refused caller gets ([`Reply`]);
//! - `layer.rs`: the tower middleware ([`RequestVerifierLayer`]);
//! - `extract.rs`: the axum extractors (feature `axum`).

mod auth;
mod authenticator;
mod builder;
#[cfg(feature = "axum")]
mod extract;
mod layer;
mod reply;
mod verifier;

pub use auth::RequestAuth;
pub use authenticator::{Authenticator, AuthenticatorFuture, NoFallback};
pub use builder::{BuildError, RequestVerifierBuilder};
#[cfg(feature = "axum")]
pub use extract::{AuthRejection, VerifiedAgent};
pub use layer::{RequestVerifierLayer, RequestVerifierService};
pub use reply::{Reply, BODY_TOO_LARGE, BODY_UNREADABLE, UNAUTHENTICATED};
pub use verifier::RequestVerifier;

// The request-policy types a seller's configuration and handlers name, so
// that they need not depend on adcp-verify for them.
#[doc(no_inline)]
pub use adcp_verify::request_policy::{AuthSource, Binding, FallbackCredential, ResolvedRequest};

/// The tracing target of the seller side's events: rejections with their
/// code, checklist step and server-side detail, shadow-mode records,
/// verified signers (at `debug`). Details never reach a response.
pub const SELLER_TRACING_TARGET: &str = "adcp_request::seller";

/// The spec's recommended body limit: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// The `Retry-After` seconds of a `503` (a key-discovery or replay-store
/// outage): the same floor as the webhook receiver's; the caller's backoff
/// takes over in a longer outage.
pub const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 2;
