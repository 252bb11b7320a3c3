//! Sender-side destination validation: the SSRF rules for URLs a
//! counterparty gives **us** to deliver to (`push_notification_config.url`,
//! `notification_configs[].url`, ...).
//!
//! The same reserved-range rules as key discovery ([`crate::ssrf`]), in
//! the three places a webhook sender needs them:
//!
//! 1. **Write time** ([`DestinationPolicy::validate_url`]): when a URL is
//!    registered (also for paused subscribers): parse, HTTPS only, no
//!    userinfo, port policy, IP literals in every spelling range-checked.
//! 2. **Send time, pinned** ([`DestinationPolicy::dns_resolver`]): a
//!    [`reqwest::dns::Resolve`] to install with
//!    `reqwest::ClientBuilder::dns_resolver` (together with `.no_proxy()`
//!    and `redirect::Policy::none()`): each connection resolves the name
//!    once, refuses the whole answer if any address is reserved, and
//!    connects only to the checked addresses — no second resolution.
//!    reqwest does not consult a resolver for IP-literal URLs, so call
//!    `validate_url` before every send too.
//! 3. **Send time, explicit** ([`DestinationPolicy::resolve`]): resolve and
//!    check once, for clients that take pre-resolved addresses.
//!
//! Ports are **unrestricted by default**, as the spec requires
//! ("Destination port: permissive by default"); [`DestinationPolicy::hardened`]
//! is the opt-in `{443, 8443}` profile. Operators that enable it must
//! document the allowed set for their buyers.
//!
//! Errors say why locally; like every fetch error they must not be echoed
//! to the party that supplied the URL.
//!
//! ```
//! use adcp_jwks::DestinationPolicy;
//!
//! let policy = DestinationPolicy::new();
//! assert!(policy.validate_url("https://buyer.example:9443/webhooks").is_ok());
//! assert!(policy.validate_url("https://[::ffff:127.0.0.1]/hook").is_err());
//! assert!(DestinationPolicy::hardened().validate_url("https://buyer.example:9443/").is_err());
//! ```

use crate::fetch::{DnsResolver, GuardedResolver, SystemDnsResolver, MAX_ADDRESSES};
use crate::ssrf::{SsrfError, SsrfPolicy, HARDENED_PORTS};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use url::{Host, Url};

/// A destination was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DestinationError {
    /// The URL or a resolved address failed the SSRF rules.
    Refused(SsrfError),
    /// The name did not resolve (transient: retry later).
    Dns(String),
}

impl fmt::Display for DestinationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DestinationError::Refused(e) => write!(f, "destination refused: {e}"),
            DestinationError::Dns(e) => write!(f, "destination did not resolve: {e}"),
        }
    }
}

impl std::error::Error for DestinationError {}

/// The sender's destination rules. Cheap to clone; the default is the
/// production policy (HTTPS, every reserved range refused, any port).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationPolicy {
    ssrf: SsrfPolicy,
}

impl DestinationPolicy {
    /// The production policy: ports unrestricted.
    pub fn new() -> Self {
        Self::default()
    }

    /// The opt-in hardened profile: destination ports `{443, 8443}` only.
    pub fn hardened() -> Self {
        Self::new().with_allowed_ports(HARDENED_PORTS.iter().copied())
    }

    /// Restricts destination ports to `ports` (opt-in).
    pub fn with_allowed_ports(self, ports: impl IntoIterator<Item = u16>) -> Self {
        Self {
            ssrf: self.ssrf.with_allowed_ports(ports),
        }
    }

    /// Uses `policy` as is (e.g. one with the test-only loopback exception).
    pub fn from_ssrf_policy(policy: SsrfPolicy) -> Self {
        Self { ssrf: policy }
    }

    /// The underlying SSRF policy.
    pub fn ssrf_policy(&self) -> &SsrfPolicy {
        &self.ssrf
    }

    /// Write-time (and pre-send) check of a destination URL: parse, HTTPS,
    /// no userinfo, port policy, IP literals range-checked in every IPv4
    /// spelling and IPv4-mapped IPv6. A DNS name passes here; its addresses
    /// are checked at connect time.
    ///
    /// # Errors
    ///
    /// [`SsrfError`] (never [`SsrfError::NoAddresses`]).
    pub fn validate_url(&self, url: &str) -> Result<Url, SsrfError> {
        self.ssrf.check_url(url)
    }

