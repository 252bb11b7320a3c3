//! URL identity for AdCP: the exact canonicalization signers and verifiers
//! must agree on byte for byte, plus URN equivalence and an opt-in, lossy
//! URL normalizer for deduplication.
//!
//! # Identity canonicalization
//!
//! [`canonicalize`] (producers) and [`canonicalize_received`] (values taken
//! off the wire) implement the eight steps of the AdCP URL canonicalization
//! algorithm and return a [`CanonicalUrl`] carrying the `@target-uri`, the
//! `@authority` and the origin. [`derive_authority`] checks a received
//! request's `:authority` / `Host` against the canonical target URI, and
//! [`canonicalize_origin`] gives the host form used for eTLD+1 and key-origin
//! comparisons. Every rejection is a [`CanonError`] whose
//! [`code`](CanonError::code) is `webhook_target_uri_malformed` or
//! `request_target_uri_malformed` depending on the [`Profile`].
//!
//! ```
//! use adcp_canon::{canonicalize, canonicalize_received, Profile};
//!
//! let url = canonicalize("HTTPS://User:pw@Seller.Example.COM.:443/adcp/./mcp?b=2&a=1#top")?;
//! assert_eq!(url.as_str(), "https://seller.example.com/adcp/mcp?b=2&a=1");
//! assert_eq!(url.authority(), "seller.example.com");
//! assert_eq!(url.origin(), "https://seller.example.com");
//!
//! let err = canonicalize_received("https://[fe80::1%25eth0]/p").unwrap_err();
//! assert_eq!(err.code(Profile::Webhook), "webhook_target_uri_malformed");
//! # Ok::<(), adcp_canon::CanonError>(())
//! ```
//!
//! # Decisions where the spec is silent or ambiguous
//!
//! The canonical form must be idempotent (`canon(canon(x)) == canon(x)` for
//! every accepted `x`) and must not depend on which entry point produced it
//! for ASCII input. That fixes the following choices; each is tested.
//!
//! - **Percent-encoded dots.** Percent-encoding is normalized (step 6)
//!   *before* dot segments are removed (step 5), the order of RFC 3986
//!   §6.2.2. `/a/%2E%2E/b` is therefore `/b`. Removing dot segments first
//!   would emit `/a/../b`, which canonicalizes again to `/b`: not idempotent,
//!   and a signer and a verifier that canonicalize a different number of
//!   times would disagree.
//! - **Percent-encoding in the query.** Step 6 says percent-encoding
//!   normalization applies to the path *and the query*; step 7 forbids
//!   reordering, re-encoding and reading `+` as space. Both hold here: in the
//!   query, hex digits are uppercased and triplets encoding unreserved
//!   characters are decoded (step 6), while nothing that was raw is ever
//!   encoded, `+` stays `+`, order and an empty trailing `?` are preserved
//!   (step 7). `?x=%7e` is `?x=~`; `?x=%2f` is `?x=%2F`.
//! - **Malformed percent-encoding** (`%`, `%2`, `%zz`) is rejected in the
//!   path, query and userinfo: decoding around it could mint a new triplet
//!   (`%2%41` would become `%2A`), changing meaning on a second pass.
//! - **Raw characters RFC 3986 does not allow** (`"`, `<`, `>`, `^`, `` ` ``,
//!   `{`, `|`, `}`) are preserved byte-for-byte in path and query, as HTTP
//!   stacks deliver them; control characters, space and DEL are rejected; a
//!   backslash is rejected in the path (servers that fold it into `/` would
//!   route a resource other than the one signed).
//! - **Raw non-ASCII** is rejected by [`canonicalize_received`] anywhere.
//!   [`canonicalize`] converts a non-ASCII host with UTS-46 and
//!   percent-encodes non-ASCII path and query bytes as UTF-8 (the RFC 3987
//!   IRI-to-URI mapping); userinfo is stripped either way.
//! - **Numeric hosts.** A host whose last label is a number (`127.1`,
//!   `2130706433`, `0x7f.0.0.1`, `010.0.0.1`, `1.2.3.4.`) is accepted only
//!   as strict dotted-decimal IPv4 without leading zeros; anything else is
//!   rejected because resolvers disagree on what it names (an SSRF hazard).
//! - **IPv6 literals** are validated, and only their hex digits lowercased:
//!   the spec lowercases, it does not re-compress (`[2001:db8:0::1]` stays as
//!   written). IPvFuture literals and zone identifiers are rejected.
//! - **Ports** are decimal 1–65535, canonicalized by their number: leading
//!   zeros are allowed (RFC 3986 `port = *DIGIT`) and dropped, so `:0443`
//!   is port 443 and stripped as the https default, and `:08443` is written
//!   `:8443`; an empty port (`host:`) is dropped as RFC 3986 §6.2.3
//!   prescribes.
//! - **Percent-encoding in a host** is rejected: a producer must hand over a
//!   U-label or A-label, not an encoded one.
//! - **Scheme-relative or authority-less input** (`//host/p`, `mailto:x`) is
//!   rejected: identity URLs always have `scheme://authority`. Default ports
//!   are known for `http` (80) and `https` (443) only.
//! - **Length.** Inputs over [`MAX_INPUT_LEN`] bytes are rejected, which
//!   bounds every allocation.
//!
//! # URN equivalence and lossy normalization
//!
//! [`urn`] implements RFC 8141 §3 URN-equivalence. `normalize` (behind the
//! `normalize` feature, which also brings its TOML/JSON site-rule parsing
//! dependencies) is a separate, explicitly lossy normalizer for
//! deduplicating URLs (sorting queries, dropping `utm_*`, `www.` aliasing
//! driven by site rules). It is never used for identity or signing.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod authority_header;
mod chars;
mod error;
mod identity;
#[cfg(feature = "normalize")]
pub mod normalize;
mod origin;
mod profile;
pub mod urn;

pub use authority_header::{canonicalize_authority_header, derive_authority};
pub use error::{CanonError, Component, ErrorKind};
pub use identity::{canonicalize, canonicalize_received, CanonicalUrl, HostKind, MAX_INPUT_LEN};
pub use origin::canonicalize_origin;
pub use profile::{Profile, UnknownProfile};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
