//! [`TargetPolicy`]: the SSRF rules every call's URL passes, and the
//! SSRF-pinned reqwest client built from them.

use adcp_jwks::{DestinationPolicy, DnsResolver, SsrfError, SsrfPolicy, SystemDnsResolver, TrustRoots};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// The SSRF rules for the counterparties a [`SigningClient`](crate::SigningClient)
/// calls: the `adcp-jwks` destination policy (HTTPS only, every reserved
/// range refused for IP literals here and for every resolved address at
/// connect time, ports unrestricted unless hardened, no userinfo), plus one
/// development switch.
///
/// The agent URL a buyer calls usually comes from configuration or a
/// registry, but it is still a URL the client did not choose itself
/// (and the capability-discovery call goes to the same place), so the
/// spec's SSRF rules ("Webhook URL validation (SSRF)") apply.
///
/// ```
/// use adcp_request::TargetPolicy;
///
/// let production = TargetPolicy::default();
/// assert!(production.check("https://seller.example/mcp").is_ok());
/// assert!(production.check("http://seller.example/mcp").is_err());
/// assert!(production.check("https://127.0.0.1/mcp").is_err());
///
/// let dev = TargetPolicy::default().dangerously_allow_plain_http();
/// assert!(dev.check("http://127.0.0.1:3000/mcp").is_ok());
/// assert!(dev.check("http://10.0.0.1/mcp").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    inner: DestinationPolicy,
    plain_http: bool,
}

impl TargetPolicy {
    /// The production policy (same as [`Default`]).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A policy from `adcp-jwks` destination rules (for example the
    /// hardened port profile, [`DestinationPolicy::hardened`]).
    #[must_use]
    pub fn from_destination_policy(policy: DestinationPolicy) -> Self {
        Self {
            inner: policy,
            plain_http: false,
        }
    }

    /// **Local development only** (`adcp-sig call --allow-http`): also
    /// accepts plain `http://` URLs and loopback addresses
    /// (`127.0.0.0/8`, `::1`, a name resolving to them). Every other rule
    /// stays: no userinfo, the port policy, every other reserved range
    /// refused. Never enable it in production: plain HTTP exposes the
    /// unsigned response and the request to anyone on the path.
    #[must_use]
    pub fn dangerously_allow_plain_http(self) -> Self {
        let ssrf: SsrfPolicy = self.inner.ssrf_policy().clone().dangerously_allow_loopback_for_tests();
        Self {
            inner: DestinationPolicy::from_ssrf_policy(ssrf),
            plain_http: true,
        }
    }

    /// Whether the development switch is on.
    #[must_use]
    pub fn allows_plain_http(&self) -> bool {
        self.plain_http
    }

    /// The `adcp-jwks` destination rules in force.
    #[must_use]
    pub fn destination_policy(&self) -> &DestinationPolicy {
        &self.inner
    }

    /// Checks `url` before anything is sent (reqwest never resolves an
    /// IP-literal host, so literals are range-checked here; names are
    /// checked by the pinning resolver at connect time).
    ///
    /// # Errors
    ///
    /// The [`SsrfError`] of the first rule the URL breaks.
    pub fn check(&self, url: &str) -> Result<Url, SsrfError> {
        let parsed = Url::parse(url).map_err(|_| SsrfError::InvalidUrl)?;
        if parsed.scheme() == "http" && self.plain_http {
            let mut as_https = parsed.clone();
            as_https.set_scheme("https").map_err(|()| SsrfError::InvalidUrl)?;
            self.inner.ssrf_policy().check_parsed_url(&as_https)?;
            return Ok(parsed);
        }
        self.inner.validate_url(url)
    }

    /// The reqwest client the policy implies: rustls with the Mozilla roots,
    /// HTTPS only (unless the development switch is on), no proxy, no
    /// redirects (a redirect would re-target a signed request), the
    /// pinning resolver, 5 s to connect and `timeout` per attempt.
    pub(crate) fn client(&self, timeout: Duration) -> Result<reqwest::Client, String> {
        self.client_with(
            &TrustRoots::WebPki,
            Arc::new(SystemDnsResolver),
            Duration::from_secs(5),
            timeout,
        )
    }

    /// [`client`](Self::client) trusting `roots` and resolving names with
    /// `dns` (still through the pinning resolver), `connect` to connect.
    pub(crate) fn client_with(
        &self,
        roots: &TrustRoots,
        dns: Arc<dyn DnsResolver>,
        connect: Duration,
        timeout: Duration,
    ) -> Result<reqwest::Client, String> {
        let mut store = rustls::RootCertStore::empty();
        match roots {
            TrustRoots::WebPki => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            TrustRoots::Custom(ders) => {
                for der in ders {
                    store
                        .add(rustls::pki_types::CertificateDer::from(der.clone()))
                        .map_err(|e| format!("trust root: {e}"))?;
                }
            }
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("tls: {e}"))?
            .with_root_certificates(store)
            .with_no_client_auth();
        reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .https_only(!self.plain_http)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(connect)
            .timeout(timeout)
            .dns_resolver(self.inner.dns_resolver_with(dns))
            .build()
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_and_loopback_only_with_the_switch() {
        let prod = TargetPolicy::default();
        assert_eq!(
            prod.check("http://127.0.0.1:8080/mcp"),
            Err(SsrfError::SchemeNotAllowed)
        );
        assert!(matches!(
            prod.check("https://127.0.0.1/mcp"),
            Err(SsrfError::ReservedAddress(_))
        ));
        assert!(matches!(
            prod.check("https://[::1]/mcp"),
            Err(SsrfError::ReservedAddress(_))
        ));
        assert!(prod.check("https://seller.example/mcp").is_ok());
        let dev = TargetPolicy::default().dangerously_allow_plain_http();
        assert!(dev.allows_plain_http());
        assert!(dev.check("http://127.0.0.1:8080/mcp").is_ok());
        assert!(dev.check("https://127.0.0.1:8443/mcp").is_ok());
        assert!(dev.check("http://localhost:8080/mcp").is_ok());
        assert!(matches!(
            dev.check("http://169.254.169.254/"),
            Err(SsrfError::ReservedAddress(_))
        ));
        assert_eq!(dev.check("http://user:pw@127.0.0.1/"), Err(SsrfError::CredentialsInUrl));
        assert_eq!(dev.check("ftp://127.0.0.1/"), Err(SsrfError::SchemeNotAllowed));
    }
}
