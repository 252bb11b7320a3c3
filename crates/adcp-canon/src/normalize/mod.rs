//! Opt-in, **lossy** URL normalization for deduplication.
//!
//! A [`Normalizer`] first runs the exact AdCP identity canonicalizer
//! ([`canonicalize`](crate::canonicalize)), then applies the classic URL
//! normalization rules that the canonicalizer deliberately does not apply
//! because they can change which resource a URL names: removing `www.`,
//! directory index files, unwanted or default-valued query parameters,
//! sorting the query, lowercasing the path on case-insensitive servers, and
//! so on.
//!
//! Use it to decide "these two URLs are probably the same page" (crawl
//! frontiers, report aggregation, caches keyed by page). **Never use it for
//! identity, signing or authorization**: two URLs that normalize to the same
//! string may be different resources, so a signature or an allow-list keyed
//! by the normalized form could be satisfied by a URL the signer never saw.
//!
//! Every lossy rule is off by default; [`NormalizeOptions`] turns rules on
//! for all hosts and [`SiteRules`] (loaded from a JSON or TOML file) turn
//! them on per host. See [`Rule`] for the thirteen rules and the option
//! that controls each one, and `docs/normalization.md` for the file format.
//!
//! ```
//! use adcp_canon::normalize::{NormalizeOptions, Normalizer, SiteRules};
//!
//! let rules = SiteRules::from_json_str(r#"{
//!     "sites": {
//!         "example.com": {
//!             "www_alias": true,
//!             "directory_index": true,
//!             "remove_params": ["utm_*", "fbclid"],
//!             "sort_query": true
//!         }
//!     }
//! }"#)?;
//! let normalizer = Normalizer::with_site_rules(NormalizeOptions::default(), rules);
//!
//! let a = normalizer.normalize("HTTP://WWW.Example.com:80/a/./index.html?z=1&utm_source=x&b=2#top")?;
//! let b = normalizer.normalize("http://example.com/a/?b=2&z=1")?;
//! assert_eq!(a, "http://example.com/a/?b=2&z=1");
//! assert_eq!(a, b);
//!
//! // Without site rules only the meaning-preserving canonical form is applied.
//! let safe = Normalizer::default();
//! assert_eq!(
//!     safe.normalize("HTTP://WWW.Example.com:80/a/./index.html?z=1&utm_source=x#top")?,
//!     "http://www.example.com/a/index.html?z=1&utm_source=x",
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod file_format;
mod glob;
mod host_pattern;
pub mod limits;
mod normalizer;
mod options;
mod path;
mod query;
mod rule;
mod site_rules;
mod www;

pub use error::{NormalizeError, SiteRulesError};
pub use glob::{Glob, GlobError};
pub use host_pattern::{HostPattern, HostPatternError};
pub use normalizer::Normalizer;
pub use options::{DirectoryIndex, NormalizeOptions, ParamFilter, DEFAULT_DIRECTORY_INDEX};
pub use rule::Rule;
pub use site_rules::{RulesFormat, SiteMatch, SiteRule, SiteRules};
