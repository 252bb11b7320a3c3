//! Host patterns that key [`SiteRules`](super::SiteRules).
//!
//! Three forms exist:
//!
//! | written | variant | matches |
//! | --- | --- | --- |
//! | `example.com` | [`HostPattern::Exact`] | exactly that host |
//! | `*.example.com` | [`HostPattern::Subdomains`] | any host *below* `example.com`, at any depth (`a.example.com`, `a.b.example.com`), but not `example.com` itself |
//! | `*` | [`HostPattern::Any`] | every host |
//!
//! Host names in patterns go through the same canonicalizer as URLs
//! (lowercase, IDNA to A-labels, IPv6 with brackets), so `Bücher.example`
//! and `xn--bcher-kva.example` are the same pattern. Ports are not part of a
//! pattern: a rule applies to every port of its host.

use std::cmp::Ordering;
use std::fmt;

use crate::{canonicalize, CanonError, HostKind};

/// A host pattern: an exact host, all subdomains of a domain, or every host.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostPattern {
    /// `*`: every host. Least specific.
    Any,
    /// `*.suffix`: every host strictly below `suffix` (held canonical,
    /// without the `*.`).
    Subdomains(String),
    /// An exact canonical host. Most specific.
    Exact(String),
}

/// Why a host pattern was rejected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HostPatternError {
    /// The pattern is empty.
    Empty,
    /// `*` appears somewhere other than as the whole pattern or a leading `*.`.
    MisplacedWildcard,
    /// The pattern contains a character that cannot be part of a host
    /// (`/`, `?`, `#`, `@`, `\`, `%`, whitespace, control, or `:` outside IPv6 brackets).
    InvalidChar(char),
    /// `*.` is followed by an IP address; wildcards only apply to domain names.
    WildcardOnIpAddress,
    /// The host was rejected by the canonicalizer.
    Canonicalize(CanonError),
}

impl fmt::Display for HostPatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty host pattern"),
            Self::MisplacedWildcard => {
                f.write_str("`*` is only allowed as the whole pattern or as a leading `*.` label")
            }
            Self::InvalidChar(c) => write!(f, "character {c:?} is not allowed in a host pattern"),
            Self::WildcardOnIpAddress => {
                f.write_str("a `*.` wildcard must be followed by a domain name, not an IP address")
            }
            Self::Canonicalize(e) => write!(f, "invalid host: {e}"),
        }
    }
}

impl std::error::Error for HostPatternError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Canonicalize(e) => Some(e),
            _ => None,
        }
    }
}

impl HostPattern {
    /// Parses and canonicalizes a pattern as written in a rules file.
    pub fn parse(pattern: &str) -> Result<Self, HostPatternError> {
        if pattern.is_empty() {
            return Err(HostPatternError::Empty);
        }
        if pattern == "*" {
            return Ok(Self::Any);
        }
        if let Some(rest) = pattern.strip_prefix("*.") {
            let (host, kind) = canonical_host(rest)?;
            if kind != HostKind::Domain || is_ip_literal(&host) {
                return Err(HostPatternError::WildcardOnIpAddress);
            }
            return Ok(Self::Subdomains(host));
        }
        let (host, _) = canonical_host(pattern)?;
        Ok(Self::Exact(host))
    }

    /// Whether the pattern matches `host`, a canonical host as returned by
    /// [`CanonicalUrl::host`](crate::CanonicalUrl::host).
    pub fn matches(&self, host: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(h) => h == host,
            Self::Subdomains(suffix) => is_strict_subdomain(host, suffix),
        }
    }

    /// Compares how specific two patterns are; the greater one wins when
    /// both match a host. `Exact` beats `Subdomains`, which beats `Any`;
    /// between two `Subdomains` patterns the one with more labels wins.
    pub fn cmp_specificity(&self, other: &Self) -> Ordering {
        self.specificity().cmp(&other.specificity())
    }

    fn specificity(&self) -> (u8, usize) {
        match self {
            Self::Any => (0, 0),
            Self::Subdomains(s) => (1, label_count(s)),
            Self::Exact(h) => (2, label_count(h)),
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Subdomains(s) => write!(f, "*.{s}"),
            Self::Exact(h) => f.write_str(h),
        }
    }
}

impl std::str::FromStr for HostPattern {
    type Err = HostPatternError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Number of dot-separated labels in a host.
pub(crate) fn label_count(host: &str) -> usize {
    host.trim_end_matches('.').split('.').count()
}

/// Whether a canonical host is (or would be parsed as) an IP address:
/// bracketed IPv6, or a last label that is a number (`1.2.3.4`, `0x7f`).
pub(crate) fn is_ip_literal(host: &str) -> bool {
    if host.starts_with('[') {
        return true;
    }
    let trimmed = host.strip_suffix('.').unwrap_or(host);
    let last = trimmed.rsplit('.').next().unwrap_or("");
    (!last.is_empty() && last.bytes().all(|b| b.is_ascii_digit())) || last.starts_with("0x")
}

/// `host` is strictly below `suffix` (`a.example.com` below `example.com`).
pub(crate) fn is_strict_subdomain(host: &str, suffix: &str) -> bool {
    host.len() > suffix.len() + 1
        && host.ends_with(suffix)
        && host
            .get(..host.len() - suffix.len())
            .is_some_and(|head| head.ends_with('.'))
}

/// Runs a bare host through the URL canonicalizer.
fn canonical_host(host: &str) -> Result<(String, HostKind), HostPatternError> {
    if host.is_empty() {
        return Err(HostPatternError::Empty);
    }
    let bracketed = host.starts_with('[');
    for c in host.chars() {
        match c {
            '*' => return Err(HostPatternError::MisplacedWildcard),
            '/' | '?' | '#' | '@' | '\\' | '%' => return Err(HostPatternError::InvalidChar(c)),
            ':' if !bracketed => return Err(HostPatternError::InvalidChar(c)),
            c if c.is_whitespace() || c.is_control() => return Err(HostPatternError::InvalidChar(c)),
            _ => {}
        }
    }
    let canon = canonicalize(&format!("https://{host}/")).map_err(HostPatternError::Canonicalize)?;
    if canon.port().is_some() {
        return Err(HostPatternError::InvalidChar(':'));
    }
    Ok((canon.host().to_owned(), canon.host_kind()))
}
