//! [`AgentCapabilities`]: an agent's own `get_adcp_capabilities` answer as
//! the first step of the `identity.brand_json_url` key-discovery chain.

use super::counterparty::Counterparty;
use super::error::ClientError;
use super::signing_client::{fetch_capabilities, CAPABILITIES_OPERATION};
use super::target::TargetPolicy;
use super::transport::Transport;
use adcp_jwks::{CapabilitiesSource, FetchConfig, FetchError, MAX_CAPABILITIES_BYTES};
use async_trait::async_trait;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The time one capabilities call may take, body included (10 s, the
/// key-discovery fetches' default).
pub const DEFAULT_CAPABILITIES_TIMEOUT: Duration = Duration::from_secs(10);

/// An [`adcp_jwks::CapabilitiesSource`] that asks the agent itself: one
/// unsigned `get_adcp_capabilities` call to the agent URL (MCP
/// `tools/call` by default), exactly the priming call of
/// [`SigningClient`](crate::SigningClient), under the same SSRF rules
/// ([`TargetPolicy`]: HTTPS only, reserved ranges refused, the connection
/// pinned to the checked addresses, no redirects, no proxy), with a
/// timeout and the body capped (16 MiB on the wire, 64 KiB for the
/// capabilities document the chain parses).
///
/// With it, `adcp_jwks::HttpsKeyResolver::builder(agent).capabilities(…)`
/// resolves the agent's keys through the spec's `identity.brand_json_url`
/// chain: the agent's capabilities → `identity.brand_json_url` → eTLD+1
/// origin binding → brand.json `agents[]` → `jwks_uri`.
///
/// With the chain's own fetch settings, so the capabilities call and the
/// brand.json / JWKS fetches follow one set of rules (the example of
/// `docs/key-discovery.md`):
///
/// ```
/// use adcp_jwks::{FetchConfig, HttpsKeyResolver, SigningSurface};
/// use adcp_request::AgentCapabilities;
/// use std::sync::Arc;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let fetch = FetchConfig::default();
/// let source = AgentCapabilities::from_fetch_config(&fetch)?;
/// let keys = HttpsKeyResolver::builder("https://buyer.example/mcp")
///     .surface(SigningSurface::Request)
///     .capabilities(Arc::new(source))
///     .fetch_config(fetch)
///     .build()?;
/// // `keys` is a `KeyResolver`: hand it to `adcp_request::RequestVerifier::builder`.
/// # let _: Arc<dyn adcp_verify::KeyResolver> = Arc::new(keys);
/// # Ok(())
/// # }
/// ```
///
/// Or with a [`TargetPolicy`] of its own:
///
/// ```
/// use adcp_jwks::{HttpsKeyResolver, SigningSurface};
/// use adcp_request::{AgentCapabilities, TargetPolicy};
/// use std::sync::Arc;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let source = AgentCapabilities::new(TargetPolicy::default())?;
/// let keys = HttpsKeyResolver::builder("https://buyer.example/mcp")
///     .surface(SigningSurface::Request)
///     .capabilities(Arc::new(source))
///     .build()?;
/// # let _ = keys;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct AgentCapabilities {
    http: reqwest::Client,
    policy: TargetPolicy,
    transport: Transport,
    next_id: AtomicU64,
}

impl AgentCapabilities {
    /// Calls agents over MCP with `policy`'s client (Mozilla roots, system
    /// DNS through the pinning resolver, 5 s to connect,
    /// [`DEFAULT_CAPABILITIES_TIMEOUT`] in all).
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] when the HTTP client cannot be built.
    pub fn new(policy: TargetPolicy) -> Result<Self, ClientError> {
        let http = policy
            .client(DEFAULT_CAPABILITIES_TIMEOUT)
            .map_err(ClientError::Transport)?;
        Ok(Self::with_client(http, policy))
    }

    /// Calls agents with the settings key discovery fetches with: the
    /// same SSRF policy, trust roots, DNS resolver and deadlines, so the
    /// capabilities call and the brand.json / JWKS fetches of one chain
    /// follow one set of rules.
    ///
    /// # Errors
    ///
    /// [`ClientError::Transport`] when the HTTP client cannot be built
    /// (for example a custom root that is not a certificate).
    pub fn from_fetch_config(config: &FetchConfig) -> Result<Self, ClientError> {
        let policy = TargetPolicy::from_destination_policy(adcp_jwks::DestinationPolicy::from_ssrf_policy(
            config.policy.clone(),
        ));
        let http = policy
            .client_with(
                &config.roots,
                config.resolver.clone(),
                config.connect_timeout,
                config.total_timeout,
            )
            .map_err(ClientError::Transport)?;
        Ok(Self::with_client(http, policy))
    }

    /// Uses `http` (which must apply `policy`'s rules: the pinning
    /// resolver, no redirects, timeouts) and `policy`'s pre-send check.
    #[must_use]
    pub fn with_client(http: reqwest::Client, policy: TargetPolicy) -> Self {
        Self {
            http,
            policy,
            transport: Transport::Mcp,
            next_id: AtomicU64::new(1),
        }
    }

    /// The transport agents are called over (default [`Transport::Mcp`]).
    #[must_use]
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self
    }

    /// The agent's `get_adcp_capabilities` result (the AdCP document out
    /// of its envelope).
    ///
    /// # Errors
    ///
    /// [`ClientError::Untrusted`] for a URL (or resolved address) the
    /// policy refuses, [`ClientError::Transport`] when the call fails,
    /// [`ClientError::Capability`] for a non-2xx answer or one that
    /// carries no capabilities document.
    pub async fn document(&self, agent_url: &str) -> Result<serde_json::Value, ClientError> {
        let counterparty = Counterparty::new(agent_url, self.transport);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        fetch_capabilities(&self.http, &self.policy, &counterparty, id).await
    }
}

#[async_trait]
impl CapabilitiesSource for AgentCapabilities {
    async fn capabilities(&self, agent_url: &str) -> Result<Vec<u8>, FetchError> {
        let document = self.document(agent_url).await.map_err(|e| match e {
            ClientError::Untrusted(e) => FetchError::Untrusted(e),
            other => FetchError::Transport(other.to_string()),
        })?;
        let bytes = serde_json::to_vec(&document).map_err(|e| FetchError::Transport(e.to_string()))?;
        if bytes.len() > MAX_CAPABILITIES_BYTES {
            return Err(FetchError::TooLarge {
                limit: MAX_CAPABILITIES_BYTES,
            });
        }
        Ok(bytes)
    }

    /// The URL the call goes to, so the chain's trace names it (with the
    /// time of the call, and `200` when it succeeded).
    fn location(&self, agent_url: &str) -> Option<url::Url> {
        url::Url::parse(&self.transport.url(agent_url, CAPABILITIES_OPERATION)).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_names_the_url_called() -> Result<(), ClientError> {
        let mcp = AgentCapabilities::new(TargetPolicy::default())?;
        assert_eq!(
            mcp.location("https://buyer.example/mcp").map(String::from).as_deref(),
            Some("https://buyer.example/mcp")
        );
        let raw = mcp.transport(Transport::Raw);
        assert_eq!(
            raw.location("https://buyer.example/adcp/").map(String::from).as_deref(),
            Some("https://buyer.example/adcp/get_adcp_capabilities")
        );
        assert_eq!(raw.location("not a url"), None);
        Ok(())
    }
}
