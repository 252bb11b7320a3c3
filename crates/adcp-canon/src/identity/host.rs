//! Step 2: canonicalize the host (IP literals, then DNS names through UTS-46).

use super::Mode;
use crate::{CanonError, Component, ErrorKind, HostKind};
use idna::uts46::{AsciiDenyList, DnsLength, Hyphens, Uts46};
use std::borrow::Cow;
use std::net::Ipv6Addr;

/// The UTS-46 processor: Nontransitional (the only mode of `idna` 1.x),
/// CheckBidi and CheckJoiners always on, flags pinned below.
static UTS46: Uts46 = Uts46::new();

/// Appends the canonical form of the bracketed literal `lit` (`[` … `]`
/// included) to `out`: brackets kept, hex digits lowercased, nothing else
/// rewritten (the spec lowercases; it does not re-compress).
pub(crate) fn ipv6_literal_into(lit: &[u8], base: usize, out: &mut Vec<u8>) -> Result<(), CanonError> {
    let inner = &lit[1..lit.len() - 1];
    let err = |kind| Err(CanonError::new(kind, Component::Host, base, lit));
    if inner.contains(&b'%') {
        return err(ErrorKind::Ipv6ZoneId);
    }
    if matches!(inner.first(), Some(b'v' | b'V')) {
        return err(ErrorKind::IpvFuture);
    }
    let valid = std::str::from_utf8(inner)
        .ok()
        .is_some_and(|s| s.parse::<Ipv6Addr>().is_ok());
    if !valid {
        return err(ErrorKind::InvalidIpv6);
    }
    out.push(b'[');
    out.extend(inner.iter().map(u8::to_ascii_lowercase));
    out.push(b']');
    Ok(())
}

/// Appends the canonical form of a registered name or IPv4 address to `out`.
///
/// `host` is non-empty, contains no `:`, `[` or `]`, and starts at byte
/// `base` of the input.
pub(crate) fn reg_name_into(host: &[u8], base: usize, mode: Mode, out: &mut Vec<u8>) -> Result<HostKind, CanonError> {
    let err = |kind, at: usize| Err(CanonError::new(kind, Component::Host, base + at, host));
    if let Some(at) = host.iter().position(|&b| b == b'%') {
        return err(ErrorKind::PercentEncodedHost, at);
    }
    if host.is_ascii() {
        return ascii_host_into(host, base, out);
    }
    if mode == Mode::Received {
        let at = host.iter().position(|b| !b.is_ascii()).unwrap_or(0);
        return err(ErrorKind::NonAscii, at);
    }
    if let Some(at) = host.iter().position(|&b| b < 0x20 || b == 0x7f) {
        return err(ErrorKind::InvalidCharacter, at);
    }
    // U-label path: UTS-46 processes the original code points (no ASCII
    // lowercasing first), then the same root-dot and numeric rules as the
    // ASCII path apply to the A-label result.
    let ascii = match UTS46.to_ascii(host, AsciiDenyList::STD3, Hyphens::Check, DnsLength::VerifyAllowRootDot) {
        Ok(a) => a,
        Err(_) => return err(ErrorKind::Idna, 0),
    };
    let ascii = ascii.as_bytes();
    let name = ascii.strip_suffix(b".").unwrap_or(ascii);
    if ends_in_number(name) {
        // A non-ASCII spelling of an IP address (fullwidth digits) is never
        // something a producer means to sign; refuse rather than guess.
        return err(ErrorKind::AmbiguousNumericHost, 0);
    }
    out.extend_from_slice(name);
    Ok(HostKind::Domain)
}

fn ascii_host_into(host: &[u8], base: usize, out: &mut Vec<u8>) -> Result<HostKind, CanonError> {
    let err = |kind, at: usize| Err(CanonError::new(kind, Component::Host, base + at, host));
    // Precise errors for the common shapes; UTS-46 below remains the judge.
    if let Some(at) = host
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'.'))
    {
        return err(ErrorKind::InvalidHostCharacter, at);
    }
    if host.ends_with(b"..") {
        return err(ErrorKind::MultipleTrailingDots, host.len() - 2);
    }
    if let Some(at) = empty_label_at(host) {
        return err(ErrorKind::EmptyLabel, at);
    }
    let name = host.strip_suffix(b".").unwrap_or(host);
    if ends_in_number(name) {
        // IPv4 is classified before IDNA: `idna` would pass `127.1` through
        // as a name, while resolvers read it as 127.0.0.1.
        if host.len() != name.len() || !is_dotted_decimal_ipv4(name) {
            return err(ErrorKind::AmbiguousNumericHost, 0);
        }
        out.extend_from_slice(name);
        return Ok(HostKind::Ipv4);
    }
    let start = out.len();
    out.extend(name.iter().map(u8::to_ascii_lowercase));
    // The common case, a plain LDH name, is one UTS-46 leaves unchanged:
    // skip the mapping (a property test keeps the two in agreement).
    if is_plain_ldh_name(&out[start..]) {
        return Ok(HostKind::Domain);
    }
    // UTS-46 ToASCII on the lowercased name. For ASCII input lowercasing
    // first is exactly UTS-46's own mapping, and it lets a valid name pass
    // through without allocating. The root dot was removed above, so the
    // ASCII and U-label paths treat it identically.
    let replaced = match UTS46.to_ascii(&out[start..], AsciiDenyList::STD3, Hyphens::Check, DnsLength::Verify) {
        Ok(Cow::Borrowed(_)) => None,
        Ok(Cow::Owned(s)) => Some(s),
        Err(_) => return err(ErrorKind::Idna, 0),
    };
    if let Some(s) = replaced {
        out.truncate(start);
        out.extend_from_slice(s.as_bytes());
    }
    Ok(HostKind::Domain)
}

