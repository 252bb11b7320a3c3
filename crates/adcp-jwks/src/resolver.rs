//! [`HttpsKeyResolver`]: the webhook discovery chain with caching,
//! kid-miss refetch, and revocation polling.

use crate::documents::{canonical_origin, DocumentError, RevocationList, MAX_REVOCATION_LIST_BYTES};
use crate::fetch::{FetchConfig, FetchError, Fetcher};
use crate::identity::{
    resolve_brand_json_url, resolve_well_known, AgentResolution, CapabilitiesSource, ChainOptions, PublisherPin,
    SigningSurface,
};
use crate::trace::DiscoveryTrace;
use adcp_sigbase::jwk::Jwks;
use adcp_sigbase::{Clock, SystemClock};
use adcp_verify::ErrorCode;
use adcp_verify::{KeyResolver, ResolveError, ResolvedKey, RevocationStatus};
use async_trait::async_trait;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};
use url::Url;

/// Cooldown between two kid-miss refetches of one `jwks_uri` (spec: 30 s).
pub const REFETCH_COOLDOWN_SECS: i64 = 30;
/// Lower bound of the JWKS TTL and revocation polling interval (1 min).
pub const POLL_FLOOR_SECS: i64 = 60;
/// Upper bound of the JWKS TTL and revocation polling interval (30 min).
pub const POLL_CEILING_SECS: i64 = 30 * 60;
/// Negative results (fetch failures) are cached at most this long (60 s).
pub const NEGATIVE_TTL_SECS: i64 = 60;
/// Revocation grace multiplier: stale after `next_update + 4 × interval`.
pub const GRACE_INTERVALS: i64 = 4;

/// A discovery failure, typed, with the spec code it maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryError {
    /// A URL in the chain failed the SSRF guard (`*_jwks_untrusted`).
    Untrusted(String),
    /// A fetch failed transiently (`*_jwks_unavailable`).
    Unavailable(String),
    /// brand.json or the JWKS is malformed (`*_jwks_unavailable`: the
    /// operator can fix it, so it is not cached for long).
    Malformed(String),
    /// No `agents[]` entry byte-equals the agent URL
    /// (`*_agent_not_in_brand_json`).
    AgentNotInBrandJson,
    /// Several `agents[]` entries byte-equal it (`*_brand_json_ambiguous`).
    BrandJsonAmbiguous,
    /// brand.json redirected more than once (`*_jwks_untrusted`).
    RedirectChain,
    /// `brand_json_url` chain, step 1: the capabilities could not be
    /// obtained (`*_capabilities_unreachable`, transient).
    CapabilitiesUnreachable(String),
    /// Step 1 answered, but not with a capabilities object
    /// (`*_capabilities_unreachable`: the spec has no separate code).
    CapabilitiesMalformed(String),
    /// Step 2: `identity.brand_json_url` absent or not HTTPS
    /// (`*_brand_json_url_missing`).
    BrandJsonUrlMissing,
    /// Step 4: the brand.json fetch failed (`*_brand_json_unreachable`,
    /// transient).
    BrandJsonUnreachable(String),
    /// Step 4: brand.json failed strict parsing, or is over its cap
    /// (`*_brand_json_malformed`).
    BrandJsonMalformed(String),
    /// Step 3: the agent's eTLD+1 differs from the brand.json URL's and
    /// `authorized_operators[]` does not delegate it
    /// (`*_brand_origin_mismatch`).
    BrandOriginMismatch {
        /// eTLD+1 of the agent URL.
        agent_etld1: String,
        /// eTLD+1 of the `brand_json_url`.
        brand_json_url_etld1: String,
    },
    /// Step 7: the resolved `jwks_uri` host differs from the declared
    /// `identity.key_origins.{purpose}` (`*_key_origin_mismatch`).
    KeyOriginMismatch {
        /// The purpose (`request_signing`, `webhook_signing`).
        purpose: String,
        /// The declared origin, canonicalized.
        expected_origin: String,
        /// The host of the resolved `jwks_uri`, canonicalized.
        actual_origin: String,
    },
    /// Step 7: signing declared without `identity.key_origins.{purpose}`
    /// (`*_key_origin_missing`).
    KeyOriginMissing {
        /// The purpose.
        purpose: String,
        /// The capabilities member that declared the signing posture.
        posture: String,
    },
}

impl DiscoveryError {
    /// The spec error code under `prefix` (`"webhook"` or `"request"`).
    pub fn code(&self, prefix: &str) -> String {
        format!("{prefix}_signature_{}", self.code_suffix())
    }

