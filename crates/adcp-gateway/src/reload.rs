//! Reloading the key and policy material without a restart: the keys
//! (`jwks`, `sellers`, discovered agents' `agent_brand_json` mappings),
//! the revoked kids, the subscriber registrations, the request mode's
//! capabilities and the HMAC secret file.
//!
//! Everything a request is verified with (the receivers, the request
//! verifier) forms one [`Verifying`] set. A reload builds a whole new set
//! from the files (every file read, parsed and checked first) and swaps it
//! in at once; a failure anywhere keeps the set in use. A request takes the
//! set in force when it starts and finishes with it. Counters are carried
//! over (the receivers count into the gateway's [`Metrics`]); discovered
//! agents whose mapping is unchanged keep their key resolver (its caches,
//! revocation list state and learned `jwks_uri`). The new-keyid admission
//! monitors start over.
//!
//! Settings that shape the server itself (listen address, store, mode,
//! request profile, public URL, timeouts, discovered agents and their
//! revocation lists and pins, …) are compared and reported when changed,
//! never applied: they need a restart.

use crate::config::GatewayConfig;
use crate::error::ConfigError;
use crate::request::RequestOptions;
use crate::subscriptions::Registrations;
use crate::Gateway;
use adcp_request::RequestVerifier;
use adcp_sigbase::Clock;
use adcp_store::Store;
use adcp_verify::admission::{AdmissionMonitor, AdmissionThresholds};
use adcp_verify::legacy::WebhookAuthMode;
use adcp_verify::{KeyResolver, ReplayStore};
use adcp_webhook::{Metrics, Receiver, ReceiverConfig};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

/// The settings (TOML keys) a reload applies. Every other key that
/// changes is reported and needs a restart.
pub(crate) const RELOADABLE: [&str; 8] = [
    "jwks",
    "jwks_agent",
    "sellers",
    "revoked_kids",
    "subscriptions",
    "capabilities",
    "agent_brand_json",
    "hmac_secret_file",
];

/// What one reload did ([`Gateway::reload`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// The reloadable settings (TOML keys) whose value changed and is now
    /// applied. The files they name were read again whether or not the
    /// setting changed, so new content applies without a change here.
    pub changed: Vec<String>,
    /// Settings (TOML keys) whose value changed but that only a restart
    /// applies; the gateway keeps running with the old value.
    pub needs_restart: Vec<String>,
}

/// The receivers and the request verifier in force: replaced whole by a
/// reload.
pub(crate) struct Verifying {
    /// The receiver of every URL without a legacy registration.
    pub(crate) receiver: Receiver,
    /// The receivers of legacy registrations, by canonical URL.
    pub(crate) by_url: HashMap<String, Receiver>,
    /// Request mode's verifier; `None` in webhook mode.
    pub(crate) request: Option<RequestVerifier>,
}

/// The material a reload replaces.
pub(crate) struct Policy {
    /// The key resolver, before the revoked kids.
    pub(crate) keys: Arc<dyn KeyResolver>,
    pub(crate) revoked_kids: Vec<String>,
    pub(crate) subscriptions: Option<Registrations>,
    pub(crate) mode: WebhookAuthMode,
    pub(crate) legacy_sender: Option<String>,
    pub(crate) request: Option<RequestOptions>,
}

/// What every [`Verifying`] set is built with: fixed for the gateway's
/// life.
pub(crate) struct Build {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) receiver_config: ReceiverConfig,
    pub(crate) thresholds: AdmissionThresholds,
    pub(crate) clock: Option<Arc<dyn Clock>>,
    pub(crate) max_body_bytes: usize,
    /// Shared by every receiver built, across reloads.
    pub(crate) batcher: Option<adcp_verify::SignatureBatcher>,
    /// Request mode's replay store (the options' own, else the store).
    pub(crate) request_replay: Option<Arc<dyn ReplayStore>>,
    /// The main receiver's counters.
    pub(crate) metrics: Arc<Metrics>,
    /// The counters of each legacy registration's receiver, by canonical
    /// URL; kept when a reload drops the URL, so that sums never go down.
    pub(crate) url_metrics: Mutex<BTreeMap<String, Arc<Metrics>>>,
}

