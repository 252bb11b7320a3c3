//! The relay process: open the store, start the dispatcher and the API,
//! print the listening line, run until SIGINT or SIGTERM, then drain.

use adcp_outbox::relay::RelayApi;
use adcp_outbox::{open_store, BreakerPolicy, Dispatcher, DispatcherConfig, Outbox, OutboxConfig, StaticSigners};
use adcp_sign::{BoxSigner, HttpSigner, SoftwareSigner};
use adcp_webhook::{AttemptClient, DestinationPolicy, RetryPolicy};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Everything the relay runs with, resolved from flags, environment and
/// TOML.
#[derive(Debug, Clone, PartialEq)]
pub struct RelaySettings {
    /// `sqlite:PATH`, `postgres://…` or `postgresql://…`.
    pub store: String,
    /// The signing keys: `(scope, private JWK file)`; the `--key` one is
    /// scope `default`.
    pub keys: Vec<(String, PathBuf)>,
    /// Where the API listens.
    pub listen: SocketAddr,
    /// Plain-HTTP loopback destinations allowed (tests, local demos).
    pub allow_http: bool,
    /// Attempts in flight in this process.
    pub concurrency: usize,
    /// Attempts in flight per destination origin.
    pub per_destination: usize,
    /// The retry horizon (86,400–604,800 s).
    pub horizon: Duration,
    /// The deadline of one attempt.
    pub attempt_timeout: Duration,
    /// The first retry's wait ceiling (doubling per retry, full jitter).
    pub retry_base: Duration,
    /// The cap on one retry's wait ceiling.
    pub retry_max: Duration,
    /// The API token (read from a file), required off loopback.
    pub api_token: Option<String>,
    /// The outbox tables' prefix.
    pub table_prefix: String,
    /// How long in-flight attempts may finish at shutdown.
    pub drain: Duration,
    /// How often expired records are purged.
    pub purge_interval: Duration,
    /// How long terminal events and activity records are kept.
    pub retention: Duration,
    /// Encryption at rest: `(key id, key file)`, the first current.
    pub encryption: Vec<(String, PathBuf)>,
    /// The seller's agent URL for activation challenges (none: no
    /// activation route).
    pub agent_url: Option<String>,
    /// The application's URL the reporting schedule asks for numbers
    /// (none: no reporting schedule).
    pub reporting_source: Option<String>,
}

/// Why the relay refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// A setting is wrong.
    #[error("{0}")]
    Config(String),
}

/// A 32-byte key from a file: raw bytes, or hex, or base64 text.
fn read_key(path: &PathBuf) -> Result<Vec<u8>, RelayError> {
    use base64::Engine as _;
    let bytes =
        std::fs::read(path).map_err(|e| RelayError::Config(format!("encryption key {}: {e}", path.display())))?;
    if bytes.len() == 32 {
        return Ok(bytes);
    }
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    let hex = (text.len() == 64)
        .then(|| {
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
                .collect::<Option<Vec<u8>>>()
        })
        .flatten();
    hex.or_else(|| base64::engine::general_purpose::STANDARD.decode(text).ok())
        .filter(|k| k.len() == 32)
        .ok_or_else(|| {
            RelayError::Config(format!(
                "encryption key {}: expected 32 bytes (raw, hex or base64)",
                path.display()
            ))
        })
}

fn load_keyring(keys: &[(String, PathBuf)]) -> Result<Option<adcp_outbox::Keyring>, RelayError> {
    let Some(((id, path), old)) = keys.split_first() else {
        return Ok(None);
    };
    let crypto = |e: adcp_outbox::OutboxError| RelayError::Config(format!("--encryption-key: {e}"));
    let mut ring = adcp_outbox::Keyring::new(id, &read_key(path)?).map_err(crypto)?;
    for (id, path) in old {
        ring = ring.with_old_key(id, &read_key(path)?).map_err(crypto)?;
    }
    Ok(Some(ring))
}

