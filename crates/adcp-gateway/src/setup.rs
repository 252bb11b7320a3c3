//! `adcp-sig gateway`: configuration to a running server, until a signal.

use super::config::{redact, GatewayArgs, GatewayConfig, KeySource, TestNetwork, HMAC_SECRET_ENV};
use super::keys::AgentsResolver;
use super::metrics::JwksUriChanges;
use super::{Gateway, GatewayOptions};
use adcp_sigbase::clock::Clock;
use adcp_store::{StoreOptions, StoreUrl};
use adcp_verify::keys::{KeyResolver, StaticKeyResolver};
use adcp_verify::legacy::{HmacSecrets, WebhookAuthMode};
use indicatif::{ProgressBar, ProgressDrawTarget};
use std::sync::Arc;
use std::time::Duration;

impl Gateway {
    /// Builds the gateway `config` describes: reads the JWKS file or sets
    /// up discovery (and its revocation list, if any) for each agent,
    /// opens (and migrates) the store.
    ///
    /// # Errors
    ///
    /// A message naming what could not be set up.
    pub async fn from_config(config: &GatewayConfig) -> Result<Self, String> {
        Self::from_config_with_clock(config, None).await
    }

    /// [`from_config`](Self::from_config) with one clock (Unix seconds)
    /// for the verifier, the store and key discovery (JWKS TTLs, refetch
    /// cooldowns, revocation polling and its grace): for tests and
    /// simulations. `None` is the system clock.
    ///
    /// # Errors
    ///
    /// A message naming what could not be set up.
    pub async fn from_config_with_clock(config: &GatewayConfig, clock: Option<Arc<dyn Clock>>) -> Result<Self, String> {
        let (keys, jwks_uri_changes) = key_resolver(config, clock.clone())?;
        let url: StoreUrl = config
            .store
            .parse()
            .map_err(|e| format!("--store {}: {e}", redact(&config.store)))?;
        let mut options = StoreOptions {
            namespace: config.store_namespace.clone(),
            op_timeout: config.store_timeout,
            ..StoreOptions::default()
        };
        options.idempotency.lease_secs = i64::try_from(config.claim_lease.as_secs()).unwrap_or(i64::MAX);
        options.idempotency.window_secs = i64::try_from(config.dedup_window.as_secs()).unwrap_or(i64::MAX);
        let store = adcp_store::open(&url, options)
            .await
            .map_err(|e| format!("--store {}: {e}", redact(&config.store)))?;
        let mut gateway = GatewayOptions::new(config.upstream.clone());
        gateway.upstream_timeout = config.upstream_timeout;
        gateway.public_url.clone_from(&config.public_url);
        gateway.accept_hosts.clone_from(&config.accept_hosts);
        if let Some(path) = &config.subscriptions {
            gateway.subscriptions = Some(super::subscriptions::load(path)?);
        }
        gateway.max_body_bytes = config.max_body_bytes;
        gateway.access_log = config.access_log;
        gateway.header_timeout = config.header_timeout;
        gateway.body_timeout = config.body_timeout;
        gateway.max_concurrency = config.max_concurrency;
        gateway.clock = clock;
        gateway.jwks_uri_changes = jwks_uri_changes;
        if let Some(secret) = &config.hmac_secret {
            let secrets = HmacSecrets::new(secret).map_err(|e| format!("HMAC secret: {e}"))?;
            gateway.mode = WebhookAuthMode::HmacSha256 { secrets };
            gateway.legacy_sender.clone_from(&config.hmac_sender);
        }
        Gateway::new(keys, store, gateway)
    }
}

/// The key resolver for the configured key source and, for discovered
/// sellers, each one's `jwks_uri` change counter.
fn key_resolver(
    config: &GatewayConfig,
    clock: Option<Arc<dyn Clock>>,
) -> Result<(Arc<dyn KeyResolver>, JwksUriChanges), String> {
    let network: &TestNetwork = &config.test_network;
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
    match &config.keys {
        KeySource::Jwks { path, agent } => {
            let jwks = read_jwks("--jwks", path)?;
            Ok((
                Arc::new(StaticKeyResolver::new().with_jwks(&jwks, agent.as_str())),
                JwksUriChanges::default(),
            ))
        }
        KeySource::Agents(agents) => {
            let mut changes = JwksUriChanges::default();
            for agent in agents {
                let mut builder = adcp_jwks::HttpsKeyResolver::builder(agent.clone())
                    .surface(adcp_jwks::SigningSurface::Webhook)
                    .fetch_config(network.fetch_config()?);
                if let Some(list) = config.revocation_lists.get(agent) {
                    builder = builder
                        .revocation_list_url(list.as_str())
                        .allow_unsigned_revocation_list(config.allow_unsigned_revocation_lists);
                }
                if let Some(pin) = config.jwks_uri_pins.get(agent) {
                    builder = builder.pin_jwks_uri(pin.as_str());
                }
                builder = builder.adopt_jwks_uri_changes(config.adopt_jwks_uri_changes);
                if let Some(clock) = &clock {
                    let clock = Arc::clone(clock);
                    builder = builder.clock(Arc::new(move || clock.now()));
                }
                let resolver = builder.build().map_err(|e| format!("--agent {agent}: {e}"))?;
                let counted = resolver.clone();
                changes
                    .0
                    .push((agent.clone(), Arc::new(move || counted.jwks_uri_changes())));
                resolvers.push((agent.clone(), Arc::new(resolver)));
            }
            Ok((Arc::new(AgentsResolver::new(resolvers)), changes))
        }
        KeySource::None if resolvers.is_empty() => Ok((Arc::new(StaticKeyResolver::new()), JwksUriChanges::default())),
        KeySource::None => Ok((Arc::new(AgentsResolver::new(resolvers)), JwksUriChanges::default())),
    }
}

