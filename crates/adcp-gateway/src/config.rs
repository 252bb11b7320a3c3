//! Gateway configuration: flags, environment variables (`ADCP_GATEWAY_*`)
//! and an optional TOML file, in that order of precedence.
//!
//! Secrets come only from files or the environment: the HMAC secret from
//! `--hmac-secret-file` or `ADCP_GATEWAY_HMAC_SECRET`; a store URL with a
//! password is best given by `ADCP_GATEWAY_STORE`. Neither is ever logged
//! (a store URL is printed without its credentials).

use clap::Args;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8790";
/// Default store: an SQLite file in the working directory.
pub const DEFAULT_STORE: &str = "sqlite:adcp-gateway.sqlite";
/// Default bound on one store operation, in seconds.
pub const DEFAULT_STORE_TIMEOUT_SECS: u64 = 5;
/// Default claim lease, in seconds.
pub const DEFAULT_CLAIM_LEASE_SECS: u64 = 60;
/// Default dedup window, in seconds: the spec's 24 h floor.
pub const DEFAULT_DEDUP_WINDOW_SECS: u64 = 86_400;
/// Longest dedup window: the spec's ceiling for a seller's
/// `delivery_retry_horizon_seconds` (7 days).
pub const MAX_DEDUP_WINDOW_SECS: u64 = 7 * 86_400;
/// The environment variable holding the HMAC secret itself.
pub const HMAC_SECRET_ENV: &str = "ADCP_GATEWAY_HMAC_SECRET";

