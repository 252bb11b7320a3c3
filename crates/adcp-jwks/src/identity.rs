//! The two discovery chains from an agent URL to its signing keys, with a
//! per-step [`DiscoveryTrace`].
//!
//! - [`resolve_well_known`]: the webhook chain ("Webhook callbacks → JWKS
//!   discovery"): `/.well-known/brand.json` at the operator domain of the
//!   agent URL `A` (one `authoritative_location` / `house` redirect at
//!   most) → the `agents[]` entry whose `url` byte-equals `A` → its
//!   `jwks_uri` (default `/.well-known/jwks.json` at the origin of `A`).
//! - [`resolve_brand_json_url`]: the 8-step `identity.brand_json_url`
//!   chain ("Discovering an agent's signing keys via `brand_json_url`"):
//!   capabilities → `brand_json_url` → eTLD+1 origin binding (vendored PSL,
//!   [`crate::psl`]) with `authorized_operators[]` delegation → brand.json
//!   (no redirects) → byte-equal `agents[]` match → JWKS source by surface
//!   and role → `identity.key_origins` consistency → JWKS.
//!
//! In both chains a [`PublisherPin`] (a publisher's adagents.json
//! `authorized_agents[].signing_keys[]`, see [`crate::adagents`]) replaces
//! the `jwks_uri` as the key source. Pass one **only** for sell-side
//! webhook delivery: the spec scopes the pin to (agent, webhook delivery
//! surface, sell-side role); request signatures and operator-side webhooks
//! always use the operator's `jwks_uri`.

use crate::documents::{
    parse_jwks, AgentLookupError, BrandAgent, BrandDocument, BrandJson, DocumentError, MAX_BRAND_JSON_BYTES,
    MAX_JWKS_BYTES,
};
use crate::fetch::{FetchError, Fetcher};
use crate::psl;
use crate::resolver::DiscoveryError;
use crate::trace::DiscoveryTrace;
use adcp_sigbase::jwk::Jwks;
use adcp_strict_json::Limits;
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use url::Url;

/// Capabilities body cap (spec `MAX_CAPABILITIES_BYTES`: 64 KiB).
pub const MAX_CAPABILITIES_BYTES: usize = 64 * 1024;

/// The members of a `get_adcp_capabilities` response that key discovery
/// reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// `identity.brand_json_url`, as published.
    pub brand_json_url: Option<String>,
    /// `identity.key_origins` (`request_signing`, `webhook_signing`,
    /// `governance_signing`, `tmp_signing`, ...), as published.
    pub key_origins: BTreeMap<String, String>,
    /// Whether `request_signing.supported_for` or `.required_for` is
    /// non-empty (the request-signing posture).
    pub request_signing_declared: bool,
    /// Whether `webhook_signing.supported` is `true`.
    pub webhook_signing_declared: bool,
}

impl Capabilities {
    /// Parses a capabilities response strictly (cap
    /// [`MAX_CAPABILITIES_BYTES`], duplicate member names rejected). The
    /// object may be the response itself or an MCP tool result carrying
    /// it as `structuredContent`.
    ///
    /// # Errors
    ///
    /// [`DocumentError`].
    pub fn parse(bytes: &[u8]) -> Result<Self, DocumentError> {
        if bytes.len() > MAX_CAPABILITIES_BYTES {
            return Err(DocumentError::TooLarge {
                limit: MAX_CAPABILITIES_BYTES,
            });
        }
        let limits = Limits::default().with_max_len(MAX_CAPABILITIES_BYTES);
        let value =
            adcp_strict_json::parse_value(bytes, &limits).map_err(|e| DocumentError::StrictJson(e.to_string()))?;
        let mut obj = value
            .as_object()
            .ok_or(DocumentError::Shape("capabilities is not an object"))?;
        if let Some(Value::Object(inner)) = obj.get("structuredContent") {
            obj = inner;
        }
        let mut caps = Capabilities::default();
        if let Some(identity) = member_object(obj, "identity", "identity is not an object")? {
            caps.brand_json_url = match identity.get("brand_json_url") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(DocumentError::Shape("identity.brand_json_url is not a string")),
            };
            if let Some(origins) = member_object(identity, "key_origins", "identity.key_origins is not an object")? {
                if origins.len() > 64 {
                    return Err(DocumentError::Shape("identity.key_origins has too many members"));
                }
                for (purpose, origin) in origins {
                    let origin = origin
                        .as_str()
                        .ok_or(DocumentError::Shape("identity.key_origins member is not a string"))?;
                    caps.key_origins.insert(purpose.clone(), origin.to_owned());
                }
            }
        }
        if let Some(rs) = member_object(obj, "request_signing", "request_signing is not an object")? {
            let non_empty = |name: &str| rs.get(name).and_then(Value::as_array).is_some_and(|a| !a.is_empty());
            caps.request_signing_declared = non_empty("supported_for") || non_empty("required_for");
        }
        if let Some(ws) = member_object(obj, "webhook_signing", "webhook_signing is not an object")? {
            caps.webhook_signing_declared = ws.get("supported") == Some(&Value::Bool(true));
        }
        Ok(caps)
    }
}

