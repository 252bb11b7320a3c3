//! From a [`GatewayConfig`] to a gateway: keys, store, options; and a
//! server run until a shutdown signal.

use crate::config::{GatewayConfig, KeySource, Resolved};
use crate::error::{ConfigError, GatewayError};
use crate::keys::AgentsResolver;
use crate::metrics::JwksUriChanges;
use crate::reload::{Discovered, DiscoveredAgent, DiscoveredAgents, ReloadSource};
use crate::subscriptions::Registrations;
use crate::{Gateway, GatewayOptions};
use adcp_sigbase::Clock;
use adcp_store::StoreOptions;
use adcp_verify::legacy::{HmacSecrets, WebhookAuthMode};
use adcp_verify::{KeyResolver, StaticKeyResolver};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

impl Gateway {
    /// Builds the gateway `config` describes: checks it
    /// ([`GatewayConfig::validate`]), reads the JWKS files or sets up
    /// discovery (with its revocation list and pin, if any) for each
    /// agent, opens (and migrates) the store, loads the subscriber
    /// registrations.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Config`] naming the setting that is invalid or the
    /// file that cannot be read; [`GatewayError::Store`] when the store
    /// cannot be opened; those of [`Gateway::new`].
    pub async fn from_config(config: &GatewayConfig) -> Result<Self, GatewayError> {
        Self::from_config_with_clock(config, None).await
    }

    /// [`from_config`](Self::from_config) with one clock (Unix seconds)
    /// for the verifier, the store and key discovery (JWKS TTLs, refetch
    /// cooldowns, revocation polling and its grace): for tests and
    /// simulations. `None` is the system clock.
    ///
    /// # Errors
    ///
    /// As [`from_config`](Self::from_config).
    pub async fn from_config_with_clock(
        config: &GatewayConfig,
        clock: Option<Arc<dyn Clock>>,
    ) -> Result<Self, GatewayError> {
        let resolved = config.resolve()?;
        let (keys, discovered) = key_resolver(config, &resolved, clock.clone(), &BTreeMap::new())?;
        // Each discovered agent's jwks_uri changes, read from the resolver
        // in force (a reload may replace it).
        let discovered: Discovered = Arc::new(Mutex::new(discovered));
        let mut jwks_uri_changes = JwksUriChanges::default();
        if let KeySource::Agents(agents) = &resolved.keys {
            for agent in agents {
                let (registry, key) = (Arc::clone(&discovered), agent.clone());
                let counter = move || {
                    registry
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get(&key)
                        .map_or(0, DiscoveredAgent::jwks_uri_changes)
                };
                jwks_uri_changes.0.push((agent.clone(), Arc::new(counter)));
            }
        }
        let mut options = StoreOptions {
            namespace: config.store_namespace.clone(),
            op_timeout: config.store_timeout,
            ..StoreOptions::default()
        };
        options.idempotency.lease_secs = i64::try_from(config.claim_lease.as_secs()).unwrap_or(i64::MAX);
        options.idempotency.window_secs = i64::try_from(config.dedup_window.as_secs()).unwrap_or(i64::MAX);
        // Every backend (SQLite, Redis, PostgreSQL, memory) takes its caps
        // from here; the default is the mode's profile's: 100,000 per
        // keyid for webhooks, 1,000,000 for requests.
        if resolved.request.is_some() {
            options.replay_limits = adcp_verify::ReplayLimits::request();
        }
        if let Some(cap) = config.replay_cap_per_keyid {
            options.replay_limits.per_keyid_cap = cap;
        }
        let opened = adcp_store::open_with_purge(config.store.url(), options)
            .await
            .map_err(|source| GatewayError::Store {
                store: config.store.to_string(),
                source,
            })?;
        let (mode, legacy_sender) = hmac_mode(&resolved)?;
        let mut gateway = GatewayOptions::new(resolved.upstream);
        gateway.mode = mode;
        gateway.legacy_sender = legacy_sender;
        gateway.upstream_timeout = config.upstream_timeout;
        gateway.upstream_idle_timeout =
            (!config.upstream_idle_timeout.is_zero()).then_some(config.upstream_idle_timeout);
        gateway.public_url.clone_from(&config.public_url);
        gateway.accept_hosts.clone_from(&config.accept_hosts);
        gateway.tls = resolved.tls;
        gateway.revoked_kids.clone_from(&config.revoked_kids);
        if let Some(path) = &config.subscriptions {
            gateway.subscriptions = Some(Registrations::load(path).map_err(ConfigError::from)?);
        }
        gateway.max_body_bytes = config.max_body_bytes;
        gateway.access_log = config.access_log;
        gateway.header_timeout = config.header_timeout;
        gateway.body_timeout = config.body_timeout;
        gateway.max_concurrency = config.max_concurrency;
        if config.batch_verify {
            gateway.signature_batcher = Some(signature_batcher().map_err(ConfigError::SignatureBatcher)?);
        }
        gateway.clock.clone_from(&clock);
        gateway.jwks_uri_changes = jwks_uri_changes;
        gateway.request = resolved.request;
        gateway.purge = opened.purge;
        gateway.purge_interval = config.purge_interval;
        gateway.reload = Some(ReloadSource {
            config: config.clone(),
            discovered,
            clock,
        });
        Gateway::new(keys, opened.store, gateway)
    }