/// Arguments of `adcp-sig gateway`.
#[derive(Debug, Clone, Default, Args)]
pub struct GatewayArgs {
    /// TOML file with the same settings (keys as the long flags, with `_`:
    /// `listen`, `upstream`, `jwks`, `jwks_agent`, `agents`, `store`, …).
    #[arg(long, value_name = "FILE", env = "ADCP_GATEWAY_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8790].
    #[arg(long, value_name = "ADDR", env = "ADCP_GATEWAY_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Where verified, first-seen events are posted.
    #[arg(long, value_name = "URL", env = "ADCP_GATEWAY_UPSTREAM")]
    pub upstream: Option<url::Url>,
    /// The seller's public JWKS (a file), instead of discovery.
    #[arg(long, value_name = "FILE", env = "ADCP_GATEWAY_JWKS")]
    pub jwks: Option<PathBuf>,
    /// The agent URL the `--jwks` keys belong to (the verified sender)
    /// [default: jwks-file].
    #[arg(long, value_name = "URL", env = "ADCP_GATEWAY_JWKS_AGENT")]
    pub jwks_agent: Option<String>,
    /// A seller's agent URL whose keys are discovered over HTTPS
    /// (brand.json → agents[] → jwks_uri). Repeatable; comma-separated in
    /// the environment.
    #[arg(
        long = "agent",
        value_name = "SELLER_URL",
        env = "ADCP_GATEWAY_AGENTS",
        value_delimiter = ','
    )]
    pub agents: Vec<String>,
    /// A seller with static keys, `SELLER_URL=JWKS_FILE`: the agent URL
    /// webhooks signed with these keys are attributed to, and its public
    /// JWKS. Repeatable (comma-separated in the environment); combines
    /// with `--agent`. Sellers may share a `kid`: each webhook is
    /// attributed to the one seller whose key verifies it.
    #[arg(
        long = "seller",
        value_name = "SELLER_URL=JWKS_FILE",
        env = "ADCP_GATEWAY_SELLERS",
        value_delimiter = ','
    )]
    pub sellers: Vec<String>,
    /// A discovered seller's revocation list, `SELLER_URL=LIST_URL`: the
    /// seller is one of the `--agent` URLs (byte for byte), the list an
    /// `https` URL serving the JWS-signed list (`revoked_kids`,
    /// `next_update`). Repeatable, one per seller; comma-separated in the
    /// environment. Without one, that seller's keys are never checked
    /// for revocation.
    #[arg(
        long = "revocation-list",
        value_name = "SELLER_URL=LIST_URL",
        env = "ADCP_GATEWAY_REVOCATION_LISTS",
        value_delimiter = ','
    )]
    pub revocation_lists: Vec<String>,
    /// A discovered seller's pinned `jwks_uri`, `SELLER_URL=JWKS_URL`: the
    /// seller is one of the `--agent` URLs (byte for byte), the JWKS URL
    /// the `https` `jwks_uri` learned at onboarding. A brand.json that
    /// resolves to another `jwks_uri` is refused (`jwks_untrusted`) and
    /// alarmed. Repeatable, one per seller; comma-separated in the
    /// environment.
    #[arg(
        long = "pin-jwks-uri",
        value_name = "SELLER_URL=JWKS_URL",
        env = "ADCP_GATEWAY_JWKS_URI_PINS",
        value_delimiter = ','
    )]
    pub jwks_uri_pins: Vec<String>,
    /// For sellers without `--pin-jwks-uri`: adopt a brand.json whose
    /// `jwks_uri` differs from the one first learned (still alarmed)
    /// instead of refusing it until an operator restarts the gateway.
    #[arg(long, env = "ADCP_GATEWAY_ADOPT_JWKS_URI_CHANGES")]
    pub adopt_jwks_uri_changes: bool,
    /// The dedup store: `sqlite:PATH`, `redis://…`, `redis+cluster://…`,
    /// `postgres://…`, or `memory:` (benchmarks only: forgets everything on
    /// restart, not conformant) [default: sqlite:adcp-gateway.sqlite].
    #[arg(long, value_name = "URL", env = "ADCP_GATEWAY_STORE")]
    pub store: Option<String>,
    /// The Redis key prefix or PostgreSQL schema; every gateway of one
    /// fleet uses the same [default: adcp].
    #[arg(long, value_name = "NAME", env = "ADCP_GATEWAY_STORE_NAMESPACE")]
    pub store_namespace: Option<String>,
    /// The URL sellers were given, when a proxy or TLS terminator sits in
    /// front: its scheme and authority are the signed target's.
    #[arg(long, value_name = "URL", env = "ADCP_GATEWAY_PUBLIC_URL")]
    pub public_url: Option<url::Url>,
    /// With `--public-url`: another authority (`host` or `host:port`) a
    /// request may arrive for, besides the public URL's. Repeatable
    /// (comma-separated in the environment). The received `Host` /
    /// `:authority` must be one of them; it is what the signature's
    /// `@authority` is checked against.
    #[arg(
        long = "accept-host",
        value_name = "HOST",
        env = "ADCP_GATEWAY_ACCEPT_HOSTS",
        value_delimiter = ','
    )]
    pub accept_hosts: Vec<String>,
    /// The buyer's subscriber registrations: a JSON array (members `url`,
    /// `seller_agent_url`, `subscriber_id`, `account_id` or
    /// `"scope": "agent"`, `delivery_auth`, `event_types`, `active`, and
    /// `credential_file` for legacy modes). The gateway answers their
    /// activation challenges and holds notifications to them.
    #[arg(long, value_name = "FILE", env = "ADCP_GATEWAY_SUBSCRIPTIONS")]
    pub subscriptions: Option<PathBuf>,
    /// A legacy HMAC-SHA256 registration: the file holding the shared
    /// secret (or set ADCP_GATEWAY_HMAC_SECRET).
    #[arg(long, value_name = "FILE", env = "ADCP_GATEWAY_HMAC_SECRET_FILE")]
    pub hmac_secret_file: Option<PathBuf>,
    /// The sender identity of the HMAC registration [default: the first
    /// --agent, else --jwks-agent].
    #[arg(long, value_name = "URL", env = "ADCP_GATEWAY_HMAC_SENDER")]
    pub hmac_sender: Option<String>,
    /// Seconds to wait for the upstream [default: 10].
    #[arg(long, value_name = "SECS", env = "ADCP_GATEWAY_UPSTREAM_TIMEOUT")]
    pub upstream_timeout: Option<u64>,
    /// Largest webhook body accepted, in bytes [default: 1048576].
    #[arg(long, value_name = "BYTES", env = "ADCP_GATEWAY_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,
    /// Seconds one store operation may take (connecting included) before
    /// the webhook is answered 503 [default: 5].
    #[arg(long, value_name = "SECS", env = "ADCP_GATEWAY_STORE_TIMEOUT")]
    pub store_timeout: Option<u64>,
    /// Seconds a claimed event stays exclusive to the gateway forwarding
    /// it; longer than --upstream-timeout [default: 60].
    #[arg(long, value_name = "SECS", env = "ADCP_GATEWAY_CLAIM_LEASE")]
    pub claim_lease: Option<u64>,
    /// Seconds an event's dedup record is kept: at least 24 h, and at least
    /// the largest `delivery_retry_horizon_seconds` your sellers advertise
    /// (at most 7 days) [default: 86400].
    #[arg(long, value_name = "SECS", env = "ADCP_GATEWAY_DEDUP_WINDOW")]
    pub dedup_window: Option<u64>,
    /// Seconds a client may take to send a request's headers; an idle
    /// keep-alive connection is closed after as long [default: 10].
    #[arg(long, value_name = "SECS", env = "ADCP_GATEWAY_HEADER_TIMEOUT")]
    pub header_timeout: Option<u64>,
    /// Seconds a client may take to send a request's body; then 408
    /// [default: 30].
    #[arg(long, value_name = "SECS", env = "ADCP_GATEWAY_BODY_TIMEOUT")]
    pub body_timeout: Option<u64>,
    /// Most webhook requests handled at once; beyond it 503 with
    /// Retry-After: 1 [default: 512].
    #[arg(long, value_name = "N", env = "ADCP_GATEWAY_MAX_CONCURRENCY")]
    pub max_concurrency: Option<usize>,
    /// No per-request line on stderr.
    #[arg(long, env = "ADCP_GATEWAY_QUIET")]
    pub quiet: bool,
    /// **Tests only**: trust this DER-encoded CA certificate instead of the
    /// Mozilla roots for key discovery.
    #[arg(long, value_name = "FILE", hide = true)]
    pub dangerously_trust_ca_for_tests: Option<PathBuf>,
    /// **Tests only**: resolve HOST to IP (repeatable) for key discovery.
    #[arg(long, value_name = "HOST=IP", hide = true)]
    pub dangerously_resolve_for_tests: Vec<String>,
    /// **Tests only**: let key discovery reach loopback addresses.
    #[arg(long, hide = true)]
    pub dangerously_allow_loopback_for_tests: bool,
    /// **Tests only**: accept revocation lists that are not JWS-signed.
    /// The spec requires the list to be signed by a key of the seller's
    /// JWKS (an unsigned list lets whoever controls its CDN or DNS
    /// un-revoke a key), so there is no production switch for this.
    #[arg(long, hide = true)]
    pub dangerously_allow_unsigned_revocation_list_for_tests: bool,
}

/// Test-only overrides of key discovery's network settings (hidden flags,
/// never from the environment or the TOML file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestNetwork {
    /// A DER CA certificate to trust instead of the Mozilla roots.
    pub trust_ca: Option<PathBuf>,
    /// `HOST=IP` pairs replacing DNS.
    pub resolve: Vec<String>,
    /// Loopback addresses allowed.
    pub allow_loopback: bool,
}

