//! `@authority` derivation from a received request (`:authority` / `Host`).

use crate::identity::{default_port, host_port_into, CanonicalUrl, Mode};
use crate::{CanonError, Component, ErrorKind};

/// Canonicalizes a received `Host` or HTTP/2 `:authority` value
/// (`host[:port]`) for a request whose scheme is `scheme`: lowercase host,
/// A-label, one root dot removed, IPv6 hex lowercased, default port dropped.
///
/// Userinfo is not allowed in either header (RFC 9110 §7.2, RFC 9113
/// §8.3.1) and raw non-ASCII bytes are rejected.
///
/// ```
/// assert_eq!(adcp_canon::canonicalize_authority_header(b"Seller.Example.COM.:443", "https")?, "seller.example.com");
/// assert_eq!(adcp_canon::canonicalize_authority_header(b"[::1]:8443", "https")?, "[::1]:8443");
/// # Ok::<(), adcp_canon::CanonError>(())
/// ```
pub fn canonicalize_authority_header(value: &[u8], scheme: &str) -> Result<String, CanonError> {
    if value.len() > crate::MAX_INPUT_LEN {
        return Err(CanonError::new(ErrorKind::TooLong, Component::AuthorityHeader, 0, b""));
    }
    if let Some(at) = value.iter().position(|&b| b == b'@') {
        return Err(CanonError::new(
            ErrorKind::InvalidUserinfo,
            Component::AuthorityHeader,
            at,
            value,
        ));
    }
    if let Some(at) = value.iter().position(|&b| matches!(b, b'/' | b'?' | b'#')) {
        return Err(CanonError::new(
            ErrorKind::InvalidHostCharacter,
            Component::AuthorityHeader,
            at,
            value,
        ));
    }
    let mut out = Vec::with_capacity(value.len());
    let scheme = scheme.to_ascii_lowercase();
    host_port_into(
        value,
        0,
        default_port(&scheme),
        Mode::Received,
        Component::AuthorityHeader,
        &mut out,
    )?;
    String::from_utf8(out).map_err(|_| CanonError::new(ErrorKind::NonAscii, Component::AuthorityHeader, 0, value))
}

/// Derives the verified `@authority` of a received request and checks it
/// against the canonical `@target-uri`.
///
/// The source is the HTTP/2+ `:authority` pseudo-header when present, else
/// the HTTP/1.1 `Host` header, never proxy routing state. When both are
/// present they must be byte-equal after canonicalization (a pick-one rule
/// would be a downgrade surface). Whichever is used must byte-match
/// `target.authority()`: that match is the gate against cross-vhost replay.
/// Every failure maps to `*_target_uri_malformed`.
///
/// ```
/// let target = adcp_canon::canonicalize_received("https://buyer.example.com/webhooks")?;
/// let authority = adcp_canon::derive_authority(&target, None, Some(b"Buyer.Example.com:443"))?;
/// assert_eq!(authority, "buyer.example.com");
/// assert!(adcp_canon::derive_authority(&target, None, Some(b"other.example.com")).is_err());
/// # Ok::<(), adcp_canon::CanonError>(())
/// ```
pub fn derive_authority<'t>(
    target: &'t CanonicalUrl,
    h2_authority: Option<&[u8]>,
    host: Option<&[u8]>,
) -> Result<&'t str, CanonError> {
    let scheme = target.scheme();
    let derived = match (h2_authority, host) {
        (None, None) => {
            return Err(CanonError::new(
                ErrorKind::MissingAuthorityHeader,
                Component::AuthorityHeader,
                0,
                b"",
            ))
        }
        (Some(a), None) => canonicalize_authority_header(a, scheme)?,
        (None, Some(h)) => canonicalize_authority_header(h, scheme)?,
        (Some(a), Some(h)) => {
            let a = canonicalize_authority_header(a, scheme)?;
            let h = canonicalize_authority_header(h, scheme)?;
            if a != h {
                return Err(CanonError::new(
                    ErrorKind::AuthorityHeadersDisagree,
                    Component::AuthorityHeader,
                    0,
                    format!("{a} != {h}").as_bytes(),
                ));
            }
            a
        }
    };
    if derived != target.authority() {
        return Err(CanonError::new(
            ErrorKind::AuthorityMismatch,
            Component::AuthorityHeader,
            0,
            format!("{derived} != {}", target.authority()).as_bytes(),
        ));
    }
    Ok(target.authority())
}
