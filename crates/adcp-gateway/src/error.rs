//! The gateway's errors: one enum per stage, each variant one cause.
//!
//! Messages name a setting by its `adcp-sig gateway` flag (`--claim-lease`;
//! the TOML key is the same with `_`, the environment variable
//! `ADCP_GATEWAY_` followed by it in upper case), so that the binary prints
//! them as they are. They never contain a secret: store URLs are printed
//! without their credentials, HMAC secrets and Bearer tokens never.

use std::path::PathBuf;
use std::time::Duration;

/// Settings that cannot work, or a file they name that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The TOML file could not be read.
    #[error("--config {}: {source}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The TOML is malformed, has an unknown key or a value of the wrong
    /// type.
    #[error("--config {}: {source}", path.as_deref().unwrap_or(std::path::Path::new("<string>")).display())]
    Toml {
        /// The file, when it came from one.
        path: Option<PathBuf>,
        /// The parser's error (line, column and key).
        #[source]
        source: toml::de::Error,
    },
    /// An `ADCP_GATEWAY_*` variable holds a value that is not one of its
    /// setting.
    #[error("{var}={value:?}: {reason}")]
    Env {
        /// The variable.
        var: &'static str,
        /// Its value (never that of a secret's variable).
        value: String,
        /// What was expected.
        reason: &'static str,
    },
    /// No upstream URL.
    #[error("--upstream URL is required (or ADCP_GATEWAY_UPSTREAM, or `upstream` in --config)")]
    UpstreamMissing,
    /// Both a static JWKS and discovered sellers.
    #[error("give --jwks FILE or --agent URL, not both")]
    JwksAndAgents,
    /// Both a static JWKS and sellers with their own JWKS.
    #[error("give --jwks FILE or --seller SELLER_URL=JWKS_FILE, not both")]
    JwksAndSellers,
    /// One seller both discovered and given static keys.
    #[error("{seller}: both --agent and --seller; give one key source per seller")]
    AgentAndSeller {
        /// The seller's agent URL.
        seller: String,
    },
    /// No key source at all.
    #[error("give --jwks FILE or --agent SELLER_URL (or an HMAC secret for a legacy registration)")]
    NoKeys,
    /// A `SELLER_URL=…` entry (flag or variable) without its `=` or one
    /// of its sides.
    #[error("{setting} {entry:?}: expected SELLER_URL={expected}")]
    MalformedEntry {
        /// The setting, as its flag (`--seller`, `--revocation-list`,
        /// `--pin-jwks-uri`).
        setting: &'static str,
        /// The entry as given.
        entry: String,
        /// What follows the `=` (`JWKS_FILE`, `LIST_URL`, `JWKS_URL`).
        expected: &'static str,
    },
    /// One seller given twice in `--seller`.
    #[error("--seller {seller}: given twice")]
    SellerGivenTwice {
        /// The seller's agent URL.
        seller: String,
    },
    /// A revocation list or `jwks_uri` pin given for a static key source.
    #[error("{setting} applies to sellers discovered with --agent, not to --jwks or HMAC-only")]
    NeedsDiscovery {
        /// `--revocation-list`, `--pin-jwks-uri` or `--agent-brand-json`.
        setting: &'static str,
    },
    /// A revocation list or `jwks_uri` pin for a seller that is not one
    /// of the discovered ones.
    #[error("{setting} {seller}={url}: {seller:?} is not one of the --agent URLs (compared byte for byte)")]
    NotAnAgent {
        /// `--revocation-list`, `--pin-jwks-uri` or `--agent-brand-json`.
        setting: &'static str,
        /// The seller named.
        seller: String,
        /// The URL given for it.
        url: String,
    },
    /// A revocation list or `jwks_uri` pin URL that key discovery's SSRF
    /// guard refuses (not `https`, userinfo, a reserved address).
    #[error("{setting} {seller}={url}: {source}")]
    UnsafeUrl {
        /// `--revocation-list`, `--pin-jwks-uri` or `--agent-brand-json`.
        setting: &'static str,
        /// The seller.
        seller: String,
        /// The URL refused.
        url: String,
        /// Why.
        #[source]
        source: adcp_jwks::SsrfError,
    },
    /// Two revocation lists, or two pins, for one seller.
    #[error("{setting}: {seller:?} is given more than one {what}")]
    GivenTwice {
        /// `--revocation-list`, `--pin-jwks-uri` or `--agent-brand-json`.
        setting: &'static str,
        /// The seller.
        seller: String,
        /// `list` or `jwks_uri`.
        what: &'static str,
    },
    /// The HMAC secret file could not be read.
    #[error("--hmac-secret-file {}: {source}", path.display())]
    HmacSecretFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The HMAC secret is empty.
    #[error("the HMAC secret is empty")]
    EmptyHmacSecret,
    /// An HMAC secret whose sender identity cannot be derived.
    #[error("an HMAC registration needs --hmac-sender URL (the seller's agent URL)")]
    HmacSenderMissing,
    /// The HMAC secret is refused (too short, one repeated byte).
    #[error("HMAC secret: {0}")]
    HmacSecret(#[source] adcp_verify::legacy::ConfigError),
    /// A duration setting of zero.
    #[error("--{setting} must be at least 1 second")]
    ZeroDuration {
        /// The setting, as its flag without `--` (`store-timeout`).
        setting: &'static str,
    },
    /// The claim lease ends before the upstream's answer may arrive, so
    /// another gateway (or a retry) could forward the event again.
    #[error(
        "--claim-lease ({} s) must be longer than --upstream-timeout ({} s)",
        claim_lease.as_secs(),
        upstream_timeout.as_secs()
    )]
    ClaimLeaseTooShort {
        /// The claim lease.
        claim_lease: Duration,
        /// The upstream timeout.
        upstream_timeout: Duration,
    },
    /// The dedup window is under 24 h (never conformant) or over 7 days.
    #[error(
        "--dedup-window must be between {} s (24 h) and {} s (7 days), not {} s",
        crate::config::MIN_DEDUP_WINDOW.as_secs(),
        crate::config::MAX_DEDUP_WINDOW.as_secs(),
        window.as_secs()
    )]
    DedupWindow {
        /// The window given.
        window: Duration,
    },
    /// A concurrency limit of zero.
    #[error("--max-concurrency must be at least 1")]
    ZeroConcurrency,
    /// A concurrency limit above what the gateway can count.
    #[error("--max-concurrency must be between 1 and {max}")]
    Concurrency {
        /// The largest limit.
        max: usize,
    },
    /// A request header or body timeout of zero.
    #[error("--header-timeout and --body-timeout must be at least 1 s")]
    ZeroRequestTimeout,
    /// The store URL is not one the store understands.
    #[error("--store {store}: {source}")]
    Store {
        /// The URL, credentials replaced by `***`.
        store: String,
        /// Why.
        #[source]
        source: adcp_store::ConfigError,
    },
    /// A JWKS file (`--jwks`, `--seller`) could not be read.
    #[error("{setting} {}: {source}", path.display())]
    JwksFile {
        /// `--jwks` or `--seller`.
        setting: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A JWKS file is not JSON.
    #[error("{setting} {}: {source}", path.display())]
    JwksJson {
        /// `--jwks` or `--seller`.
        setting: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A JWKS file is JSON without a `keys` array.
    #[error("{setting} {}: not a JWKS (no \"keys\" array)", path.display())]
    NotAJwks {
        /// `--jwks` or `--seller`.
        setting: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// The subscriber registrations file cannot be used.
    #[error(transparent)]
    Registrations(#[from] RegistrationsError),
    /// `--accept-host` without `--public-url` or TLS.
    #[error("--accept-host needs --public-url or --tls-cert")]
    AcceptHostWithoutPublicUrl,
    /// One of `--tls-cert` and `--tls-key` without the other.
    #[error("give both --tls-cert FILE and --tls-key FILE, or neither")]
    TlsFilesIncomplete,
    /// The TLS certificate chain cannot be used.
    #[error("--tls-cert {}: {reason}", path.display())]
    TlsCert {
        /// The file.
        path: PathBuf,
        /// Why (unreadable, no certificate, not X.509).
        reason: String,
    },
    /// The TLS private key cannot be used.
    #[error("--tls-key {}: {reason}", path.display())]
    TlsKey {
        /// The file.
        path: PathBuf,
        /// Why (unreadable, no key, unsupported, not the certificate's).
        reason: String,
    },
    /// The TLS certificate names no DNS name and no IP address, and neither
    /// a public URL nor an accept-host says which `Host` to accept: no
    /// request could ever be accepted.
    #[error(
        "--tls-cert {}: the certificate names no DNS name or IP address (subjectAltName), so no request \
         could be accepted; add --public-url URL (the URL sellers were given) or --accept-host HOST[:PORT] \
         (each name or address they reach the gateway by), or use a certificate that names them",
        path.display()
    )]
    TlsNoNames {
        /// The certificate file.
        path: PathBuf,
    },
    /// The TLS crypto provider cannot build a server configuration.
    #[error("tls: {0}")]
    TlsProvider(String),
    /// A reload was asked of a gateway built from parts
    /// ([`Gateway::new`](crate::Gateway::new)), which has no configuration
    /// to read its keys and policies from again.
    #[error("this gateway was built from parts (Gateway::new), not from a configuration: nothing to reload")]
    NotReloadable,
    /// A TLS reload was asked of a gateway serving plain HTTP.
    #[error("no --tls-cert to reload: the gateway serves plain HTTP")]
    NoTls,
    /// `--profile` is neither `webhook` nor `request`.
    #[error("--profile must be webhook or request, not {value:?}")]
    Profile {
        /// The value given.
        value: String,
    },
    /// `--binding` is not one of its values.
    #[error("--binding must be jsonrpc, http-json, operation-path or infer, not {value:?}")]
    Binding {
        /// The value given.
        value: String,
    },
    /// `--request-profile` is neither `3.2` nor `legacy`.
    #[error("--request-profile must be 3.2 or legacy, not {value:?}")]
    RequestProfile {
        /// The value given.
        value: String,
    },
    /// Request mode without the seller's capabilities.
    #[error("--profile request needs --capabilities FILE (the seller's get_adcp_capabilities response or its request_signing object)")]
    CapabilitiesMissing,
    /// A request-mode setting given in webhook mode.
    #[error("{setting} is a request-mode setting; give --profile request or remove it")]
    RequestModeOnly {
        /// The setting's flag.
        setting: &'static str,
    },
    /// A webhook-mode setting given in request mode.
    #[error("{setting} is a webhook-mode setting, not used with --profile request")]
    WebhookModeOnly {
        /// The setting's flag.
        setting: &'static str,
    },
    /// The capabilities file could not be read.
    #[error("--capabilities {}: {source}", path.display())]
    CapabilitiesFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The capabilities file is not JSON.
    #[error("--capabilities {}: {source}", path.display())]
    CapabilitiesJson {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The capabilities file has no usable `request_signing` block.
    #[error("--capabilities {}: {source}", path.display())]
    Capability {
        /// The file.
        path: PathBuf,
        /// What is wrong with the block.
        #[source]
        source: adcp_verify::request_policy::CapabilityError,
    },
    /// `--credential-header` is not a valid header name.
    #[error("--credential-header {name:?} is not a valid HTTP header name")]
    CredentialHeader {
        /// The value given.
        name: String,
    },
    /// The request verifier cannot be built from the options (the
    /// capability's `covers_content_digest` does not match the profile, …).
    #[error("request mode: {source}{hint}", source = .0, hint = profile_hint(.0))]
    RequestVerifier(#[source] adcp_request::BuildError),
    /// A per-keyid replay cap of zero (every signature would be refused).
    #[error("--replay-cap-per-keyid must be at least 1")]
    ZeroReplayCap,
    /// An empty `--revoked-kid`.
    #[error("--revoked-kid must not be empty")]
    EmptyRevokedKid,
    /// The public URL is not `http(s)`.
    #[error("--public-url must be http(s), not {scheme:?}")]
    PublicUrlScheme {
        /// Its scheme.
        scheme: String,
    },
    /// The public URL has no host.
    #[error("--public-url has no host")]
    PublicUrlHost,
    /// The public URL's authority or an `--accept-host` does not
    /// canonicalize.
    #[error("{setting} {authority:?}: not a valid host[:port]")]
    Authority {
        /// `--public-url` or `--accept-host`.
        setting: &'static str,
        /// The authority.
        authority: String,
    },
    /// The upstream URL is not `http(s)`.
    #[error("upstream must be an http(s) URL, not {scheme:?}")]
    UpstreamScheme {
        /// Its scheme.
        scheme: String,
    },
    /// The new-keyid admission thresholds (`ADCP_ADMISSION_*`) are
    /// malformed.
    #[error("admission thresholds: {0}")]
    AdmissionThresholds(#[source] adcp_verify::admission::ThresholdError),
    /// The receiver refuses the settings.
    #[error(transparent)]
    Receiver(#[from] adcp_webhook::ReceiverError),
    /// `batch_verify`: the signature batcher's threads could not be
    /// started.
    #[error("batch_verify: cannot start the signature batcher: {0}")]
    SignatureBatcher(#[source] std::io::Error),
    /// Key discovery cannot be set up for a seller.
    #[error("--agent {agent}: {source}")]
    Discovery {
        /// The seller's agent URL.
        agent: String,
        /// Why.
        #[source]
        source: adcp_jwks::DiscoveryError,
    },
    /// The client that asks a buyer agent for its `get_adcp_capabilities`
    /// (request mode's key discovery) cannot be built.
    #[error("--agent {agent}: capabilities client: {source}")]
    CapabilitiesClient {
        /// The buyer's agent URL.
        agent: String,
        /// Why.
        #[source]
        source: adcp_request::ClientError,
    },
    /// The test-only CA certificate could not be read.
    #[error("{}: {source}", path.display())]
    TestCa {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The subscriber registrations file (`--subscriptions`) cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationsError {
    /// The file could not be read.
    #[error("--subscriptions {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a JSON array of entries with exactly the known
    /// members.
    #[error("--subscriptions {}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// One entry cannot be used.
    #[error("--subscriptions {}: entry {index} ({url}): {problem}", path.display())]
    Entry {
        /// The file.
        path: PathBuf,
        /// The entry's index in the array.
        index: usize,
        /// The entry's `url`.
        url: String,
        /// What is wrong with it.
        #[source]
        problem: EntryProblem,
    },
}

/// What is wrong with one entry of the registrations file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntryProblem {
    /// Neither or both of `account_id` and `"scope": "agent"`.
    #[error("give either account_id or \"scope\": \"agent\"")]
    Scope,
    /// `delivery_auth` is neither `rfc9421` nor a legacy mode with a
    /// fingerprint.
    #[error(
        "delivery_auth must be {{\"mode\": \"rfc9421\"}} or a Bearer / HMAC-SHA256 mode with a 64-hex-digit credential_fingerprint"
    )]
    DeliveryAuth,
    /// A `credential_file` for an RFC 9421 registration.
    #[error("credential_file applies to legacy delivery_auth modes only")]
    CredentialFileNotLegacy,
    /// A legacy registration without its `credential_file`.
    #[error("a legacy delivery_auth mode needs credential_file")]
    CredentialFileMissing,
    /// The credential file could not be read.
    #[error("credential_file: {}: {source}", path.display())]
    CredentialRead {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The credential is not UTF-8.
    #[error("credential_file: {} is not UTF-8", path.display())]
    CredentialNotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// The credential file is empty.
    #[error("credential_file: {} is empty", path.display())]
    CredentialEmpty {
        /// The file.
        path: PathBuf,
    },
    /// The credential's SHA-256 is not the registration's fingerprint.
    #[error("the credential's SHA-256 does not match delivery_auth.credential_fingerprint")]
    FingerprintMismatch,
    /// The credential is refused (too short, one repeated byte, not
    /// visible ASCII).
    #[error(transparent)]
    Credential(adcp_verify::legacy::ConfigError),
    /// The registration is refused (URL invalid or registered twice).
    #[error(transparent)]
    Registration(adcp_webhook::RegistrationError),
    /// The URL does not canonicalize.
    #[error(transparent)]
    Url(adcp_canon::CanonError),
}

/// The gateway could not be set up or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The settings cannot work.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store could not be opened (or migrated).
    #[error("--store {store}: {source}")]
    Store {
        /// The store URL, credentials replaced by `***`.
        store: String,
        /// Why.
        #[source]
        source: adcp_store::ConfigError,
    },
    /// The TLS configuration of the upstream's HTTP client could not be
    /// built.
    #[error("tls: {0}")]
    Tls(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The upstream's HTTP client could not be built.
    #[error("http client: {0}")]
    HttpClient(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The listen address could not be bound.
    #[error("--listen {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server failed (its accept loop or task).
    #[error("server: {0}")]
    Serve(#[source] std::io::Error),
}

/// What to change when the capabilities' `covers_content_digest` does not
/// fit the 3.2 request profile.
fn profile_hint(e: &adcp_request::BuildError) -> &'static str {
    match e {
        adcp_request::BuildError::Capability(adcp_verify::request_policy::CapabilityError::ProfileMismatch {
            profile: "request-3.2",
            ..
        }) => {
            " (the 3.2 request profile applies covers_content_digest \"required\" only; an endpoint for \
             3.0/3.1 buyers takes --request-profile legacy)"
        }
        _ => "",
    }
}
