//! The gateway's settings: [`GatewayConfig`], from a TOML file, the
//! `ADCP_GATEWAY_*` environment variables and code.
//!
//! `GatewayConfig`'s serde form is the one declaration of the settings'
//! TOML keys: the TOML file is read through it, and `adcp-sig gateway`
//! lays its flags over the file's configuration through it too
//! (serializing both, replacing the keys of the flags given, and
//! deserializing the result), so no setting is mapped by hand. For that,
//! every setting also deserializes from the flags' form: a table from a
//! list of `SELLER_URL=VALUE` entries.
//!
//! Secrets come only from files or the environment: the HMAC secret from
//! `hmac_secret_file` or `ADCP_GATEWAY_HMAC_SECRET` (never a TOML key); a
//! store URL with a password is best given by `ADCP_GATEWAY_STORE`. Neither
//! is ever logged: `Debug` hides the secret, and a store URL is printed
//! without its credentials.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default listen address.
const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8790));
/// Default store: an SQLite file in the working directory.
const DEFAULT_STORE: &str = "sqlite:adcp-gateway.sqlite";
/// Default Redis key prefix / PostgreSQL schema.
const DEFAULT_STORE_NAMESPACE: &str = "adcp";
/// Default agent URL of the keys of a static JWKS.
const DEFAULT_JWKS_AGENT: &str = "jwks-file";
/// Default bound on one upstream attempt.
pub(crate) const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);
/// Default bound on one store operation.
const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default claim lease.
const DEFAULT_CLAIM_LEASE: Duration = Duration::from_secs(60);
/// Shortest dedup window, and the default: the spec's 24 h floor.
pub(crate) const MIN_DEDUP_WINDOW: Duration = Duration::from_secs(86_400);
/// Longest dedup window: the spec's ceiling for a seller's
/// `delivery_retry_horizon_seconds` (7 days).
pub(crate) const MAX_DEDUP_WINDOW: Duration = Duration::from_secs(7 * 86_400);
/// Default bound on receiving a request's headers (slowloris).
pub(crate) const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default bound on receiving a request's whole body.
pub(crate) const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default most webhook requests handled at once; more are shed with `503`.
pub(crate) const DEFAULT_MAX_CONCURRENCY: usize = 512;
/// Default interval between two purges of the store's expired rows.
pub(crate) const DEFAULT_PURGE_INTERVAL: Duration = Duration::from_secs(300);