fn member_object<'a>(
    obj: &'a Map<String, Value>,
    name: &str,
    what: &'static str,
) -> Result<Option<&'a Map<String, Value>>, DocumentError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(DocumentError::Shape(what)),
    }
}

/// Where step 1 gets the capabilities response. `get_adcp_capabilities` is
/// a protocol-level call (MCP `tools/call` or an A2A skill), which this
/// crate does not speak: the caller's AdCP client implements this trait,
/// applying the SSRF rules and the 64 KiB cap.
#[async_trait]
pub trait CapabilitiesSource: Send + Sync {
    /// The raw response body of `get_adcp_capabilities` for `agent_url`.
    async fn capabilities(&self, agent_url: &str) -> Result<Vec<u8>, FetchError>;

    /// The URL fetched, for the trace (none for a protocol call).
    fn location(&self, _agent_url: &str) -> Option<Url> {
        None
    }
}

/// Capabilities the caller already holds (from onboarding, or a file).
#[derive(Debug, Clone)]
pub struct StaticCapabilities(pub Vec<u8>);

#[async_trait]
impl CapabilitiesSource for StaticCapabilities {
    async fn capabilities(&self, _agent_url: &str) -> Result<Vec<u8>, FetchError> {
        Ok(self.0.clone())
    }
}

/// Capabilities served as a JSON document at a fixed HTTPS URL (a registry
/// cache or a dev-loop fixture), fetched through the SSRF-safe fetcher.
#[derive(Debug, Clone)]
pub struct HttpsCapabilities {
    fetcher: Fetcher,
    url: Url,
}

impl HttpsCapabilities {
    /// Capabilities at `url`, fetched by `fetcher`.
    pub fn new(fetcher: Fetcher, url: Url) -> Self {
        Self { fetcher, url }
    }
}

#[async_trait]
impl CapabilitiesSource for HttpsCapabilities {
    async fn capabilities(&self, _agent_url: &str) -> Result<Vec<u8>, FetchError> {
        self.fetcher.get(&self.url, MAX_CAPABILITIES_BYTES).await
    }

    fn location(&self, _agent_url: &str) -> Option<Url> {
        Some(self.url.clone())
    }
}

/// Which signatures the resolved keys will verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SigningSurface {
    /// AdCP request signatures (`adcp/request-signing/v1`).
    Request,
    /// Webhook signatures (`adcp/webhook-signing/v1`).
    Webhook,
}

/// A publisher's `signing_keys[]` pin for one authorized agent: the keys
/// the agent may sign sell-side webhooks with. When present it is
/// authoritative: a `keyid` outside it is unknown, whatever the agent's
/// `jwks_uri` says.
#[derive(Debug, Clone)]
pub struct PublisherPin {
    /// The pinned keys as a JWKS object (`{"keys": [...]}`).
    pub jwks_json: Value,
    /// The pinned keys, validated.
    pub jwks: Jwks,
    /// Where the pin came from (the adagents.json URL), for the trace.
    pub source: String,
}

