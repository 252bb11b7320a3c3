//! The SSRF-safe HTTPS fetcher.
//!
//! - URLs are checked by [`SsrfPolicy::check_url`] first (scheme, userinfo,
//!   port, IP literals in every spelling: reqwest never consults a resolver
//!   for an IP-literal URL, so literals must be checked before the request).
//! - Names are resolved **once**, by the [`DnsResolver`] this fetcher owns,
//!   inside the connector: every address is checked and only checked
//!   addresses are handed to the TCP connect. There is no second
//!   resolution, so a rebinding answer cannot slip in between check and
//!   connect (the spec's preferred pinning, option (a)).
//! - Proxies are disabled (a proxy would resolve the name itself), redirects
//!   are never followed (a 3xx is an error), HTTP/1.1 only.
//! - Connect and total deadlines (5 s / 10 s by default); the body cap is
//!   enforced on `Content-Length` and again while streaming.
//! - TLS is rustls with the `webpki-roots` Mozilla set, or the roots you
//!   configure ([`TrustRoots::Custom`], e.g. a test CA). Certificate
//!   verification is never disabled.

use crate::ssrf::{SsrfError, SsrfPolicy};
use async_trait::async_trait;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// Resolves a host name to addresses. The fetcher calls it exactly once per
/// connection and connects only to the addresses it returns (after the
/// SSRF check).
#[async_trait]
pub trait DnsResolver: Send + Sync + 'static {
    /// The addresses of `host` (a DNS name, never an IP literal).
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}

/// The operating system's resolver (`getaddrinfo` through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemDnsResolver;

#[async_trait]
impl DnsResolver for SystemDnsResolver {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        let addrs = tokio::net::lookup_host((host, 0)).await?;
        Ok(addrs.map(|a| a.ip()).take(MAX_ADDRESSES).collect())
    }
}

/// At most this many addresses of one answer are checked and used.
pub(crate) const MAX_ADDRESSES: usize = 16;

/// A fixed name → addresses table (tests, or deployments that pin hosts).
/// Unknown names fail to resolve.
#[derive(Debug, Clone, Default)]
pub struct StaticDnsResolver {
    table: std::collections::HashMap<String, Vec<IpAddr>>,
}

impl StaticDnsResolver {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `host` (ASCII-lowercased) to `addrs`.
    pub fn with(mut self, host: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        self.table
            .insert(host.to_ascii_lowercase(), addrs.into_iter().collect());
        self
    }
}

#[async_trait]
impl DnsResolver for StaticDnsResolver {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        self.table
            .get(&host.to_ascii_lowercase())
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "unknown host"))
    }
}

/// Which certificate authorities the fetcher trusts.
#[derive(Debug, Clone, Default)]
pub enum TrustRoots {
    /// The Mozilla root set compiled in from `webpki-roots` (production).
    #[default]
    WebPki,
    /// Exactly these DER-encoded CA certificates (a private PKI, or a test
    /// CA minted at test time). Verification stays fully on.
    Custom(Vec<Vec<u8>>),
}

/// Fetcher settings.
#[derive(Clone)]
pub struct FetchConfig {
    /// The SSRF policy (production default).
    pub policy: SsrfPolicy,
    /// The resolver used for every name (system resolver by default).
    pub resolver: Arc<dyn DnsResolver>,
    /// Trusted CAs.
    pub roots: TrustRoots,
    /// TCP + TLS connect deadline (default 5 s).
    pub connect_timeout: Duration,
    /// Whole-request deadline, body included (default 10 s).
    pub total_timeout: Duration,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            policy: SsrfPolicy::default(),
            resolver: Arc::new(SystemDnsResolver),
            roots: TrustRoots::default(),
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(10),
        }
    }
}

impl fmt::Debug for FetchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchConfig")
            .field("policy", &self.policy)
            .field("roots", &self.roots)
            .field("connect_timeout", &self.connect_timeout)
            .field("total_timeout", &self.total_timeout)
            .finish_non_exhaustive()
    }
}

/// A fetch failed. The two classes map to the spec's `*_jwks_untrusted`
/// (permanent: the location itself is refused) and `*_jwks_unavailable`
/// (transient). Messages are for local logs only: never echo them to the
/// counterparty (spec step 6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The URL or an address it resolved to failed the SSRF guard.
    Untrusted(SsrfError),
    /// The server answered with a redirect (never followed).
    Redirect(u16),
    /// The server answered with a non-200 status.
    Status(u16),
    /// The body exceeded the cap.
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// A deadline passed.
    Timeout,
    /// DNS, TCP, TLS or HTTP failure.
    Transport(String),
}

impl FetchError {
    /// Whether the failure is permanent for this location (SSRF refusal).
    pub fn is_untrusted(&self) -> bool {
        matches!(self, FetchError::Untrusted(_))
    }
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::Untrusted(e) => write!(f, "refused by SSRF policy: {e}"),
            FetchError::Redirect(s) => write!(f, "redirect ({s}) not followed"),
            FetchError::Status(s) => write!(f, "HTTP status {s}"),
            FetchError::TooLarge { limit } => write!(f, "body exceeds {limit} bytes"),
            FetchError::Timeout => f.write_str("deadline exceeded"),
            FetchError::Transport(d) => write!(f, "transport failure: {d}"),
        }
    }
}