/// The gateway's settings.
///
/// Every field has a default ([`GatewayConfig::default`]) except
/// [`upstream`](Self::upstream), which [`Gateway::from_config`] requires,
/// and the keys: a static JWKS ([`jwks`](Self::jwks)), discovered sellers
/// ([`agents`](Self::agents)), sellers with static keys
/// ([`sellers`](Self::sellers)) or an HMAC secret for a legacy
/// registration. The checks that span several settings (one key source
/// per seller, the claim lease longer than the upstream timeout, …) are
/// made by [`validate`](Self::validate), which [`Gateway::from_config`]
/// runs first.
///
/// Sources, later ones winning: [`Default`], a TOML file
/// ([`from_toml_file`](Self::from_toml_file); keys as the field names),
/// the environment ([`apply_env`](Self::apply_env); `ADCP_GATEWAY_` and
/// the field name in upper case), then whatever the program sets (the
/// `adcp-sig gateway` flags). A list or table that is set replaces the
/// one before it; it is never merged.
///
/// It serializes to its TOML keys (`toml::to_string` writes a file
/// `from_toml_str` reads back, durations in whole seconds), which is how
/// `adcp-sig gateway` lays its flags over the file. The output holds the
/// store URL as given, credentials included, so treat it as a secret; the
/// HMAC secret, [`access_log`](Self::access_log) and the
/// [`test_overrides`](Self::test_overrides) are not TOML keys and are
/// neither written nor read.
///
/// [`Gateway::from_config`]: crate::Gateway::from_config
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// What the gateway verifies (`profile = "request"`): signed webhooks
    /// (the default) or, in front of a seller's own server, signed AdCP
    /// requests. See [`GatewayProfile`].
    pub profile: GatewayProfile,
    /// Request mode: the seller's `get_adcp_capabilities` response (or
    /// just its `request_signing` object) as a JSON file
    /// (`capabilities = "capabilities.json"`, relative to the TOML file):
    /// the advertised `required_for` / `warn_for` / … the gate applies.
    /// Required in request mode, refused in webhook mode.
    pub capabilities: Option<PathBuf>,
    /// Request mode: how requests carry their operation
    /// (`binding = "jsonrpc"`, `"http-json"`, `"operation-path"` or
    /// `"infer"`). Default `infer`: from each request's path (`…/message:send`
    /// → A2A HTTP+JSON, `/adcp/<op>` → one operation per path, anything
    /// else → JSON-RPC, as MCP's `/mcp`). Refused in webhook mode.
    pub binding: Option<BindingSetting>,
    /// Request mode: the request-signing profile this gateway verifies
    /// under (`request_profile = "3.2"` or `"legacy"`). Default `3.2`.
    /// `legacy` is an endpoint for buyers on the AdCP 3.0/3.1 request
    /// profile (binary values in unpadded base64url, the
    /// `covers_content_digest` policy its [`capabilities`](Self::capabilities)
    /// advertise: `required`, `either` or `forbidden`); a 3.2 gateway needs
    /// `required`. One profile per gateway: the request's encoding never
    /// selects it (run a second gateway for the other one). Refused in
    /// webhook mode. See [`RequestProfileSetting`].
    pub request_profile: Option<RequestProfileSetting>,
    /// Request mode: the header whose presence (non-empty) is an
    /// independent credential for the seller's own authenticator to judge
    /// (`credential_header = "x-api-key"`). Default `Authorization`.
    /// Refused in webhook mode.
    pub credential_header: Option<String>,
    /// Address to listen on (`listen = "0.0.0.0:8790"`). Default
    /// `127.0.0.1:8790`.
    pub listen: SocketAddr,
    /// Where verified, first-seen events are posted
    /// (`upstream = "http://127.0.0.1:8080/events"`). Required.
    pub upstream: Option<url::Url>,
    /// The seller's public JWKS file, instead of discovery
    /// (`jwks = "seller-jwks.json"`, relative to the TOML file).
    pub jwks: Option<PathBuf>,
    /// The agent URL the [`jwks`](Self::jwks) keys belong to: the verified
    /// sender (`jwks_agent = "https://seller.example/mcp"`). Default
    /// `jwks-file`.
    pub jwks_agent: String,
    /// Sellers' agent URLs whose keys are discovered over HTTPS
    /// (brand.json → `agents[]` → `jwks_uri`):
    /// `agents = ["https://seller.example/mcp"]`. In request mode, buyer
    /// agents, discovered through the `identity.brand_json_url` chain
    /// (the agent's `get_adcp_capabilities` first).
    pub agents: Vec<String>,
    /// Sellers with static keys: agent URL → public JWKS file (relative to
    /// the TOML file): `[sellers]` then
    /// `"https://seller.example/mcp" = "seller-jwks.json"`. Combines with
    /// [`agents`](Self::agents); sellers may share a `kid` (each webhook is
    /// attributed to the one seller whose key verifies it). Also read from
    /// a list of `SELLER_URL=JWKS_FILE` entries, the syntax of `--seller`.
    #[serde(deserialize_with = "seller_table")]
    pub sellers: BTreeMap<String, PathBuf>,
    /// Revocation list URL of discovered sellers, as `(agent URL, list
    /// URL)` pairs in the order given: each seller one of
    /// [`agents`](Self::agents) (byte for byte) and given once, each list
    /// an `https` URL serving the JWS-signed list. `[revocation_lists]`
    /// then `"https://seller.example/mcp" = "https://seller.example/.well-known/revocations.json"`.
    /// A seller without one is never checked for revocation. Also read
    /// from a list of `SELLER_URL=LIST_URL` entries (`--revocation-list`).
    #[serde(deserialize_with = "revocation_list_table")]
    pub revocation_lists: Vec<(String, String)>,
    /// Pinned `jwks_uri` of discovered sellers, as `(agent URL, JWKS URL)`
    /// pairs in the order given (each seller one of
    /// [`agents`](Self::agents), given once): a brand.json naming another
    /// one is refused (`jwks_untrusted`) and alarmed. `[jwks_uri_pins]`
    /// then `"https://seller.example/mcp" = "https://keys.seller.example/jwks.json"`.
    /// Also read from a list of `SELLER_URL=JWKS_URL` entries
    /// (`--pin-jwks-uri`).
    #[serde(deserialize_with = "jwks_uri_pin_table")]
    pub jwks_uri_pins: Vec<(String, String)>,
    /// Request mode only: buyer agents whose brand.json location comes
    /// from onboarding, as `(agent URL, brand.json URL)` pairs (each agent
    /// one of [`agents`](Self::agents), given once). Such an agent is not
    /// asked for its `get_adcp_capabilities`: its keys are discovered from
    /// that brand.json (→ `agents[]` → `jwks_uri`), as the spec allows
    /// for an onboarding-provided mapping. `[agent_brand_json]` then
    /// `"https://buyer.example/mcp" = "https://buyer.example/.well-known/brand.json"`.
    /// Also read from a list of `AGENT_URL=BRAND_JSON_URL` entries
    /// (`--agent-brand-json`).
    #[serde(deserialize_with = "agent_brand_json_table")]
    pub agent_brand_json: Vec<(String, String)>,
    /// For sellers without a pin: adopt a brand.json whose `jwks_uri`
    /// differs from the one first learned (still alarmed) instead of
    /// refusing it until a restart (`adopt_jwks_uri_changes = true`).
    /// Default `false`.
    pub adopt_jwks_uri_changes: bool,
    /// The dedup store (`store = "redis://cache:6379"`). Default
    /// `sqlite:adcp-gateway.sqlite`.
    pub store: StoreLocation,
    /// The Redis key prefix or PostgreSQL schema; every gateway of one
    /// fleet uses the same (`store_namespace = "adcp"`). Default `adcp`.
    pub store_namespace: String,
    /// The URL sellers were given, when a proxy or TLS terminator sits in
    /// front (`public_url = "https://buyer.example"`): its scheme and
    /// authority are the signed target's. See
    /// [`GatewayOptions::public_url`](crate::GatewayOptions::public_url).
    pub public_url: Option<url::Url>,
    /// With [`public_url`](Self::public_url) or TLS: other authorities
    /// (`host` or `host:port`) a request may arrive for
    /// (`accept_hosts = ["hooks.buyer.example"]`).
    pub accept_hosts: Vec<String>,
    /// Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) with this PEM certificate
    /// chain, end-entity certificate first (`tls_cert = "fullchain.pem"`,
    /// relative to the TOML file); with [`tls_key`](Self::tls_key), both or
    /// neither. Reloaded on `SIGHUP` by [`Gateway::run`](crate::Gateway::run).
    /// Without a [`public_url`](Self::public_url), the signed target's
    /// scheme is `https` and a request's `Host` / `:authority` must be a
    /// DNS name or IP address the certificate names, or one of
    /// [`accept_hosts`](Self::accept_hosts) (a certificate naming neither
    /// then stops the gateway at start-up). Default: plain HTTP.
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of [`tls_cert`](Self::tls_cert)
    /// (`tls_key = "key.pem"`, relative to the TOML file).
    pub tls_key: Option<PathBuf>,
    /// Key ids refused as revoked (`*_signature_key_revoked`, checklist
    /// step 9) whatever the key source and its revocation list say, for
    /// every seller publishing them (`revoked_kids = ["test-revoked-2026"]`).
    /// Default none.
    pub revoked_kids: Vec<String>,
    /// The replay cache's per-keyid cap: most live nonces one keyid may
    /// hold before its new signatures are refused with
    /// `*_signature_rate_abuse` (`replay_cap_per_keyid = 100`), in every
    /// store backend. Default: the mode's spec recommendation, 100,000 for
    /// webhooks, 1,000,000 for requests. Lower caps are for test counterparties (grading runs), not
    /// production.
    pub replay_cap_per_keyid: Option<usize>,
    /// The buyer's subscriber registrations file
    /// (`subscriptions = "subscriptions.json"`, relative to the TOML file);
    /// see [`Registrations::load`](crate::Registrations::load).
    pub subscriptions: Option<PathBuf>,
    /// A legacy HMAC-SHA256 registration: the file holding the shared
    /// secret (`hmac_secret_file = "/run/secrets/adcp-hmac"`, relative to
    /// the TOML file; one trailing newline removed). Wins over
    /// [`hmac_secret`](Self::hmac_secret).
    pub hmac_secret_file: Option<PathBuf>,
    /// A legacy HMAC-SHA256 registration's shared secret itself: from
    /// `ADCP_GATEWAY_HMAC_SECRET` or code, never from the TOML file.
    #[serde(skip)]
    pub hmac_secret: Option<Vec<u8>>,
    /// The sender identity of the HMAC registration
    /// (`hmac_sender = "https://seller.example/mcp"`). Default: the first
    /// of [`agents`](Self::agents), else [`jwks_agent`](Self::jwks_agent)
    /// with a [`jwks`](Self::jwks), else the first of
    /// [`sellers`](Self::sellers).
    pub hmac_sender: Option<String>,
    /// Bound on one upstream attempt (`upstream_timeout = 10`, seconds).
    /// Default 10 s. In request mode it bounds the upstream's answer up to
    /// its response head, and a body of known length (`Content-Length`,
    /// not an event stream) with it; a streamed body (`text/event-stream`,
    /// or no `Content-Length`: chunked) is relayed as long as it lasts,
    /// bounded only by [`upstream_idle_timeout`](Self::upstream_idle_timeout).
    #[serde(with = "seconds")]
    pub upstream_timeout: Duration,
    /// Request mode: the longest silence between two chunks of a streamed
    /// upstream answer before the gateway cuts it (the client sees the
    /// body end in an error) (`upstream_idle_timeout = 300`, seconds).
    /// Default `0`: off, as MCP event streams may stay quiet for long.
    /// Refused in webhook mode unless `0`.
    #[serde(with = "seconds")]
    pub upstream_idle_timeout: Duration,
    /// Largest webhook body accepted, in bytes
    /// (`max_body_bytes = 1048576`). Default 1 MiB.
    pub max_body_bytes: usize,
    /// Bound on one store operation, connecting included, before the
    /// webhook is answered `503` (`store_timeout = 5`, seconds). Default 5 s.
    #[serde(with = "seconds")]
    pub store_timeout: Duration,
    /// How long a claimed event stays exclusive to the gateway forwarding
    /// it; longer than [`upstream_timeout`](Self::upstream_timeout)
    /// (`claim_lease = 60`, seconds). Default 60 s.
    #[serde(with = "seconds")]
    pub claim_lease: Duration,
    /// How long an event's dedup record is kept: at least 24 h, and at
    /// least the largest `delivery_retry_horizon_seconds` the sellers
    /// advertise, at most 7 days (`dedup_window = 86400`, seconds).
    /// Default 24 h.
    #[serde(with = "seconds")]
    pub dedup_window: Duration,
    /// How often the store's expired replay entries, dedup records and
    /// notification records are deleted, SQLite and PostgreSQL (and
    /// `memory:`); Redis expires its keys itself. Writes only expire the
    /// rows they touch, and nothing else deletes expired notification
    /// records, so without it a long-running gateway's store grows without
    /// bound. The first purge runs shortly after start; a failed one is
    /// logged and retried at the next interval (`purge_interval = 300`,
    /// seconds; `0` never purges). Default 300 s.
    #[serde(with = "seconds")]
    pub purge_interval: Duration,
    /// Bound on receiving a request's headers; an idle keep-alive
    /// connection is closed after as long (`header_timeout = 10`,
    /// seconds). Default 10 s.
    #[serde(with = "seconds")]
    pub header_timeout: Duration,
    /// Bound on receiving a request's body, then `408`
    /// (`body_timeout = 30`, seconds). Default 30 s.
    #[serde(with = "seconds")]
    pub body_timeout: Duration,
    /// Most webhook requests handled at once; beyond it `503` with
    /// `Retry-After: 1` (`max_concurrency = 512`). Default 512.
    pub max_concurrency: usize,
    /// Check the Ed25519 signatures of concurrent webhooks (in request
    /// mode, signed requests) together, on threads of their own, instead
    /// of each on its own task
    /// (`batch_verify = true`): about half the cryptography per webhook
    /// under load (see [`adcp_verify::SignatureBatcher`] for the one kind
    /// of signature, crafted by the key's own holder, that batch and
    /// single verification may judge differently). Default off.
    pub batch_verify: bool,
    /// One line on stderr per webhook: status, outcome, elapsed time and
    /// the verified identity (never bodies or headers). Not a TOML key;
    /// `ADCP_GATEWAY_QUIET=true` turns it off. Default on.
    #[serde(skip)]
    pub access_log: bool,
    /// Test-only overrides of key discovery; never from the environment
    /// or the TOML file.
    #[serde(skip)]
    pub test_overrides: TestOverrides,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            profile: GatewayProfile::Webhook,
            capabilities: None,
            binding: None,
            request_profile: None,
            credential_header: None,
            listen: DEFAULT_LISTEN,
            upstream: None,
            jwks: None,
            jwks_agent: DEFAULT_JWKS_AGENT.to_owned(),
            agents: Vec::new(),
            sellers: BTreeMap::new(),
            revocation_lists: Vec::new(),
            jwks_uri_pins: Vec::new(),
            agent_brand_json: Vec::new(),
            adopt_jwks_uri_changes: false,
            store: StoreLocation::default(),
            store_namespace: DEFAULT_STORE_NAMESPACE.to_owned(),
            public_url: None,
            accept_hosts: Vec::new(),
            tls_cert: None,
            tls_key: None,
            revoked_kids: Vec::new(),
            replay_cap_per_keyid: None,
            subscriptions: None,
            hmac_secret_file: None,
            hmac_secret: None,
            hmac_sender: None,
            upstream_timeout: DEFAULT_UPSTREAM_TIMEOUT,
            upstream_idle_timeout: Duration::ZERO,
            max_body_bytes: adcp_webhook::DEFAULT_MAX_BODY_BYTES,
            store_timeout: DEFAULT_STORE_TIMEOUT,
            claim_lease: DEFAULT_CLAIM_LEASE,
            dedup_window: MIN_DEDUP_WINDOW,
            purge_interval: DEFAULT_PURGE_INTERVAL,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            batch_verify: false,
            access_log: true,
            test_overrides: TestOverrides::default(),
        }
    }
}