impl PublisherPin {
    /// Builds a pin from `signing_keys[]` entries (public JWKs), applying
    /// the JWKS rules of [`parse_jwks`] (key validation; a `kid` several
    /// entries share is unusable, not an error of the pin).
    ///
    /// # Errors
    ///
    /// [`DocumentError`].
    pub fn from_keys(keys: &[Value], source: impl Into<String>) -> Result<Self, DocumentError> {
        let jwks_json = serde_json::json!({ "keys": keys });
        let bytes = serde_json::to_vec(&jwks_json).map_err(|e| DocumentError::Jwks(e.to_string()))?;
        let (jwks_json, jwks) = parse_jwks(&bytes)?;
        Ok(Self {
            jwks_json,
            jwks,
            source: source.into(),
        })
    }
}

/// Options shared by both chains.
#[derive(Debug, Clone)]
pub struct ChainOptions {
    /// The surface being verified (decides which `key_origins` apply).
    pub surface: SigningSurface,
    /// The publisher pin: set **only** for sell-side webhook delivery.
    pub publisher_pin: Option<Arc<PublisherPin>>,
}

impl Default for ChainOptions {
    fn default() -> Self {
        Self {
            surface: SigningSurface::Webhook,
            publisher_pin: None,
        }
    }
}

/// Where the resolved keys came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// The matched `agents[]` entry's `jwks_uri` (or its default).
    JwksUri(Url),
    /// A publisher `signing_keys[]` pin (its source URL).
    PublisherPin(String),
}

/// A resolved agent: the identity record of the spec's reference SDKs.
#[derive(Debug, Clone)]
pub struct AgentResolution {
    /// The agent URL `A`.
    pub agent_url: String,
    /// The brand.json finally read (after at most one redirect).
    pub brand_json_url: Url,
    /// The matched `agents[]` entry.
    pub agent_entry: BrandAgent,
    /// Where the keys came from.
    pub key_source: KeySource,
    /// The JWKS as published (unknown members such as `adcp_use` kept).
    pub jwks_json: Value,
    /// The JWKS, validated.
    pub jwks: Jwks,
    /// The per-step trace.
    pub trace: DiscoveryTrace,
}

impl AgentResolution {
    /// The `jwks_uri` the keys were fetched from (`None` for a pin).
    pub fn jwks_uri(&self) -> Option<&Url> {
        match &self.key_source {
            KeySource::JwksUri(u) => Some(u),
            KeySource::PublisherPin(_) => None,
        }
    }
}

/// A chain that failed: the error and the trace up to the failing step.
#[derive(Debug, Clone)]
pub struct DiscoveryFailure {
    /// The typed error (its [`code`](DiscoveryError::code) is the spec code).
    pub error: DiscoveryError,
    /// The steps run, the last one failed.
    pub trace: DiscoveryTrace,
}

type ChainResult = Result<AgentResolution, Box<DiscoveryFailure>>;

fn fail(trace: DiscoveryTrace, error: DiscoveryError) -> Box<DiscoveryFailure> {
    Box::new(DiscoveryFailure { error, trace })
}

fn fetch_error(what: &str, e: &FetchError) -> DiscoveryError {
    match e {
        FetchError::Untrusted(s) => DiscoveryError::Untrusted(format!("{what}: {s}")),
        other => DiscoveryError::Unavailable(format!("{what}: {other}")),
    }
}

