//! AdCP key discovery over HTTPS.
//!
//! Resolves the webhook identity chain — seller agent URL →
//! `/.well-known/brand.json` → the `agents[]` entry whose `url` byte-equals
//! the agent URL → `jwks_uri` → JWKS — safely, and implements
//! [`adcp_verify::KeyResolver`] on top of it.
//!
//! Everything a user names is at the crate root:
//!
//! - The SSRF guard ([`SsrfPolicy`]): HTTPS only, reserved ranges refused
//!   for literals in every IPv4 spelling and for every resolved address,
//!   opt-in port allowlist.
//! - The fetcher ([`Fetcher`], reqwest + rustls): one DNS resolution per
//!   connection, checked and pinned; no proxies, no redirects, 5 s / 10 s
//!   deadlines, body caps enforced while streaming.
//! - Strict brand.json, JWKS and revocation-list models ([`BrandJson`],
//!   [`parse_jwks`], [`RevocationList`]): duplicate member names rejected,
//!   size caps, signed lists verified.
//! - [`HttpsKeyResolver`], with TTL bounded by the revocation polling
//!   interval, kid-miss refetch with a 30 s cooldown, negative caching
//!   ≤ 60 s and revocation polling with the stale safe-default.
//! - The two discovery chains as functions ([`resolve_well_known`],
//!   [`resolve_brand_json_url`]) — the webhook chain and the 8-step
//!   `identity.brand_json_url` chain (eTLD+1 origin binding,
//!   `authorized_operators[]` delegation, `key_origins` consistency) —
//!   returning an [`AgentResolution`] or a [`DiscoveryFailure`], both with a
//!   per-step [`DiscoveryTrace`].
//! - Sender-side destination validation ([`DestinationPolicy`]): the same
//!   reserved ranges, ports unrestricted unless the hardened profile is
//!   chosen, a pinning reqwest resolver.
//!
//! Two namespaces: [`psl`] (eTLD+1 from a vendored, dated Public Suffix
//! List snapshot) and [`adagents`] (publisher adagents.json,
//! `signing_keys[]` pins, [`PublisherPin`], the same-registrable-domain
//! redirect rule).
//!
//! See `docs/key-discovery.md` for the rules and their sources.
//!
//! ```
//! use adcp_jwks::{ReservedRange, SsrfError, SsrfPolicy};
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
#![warn(unreachable_pub)]

pub mod adagents;
mod destination;
mod documents;
mod fetch;
mod identity;
pub mod psl;
mod resolver;
mod ssrf;
mod trace;

pub use destination::{DestinationError, DestinationPolicy, PinningResolver};
pub use documents::{
    check_kids, parse_jwks, AgentLookupError, BrandAgent, BrandDocument, BrandJson, DocumentError, RevocationList,
    MAX_BRAND_JSON_BYTES, MAX_JWKS_BYTES, MAX_REVOCATION_LIST_BYTES, REVOCATION_LIST_TYP,
};
pub use fetch::{
    DnsResolver, FetchConfig, FetchError, Fetched, Fetcher, StaticDnsResolver, SystemDnsResolver, TrustRoots,
};
pub use identity::{
    resolve_brand_json_url, resolve_well_known, AgentResolution, Capabilities, CapabilitiesSource, ChainOptions,
    DiscoveryFailure, HttpsCapabilities, KeySource, PublisherPin, SigningSurface, StaticCapabilities,
    MAX_CAPABILITIES_BYTES,
};
pub use resolver::{
    DiscoveryError, HttpsKeyResolver, HttpsKeyResolverBuilder, UnixClock, GRACE_INTERVALS, NEGATIVE_TTL_SECS,
    POLL_CEILING_SECS, POLL_FLOOR_SECS, REFETCH_COOLDOWN_SECS,
};
pub use ssrf::{reserved_range, ReservedRange, SsrfError, SsrfPolicy, HARDENED_PORTS};
pub use trace::{DiscoveryTrace, StepOutcome, TraceStep};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