impl std::fmt::Debug for GatewayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayConfig")
            .field("profile", &self.profile)
            .field("capabilities", &self.capabilities)
            .field("binding", &self.binding)
            .field("request_profile", &self.request_profile)
            .field("credential_header", &self.credential_header)
            .field("listen", &self.listen)
            .field("upstream", &self.upstream.as_ref().map(url::Url::as_str))
            .field("jwks", &self.jwks)
            .field("jwks_agent", &self.jwks_agent)
            .field("agents", &self.agents)
            .field("sellers", &self.sellers)
            .field("revocation_lists", &self.revocation_lists)
            .field("jwks_uri_pins", &self.jwks_uri_pins)
            .field("agent_brand_json", &self.agent_brand_json)
            .field("adopt_jwks_uri_changes", &self.adopt_jwks_uri_changes)
            .field("store", &self.store)
            .field("store_namespace", &self.store_namespace)
            .field("public_url", &self.public_url.as_ref().map(url::Url::as_str))
            .field("accept_hosts", &self.accept_hosts)
            .field("tls_cert", &self.tls_cert)
            .field("tls_key", &self.tls_key)
            .field("revoked_kids", &self.revoked_kids)
            .field("replay_cap_per_keyid", &self.replay_cap_per_keyid)
            .field("subscriptions", &self.subscriptions)
            .field("hmac_secret_file", &self.hmac_secret_file)
            .field("hmac_secret", &self.hmac_secret.as_ref().map(|_| "<redacted>"))
            .field("hmac_sender", &self.hmac_sender)
            .field("upstream_timeout", &self.upstream_timeout)
            .field("upstream_idle_timeout", &self.upstream_idle_timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("store_timeout", &self.store_timeout)
            .field("claim_lease", &self.claim_lease)
            .field("dedup_window", &self.dedup_window)
            .field("purge_interval", &self.purge_interval)
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_concurrency", &self.max_concurrency)
            .field("batch_verify", &self.batch_verify)
            .field("access_log", &self.access_log)
            .field("test_overrides", &self.test_overrides)
            .finish()
    }
}

/// The environment variables of the settings, and how each is parsed.
mod env {
    pub(super) const CONFIG: &str = "ADCP_GATEWAY_CONFIG";
    pub(super) const PROFILE: &str = "ADCP_GATEWAY_PROFILE";
    pub(super) const CAPABILITIES: &str = "ADCP_GATEWAY_CAPABILITIES";
    pub(super) const BINDING: &str = "ADCP_GATEWAY_BINDING";
    pub(super) const REQUEST_PROFILE: &str = "ADCP_GATEWAY_REQUEST_PROFILE";
    pub(super) const CREDENTIAL_HEADER: &str = "ADCP_GATEWAY_CREDENTIAL_HEADER";
    pub(super) const LISTEN: &str = "ADCP_GATEWAY_LISTEN";
    pub(super) const UPSTREAM: &str = "ADCP_GATEWAY_UPSTREAM";
    pub(super) const JWKS: &str = "ADCP_GATEWAY_JWKS";
    pub(super) const JWKS_AGENT: &str = "ADCP_GATEWAY_JWKS_AGENT";
    pub(super) const AGENTS: &str = "ADCP_GATEWAY_AGENTS";
    pub(super) const SELLERS: &str = "ADCP_GATEWAY_SELLERS";
    pub(super) const REVOCATION_LISTS: &str = "ADCP_GATEWAY_REVOCATION_LISTS";
    pub(super) const JWKS_URI_PINS: &str = "ADCP_GATEWAY_JWKS_URI_PINS";
    pub(super) const AGENT_BRAND_JSON: &str = "ADCP_GATEWAY_AGENT_BRAND_JSON";
    pub(super) const ADOPT_JWKS_URI_CHANGES: &str = "ADCP_GATEWAY_ADOPT_JWKS_URI_CHANGES";
    pub(super) const STORE: &str = "ADCP_GATEWAY_STORE";
    pub(super) const STORE_NAMESPACE: &str = "ADCP_GATEWAY_STORE_NAMESPACE";
    pub(super) const PUBLIC_URL: &str = "ADCP_GATEWAY_PUBLIC_URL";
    pub(super) const ACCEPT_HOSTS: &str = "ADCP_GATEWAY_ACCEPT_HOSTS";
    pub(super) const TLS_CERT: &str = "ADCP_GATEWAY_TLS_CERT";
    pub(super) const TLS_KEY: &str = "ADCP_GATEWAY_TLS_KEY";
    pub(super) const REVOKED_KIDS: &str = "ADCP_GATEWAY_REVOKED_KIDS";
    pub(super) const REPLAY_CAP_PER_KEYID: &str = "ADCP_GATEWAY_REPLAY_CAP_PER_KEYID";
    pub(super) const SUBSCRIPTIONS: &str = "ADCP_GATEWAY_SUBSCRIPTIONS";
    pub(super) const HMAC_SECRET_FILE: &str = "ADCP_GATEWAY_HMAC_SECRET_FILE";
    pub(super) const HMAC_SENDER: &str = "ADCP_GATEWAY_HMAC_SENDER";
    pub(super) const UPSTREAM_TIMEOUT: &str = "ADCP_GATEWAY_UPSTREAM_TIMEOUT";
    pub(super) const UPSTREAM_IDLE_TIMEOUT: &str = "ADCP_GATEWAY_UPSTREAM_IDLE_TIMEOUT";
    pub(super) const MAX_BODY_BYTES: &str = "ADCP_GATEWAY_MAX_BODY_BYTES";
    pub(super) const STORE_TIMEOUT: &str = "ADCP_GATEWAY_STORE_TIMEOUT";
    pub(super) const CLAIM_LEASE: &str = "ADCP_GATEWAY_CLAIM_LEASE";
    pub(super) const DEDUP_WINDOW: &str = "ADCP_GATEWAY_DEDUP_WINDOW";
    pub(super) const PURGE_INTERVAL: &str = "ADCP_GATEWAY_PURGE_INTERVAL";
    pub(super) const HEADER_TIMEOUT: &str = "ADCP_GATEWAY_HEADER_TIMEOUT";
    pub(super) const BODY_TIMEOUT: &str = "ADCP_GATEWAY_BODY_TIMEOUT";
    pub(super) const MAX_CONCURRENCY: &str = "ADCP_GATEWAY_MAX_CONCURRENCY";
    pub(super) const BATCH_VERIFY: &str = "ADCP_GATEWAY_BATCH_VERIFY";
    pub(super) const QUIET: &str = "ADCP_GATEWAY_QUIET";
}

