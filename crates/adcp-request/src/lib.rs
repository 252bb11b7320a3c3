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
//! (Buyer side: the reqwest signing client with capability priming.
//! Documented here as it lands.)
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod client;
mod seller;
pub use seller::{
    request_signing_capability, Authenticator, AuthenticatorFuture, BuildError, NoFallback, Reply, RequestAuth,
    RequestVerifier, RequestVerifierBuilder, RequestVerifierLayer, RequestVerifierService, BODY_TOO_LARGE,
    BODY_UNREADABLE, DEFAULT_MAX_BODY_BYTES, SELLER_TRACING_TARGET, UNAUTHENTICATED, UNAVAILABLE_RETRY_AFTER_SECS,
};
#[cfg(feature = "axum")]
pub use seller::{AuthRejection, VerifiedAgent};