impl std::error::Error for FetchError {}

/// The connector-side resolver: one lookup, every address checked.
pub(crate) struct GuardedResolver {
    pub(crate) policy: SsrfPolicy,
    pub(crate) inner: Arc<dyn DnsResolver>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let inner = Arc::clone(&self.inner);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let mut addrs = inner.lookup(&host).await?;
            addrs.truncate(MAX_ADDRESSES);
            policy.check_resolved(&addrs)?;
            let out: reqwest::dns::Addrs = Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(out)
        })
    }
}

/// An HTTPS GET client enforcing the SSRF rules. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Fetcher {
    client: reqwest::Client,
    policy: SsrfPolicy,
}

impl Fetcher {
    /// Builds the client.
    ///
    /// # Errors
    ///
    /// [`FetchError::Transport`] when the TLS configuration cannot be built
    /// (e.g. a custom root that is not a CA certificate).
    pub fn new(config: FetchConfig) -> Result<Self, FetchError> {
        let mut roots = rustls::RootCertStore::empty();
        match &config.roots {
            TrustRoots::WebPki => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            TrustRoots::Custom(ders) => {
                for der in ders {
                    roots
                        .add(rustls::pki_types::CertificateDer::from(der.clone()))
                        .map_err(|e| FetchError::Transport(format!("trust root: {e}")))?;
                }
            }
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| FetchError::Transport(format!("tls: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .https_only(true)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .http1_only()
            .connect_timeout(config.connect_timeout)
            .timeout(config.total_timeout)
            .dns_resolver(Arc::new(GuardedResolver {
                policy: config.policy.clone(),
                inner: config.resolver,
            }))
            .build()
            .map_err(|e| FetchError::Transport(format!("client: {e}")))?;
        Ok(Self {
            client,
            policy: config.policy,
        })
    }

    /// The SSRF policy in force.
    pub fn policy(&self) -> &SsrfPolicy {
        &self.policy
    }

    /// GETs `url` and returns at most `max_bytes` of a `200` body.
    ///
    /// # Errors
    ///
    /// Every [`FetchError`]; a body longer than `max_bytes` is
    /// [`FetchError::TooLarge`] and is not read past the cap.
    pub async fn get(&self, url: &Url, max_bytes: usize) -> Result<Vec<u8>, FetchError> {
        match self.get_or_redirect(url, max_bytes).await? {
            Fetched::Body(body) => Ok(body),
            Fetched::Redirect { status, .. } => Err(FetchError::Redirect(status)),
        }
    }

    /// Like [`get`](Self::get), but a `3xx` answer with a `Location` is
    /// returned (never followed) so that a caller implementing one of the
    /// spec's bounded redirect carve-outs can validate the next hop itself.
    /// The location is resolved against `url` but **not** SSRF-checked:
    /// the caller must check it (and every later hop) before fetching it.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get); a `3xx` without a usable `Location` is
    /// [`FetchError::Redirect`].
    pub async fn get_or_redirect(&self, url: &Url, max_bytes: usize) -> Result<Fetched, FetchError> {
        self.policy.check_parsed_url(url).map_err(FetchError::Untrusted)?;
        let mut response = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(classify)?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .filter(|v| v.len() <= MAX_LOCATION_LEN)
                .and_then(|v| url.join(v).ok())
                .ok_or(FetchError::Redirect(status.as_u16()))?;
            return Ok(Fetched::Redirect {
                status: status.as_u16(),
                location,
            });
        }
        if status != reqwest::StatusCode::OK {
            return Err(FetchError::Status(status.as_u16()));
        }
        if response.content_length().is_some_and(|len| len > max_bytes as u64) {
            return Err(FetchError::TooLarge { limit: max_bytes });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(classify)? {
            if body.len().saturating_add(chunk.len()) > max_bytes {
                return Err(FetchError::TooLarge { limit: max_bytes });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched::Body(body))
    }
}

/// Longest `Location` header value considered.
const MAX_LOCATION_LEN: usize = 2048;

/// What [`Fetcher::get_or_redirect`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// A `200` body within the cap.
    Body(Vec<u8>),
    /// A `3xx` answer, not followed.
    Redirect {
        /// The status code.
        status: u16,
        /// The `Location`, resolved against the request URL, **unchecked**.
        location: Url,
    },
}

/// Maps a reqwest error, recovering a typed SSRF refusal from the
/// connector's error chain.
fn classify(err: reqwest::Error) -> FetchError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(e) = source {
        if let Some(ssrf) = e.downcast_ref::<SsrfError>() {
            return FetchError::Untrusted(ssrf.clone());
        }
        source = e.source();
    }
    if err.is_timeout() {
        return FetchError::Timeout;
    }
    let mut detail = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(e) = source {
        detail.push_str(": ");
        detail.push_str(&e.to_string());
        source = e.source();
    }
    let mut end = detail.len().min(512);
    while !detail.is_char_boundary(end) {
        end -= 1;
    }
    detail.truncate(end);
    FetchError::Transport(detail)
}
