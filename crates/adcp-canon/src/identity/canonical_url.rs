//! The value a successful canonicalization returns.

use std::fmt;

/// The kind of host in a canonical URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostKind {
    /// A DNS name in lowercase A-label form, without the root dot.
    Domain,
    /// A dotted-decimal IPv4 address.
    Ipv4,
    /// A bracketed IPv6 literal with lowercase hex digits.
    Ipv6,
}

/// A URL in AdCP canonical form: the `@target-uri`, with its `@authority`
/// and origin available without re-parsing.
///
/// Two URLs identify the same resource exactly when their canonical forms
/// are byte-equal; `Eq` and `Hash` compare [`CanonicalUrl::as_str`].
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CanonicalUrl {
    serialization: String,
    /// `serialization[..scheme_end]` is the scheme; `://` follows.
    scheme_end: u32,
    host_end: u32,
    path_start: u32,
    /// Index of the `?`, if any.
    query_start: Option<u32>,
    port: Option<u16>,
    host_kind: HostKind,
}

impl CanonicalUrl {
    /// Assembles the value; offsets index into `serialization`, which is
    /// capped far below `u32::MAX` by `MAX_INPUT_LEN`.
    pub(crate) fn from_parts(
        serialization: String,
        scheme_end: usize,
        host_end: usize,
        path_start: usize,
        query_start: Option<usize>,
        port: Option<u16>,
        host_kind: HostKind,
    ) -> Self {
        let narrow = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        Self {
            serialization,
            scheme_end: narrow(scheme_end),
            host_end: narrow(host_end),
            path_start: narrow(path_start),
            query_start: query_start.map(narrow),
            port,
            host_kind,
        }
    }

    /// The canonical URL: the exact `@target-uri` component value.
    pub fn as_str(&self) -> &str {
        &self.serialization
    }

    /// Consumes the value, returning the canonical URL string.
    pub fn into_string(self) -> String {
        self.serialization
    }

    /// The lowercase scheme (`https`).
    pub fn scheme(&self) -> &str {
        &self.serialization[..self.scheme_end as usize]
    }

    /// `host[:port]` exactly as it appears in the canonical URL: the
    /// `@authority` component value. IPv6 hosts keep their brackets.
    pub fn authority(&self) -> &str {
        &self.serialization[self.authority_start()..self.path_start as usize]
    }

    /// The canonical host: lowercase A-label, dotted-decimal IPv4, or a
    /// bracketed IPv6 literal.
    pub fn host(&self) -> &str {
        &self.serialization[self.authority_start()..self.host_end as usize]
    }

    /// What kind of host this is.
    pub fn host_kind(&self) -> HostKind {
        self.host_kind
    }

    /// The explicit port, present only when it is not the scheme's default.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// The port a connection uses: the explicit port, else the scheme's
    /// default (`None` for schemes without one).
    pub fn port_or_default(&self) -> Option<u16> {
        self.port.or_else(|| default_port(self.scheme()))
    }

    /// `scheme://host[:port]`, the URL's origin in canonical form.
    pub fn origin(&self) -> &str {
        &self.serialization[..self.path_start as usize]
    }

    /// The path: starts with `/`, never empty.
    pub fn path(&self) -> &str {
        let end = self.query_start.map_or(self.serialization.len(), |q| q as usize);
        &self.serialization[self.path_start as usize..end]
    }

    /// The query without its `?`; `Some("")` for a trailing `?`, `None`
    /// when the URL has no `?` at all.
    pub fn query(&self) -> Option<&str> {
        self.query_start.map(|q| &self.serialization[q as usize + 1..])
    }

    /// The path and query (`/p?x=1`): the HTTP/1.1 request target.
    pub fn path_and_query(&self) -> &str {
        &self.serialization[self.path_start as usize..]
    }

    fn authority_start(&self) -> usize {
        self.scheme_end as usize + 3
    }
}

/// The default port of `scheme`, for the schemes whose default the
/// canonicalization strips.
pub(crate) fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    }
}

impl fmt::Display for CanonicalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.serialization)
    }
}

impl fmt::Debug for CanonicalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CanonicalUrl").field(&self.serialization).finish()
    }
}

impl AsRef<str> for CanonicalUrl {
    fn as_ref(&self) -> &str {
        &self.serialization
    }
}

impl PartialEq<str> for CanonicalUrl {
    fn eq(&self, other: &str) -> bool {
        self.serialization == other
    }
}

impl PartialEq<&str> for CanonicalUrl {
    fn eq(&self, other: &&str) -> bool {
        self.serialization == *other
    }
}

impl From<CanonicalUrl> for String {
    fn from(url: CanonicalUrl) -> Self {
        url.serialization
    }
}
