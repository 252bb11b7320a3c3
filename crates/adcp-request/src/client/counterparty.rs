//! [`Counterparty`]: who a call goes to and how.

use super::decision::SigningVersion;
use super::transport::Transport;
use adcp_verify::request_policy::VerifierCapability;

/// The agent a call goes to: its URL, its [`Transport`], the negotiated
/// [`SigningVersion`], and optionally its `request_signing` capability
/// supplied by the caller (then never primed).
///
/// ```
/// use adcp_request::{Counterparty, SigningVersion, Transport};
///
/// let seller = Counterparty::mcp("https://seller.example/mcp");
/// assert_eq!(seller.transport(), Transport::Mcp);
/// assert_eq!(seller.version(), SigningVersion::V3_2);
///
/// // A seller still running AdCP 3.1: the legacy encodings, by configuration only.
/// let old = Counterparty::a2a("https://old-seller.example/a2a").with_version(SigningVersion::Legacy);
/// assert_eq!(old.version(), SigningVersion::Legacy);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counterparty {
    url: String,
    transport: Transport,
    version: SigningVersion,
    capability: Option<VerifierCapability>,
}

impl Counterparty {
    /// The agent at `url` over `transport`, AdCP 3.2 signing, capability
    /// primed on first use.
    pub fn new(url: impl Into<String>, transport: Transport) -> Self {
        Self {
            url: url.into(),
            transport,
            version: SigningVersion::V3_2,
            capability: None,
        }
    }

    /// An MCP agent ([`Transport::Mcp`]).
    pub fn mcp(url: impl Into<String>) -> Self {
        Self::new(url, Transport::Mcp)
    }

    /// An A2A agent ([`Transport::A2a`]).
    pub fn a2a(url: impl Into<String>) -> Self {
        Self::new(url, Transport::A2a)
    }

    /// An operation-per-URL endpoint ([`Transport::Raw`]): `url` is the
    /// base the operation name is appended to.
    pub fn raw(url: impl Into<String>) -> Self {
        Self::new(url, Transport::Raw)
    }

    /// Sets the negotiated signing version ([`SigningVersion::Legacy`]
    /// only for an endpoint known to run AdCP 3.0/3.1).
    #[must_use]
    pub fn with_version(mut self, version: SigningVersion) -> Self {
        self.version = version;
        self
    }

    /// Uses `capability` for every call instead of priming it with
    /// `get_adcp_capabilities`.
    #[must_use]
    pub fn with_capability(mut self, capability: VerifierCapability) -> Self {
        self.capability = Some(capability);
        self
    }

    /// The agent URL (the capability cache key).
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The transport.
    #[must_use]
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The negotiated signing version.
    #[must_use]
    pub fn version(&self) -> SigningVersion {
        self.version
    }

    /// The capability supplied with [`Counterparty::with_capability`].
    #[must_use]
    pub fn capability(&self) -> Option<&VerifierCapability> {
        self.capability.as_ref()
    }
}