/// A public JWKS file (`{"keys": [...]}`).
fn read_jwks(flag: &str, path: &std::path::Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    let jwks: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if !jwks.get("keys").is_some_and(serde_json::Value::is_array) {
        return Err(format!("{flag} {}: not a JWKS (no \"keys\" array)", path.display()));
    }
    Ok(jwks)
}

/// Runs `adcp-sig gateway` until SIGINT or SIGTERM, then drains in-flight
/// requests. Returns the exit code: 0 after a clean shutdown, 2 when the
/// configuration or start-up failed.
#[must_use]
pub fn run(args: &GatewayArgs) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: tokio runtime: {e}");
            return 2;
        }
    };
    let env_secret = std::env::var_os(HMAC_SECRET_ENV).map(|s| s.into_encoded_bytes());
    let config = match GatewayConfig::resolve(args, env_secret) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    runtime.block_on(serve(&config))
}

async fn serve(config: &GatewayConfig) -> u8 {
    let progress = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    progress.enable_steady_tick(Duration::from_millis(100));
    progress.set_message(format!("opening store {}", redact(&config.store)));
    let gateway = match Gateway::from_config(config).await {
        Ok(gateway) => gateway,
        Err(e) => {
            progress.finish_and_clear();
            eprintln!("error: {e}");
            return 2;
        }
    };
    progress.set_message(format!("binding {}", config.listen));
    let listener = match tokio::net::TcpListener::bind(config.listen).await {
        Ok(listener) => listener,
        Err(e) => {
            progress.finish_and_clear();
            eprintln!("error: --listen {}: {e}", config.listen);
            return 2;
        }
    };
    progress.finish_and_clear();
    let mut handle = match gateway.serve(listener) {
        Ok(handle) => handle,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let keys = match &config.keys {
        KeySource::Jwks { path, agent } => format!("jwks {} for {agent}", path.display()),
        KeySource::Agents(agents) => format!(
            "agents {}",
            agents
                .iter()
                .map(|agent| {
                    let revocation = match config.revocation_lists.get(agent) {
                        Some(list) => format!("(revocation list {list})"),
                        None => "(no revocation list)".to_owned(),
                    };
                    let jwks_uri = match config.jwks_uri_pins.get(agent) {
                        Some(pin) => format!("jwks_uri pinned to {pin}"),
                        None if config.adopt_jwks_uri_changes => "jwks_uri changes adopted".to_owned(),
                        None => "jwks_uri first learned kept".to_owned(),
                    };
                    format!("{agent} {revocation} ({jwks_uri})")
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        KeySource::None if config.sellers.is_empty() => "no RFC 9421 keys".to_owned(),
        KeySource::None => String::new(),
    };
    let keys = match (keys.as_str(), config.sellers.is_empty()) {
        (keys, true) => keys.to_owned(),
        (keys, false) => {
            let sellers = config
                .sellers
                .iter()
                .map(|(seller, path)| format!("{seller} (jwks {})", path.display()))
                .collect::<Vec<_>>()
                .join(", ");
            [keys, &format!("sellers {sellers}")]
                .iter()
                .filter(|part| !part.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("; ")
        }
    };
    let mode = if config.hmac_secret.is_some() {
        "legacy HMAC-SHA256"
    } else {
        "RFC 9421"
    };
    eprintln!(
        "adcp-sig gateway listening on http://{} ({mode}; {keys}; store {}; upstream {})",
        handle.local_addr(),
        redact(&config.store),
        config.upstream
    );
    let stopped = tokio::select! {
        () = shutdown_signal() => None,
        result = handle.wait() => Some(result),
    };
    match stopped {
        None => {
            eprintln!("shutting down: draining in-flight requests");
            match handle.shutdown().await {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("error: {e}");
                    2
                }
            }
        }
        Some(result) => {
            eprintln!("error: server stopped: {result:?}");
            2
        }
    }
}

/// SIGINT (Ctrl-C) or, on Unix, SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