impl Build {
    /// A new set from `policy`.
    pub(crate) fn verifying(&self, policy: &Policy) -> Result<Verifying, ConfigError> {
        let keys = crate::keys::RevokedKids::wrap(Arc::clone(&policy.keys), &policy.revoked_kids);
        let receiver = |mode: WebhookAuthMode, sender: Option<String>, metrics: Arc<Metrics>| {
            let mut builder = Receiver::builder_with_store(Arc::clone(&keys), Arc::new(Arc::clone(&self.store)))
                .mode(mode, sender)
                .config(self.receiver_config.clone())
                .admission_monitor(AdmissionMonitor::new(self.thresholds.clone()))
                .metrics(metrics);
            if let Some(clock) = &self.clock {
                builder = builder.clock(Arc::clone(clock));
            }
            if let Some(loaded) = &policy.subscriptions {
                builder = builder.subscriptions(Arc::new(loaded.subscriptions.clone()));
            }
            if let Some(batcher) = &self.batcher {
                builder = builder.signature_batcher(batcher.clone());
            }
            builder.build().map_err(ConfigError::Receiver)
        };
        let main = receiver(
            policy.mode.clone(),
            policy.legacy_sender.clone(),
            Arc::clone(&self.metrics),
        )?;
        let mut by_url = HashMap::new();
        for (url, mode, seller) in policy.subscriptions.iter().flat_map(|loaded| loaded.legacy.iter()) {
            let metrics = Arc::clone(
                self.url_metrics
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entry(url.clone())
                    .or_default(),
            );
            by_url.insert(url.clone(), receiver(mode.clone(), Some(seller.clone()), metrics)?);
        }
        let request = match &policy.request {
            Some(request) => {
                let replay: Arc<dyn ReplayStore> = match (&request.replay, &self.request_replay) {
                    (Some(replay), _) | (None, Some(replay)) => Arc::clone(replay),
                    (None, None) => Arc::new(Arc::clone(&self.store)),
                };
                let mut builder = RequestVerifier::builder(Arc::clone(&keys), replay, request.capability.clone())
                    .profile(request.profile.clone())
                    .scheme(self.receiver_config.scheme.clone())
                    .max_body_bytes(self.max_body_bytes)
                    .authenticator(crate::request::CredentialHeader(request.credential_header.clone()))
                    .admission_monitor(AdmissionMonitor::new(self.thresholds.clone()));
                if let Some(binding) = request.binding {
                    builder = builder.binding(binding);
                }
                if let Some(batcher) = &self.batcher {
                    builder = builder.signature_batcher(batcher.clone());
                }
                if let Some(clock) = &self.clock {
                    builder = builder.clock(Arc::clone(clock));
                }
                Some(builder.build().map_err(ConfigError::RequestVerifier)?)
            }
            None => None,
        };
        Ok(Verifying {
            receiver: main,
            by_url,
            request,
        })
    }

    /// Every receiver's counters, legacy registrations' included (also
    /// those a reload dropped).
    pub(crate) fn all_metrics(&self) -> Vec<Arc<Metrics>> {
        let by_url = self.url_metrics.lock().unwrap_or_else(PoisonError::into_inner);
        std::iter::once(Arc::clone(&self.metrics))
            .chain(by_url.values().cloned())
            .collect()
    }
}

/// A discovered agent's key resolver and the brand.json mapping it was
/// built with.
#[derive(Clone)]
pub(crate) struct DiscoveredAgent {
    /// Its `agent_brand_json` entry, if any.
    pub(crate) brand_json: Option<String>,
    pub(crate) resolver: adcp_jwks::HttpsKeyResolver,
    /// `jwks_uri` changes counted by the resolvers this one replaced.
    pub(crate) base: u64,
}

impl DiscoveredAgent {
    /// Its `jwks_uri` changes, the replaced resolvers' included.
    pub(crate) fn jwks_uri_changes(&self) -> u64 {
        self.base + self.resolver.jwks_uri_changes()
    }
}