impl TestNetwork {
    /// The discovery fetch configuration: the defaults (Mozilla roots,
    /// system DNS, full SSRF policy) unless an override is set.
    ///
    /// # Errors
    ///
    /// A message for an unreadable CA file or a malformed `HOST=IP`.
    pub fn fetch_config(&self) -> Result<adcp_jwks::FetchConfig, String> {
        let mut config = adcp_jwks::FetchConfig::default();
        if let Some(path) = &self.trust_ca {
            let der = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            config.roots = adcp_jwks::TrustRoots::Custom(vec![der]);
        }
        if !self.resolve.is_empty() {
            let mut dns = adcp_jwks::StaticDnsResolver::new();
            for entry in &self.resolve {
                let (host, ip) = entry
                    .split_once('=')
                    .ok_or_else(|| format!("--dangerously-resolve-for-tests {entry:?}: expected HOST=IP"))?;
                let ip: std::net::IpAddr = ip
                    .parse()
                    .map_err(|_| format!("--dangerously-resolve-for-tests {entry:?}: not an IP address"))?;
                dns = dns.with(host, [ip]);
            }
            config.resolver = std::sync::Arc::new(dns);
        }
        if self.allow_loopback {
            config.policy = adcp_jwks::SsrfPolicy::new().dangerously_allow_loopback_for_tests();
        }
        Ok(config)
    }
}

/// The TOML file: the same settings as the flags, no secrets.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `listen = "0.0.0.0:8790"`.
    pub listen: Option<SocketAddr>,
    /// `upstream = "http://127.0.0.1:8080/events"`.
    pub upstream: Option<url::Url>,
    /// `jwks = "seller-jwks.json"` (relative to the file).
    pub jwks: Option<PathBuf>,
    /// `jwks_agent = "https://seller.example/mcp"`.
    pub jwks_agent: Option<String>,
    /// `agents = ["https://seller.example/mcp"]`.
    #[serde(default)]
    pub agents: Vec<String>,
    /// A table from seller agent URL to its JWKS file (relative to the
    /// file): `[sellers]` then `"https://seller.example/mcp" = "seller-jwks.json"`.
    #[serde(default)]
    pub sellers: BTreeMap<String, PathBuf>,
    /// A table from seller agent URL to revocation list URL:
    /// `[revocation_lists]` then
    /// `"https://seller.example/mcp" = "https://seller.example/.well-known/revocations.json"`.
    #[serde(default)]
    pub revocation_lists: BTreeMap<String, String>,
    /// A table from seller agent URL to pinned `jwks_uri`:
    /// `[jwks_uri_pins]` then
    /// `"https://seller.example/mcp" = "https://keys.seller.example/jwks.json"`.
    #[serde(default)]
    pub jwks_uri_pins: BTreeMap<String, String>,
    /// `adopt_jwks_uri_changes = true`.
    pub adopt_jwks_uri_changes: Option<bool>,
    /// `store = "redis://cache:6379"`.
    pub store: Option<String>,
    /// `store_namespace = "adcp"`.
    pub store_namespace: Option<String>,
    /// `public_url = "https://buyer.example"`.
    pub public_url: Option<url::Url>,
    /// `accept_hosts = ["hooks.buyer.example"]`.
    #[serde(default)]
    pub accept_hosts: Vec<String>,
    /// `subscriptions = "subscriptions.json"` (relative to the file).
    pub subscriptions: Option<PathBuf>,
    /// `hmac_secret_file = "/run/secrets/adcp-hmac"` (relative to the file).
    pub hmac_secret_file: Option<PathBuf>,
    /// `hmac_sender = "https://seller.example/mcp"`.
    pub hmac_sender: Option<String>,
    /// `upstream_timeout = 10` (seconds).
    pub upstream_timeout: Option<u64>,
    /// `max_body_bytes = 1048576`.
    pub max_body_bytes: Option<usize>,
    /// `store_timeout = 5` (seconds).
    pub store_timeout: Option<u64>,
    /// `claim_lease = 60` (seconds).
    pub claim_lease: Option<u64>,
    /// `dedup_window = 86400` (seconds).
    pub dedup_window: Option<u64>,
    /// `header_timeout = 10` (seconds).
    pub header_timeout: Option<u64>,
    /// `body_timeout = 30` (seconds).
    pub body_timeout: Option<u64>,
    /// `max_concurrency = 512`.
    pub max_concurrency: Option<usize>,
}

/// Where the seller keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// A JWKS file and the agent URL its keys belong to.
    Jwks {
        /// The file.
        path: PathBuf,
        /// The agent URL.
        agent: String,
    },
    /// Discovery over HTTPS for each agent URL.
    Agents(Vec<String>),
    /// No RFC 9421 keys (a legacy HMAC registration only).
    None,
}

/// The settings, merged and checked.
#[derive(Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Upstream URL.
    pub upstream: url::Url,
    /// Seller keys.
    pub keys: KeySource,
    /// Sellers with static keys (`--seller`), agent URL → JWKS file;
    /// alongside [`KeySource::Agents`] or [`KeySource::None`].
    pub sellers: BTreeMap<String, PathBuf>,
    /// Revocation list URL of each discovered seller that has one, keyed
    /// by agent URL (each one of [`KeySource::Agents`]).
    pub revocation_lists: BTreeMap<String, url::Url>,
    /// Accept unsigned revocation lists (the hidden test-only flag; never
    /// from the environment or the TOML file).
    pub allow_unsigned_revocation_lists: bool,
    /// Pinned `jwks_uri` of each discovered seller that has one, keyed by
    /// agent URL (each one of [`KeySource::Agents`]).
    pub jwks_uri_pins: BTreeMap<String, url::Url>,
    /// Adopt (still alarming) a `jwks_uri` that differs from the one first
    /// learned, for sellers without a pin.
    pub adopt_jwks_uri_changes: bool,
    /// Store URL (may hold credentials: print with [`redact`]).
    pub store: String,
    /// Redis key prefix / PostgreSQL schema.
    pub store_namespace: String,
    /// Other authorities requests may arrive for (`--accept-host`).
    pub accept_hosts: Vec<String>,
    /// The registrations file (`--subscriptions`).
    pub subscriptions: Option<PathBuf>,
    /// Public URL of the endpoint.
    pub public_url: Option<url::Url>,
    /// The HMAC secret, when the registration is legacy HMAC.
    pub hmac_secret: Option<Vec<u8>>,
    /// The sender identity of the HMAC registration.
    pub hmac_sender: Option<String>,
    /// Upstream timeout.
    pub upstream_timeout: Duration,
    /// Body limit.
    pub max_body_bytes: usize,
    /// Bound on one store operation.
    pub store_timeout: Duration,
    /// How long a claim is exclusive (seconds).
    pub claim_lease: Duration,
    /// How long an event's dedup record is kept.
    pub dedup_window: Duration,
    /// Bound on receiving a request's headers.
    pub header_timeout: Duration,
    /// Bound on receiving a request's body.
    pub body_timeout: Duration,
    /// Most webhook requests handled at once.
    pub max_concurrency: usize,
    /// One stderr line per webhook (off with `--quiet`).
    pub access_log: bool,
    /// Test-only discovery overrides.
    pub test_network: TestNetwork,
}