/// Whether UTS-46 ToASCII (STD3 rules, hyphen checks, DNS lengths) leaves
/// this lowercase ASCII name unchanged and accepts it: every label 1–63
/// bytes of `a-z 0-9 -`, not starting or ending with `-`, without `--` in
/// its third and fourth positions (which also excludes `xn--` A-labels,
/// whose Punycode UTS-46 must check), and at most 253 bytes in all.
fn is_plain_ldh_name(name: &[u8]) -> bool {
    name.len() <= 253
        && name.split(|&b| b == b'.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .iter()
                    .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && label.first() != Some(&b'-')
                && label.last() != Some(&b'-')
                && label.get(2..4) != Some(b"--")
        })
}

/// Offset of the first empty label (leading dot or `..`), ignoring one
/// trailing root dot.
fn empty_label_at(host: &[u8]) -> Option<usize> {
    if host.first() == Some(&b'.') {
        return Some(0);
    }
    host.windows(2).position(|w| w == b"..")
}

/// The WHATWG "ends in a number" test: the last label is all digits or a
/// `0x` hex number. Such hosts are IPv4 addresses to some resolvers and
/// names to others, so only strict dotted-decimal is accepted.
fn ends_in_number(name: &[u8]) -> bool {
    let last = name.rsplit(|&b| b == b'.').next().unwrap_or(name);
    if last.is_empty() {
        return false;
    }
    if last.iter().all(u8::is_ascii_digit) {
        return true;
    }
    matches!(last, [b'0', b'x' | b'X', rest @ ..] if rest.iter().all(u8::is_ascii_hexdigit))
}

/// Exactly four decimal octets 0–255 without leading zeros.
fn is_dotted_decimal_ipv4(name: &[u8]) -> bool {
    let mut parts = 0;
    for part in name.split(|&b| b == b'.') {
        parts += 1;
        let ok = match part {
            [b'0'] => true,
            [b'1'..=b'9', rest @ ..] if rest.len() <= 2 && rest.iter().all(u8::is_ascii_digit) => {
                part.iter().fold(0u32, |v, &d| v * 10 + u32::from(d - b'0')) <= 255
            }
            _ => false,
        };
        if !ok || parts > 4 {
            return false;
        }
    }
    parts == 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_decimal() {
        for ok in ["0.0.0.0", "127.0.0.1", "255.255.255.255", "10.20.30.40"] {
            assert!(is_dotted_decimal_ipv4(ok.as_bytes()), "{ok}");
        }
        for bad in ["256.0.0.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1..3.4", "1.2.3.4a", ""] {
            assert!(!is_dotted_decimal_ipv4(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn numeric_tail() {
        for yes in ["127.1", "2130706433", "a.0x7f", "a.0X", "1.2.3.4"] {
            assert!(ends_in_number(yes.as_bytes()), "{yes}");
        }
        for no in ["example.com", "a.0xg", "1.2.3.4a", "x1"] {
            assert!(!ends_in_number(no.as_bytes()), "{no}");
        }
    }
}

#[cfg(test)]
mod ldh_fast_path_tests {
    use super::*;
    use proptest::prelude::*;

    fn uts46_unchanged(name: &[u8]) -> bool {
        matches!(
            UTS46.to_ascii(name, AsciiDenyList::STD3, Hyphens::Check, DnsLength::Verify),
            Ok(Cow::Borrowed(_))
        )
    }

    #[test]
    fn edge_cases_agree_with_uts46() {
        for name in [
            &b"buyer.example.com"[..],
            b"a",
            b"a-b.c",
            b"-a.b",
            b"a-.b",
            b"ab--c.d",
            b"xn--bcher-kva.example",
            b"xn--x.example",
            b"a..b",
            b"",
            &[b'a'; 63],
            &[b'a'; 64],
        ] {
            if is_plain_ldh_name(name) {
                assert!(uts46_unchanged(name), "{:?}", String::from_utf8_lossy(name));
            }
        }
        let long = [&[b'a'; 63][..], b".", &[b'b'; 63], b".", &[b'c'; 63], b".", &[b'd'; 61]].concat();
        assert_eq!(long.len(), 253);
        assert!(is_plain_ldh_name(&long) && uts46_unchanged(&long));
        let longer = [&long[..], b"d"].concat();
        assert!(!is_plain_ldh_name(&longer));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        #[test]
        fn the_fast_path_only_answers_where_uts46_leaves_the_name_unchanged(name in "[a-z0-9-]{1,12}(\\.[a-z0-9-]{1,12}){0,3}") {
            if is_plain_ldh_name(name.as_bytes()) {
                prop_assert!(uts46_unchanged(name.as_bytes()), "{}", name);
            }
        }
    }
}