/// The webhook chain: `/.well-known/brand.json` at the host of `agent_url`
/// (or `brand_json_url` when the operator domain is another host), one
/// `authoritative_location` / `house` redirect at most, byte-equal
/// `agents[]` match, then the JWKS (or the publisher pin). `now` stamps
/// the trace.
///
/// # Errors
///
/// A [`DiscoveryFailure`] whose error's code is the spec code
/// (`*_jwks_untrusted`, `*_jwks_unavailable`, `*_agent_not_in_brand_json`,
/// `*_brand_json_ambiguous`).
pub async fn resolve_well_known(
    fetcher: &Fetcher,
    agent_url: &str,
    brand_json_url: Option<&Url>,
    options: &ChainOptions,
    now: i64,
) -> ChainResult {
    let mut trace = DiscoveryTrace::default();
    let policy = fetcher.policy();
    let agent = match policy.check_url(agent_url) {
        Ok(u) => u,
        Err(e) => {
            let err = DiscoveryError::Untrusted(format!("agent url: {e}"));
            trace.failed(1, "agent url", err.code_suffix(), err.to_string());
            return Err(fail(trace, err));
        }
    };
    let mut url = match brand_json_url {
        Some(u) => u.clone(),
        None => match agent.join("/.well-known/brand.json") {
            Ok(u) => u,
            Err(_) => {
                let err = DiscoveryError::Untrusted("agent url has no origin".into());
                trace.failed(1, "agent url", err.code_suffix(), err.to_string());
                return Err(fail(trace, err));
            }
        },
    };
    let mut redirected = false;
    let doc = loop {
        let result = fetcher.get(&url, MAX_BRAND_JSON_BYTES).await;
        let body = match &result {
            Ok(b) => b,
            Err(e) => {
                let err = fetch_error("brand.json", e);
                trace
                    .failed(1, "brand.json", err.code_suffix(), e.to_string())
                    .fetched(&url, now, &result);
                return Err(fail(trace, err));
            }
        };
        let parsed = match BrandJson::parse(body) {
            Ok(p) => p,
            Err(e) => {
                let err = DiscoveryError::Malformed(format!("brand.json: {e}"));
                trace
                    .failed(1, "brand.json", err.code_suffix(), e.to_string())
                    .fetched(&url, now, &result);
                return Err(fail(trace, err));
            }
        };
        let next = match parsed {
            BrandJson::Document(d) => {
                trace
                    .ok(1, "brand.json", format!("{} agents[] entries", d.agents.len()))
                    .fetched(&url, now, &result);
                break d;
            }
            BrandJson::AuthoritativeLocation(loc) => loc,
            BrandJson::HouseRedirect(domain) => format!("https://{domain}/.well-known/brand.json"),
        };
        if redirected {
            let err = DiscoveryError::RedirectChain;
            trace
                .failed(1, "brand.json", err.code_suffix(), "second redirect refused")
                .fetched(&url, now, &result);
            return Err(fail(trace, err));
        }
        redirected = true;
        match policy.check_url(&next) {
            Ok(u) => {
                trace
                    .ok(1, "brand.json", format!("redirects once to {u}"))
                    .fetched(&url, now, &result);
                url = u;
            }
            Err(e) => {
                let err = DiscoveryError::Untrusted(format!("brand.json redirect: {e}"));
                trace
                    .failed(1, "brand.json", err.code_suffix(), err.to_string())
                    .fetched(&url, now, &result);
                return Err(fail(trace, err));
            }
        }
    };
    let entry = match match_agent(&mut trace, 2, &doc, agent_url) {
        Ok(e) => e,
        Err(err) => return Err(fail(trace, err)),
    };
    finish(fetcher, trace, agent_url, url, entry, options, 3, None, now).await
}

fn match_agent(
    trace: &mut DiscoveryTrace,
    step: u8,
    doc: &BrandDocument,
    agent_url: &str,
) -> Result<BrandAgent, DiscoveryError> {
    match doc.agent(agent_url) {
        Ok(entry) => {
            trace.ok(step, "agents[] match", format!("url byte-equals {agent_url}"));
            Ok(entry.clone())
        }
        Err(e) => {
            let err = match e {
                AgentLookupError::NotFound => DiscoveryError::AgentNotInBrandJson,
                AgentLookupError::Ambiguous => DiscoveryError::BrandJsonAmbiguous,
            };
            let matched = doc.agents.iter().filter(|a| a.url == agent_url).count();
            trace.failed(
                step,
                "agents[] match",
                err.code_suffix(),
                format!("{matched} entries byte-equal {agent_url}"),
            );
            Err(err)
        }
    }
}