    /// The code without its profile prefix (`jwks_untrusted`,
    /// `brand_origin_mismatch`, ...).
    pub fn code_suffix(&self) -> &'static str {
        match self {
            DiscoveryError::Untrusted(_) | DiscoveryError::RedirectChain => "jwks_untrusted",
            DiscoveryError::Unavailable(_) | DiscoveryError::Malformed(_) => "jwks_unavailable",
            DiscoveryError::AgentNotInBrandJson => "agent_not_in_brand_json",
            DiscoveryError::BrandJsonAmbiguous => "brand_json_ambiguous",
            DiscoveryError::CapabilitiesUnreachable(_) | DiscoveryError::CapabilitiesMalformed(_) => {
                "capabilities_unreachable"
            }
            DiscoveryError::BrandJsonUrlMissing => "brand_json_url_missing",
            DiscoveryError::BrandJsonUnreachable(_) => "brand_json_unreachable",
            DiscoveryError::BrandJsonMalformed(_) => "brand_json_malformed",
            DiscoveryError::BrandOriginMismatch { .. } => "brand_origin_mismatch",
            DiscoveryError::KeyOriginMismatch { .. } => "key_origin_mismatch",
            DiscoveryError::KeyOriginMissing { .. } => "key_origin_missing",
        }
    }

    /// Whether retrying later may succeed (network failures, documents an
    /// operator can fix); permanent refusals of the chain are not.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            DiscoveryError::Unavailable(_)
                | DiscoveryError::Malformed(_)
                | DiscoveryError::CapabilitiesUnreachable(_)
                | DiscoveryError::CapabilitiesMalformed(_)
                | DiscoveryError::BrandJsonUnreachable(_)
                | DiscoveryError::BrandJsonMalformed(_)
        )
    }

    /// The verifier's taxonomy code for this failure: the precise
    /// `brand_json_url`-chain code where the spec defines one, else the
    /// generic key-source code (`JwksUnavailable` / `JwksUntrusted`).
    pub fn error_code(&self) -> ErrorCode {
        match self {
            DiscoveryError::Untrusted(_) | DiscoveryError::RedirectChain => ErrorCode::JwksUntrusted,
            DiscoveryError::Unavailable(_) | DiscoveryError::Malformed(_) => ErrorCode::JwksUnavailable,
            DiscoveryError::AgentNotInBrandJson => ErrorCode::AgentNotInBrandJson,
            DiscoveryError::BrandJsonAmbiguous => ErrorCode::BrandJsonAmbiguous,
            DiscoveryError::CapabilitiesUnreachable(_) | DiscoveryError::CapabilitiesMalformed(_) => {
                ErrorCode::CapabilitiesUnreachable
            }
            DiscoveryError::BrandJsonUrlMissing => ErrorCode::BrandJsonUrlMissing,
            DiscoveryError::BrandJsonUnreachable(_) => ErrorCode::BrandJsonUnreachable,
            DiscoveryError::BrandJsonMalformed(_) => ErrorCode::BrandJsonMalformed,
            DiscoveryError::BrandOriginMismatch { .. } => ErrorCode::BrandOriginMismatch,
            DiscoveryError::KeyOriginMismatch { .. } => ErrorCode::KeyOriginMismatch,
            DiscoveryError::KeyOriginMissing { .. } => ErrorCode::KeyOriginMissing,
        }
    }

    /// The verifier-facing [`ResolveError`]. JWKS fetch failures stay
    /// `Unavailable` / `Untrusted` (`*_jwks_unavailable` /
    /// `*_jwks_untrusted`); every `brand_json_url`-chain failure is
    /// [`ResolveError::Discovery`] with its precise code
    /// ([`error_code`](Self::error_code)), which a request-profile verifier
    /// reports as is (`request_signature_brand_origin_mismatch`, ...) and
    /// a webhook-profile verifier as the generic `webhook_signature_jwks_*`
    /// code of the same retry class (the spec defines the chain's codes
    /// for the request profile only; see `adcp_verify::ErrorCode`).
    ///
    /// The sender-facing retry class follows the spec's retry column
    /// ([`ErrorCode::is_retryable`]); [`is_transient`](Self::is_transient)
    /// stays the resolver's caching rule (a malformed brand.json is
    /// negative-cached briefly because the operator can fix it, yet the
    /// spec says the verifier must not retry it).
    pub fn to_resolve_error(&self) -> ResolveError {
        let detail = format!("{self} ({})", self.code_suffix());
        match self.error_code() {
            ErrorCode::JwksUnavailable => ResolveError::Unavailable(detail),
            ErrorCode::JwksUntrusted => ResolveError::Untrusted(detail),
            code => ResolveError::discovery(code, detail),
        }
    }
}