impl std::fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayConfig")
            .field("listen", &self.listen)
            .field("upstream", &self.upstream.as_str())
            .field("keys", &self.keys)
            .field("sellers", &self.sellers)
            .field(
                "revocation_lists",
                &self
                    .revocation_lists
                    .iter()
                    .map(|(agent, url)| (agent.as_str(), url.as_str()))
                    .collect::<Vec<_>>(),
            )
            .field("allow_unsigned_revocation_lists", &self.allow_unsigned_revocation_lists)
            .field(
                "jwks_uri_pins",
                &self
                    .jwks_uri_pins
                    .iter()
                    .map(|(agent, url)| (agent.as_str(), url.as_str()))
                    .collect::<Vec<_>>(),
            )
            .field("adopt_jwks_uri_changes", &self.adopt_jwks_uri_changes)
            .field("store", &redact(&self.store))
            .field("store_namespace", &self.store_namespace)
            .field("public_url", &self.public_url.as_ref().map(url::Url::as_str))
            .field("accept_hosts", &self.accept_hosts)
            .field("subscriptions", &self.subscriptions)
            .field("hmac_secret", &self.hmac_secret.as_ref().map(|_| "<redacted>"))
            .field("hmac_sender", &self.hmac_sender)
            .field("upstream_timeout", &self.upstream_timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("store_timeout", &self.store_timeout)
            .field("claim_lease", &self.claim_lease)
            .field("dedup_window", &self.dedup_window)
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_concurrency", &self.max_concurrency)
            .field("access_log", &self.access_log)
            .field("test_network", &self.test_network)
            .finish()
    }
}