/// The JWKS source (pin or `jwks_uri`), the optional `key_origins` check,
/// and the JWKS fetch.
#[allow(clippy::too_many_arguments)]
async fn finish(
    fetcher: &Fetcher,
    mut trace: DiscoveryTrace,
    agent_url: &str,
    brand_json_url: Url,
    entry: BrandAgent,
    options: &ChainOptions,
    step: u8,
    caps: Option<&Capabilities>,
    now: i64,
) -> ChainResult {
    let pinned = options
        .publisher_pin
        .as_ref()
        .filter(|_| options.surface == SigningSurface::Webhook);
    // The operator's jwks_uri: the key source unless pinned, and what
    // `key_origins` is compared with either way (the pin only exempts the
    // sell-side webhook tuple).
    let operator_uri = entry
        .jwks_url()
        .map_err(|e| DiscoveryError::Malformed(format!("brand.json: {e}")))
        .and_then(|u| {
            fetcher
                .policy()
                .check_parsed_url(&u)
                .map(|()| u)
                .map_err(|e| DiscoveryError::Untrusted(format!("jwks_uri: {e}")))
        });
    let jwks_uri = match (pinned, operator_uri) {
        (Some(pin), operator) => {
            trace.ok(
                step,
                "key source",
                format!(
                    "publisher signing_keys pin from {} ({} keys)",
                    pin.source,
                    pin.jwks.len()
                ),
            );
            // An unusable operator jwks_uri does not matter for the pinned
            // surface; key_origins then compares against nothing.
            operator.ok().map(|u| (u, false))
        }
        (None, Ok(u)) => {
            let how = if entry.jwks_uri.is_some() {
                "declared"
            } else {
                "default"
            };
            trace.ok(step, "key source", format!("jwks_uri ({how}) {u}"));
            Some((u, true))
        }
        (None, Err(err)) => {
            trace.failed(step, "key source", err.code_suffix(), err.to_string());
            return Err(fail(trace, err));
        }
    };
    let mut step = step + 1;
    if let Some(caps) = caps {
        if let Err(err) = check_key_origins(caps, jwks_uri.as_ref().map(|(u, _)| u), options) {
            trace.failed(step, "key_origins", err.code_suffix(), err.to_string());
            return Err(fail(trace, err));
        }
        trace.ok(step, "key_origins", "consistent");
        step += 1;
    }
    let Some(jwks_uri) = jwks_uri.and_then(|(u, fetch)| fetch.then_some(u)) else {
        let pin = pinned.map(Arc::clone);
        let Some(pin) = pin else {
            let err = DiscoveryError::Untrusted("no key source".into());
            return Err(fail(trace, err));
        };
        trace.ok(step, "jwks", format!("{} pinned keys", pin.jwks.len()));
        return Ok(AgentResolution {
            agent_url: agent_url.to_owned(),
            brand_json_url,
            agent_entry: entry,
            key_source: KeySource::PublisherPin(pin.source.clone()),
            jwks_json: pin.jwks_json.clone(),
            jwks: pin.jwks.clone(),
            trace,
        });
    };
    let result = fetcher.get(&jwks_uri, MAX_JWKS_BYTES).await;
    let parsed = match &result {
        Ok(body) => parse_jwks(body).map_err(|e| DiscoveryError::Malformed(format!("jwks: {e}"))),
        Err(e) => Err(fetch_error("jwks", e)),
    };
    match parsed {
        Ok((jwks_json, jwks)) => {
            trace
                .ok(step, "jwks", format!("{} keys", jwks.len()))
                .fetched(&jwks_uri, now, &result);
            Ok(AgentResolution {
                agent_url: agent_url.to_owned(),
                brand_json_url,
                agent_entry: entry,
                key_source: KeySource::JwksUri(jwks_uri),
                jwks_json,
                jwks,
                trace,
            })
        }
        Err(err) => {
            trace
                .failed(step, "jwks", err.code_suffix(), err.to_string())
                .fetched(&jwks_uri, now, &result);
            Err(fail(trace, err))
        }
    }
}

/// The canonical origin host of a URL or bare host: ASCII-lowercase, IDNA
/// A-label (the spec's `canonicalizeOrigin`).
pub(crate) fn canonical_origin_host(url_or_host: &str) -> Option<String> {
    if url_or_host.contains("://") {
        let url = Url::parse(url_or_host).ok()?;
        return match url.host()? {
            url::Host::Domain(d) => psl::canonical_host(d),
            other => Some(other.to_string()),
        };
    }
    psl::canonical_host(url_or_host)
}