impl fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoveryError::Untrusted(d) => write!(f, "key source untrusted: {d}"),
            DiscoveryError::Unavailable(d) => write!(f, "key source unavailable: {d}"),
            DiscoveryError::Malformed(d) => write!(f, "key source malformed: {d}"),
            DiscoveryError::AgentNotInBrandJson => f.write_str("agent URL not in brand.json agents[]"),
            DiscoveryError::BrandJsonAmbiguous => f.write_str("agent URL matches several brand.json agents[]"),
            DiscoveryError::RedirectChain => f.write_str("brand.json redirect chain refused"),
            DiscoveryError::CapabilitiesUnreachable(d) => write!(f, "capabilities unreachable: {d}"),
            DiscoveryError::CapabilitiesMalformed(d) => write!(f, "capabilities malformed: {d}"),
            DiscoveryError::BrandJsonUrlMissing => f.write_str("identity.brand_json_url absent or not https"),
            DiscoveryError::BrandJsonUnreachable(d) => write!(f, "brand.json unreachable: {d}"),
            DiscoveryError::BrandJsonMalformed(d) => write!(f, "brand.json malformed: {d}"),
            DiscoveryError::BrandOriginMismatch {
                agent_etld1,
                brand_json_url_etld1,
            } => write!(
                f,
                "agent eTLD+1 {agent_etld1:?} differs from brand_json_url eTLD+1 {brand_json_url_etld1:?} and is not an authorized operator"
            ),
            DiscoveryError::KeyOriginMismatch {
                purpose,
                expected_origin,
                actual_origin,
            } => write!(
                f,
                "key_origins.{purpose} is {expected_origin:?} but jwks_uri is on {actual_origin:?}"
            ),
            DiscoveryError::KeyOriginMissing { purpose, posture } => {
                write!(f, "{posture} declares signing but key_origins.{purpose} is absent")
            }
        }
    }
}

impl std::error::Error for DiscoveryError {}

fn from_fetch(what: &str, e: FetchError) -> DiscoveryError {
    match e {
        FetchError::Untrusted(s) => DiscoveryError::Untrusted(format!("{what}: {s}")),
        other => DiscoveryError::Unavailable(format!("{what}: {other}")),
    }
}

fn from_doc(what: &str, e: DocumentError) -> DiscoveryError {
    DiscoveryError::Malformed(format!("{what}: {e}"))
}

/// The resolver's clock: any [`Clock`] (Unix seconds), the one signers and
/// verifiers take; a closure `|| unix_seconds` is one.
pub type UnixClock = Arc<dyn Clock>;

/// Builder for [`HttpsKeyResolver`].
pub struct HttpsKeyResolverBuilder {
    agent_url: String,
    brand_json_url: Option<String>,
    capabilities: Option<Arc<dyn CapabilitiesSource>>,
    options: ChainOptions,
    revocation_list_url: Option<String>,
    revocation_list_issuer: Option<String>,
    allow_unsigned_revocation_list: bool,
    jwks_ttl_secs: i64,
    fetch: FetchConfig,
    clock: UnixClock,
    pinned_jwks_uri: Option<String>,
    adopt_jwks_uri_changes: bool,
}

impl HttpsKeyResolverBuilder {
    /// The brand.json location, when it is not `/.well-known/brand.json` at
    /// the agent URL's host (the operator domain is a separate host).
    pub fn brand_json_url(mut self, url: impl Into<String>) -> Self {
        self.brand_json_url = Some(url.into());
        self
    }

    /// Use the 8-step `identity.brand_json_url` chain (request signing, or
    /// any agent whose capabilities carry `identity.brand_json_url`)
    /// instead of the webhook chain; `source` supplies the
    /// `get_adcp_capabilities` response. See
    /// [`crate::identity::resolve_brand_json_url`].
    pub fn capabilities(mut self, source: Arc<dyn CapabilitiesSource>) -> Self {
        self.capabilities = Some(source);
        self
    }

    /// The surface the keys verify (default [`SigningSurface::Webhook`]);
    /// decides which `identity.key_origins` entries are checked and whether
    /// a publisher pin applies.
    pub fn surface(mut self, surface: SigningSurface) -> Self {
        self.options.surface = surface;
        self
    }

    /// A publisher's adagents.json `signing_keys[]` pin for this agent.
    /// Set it **only** for sell-side webhook delivery: it then replaces the
    /// `jwks_uri` as the key source (publisher > operator) and any `keyid`
    /// outside it is unknown. Ignored on the request surface.
    pub fn publisher_pin(mut self, pin: PublisherPin) -> Self {
        self.options.publisher_pin = Some(Arc::new(pin));
        self
    }

    /// The operator's revocation list. Without one, every key reports
    /// [`RevocationStatus::Current`] — acceptable only where revocation is
    /// handled elsewhere.
    pub fn revocation_list_url(mut self, url: impl Into<String>) -> Self {
        self.revocation_list_url = Some(url.into());
        self
    }