    /// Builds the gateway `config` describes ([`from_config`](Self::from_config)),
    /// serves it on [`GatewayConfig::listen`] until `shutdown` completes
    /// (a signal, a channel), then stops accepting connections and waits
    /// until in-flight requests have been answered. On Unix, each `SIGHUP`
    /// reloads the TLS certificate (when serving TLS) and the key and
    /// policy material from the files `config` names
    /// ([`Gateway::reload_on_sighup`]; the other settings are `config`'s
    /// and stay); a `SIGHUP` never ends the process.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), adcp_gateway::GatewayError> {
    /// let config = adcp_gateway::GatewayConfig::from_env()?;
    /// adcp_gateway::Gateway::run(&config, async {
    ///     let _ = tokio::signal::ctrl_c().await;
    /// })
    /// .await
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`from_config`](Self::from_config);
    /// [`GatewayError::Bind`] when the address cannot be bound;
    /// [`GatewayError::Serve`] when the server fails.
    pub async fn run(config: &GatewayConfig, shutdown: impl Future<Output = ()>) -> Result<(), GatewayError> {
        let gateway = Self::from_config(config).await?;
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| GatewayError::Bind {
                addr: config.listen,
                source,
            })?;
        #[cfg(unix)]
        let reloader = {
            let config = config.clone();
            gateway
                .reload_on_sighup(move || Ok(config.clone()))
                .map_err(GatewayError::Serve)?
        };
        let mut handle = gateway.serve(listener).map_err(GatewayError::Serve)?;
        let result = tokio::select! {
            () = shutdown => handle.shutdown().await.map_err(GatewayError::Serve),
            result = handle.wait() => match result {
                Ok(()) => Ok(()),
                Err(e) => Err(GatewayError::Serve(e)),
            },
        };
        #[cfg(unix)]
        reloader.abort();
        result
    }
}

/// The key resolver for the configured key source, and the discovered
/// agents' resolvers by agent URL. An agent in `known` whose
/// `agent_brand_json` mapping is unchanged keeps its resolver (a reload:
/// its caches, revocation list state and learned `jwks_uri` stay); the
/// others get a new one.
pub(crate) fn key_resolver(
    config: &GatewayConfig,
    resolved: &Resolved,
    clock: Option<Arc<dyn Clock>>,
    known: &DiscoveredAgents,
) -> Result<(Arc<dyn KeyResolver>, DiscoveredAgents), ConfigError> {
    // Webhook mode discovers sellers from brand.json at the agent's origin
    // (→ agents[] → jwks_uri). Request mode discovers buyer agents through
    // the spec's identity.brand_json_url chain: the agent's own
    // get_adcp_capabilities (an unsigned MCP call under the same SSRF
    // rules, roots and DNS as the fetches) → identity.brand_json_url →
    // eTLD+1 origin binding → brand.json agents[] → jwks_uri, with the
    // request surface's rules (no publisher pin) and the chain's own
    // rejection codes. An agent with an onboarding-provided brand.json
    // (--agent-brand-json) skips the capabilities call.
    let surface = if resolved.request.is_some() {
        adcp_jwks::SigningSurface::Request
    } else {
        adcp_jwks::SigningSurface::Webhook
    };
    // Static sellers first, then discovered ones: the order decides
    // nothing (every seller's key for a kid is a candidate).
    let mut resolvers: Vec<(String, Arc<dyn KeyResolver>)> = Vec::new();
    for (seller, path) in &config.sellers {
        let jwks = read_jwks("--seller", path)?;
        resolvers.push((
            seller.clone(),
            Arc::new(StaticKeyResolver::new().with_jwks(&jwks, seller.as_str())),
        ));
    }
    let mut discovered = BTreeMap::new();
    match &resolved.keys {
        KeySource::Jwks { path, agent } => {
            let jwks = read_jwks("--jwks", path)?;
            Ok((
                Arc::new(StaticKeyResolver::new().with_jwks(&jwks, agent.as_str())),
                discovered,
            ))
        }
        KeySource::Agents(agents) => {
            for agent in agents {
                let brand_json = resolved.agent_brand_json.get(agent).map(url::Url::to_string);
                let previous = known.get(agent);
                let entry = match previous {
                    Some(previous) if previous.brand_json == brand_json => previous.clone(),
                    _ => DiscoveredAgent {
                        resolver: discovery(config, resolved, clock.as_ref(), surface, agent)?,
                        brand_json,
                        base: previous.map_or(0, DiscoveredAgent::jwks_uri_changes),
                    },
                };
                resolvers.push((agent.clone(), Arc::new(entry.resolver.clone())));
                discovered.insert(agent.clone(), entry);
            }
            Ok((Arc::new(AgentsResolver::new(resolvers)), discovered))
        }
        KeySource::None if resolvers.is_empty() => Ok((Arc::new(StaticKeyResolver::new()), discovered)),
        KeySource::None => Ok((Arc::new(AgentsResolver::new(resolvers)), discovered)),
    }
}

