//! The SSRF guard: pure URL and address validation, no I/O.
//!
//! Implements steps 1–2 of the spec's "Webhook URL validation (SSRF)"
//! (HTTPS only, reserved-range rejection) for URLs and for every address a
//! name resolves to. Step 3 (pinning) is the [`fetch`](crate::fetch)
//! module's job: it connects only to addresses this module approved.
//!
//! Alternative IPv4 spellings (`2130706433`, `0x7f.1`, `0177.0.0.1`) need
//! no special case here: [`url::Url`] parses hosts with the WHATWG IPv4
//! parser, so they arrive as [`url::Host::Ipv4`] and are range-checked like
//! any literal. A host that is not an IP literal is a DNS name and is
//! checked after resolution.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use url::{Host, Url};

/// The opt-in hardened destination-port profile the spec suggests
/// (`{443, 8443}`). Never a default: by default ports are unrestricted.
pub const HARDENED_PORTS: &[u16] = &[443, 8443];

/// Why a URL or an address was refused. Messages never echo the input: they
/// are safe to log, but like every fetch error they must not be returned to
/// the party that supplied the URL (spec step 6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SsrfError {
    /// The URL does not parse.
    InvalidUrl,
    /// The scheme is not `https` (or `http` where the policy allows it).
    SchemeNotAllowed,
    /// The URL carries userinfo (`user:pass@`), a classic confusion vector.
    CredentialsInUrl,
    /// The URL has no host.
    MissingHost,
    /// The destination port is outside the configured allowlist.
    PortNotAllowed(u16),
    /// The address (literal or resolved) is in a reserved range.
    ReservedAddress(ReservedRange),
    /// The name resolved to no address.
    NoAddresses,
}

impl fmt::Display for SsrfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SsrfError::InvalidUrl => f.write_str("URL does not parse"),
            SsrfError::SchemeNotAllowed => f.write_str("URL scheme is not https"),
            SsrfError::CredentialsInUrl => f.write_str("URL carries credentials"),
            SsrfError::MissingHost => f.write_str("URL has no host"),
            SsrfError::PortNotAllowed(p) => write!(f, "destination port {p} is not allowed"),
            SsrfError::ReservedAddress(r) => write!(f, "destination address is reserved ({r})"),
            SsrfError::NoAddresses => f.write_str("name resolved to no address"),
        }
    }
}

impl std::error::Error for SsrfError {}

/// The reserved range an address fell in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReservedRange {
    /// `0.0.0.0/8` ("this network") or `::/128`.
    Unspecified,
    /// `127.0.0.0/8` or `::1`.
    Loopback,
    /// RFC 1918: `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// RFC 6598 CGNAT `100.64.0.0/10`.
    SharedCgnat,
    /// `169.254.0.0/16` (incl. `169.254.169.254` instance metadata) or `fe80::/10`.
    LinkLocal,
    /// `224.0.0.0/4` or `ff00::/8`.
    Multicast,
    /// `255.255.255.255` and the rest of `240.0.0.0/4` (reserved for future use).
    BroadcastOrReserved,
    /// IETF protocol assignments, documentation and benchmarking ranges
    /// (`192.0.0.0/24`, `192.0.2.0/24`, `198.18.0.0/15`, `198.51.100.0/24`,
    /// `203.0.113.0/24`, `2001:db8::/32`, `100::/64`): never a legitimate
    /// public server.
    SpecialPurpose,
    /// IPv6 unique-local `fc00::/7`.
    UniqueLocal,
    /// The AWS IMDSv2 IPv6 address `fd00:ec2::254`.
    CloudMetadata,
    /// IPv4-mapped `::ffff:0:0/96` (rejected whatever the embedded address).
    Ipv4Mapped,
    /// IPv6 forms that embed an IPv4 address (IPv4-compatible `::/96`,
    /// NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo
    /// `2001::/32`): rejected outright rather than decoded.
    Ipv4Embedding,
}

impl fmt::Display for ReservedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReservedRange::Unspecified => "unspecified",
            ReservedRange::Loopback => "loopback",
            ReservedRange::Private => "private",
            ReservedRange::SharedCgnat => "shared CGNAT",
            ReservedRange::LinkLocal => "link-local",
            ReservedRange::Multicast => "multicast",
            ReservedRange::BroadcastOrReserved => "broadcast or reserved",
            ReservedRange::SpecialPurpose => "special-purpose",
            ReservedRange::UniqueLocal => "unique-local",
            ReservedRange::CloudMetadata => "cloud metadata",
            ReservedRange::Ipv4Mapped => "IPv4-mapped",
            ReservedRange::Ipv4Embedding => "IPv4-embedding",
        })
    }
}

