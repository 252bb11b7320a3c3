//! `adcp-sig relay`'s settings, each declared once: its flag, its
//! `ADCP_RELAY_*` variable and its TOML key (the field name), laid over
//! the `--config` file by the settings overlay.

use super::serve::RelaySettings;
use crate::settings::{overlay, SettingsError};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The environment variable that may hold the API token (a secret: never
/// a flag or a TOML key).
pub const API_TOKEN_ENV: &str = "ADCP_RELAY_API_TOKEN";

/// The relay's TOML file: every key, with its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelayConfig {
    /// `sqlite:PATH`, `postgres://…` or `postgresql://…`.
    pub store: String,
    /// The private JWK of the `default` signing scope.
    pub key: Option<PathBuf>,
    /// More signing scopes, `SCOPE=FILE`.
    pub signing_keys: Vec<String>,
    /// The API's address.
    pub listen: SocketAddr,
    /// Plain-HTTP loopback destinations (tests, local demos).
    pub allow_http: bool,
    /// Attempts in flight in this process.
    pub concurrency: usize,
    /// Attempts in flight per destination origin.
    pub per_destination: usize,
    /// The retry horizon in seconds (86,400–604,800).
    pub horizon_seconds: u64,
    /// The deadline of one attempt, in seconds.
    pub attempt_timeout_seconds: u64,
    /// The first retry's wait ceiling, in seconds: retry `n` waits a
    /// uniformly random time up to `retry_base_seconds * 2^(n-1)`, capped
    /// by `retry_max_seconds` (full jitter).
    pub retry_base_seconds: u64,
    /// The cap on one retry's wait ceiling, in seconds.
    pub retry_max_seconds: u64,
    /// A file holding the API token.
    pub api_token_file: Option<PathBuf>,
    /// The outbox tables' prefix.
    pub table_prefix: String,
    /// How long in-flight attempts may finish at shutdown, in seconds.
    pub drain_seconds: u64,
    /// How often the retention is applied, in seconds.
    pub purge_interval_seconds: u64,
    /// How long terminal events and activity records are kept, in days.
    pub retention_days: u64,
    /// Encryption at rest: `ID=FILE` entries (32-byte AES-256 keys, raw,
    /// hex or base64), the first sealing new rows, the others kept for
    /// reading older ones.
    pub encryption_keys: Vec<String>,
    /// The seller's agent URL: subscribers' activation challenges are sent
    /// as this agent (`POST /v1/channels/{id}/activate`); unset, the relay
    /// runs none.
    pub agent_url: Option<String>,
    /// The application's URL the reporting schedule asks for each period's
    /// numbers (`adcp_outbox::reporting::HttpDeliverySource`); unset, the
    /// relay runs no reporting schedule.
    pub reporting_source: Option<String>,
}

impl Default for RelayConfig {
    fn default() -> Self {
        Self {
            store: "sqlite:adcp-relay.sqlite".to_owned(),
            key: None,
            signing_keys: Vec::new(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8791)),
            allow_http: false,
            concurrency: 64,
            per_destination: 4,
            horizon_seconds: 86_400,
            attempt_timeout_seconds: 10,
            retry_base_seconds: 1,
            retry_max_seconds: 600,
            api_token_file: None,
            table_prefix: adcp_outbox::DEFAULT_TABLE_PREFIX.to_owned(),
            drain_seconds: 10,
            purge_interval_seconds: 3600,
            retention_days: 30,
            encryption_keys: Vec::new(),
            agent_url: None,
            reporting_source: None,
        }
    }
}

