//! Registrable domains (eTLD+1) from a vendored, dated Public Suffix List.
//!
//! The spec requires a **pinned, dated** PSL snapshot with both the ICANN
//! and the PRIVATE sections (so `github.io`, `pages.dev`, `vercel.app` are
//! suffixes and two tenants on them are two registrants), and forbids
//! fetching the list at run time. The snapshot is compiled in from
//! `data/public_suffix_list.dat`; [`PSL_VERSION`] names it. Updating it is a
//! reviewed change of that file and of the constants below, never a runtime
//! download.
//!
//! The matcher implements the PSL algorithm (<https://publicsuffix.org/list/>):
//! the longest matching rule wins, `*` matches one label, `!` exception
//! rules win over wildcards, and a name no rule matches has its last label
//! as the public suffix. Inputs are canonicalized first: ASCII-lowercase,
//! IDNA A-labels (Punycode), trailing dot dropped, so `Example.COM`,
//! `example.com.` and U-label forms compare equal.
//!
//! ```
//! use adcp_jwks::psl::registrable_domain;
//!
//! assert_eq!(registrable_domain("www.example.co.uk").as_deref(), Some("example.co.uk"));
//! assert_eq!(registrable_domain("victim.github.io").as_deref(), Some("victim.github.io"));
//! assert_eq!(registrable_domain("co.uk"), None); // a public suffix has no eTLD+1
//! ```

use std::collections::HashSet;
use std::sync::OnceLock;

/// The vendored list, verbatim (Mozilla Public License 2.0).
const PSL_DAT: &str = include_str!("../data/public_suffix_list.dat");

/// The `VERSION` line of the vendored snapshot (its publication time).
pub const PSL_VERSION: &str = "2026-10-22_08-36-41_UTC";

/// The upstream commit of the vendored snapshot.
pub const PSL_COMMIT: &str = "8437e5262f13305f94087abe699b4fe2be1d1de8";

/// Longest host this module looks at (DNS limit).
const MAX_HOST_LEN: usize = 253;

struct Rules {
    /// Plain rules (`co.uk`).
    exact: HashSet<Box<str>>,
    /// Parents of wildcard rules (`*.ck` → `ck`).
    wildcard: HashSet<Box<str>>,
    /// Exception rules without the `!` (`!www.ck` → `www.ck`).
    exception: HashSet<Box<str>>,
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        let mut r = Rules {
            exact: HashSet::new(),
            wildcard: HashSet::new(),
            exception: HashSet::new(),
        };
        for line in PSL_DAT.lines() {
            // A rule is the first whitespace-delimited token of a line.
            let Some(rule) = line.split_whitespace().next() else {
                continue;
            };
            if rule.starts_with("//") {
                continue;
            }
            let (set, body) = if let Some(rest) = rule.strip_prefix('!') {
                (&mut r.exception, rest)
            } else if let Some(rest) = rule.strip_prefix("*.") {
                (&mut r.wildcard, rest)
            } else {
                (&mut r.exact, rule)
            };
            let Some(ascii) = to_ascii(body) else {
                continue;
            };
            set.insert(ascii.into_boxed_str());
        }
        r
    })
}

/// Canonical form of a host name: ASCII-lowercase, IDNA A-labels, no
/// trailing dot. `None` for an empty, overlong or non-convertible name.
pub fn canonical_host(host: &str) -> Option<String> {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.len() > MAX_HOST_LEN {
        return None;
    }
    to_ascii(host)
}

fn to_ascii(name: &str) -> Option<String> {
    if name.is_ascii() {
        let lower = name.to_ascii_lowercase();
        // Already-ASCII names may still hold A-labels; validate shape only.
        if lower.split('.').any(str::is_empty) {
            return None;
        }
        return Some(lower);
    }
    let ascii = idna::domain_to_ascii(name).ok()?;
    if ascii.is_empty() || ascii.split('.').any(str::is_empty) {
        return None;
    }
    Some(ascii)
}