/// The reserved range `ip` is in, `None` for a routable public address.
pub fn reserved_range(ip: IpAddr) -> Option<ReservedRange> {
    match ip {
        IpAddr::V4(v4) => reserved_v4(v4),
        IpAddr::V6(v6) => reserved_v6(v6),
    }
}

fn reserved_v4(ip: Ipv4Addr) -> Option<ReservedRange> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => ReservedRange::Unspecified,
        (127, _, _) => ReservedRange::Loopback,
        (10, _, _) => ReservedRange::Private,
        (172, 16..=31, _) => ReservedRange::Private,
        (192, 168, _) => ReservedRange::Private,
        (100, 64..=127, _) => ReservedRange::SharedCgnat,
        (169, 254, _) => ReservedRange::LinkLocal,
        (224..=239, _, _) => ReservedRange::Multicast,
        (240..=255, _, _) => ReservedRange::BroadcastOrReserved,
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => ReservedRange::SpecialPurpose,
        (198, 18..=19, _) => ReservedRange::SpecialPurpose,
        _ => return None,
    })
}

fn reserved_v6(ip: Ipv6Addr) -> Option<ReservedRange> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some(ReservedRange::Unspecified);
    }
    if ip.is_loopback() {
        return Some(ReservedRange::Loopback);
    }
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        return Some(ReservedRange::CloudMetadata);
    }
    Some(match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => ReservedRange::Ipv4Mapped,
        [0, 0, 0, 0, 0, 0, _, _] => ReservedRange::Ipv4Embedding,
        [0x0064, 0xff9b, 0, 0, 0, 0, _, _] => ReservedRange::Ipv4Embedding,
        [0x0064, 0xff9b, 0x0001, ..] => ReservedRange::Ipv4Embedding,
        [0x2002, ..] => ReservedRange::Ipv4Embedding,
        [0x2001, 0, ..] => ReservedRange::Ipv4Embedding,
        [0x2001, 0x0db8, ..] => ReservedRange::SpecialPurpose,
        [0x0100, 0, 0, 0, ..] => ReservedRange::SpecialPurpose,
        [x, ..] if x & 0xfe00 == 0xfc00 => ReservedRange::UniqueLocal,
        [x, ..] if x & 0xffc0 == 0xfe80 => ReservedRange::LinkLocal,
        [x, ..] if x & 0xff00 == 0xff00 => ReservedRange::Multicast,
        _ => return None,
    })
}

/// What the guard accepts. The default is the production policy: HTTPS
/// only, every reserved range refused, any port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SsrfPolicy {
    allowed_ports: Option<Vec<u16>>,
    loopback_for_tests: bool,
}

impl SsrfPolicy {
    /// The production policy (same as [`Default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Restricts destination ports (opt-in; see [`HARDENED_PORTS`]). Ports
    /// are unrestricted by default, as the spec requires.
    pub fn with_allowed_ports(mut self, ports: impl IntoIterator<Item = u16>) -> Self {
        self.allowed_ports = Some(ports.into_iter().collect());
        self
    }

    /// **Tests only.** Accepts loopback addresses (`127.0.0.0/8`, `::1`) so
    /// that integration tests can reach servers on this machine. Every other
    /// reserved range, and the HTTPS requirement, still apply. Never enable
    /// this in production: it re-opens SSRF to local services.
    pub fn dangerously_allow_loopback_for_tests(mut self) -> Self {
        self.loopback_for_tests = true;
        self
    }

    /// Whether [`dangerously_allow_loopback_for_tests`](Self::dangerously_allow_loopback_for_tests) is on.
    pub fn allows_loopback(&self) -> bool {
        self.loopback_for_tests
    }