/// Arguments of `adcp-sig relay`.
#[derive(Debug, Clone, Default, Args, Serialize)]
pub struct RelayArgs {
    /// TOML file with the same settings (a key is its variable's name
    /// after `ADCP_RELAY_`, in lower case: `store`, `key`, `signing_keys`,
    /// `listen`, …).
    #[arg(long, value_name = "FILE", env = "ADCP_RELAY_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// The outbox store: `sqlite:PATH` (embedded), `postgres://…` or
    /// `postgresql://…` (a fleet of relays) [default: sqlite:adcp-relay.sqlite].
    #[arg(long, value_name = "URL", env = "ADCP_RELAY_STORE")]
    pub store: Option<String>,
    /// The private JWK signing the `default` scope.
    #[arg(long, value_name = "PRIVATE_JWK", env = "ADCP_RELAY_KEY")]
    pub key: Option<PathBuf>,
    /// Another signing scope and its private JWK, `SCOPE=FILE`.
    /// Repeatable; comma-separated in the environment.
    #[arg(
        long = "signing-key",
        value_name = "SCOPE=FILE",
        env = "ADCP_RELAY_SIGNING_KEYS",
        value_delimiter = ','
    )]
    pub signing_keys: Vec<String>,
    /// Address to listen on; port 0 picks a free one [default: 127.0.0.1:8791].
    #[arg(long, value_name = "ADDR", env = "ADCP_RELAY_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Allow plain-HTTP loopback destinations (tests and local demos only).
    #[arg(long, env = "ADCP_RELAY_ALLOW_HTTP")]
    pub allow_http: bool,
    /// Attempts in flight in this process [default: 64].
    #[arg(long, value_name = "N", env = "ADCP_RELAY_CONCURRENCY")]
    pub concurrency: Option<usize>,
    /// Attempts in flight per destination origin [default: 4].
    #[arg(long, value_name = "N", env = "ADCP_RELAY_PER_DESTINATION")]
    pub per_destination: Option<usize>,
    /// Retry horizon in seconds, 86400-604800 [default: 86400].
    #[arg(long, value_name = "SECONDS", env = "ADCP_RELAY_HORIZON_SECONDS")]
    pub horizon_seconds: Option<u64>,
    /// Deadline of one attempt in seconds, signing included [default: 10].
    #[arg(long, value_name = "SECONDS", env = "ADCP_RELAY_ATTEMPT_TIMEOUT_SECONDS")]
    pub attempt_timeout_seconds: Option<u64>,
    /// Seconds of the first retry's wait ceiling; each retry doubles it up
    /// to --retry-max-seconds, and waits a random time below it (full
    /// jitter; a Retry-After within bounds wins) [default: 1].
    #[arg(long, value_name = "SECONDS", env = "ADCP_RELAY_RETRY_BASE_SECONDS")]
    pub retry_base_seconds: Option<u64>,
    /// Cap on one retry's wait ceiling in seconds, at least
    /// --retry-base-seconds and at most 86400 [default: 600].
    #[arg(long, value_name = "SECONDS", env = "ADCP_RELAY_RETRY_MAX_SECONDS")]
    pub retry_max_seconds: Option<u64>,
    /// A file holding the API token the API requires as
    /// `Authorization: Bearer` (or set ADCP_RELAY_API_TOKEN). Required
    /// to listen off loopback.
    #[arg(long, value_name = "FILE", env = "ADCP_RELAY_API_TOKEN_FILE")]
    pub api_token_file: Option<PathBuf>,
    /// Prefix of the outbox tables [default: adcp_outbox_].
    #[arg(long, value_name = "PREFIX", env = "ADCP_RELAY_TABLE_PREFIX")]
    pub table_prefix: Option<String>,
    /// Seconds in-flight attempts may finish at SIGTERM [default: 10].
    #[arg(long, value_name = "SECONDS", env = "ADCP_RELAY_DRAIN_SECONDS")]
    pub drain_seconds: Option<u64>,
    /// Seconds between applications of the retention [default: 3600].
    #[arg(long, value_name = "SECONDS", env = "ADCP_RELAY_PURGE_INTERVAL_SECONDS")]
    pub purge_interval_seconds: Option<u64>,
    /// Days terminal events and activity records are kept, at least 30
    /// [default: 30].
    #[arg(long, value_name = "DAYS", env = "ADCP_RELAY_RETENTION_DAYS")]
    pub retention_days: Option<u64>,
    /// Encrypt stored bodies and legacy credentials with AES-256-GCM:
    /// `ID=FILE` (a 32-byte key, raw, hex or base64). Repeatable: the
    /// first seals new rows, the others only decrypt older rows (key
    /// rotation). Comma-separated in the environment.
    #[arg(
        long = "encryption-key",
        value_name = "ID=FILE",
        env = "ADCP_RELAY_ENCRYPTION_KEYS",
        value_delimiter = ','
    )]
    pub encryption_keys: Vec<String>,
    /// The seller's agent URL, as which subscribers' activation challenges
    /// are sent (`POST /v1/channels/{id}/activate`).
    #[arg(long, value_name = "URL", env = "ADCP_RELAY_AGENT_URL")]
    pub agent_url: Option<String>,
    /// The application's URL the reporting schedule asks for each period's
    /// delivery numbers (enables `/v1/reporting/{media_buy_id}`).
    #[arg(long, value_name = "URL", env = "ADCP_RELAY_REPORTING_SOURCE")]
    pub reporting_source: Option<String>,
}

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RelayArgsError {
    /// The `--config` file.
    #[error("--config {path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A flag, variable or key.
    #[error("{0}")]
    Setting(#[from] SettingsError),
    /// A value out of range or a file that cannot be read.
    #[error("{0}")]
    Invalid(String),
}

/// The settings: flags (and their variables) over the `--config` file
/// over the defaults; `env_token` is `ADCP_RELAY_API_TOKEN`.
///
/// # Errors
///
/// [`RelayArgsError`].
pub fn resolve(args: &RelayArgs, env_token: Option<String>) -> Result<RelaySettings, RelayArgsError> {
    let file = match &args.config {
        None => RelayConfig::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| RelayArgsError::File {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
            toml::from_str(&text).map_err(|e| RelayArgsError::File {
                path: path.display().to_string(),
                message: e.to_string(),
            })?
        }
    };
    let config: RelayConfig = overlay(&file, args)?;
    let mut keys = Vec::new();
    if let Some(key) = &config.key {
        keys.push((adcp_outbox::DEFAULT_SIGNING_SCOPE.to_owned(), key.clone()));
    }
    for entry in &config.signing_keys {
        let Some((scope, path)) = entry.split_once('=').filter(|(s, p)| !s.is_empty() && !p.is_empty()) else {
            return Err(RelayArgsError::Invalid(format!(
                "--signing-key {entry:?}: expected SCOPE=FILE"
            )));
        };
        if keys.iter().any(|(s, _)| s == scope) {
            return Err(RelayArgsError::Invalid(format!(
                "--signing-key: scope {scope:?} given twice"
            )));
        }
        keys.push((scope.to_owned(), PathBuf::from(path)));
    }
    if !(86_400..=604_800).contains(&config.horizon_seconds) {
        return Err(RelayArgsError::Invalid(format!(
            "--horizon-seconds {}: must be 86400-604800 (the spec's bounds)",
            config.horizon_seconds
        )));
    }
    if config.attempt_timeout_seconds == 0 || config.attempt_timeout_seconds > 300 {
        return Err(RelayArgsError::Invalid(
            "--attempt-timeout-seconds must be 1-300".to_owned(),
        ));
    }
    if config.retry_base_seconds == 0
        || config.retry_max_seconds < config.retry_base_seconds
        || config.retry_max_seconds > 86_400
    {
        return Err(RelayArgsError::Invalid(format!(
            "--retry-base-seconds {} / --retry-max-seconds {}: the base at least 1, the cap at least the base and at most 86400",
            config.retry_base_seconds, config.retry_max_seconds
        )));
    }
    if config.retention_days < 30 {
        return Err(RelayArgsError::Invalid(
            "--retention-days must be at least 30 (the webhook_activity window)".to_owned(),
        ));
    }
    let api_token = match (&config.api_token_file, env_token) {
        (Some(path), _) => {
            let token = std::fs::read_to_string(path)
                .map_err(|e| RelayArgsError::Invalid(format!("--api-token-file {}: {e}", path.display())))?;
            Some(token.trim().to_owned())
        }
        (None, token) => token.map(|t| t.trim().to_owned()),
    };
    if api_token.as_deref().is_some_and(|t| t.len() < 16) {
        return Err(RelayArgsError::Invalid(
            "the API token must be at least 16 characters".to_owned(),
        ));
    }
    let mut encryption = Vec::new();
    for entry in &config.encryption_keys {
        let Some((id, path)) = entry.split_once('=').filter(|(i, p)| !i.is_empty() && !p.is_empty()) else {
            return Err(RelayArgsError::Invalid(format!(
                "--encryption-key {entry:?}: expected ID=FILE"
            )));
        };
        encryption.push((id.to_owned(), PathBuf::from(path)));
    }
    for (flag, url) in [
        ("--agent-url", &config.agent_url),
        ("--reporting-source", &config.reporting_source),
    ] {
        if let Some(url) = url {
            if !url.starts_with("https://") && !url.starts_with("http://") {
                return Err(RelayArgsError::Invalid(format!(
                    "{flag} {url:?}: an absolute http(s) URL"
                )));
            }
        }
    }
    adcp_outbox::check_prefix(&config.table_prefix)
        .map_err(|e| RelayArgsError::Invalid(format!("--table-prefix: {e}")))?;
    Ok(RelaySettings {
        store: config.store,
        keys,
        listen: config.listen,
        allow_http: config.allow_http,
        concurrency: config.concurrency,
        per_destination: config.per_destination,
        horizon: Duration::from_secs(config.horizon_seconds),
        attempt_timeout: Duration::from_secs(config.attempt_timeout_seconds),
        retry_base: Duration::from_secs(config.retry_base_seconds),
        retry_max: Duration::from_secs(config.retry_max_seconds),
        api_token,
        table_prefix: config.table_prefix,
        drain: Duration::from_secs(config.drain_seconds),
        purge_interval: Duration::from_secs(config.purge_interval_seconds.max(60)),
        retention: Duration::from_secs(config.retention_days.saturating_mul(86_400)),
        encryption,
        agent_url: config.agent_url,
        reporting_source: config.reporting_source,
    })
}

/// Runs `adcp-sig relay` until SIGINT or SIGTERM. Returns the exit code:
/// 0 after a clean shutdown, 2 when the settings or start-up failed.
#[must_use]
pub fn run(args: &RelayArgs) -> u8 {
    let settings = match resolve(args, std::env::var(API_TOKEN_ENV).ok()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: tokio runtime: {e}");
            return 2;
        }
    };
    runtime.block_on(super::serve(settings, crate::signals::shutdown_signal()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RelayArgs,
    }

    fn parse(argv: &[&str]) -> RelayArgs {
        Cli::try_parse_from(std::iter::once("relay").chain(argv.iter().copied()))
            .map(|c| c.args)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn temp(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("adcp-relay-args-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap_or_default();
        path
    }

    #[test]
    fn flags_beat_the_file_which_beats_the_defaults() {
        let file = temp(
            "relay.toml",
            "store = \"postgres://db/x\"\nconcurrency = 8\nper_destination = 2\nsigning_keys = [\"t2=/k2\"]\n",
        );
        let args = parse(&[
            "--config",
            file.to_str().unwrap_or_default(),
            "--concurrency",
            "16",
            "--key",
            "/k1",
        ]);
        let s = resolve(&args, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.store, "postgres://db/x");
        assert_eq!((s.concurrency, s.per_destination), (16, 2));
        assert_eq!(
            s.keys,
            vec![
                ("default".to_owned(), PathBuf::from("/k1")),
                ("t2".to_owned(), PathBuf::from("/k2"))
            ]
        );
        assert_eq!(s.horizon, Duration::from_secs(86_400));
        assert_eq!(
            (s.retry_base, s.retry_max),
            (Duration::from_secs(1), Duration::from_secs(600))
        );
        assert_eq!(s.listen, SocketAddr::from(([127, 0, 0, 1], 8791)));
    }

    #[test]
    fn bad_settings_are_named() {
        let unknown = temp("unknown.toml", "stor = \"sqlite:x\"\n");
        let err = resolve(&parse(&["--config", unknown.to_str().unwrap_or_default()]), None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("stor"), "{err}");
        for (argv, needle) in [
            (vec!["--horizon-seconds", "60"], "--horizon-seconds"),
            (vec!["--retention-days", "7"], "--retention-days"),
            (vec!["--retry-base-seconds", "0"], "--retry-base-seconds"),
            (
                vec!["--retry-base-seconds", "30", "--retry-max-seconds", "10"],
                "--retry-max-seconds",
            ),
            (vec!["--retry-max-seconds", "90000"], "--retry-max-seconds"),
            (vec!["--signing-key", "nofile"], "--signing-key"),
            (vec!["--encryption-key", "k1"], "--encryption-key"),
            (vec!["--table-prefix", "Bad-Prefix"], "--table-prefix"),
        ] {
            let err = resolve(&parse(&argv), None)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{argv:?}: {err}");
        }
        let err = resolve(&parse(&[]), Some("short".to_owned()))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("16 characters"), "{err}");
    }

    #[test]
    fn off_loopback_needs_a_token() {
        let s = resolve(&parse(&["--listen", "0.0.0.0:8791"]), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(super::super::check(&s).is_err());
        let s = resolve(
            &parse(&["--listen", "0.0.0.0:8791"]),
            Some("a-long-enough-api-token".to_owned()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(super::super::check(&s).is_ok());
    }
}