/// The public suffix of a canonical host (a suffix of `host`).
fn public_suffix(host: &str) -> &str {
    let r = rules();
    // Candidate suffixes from longest to shortest: the whole host, then
    // after each dot.
    let starts = std::iter::once(0).chain(host.match_indices('.').map(|(i, _)| i + 1));
    for start in starts {
        let suffix = &host[start..];
        if r.exception.contains(suffix) {
            // The public suffix is the exception rule minus its first label.
            return suffix.split_once('.').map_or(suffix, |(_, parent)| parent);
        }
        if r.exact.contains(suffix) {
            return suffix;
        }
        if let Some((_, parent)) = suffix.split_once('.') {
            if r.wildcard.contains(parent) {
                return suffix;
            }
        }
    }
    // The implicit `*` rule: the last label.
    host.rsplit_once('.').map_or(host, |(_, last)| last)
}

/// The registrable domain (eTLD+1) of `host` under the vendored snapshot,
/// canonicalized; `None` when the host is itself a public suffix, is an IP
/// literal, or is not a valid name.
pub fn registrable_domain(host: &str) -> Option<String> {
    if host.starts_with('[') || host.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    let host = canonical_host(host)?;
    let suffix_len = public_suffix(&host).len();
    if suffix_len >= host.len() {
        return None;
    }
    // host = "<prefix>.<suffix>"; take the last label of the prefix.
    let prefix = &host[..host.len() - suffix_len - 1];
    let label_start = prefix.rfind('.').map_or(0, |i| i + 1);
    Some(host[label_start..].to_owned())
}

/// Whether two hosts share a registrable domain (both must have one).
pub fn same_registrable_domain(a: &str, b: &str) -> bool {
    match (registrable_domain(a), registrable_domain(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn snapshot_is_the_dated_one() {
        assert!(PSL_DAT.contains(&format!("// VERSION: {PSL_VERSION}")));
        assert!(PSL_DAT.contains(&format!("// COMMIT: {PSL_COMMIT}")));
        assert!(PSL_DAT.contains("===BEGIN PRIVATE DOMAINS==="));
    }

    #[test]
    fn etld_plus_one() {
        let cases: &[(&str, Option<&str>)] = &[
            ("example.com", Some("example.com")),
            ("www.example.com", Some("example.com")),
            ("a.b.c.example.com", Some("example.com")),
            ("com", None),
            ("example.co.uk", Some("example.co.uk")),
            ("www.example.co.uk", Some("example.co.uk")),
            ("co.uk", None),
            // PRIVATE section.
            ("victim.github.io", Some("victim.github.io")),
            ("www.victim.github.io", Some("victim.github.io")),
            ("github.io", None),
            ("my-site.pages.dev", Some("my-site.pages.dev")),
            // Unknown TLD: implicit `*` rule.
            ("pub.example", Some("pub.example")),
            ("cdn.pub.example", Some("pub.example")),
            ("example", None),
            // Wildcard and exception rules (`*.ck`, `!www.ck`).
            ("foo.bar.ck", Some("foo.bar.ck")),
            ("bar.ck", None),
            ("www.ck", Some("www.ck")),
            ("a.www.ck", Some("www.ck")),
            // Canonicalization: case, trailing dot, U-labels.
            ("WWW.Example.COM", Some("example.com")),
            ("www.example.com.", Some("example.com")),
            ("bücher.example.de", Some("example.de")),
            ("www.bücher.de", Some("xn--bcher-kva.de")),
            // IP literals and junk.
            ("127.0.0.1", None),
            ("[::1]", None),
            ("", None),
            (".", None),
            ("a..b.com", None),
        ];
        for (host, want) in cases {
            assert_eq!(registrable_domain(host).as_deref(), *want, "{host}");
        }
    }

    #[test]
    fn same_domain() {
        assert!(same_registrable_domain("ladepeche.fr", "www.ladepeche.fr"));
        assert!(!same_registrable_domain("victim.github.io", "attacker.github.io"));
        assert!(!same_registrable_domain("example.co.uk", "example.com"));
        assert!(!same_registrable_domain("co.uk", "co.uk"));
    }

    proptest! {
        #[test]
        fn never_panics_and_is_a_suffix(host in "[a-zA-Z0-9.*!-]{0,60}") {
            if let Some(d) = registrable_domain(&host) {
                let canon = canonical_host(&host).unwrap();
                prop_assert!(canon.ends_with(&d));
                prop_assert!(canon.len() == d.len() || canon[..canon.len() - d.len()].ends_with('.'));
            }
        }

        #[test]
        fn unicode_never_panics(host in "\\PC{0,40}") {
            let _ = registrable_domain(&host);
        }
    }
}