impl GatewayConfig {
    /// The environment variable holding the HMAC secret itself (the only
    /// way to give it other than a file or code).
    pub const HMAC_SECRET_ENV: &'static str = "ADCP_GATEWAY_HMAC_SECRET";

    /// The defaults, forwarding to `upstream`.
    #[must_use]
    pub fn new(upstream: url::Url) -> Self {
        Self {
            upstream: Some(upstream),
            ..Self::default()
        }
    }

    /// Settings from TOML text over the defaults. Paths are taken as
    /// written (relative ones: to the working directory).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Toml`]: malformed TOML, an unknown key, a value of
    /// the wrong type (a store URL of no known scheme included).
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|source| ConfigError::Toml { path: None, source })
    }

    /// Settings from a TOML file over the defaults. Relative paths in it
    /// (`jwks`, `sellers`, `subscriptions`, `hmac_secret_file`, `tls_cert`,
    /// `tls_key`) are
    /// relative to the file's directory.
    ///
    /// # Errors
    ///
    /// [`ConfigError::ReadFile`] or [`ConfigError::Toml`].
    pub fn from_toml_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        let mut config: Self = toml::from_str(&text).map_err(|source| ConfigError::Toml {
            path: Some(path.to_path_buf()),
            source,
        })?;
        if let Some(dir) = path.parent() {
            let relative = |p: &mut PathBuf| {
                if p.is_relative() {
                    *p = dir.join(&*p);
                }
            };
            config.jwks.as_mut().map(relative);
            config.capabilities.as_mut().map(relative);
            config.sellers.values_mut().for_each(relative);
            config.subscriptions.as_mut().map(relative);
            config.hmac_secret_file.as_mut().map(relative);
            config.tls_cert.as_mut().map(relative);
            config.tls_key.as_mut().map(relative);
        }
        Ok(config)
    }

    /// What the `adcp-sig gateway` binary reads without flags: the TOML
    /// file named by `ADCP_GATEWAY_CONFIG` (if set) over the defaults, then
    /// the other `ADCP_GATEWAY_*` variables over it
    /// ([`apply_env`](Self::apply_env)).
    ///
    /// # Errors
    ///
    /// Those of [`from_toml_file`](Self::from_toml_file) and
    /// [`apply_env`](Self::apply_env).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_env_vars(|name| std::env::var_os(name))
    }

    /// [`from_env`](Self::from_env) with the variables looked up by `var`
    /// instead of in the process environment.
    ///
    /// # Errors
    ///
    /// Those of [`from_toml_file`](Self::from_toml_file) and
    /// [`apply_env_vars`](Self::apply_env_vars).
    pub fn from_env_vars(var: impl Fn(&str) -> Option<OsString>) -> Result<Self, ConfigError> {
        let mut config = match var(env::CONFIG) {
            Some(path) if !path.is_empty() => Self::from_toml_file(PathBuf::from(path))?,
            Some(_) => return Err(invalid(env::CONFIG, "", "a file path")),
            None => Self::default(),
        };
        config.apply_env_vars(var)?;
        Ok(config)
    }

    /// Overlays the `ADCP_GATEWAY_*` variables that are set: each one's
    /// setting is `ADCP_GATEWAY_` followed by the field name in upper case,
    /// except `ADCP_GATEWAY_QUIET` (`true` turns
    /// [`access_log`](Self::access_log) off) and
    /// [`HMAC_SECRET_ENV`](Self::HMAC_SECRET_ENV). Lists are
    /// comma-separated (`ADCP_GATEWAY_AGENTS=https://a.example/mcp,https://b.example/mcp`),
    /// tables too, as `SELLER_URL=VALUE` entries
    /// (`ADCP_GATEWAY_SELLERS`, `ADCP_GATEWAY_REVOCATION_LISTS`,
    /// `ADCP_GATEWAY_JWKS_URI_PINS`); durations are whole seconds, switches
    /// `true` or `false`. `ADCP_GATEWAY_CONFIG` is not read here (see
    /// [`from_env`](Self::from_env)).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Env`] for a value that does not parse, and
    /// [`ConfigError::MalformedEntry`] / [`ConfigError::SellerGivenTwice`]
    /// for a malformed table.
    pub fn apply_env(&mut self) -> Result<(), ConfigError> {
        self.apply_env_vars(|name| std::env::var_os(name))
    }

    /// [`apply_env`](Self::apply_env) with the variables looked up by
    /// `var` instead of in the process environment.
    ///
    /// # Errors
    ///
    /// As [`apply_env`](Self::apply_env).
    pub fn apply_env_vars(&mut self, var: impl Fn(&str) -> Option<OsString>) -> Result<(), ConfigError> {
        let text = |name: &'static str| -> Result<Option<String>, ConfigError> {
            var(name)
                .map(|value| {
                    value
                        .into_string()
                        .map_err(|value| invalid(name, &value.to_string_lossy(), "UTF-8 text"))
                })
                .transpose()
        };
        if let Some(value) = text(env::PROFILE)? {
            self.profile = value
                .parse()
                .map_err(|_| invalid(env::PROFILE, &value, "webhook or request"))?;
        }
        if let Some(path) = path(&var, env::CAPABILITIES)? {
            self.capabilities = Some(path);
        }
        if let Some(value) = text(env::BINDING)? {
            self.binding = Some(
                value
                    .parse()
                    .map_err(|_| invalid(env::BINDING, &value, "jsonrpc, http-json, operation-path or infer"))?,
            );
        }
        if let Some(value) = text(env::REQUEST_PROFILE)? {
            self.request_profile = Some(
                value
                    .parse()
                    .map_err(|_| invalid(env::REQUEST_PROFILE, &value, "3.2 or legacy"))?,
            );
        }
        if let Some(value) = text(env::CREDENTIAL_HEADER)? {
            self.credential_header = Some(value);
        }
        if let Some(value) = text(env::LISTEN)? {
            self.listen = value
                .parse()
                .map_err(|_| invalid(env::LISTEN, &value, "an IP address and port"))?;
        }
        if let Some(value) = text(env::UPSTREAM)? {
            self.upstream = Some(url(env::UPSTREAM, &value)?);
        }
        if let Some(path) = path(&var, env::JWKS)? {
            self.jwks = Some(path);
        }
        if let Some(value) = text(env::JWKS_AGENT)? {
            self.jwks_agent = value;
        }
        if let Some(value) = text(env::AGENTS)? {
            self.agents = list(&value);
        }
        if let Some(value) = text(env::SELLERS)? {
            self.set_seller_entries(list(&value))?;
        }
        if let Some(value) = text(env::REVOCATION_LISTS)? {
            self.set_revocation_list_entries(list(&value))?;
        }
        if let Some(value) = text(env::JWKS_URI_PINS)? {
            self.set_jwks_uri_pin_entries(list(&value))?;
        }
        if let Some(value) = text(env::AGENT_BRAND_JSON)? {
            self.set_agent_brand_json_entries(list(&value))?;
        }
        if switch(&text, env::ADOPT_JWKS_URI_CHANGES)? {
            self.adopt_jwks_uri_changes = true;
        }
        if let Some(value) = text(env::STORE)? {
            self.store = value.parse()?;
        }
        if let Some(value) = text(env::STORE_NAMESPACE)? {
            self.store_namespace = value;
        }
        if let Some(value) = text(env::PUBLIC_URL)? {
            self.public_url = Some(url(env::PUBLIC_URL, &value)?);
        }
        if let Some(value) = text(env::ACCEPT_HOSTS)? {
            self.accept_hosts = list(&value);
        }
        if let Some(path) = path(&var, env::TLS_CERT)? {
            self.tls_cert = Some(path);
        }
        if let Some(path) = path(&var, env::TLS_KEY)? {
            self.tls_key = Some(path);
        }
        if let Some(value) = text(env::REVOKED_KIDS)? {
            self.revoked_kids = list(&value);
        }
        if let Some(value) = text(env::REPLAY_CAP_PER_KEYID)? {
            self.replay_cap_per_keyid = Some(
                value
                    .parse()
                    .map_err(|_| invalid(env::REPLAY_CAP_PER_KEYID, &value, "a whole number"))?,
            );
        }
        if let Some(path) = path(&var, env::SUBSCRIPTIONS)? {
            self.subscriptions = Some(path);
        }
        if let Some(path) = path(&var, env::HMAC_SECRET_FILE)? {
            self.hmac_secret_file = Some(path);
        }
        if let Some(secret) = var(Self::HMAC_SECRET_ENV) {
            self.hmac_secret = Some(secret.into_encoded_bytes());
        }
        if let Some(value) = text(env::HMAC_SENDER)? {
            self.hmac_sender = Some(value);
        }
        for (name, field) in [
            (env::UPSTREAM_TIMEOUT, &mut self.upstream_timeout),
            (env::UPSTREAM_IDLE_TIMEOUT, &mut self.upstream_idle_timeout),
            (env::STORE_TIMEOUT, &mut self.store_timeout),
            (env::CLAIM_LEASE, &mut self.claim_lease),
            (env::DEDUP_WINDOW, &mut self.dedup_window),
            (env::PURGE_INTERVAL, &mut self.purge_interval),
            (env::HEADER_TIMEOUT, &mut self.header_timeout),
            (env::BODY_TIMEOUT, &mut self.body_timeout),
        ] {
            if let Some(value) = text(name)? {
                *field = Duration::from_secs(
                    value
                        .parse()
                        .map_err(|_| invalid(name, &value, "a whole number of seconds"))?,
                );
            }
        }
        for (name, field) in [
            (env::MAX_BODY_BYTES, &mut self.max_body_bytes),
            (env::MAX_CONCURRENCY, &mut self.max_concurrency),
        ] {
            if let Some(value) = text(name)? {
                *field = value.parse().map_err(|_| invalid(name, &value, "a whole number"))?;
            }
        }
        if switch(&text, env::BATCH_VERIFY)? {
            self.batch_verify = true;
        }
        if switch(&text, env::QUIET)? {
            self.access_log = false;
        }
        Ok(())
    }

    /// Replaces [`sellers`](Self::sellers) with `SELLER_URL=JWKS_FILE`
    /// entries: the syntax of `--seller` and `ADCP_GATEWAY_SELLERS`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::MalformedEntry`], or [`ConfigError::SellerGivenTwice`];
    /// the sellers are then unchanged.
    pub fn set_seller_entries<S: AsRef<str>>(
        &mut self,
        entries: impl IntoIterator<Item = S>,
    ) -> Result<(), ConfigError> {
        self.sellers = seller_map(url_entries(SELLER, entries)?)?;
        Ok(())
    }

    /// Replaces [`revocation_lists`](Self::revocation_lists) with
    /// `SELLER_URL=LIST_URL` entries: the syntax of `--revocation-list` and
    /// `ADCP_GATEWAY_REVOCATION_LISTS`. Sellers and URLs are checked by
    /// [`validate`](Self::validate).
    ///
    /// # Errors
    ///
    /// [`ConfigError::MalformedEntry`]; the lists are then unchanged.
    pub fn set_revocation_list_entries<S: AsRef<str>>(
        &mut self,
        entries: impl IntoIterator<Item = S>,
    ) -> Result<(), ConfigError> {
        self.revocation_lists = url_entries(REVOCATION_LIST, entries)?;
        Ok(())
    }

    /// Replaces [`jwks_uri_pins`](Self::jwks_uri_pins) with
    /// `SELLER_URL=JWKS_URL` entries: the syntax of `--pin-jwks-uri` and
    /// `ADCP_GATEWAY_JWKS_URI_PINS`. Sellers and URLs are checked by
    /// [`validate`](Self::validate).
    ///
    /// # Errors
    ///
    /// [`ConfigError::MalformedEntry`]; the pins are then unchanged.
    pub fn set_jwks_uri_pin_entries<S: AsRef<str>>(
        &mut self,
        entries: impl IntoIterator<Item = S>,
    ) -> Result<(), ConfigError> {
        self.jwks_uri_pins = url_entries(JWKS_URI_PIN, entries)?;
        Ok(())
    }

    /// Replaces [`agent_brand_json`](Self::agent_brand_json) with
    /// `AGENT_URL=BRAND_JSON_URL` entries: the syntax of
    /// `--agent-brand-json` and `ADCP_GATEWAY_AGENT_BRAND_JSON`. Agents and
    /// URLs are checked by [`validate`](Self::validate).
    ///
    /// # Errors
    ///
    /// [`ConfigError::MalformedEntry`]; the mappings are then unchanged.
    pub fn set_agent_brand_json_entries<S: AsRef<str>>(
        &mut self,
        entries: impl IntoIterator<Item = S>,
    ) -> Result<(), ConfigError> {
        self.agent_brand_json = url_entries(AGENT_BRAND_JSON, entries)?;
        Ok(())
    }

    /// Checks the settings together, as [`Gateway::from_config`] does
    /// before anything is opened: an upstream, one key source per seller,
    /// revocation lists and pins for discovered sellers only (each URL
    /// acceptable to key discovery's SSRF guard), the HMAC secret (read
    /// from [`hmac_secret_file`](Self::hmac_secret_file)) and its sender,
    /// durations of at least 1 s, the claim lease longer than the upstream
    /// timeout, the dedup window within 24 h – 7 days, a concurrency limit,
    /// the TLS certificate and key (both or neither, read and matched;
    /// without a public URL or accept-host, a certificate naming at least
    /// one DNS name or IP address),
    /// revoked key ids not empty, a per-keyid replay cap of at least 1;
    /// in request mode the capabilities file (read and parsed) and the
    /// credential header name, no webhook-only setting (subscriptions,
    /// HMAC); in webhook mode no request-only setting.
    ///
    /// # Errors
    ///
    /// The first setting found missing or invalid.
    ///
    /// [`Gateway::from_config`]: crate::Gateway::from_config
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.resolve().map(|_| ())
    }

    /// The checks of [`validate`](Self::validate), and what they derive.
    pub(crate) fn resolve(&self) -> Result<Resolved, ConfigError> {
        let upstream = self.upstream.clone().ok_or(ConfigError::UpstreamMissing)?;
        let keys = match (&self.jwks, self.agents.is_empty()) {
            (Some(_), false) => return Err(ConfigError::JwksAndAgents),
            (Some(path), true) => KeySource::Jwks {
                path: path.clone(),
                agent: self.jwks_agent.clone(),
            },
            (None, false) => KeySource::Agents(self.agents.clone()),
            (None, true) => KeySource::None,
        };
        if !self.sellers.is_empty() {
            if matches!(keys, KeySource::Jwks { .. }) {
                return Err(ConfigError::JwksAndSellers);
            }
            if let KeySource::Agents(agents) = &keys {
                if let Some(both) = agents.iter().find(|agent| self.sellers.contains_key(*agent)) {
                    return Err(ConfigError::AgentAndSeller { seller: both.clone() });
                }
            }
        }
        let allow_loopback = self.test_overrides.allow_loopback;
        let revocation_lists = check_seller_urls(REVOCATION_LIST, &self.revocation_lists, &keys, allow_loopback)?;
        let jwks_uri_pins = check_seller_urls(JWKS_URI_PIN, &self.jwks_uri_pins, &keys, allow_loopback)?;
        let agent_brand_json = check_seller_urls(AGENT_BRAND_JSON, &self.agent_brand_json, &keys, allow_loopback)?;
        let hmac_secret = match &self.hmac_secret_file {
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|source| ConfigError::HmacSecretFile {
                    path: path.clone(),
                    source,
                })?;
                Some(trim_newline(bytes))
            }
            None => self.hmac_secret.clone(),
        };
        if hmac_secret.as_ref().is_some_and(Vec::is_empty) {
            return Err(ConfigError::EmptyHmacSecret);
        }
        if keys == KeySource::None && self.sellers.is_empty() && hmac_secret.is_none() {
            return Err(ConfigError::NoKeys);
        }
        let hmac_sender = self.hmac_sender.clone().or_else(|| match &keys {
            KeySource::Agents(agents) => agents.first().cloned(),
            KeySource::Jwks { agent, .. } => Some(agent.clone()),
            KeySource::None => self.sellers.keys().next().cloned(),
        });
        if hmac_secret.is_some() && hmac_sender.is_none() {
            return Err(ConfigError::HmacSenderMissing);
        }
        let at_least_a_second = |setting: &'static str, value: Duration| {
            if value.as_secs() == 0 {
                Err(ConfigError::ZeroDuration { setting })
            } else {
                Ok(())
            }
        };
        at_least_a_second("upstream-timeout", self.upstream_timeout)?;
        at_least_a_second("claim-lease", self.claim_lease)?;
        if self.claim_lease <= self.upstream_timeout {
            // A lease ending while the upstream may still be applying the
            // event lets another gateway (or a retry) forward it again.
            return Err(ConfigError::ClaimLeaseTooShort {
                claim_lease: self.claim_lease,
                upstream_timeout: self.upstream_timeout,
            });
        }
        at_least_a_second("dedup-window", self.dedup_window)?;
        if !(MIN_DEDUP_WINDOW..=MAX_DEDUP_WINDOW).contains(&self.dedup_window) {
            // Below 24 h is never conformant; above 7 days no seller retries.
            return Err(ConfigError::DedupWindow {
                window: self.dedup_window,
            });
        }
        if self.max_concurrency == 0 {
            return Err(ConfigError::ZeroConcurrency);
        }
        at_least_a_second("store-timeout", self.store_timeout)?;
        at_least_a_second("header-timeout", self.header_timeout)?;
        at_least_a_second("body-timeout", self.body_timeout)?;
        if self.replay_cap_per_keyid == Some(0) {
            return Err(ConfigError::ZeroReplayCap);
        }
        if self.revoked_kids.iter().any(String::is_empty) {
            return Err(ConfigError::EmptyRevokedKid);
        }
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(crate::TlsConfig::from_pem_files(cert, key)?),
            (None, None) => None,
            _ => return Err(ConfigError::TlsFilesIncomplete),
        };
        if let Some(tls) = &tls {
            // Without a public URL or an accept-host, the certificate's
            // names are the only Hosts accepted.
            if self.public_url.is_none() && self.accept_hosts.is_empty() && !tls.has_names() {
                return Err(ConfigError::TlsNoNames {
                    path: tls.cert_path().to_path_buf(),
                });
            }
        }
        let request = self.resolve_request(hmac_secret.is_some())?;
        Ok(Resolved {
            request,
            upstream,
            keys,
            revocation_lists,
            jwks_uri_pins,
            agent_brand_json,
            hmac_secret,
            hmac_sender,
            tls,
        })
    }
}

