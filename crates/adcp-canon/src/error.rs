//! The one error type of URL identity canonicalization.

use crate::Profile;
use std::fmt;

/// The URL component an error refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Component {
    /// The whole input.
    Input,
    /// `scheme ":"`.
    Scheme,
    /// The authority (`//userinfo@host:port`).
    Authority,
    /// The userinfo before `@`.
    Userinfo,
    /// The host.
    Host,
    /// The port after the host.
    Port,
    /// The path.
    Path,
    /// The query after `?`.
    Query,
    /// An HTTP `Host` or `:authority` header value.
    AuthorityHeader,
}

impl Component {
    fn name(self) -> &'static str {
        match self {
            Component::Input => "input",
            Component::Scheme => "scheme",
            Component::Authority => "authority",
            Component::Userinfo => "userinfo",
            Component::Host => "host",
            Component::Port => "port",
            Component::Path => "path",
            Component::Query => "query",
            Component::AuthorityHeader => "authority header",
        }
    }
}

/// Why an input was rejected. Stable: tests and callers match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is empty.
    Empty,
    /// The input exceeds [`crate::MAX_INPUT_LEN`].
    TooLong,
    /// A control character, space or other byte that may not appear.
    InvalidCharacter,
    /// A raw non-ASCII byte in a received URL or header (receivers never re-normalize).
    NonAscii,
    /// No `scheme:` prefix.
    MissingScheme,
    /// The scheme has characters outside `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    InvalidScheme,
    /// The scheme is not followed by `//` (no authority).
    MissingAuthority,
    /// `scheme:///…`: the authority is empty.
    EmptyAuthority,
    /// The authority has userinfo or a port but no host.
    MissingHost,
    /// The userinfo has a second `@` or a character RFC 3986 does not allow.
    InvalidUserinfo,
    /// `[` without a closing `]`.
    UnclosedBracket,
    /// An IPv6 address outside brackets.
    BareIpv6,
    /// An IPv6 zone identifier (`%25…` inside brackets, RFC 6874).
    Ipv6ZoneId,
    /// The bracketed literal is not a valid IPv6 address.
    InvalidIpv6,
    /// `[v1.…]` IPvFuture literals are not supported.
    IpvFuture,
    /// Characters after `]` other than `:port`.
    InvalidAfterBracket,
    /// Percent-encoding in a host name.
    PercentEncodedHost,
    /// A host character outside letters, digits, `-` and `.` (UseSTD3ASCIIRules).
    InvalidHostCharacter,
    /// An empty DNS label (`a..b`, `.a`).
    EmptyLabel,
    /// More than one trailing dot (`example.com..`).
    MultipleTrailingDots,
    /// A host that ends in a number but is not a dotted-decimal IPv4 address
    /// (`127.1`, `0x7f.0.0.1`, `010.0.0.1`, `1.2.3.4.`, `2130706433`).
    AmbiguousNumericHost,
    /// UTS-46 ToASCII failed (hyphen placement, bidi rule, disallowed code point, DNS length).
    Idna,
    /// The port is not a number from 1 to 65535 written in decimal digits
    /// (leading zeros are allowed and dropped).
    InvalidPort,
    /// `%` not followed by two hex digits.
    InvalidPercentEncoding,
    /// A backslash in the path (path-confusion hazard: some servers treat it as `/`).
    Backslash,
    /// Neither `:authority` nor `Host` is present on a received request.
    MissingAuthorityHeader,
    /// `:authority` and `Host` are both present and differ after canonicalization.
    AuthorityHeadersDisagree,
    /// The received authority does not byte-match the authority of the canonical `@target-uri`.
    AuthorityMismatch,
}