    /// Accept a revocation list that is not a JWS (off by default: the spec
    /// requires the list to be signed by a key of the same JWKS). Its
    /// `issuer` is checked all the same.
    pub fn allow_unsigned_revocation_list(mut self, allow: bool) -> Self {
        self.allow_unsigned_revocation_list = allow;
        self
    }

    /// The origin the revocation list governs, which its `issuer` must
    /// equal (compared in canonical form). Default: the origin of the
    /// agent URL, whose keys the list covers. Set it when the operator
    /// publishes the list under another origin's authority (e.g. its
    /// brand.json origin).
    pub fn revocation_list_issuer(mut self, origin: impl Into<String>) -> Self {
        self.revocation_list_issuer = Some(origin.into());
        self
    }

    /// The JWKS cache TTL before the revocation bound (default 5 min;
    /// always clamped to `[1 min, 30 min]` and to the revocation polling
    /// interval).
    pub fn jwks_ttl_secs(mut self, secs: i64) -> Self {
        self.jwks_ttl_secs = secs;
        self
    }

    /// Pins the `jwks_uri` this agent's brand.json must resolve to (learned
    /// at integration onboarding). A discovery that yields another
    /// `jwks_uri` is refused as [`DiscoveryError::Untrusted`]
    /// (`*_jwks_untrusted`), the cached snapshot is kept until it expires,
    /// and a `jwks_uri_changed` alarm is logged (target
    /// `adcp_jwks::alarm`). [`adopt_jwks_uri_changes`](Self::adopt_jwks_uri_changes)
    /// does not override a pin. Spec: security.mdx, "Trust anchor and
    /// blast radius".
    pub fn pin_jwks_uri(mut self, url: impl Into<String>) -> Self {
        self.pinned_jwks_uri = Some(url.into());
        self
    }

    /// Without a pin, the first `jwks_uri` discovered is remembered and a
    /// later, different one is refused like a pinned mismatch (default).
    /// `true` adopts the new URL instead (the `jwks_uri_changed` alarm is
    /// still logged and counted).
    pub fn adopt_jwks_uri_changes(mut self, adopt: bool) -> Self {
        self.adopt_jwks_uri_changes = adopt;
        self
    }

    /// Fetcher settings (SSRF policy, resolver, trust roots, deadlines).
    pub fn fetch_config(mut self, config: FetchConfig) -> Self {
        self.fetch = config;
        self
    }

    /// The clock (Unix seconds) used for TTLs and cooldowns (default
    /// [`SystemClock`]); pin it as the verifier's.
    pub fn clock(mut self, clock: UnixClock) -> Self {
        self.clock = clock;
        self
    }

