//! Steps 2–4 on an authority: strip userinfo, canonicalize the host, drop
//! the default port. Shared by URLs and by `Host` / `:authority` headers.

use super::{host, Mode};
use crate::chars::{is_hex, is_sub_delim, is_unreserved};
use crate::{CanonError, Component, ErrorKind, HostKind};

/// What [`host_port_into`] wrote.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostPort {
    pub(crate) kind: HostKind,
    /// Offset in `out` where the host ends (and `:port`, if any, begins).
    pub(crate) host_end: usize,
    /// The explicit, non-default port.
    pub(crate) port: Option<u16>,
}

/// Returns the byte range of the host-and-port part of `authority`, after
/// validating and skipping the userinfo.
pub(crate) fn strip_userinfo(authority: &[u8], base: usize, mode: Mode) -> Result<usize, CanonError> {
    let Some(at) = authority.iter().position(|&b| b == b'@') else {
        return Ok(0);
    };
    let userinfo = &authority[..at];
    let err = |i: usize| {
        Err(CanonError::new(
            ErrorKind::InvalidUserinfo,
            Component::Userinfo,
            base + i,
            userinfo,
        ))
    };
    if authority[at + 1..].contains(&b'@') {
        return err(at);
    }
    let mut i = 0;
    while i < userinfo.len() {
        let b = userinfo[i];
        if b == b'%' {
            if !(userinfo.get(i + 1).is_some_and(|&h| is_hex(h)) && userinfo.get(i + 2).is_some_and(|&l| is_hex(l))) {
                return Err(CanonError::new(
                    ErrorKind::InvalidPercentEncoding,
                    Component::Userinfo,
                    base + i,
                    userinfo,
                ));
            }
            i += 3;
            continue;
        }
        let allowed = is_unreserved(b) || is_sub_delim(b) || b == b':' || (b >= 0x80 && mode == Mode::Producer);
        if !allowed {
            if b >= 0x80 {
                return Err(CanonError::new(
                    ErrorKind::NonAscii,
                    Component::Userinfo,
                    base + i,
                    userinfo,
                ));
            }
            return err(i);
        }
        i += 1;
    }
    Ok(at + 1)
}

/// Appends `host[:port]` in canonical form to `out`.
///
/// `hostport` has no userinfo; `default_port` is the scheme's default port
/// (443 for `https`, 80 for `http`), which is dropped.
pub(crate) fn host_port_into(
    hostport: &[u8],
    base: usize,
    default_port: Option<u16>,
    mode: Mode,
    component: Component,
    out: &mut Vec<u8>,
) -> Result<HostPort, CanonError> {
    let (kind, port_part, port_base) = if hostport.first() == Some(&b'[') {
        let Some(close) = hostport.iter().position(|&b| b == b']') else {
            return Err(CanonError::new(
                ErrorKind::UnclosedBracket,
                Component::Host,
                base,
                hostport,
            ));
        };
        host::ipv6_literal_into(&hostport[..=close], base, out)?;
        let rest = &hostport[close + 1..];
        match rest.first() {
            None => (HostKind::Ipv6, None, 0),
            Some(b':') => (HostKind::Ipv6, Some(&rest[1..]), close + 2),
            Some(_) => {
                return Err(CanonError::new(
                    ErrorKind::InvalidAfterBracket,
                    Component::Host,
                    base + close + 1,
                    rest,
                ))
            }
        }
    } else {
        let colons = hostport.iter().filter(|&&b| b == b':').count();
        if colons > 1 {
            return Err(CanonError::new(ErrorKind::BareIpv6, Component::Host, base, hostport));
        }
        let (host, port) = match hostport.iter().position(|&b| b == b':') {
            Some(c) => (&hostport[..c], Some((&hostport[c + 1..], c + 1))),
            None => (hostport, None),
        };
        if host.is_empty() {
            return Err(CanonError::new(ErrorKind::MissingHost, component, base, hostport));
        }
        if let Some(at) = host.iter().position(|&b| b == b'[' || b == b']') {
            return Err(CanonError::new(
                ErrorKind::InvalidHostCharacter,
                Component::Host,
                base + at,
                host,
            ));
        }
        let kind = host::reg_name_into(host, base, mode, out)?;
        match port {
            Some((p, at)) => (kind, Some(p), at),
            None => (kind, None, 0),
        }
    };
    let host_end = out.len();
    let port = match port_part {
        // `host:` with an empty port is the same as no port (RFC 3986 §6.2.3).
        None | Some([]) => None,
        Some(digits) => {
            let port = parse_port(digits)
                .ok_or_else(|| CanonError::new(ErrorKind::InvalidPort, Component::Port, base + port_base, digits))?;
            (Some(port) != default_port).then_some(port)
        }
    };
    if let Some(port) = port {
        out.push(b':');
        let mut digits = [0u8; 5];
        let mut n = port;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        out.extend_from_slice(&digits[i..]);
    }
    Ok(HostPort { kind, host_end, port })
}

/// 1–65535 in decimal, no sign, read by its number: RFC 3986 §3.2.3 allows
/// leading zeros (`port = *DIGIT`) and both official SDKs accept them, so
/// `:0443` is port 443 (and then dropped as the https default) and `:08443`
/// is written `:8443`. One canonical spelling per port keeps default-port
/// stripping exact. Zeros are skipped without a count limit: the input is
/// bounded by `MAX_INPUT_LEN`, and at most five significant digits are
/// folded, so nothing overflows.
fn parse_port(digits: &[u8]) -> Option<u16> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let first_significant = digits.iter().position(|&d| d != b'0').unwrap_or(digits.len());
    let significant = &digits[first_significant..];
    if significant.len() > 5 {
        return None;
    }
    let value = significant.iter().fold(0u32, |v, &d| v * 10 + u32::from(d - b'0'));
    u16::try_from(value).ok().filter(|&p| p != 0)
}

#[cfg(test)]
mod tests {
    use super::parse_port;

    #[test]
    fn ports() {
        assert_eq!(parse_port(b"443"), Some(443));
        assert_eq!(parse_port(b"65535"), Some(65535));
        assert_eq!(parse_port(b"0443"), Some(443));
        assert_eq!(parse_port(b"08443"), Some(8443));
        assert_eq!(parse_port(b"0000000000065535"), Some(65535));
        assert_eq!(parse_port(b"00001"), Some(1));
        for bad in [
            &b""[..],
            b"0",
            b"0000",
            b"65536",
            b"065536",
            b"99999",
            b"123456",
            b"+1",
            b"1a",
            b" 1",
            b"0x1bb",
        ] {
            assert_eq!(parse_port(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