impl ErrorKind {
    fn describe(self) -> &'static str {
        match self {
            ErrorKind::Empty => "empty input",
            ErrorKind::TooLong => "input is longer than the accepted maximum",
            ErrorKind::InvalidCharacter => "character not allowed",
            ErrorKind::NonAscii => {
                "raw non-ASCII byte in a received value (must be ToASCII/percent-encoded by the producer)"
            }
            ErrorKind::MissingScheme => "missing `scheme:`",
            ErrorKind::InvalidScheme => "invalid scheme",
            ErrorKind::MissingAuthority => "scheme must be followed by `//authority`",
            ErrorKind::EmptyAuthority => "empty authority",
            ErrorKind::MissingHost => "authority missing host",
            ErrorKind::InvalidUserinfo => "invalid userinfo",
            ErrorKind::UnclosedBracket => "IPv6 literal missing closing bracket",
            ErrorKind::BareIpv6 => "IPv6 literal not bracketed",
            ErrorKind::Ipv6ZoneId => "IPv6 zone identifier not allowed",
            ErrorKind::InvalidIpv6 => "invalid IPv6 literal",
            ErrorKind::IpvFuture => "IPvFuture literals are not supported",
            ErrorKind::InvalidAfterBracket => "only `:port` may follow an IPv6 literal",
            ErrorKind::PercentEncodedHost => "percent-encoding is not allowed in a host",
            ErrorKind::InvalidHostCharacter => "host character outside letters, digits, `-` and `.`",
            ErrorKind::EmptyLabel => "empty DNS label in hostname",
            ErrorKind::MultipleTrailingDots => "multiple trailing dots in DNS hostname",
            ErrorKind::AmbiguousNumericHost => "numeric host is not a dotted-decimal IPv4 address",
            ErrorKind::Idna => {
                "host fails UTS-46 ToASCII (nontransitional, CheckHyphens, CheckBidi, UseSTD3ASCIIRules, DNS length)"
            }
            ErrorKind::InvalidPort => "port must be a decimal number from 1 to 65535",
            ErrorKind::InvalidPercentEncoding => "`%` must be followed by two hex digits",
            ErrorKind::Backslash => "backslash in path",
            ErrorKind::MissingAuthorityHeader => "neither `:authority` nor `Host` is present",
            ErrorKind::AuthorityHeadersDisagree => "`:authority` and `Host` differ after canonicalization",
            ErrorKind::AuthorityMismatch => {
                "received authority does not match the authority of the canonical target URI"
            }
        }
    }
}

/// A rejected URL, host or authority header.
///
/// Carries a stable [`ErrorKind`], the [`Component`] at fault, the byte offset
/// in the input where the problem was found, and a sanitized excerpt of the
/// offending part. Every rejection maps to one spec code via [`CanonError::code`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonError {
    kind: ErrorKind,
    component: Component,
    offset: usize,
    excerpt: String,
}

/// Longest excerpt of the offending part kept in an error (bytes of input).
const EXCERPT_MAX: usize = 64;

impl CanonError {
    /// Builds an error; `part` is sanitized (control, non-ASCII and bidi
    /// characters escaped) and truncated so that errors are safe to log.
    pub(crate) fn new(kind: ErrorKind, component: Component, offset: usize, part: &[u8]) -> Self {
        Self {
            kind,
            component,
            offset,
            excerpt: sanitize(part),
        }
    }

    /// Why the input was rejected.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Which component was at fault.
    pub fn component(&self) -> Component {
        self.component
    }

    /// Byte offset in the input at which the problem was detected.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Sanitized excerpt of the offending part (safe to log).
    pub fn excerpt(&self) -> &str {
        &self.excerpt
    }

    /// The spec error code in the taxonomy of `profile`:
    /// `webhook_target_uri_malformed` or `request_target_uri_malformed`.
    pub fn code(&self, profile: Profile) -> &'static str {
        profile.target_uri_malformed_code()
    }
}

impl fmt::Display for CanonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} at byte {}",
            self.component.name(),
            self.kind.describe(),
            self.offset
        )?;
        if !self.excerpt.is_empty() {
            write!(f, " (`{}`)", self.excerpt)?;
        }
        Ok(())
    }
}

impl std::error::Error for CanonError {}

/// Escapes everything but printable ASCII so an attacker-chosen URL cannot
/// smuggle terminal escapes, bidi overrides or line breaks into logs.
fn sanitize(part: &[u8]) -> String {
    let cut = part.len().min(EXCERPT_MAX);
    let mut out = String::with_capacity(cut + 8);
    for &b in &part[..cut] {
        if (0x20..0x7f).contains(&b) && b != b'`' && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    if part.len() > cut {
        out.push('…');
    }
    out
}