    /// Checks one address against the reserved ranges (and the test-only
    /// loopback exception).
    ///
    /// # Errors
    ///
    /// [`SsrfError::ReservedAddress`].
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), SsrfError> {
        match reserved_range(ip) {
            None => Ok(()),
            Some(ReservedRange::Loopback) if self.loopback_for_tests => Ok(()),
            Some(r) => Err(SsrfError::ReservedAddress(r)),
        }
    }

    /// Checks every address a name resolved to. One reserved address
    /// refuses the whole answer (an attacker controls the order clients
    /// try them in); an empty answer is refused too.
    ///
    /// # Errors
    ///
    /// [`SsrfError::NoAddresses`], [`SsrfError::ReservedAddress`].
    pub fn check_resolved(&self, addrs: &[IpAddr]) -> Result<(), SsrfError> {
        if addrs.is_empty() {
            return Err(SsrfError::NoAddresses);
        }
        addrs.iter().try_for_each(|ip| self.check_ip(*ip))
    }

    /// Validates a URL before any resolution: parses it, requires `https`,
    /// refuses userinfo, applies the port allowlist and range-checks IP
    /// literals (in every spelling the WHATWG parser accepts).
    ///
    /// # Errors
    ///
    /// Every [`SsrfError`] except [`SsrfError::NoAddresses`].
    pub fn check_url(&self, url: &str) -> Result<Url, SsrfError> {
        let parsed = Url::parse(url).map_err(|_| SsrfError::InvalidUrl)?;
        self.check_parsed_url(&parsed)?;
        Ok(parsed)
    }

    /// [`check_url`](Self::check_url) for an already parsed URL.
    ///
    /// # Errors
    ///
    /// As [`check_url`](Self::check_url).
    pub fn check_parsed_url(&self, url: &Url) -> Result<(), SsrfError> {
        if url.scheme() != "https" {
            return Err(SsrfError::SchemeNotAllowed);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(SsrfError::CredentialsInUrl);
        }
        let port = url.port_or_known_default().ok_or(SsrfError::MissingHost)?;
        if let Some(allowed) = &self.allowed_ports {
            if !allowed.contains(&port) {
                return Err(SsrfError::PortNotAllowed(port));
            }
        }
        match url.host() {
            None => Err(SsrfError::MissingHost),
            Some(Host::Ipv4(v4)) => self.check_ip(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => self.check_ip(IpAddr::V6(v6)),
            Some(Host::Domain("")) => Err(SsrfError::MissingHost),
            Some(Host::Domain(_)) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use proptest::prelude::*;

    fn prod() -> SsrfPolicy {
        SsrfPolicy::new()
    }

    #[test]
    fn hostile_urls_are_refused() {
        let table = [
            "http://example.com/",
            "ftp://example.com/",
            "file:///etc/passwd",
            "https://user:pw@example.com/",
            "https://127.0.0.1/",
            "https://127.1/",
            "https://2130706433/",
            "https://0x7f000001/",
            "https://0x7f.0.0.1/",
            "https://0177.0.0.1/",
            "https://017700000001/",
            "https://0.0.0.0/",
            "https://0/",
            "https://10.0.0.1/",
            "https://172.16.5.4/",
            "https://172.31.255.255/",
            "https://192.168.1.1/",
            "https://100.64.0.1/",
            "https://169.254.169.254/latest/meta-data/",
            "https://2852039166/",
            "https://0xa9fea9fe/",
            "https://224.0.0.1/",
            "https://255.255.255.255/",
            "https://[::1]/",
            "https://[::]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:7f00:1]/",
            "https://[::ffff:169.254.169.254]/",
            "https://[::ffff:8.8.8.8]/",
            "https://[::127.0.0.1]/",
            "https://[fc00::1]/",
            "https://[fd00:ec2::254]/",
            "https://[fe80::1]/",
            "https://[ff02::1]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[2002:7f00:1::]/",
            "https://[2001:db8::1]/",
            "https://%31%32%37.0.0.1/",
            "not a url",
        ];
        for url in table {
            assert!(prod().check_url(url).is_err(), "{url} accepted");
        }
        assert!(table.len() >= 30);
    }

    #[test]
    fn public_urls_pass() {
        for url in [
            "https://example.com/.well-known/brand.json",
            "https://8.8.8.8/",
            "https://[2606:4700::1111]/",
            "https://example.com:9443/hook",
            "https://sub.example.co.uk/x?y=1",
        ] {
            assert!(prod().check_url(url).is_ok(), "{url} refused");
        }
    }

    #[test]
    fn metadata_address_is_link_local() {
        assert_eq!(
            prod().check_url("https://169.254.169.254/"),
            Err(SsrfError::ReservedAddress(ReservedRange::LinkLocal))
        );
        assert_eq!(
            prod().check_url("https://[fd00:ec2::254]/"),
            Err(SsrfError::ReservedAddress(ReservedRange::CloudMetadata))
        );
    }

    #[test]
    fn ports_unrestricted_by_default_and_allowlist_is_opt_in() {
        assert!(prod().check_url("https://example.com:4443/").is_ok());
        let hardened = SsrfPolicy::new().with_allowed_ports(HARDENED_PORTS.iter().copied());
        assert!(hardened.check_url("https://example.com/").is_ok());
        assert!(hardened.check_url("https://example.com:8443/").is_ok());
        assert_eq!(
            hardened.check_url("https://example.com:4443/"),
            Err(SsrfError::PortNotAllowed(4443))
        );
    }

    #[test]
    fn loopback_exception_is_loopback_only() {
        let test = SsrfPolicy::new().dangerously_allow_loopback_for_tests();
        assert!(test.check_url("https://127.0.0.1:8443/").is_ok());
        assert!(test.check_url("https://[::1]/").is_ok());
        assert!(test.check_url("https://[::ffff:127.0.0.1]/").is_err());
        assert!(test.check_url("https://10.0.0.1/").is_err());
        assert!(test.check_url("https://169.254.169.254/").is_err());
        assert!(test.check_url("http://127.0.0.1/").is_err());
    }

    #[test]
    fn resolved_answers_fail_on_any_reserved_address() {
        let p = prod();
        assert_eq!(p.check_resolved(&[]), Err(SsrfError::NoAddresses));
        assert!(p.check_resolved(&["93.184.216.34".parse().unwrap()]).is_ok());
        assert!(p
            .check_resolved(&["93.184.216.34".parse().unwrap(), "10.1.2.3".parse().unwrap()])
            .is_err());
    }

    fn in_cidr_v4(ip: Ipv4Addr, net: [u8; 4], len: u32) -> bool {
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
    }

    /// The spec's list, as CIDRs, checked independently of the match above.
    const SPEC_V4: &[([u8; 4], u32)] = &[
        ([10, 0, 0, 0], 8),
        ([172, 16, 0, 0], 12),
        ([192, 168, 0, 0], 16),
        ([100, 64, 0, 0], 10),
        ([127, 0, 0, 0], 8),
        ([169, 254, 0, 0], 16),
        ([0, 0, 0, 0], 8),
        ([224, 0, 0, 0], 4),
        ([255, 255, 255, 255], 32),
    ];

    proptest! {
        #[test]
        fn every_spec_v4_range_is_reserved(raw in any::<u32>()) {
            let ip = Ipv4Addr::from(raw);
            let in_spec = SPEC_V4.iter().any(|(net, len)| in_cidr_v4(ip, *net, *len));
            if in_spec {
                prop_assert!(reserved_range(IpAddr::V4(ip)).is_some());
                prop_assert!(prod().check_ip(IpAddr::V4(ip)).is_err());
            }
        }

        #[test]
        fn every_v4_mapped_v6_is_reserved(raw in any::<u32>()) {
            let v6 = Ipv4Addr::from(raw).to_ipv6_mapped();
            prop_assert_eq!(reserved_range(IpAddr::V6(v6)), Some(ReservedRange::Ipv4Mapped));
        }

        #[test]
        fn every_spelling_of_a_reserved_v4_is_refused(net in 0usize..SPEC_V4.len(), low in any::<u32>()) {
            let (base, len) = SPEC_V4[net];
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            let n = (u32::from(Ipv4Addr::from(base)) & mask) | (low & !mask);
            let [a, b, c, d] = n.to_be_bytes();
            for host in [
                format!("{n}"),
                format!("{n:#x}"),
                format!("0{n:o}"),
                format!("{a}.{b}.{c}.{d}"),
                format!("{a:#x}.{b:#x}.{c:#x}.{d:#x}"),
                format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}"),
                format!("{a}.{}", (u32::from(b) << 16) | (u32::from(c) << 8) | u32::from(d)),
                format!("[::ffff:{a}.{b}.{c}.{d}]"),
            ] {
                let url = format!("https://{host}/x");
                prop_assert!(prod().check_url(&url).is_err(), "{} accepted", url);
            }
        }

        #[test]
        fn v6_reserved_prefixes(raw in any::<u128>()) {
            let ip = Ipv6Addr::from(raw);
            let s = ip.segments();
            let must = s[0] & 0xfe00 == 0xfc00 || s[0] & 0xffc0 == 0xfe80 || s[0] & 0xff00 == 0xff00
                || raw >> 32 == 0xffff || raw <= 1;
            if must {
                prop_assert!(reserved_range(IpAddr::V6(ip)).is_some());
            }
        }

        #[test]
        fn check_url_never_panics(s in ".{0,80}") {
            let _ = prod().check_url(&s);
            let _ = prod().check_url(&format!("https://{s}/"));
        }
    }
}