/// A discovered agent's key resolver.
fn discovery(
    config: &GatewayConfig,
    resolved: &Resolved,
    clock: Option<&Arc<dyn Clock>>,
    surface: adcp_jwks::SigningSurface,
    agent: &str,
) -> Result<adcp_jwks::HttpsKeyResolver, ConfigError> {
    let overrides = &config.test_overrides;
    let fetch = overrides.fetch_config()?;
    let mut builder = adcp_jwks::HttpsKeyResolver::builder(agent.to_owned()).surface(surface);
    if let Some(brand) = resolved.agent_brand_json.get(agent) {
        // Request mode, an onboarding-provided mapping: that brand.json,
        // no capabilities call.
        builder = builder.brand_json_url(brand.as_str());
    } else if surface == adcp_jwks::SigningSurface::Request {
        let source = adcp_request::AgentCapabilities::from_fetch_config(&fetch).map_err(|source| {
            ConfigError::CapabilitiesClient {
                agent: agent.to_owned(),
                source,
            }
        })?;
        builder = builder.capabilities(Arc::new(source));
    }
    builder = builder.fetch_config(fetch);
    if let Some(list) = resolved.revocation_lists.get(agent) {
        builder = builder
            .revocation_list_url(list.as_str())
            .allow_unsigned_revocation_list(overrides.allow_unsigned_revocation_lists);
    }
    if let Some(pin) = resolved.jwks_uri_pins.get(agent) {
        builder = builder.pin_jwks_uri(pin.as_str());
    }
    builder = builder.adopt_jwks_uri_changes(config.adopt_jwks_uri_changes);
    if let Some(clock) = clock {
        let clock = Arc::clone(clock);
        builder = builder.clock(Arc::new(move || clock.now()));
    }
    builder.build().map_err(|source| ConfigError::Discovery {
        agent: agent.to_owned(),
        source,
    })
}

/// The webhook registration's mode: legacy HMAC-SHA256 under its sender
/// when a secret is configured, else RFC 9421.
pub(crate) fn hmac_mode(resolved: &Resolved) -> Result<(WebhookAuthMode, Option<String>), ConfigError> {
    match &resolved.hmac_secret {
        Some(secret) => {
            let secrets = HmacSecrets::new(secret).map_err(ConfigError::HmacSecret)?;
            Ok((WebhookAuthMode::HmacSha256 { secrets }, resolved.hmac_sender.clone()))
        }
        None => Ok((WebhookAuthMode::Rfc9421, None)),
    }
}

/// A public JWKS file (`{"keys": [...]}`).
fn read_jwks(setting: &'static str, path: &std::path::Path) -> Result<serde_json::Value, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::JwksFile {
        setting,
        path: path.to_path_buf(),
        source,
    })?;
    let jwks: serde_json::Value = serde_json::from_str(&text).map_err(|source| ConfigError::JwksJson {
        setting,
        path: path.to_path_buf(),
        source,
    })?;
    if !jwks.get("keys").is_some_and(serde_json::Value::is_array) {
        return Err(ConfigError::NotAJwks {
            setting,
            path: path.to_path_buf(),
        });
    }
    Ok(jwks)
}

/// The `batch_verify` batcher: one thread per four cores (at least one;
/// one thread checks some 40,000 signatures a second in batches), batches
/// of up to [`adcp_verify::DEFAULT_MAX_BATCH`].
fn signature_batcher() -> std::io::Result<adcp_verify::SignatureBatcher> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    adcp_verify::SignatureBatcher::start(cores.div_ceil(4), adcp_verify::DEFAULT_MAX_BATCH)
}