impl GatewayConfig {
    /// The request-mode settings checked against the profile: in request
    /// mode the capability file read and parsed, the credential header a
    /// valid name, no webhook-only setting; in webhook mode no
    /// request-only setting.
    fn resolve_request(&self, hmac: bool) -> Result<Option<crate::RequestOptions>, ConfigError> {
        if self.profile == GatewayProfile::Webhook {
            let request_only = [
                ("--capabilities", self.capabilities.is_some()),
                ("--binding", self.binding.is_some()),
                ("--request-profile", self.request_profile.is_some()),
                ("--credential-header", self.credential_header.is_some()),
                ("--agent-brand-json", !self.agent_brand_json.is_empty()),
                ("--upstream-idle-timeout", !self.upstream_idle_timeout.is_zero()),
            ];
            if let Some((setting, _)) = request_only.into_iter().find(|(_, set)| *set) {
                return Err(ConfigError::RequestModeOnly { setting });
            }
            return Ok(None);
        }
        let webhook_only = [
            ("--subscriptions", self.subscriptions.is_some()),
            ("--hmac-secret-file / ADCP_GATEWAY_HMAC_SECRET", hmac),
            ("--hmac-sender", self.hmac_sender.is_some()),
        ];
        if let Some((setting, _)) = webhook_only.into_iter().find(|(_, set)| *set) {
            return Err(ConfigError::WebhookModeOnly { setting });
        }
        let path = self.capabilities.as_ref().ok_or(ConfigError::CapabilitiesMissing)?;
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::CapabilitiesFile {
            path: path.clone(),
            source,
        })?;
        let document: serde_json::Value =
            serde_json::from_str(&text).map_err(|source| ConfigError::CapabilitiesJson {
                path: path.clone(),
                source,
            })?;
        let capability =
            adcp_request::request_signing_capability(&document).map_err(|source| ConfigError::Capability {
                path: path.clone(),
                source,
            })?;
        // The profile is this gateway's, whatever a request looks like: 3.2
        // applies `required` only; legacy takes the policy advertised.
        let profile = self.request_profile.unwrap_or_default().profile(&capability);
        capability
            .check_profile(&profile)
            .map_err(|e| ConfigError::RequestVerifier(adcp_request::BuildError::Capability(e)))?;
        let mut options = crate::RequestOptions::new(capability);
        options.profile = profile;
        options.binding = self.binding.and_then(BindingSetting::binding);
        if let Some(name) = &self.credential_header {
            options.credential_header = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ConfigError::CredentialHeader { name: name.clone() })?;
        }
        Ok(Some(options))
    }
}