impl GatewayConfig {
    /// Merges flags and environment (`args`, as clap parsed them) over the
    /// TOML file named by `--config`, over the defaults. `env_secret` is
    /// the value of `ADCP_GATEWAY_HMAC_SECRET`, if set.
    ///
    /// # Errors
    ///
    /// A message naming the setting that is missing or invalid.
    pub fn resolve(args: &GatewayArgs, env_secret: Option<Vec<u8>>) -> Result<Self, String> {
        let (file, base) = match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("--config {}: {e}", path.display()))?;
                let file: FileConfig =
                    toml::from_str(&text).map_err(|e| format!("--config {}: {e}", path.display()))?;
                (file, path.parent().map(Path::to_path_buf))
            }
            None => (FileConfig::default(), None),
        };
        let relative = |p: PathBuf| match &base {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p,
        };
        let listen = match args.listen.or(file.listen) {
            Some(addr) => addr,
            None => DEFAULT_LISTEN.parse().map_err(|e| format!("listen: {e}"))?,
        };
        let upstream = args
            .upstream
            .clone()
            .or(file.upstream)
            .ok_or("--upstream URL is required (or ADCP_GATEWAY_UPSTREAM, or `upstream` in --config)")?;
        let jwks = args.jwks.clone().or_else(|| file.jwks.map(&relative));
        let jwks_agent = args
            .jwks_agent
            .clone()
            .or(file.jwks_agent)
            .unwrap_or_else(|| "jwks-file".to_owned());
        let agents = if args.agents.is_empty() {
            file.agents
        } else {
            args.agents.clone()
        };
        let keys = match (jwks, agents.is_empty()) {
            (Some(_), false) => return Err("give --jwks FILE or --agent URL, not both".into()),
            (Some(path), true) => KeySource::Jwks {
                path,
                agent: jwks_agent,
            },
            (None, false) => KeySource::Agents(agents),
            (None, true) => KeySource::None,
        };
        let sellers: BTreeMap<String, PathBuf> = if args.sellers.is_empty() {
            file.sellers
                .into_iter()
                .map(|(seller, path)| (seller, relative(path)))
                .collect()
        } else {
            let mut sellers = BTreeMap::new();
            for entry in &args.sellers {
                let (seller, path) = match entry.trim().split_once('=') {
                    Some((seller, path)) if !seller.is_empty() && !path.is_empty() => (seller, path),
                    _ => return Err(format!("--seller {entry:?}: expected SELLER_URL=JWKS_FILE")),
                };
                if sellers.insert(seller.to_owned(), PathBuf::from(path)).is_some() {
                    return Err(format!("--seller {seller}: given twice"));
                }
            }
            sellers
        };
        if !sellers.is_empty() {
            if matches!(keys, KeySource::Jwks { .. }) {
                return Err("give --jwks FILE or --seller SELLER_URL=JWKS_FILE, not both".into());
            }
            if let KeySource::Agents(agents) = &keys {
                if let Some(both) = agents.iter().find(|agent| sellers.contains_key(*agent)) {
                    return Err(format!(
                        "{both}: both --agent and --seller; give one key source per seller"
                    ));
                }
            }
        }
        let revocation_lists = if args.revocation_lists.is_empty() {
            file.revocation_lists.into_iter().collect()
        } else {
            args.revocation_lists
                .iter()
                .map(|entry| split_seller_entry(REVOCATION_LIST, entry))
                .collect::<Result<Vec<_>, _>>()?
        };
        let revocation_lists = check_seller_urls(
            REVOCATION_LIST,
            revocation_lists,
            &keys,
            args.dangerously_allow_loopback_for_tests,
        )?;
        let jwks_uri_pins = if args.jwks_uri_pins.is_empty() {
            file.jwks_uri_pins.into_iter().collect()
        } else {
            args.jwks_uri_pins
                .iter()
                .map(|entry| split_seller_entry(JWKS_URI_PIN, entry))
                .collect::<Result<Vec<_>, _>>()?
        };
        let jwks_uri_pins = check_seller_urls(
            JWKS_URI_PIN,
            jwks_uri_pins,
            &keys,
            args.dangerously_allow_loopback_for_tests,
        )?;
        let adopt_jwks_uri_changes = args.adopt_jwks_uri_changes || file.adopt_jwks_uri_changes.unwrap_or(false);
        let hmac_file = args
            .hmac_secret_file
            .clone()
            .or_else(|| file.hmac_secret_file.map(&relative));
        let hmac_secret = match (hmac_file, env_secret) {
            (Some(path), _) => {
                let bytes = std::fs::read(&path).map_err(|e| format!("--hmac-secret-file {}: {e}", path.display()))?;
                Some(trim_newline(bytes))
            }
            (None, secret) => secret,
        };
        if hmac_secret.as_ref().is_some_and(Vec::is_empty) {
            return Err("the HMAC secret is empty".into());
        }
        if keys == KeySource::None && sellers.is_empty() && hmac_secret.is_none() {
            return Err("give --jwks FILE or --agent SELLER_URL (or an HMAC secret for a legacy registration)".into());
        }
        let hmac_sender = args.hmac_sender.clone().or(file.hmac_sender).or_else(|| match &keys {
            KeySource::Agents(agents) => agents.first().cloned(),
            KeySource::Jwks { agent, .. } => Some(agent.clone()),
            KeySource::None => sellers.keys().next().cloned(),
        });
        if hmac_secret.is_some() && hmac_sender.is_none() {
            return Err("an HMAC registration needs --hmac-sender URL (the seller's agent URL)".into());
        }
        let store = args
            .store
            .clone()
            .or(file.store)
            .unwrap_or_else(|| DEFAULT_STORE.to_owned());
        let seconds = |flag: &str, value: Option<u64>, default: u64| match value.unwrap_or(default) {
            0 => Err(format!("--{flag} must be at least 1 second")),
            secs => Ok(Duration::from_secs(secs)),
        };
        let upstream_timeout = seconds("upstream-timeout", args.upstream_timeout.or(file.upstream_timeout), 10)?;
        let claim_lease = seconds(
            "claim-lease",
            args.claim_lease.or(file.claim_lease),
            DEFAULT_CLAIM_LEASE_SECS,
        )?;
        if claim_lease <= upstream_timeout {
            // A lease ending while the upstream may still be applying the
            // event lets another gateway (or a retry) forward it again.
            return Err(format!(
                "--claim-lease ({} s) must be longer than --upstream-timeout ({} s)",
                claim_lease.as_secs(),
                upstream_timeout.as_secs()
            ));
        }
        let dedup_window = seconds(
            "dedup-window",
            args.dedup_window.or(file.dedup_window),
            DEFAULT_DEDUP_WINDOW_SECS,
        )?;
        if !(DEFAULT_DEDUP_WINDOW_SECS..=MAX_DEDUP_WINDOW_SECS).contains(&dedup_window.as_secs()) {
            // Below 24 h is never conformant; above 7 days no seller retries.
            return Err(format!(
                "--dedup-window must be between {DEFAULT_DEDUP_WINDOW_SECS} s (24 h) and {MAX_DEDUP_WINDOW_SECS} s (7 days), not {} s",
                dedup_window.as_secs()
            ));
        }
        let max_concurrency = args
            .max_concurrency
            .or(file.max_concurrency)
            .unwrap_or(super::DEFAULT_MAX_CONCURRENCY);
        if max_concurrency == 0 {
            return Err("--max-concurrency must be at least 1".into());
        }
        Ok(Self {
            listen,
            upstream,
            keys,
            sellers,
            revocation_lists,
            allow_unsigned_revocation_lists: args.dangerously_allow_unsigned_revocation_list_for_tests,
            jwks_uri_pins,
            adopt_jwks_uri_changes,
            store,
            store_namespace: args
                .store_namespace
                .clone()
                .or(file.store_namespace)
                .unwrap_or_else(|| "adcp".to_owned()),
            subscriptions: args.subscriptions.clone().or_else(|| file.subscriptions.map(&relative)),
            accept_hosts: if args.accept_hosts.is_empty() {
                file.accept_hosts
            } else {
                args.accept_hosts.clone()
            },
            public_url: args.public_url.clone().or(file.public_url),
            hmac_secret,
            hmac_sender,
            upstream_timeout,
            max_body_bytes: args
                .max_body_bytes
                .or(file.max_body_bytes)
                .unwrap_or(adcp_webhook::receiver::DEFAULT_MAX_BODY_BYTES),
            store_timeout: seconds(
                "store-timeout",
                args.store_timeout.or(file.store_timeout),
                DEFAULT_STORE_TIMEOUT_SECS,
            )?,
            claim_lease,
            dedup_window,
            header_timeout: seconds(
                "header-timeout",
                args.header_timeout.or(file.header_timeout),
                super::DEFAULT_HEADER_TIMEOUT.as_secs(),
            )?,
            body_timeout: seconds(
                "body-timeout",
                args.body_timeout.or(file.body_timeout),
                super::DEFAULT_BODY_TIMEOUT.as_secs(),
            )?,
            max_concurrency,
            access_log: !args.quiet,
            test_network: TestNetwork {
                trust_ca: args.dangerously_trust_ca_for_tests.clone(),
                resolve: args.dangerously_resolve_for_tests.clone(),
                allow_loopback: args.dangerously_allow_loopback_for_tests,
            },
        })
    }
}

/// A repeatable `SELLER_URL=URL` flag: its name, the metavariable of its
/// URL, and what the URL is (for "given more than one ...").
struct SellerUrlFlag {
    flag: &'static str,
    value: &'static str,
    what: &'static str,
}