/// Step 7: for each RFC 9421 transport purpose this `jwks_uri` serves
/// (`request_signing`, and `webhook_signing` unless the webhook keys come
/// from a publisher pin), a declared `key_origins` entry must name the
/// `jwks_uri` host; a declared signing posture without its entry is
/// `key_origin_missing`. `governance_signing` and `tmp_signing` are served
/// from other JWKS and are not compared with this one.
fn check_key_origins(
    caps: &Capabilities,
    jwks_uri: Option<&Url>,
    options: &ChainOptions,
) -> Result<(), DiscoveryError> {
    let pinned_webhook = options.publisher_pin.is_some() && options.surface == SigningSurface::Webhook;
    let purposes = [
        (
            "request_signing",
            caps.request_signing_declared,
            "request_signing",
            true,
        ),
        (
            "webhook_signing",
            caps.webhook_signing_declared,
            "webhook_signing.supported",
            !pinned_webhook,
        ),
    ];
    for (purpose, declared, posture, from_brand_json) in purposes {
        if !from_brand_json {
            continue;
        }
        match caps.key_origins.get(purpose) {
            None if declared => {
                return Err(DiscoveryError::KeyOriginMissing {
                    purpose: purpose.to_owned(),
                    posture: posture.to_owned(),
                })
            }
            None => {}
            Some(declared_origin) => {
                let expected = canonical_origin_host(declared_origin).unwrap_or_else(|| declared_origin.clone());
                let actual = jwks_uri
                    .and_then(|u| canonical_origin_host(u.as_str()))
                    .unwrap_or_default();
                if expected != actual {
                    return Err(DiscoveryError::KeyOriginMismatch {
                        purpose: purpose.to_owned(),
                        expected_origin: expected,
                        actual_origin: actual,
                    });
                }
            }
        }
    }
    Ok(())
}