/// What the gateway verifies: [`GatewayConfig::profile`], `--profile`,
/// `ADCP_GATEWAY_PROFILE`. Read from its text ([`FromStr`](std::str::FromStr),
/// whose error names the flag, also for a TOML value).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
#[non_exhaustive]
pub enum GatewayProfile {
    /// Signed webhooks (the AdCP webhook profile), deduplicated and
    /// forwarded once: the default.
    #[default]
    Webhook,
    /// Signed AdCP requests (the request-signing profile, 3.2) in front of
    /// a seller's own server: each request is verified under the seller's
    /// advertised `request_signing` capability and proxied to the
    /// upstream with its answer relayed back.
    Request,
}

impl std::str::FromStr for GatewayProfile {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "webhook" => Ok(Self::Webhook),
            "request" => Ok(Self::Request),
            _ => Err(ConfigError::Profile { value: s.to_owned() }),
        }
    }
}

impl TryFrom<String> for GatewayProfile {
    type Error = ConfigError;

    fn try_from(text: String) -> Result<Self, ConfigError> {
        text.parse()
    }
}

impl std::fmt::Display for GatewayProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Webhook => "webhook",
            Self::Request => "request",
        })
    }
}

/// The request-signing profile of a request-mode gateway:
/// [`GatewayConfig::request_profile`], `--request-profile`,
/// `ADCP_GATEWAY_REQUEST_PROFILE`. Read from its text
/// ([`FromStr`](std::str::FromStr), whose error names the flag, also for a
/// TOML value): `3.2` or `legacy`.
///
/// The spec lets a seller serve buyers still on the 3.0/3.1 request
/// profile only from an endpoint configured for it: a 3.2 verifier never
/// retries a request through a legacy decoder. A gateway instance is such
/// an endpoint; a seller serving both runs two, each with its own
/// capabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
#[non_exhaustive]
pub enum RequestProfileSetting {
    /// AdCP 3.2 (`Profile::request_v3_2`): binary values in RFC 8941
    /// Base64, `covers_content_digest` `required`. The default.
    #[default]
    V3_2,
    /// AdCP 3.0/3.1 (`Profile::request_legacy`): binary values in unpadded
    /// base64url, the `covers_content_digest` policy the capabilities
    /// advertise (`required`, `either` or `forbidden`).
    Legacy,
}