    /// Validates the configured URLs and builds the resolver.
    ///
    /// # Errors
    ///
    /// [`DiscoveryError::Untrusted`] when a configured URL fails the SSRF
    /// guard; [`DiscoveryError::Unavailable`] when the client cannot be built.
    pub fn build(self) -> Result<HttpsKeyResolver, DiscoveryError> {
        let fetcher = Fetcher::new(self.fetch).map_err(|e| from_fetch("client", e))?;
        let policy = fetcher.policy().clone();
        let agent = policy
            .check_url(&self.agent_url)
            .map_err(|e| DiscoveryError::Untrusted(format!("agent url: {e}")))?;
        let brand_json_url = match self.brand_json_url {
            Some(u) => policy.check_url(&u),
            None => policy.check_parsed_url(&agent).and_then(|()| {
                agent
                    .join("/.well-known/brand.json")
                    .map_err(|_| crate::ssrf::SsrfError::InvalidUrl)
            }),
        }
        .map_err(|e| DiscoveryError::Untrusted(format!("brand.json url: {e}")))?;
        let revocation_list_url = self
            .revocation_list_url
            .map(|u| policy.check_url(&u))
            .transpose()
            .map_err(|e| DiscoveryError::Untrusted(format!("revocation list url: {e}")))?;
        let revocation_issuer = match &revocation_list_url {
            None => None,
            Some(_) => Some(
                canonical_origin(self.revocation_list_issuer.as_deref().unwrap_or(&self.agent_url))
                    .map_err(|e| DiscoveryError::Untrusted(format!("revocation list issuer: {e}")))?,
            ),
        };
        let pinned_jwks_uri = self
            .pinned_jwks_uri
            .map(|u| policy.check_url(&u))
            .transpose()
            .map_err(|e| DiscoveryError::Untrusted(format!("pinned jwks_uri: {e}")))?;
        Ok(HttpsKeyResolver {
            inner: Arc::new(Inner {
                agent_url: self.agent_url,
                brand_json_url,
                capabilities: self.capabilities,
                options: self.options,
                last_trace: RwLock::new(None),
                revocation_list_url,
                revocation_issuer,
                allow_unsigned: self.allow_unsigned_revocation_list,
                jwks_ttl_secs: self.jwks_ttl_secs,
                fetcher,
                clock: self.clock,
                snapshot: RwLock::new(None),
                refresh: tokio::sync::Mutex::new(RefreshState::default()),
                revocation: tokio::sync::Mutex::new(RevocationState::default()),
                fetches: std::sync::atomic::AtomicU64::new(0),
                pinned_jwks_uri,
                adopt_jwks_uri_changes: self.adopt_jwks_uri_changes,
                jwks_uri_changes: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }
}

/// One JWKS snapshot.
struct Snapshot {
    /// foldhash: cached lookups are the hot path, and keys come from the
    /// seller's own JWKS.
    keys: HashMap<String, Arc<ResolvedKey>, foldhash::quality::RandomState>,
    jwks: Jwks,
    jwks_uri: Option<Url>,
    expires_at: i64,
    generation: u64,
}

#[derive(Default)]
struct RefreshState {
    last_miss_refetch: Option<i64>,
    negative: Option<(i64, DiscoveryError)>,
    generation: u64,
    /// The first `jwks_uri` discovered (or the last adopted one).
    learned_jwks_uri: Option<Url>,
}

#[derive(Default)]
struct RevocationState {
    list: Option<RevocationList>,
    fetched_at: i64,
    interval: i64,
    last_failure: Option<i64>,
}

struct Inner {
    agent_url: String,
    brand_json_url: Url,
    capabilities: Option<Arc<dyn CapabilitiesSource>>,
    options: ChainOptions,
    last_trace: RwLock<Option<(DiscoveryTrace, Option<String>)>>,
    revocation_list_url: Option<Url>,
    /// The canonical origin the list's `issuer` must equal (set with the
    /// list URL).
    revocation_issuer: Option<String>,
    allow_unsigned: bool,
    jwks_ttl_secs: i64,
    fetcher: Fetcher,
    clock: UnixClock,
    snapshot: RwLock<Option<Arc<Snapshot>>>,
    refresh: tokio::sync::Mutex<RefreshState>,
    revocation: tokio::sync::Mutex<RevocationState>,
    fetches: std::sync::atomic::AtomicU64,
    pinned_jwks_uri: Option<Url>,
    adopt_jwks_uri_changes: bool,
    jwks_uri_changes: std::sync::atomic::AtomicU64,
}

/// A [`KeyResolver`] for one seller agent, over HTTPS: agent URL →
/// brand.json (one `authoritative_location` / `house` redirect at most) →
/// the `agents[]` entry whose `url` byte-equals the agent URL → its
/// `jwks_uri` (default `/.well-known/jwks.json` at the agent's origin).
///
/// - A cached key costs one `RwLock` read and one hash lookup.
/// - On a kid miss the JWKS is refetched immediately, then at most once per
///   [`REFETCH_COOLDOWN_SECS`]; concurrent misses wait for one fetch.
/// - The snapshot expires after the JWKS TTL, itself bounded by the
///   revocation polling interval; a failed chain is remembered for at most
///   [`NEGATIVE_TTL_SECS`].
/// - The revocation list is polled on `next_update` (clamped to
///   `[1 min, 30 min]`); without a refresh by `next_update + 4 × interval`
///   the status is [`RevocationStatus::Stale`].
#[derive(Clone)]
pub struct HttpsKeyResolver {
    inner: Arc<Inner>,
}

impl fmt::Debug for HttpsKeyResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpsKeyResolver")
            .field("agent_url", &self.inner.agent_url)
            .field("brand_json_url", &self.inner.brand_json_url.as_str())
            .finish_non_exhaustive()
    }
}

impl HttpsKeyResolver {
    /// Starts a builder for the seller agent `agent_url` (used byte-for-byte
    /// to match `agents[].url`).
    pub fn builder(agent_url: impl Into<String>) -> HttpsKeyResolverBuilder {
        HttpsKeyResolverBuilder {
            agent_url: agent_url.into(),
            brand_json_url: None,
            capabilities: None,
            options: ChainOptions::default(),
            revocation_list_url: None,
            revocation_list_issuer: None,
            allow_unsigned_revocation_list: false,
            jwks_ttl_secs: 5 * 60,
            fetch: FetchConfig::default(),
            clock: Arc::new(SystemClock),
            pinned_jwks_uri: None,
            adopt_jwks_uri_changes: false,
        }
    }

    /// The agent URL this resolver serves.
    pub fn agent_url(&self) -> &str {
        &self.inner.agent_url
    }

    /// The `jwks_uri` of the current snapshot, if any.
    pub fn jwks_uri(&self) -> Option<Url> {
        self.current().and_then(|s| s.jwks_uri.clone())
    }

    /// The trace of the last chain run, and the spec code suffix it failed
    /// with (if it failed). Fetch times in it let [`TraceStep::age_secs`]
    /// report how old each cached document is.
    ///
    /// [`TraceStep::age_secs`]: crate::trace::TraceStep::age_secs
    pub fn last_trace(&self) -> Option<(DiscoveryTrace, Option<String>)> {
        self.inner.last_trace.read().ok().and_then(|g| g.clone())
    }

    /// The current JWKS snapshot, if any.
    pub fn jwks(&self) -> Option<Jwks> {
        self.current().map(|s| s.jwks.clone())
    }

    /// How many network operations this resolver has started: discovery
    /// chain runs (brand.json + JWKS) and revocation-list fetches. A cached
    /// resolution adds nothing.
    pub fn fetch_count(&self) -> u64 {
        self.inner.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many discoveries yielded a `jwks_uri` other than the pinned (or
    /// first learned) one: each was alarmed (`jwks_uri_changed`) and, unless
    /// adopted, refused. For metrics and health reports.
    pub fn jwks_uri_changes(&self) -> u64 {
        self.inner.jwks_uri_changes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The pinned `jwks_uri`, if one was configured.
    pub fn pinned_jwks_uri(&self) -> Option<&Url> {
        self.inner.pinned_jwks_uri.as_ref()
    }

    /// Checks a discovered `jwks_uri` against the pin, else against the
    /// first one learned (spec: alarm on changes to the URL itself, and
    /// require operator attention rather than silent adoption).
    fn check_jwks_uri(&self, state: &mut RefreshState, discovered: &Url) -> Result<(), DiscoveryError> {
        let inner = &self.inner;
        if let Some(pinned) = &inner.pinned_jwks_uri {
            if pinned == discovered {
                return Ok(());
            }
            inner
                .jwks_uri_changes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(
                target: "adcp_jwks::alarm",
                alarm = "jwks_uri_changed",
                agent = %inner.agent_url,
                pinned = %pinned,
                discovered = %discovered,
                "brand.json jwks_uri differs from the pinned one: refused, re-anchoring needs operator attention"
            );
            return Err(DiscoveryError::Untrusted(format!(
                "jwks_uri {discovered} differs from the pinned {pinned}"
            )));
        }
        let Some(learned) = &state.learned_jwks_uri else {
            state.learned_jwks_uri = Some(discovered.clone());
            return Ok(());
        };
        if learned == discovered {
            return Ok(());
        }
        inner
            .jwks_uri_changes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let adopted = inner.adopt_jwks_uri_changes;
        tracing::warn!(
            target: "adcp_jwks::alarm",
            alarm = "jwks_uri_changed",
            agent = %inner.agent_url,
            learned = %learned,
            discovered = %discovered,
            adopted,
            "brand.json jwks_uri differs from the one learned first"
        );
        if adopted {
            state.learned_jwks_uri = Some(discovered.clone());
            return Ok(());
        }
        Err(DiscoveryError::Untrusted(format!(
            "jwks_uri {discovered} differs from the one learned first ({learned}); not adopted without operator attention"
        )))
    }

    fn current(&self) -> Option<Arc<Snapshot>> {
        self.inner.snapshot.read().ok().and_then(|g| g.clone())
    }

    async fn get(&self, url: &Url, cap: usize) -> Result<Vec<u8>, FetchError> {
        self.inner.fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.fetcher.get(url, cap).await
    }

    /// Resolves `keyid` with typed errors ([`KeyResolver::resolve`] maps
    /// them to [`ResolveError`]).
    ///
    /// # Errors
    ///
    /// [`DiscoveryError`] when the chain cannot be resolved.
    pub async fn resolve_typed(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, DiscoveryError> {
        match self.cached(keyid) {
            Ok(key) => Ok(Some(key)),
            // The slow path's future (the whole chain, inline) is large:
            // boxing it keeps this future, and so the cached path, small.
            Err(seen) => Box::pin(self.resolve_slow(keyid, seen)).await,
        }
    }

    /// The cached key for `keyid`, without I/O: one clock read, one
    /// `RwLock` read and one hash lookup. `Err` carries the generation of
    /// the fresh snapshot that lacks the kid (`None`: no fresh snapshot).
    fn cached(&self, keyid: &str) -> Result<Arc<ResolvedKey>, Option<u64>> {
        let now = self.inner.clock.now();
        let guard = self.inner.snapshot.read().ok();
        match guard.as_deref().and_then(Option::as_ref) {
            Some(s) if now < s.expires_at => s.keys.get(keyid).map(Arc::clone).ok_or(Some(s.generation)),
            _ => Err(None),
        }
    }

    async fn resolve_slow(&self, keyid: &str, seen: Option<u64>) -> Result<Option<Arc<ResolvedKey>>, DiscoveryError> {
        let mut state = self.inner.refresh.lock().await;
        let now = self.inner.clock.now();
        let snapshot = self.current().filter(|s| now < s.expires_at);
        if let Some(s) = &snapshot {
            if let Some(k) = s.keys.get(keyid) {
                return Ok(Some(Arc::clone(k)));
            }
            if seen != Some(s.generation) {
                // Someone refreshed while we waited: that was our refetch.
                return Ok(None);
            }
            if state
                .last_miss_refetch
                .is_some_and(|t| now.saturating_sub(t) < REFETCH_COOLDOWN_SECS)
            {
                // When the refetch of this cooldown failed, the kid may well
                // be published: answer that failure (retryable), not
                // "unknown kid" (terminal), until the next refetch.
                if let Some((at, err)) = &state.negative {
                    if now.saturating_sub(*at) < REFETCH_COOLDOWN_SECS {
                        return Err(err.clone());
                    }
                }
                return Ok(None);
            }
            state.last_miss_refetch = Some(now);
        } else if let Some((at, err)) = &state.negative {
            if now.saturating_sub(*at) < NEGATIVE_TTL_SECS {
                return Err(err.clone());
            }
        }
        let chain = self.fetch_chain().await.and_then(|resolution| {
            match resolution.jwks_uri() {
                Some(uri) => self.check_jwks_uri(&mut state, uri),
                None => Ok(()),
            }
            .map(|()| resolution)
        });
        match chain {
            Ok(resolution) => {
                state.negative = None;
                state.generation = state.generation.wrapping_add(1);
                let ttl = self.ttl().await;
                let jwks_uri = resolution.jwks_uri().cloned();
                let agent = resolution.agent_entry.url.clone();
                // A kid several entries share becomes a collision marker
                // (refused at step 8), whatever the order; the JWKS and its
                // other kids stay usable. Same for a publisher pin.
                let keys: HashMap<_, _, foldhash::quality::RandomState> =
                    ResolvedKey::from_jwks_json(&resolution.jwks_json, &agent)
                        .into_iter()
                        .map(|key| (key.kid().to_owned(), Arc::new(key)))
                        .collect();
                let found = keys.get(keyid).cloned();
                let snap = Arc::new(Snapshot {
                    keys,
                    jwks: resolution.jwks,
                    jwks_uri,
                    expires_at: now.saturating_add(ttl),
                    generation: state.generation,
                });
                if let Ok(mut g) = self.inner.snapshot.write() {
                    *g = Some(snap);
                }
                Ok(found)
            }
            Err(e) => {
                state.negative = Some((now, e.clone()));
                Err(e)
            }
        }
    }

    /// The JWKS TTL: configured TTL, bounded by the revocation polling
    /// interval, clamped to `[1 min, 30 min]`.
    async fn ttl(&self) -> i64 {
        let mut ttl = self.inner.jwks_ttl_secs;
        if self.inner.revocation_list_url.is_some() {
            let rev = self.inner.revocation.lock().await;
            if rev.list.is_some() {
                ttl = ttl.min(rev.interval);
            }
        }
        ttl.clamp(POLL_FLOOR_SECS, POLL_CEILING_SECS)
    }

    async fn fetch_chain(&self) -> Result<AgentResolution, DiscoveryError> {
        self.inner.fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let now = self.inner.clock.now();
        let inner = &self.inner;
        let result = match &inner.capabilities {
            Some(caps) => {
                resolve_brand_json_url(&inner.fetcher, &inner.agent_url, caps.as_ref(), &inner.options, now).await
            }
            None => {
                resolve_well_known(
                    &inner.fetcher,
                    &inner.agent_url,
                    Some(&inner.brand_json_url),
                    &inner.options,
                    now,
                )
                .await
            }
        };
        let (trace, outcome) = match result {
            Ok(r) => ((r.trace.clone(), None), Ok(r)),
            Err(f) => ((f.trace, Some(f.error.code_suffix().to_owned())), Err(f.error)),
        };
        if let Ok(mut g) = inner.last_trace.write() {
            *g = Some(trace);
        }
        outcome
    }

    /// Revocation status of `kid` at `now` (Unix seconds), polling the list
    /// when due.
    ///
    /// # Errors
    ///
    /// None today: fetch failures turn into [`RevocationStatus::Stale`] once
    /// the grace has passed (fail closed), and the last good list is used
    /// until then.
    pub async fn revocation_status_typed(&self, kid: &str, now: i64) -> Result<RevocationStatus, DiscoveryError> {
        let Some(url) = &self.inner.revocation_list_url else {
            return Ok(RevocationStatus::Current);
        };
        let mut rev = self.inner.revocation.lock().await;
        let due = match &rev.list {
            None => true,
            Some(_) => now >= rev.fetched_at.saturating_add(rev.interval),
        };
        let backing_off = rev
            .last_failure
            .is_some_and(|t| now.saturating_sub(t) < NEGATIVE_TTL_SECS.min(POLL_FLOOR_SECS));
        if due && !backing_off {
            match self
                .fetch_revocation(url)
                .await
                .and_then(|list| fresh_enough(list, rev.list.as_ref(), now))
            {
                Ok(list) => {
                    let interval = list
                        .next_update
                        .saturating_sub(now)
                        .clamp(POLL_FLOOR_SECS, POLL_CEILING_SECS);
                    rev.interval = interval;
                    rev.fetched_at = now;
                    rev.list = Some(list);
                    rev.last_failure = None;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "revocation list refresh failed");
                    rev.last_failure = Some(now);
                }
            }
        }
        let Some(list) = &rev.list else {
            return Ok(RevocationStatus::Stale);
        };
        if list.revoked_kids.contains(kid) {
            return Ok(RevocationStatus::Revoked);
        }
        let next = rev.fetched_at.saturating_add(rev.interval);
        let deadline = next.saturating_add(GRACE_INTERVALS.saturating_mul(rev.interval));
        if now > deadline {
            return Ok(RevocationStatus::Stale);
        }
        Ok(RevocationStatus::Current)
    }

    async fn fetch_revocation(&self, url: &Url) -> Result<RevocationList, DiscoveryError> {
        let body = self
            .get(url, MAX_REVOCATION_LIST_BYTES)
            .await
            .map_err(|e| from_fetch("revocation list", e))?;
        let snapshot = self.current();
        let key_for = |kid: &str| snapshot.as_ref().and_then(|s| s.jwks.key(kid));
        let list = RevocationList::parse_signed(&body, key_for, self.inner.allow_unsigned)
            .map_err(|e| from_doc("revocation list", e))?;
        // A list for another origin (a shared CDN serving the wrong file)
        // is not a refresh: the held list and its grace stay in force.
        if let Some(expected) = &self.inner.revocation_issuer {
            list.check_issuer(expected)
                .map_err(|e| from_doc("revocation list", e))?;
        }
        Ok(list)
    }
}

/// A fetched list only replaces the one held when it is not older (by
/// `updated`, else `next_update`), and is refused once its own
/// `next_update` is further past than the longest grace there can be
/// ([`GRACE_INTERVALS`] × [`POLL_CEILING_SECS`]): a CDN replaying an old
/// signed list can neither un-revoke a kid nor keep the verifier "fresh"
/// forever. A refused list counts as a failed refresh, so the grace
/// period runs on and the status turns stale in time (fail closed).
fn fresh_enough(
    list: RevocationList,
    held: Option<&RevocationList>,
    now: i64,
) -> Result<RevocationList, DiscoveryError> {
    let age = |l: &RevocationList| l.updated.unwrap_or(l.next_update);
    if let Some(held) = held {
        if age(&list) < age(held) || list.next_update < held.next_update {
            return Err(DiscoveryError::Malformed(
                "revocation list: older than the list already held (replayed?)".to_owned(),
            ));
        }
    }
    let longest_grace = GRACE_INTERVALS.saturating_mul(POLL_CEILING_SECS);
    if now > list.next_update.saturating_add(longest_grace) {
        return Err(DiscoveryError::Malformed(format!(
            "revocation list: next_update is more than {longest_grace} s past (the publisher has not refreshed it)"
        )));
    }
    Ok(list)
}

#[async_trait]
impl KeyResolver for HttpsKeyResolver {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        self.resolve_typed(keyid).await.map_err(|e| {
            tracing::warn!(agent = %self.inner.agent_url, error = %e, "key discovery failed");
            e.to_resolve_error()
        })
    }

    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError> {
        self.revocation_status_typed(key.kid(), now)
            .await
            .map_err(|e| e.to_resolve_error())
    }

    /// A cached, unexpired key: no I/O, no boxed future. Misses and expired
    /// snapshots go through `resolve` (refetch, cooldown, coalescing).
    fn resolve_cached(&self, keyid: &str) -> Option<Result<Option<Arc<ResolvedKey>>, ResolveError>> {
        self.cached(keyid).ok().map(|key| Ok(Some(key)))
    }
}