/// Discovered agents by agent URL.
pub(crate) type DiscoveredAgents = BTreeMap<String, DiscoveredAgent>;

/// The discovered agents in force, shared with the `jwks_uri` change
/// counters.
pub(crate) type Discovered = Arc<Mutex<DiscoveredAgents>>;

/// What a gateway built from a configuration reloads from.
#[derive(Clone)]
pub(crate) struct ReloadSource {
    /// The configuration in force (reloadable settings as last applied,
    /// the others as at start).
    pub(crate) config: GatewayConfig,
    pub(crate) discovered: Discovered,
    pub(crate) clock: Option<Arc<dyn Clock>>,
}

impl std::fmt::Debug for ReloadSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadSource").finish_non_exhaustive()
    }
}

/// `running` with the reloadable settings of `new`, and which settings
/// differ (reloadable ones, and those needing a restart).
fn merge(running: &GatewayConfig, new: &GatewayConfig) -> (GatewayConfig, Reloaded) {
    let table = |config: &GatewayConfig| match serde_json::to_value(config) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (old, fresh) = (table(running), table(new));
    let mut report = Reloaded::default();
    let keys: std::collections::BTreeSet<&String> = old.keys().chain(fresh.keys()).collect();
    for key in keys {
        if old.get(key) == fresh.get(key) {
            continue;
        }
        if RELOADABLE.contains(&key.as_str()) {
            report.changed.push(key.clone());
        } else {
            report.needs_restart.push(key.clone());
        }
    }
    let mut effective = running.clone();
    effective.jwks.clone_from(&new.jwks);
    effective.jwks_agent.clone_from(&new.jwks_agent);
    effective.sellers.clone_from(&new.sellers);
    effective.revoked_kids.clone_from(&new.revoked_kids);
    effective.subscriptions.clone_from(&new.subscriptions);
    effective.capabilities.clone_from(&new.capabilities);
    effective.agent_brand_json.clone_from(&new.agent_brand_json);
    effective.hmac_secret_file.clone_from(&new.hmac_secret_file);
    effective.hmac_secret.clone_from(&new.hmac_secret);
    (effective, report)
}

impl Gateway {
    /// Reloads the key and policy material from `config` (usually the
    /// gateway's configuration read again): the `jwks` and `sellers` key
    /// files, `jwks_agent`, `revoked_kids`, the `subscriptions` file, the
    /// request mode's `capabilities` file, the `agent_brand_json`
    /// mappings (a discovered agent whose mapping changed gets a new key
    /// resolver; the others keep theirs, caches included) and the HMAC
    /// secret (`hmac_secret_file`, or `hmac_secret` as given). Every
    /// file is read and checked, and the new receivers and verifier built,
    /// before any of it replaces the set in force, at once: requests
    /// already under way finish with the old set, the next ones use the
    /// new. On error nothing changes.
    ///
    /// Other settings that differ from the ones the gateway runs with are
    /// listed in [`Reloaded::needs_restart`] and not applied. The reload is
    /// counted in `adcp_gateway_reloads_total{result}`. The TLS
    /// certificate is reloaded by [`GatewayHandle::reload_tls`](crate::GatewayHandle::reload_tls)
    /// (or [`reload_on_sighup`](Self::reload_on_sighup), which does both).
    ///
    /// # Errors
    ///
    /// [`ConfigError::NotReloadable`] for a gateway built with
    /// [`Gateway::new`] (from parts, not from a configuration); otherwise
    /// the configuration error that stopped the reload (a file unreadable
    /// or malformed, settings that do not fit together), as
    /// [`Gateway::from_config`] would report it.
    pub fn reload(&self, config: &GatewayConfig) -> Result<Reloaded, ConfigError> {
        let result = self.reload_config(config);
        self.metrics().reloaded(result.is_ok());
        result
    }