const REVOCATION_LIST: SellerUrlFlag = SellerUrlFlag {
    flag: "--revocation-list",
    value: "LIST_URL",
    what: "list",
};

const JWKS_URI_PIN: SellerUrlFlag = SellerUrlFlag {
    flag: "--pin-jwks-uri",
    value: "JWKS_URL",
    what: "jwks_uri",
};

/// `SELLER_URL=LIST_URL` (or `=JWKS_URL`) split at the first `=` (an agent
/// URL has no query string; the other URL may).
fn split_seller_entry(kind: SellerUrlFlag, entry: &str) -> Result<(String, String), String> {
    match entry.trim().split_once('=') {
        Some((seller, url)) if !seller.is_empty() && !url.is_empty() => Ok((seller.to_owned(), url.to_owned())),
        _ => Err(format!("{} {entry:?}: expected SELLER_URL={}", kind.flag, kind.value)),
    }
}

/// Start-up checks of the revocation lists and `jwks_uri` pins: discovery
/// mode only, each seller one of the `--agent` URLs and given once, each
/// URL acceptable to key discovery's SSRF guard (`https`, no userinfo, no
/// reserved IP literal; loopback only with the test-only flag).
fn check_seller_urls(
    kind: SellerUrlFlag,
    entries: Vec<(String, String)>,
    keys: &KeySource,
    allow_loopback: bool,
) -> Result<BTreeMap<String, url::Url>, String> {
    let flag = kind.flag;
    let mut lists = BTreeMap::new();
    if entries.is_empty() {
        return Ok(lists);
    }
    let KeySource::Agents(agents) = keys else {
        return Err(format!(
            "{flag} applies to sellers discovered with --agent, not to --jwks or HMAC-only"
        ));
    };
    let policy = if allow_loopback {
        adcp_jwks::SsrfPolicy::new().dangerously_allow_loopback_for_tests()
    } else {
        adcp_jwks::SsrfPolicy::new()
    };
    for (seller, list) in entries {
        if !agents.contains(&seller) {
            return Err(format!(
                "{flag} {seller}={list}: {seller:?} is not one of the --agent URLs (compared byte for byte)"
            ));
        }
        let url = policy
            .check_url(&list)
            .map_err(|e| format!("{flag} {seller}={list}: {e}"))?;
        if lists.insert(seller.clone(), url).is_some() {
            return Err(format!("{flag}: {seller:?} is given more than one {}", kind.what));
        }
    }
    Ok(lists)
}

/// A secret file's content without one trailing newline (`echo` adds it).
pub(crate) fn trim_newline(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    }
    bytes
}

