//! AdCP key discovery over HTTPS.
//!
//! Resolves the webhook identity chain — seller agent URL →
//! `/.well-known/brand.json` → the `agents[]` entry whose `url` byte-equals
//! the agent URL → `jwks_uri` → JWKS — safely, and implements
//! [`adcp_verify::keys::KeyResolver`] on top of it.
//!
//! - [`ssrf`]: the pure SSRF guard (HTTPS only, reserved ranges refused for
//!   literals in every IPv4 spelling and for every resolved address,
//!   opt-in port allowlist).
//! - [`fetch`]: the fetcher (reqwest + rustls): one DNS resolution per
//!   connection, checked and pinned; no proxies, no redirects, 5 s / 10 s
//!   deadlines, body caps enforced while streaming.
//! - [`documents`]: strict brand.json, JWKS and revocation-list models
//!   (duplicate member names rejected, size caps, signed lists verified).
//! - [`resolver`]: [`HttpsKeyResolver`] with TTL bounded by the revocation
//!   polling interval, kid-miss refetch with a 30 s cooldown, negative
//!   caching ≤ 60 s and revocation polling with the stale safe-default.
//! - [`identity`]: the two discovery chains as functions — the webhook
//!   chain and the 8-step `identity.brand_json_url` chain (eTLD+1 origin
//!   binding, `authorized_operators[]` delegation, `key_origins`
//!   consistency) — returning an [`AgentResolution`] or a
//!   [`DiscoveryFailure`], both with a per-step [`DiscoveryTrace`].
//! - [`psl`]: eTLD+1 from a vendored, dated Public Suffix List snapshot.
//! - [`adagents`]: publisher adagents.json, `signing_keys[]` pins
//!   ([`PublisherPin`]) and the same-registrable-domain redirect rule.
//! - [`destination`]: sender-side destination validation
//!   ([`DestinationPolicy`]): the same reserved ranges, ports unrestricted
//!   unless the hardened profile is chosen, a pinning reqwest resolver.
//! - [`trace`]: the trace types.
//!
//! See `docs/key-discovery.md` for the rules and their sources.
//!
//! ```
//! use adcp_jwks::ssrf::{ReservedRange, SsrfError, SsrfPolicy};
//! use adcp_jwks::HttpsKeyResolver;
//!
//! let policy = SsrfPolicy::new();
//! assert!(policy.check_url("https://seller.example/mcp").is_ok());
//! // Decimal spelling of 169.254.169.254, the cloud metadata address.
//! assert_eq!(
//!     policy.check_url("https://2852039166/latest/meta-data/"),
//!     Err(SsrfError::ReservedAddress(ReservedRange::LinkLocal))
//! );
//!
//! // A resolver for one seller agent; nothing is fetched until a key is needed.
//! let resolver = HttpsKeyResolver::builder("https://seller.example/mcp")
//!     .revocation_list_url("https://seller.example/.well-known/revocations.json")
//!     .build()?;
//! assert_eq!(resolver.agent_url(), "https://seller.example/mcp");
//! # Ok::<(), adcp_jwks::DiscoveryError>(())
//! ```

#![forbid(unsafe_code)]

pub mod adagents;
pub mod destination;
pub mod documents;
pub mod fetch;
pub mod identity;
pub mod psl;
pub mod resolver;
pub mod ssrf;
pub mod trace;

pub use destination::{DestinationError, DestinationPolicy, PinningResolver};
pub use documents::{BrandAgent, BrandDocument, BrandJson, DocumentError, RevocationList};
pub use fetch::{
    DnsResolver, FetchConfig, FetchError, Fetched, Fetcher, StaticDnsResolver, SystemDnsResolver, TrustRoots,
};
pub use identity::{
    AgentResolution, Capabilities, CapabilitiesSource, ChainOptions, DiscoveryFailure, KeySource, PublisherPin,
    SigningSurface, StaticCapabilities,
};
pub use resolver::{DiscoveryError, HttpsKeyResolver, HttpsKeyResolverBuilder};
pub use ssrf::{ReservedRange, SsrfError, SsrfPolicy};
pub use trace::{DiscoveryTrace, StepOutcome, TraceStep};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