fn load_signers(keys: &[(String, PathBuf)]) -> Result<StaticSigners, RelayError> {
    if keys.is_empty() {
        return Err(RelayError::Config(
            "no signing key: give --key PRIVATE_JWK (or signing_keys in the TOML)".to_owned(),
        ));
    }
    let mut signers = StaticSigners::new();
    for (scope, path) in keys {
        let bytes =
            std::fs::read(path).map_err(|e| RelayError::Config(format!("signing key {}: {e}", path.display())))?;
        let key = SoftwareSigner::from_jwk_json(&bytes)
            .map_err(|e| RelayError::Config(format!("signing key {}: {e}", path.display())))?;
        let signer = HttpSigner::webhook(BoxSigner::new(key))
            .map_err(|e| RelayError::Config(format!("signing key {}: {e}", path.display())))?;
        signers = signers.with(scope.clone(), signer);
    }
    Ok(signers)
}

/// The sender of activation challenges: the default scope's key (the
/// scope receivers resolve through the agent's brand.json).
fn activation_sender(
    settings: &RelaySettings,
    policy: DestinationPolicy,
) -> Result<Arc<dyn adcp_outbox::channels::Activator>, RelayError> {
    let (_, path) = settings
        .keys
        .iter()
        .find(|(scope, _)| scope == adcp_outbox::DEFAULT_SIGNING_SCOPE)
        .ok_or_else(|| RelayError::Config("--agent-url needs the default signing key (--key)".to_owned()))?;
    let bytes = std::fs::read(path).map_err(|e| RelayError::Config(format!("signing key {}: {e}", path.display())))?;
    let key = SoftwareSigner::from_jwk_json(&bytes)
        .map_err(|e| RelayError::Config(format!("signing key {}: {e}", path.display())))?;
    let signer = HttpSigner::webhook(BoxSigner::new(key))
        .map_err(|e| RelayError::Config(format!("signing key {}: {e}", path.display())))?;
    let sender = adcp_webhook::WebhookSender::builder(signer)
        .destination_policy(policy)
        .build()
        .map_err(|e| RelayError::Config(format!("activation sender: {e}")))?;
    Ok(Arc::new(sender))
}