    /// [`Self::reload`] without counting.
    pub(crate) fn reload_config(&self, config: &GatewayConfig) -> Result<Reloaded, ConfigError> {
        let Some(source) = self.reload_source() else {
            return Err(ConfigError::NotReloadable);
        };
        let mut source = source.lock().unwrap_or_else(PoisonError::into_inner);
        let (effective, report) = merge(&source.config, config);
        let resolved = effective.resolve()?;
        let known = source.discovered.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let (keys, discovered) = crate::setup::key_resolver(&effective, &resolved, source.clock.clone(), &known)?;
        let subscriptions = match &effective.subscriptions {
            Some(path) => Some(Registrations::load(path)?),
            None => None,
        };
        let (mode, legacy_sender) = crate::setup::hmac_mode(&resolved)?;
        let policy = Policy {
            keys,
            revoked_kids: effective.revoked_kids.clone(),
            subscriptions,
            mode,
            legacy_sender,
            request: resolved.request,
        };
        let verifying = self.build().verifying(&policy)?;
        // Everything is built and checked: swap.
        self.install(verifying);
        *source.discovered.lock().unwrap_or_else(PoisonError::into_inner) = discovered;
        source.config = effective;
        Ok(report)
    }

    /// Reloads on each `SIGHUP` (Unix) until the returned task is aborted:
    /// the TLS certificate when serving TLS ([`TlsConfig::reload`](crate::TlsConfig::reload)),
    /// then, for a gateway built from a configuration, the key and policy
    /// material from the configuration `source` returns
    /// ([`Self::reload`]; `adcp-sig gateway` reads its TOML file again
    /// and lays the flags and variables given at start over it). Each part
    /// is replaced whole or not at all, and a failed part keeps what is in
    /// force. Every `SIGHUP` is one line on stderr (`SIGHUP: …`, or
    /// `error: SIGHUP: …` when a part failed: what was reloaded, settings
    /// changed that need a restart, why a part failed) and one count in `adcp_gateway_reloads_total{result="ok"|"failed"}` (failed
    /// when any part failed). The signal handler is installed before this
    /// returns, so a `SIGHUP` no longer ends the process, TLS or not.
    ///
    /// # Errors
    ///
    /// The signal handler could not be installed.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime with its I/O driver enabled (as
    /// `tokio::signal` does).
    #[cfg(unix)]
    pub fn reload_on_sighup<F>(&self, mut source: F) -> std::io::Result<tokio::task::JoinHandle<()>>
    where
        F: FnMut() -> Result<GatewayConfig, Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
    {
        let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        let gateway = self.clone();
        Ok(tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                gateway.hangup(&mut source);
            }
        }))
    }

    /// One `SIGHUP`: see [`Self::reload_on_sighup`]. One line on stderr,
    /// `error: ` first when a part failed.
    fn hangup<F>(&self, source: &mut F)
    where
        F: FnMut() -> Result<GatewayConfig, Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut ok = true;
        let mut parts = Vec::new();
        if let Some(tls) = self.tls() {
            match tls.reload() {
                Ok(()) => parts.push(format!(
                    "TLS certificate reloaded from {} ({})",
                    tls.cert_path().display(),
                    tls.names().join(", ")
                )),
                Err(e) => {
                    ok = false;
                    parts.push(format!("TLS reload failed, keeping the current certificate: {e}"));
                }
            }
        }
        if self.reload_source().is_some() {
            let reloaded = source()
                .map_err(|e| e.to_string())
                .and_then(|config| self.reload_config(&config).map_err(|e| e.to_string()));
            match reloaded {
                Ok(report) => {
                    let mut part = "keys and policies reloaded".to_owned();
                    if !report.changed.is_empty() {
                        part.push_str(&format!(" (changed: {})", report.changed.join(", ")));
                    }
                    parts.push(part);
                    if !report.needs_restart.is_empty() {
                        parts.push(format!(
                            "{} changed but not applied: a restart applies them",
                            report.needs_restart.join(", ")
                        ));
                    }
                }
                Err(e) => {
                    ok = false;
                    parts.push(format!("keys and policies not reloaded, keeping the current ones: {e}"));
                }
            }
        }
        if parts.is_empty() {
            parts.push("nothing to reload".to_owned());
        }
        eprintln!("{}SIGHUP: {}", if ok { "" } else { "error: " }, parts.join("; "));
        self.metrics().reloaded(ok);
    }
}