impl RequestProfileSetting {
    /// The verification profile for an endpoint advertising `capability`:
    /// 3.2, or legacy with the advertised `covers_content_digest` (`required`
    /// when signing is unsupported and the block omits it).
    #[must_use]
    pub fn profile(self, capability: &adcp_verify::request_policy::VerifierCapability) -> adcp_verify::Profile {
        match self {
            Self::V3_2 => adcp_verify::Profile::request_v3_2(),
            Self::Legacy => adcp_verify::Profile::request_legacy(
                capability
                    .covers_content_digest()
                    .unwrap_or(adcp_verify::DigestCoverage::Required),
            ),
        }
    }
}

impl std::str::FromStr for RequestProfileSetting {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "3.2" => Ok(Self::V3_2),
            "legacy" => Ok(Self::Legacy),
            _ => Err(ConfigError::RequestProfile { value: s.to_owned() }),
        }
    }
}

impl TryFrom<String> for RequestProfileSetting {
    type Error = ConfigError;

    fn try_from(text: String) -> Result<Self, ConfigError> {
        text.parse()
    }
}

impl From<RequestProfileSetting> for String {
    fn from(setting: RequestProfileSetting) -> Self {
        setting.to_string()
    }
}

impl std::fmt::Display for RequestProfileSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::V3_2 => "3.2",
            Self::Legacy => "legacy",
        })
    }
}

/// How request mode finds each request's operation:
/// [`GatewayConfig::binding`], `--binding`, `ADCP_GATEWAY_BINDING`. Read
/// from its text ([`FromStr`](std::str::FromStr), whose error names the
/// flag, also for a TOML value).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", try_from = "String")]
#[non_exhaustive]
pub enum BindingSetting {
    /// From each request's path ([`adcp_request::Binding::infer`]): the
    /// default.
    #[default]
    Infer,
    /// JSON-RPC 2.0 (MCP `tools/call`, A2A JSON-RPC) on every path.
    Jsonrpc,
    /// The A2A HTTP+JSON binding on every path.
    HttpJson,
    /// One operation per path (the last path segment) on every path.
    OperationPath,
}

impl BindingSetting {
    /// The fixed binding, or `None` to infer it per request.
    #[must_use]
    pub fn binding(self) -> Option<adcp_request::Binding> {
        match self {
            Self::Infer => None,
            Self::Jsonrpc => Some(adcp_request::Binding::JsonRpc),
            Self::HttpJson => Some(adcp_request::Binding::A2aHttpJson),
            Self::OperationPath => Some(adcp_request::Binding::OperationPath),
        }
    }
}

impl std::str::FromStr for BindingSetting {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "infer" => Ok(Self::Infer),
            "jsonrpc" => Ok(Self::Jsonrpc),
            "http-json" => Ok(Self::HttpJson),
            "operation-path" => Ok(Self::OperationPath),
            _ => Err(ConfigError::Binding { value: s.to_owned() }),
        }
    }
}

impl TryFrom<String> for BindingSetting {
    type Error = ConfigError;

    fn try_from(text: String) -> Result<Self, ConfigError> {
        text.parse()
    }
}

/// What [`GatewayConfig::resolve`] derives from the settings.
pub(crate) struct Resolved {
    /// The request mode's options; `None` in webhook mode.
    pub(crate) request: Option<crate::RequestOptions>,
    pub(crate) upstream: url::Url,
    pub(crate) keys: KeySource,
    pub(crate) revocation_lists: BTreeMap<String, url::Url>,
    pub(crate) jwks_uri_pins: BTreeMap<String, url::Url>,
    /// Request mode: onboarding-provided brand.json per buyer agent.
    pub(crate) agent_brand_json: BTreeMap<String, url::Url>,
    pub(crate) hmac_secret: Option<Vec<u8>>,
    pub(crate) hmac_sender: Option<String>,
    pub(crate) tls: Option<crate::TlsConfig>,
}

/// Where the RFC 9421 keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeySource {
    /// A JWKS file and the agent URL its keys belong to.
    Jwks { path: PathBuf, agent: String },
    /// Discovery over HTTPS for each agent URL.
    Agents(Vec<String>),
    /// No RFC 9421 keys but [`GatewayConfig::sellers`]' (or a legacy HMAC
    /// registration only).
    None,
}

/// Where the dedup store is: `sqlite:PATH`, `redis://…`,
/// `redis+cluster://…`, `postgres://…`, or `memory:` (benchmarks only:
/// forgets everything on restart, not conformant).
///
/// Parsed from its text ([`FromStr`](std::str::FromStr), or a TOML string);
/// displayed (and debug-printed) with the user information of the URL
/// replaced by `***`.
///
/// ```
/// let store: adcp_gateway::StoreLocation = "postgres://adcp:hunter2@db:5432/adcp".parse()?;
/// assert_eq!(store.to_string(), "postgres://***@db:5432/adcp");
/// assert!(matches!(store.url(), adcp_store::StoreUrl::Postgres(_)));
/// # Ok::<(), adcp_gateway::ConfigError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct StoreLocation {
    text: String,
    url: adcp_store::StoreUrl,
}

impl StoreLocation {
    /// The parsed URL (with its credentials), for `adcp_store::open`.
    #[must_use]
    pub fn url(&self) -> &adcp_store::StoreUrl {
        &self.url
    }
}

impl Default for StoreLocation {
    /// `sqlite:adcp-gateway.sqlite`: an SQLite file in the working
    /// directory.
    fn default() -> Self {
        Self {
            text: DEFAULT_STORE.to_owned(),
            url: adcp_store::StoreUrl::Sqlite(PathBuf::from("adcp-gateway.sqlite")),
        }
    }
}

impl std::str::FromStr for StoreLocation {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        let url = text.parse().map_err(|source| ConfigError::Store {
            store: redact(text),
            source,
        })?;
        Ok(Self {
            text: text.to_owned(),
            url,
        })
    }
}

impl<'de> Deserialize<'de> for StoreLocation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The URL as given, credentials included: what the TOML file holds.
impl Serialize for StoreLocation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact(&self.text))
    }
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", redact(&self.text))
    }
}

/// **Tests only**: overrides of key discovery's network settings and
/// trust. Never read from the environment or the TOML file; the defaults
/// (Mozilla roots, system DNS, the full SSRF policy, signed revocation
/// lists only) are what production runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TestOverrides {
    /// A DER CA certificate file to trust instead of the Mozilla roots.
    pub trust_ca: Option<PathBuf>,
    /// Host names resolved to these addresses instead of by DNS.
    pub resolve: Vec<(String, IpAddr)>,
    /// Let key discovery (and revocation list and pin URLs) reach
    /// loopback addresses.
    pub allow_loopback: bool,
    /// Accept revocation lists that are not JWS-signed. The spec requires
    /// the list to be signed by a key of the seller's JWKS (an unsigned
    /// list lets whoever controls its CDN or DNS un-revoke a key), so
    /// there is no production setting for this.
    pub allow_unsigned_revocation_lists: bool,
}

impl TestOverrides {
    /// The discovery fetch configuration: the defaults (Mozilla roots,
    /// system DNS, full SSRF policy) unless an override is set.
    pub(crate) fn fetch_config(&self) -> Result<adcp_jwks::FetchConfig, ConfigError> {
        let mut config = adcp_jwks::FetchConfig::default();
        if let Some(path) = &self.trust_ca {
            let der = std::fs::read(path).map_err(|source| ConfigError::TestCa {
                path: path.clone(),
                source,
            })?;
            config.roots = adcp_jwks::TrustRoots::Custom(vec![der]);
        }
        if !self.resolve.is_empty() {
            let mut dns = adcp_jwks::StaticDnsResolver::new();
            for (host, ip) in &self.resolve {
                dns = dns.with(host, [*ip]);
            }
            config.resolver = std::sync::Arc::new(dns);
        }
        if self.allow_loopback {
            config.policy = adcp_jwks::SsrfPolicy::new().dangerously_allow_loopback_for_tests();
        }
        Ok(config)
    }
}

/// A `SELLER_URL=VALUE` table (`--seller`, or one of URLs): its flag, the
/// metavariable of its value, and what the value is (for "given more than
/// one ...").
#[derive(Clone, Copy)]
struct SellerUrlSetting {
    flag: &'static str,
    value: &'static str,
    what: &'static str,
}

