//! AdCP URL identity canonicalization: the eight steps, one pass.
//!
//! The parser is written against RFC 3986 on purpose. A WHATWG URL parser
//! rewrites bytes this profile forbids touching (backslashes become `/`,
//! `127.1` becomes `127.0.0.1`, queries get re-encoded), so two conformant
//! peers would sign different bytes for the same request.

mod authority;
mod canonical_url;
mod dot_segments;
mod host;
mod percent;

pub use canonical_url::{CanonicalUrl, HostKind};

pub(crate) use authority::host_port_into;
pub(crate) use canonical_url::default_port;

use crate::chars::is_scheme_char;
use crate::{CanonError, Component, ErrorKind};

/// Longest input accepted, in bytes. Canonical output is never longer than
/// the input plus one byte for ASCII input, so memory is bounded by it.
pub const MAX_INPUT_LEN: usize = 16 * 1024;

/// Which side of the wire the input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A URL a producer is about to sign or register: U-label hosts are
    /// converted with UTS-46, raw non-ASCII in path or query is
    /// percent-encoded as UTF-8.
    Producer,
    /// A URL or header as received: any raw non-ASCII byte is rejected.
    Received,
}

/// Canonicalizes a URL a producer is about to sign, register or compare.
///
/// Accepts U-label hosts (`https://bücher.example/`) and converts them to
/// A-labels with UTS-46 Nontransitional processing; raw non-ASCII in the
/// path or query is percent-encoded as UTF-8. Use
/// [`canonicalize_received`] for URLs taken off the wire.
///
/// ```
/// let url = adcp_canon::canonicalize("HTTPS://Bücher.Example.:443/a/./b/../c?x=%7e#frag")?;
/// assert_eq!(url.as_str(), "https://xn--bcher-kva.example/a/c?x=~");
/// assert_eq!(url.authority(), "xn--bcher-kva.example");
/// # Ok::<(), adcp_canon::CanonError>(())
/// ```
pub fn canonicalize(input: &str) -> Result<CanonicalUrl, CanonError> {
    run(input.as_bytes(), Mode::Producer)
}

/// Canonicalizes a URL as received on the wire (a reconstructed request
/// target, a URL field of a received document).
///
/// Identical to [`canonicalize`] on ASCII input; a raw non-ASCII byte
/// anywhere is rejected with [`ErrorKind::NonAscii`], because receivers must
/// not silently re-normalize what a conformant producer would have encoded.
///
/// ```
/// use adcp_canon::{canonicalize_received, ErrorKind};
/// let url = canonicalize_received(b"https://seller.example.com:8443/p?")?;
/// assert_eq!(url.as_str(), "https://seller.example.com:8443/p?");
/// let err = canonicalize_received("https://bücher.example/p").unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::NonAscii);
/// # Ok::<(), adcp_canon::CanonError>(())
/// ```
pub fn canonicalize_received(input: impl AsRef<[u8]>) -> Result<CanonicalUrl, CanonError> {
    run(input.as_ref(), Mode::Received)
}

fn run(input: &[u8], mode: Mode) -> Result<CanonicalUrl, CanonError> {
    if input.is_empty() {
        return Err(CanonError::new(ErrorKind::Empty, Component::Input, 0, b""));
    }
    if input.len() > MAX_INPUT_LEN {
        return Err(CanonError::new(
            ErrorKind::TooLong,
            Component::Input,
            MAX_INPUT_LEN,
            b"",
        ));
    }

    // Step 1: scheme.
    let scheme_len = scheme_len(input)?;
    let mut out = Vec::with_capacity(input.len() + 1);
    out.extend(input[..scheme_len].iter().map(u8::to_ascii_lowercase));
    let scheme_end = out.len();
    let after_colon = &input[scheme_len + 1..];
    if !after_colon.starts_with(b"//") {
        return Err(CanonError::new(
            ErrorKind::MissingAuthority,
            Component::Authority,
            scheme_len + 1,
            after_colon,
        ));
    }
    out.extend_from_slice(b"://");

    // Steps 2-4: authority.
    let auth_start = scheme_len + 3;
    let auth_len = input[auth_start..]
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(input.len() - auth_start);
    let auth_end = auth_start + auth_len;
    let authority = &input[auth_start..auth_end];
    if authority.is_empty() {
        return Err(CanonError::new(
            ErrorKind::EmptyAuthority,
            Component::Authority,
            auth_start,
            b"",
        ));
    }
    let hostport_off = authority::strip_userinfo(authority, auth_start, mode)?;
    // The scheme was lowercased into `out`, so it is ASCII.
    let default = default_port(std::str::from_utf8(&out[..scheme_end]).unwrap_or_default());
    let hp = host_port_into(
        &authority[hostport_off..],
        auth_start + hostport_off,
        default,
        mode,
        Component::Authority,
        &mut out,
    )?;

    // Steps 5-6: path. Percent-encoding is normalized before dot segments
    // are removed (RFC 3986 §6.2.2 order), which keeps the result
    // idempotent: `/a/%2E%2E/b` is `/b` on the first pass, not `/a/../b`.
    let path_start = out.len();
    let rest = &input[auth_end..];
    let path_len = rest.iter().position(|&b| b == b'?' || b == b'#').unwrap_or(rest.len());
    percent::normalize_into(&rest[..path_len], auth_end, Component::Path, mode, &mut out)?;
    if out.len() == path_start {
        out.push(b'/');
    } else {
        dot_segments::remove_dot_segments(&mut out, path_start);
    }

    // Steps 6-7: query (order and `+` preserved, `?` kept even when empty).
    // Step 8: the fragment is dropped unread.
    let mut query_start = None;
    if rest.get(path_len) == Some(&b'?') {
        let q = &rest[path_len + 1..];
        let q_len = q.iter().position(|&b| b == b'#').unwrap_or(q.len());
        query_start = Some(out.len());
        out.push(b'?');
        percent::normalize_into(&q[..q_len], auth_end + path_len + 1, Component::Query, mode, &mut out)?;
    }

    let serialization =
        String::from_utf8(out).map_err(|_| CanonError::new(ErrorKind::InvalidCharacter, Component::Input, 0, input))?;
    Ok(CanonicalUrl::from_parts(
        serialization,
        scheme_end,
        hp.host_end,
        path_start,
        query_start,
        hp.port,
        hp.kind,
    ))
}

/// Length of the scheme; `input[len]` is the `:`.
fn scheme_len(input: &[u8]) -> Result<usize, CanonError> {
    let len = input.iter().position(|&b| !is_scheme_char(b)).unwrap_or(input.len());
    if input.get(len) != Some(&b':') {
        let kind = if input.contains(&b':') {
            ErrorKind::InvalidScheme
        } else {
            ErrorKind::MissingScheme
        };
        return Err(CanonError::new(kind, Component::Scheme, len, &input[..len]));
    }
    if len == 0 || !input[0].is_ascii_alphabetic() {
        return Err(CanonError::new(
            ErrorKind::InvalidScheme,
            Component::Scheme,
            0,
            &input[..len],
        ));
    }
    Ok(len)
}