/// The HTTP client asking the application for reporting numbers: the web
/// PKI's roots, no redirects, a 10 s deadline per question.
fn reporting_client() -> Result<reqwest::Client, RelayError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| RelayError::Config(format!("tls: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| RelayError::Config(format!("--reporting-source client: {e}")))
}

/// Checks the settings that need no I/O.
///
/// # Errors
///
/// [`RelayError::Config`].
pub fn check(settings: &RelaySettings) -> Result<(), RelayError> {
    if !settings.listen.ip().is_loopback() && settings.api_token.is_none() {
        return Err(RelayError::Config(format!(
            "refusing to listen on {} (not loopback) without an API token: set --api-token-file",
            settings.listen
        )));
    }
    if settings.concurrency == 0 || settings.per_destination == 0 {
        return Err(RelayError::Config(
            "--concurrency and --per-destination must be at least 1".to_owned(),
        ));
    }
    Ok(())
}

/// Runs the relay until `shutdown`; prints `listening on http://ADDR` on
/// stdout when ready. Returns the exit code (0 clean, 2 start-up failure).
pub async fn serve(settings: RelaySettings, shutdown: impl std::future::Future<Output = ()> + Send) -> u8 {
    match serve_inner(settings, shutdown).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

async fn serve_inner(
    settings: RelaySettings,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), RelayError> {
    check(&settings)?;
    let signers = load_signers(&settings.keys)?;
    let retry = RetryPolicy::new(settings.retry_base, settings.retry_max, settings.horizon)
        .and_then(|p| {
            p.with_timeouts(
                settings.attempt_timeout,
                Duration::from_secs(5).min(settings.attempt_timeout),
            )
        })
        .map_err(|e| RelayError::Config(format!("retry policy: {e}")))?;
    let mut policy = DestinationPolicy::default();
    if settings.allow_http {
        policy = policy.dangerously_allow_plain_http_loopback();
    }
    let client = AttemptClient::builder()
        .destination_policy(policy.clone())
        .timeouts(retry.attempt_timeout(), retry.connect_timeout())
        .build()
        .map_err(|e| RelayError::Config(format!("http client: {e}")))?;
    let store = open_store(&settings.store, &settings.table_prefix, BreakerPolicy::default())
        .await
        .map_err(|e| RelayError::Config(format!("--store: {e}")))?;
    let config = OutboxConfig {
        retry,
        retention: settings.retention,
        encryption: load_keyring(&settings.encryption)?,
        ..OutboxConfig::default()
    };
    let outbox = Outbox::new(store, config).map_err(|e| RelayError::Config(e.to_string()))?;
    let scopes: Vec<String> = signers.scopes().map(str::to_owned).collect();
    let dispatcher = Dispatcher::new(
        outbox.clone(),
        client,
        Arc::new(signers),
        DispatcherConfig {
            concurrency: settings.concurrency,
            per_destination: settings.per_destination,
            ..DispatcherConfig::default()
        },
    )
    .map_err(|e| RelayError::Config(e.to_string()))?;
    let client_policy = policy.clone();
    let mut api = RelayApi::new(outbox.clone(), policy, scopes).with_metrics(dispatcher.metrics());
    if let Some(token) = &settings.api_token {
        api = api.with_token(token.clone());
    }
    if let Some(agent_url) = &settings.agent_url {
        api = api.with_activator(activation_sender(&settings, client_policy)?, agent_url.clone());
    }
    let reporting = match &settings.reporting_source {
        Some(url) => {
            let source = adcp_outbox::reporting::HttpDeliverySource::new(url.clone(), reporting_client()?);
            let scheduler = adcp_outbox::reporting::ReportingScheduler::new(
                outbox.clone(),
                Arc::new(source),
                adcp_outbox::reporting::ReportingConfig::default(),
            );
            api = api.with_reporting(scheduler.clone());
            Some(scheduler)
        }
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(|e| RelayError::Config(format!("--listen {}: {e}", settings.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| RelayError::Config(format!("--listen: {e}")))?;

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut dispatch_stop = stop_rx.clone();
    let drain = settings.drain;
    let dispatcher = tokio::spawn(dispatcher.run_with_drain(
        async move {
            let _ = dispatch_stop.wait_for(|s| *s).await;
        },
        drain,
    ));
    let purge_outbox = outbox.clone();
    let purge_every = settings.purge_interval;
    let purger = tokio::spawn(async move {
        let mut tick = tokio::time::interval(purge_every);
        tick.tick().await;
        loop {
            tick.tick().await;
            if let Err(e) = purge_outbox.purge().await {
                tracing::warn!(error = %e, "outbox purge failed; the next one retries");
            }
        }
    });
    let schedule = reporting.map(|scheduler| {
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            scheduler
                .run(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await;
        })
    });
    let mut http_stop = stop_rx.clone();
    let server = tokio::spawn(async move {
        axum::serve(listener, api.router())
            .with_graceful_shutdown(async move {
                let _ = http_stop.wait_for(|s| *s).await;
            })
            .await
    });
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on http://{addr}");
        let _ = out.flush();
    }
    eprintln!(
        "adcp-sig relay: store {}; {} attempt(s) in flight, {} per destination; horizon {} s",
        redact_store(&settings.store),
        settings.concurrency,
        settings.per_destination,
        settings.horizon.as_secs()
    );
    shutdown.await;
    eprintln!(
        "shutting down: draining in-flight attempts (up to {} s)",
        drain.as_secs()
    );
    let _ = stop_tx.send(true);
    let _ = server.await;
    let _ = dispatcher.await;
    if let Some(schedule) = schedule {
        let _ = schedule.await;
    }
    purger.abort();
    Ok(())
}

/// A store URL without its password.
fn redact_store(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_passwords_are_not_printed() {
        assert_eq!(redact_store("postgres://u:pw@db:5432/x"), "postgres://u:***@db:5432/x");
        assert_eq!(redact_store("sqlite:/tmp/a@b"), "sqlite:/tmp/a@b");
    }
}