/// A store URL safe to print: user information replaced by `***`.
#[must_use]
pub fn redact(store: &str) -> String {
    let Some((scheme, rest)) = store.split_once("://") else {
        return store.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rfind('@') {
        Some(at) => format!("{scheme}://***@{}{path}", &authority[at + 1..]),
        None => store.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_credentials_only() {
        assert_eq!(
            redact("postgres://adcp:hunter2@db:5432/adcp"),
            "postgres://***@db:5432/adcp"
        );
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redact("sqlite:/var/lib/dedup.sqlite"), "sqlite:/var/lib/dedup.sqlite");
    }

    #[test]
    fn resource_limits_have_defaults_and_are_checked() {
        let base = GatewayArgs {
            upstream: url::Url::parse("http://127.0.0.1:2/b").ok(),
            hmac_sender: Some("https://seller.example/mcp".into()),
            ..GatewayArgs::default()
        };
        let secret = || Some(b"s3cret".to_vec());
        let config = GatewayConfig::resolve(&base, secret()).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(config.store_timeout, Duration::from_secs(DEFAULT_STORE_TIMEOUT_SECS));
        assert_eq!(config.claim_lease, Duration::from_secs(DEFAULT_CLAIM_LEASE_SECS));
        assert_eq!(config.dedup_window, Duration::from_secs(86_400));
        assert_eq!(config.header_timeout, super::super::DEFAULT_HEADER_TIMEOUT);
        assert_eq!(config.body_timeout, super::super::DEFAULT_BODY_TIMEOUT);
        assert_eq!(config.max_concurrency, super::super::DEFAULT_MAX_CONCURRENCY);
        let set = GatewayArgs {
            store_timeout: Some(1),
            claim_lease: Some(3),
            upstream_timeout: Some(2),
            header_timeout: Some(4),
            body_timeout: Some(5),
            max_concurrency: Some(6),
            dedup_window: Some(3 * 86_400),
            ..base.clone()
        };
        let config = GatewayConfig::resolve(&set, secret()).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(config.store_timeout, Duration::from_secs(1));
        assert_eq!(config.claim_lease, Duration::from_secs(3));
        assert_eq!(config.header_timeout, Duration::from_secs(4));
        assert_eq!(config.body_timeout, Duration::from_secs(5));
        assert_eq!(config.max_concurrency, 6);
        assert_eq!(config.dedup_window, Duration::from_secs(3 * 86_400));
        for bad in [
            GatewayArgs {
                claim_lease: Some(10),
                ..base.clone()
            },
            GatewayArgs {
                store_timeout: Some(0),
                ..base.clone()
            },
            GatewayArgs {
                header_timeout: Some(0),
                ..base.clone()
            },
            GatewayArgs {
                max_concurrency: Some(0),
                ..base.clone()
            },
            GatewayArgs {
                dedup_window: Some(86_399),
                ..base.clone()
            },
            GatewayArgs {
                dedup_window: Some(7 * 86_400 + 1),
                ..base.clone()
            },
        ] {
            assert!(GatewayConfig::resolve(&bad, secret()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn flags_win_over_the_file_and_keys_are_required() {
        let dir = std::env::temp_dir().join(format!("adcp-gw-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let file = dir.join("gateway.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\nupstream = \"http://127.0.0.1:1/a\"\njwks = \"k.json\"\nstore = \"sqlite:x.sqlite\"\n",
        )
        .unwrap_or_default();
        let args = GatewayArgs {
            config: Some(file.clone()),
            upstream: url::Url::parse("http://127.0.0.1:2/b").ok(),
            ..GatewayArgs::default()
        };
        let config = GatewayConfig::resolve(&args, None);
        let _ = std::fs::remove_dir_all(&dir);
        let config = config.unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(config.listen.port(), 9000);
        assert_eq!(config.upstream.as_str(), "http://127.0.0.1:2/b");
        assert_eq!(
            config.keys,
            KeySource::Jwks {
                path: dir.join("k.json"),
                agent: "jwks-file".into()
            }
        );
        let none = GatewayArgs {
            upstream: url::Url::parse("http://127.0.0.1:2/b").ok(),
            ..GatewayArgs::default()
        };
        assert!(GatewayConfig::resolve(&none, None).is_err());
        // The secret alone is enough for a legacy registration with a sender.
        let hmac = GatewayArgs {
            hmac_sender: Some("https://seller.example/mcp".into()),
            ..none
        };
        let config = GatewayConfig::resolve(&hmac, Some(b"s3cret".to_vec())).unwrap_or_else(|e| unreachable!("{e}"));
        assert!(!format!("{config:?}").contains("s3cret"));
    }

    #[test]
    fn revocation_lists_are_checked_at_start_up() {
        let seller = "https://seller.example/mcp";
        let list = "https://seller.example/.well-known/revocations.json";
        let base = GatewayArgs {
            upstream: url::Url::parse("http://127.0.0.1:2/b").ok(),
            agents: vec![seller.into(), "https://other.example/mcp".into()],
            ..GatewayArgs::default()
        };
        let with = |entries: &[&str]| GatewayArgs {
            revocation_lists: entries.iter().map(|e| (*e).to_owned()).collect(),
            ..base.clone()
        };
        let config = GatewayConfig::resolve(&with(&[&format!("{seller}={list}?format=jws")]), None)
            .unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            config.revocation_lists.get(seller).map(url::Url::as_str),
            Some("https://seller.example/.well-known/revocations.json?format=jws")
        );
        assert!(!config.allow_unsigned_revocation_lists);
        let none = GatewayConfig::resolve(&base, None).unwrap_or_else(|e| unreachable!("{e}"));
        assert!(none.revocation_lists.is_empty());
        for (entries, expected) in [
            (
                vec![format!("https://stranger.example/mcp={list}")],
                "not one of the --agent URLs",
            ),
            (vec![format!("{seller}/={list}")], "not one of the --agent URLs"),
            (vec![format!("{seller}=http://seller.example/r.json")], "not https"),
            (
                vec![format!("{seller}=https://user:pw@seller.example/r.json")],
                "--revocation-list",
            ),
            (vec![format!("{seller}=https://127.0.0.1/r.json")], "--revocation-list"),
            (vec![format!("{seller}=https://10.0.0.1/r.json")], "--revocation-list"),
            (vec![seller.to_owned()], "expected SELLER_URL=LIST_URL"),
            (
                vec![format!("{seller}={list}"), format!("{seller}={list}")],
                "more than one list",
            ),
        ] {
            let args = GatewayArgs {
                revocation_lists: entries.clone(),
                ..base.clone()
            };
            match GatewayConfig::resolve(&args, None) {
                Ok(_) => unreachable!("{entries:?} accepted"),
                Err(e) => assert!(e.contains(expected), "{entries:?}: {e}"),
            }
        }
        // Loopback only with the test-only flag.
        let loopback = GatewayArgs {
            dangerously_allow_loopback_for_tests: true,
            ..with(&[&format!("{seller}=https://127.0.0.1:8443/r.json")])
        };
        assert!(GatewayConfig::resolve(&loopback, None).is_ok());
        // Not with a static JWKS.
        let jwks = GatewayArgs {
            agents: Vec::new(),
            jwks: Some(PathBuf::from("k.json")),
            ..with(&[&format!("{seller}={list}")])
        };
        let e = GatewayConfig::resolve(&jwks, None).err().unwrap_or_default();
        assert!(e.contains("--agent"), "{e}");
    }

    #[test]
    fn jwks_uri_pins_and_the_adopt_switch_are_checked_at_start_up() {
        let seller = "https://seller.example/mcp";
        let jwks = "https://keys.seller.example/jwks.json";
        let base = GatewayArgs {
            upstream: url::Url::parse("http://127.0.0.1:2/b").ok(),
            agents: vec![seller.into(), "https://other.example/mcp".into()],
            ..GatewayArgs::default()
        };
        let with = |entries: &[&str]| GatewayArgs {
            jwks_uri_pins: entries.iter().map(|e| (*e).to_owned()).collect(),
            ..base.clone()
        };
        let config =
            GatewayConfig::resolve(&with(&[&format!("{seller}={jwks}")]), None).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(config.jwks_uri_pins.get(seller).map(url::Url::as_str), Some(jwks));
        assert!(!config.adopt_jwks_uri_changes, "changes are refused by default");
        let none = GatewayConfig::resolve(&base, None).unwrap_or_else(|e| unreachable!("{e}"));
        assert!(none.jwks_uri_pins.is_empty());
        let adopt = GatewayArgs {
            adopt_jwks_uri_changes: true,
            ..base.clone()
        };
        let adopt = GatewayConfig::resolve(&adopt, None).unwrap_or_else(|e| unreachable!("{e}"));
        assert!(adopt.adopt_jwks_uri_changes);
        for (entries, expected) in [
            (
                vec![format!("https://stranger.example/mcp={jwks}")],
                "not one of the --agent URLs",
            ),
            (
                vec![format!("{seller}=http://keys.seller.example/jwks.json")],
                "not https",
            ),
            (vec![format!("{seller}=https://127.0.0.1/jwks.json")], "--pin-jwks-uri"),
            (vec![seller.to_owned()], "--pin-jwks-uri"),
            (vec![seller.to_owned()], "expected SELLER_URL=JWKS_URL"),
            (
                vec![format!("{seller}={jwks}"), format!("{seller}={jwks}")],
                "more than one jwks_uri",
            ),
        ] {
            match GatewayConfig::resolve(&with(&entries.iter().map(String::as_str).collect::<Vec<_>>()), None) {
                Ok(_) => unreachable!("{entries:?} accepted"),
                Err(e) => assert!(e.contains(expected), "{entries:?}: {e}"),
            }
        }
        // Not with a static JWKS.
        let static_jwks = GatewayArgs {
            agents: Vec::new(),
            jwks: Some(PathBuf::from("k.json")),
            ..with(&[&format!("{seller}={jwks}")])
        };
        let e = GatewayConfig::resolve(&static_jwks, None).err().unwrap_or_default();
        assert!(e.contains("--pin-jwks-uri") && e.contains("--agent"), "{e}");
        // From the TOML file: the table and the switch.
        let dir = std::env::temp_dir().join(format!("adcp-gw-jwks-pins-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let file = dir.join("gateway.toml");
        std::fs::write(
            &file,
            "upstream = \"http://127.0.0.1:1/a\"\nagents = [\"https://a.example/mcp\"]\nadopt_jwks_uri_changes = true\n\n[jwks_uri_pins]\n\"https://a.example/mcp\" = \"https://keys.a.example/jwks.json\"\n",
        )
        .unwrap_or_default();
        let from_file = GatewayConfig::resolve(
            &GatewayArgs {
                config: Some(file),
                ..GatewayArgs::default()
            },
            None,
        );
        let _ = std::fs::remove_dir_all(&dir);
        let from_file = from_file.unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            from_file
                .jwks_uri_pins
                .get("https://a.example/mcp")
                .map(url::Url::as_str),
            Some("https://keys.a.example/jwks.json")
        );
        assert!(from_file.adopt_jwks_uri_changes);
    }

    #[test]
    fn revocation_lists_from_the_toml_table_and_flags_win() {
        let dir = std::env::temp_dir().join(format!("adcp-gw-revocation-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let file = dir.join("gateway.toml");
        std::fs::write(
            &file,
            "upstream = \"http://127.0.0.1:1/a\"\nagents = [\"https://a.example/mcp\", \"https://b.example/mcp\"]\n\n[revocation_lists]\n\"https://a.example/mcp\" = \"https://a.example/revocations.json\"\n",
        )
        .unwrap_or_default();
        let args = GatewayArgs {
            config: Some(file.clone()),
            ..GatewayArgs::default()
        };
        let from_file = GatewayConfig::resolve(&args, None);
        let flags = GatewayArgs {
            revocation_lists: vec!["https://b.example/mcp=https://b.example/r.json".into()],
            ..args
        };
        let from_flags = GatewayConfig::resolve(&flags, None);
        let _ = std::fs::remove_dir_all(&dir);
        let from_file = from_file.unwrap_or_else(|e| unreachable!("{e}"));
        let lists: Vec<_> = from_file
            .revocation_lists
            .iter()
            .map(|(a, u)| (a.as_str(), u.as_str()))
            .collect();
        assert_eq!(lists, [("https://a.example/mcp", "https://a.example/revocations.json")]);
        let from_flags = from_flags.unwrap_or_else(|e| unreachable!("{e}"));
        let lists: Vec<_> = from_flags
            .revocation_lists
            .iter()
            .map(|(a, u)| (a.as_str(), u.as_str()))
            .collect();
        assert_eq!(lists, [("https://b.example/mcp", "https://b.example/r.json")]);
    }

    #[test]
    fn sellers_accept_hosts_and_subscriptions_come_from_flags_or_the_file() {
        let dir = std::env::temp_dir().join(format!("adcp-gateway-sellers-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join("gateway.toml");
        let _ = std::fs::write(
            &file,
            "upstream = \"http://127.0.0.1:1/a\"\nagents = [\"https://a.example/mcp\"]\naccept_hosts = [\"hooks.buyer.example\"]\nsubscriptions = \"subs.json\"\n\n[sellers]\n\"https://b.example/mcp\" = \"b-jwks.json\"\n",
        );
        let args = GatewayArgs {
            config: Some(file.clone()),
            ..GatewayArgs::default()
        };
        let from_file = GatewayConfig::resolve(&args, None);
        let flags = GatewayArgs {
            sellers: vec!["https://c.example/mcp=/keys/c.json".into()],
            accept_hosts: vec!["other.example:8443".into()],
            ..args.clone()
        };
        let from_flags = GatewayConfig::resolve(&flags, None);
        // One key source per seller; never with --jwks.
        let both = GatewayConfig::resolve(
            &GatewayArgs {
                sellers: vec!["https://a.example/mcp=/keys/a.json".into()],
                ..args.clone()
            },
            None,
        );
        let malformed = GatewayConfig::resolve(
            &GatewayArgs {
                sellers: vec!["https://c.example/mcp".into()],
                ..args
            },
            None,
        );
        let _ = std::fs::remove_dir_all(&dir);
        let from_file = from_file.unwrap_or_else(|e| unreachable!("{e}"));
        let sellers: Vec<_> = from_file.sellers.iter().map(|(s, p)| (s.as_str(), p.clone())).collect();
        assert_eq!(sellers, [("https://b.example/mcp", dir.join("b-jwks.json"))]);
        assert_eq!(from_file.accept_hosts, ["hooks.buyer.example"]);
        assert_eq!(from_file.subscriptions, Some(dir.join("subs.json")));
        let from_flags = from_flags.unwrap_or_else(|e| unreachable!("{e}"));
        let sellers: Vec<_> = from_flags.sellers.keys().map(String::as_str).collect();
        assert_eq!(sellers, ["https://c.example/mcp"]);
        assert_eq!(from_flags.accept_hosts, ["other.example:8443"]);
        assert!(both.is_err_and(|e| e.contains("both --agent and --seller")));
        assert!(malformed.is_err_and(|e| e.contains("SELLER_URL=JWKS_FILE")));
    }
}