/// The 8-step `identity.brand_json_url` chain for agent URL `A`.
///
/// 1. capabilities from `caps` (`*_capabilities_unreachable`);
/// 2. `identity.brand_json_url`, HTTPS (`*_brand_json_url_missing`);
/// 3. eTLD+1(A) = eTLD+1(`brand_json_url`) under the vendored PSL, else
///    `authorized_operators[]` of the brand.json must list eTLD+1(A)
///    (`*_brand_origin_mismatch`; checked once step 4 has the document);
/// 4. brand.json, **no** redirects of any kind (neither HTTP nor
///    `authoritative_location`: the carve-out is not inherited), 256 KiB,
///    strict (`*_brand_json_unreachable`, `*_brand_json_malformed`);
/// 5. the `agents[]` entry whose `url` byte-equals `A`
///    (`*_agent_not_in_brand_json`, `*_brand_json_ambiguous`);
/// 6. key source: the publisher pin (sell-side webhooks only) or the
///    entry's `jwks_uri` (default `/.well-known/jwks.json` at `A`'s origin);
/// 7. `identity.key_origins` consistency (`*_key_origin_mismatch`,
///    `*_key_origin_missing`);
/// 8. the JWKS (64 KiB, strict).
///
/// # Errors
///
/// A [`DiscoveryFailure`] carrying the spec code of the failing step.
pub async fn resolve_brand_json_url(
    fetcher: &Fetcher,
    agent_url: &str,
    caps_source: &dyn CapabilitiesSource,
    options: &ChainOptions,
    now: i64,
) -> ChainResult {
    let mut trace = DiscoveryTrace::default();
    let policy = fetcher.policy();
    // Step 1.
    let agent = match policy.check_url(agent_url) {
        Ok(u) => u,
        Err(e) => {
            let err = DiscoveryError::Untrusted(format!("agent url: {e}"));
            trace.failed(1, "capabilities", err.code_suffix(), err.to_string());
            return Err(fail(trace, err));
        }
    };
    let result = caps_source.capabilities(agent_url).await;
    // Only a source that fetched a URL has a status and a fetch time to
    // report; capabilities held by the caller (onboarding, a file) do not.
    let caps_url = caps_source.location(agent_url);
    let caps = match &result {
        Ok(body) => Capabilities::parse(body).map_err(|e| DiscoveryError::CapabilitiesMalformed(e.to_string())),
        Err(e) => Err(DiscoveryError::CapabilitiesUnreachable(e.to_string())),
    };
    let (caps, step) = match caps {
        Ok(c) => {
            let detail = if caps_url.is_some() {
                "get_adcp_capabilities"
            } else {
                "get_adcp_capabilities (supplied by the caller)"
            };
            (Ok(c), trace.ok(1, "capabilities", detail))
        }
        Err(err) => {
            let step = trace.failed(1, "capabilities", err.code_suffix(), err.to_string());
            (Err(err), step)
        }
    };
    if let Some(url) = &caps_url {
        step.fetched(url, now, &result);
    }
    let caps = match caps {
        Ok(c) => c,
        Err(err) => return Err(fail(trace, err)),
    };
    // Step 2.
    let brand_url = match caps.brand_json_url.as_deref().map(|u| (u, policy.check_url(u))) {
        Some((raw, Ok(u))) if raw.starts_with("https://") => u,
        Some((_, Err(e)))
            if e != crate::ssrf::SsrfError::SchemeNotAllowed && e != crate::ssrf::SsrfError::InvalidUrl =>
        {
            let err = DiscoveryError::Untrusted(format!("brand_json_url: {e}"));
            trace.failed(2, "brand_json_url", err.code_suffix(), err.to_string());
            return Err(fail(trace, err));
        }
        other => {
            let err = DiscoveryError::BrandJsonUrlMissing;
            let detail = if other.is_some() { "not an https URL" } else { "absent" };
            trace.failed(2, "brand_json_url", err.code_suffix(), detail);
            return Err(fail(trace, err));
        }
    };
    trace.ok(2, "brand_json_url", brand_url.as_str());
    // Step 3 (first half): eTLD+1 of both.
    let agent_etld1 = agent.host_str().and_then(psl::registrable_domain);
    let brand_etld1 = brand_url.host_str().and_then(psl::registrable_domain);
    let same_site = agent_etld1.is_some() && agent_etld1 == brand_etld1;
    // Step 4: brand.json, no redirects.
    let result = fetcher.get(&brand_url, MAX_BRAND_JSON_BYTES).await;
    let doc = match &result {
        Ok(body) => match BrandJson::parse(body) {
            Ok(BrandJson::Document(d)) => Ok(d),
            Ok(_) => Err(DiscoveryError::BrandJsonMalformed(
                "a redirect variant (authoritative_location / house) is not followed on the brand_json_url bootstrap"
                    .into(),
            )),
            Err(e) => Err(DiscoveryError::BrandJsonMalformed(e.to_string())),
        },
        Err(FetchError::Untrusted(e)) => Err(DiscoveryError::Untrusted(format!("brand.json: {e}"))),
        // The spec lists "body cap exceeded" under `_malformed`.
        Err(e @ FetchError::TooLarge { .. }) => Err(DiscoveryError::BrandJsonMalformed(e.to_string())),
        Err(e) => Err(DiscoveryError::BrandJsonUnreachable(e.to_string())),
    };
    // Step 3 (second half) is reported before step 4 so the trace reads in
    // spec order; it needs the document only when the eTLD+1s differ.
    let binding = |doc: Option<&BrandDocument>| -> Result<String, DiscoveryError> {
        if same_site {
            return Ok(format!(
                "eTLD+1 {} on both (PSL {})",
                agent_etld1.as_deref().unwrap_or(""),
                psl::PSL_VERSION
            ));
        }
        let (Some(a), Some(doc)) = (agent_etld1.as_deref(), doc) else {
            return Err(DiscoveryError::BrandOriginMismatch {
                agent_etld1: agent_etld1.clone().unwrap_or_default(),
                brand_json_url_etld1: brand_etld1.clone().unwrap_or_default(),
            });
        };
        let delegated = doc
            .authorized_operators
            .iter()
            .any(|d| psl::canonical_host(d).as_deref() == Some(a));
        if delegated {
            Ok(format!("{a} delegated by authorized_operators[]"))
        } else {
            Err(DiscoveryError::BrandOriginMismatch {
                agent_etld1: a.to_owned(),
                brand_json_url_etld1: brand_etld1.clone().unwrap_or_default(),
            })
        }
    };
    let doc = match doc {
        Ok(d) => d,
        Err(err) => {
            if same_site {
                trace.ok(3, "origin binding", binding(None).unwrap_or_default());
            } else {
                trace.skipped(3, "origin binding", "needs brand.json authorized_operators[]");
            }
            trace
                .failed(4, "brand.json", err.code_suffix(), err.to_string())
                .fetched(&brand_url, now, &result);
            return Err(fail(trace, err));
        }
    };
    match binding(Some(&doc)) {
        Ok(detail) => {
            trace.ok(3, "origin binding", detail);
        }
        Err(err) => {
            trace.failed(3, "origin binding", err.code_suffix(), err.to_string());
            return Err(fail(trace, err));
        }
    }
    trace
        .ok(4, "brand.json", format!("{} agents[] entries", doc.agents.len()))
        .fetched(&brand_url, now, &result);
    // Step 5.
    let entry = match match_agent(&mut trace, 5, &doc, agent_url) {
        Ok(e) => e,
        Err(err) => return Err(fail(trace, err)),
    };
    // Steps 6–8.
    finish(
        fetcher,
        trace,
        agent_url,
        brand_url,
        entry,
        options,
        6,
        Some(&caps),
        now,
    )
    .await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn capabilities_parse() {
        let c = Capabilities::parse(
            br#"{"identity":{"brand_json_url":"https://op.example/.well-known/brand.json",
                "key_origins":{"request_signing":"https://keys.op.example"}},
                "request_signing":{"supported_for":["create_media_buy"]},
                "webhook_signing":{"supported":true}}"#,
        )
        .unwrap();
        assert_eq!(
            c.brand_json_url.as_deref(),
            Some("https://op.example/.well-known/brand.json")
        );
        assert_eq!(c.key_origins["request_signing"], "https://keys.op.example");
        assert!(c.request_signing_declared && c.webhook_signing_declared);
        let mcp =
            Capabilities::parse(br#"{"structuredContent":{"identity":{"brand_json_url":"https://a.example/b"}}}"#)
                .unwrap();
        assert_eq!(mcp.brand_json_url.as_deref(), Some("https://a.example/b"));
        assert!(Capabilities::parse(br#"{"identity":{"brand_json_url":1}}"#).is_err());
        assert!(Capabilities::parse(br#"{"identity":{},"identity":{}}"#).is_err());
        assert!(Capabilities::parse(&vec![b' '; MAX_CAPABILITIES_BYTES + 1]).is_err());
    }

    #[test]
    fn key_origin_rules() {
        let jwks = Url::parse("https://keys.op.example/.well-known/jwks.json").unwrap();
        let mut caps = Capabilities {
            request_signing_declared: true,
            ..Capabilities::default()
        };
        let opts = ChainOptions {
            surface: SigningSurface::Request,
            publisher_pin: None,
        };
        assert_eq!(
            check_key_origins(&caps, Some(&jwks), &opts).unwrap_err().code_suffix(),
            "key_origin_missing"
        );
        caps.key_origins
            .insert("request_signing".into(), "https://KEYS.op.example".into());
        assert!(check_key_origins(&caps, Some(&jwks), &opts).is_ok());
        caps.key_origins
            .insert("webhook_signing".into(), "https://other.example".into());
        let err = check_key_origins(&caps, Some(&jwks), &opts).unwrap_err();
        assert_eq!(
            err,
            DiscoveryError::KeyOriginMismatch {
                purpose: "webhook_signing".into(),
                expected_origin: "other.example".into(),
                actual_origin: "keys.op.example".into()
            }
        );
        // Governance keys live on another origin and are not compared.
        caps.key_origins.remove("webhook_signing");
        caps.key_origins
            .insert("governance_signing".into(), "https://gov.op.example".into());
        assert!(check_key_origins(&caps, Some(&jwks), &opts).is_ok());
        // U-label and A-label forms of one origin compare equal.
        assert_eq!(
            canonical_origin_host("https://Bücher.example"),
            canonical_origin_host("xn--bcher-kva.example")
        );
    }

    proptest! {
        #[test]
        fn capabilities_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = Capabilities::parse(&bytes);
        }
    }
}