    /// Resolves the URL's host **once** with `dns`, checks every address,
    /// and returns the socket addresses to connect to (pin them: do not
    /// resolve the name again). An IP-literal host is checked and returned
    /// without a lookup.
    ///
    /// # Errors
    ///
    /// [`DestinationError::Refused`] for a refused URL or any reserved
    /// address in the answer; [`DestinationError::Dns`] when the lookup fails.
    pub async fn resolve(&self, url: &Url, dns: &dyn DnsResolver) -> Result<Vec<SocketAddr>, DestinationError> {
        self.ssrf.check_parsed_url(url).map_err(DestinationError::Refused)?;
        let port = url
            .port_or_known_default()
            .ok_or(DestinationError::Refused(SsrfError::MissingHost))?;
        let ips = match url.host() {
            Some(Host::Ipv4(ip)) => vec![ip.into()],
            Some(Host::Ipv6(ip)) => vec![ip.into()],
            Some(Host::Domain(name)) => {
                let mut ips = dns
                    .lookup(name)
                    .await
                    .map_err(|e| DestinationError::Dns(e.to_string()))?;
                ips.truncate(MAX_ADDRESSES);
                ips
            }
            None => return Err(DestinationError::Refused(SsrfError::MissingHost)),
        };
        self.ssrf.check_resolved(&ips).map_err(DestinationError::Refused)?;
        Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect())
    }

    /// A pinning resolver for `reqwest::ClientBuilder::dns_resolver`, using
    /// the system resolver.
    pub fn dns_resolver(&self) -> Arc<PinningResolver> {
        self.dns_resolver_with(Arc::new(SystemDnsResolver))
    }

    /// [`dns_resolver`](Self::dns_resolver) over a custom [`DnsResolver`].
    /// A refusal surfaces as a connect error whose source chain holds the
    /// [`SsrfError`].
    pub fn dns_resolver_with(&self, dns: Arc<dyn DnsResolver>) -> Arc<PinningResolver> {
        Arc::new(PinningResolver(GuardedResolver {
            policy: self.ssrf.clone(),
            inner: dns,
        }))
    }
}

/// A [`reqwest::dns::Resolve`] that resolves each name once, refuses an
/// answer holding any reserved address, and hands reqwest only the checked
/// addresses (so the connection is pinned to them). Made by
/// [`DestinationPolicy::dns_resolver`].
pub struct PinningResolver(GuardedResolver);

impl fmt::Debug for PinningResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinningResolver")
            .field("policy", &self.0.policy)
            .finish_non_exhaustive()
    }
}

impl reqwest::dns::Resolve for PinningResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        self.0.resolve(name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::fetch::StaticDnsResolver;
    use std::net::IpAddr;

    #[tokio::test]
    async fn resolve_pins_checked_addresses() {
        let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
        let dns = StaticDnsResolver::new()
            .with("buyer.example", [ip("93.184.216.34")])
            .with("sneaky.example", [ip("93.184.216.34"), ip("10.0.0.1")])
            .with("meta.example", [ip("fd00:ec2::254")]);
        let p = DestinationPolicy::new();
        let url = Url::parse("https://buyer.example:9443/hook").unwrap();
        assert_eq!(
            p.resolve(&url, &dns).await.unwrap(),
            vec![SocketAddr::new(ip("93.184.216.34"), 9443)]
        );
        for bad in ["https://sneaky.example/", "https://meta.example/", "https://0x7f.1/"] {
            let url = Url::parse(bad).unwrap();
            assert!(
                matches!(p.resolve(&url, &dns).await, Err(DestinationError::Refused(_))),
                "{bad}"
            );
        }
        let unknown = Url::parse("https://nowhere.example/").unwrap();
        assert!(matches!(p.resolve(&unknown, &dns).await, Err(DestinationError::Dns(_))));
        let literal = Url::parse("https://93.184.216.34/").unwrap();
        assert_eq!(p.resolve(&literal, &dns).await.unwrap().len(), 1);
    }

    #[test]
    fn ports_permissive_by_default_hardened_opt_in() {
        let p = DestinationPolicy::new();
        for port in [443u16, 8443, 9443, 4443, 1] {
            assert!(
                p.validate_url(&format!("https://buyer.example:{port}/")).is_ok(),
                "{port}"
            );
        }
        let h = DestinationPolicy::hardened();
        assert!(h.validate_url("https://buyer.example/").is_ok());
        assert!(h.validate_url("https://buyer.example:8443/").is_ok());
        assert_eq!(
            h.validate_url("https://buyer.example:9443/"),
            Err(SsrfError::PortNotAllowed(9443))
        );
        assert_eq!(
            p.validate_url("http://buyer.example/"),
            Err(SsrfError::SchemeNotAllowed)
        );
    }
}