const SELLER: SellerUrlSetting = SellerUrlSetting {
    flag: "--seller",
    value: "JWKS_FILE",
    what: "JWKS file",
};

const REVOCATION_LIST: SellerUrlSetting = SellerUrlSetting {
    flag: "--revocation-list",
    value: "LIST_URL",
    what: "list",
};

const JWKS_URI_PIN: SellerUrlSetting = SellerUrlSetting {
    flag: "--pin-jwks-uri",
    value: "JWKS_URL",
    what: "jwks_uri",
};

const AGENT_BRAND_JSON: SellerUrlSetting = SellerUrlSetting {
    flag: "--agent-brand-json",
    value: "BRAND_JSON_URL",
    what: "brand.json URL",
};

/// `SELLER_URL=VALUE` split at the first `=` (an agent URL has no query
/// string; the other URL may).
fn split_entry<'e>(
    flag: &'static str,
    expected: &'static str,
    entry: &'e str,
) -> Result<(&'e str, &'e str), ConfigError> {
    match entry.trim().split_once('=') {
        Some((seller, value)) if !seller.is_empty() && !value.is_empty() => Ok((seller, value)),
        _ => Err(ConfigError::MalformedEntry {
            setting: flag,
            entry: entry.to_owned(),
            expected,
        }),
    }
}

/// `--seller`, `--revocation-list`, `--pin-jwks-uri` or `--agent-brand-json`
/// entries (`SELLER_URL=VALUE`), in order.
fn url_entries<S: AsRef<str>>(
    kind: SellerUrlSetting,
    entries: impl IntoIterator<Item = S>,
) -> Result<Vec<(String, String)>, ConfigError> {
    entries
        .into_iter()
        .map(|entry| {
            let (seller, url) = split_entry(kind.flag, kind.value, entry.as_ref())?;
            Ok((seller.to_owned(), url.to_owned()))
        })
        .collect()
}

/// Start-up checks of the revocation lists and `jwks_uri` pins: discovery
/// mode only, each seller one of the discovered agent URLs and given once,
/// each URL acceptable to key discovery's SSRF guard (`https`, no
/// userinfo, no reserved IP literal; loopback only with the test-only
/// override).
fn check_seller_urls(
    kind: SellerUrlSetting,
    entries: &[(String, String)],
    keys: &KeySource,
    allow_loopback: bool,
) -> Result<BTreeMap<String, url::Url>, ConfigError> {
    let setting = kind.flag;
    let mut checked = BTreeMap::new();
    if entries.is_empty() {
        return Ok(checked);
    }
    let KeySource::Agents(agents) = keys else {
        return Err(ConfigError::NeedsDiscovery { setting });
    };
    let policy = if allow_loopback {
        adcp_jwks::SsrfPolicy::new().dangerously_allow_loopback_for_tests()
    } else {
        adcp_jwks::SsrfPolicy::new()
    };
    for (seller, url) in entries {
        if !agents.contains(seller) {
            return Err(ConfigError::NotAnAgent {
                setting,
                seller: seller.clone(),
                url: url.clone(),
            });
        }
        let checked_url = policy.check_url(url).map_err(|source| ConfigError::UnsafeUrl {
            setting,
            seller: seller.clone(),
            url: url.clone(),
            source,
        })?;
        if checked.insert(seller.clone(), checked_url).is_some() {
            return Err(ConfigError::GivenTwice {
                setting,
                seller: seller.clone(),
                what: kind.what,
            });
        }
    }
    Ok(checked)
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
fn redact(store: &str) -> String {
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

/// Durations as whole seconds, their TOML form.
mod seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_secs)
    }

    pub(super) fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(duration.as_secs())
    }
}

/// [`GatewayConfig::sellers`] from its table or its `--seller` entries.
fn seller_table<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, PathBuf>, D::Error> {
    let entries = deserializer.deserialize_any(Entries(SELLER))?;
    seller_map(entries).map_err(serde::de::Error::custom)
}

/// [`GatewayConfig::revocation_lists`] from its table or its entries.
fn revocation_list_table<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<(String, String)>, D::Error> {
    deserializer.deserialize_any(Entries(REVOCATION_LIST))
}

/// [`GatewayConfig::jwks_uri_pins`] from its table or its entries.
fn jwks_uri_pin_table<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<(String, String)>, D::Error> {
    deserializer.deserialize_any(Entries(JWKS_URI_PIN))
}

/// [`GatewayConfig::agent_brand_json`] from its table or its entries.
fn agent_brand_json_table<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<(String, String)>, D::Error> {
    deserializer.deserialize_any(Entries(AGENT_BRAND_JSON))
}

/// A `SELLER_URL = "VALUE"` setting's pairs, in the order given (duplicates
/// included: [`GatewayConfig::validate`] refuses them), from any of its
/// three forms: a TOML table; the flags' list of `SELLER_URL=VALUE` entries
/// (an entry without its `=` or a side is refused with the message of
/// [`ConfigError::MalformedEntry`], naming the flag); or the
/// `[SELLER_URL, VALUE]` pairs `Serialize` writes.
struct Entries(SellerUrlSetting);

impl<'de> serde::de::Visitor<'de> for Entries {
    type Value = Vec<(String, String)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a table of SELLER_URL = \"{}\", or a list of SELLER_URL={} entries",
            self.0.value, self.0.value
        )
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut pairs = Vec::new();
        while let Some(pair) = map.next_entry()? {
            pairs.push(pair);
        }
        Ok(pairs)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut pairs = Vec::new();
        while let Some(pair) = seq.next_element_seed(Entry(self.0))? {
            pairs.push(pair);
        }
        Ok(pairs)
    }
}

/// One element of a list of entries: `"SELLER_URL=VALUE"` or
/// `["SELLER_URL", "VALUE"]`.
#[derive(Clone, Copy)]
struct Entry(SellerUrlSetting);

impl<'de> serde::de::DeserializeSeed<'de> for Entry {
    type Value = (String, String);

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Entry {
    type Value = (String, String);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a SELLER_URL={} entry", self.0.value)
    }

    fn visit_str<E: serde::de::Error>(self, entry: &str) -> Result<Self::Value, E> {
        let (seller, value) = split_entry(self.0.flag, self.0.value, entry).map_err(E::custom)?;
        Ok((seller.to_owned(), value.to_owned()))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        <(String, String)>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
    }
}

/// Sellers with static keys from `(SELLER_URL, JWKS_FILE)` pairs, each
/// seller once.
fn seller_map(entries: Vec<(String, String)>) -> Result<BTreeMap<String, PathBuf>, ConfigError> {
    let mut sellers = BTreeMap::new();
    for (seller, path) in entries {
        if sellers.contains_key(&seller) {
            return Err(ConfigError::SellerGivenTwice { seller });
        }
        sellers.insert(seller, PathBuf::from(path));
    }
    Ok(sellers)
}

/// The error of a variable whose value does not parse.
fn invalid(var: &'static str, value: &str, reason: &'static str) -> ConfigError {
    ConfigError::Env {
        var,
        value: value.to_owned(),
        reason,
    }
}

/// A comma-separated list, as the flags' `value_delimiter` splits it.
fn list(value: &str) -> Vec<String> {
    value.split(',').map(str::to_owned).collect()
}

fn url(var: &'static str, value: &str) -> Result<url::Url, ConfigError> {
    url::Url::parse(value).map_err(|_| invalid(var, value, "an absolute URL"))
}

fn path(var: &impl Fn(&str) -> Option<OsString>, name: &'static str) -> Result<Option<PathBuf>, ConfigError> {
    match var(name) {
        Some(value) if value.is_empty() => Err(invalid(name, "", "a file path")),
        Some(value) => Ok(Some(PathBuf::from(value))),
        None => Ok(None),
    }
}

/// A switch: `true` or `false`, as the flags take it from the environment.
fn switch(
    text: &impl Fn(&'static str) -> Result<Option<String>, ConfigError>,
    name: &'static str,
) -> Result<bool, ConfigError> {
    match text(name)?.as_deref() {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(invalid(name, other, "true or false")),
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
}
