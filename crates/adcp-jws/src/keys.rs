//! Checklist steps 5, 6 and 13: key discovery and key purpose.

use std::collections::HashMap;
use std::sync::Arc;

use adcp_jwks::{resolve_well_known, AgentResolution, ChainOptions, DiscoveryError, Fetcher};
use serde_json::Value;
use tokio::sync::Mutex;
use url::Url;

use crate::error::{ErrorCode, GovError};

/// The `adcp_use` a governance-signing JWK must declare.
pub const GOVERNANCE_SIGNING: &str = "governance-signing";

/// How long a discovered JWKS is trusted before rediscovery (bounded
/// below the revocation polling ceiling).
pub(crate) const JWKS_TTL_SECS: i64 = 5 * 60;

/// Cooldown between two unknown-`kid` refetches (spec: 30 s).
pub(crate) const REFETCH_COOLDOWN_SECS: i64 = 30;

/// A key found for a token: the published JWK and, in brand.json mode,
/// the `agents[]` entry it came through.
#[derive(Debug, Clone)]
pub(crate) struct FoundKey {
    pub(crate) jwk: Value,
    /// `Some(type)` of the matched brand.json entry (brand.json mode).
    pub(crate) agent_type: Option<Option<String>>,
    /// The whole key set (to verify a signed revocation list).
    pub(crate) jwks: Arc<Value>,
}

pub(crate) struct Discovered {
    resolution: Arc<AgentResolution>,
    jwks: Arc<Value>,
    fetched_at: i64,
    last_refetch: Option<i64>,
}

/// Where governance keys come from.
pub(crate) enum KeySource {
    /// A fixed JWKS (`{"keys": [...]}`): no brand.json cross-check.
    Static(Arc<Value>),
    /// The buyer's brand.json → governance entry whose `url` is `iss` →
    /// `jwks_uri`, through the SSRF-pinned fetcher, cached per issuer.
    BrandJson(Box<Discovery>),
}

/// The brand.json mode's settings and cache.
pub(crate) struct Discovery {
    pub(crate) url: Url,
    pub(crate) fetcher: Fetcher,
    pub(crate) cache: Mutex<HashMap<String, Discovered>>,
    /// Failed discoveries per issuer, answered again for
    /// [`NEGATIVE_TTL_SECS`] without a fetch (bounded: cleared when
    /// [`MAX_NEGATIVE`] issuers are remembered).
    pub(crate) failures: Mutex<HashMap<String, (i64, GovError)>>,
}

/// How long a failed discovery is answered from memory (60 s, as
/// `adcp-jwks` caches misses).
pub(crate) const NEGATIVE_TTL_SECS: i64 = adcp_jwks::NEGATIVE_TTL_SECS;

/// Most failed issuers remembered at once.
const MAX_NEGATIVE: usize = 1024;

impl std::fmt::Debug for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Static(_) => f.write_str("KeySource::Static"),
            Self::BrandJson(d) => write!(f, "KeySource::BrandJson({})", d.url),
        }
    }
}

fn key_in(jwks: &Value, kid: &str) -> Result<Option<Value>, GovError> {
    let Some(keys) = jwks.get("keys").and_then(Value::as_array) else {
        return Ok(None);
    };
    let mut found = keys
        .iter()
        .filter(|k| k.get("kid").and_then(Value::as_str) == Some(kid));
    let first = found.next().cloned();
    if found.next().is_some() {
        // A kid shared by several entries (whatever their adcp_use) is a
        // publication defect: no key is chosen.
        return Err(GovError::new(
            ErrorCode::KeyUnknown,
            5,
            format!("kid {kid:?} is shared by several JWKS entries"),
        ));
    }
    Ok(first)
}

fn discovery_error(e: &DiscoveryError) -> GovError {
    match e {
        DiscoveryError::AgentNotInBrandJson | DiscoveryError::BrandJsonAmbiguous => GovError::new(
            ErrorCode::IssuerNotAuthorized,
            13,
            format!("iss is not one agents[] entry of the buyer's brand.json ({e})"),
        ),
        DiscoveryError::Untrusted(_) | DiscoveryError::RedirectChain => {
            GovError::new(ErrorCode::JwksUntrusted, 5, e.to_string())
        }
        other => GovError::new(ErrorCode::JwksUnavailable, 5, other.to_string()),
    }
}

impl KeySource {
    /// Step 5: the JWK for `(iss, kid)`, refetching once on a miss.
    pub(crate) async fn find(&self, iss: &str, kid: &str, now: i64) -> Result<FoundKey, GovError> {
        let unknown = || GovError::new(ErrorCode::KeyUnknown, 5, format!("kid {kid:?} is not in the JWKS"));
        match self {
            Self::Static(jwks) => key_in(jwks, kid)?
                .map(|jwk| FoundKey {
                    jwk,
                    agent_type: None,
                    jwks: Arc::clone(jwks),
                })
                .ok_or_else(unknown),
            Self::BrandJson(discovery) => {
                let Discovery {
                    url,
                    fetcher,
                    cache,
                    failures,
                } = &**discovery;
                let mut cache = cache.lock().await;
                let fresh = cache
                    .get(iss)
                    .filter(|d| now.saturating_sub(d.fetched_at) < JWKS_TTL_SECS && now >= d.fetched_at);
                // `None`: no fresh snapshot (first use or TTL expiry), fetch;
                // `Some(true)`: a kid miss on a fresh snapshot, refetch now and
                // then at most once per cooldown.
                let miss = match fresh {
                    None => false,
                    Some(d) => {
                        if let Some(jwk) = key_in(&d.jwks, kid)? {
                            return Ok(found(d, jwk));
                        }
                        if d.last_refetch
                            .is_some_and(|t| now.saturating_sub(t) < REFETCH_COOLDOWN_SECS)
                        {
                            return Err(unknown());
                        }
                        true
                    }
                };
                if let Some((at, e)) = failures.lock().await.get(iss) {
                    if now.saturating_sub(*at) < NEGATIVE_TTL_SECS && now >= *at {
                        return Err(e.clone());
                    }
                }
                let resolution = match resolve_well_known(fetcher, iss, Some(url), &ChainOptions::default(), now).await
                {
                    Ok(r) => r,
                    Err(f) => {
                        let e = discovery_error(&f.error);
                        let mut failures = failures.lock().await;
                        if failures.len() >= MAX_NEGATIVE {
                            failures.clear();
                        }
                        failures.insert(iss.to_owned(), (now, e.clone()));
                        return Err(e);
                    }
                };
                let d = Discovered {
                    jwks: Arc::new(resolution.jwks_json.clone()),
                    resolution: Arc::new(resolution),
                    fetched_at: now,
                    last_refetch: miss.then_some(now),
                };
                let result = key_in(&d.jwks, kid)?.map(|jwk| found(&d, jwk));
                cache.insert(iss.to_owned(), d);
                result.ok_or_else(unknown)
            }
        }
    }

    /// Whether step 13 (the brand.json cross-check) is performed.
    pub(crate) const fn cross_checks(&self) -> bool {
        matches!(self, Self::BrandJson(_))
    }
}

fn found(d: &Discovered, jwk: Value) -> FoundKey {
    FoundKey {
        jwk,
        agent_type: Some(d.resolution.agent_entry.agent_type.clone()),
        jwks: Arc::clone(&d.jwks),
    }
}

/// Step 6: `use` `sig`, `key_ops` with `verify`, `adcp_use`
/// `governance-signing`, and an `alg` (if declared) equal to the header's.
/// A key published for another purpose (RFC 9421 request or webhook
/// signing) is refused with `governance_key_unknown`: for this profile
/// there is no governance key under that `kid` (the reference SDK's
/// choice too).
pub(crate) fn check_purpose(jwk: &Value, alg: &str) -> Result<(), GovError> {
    let bad = |detail: String| GovError::new(ErrorCode::KeyUnknown, 6, detail);
    if jwk.get("use").and_then(Value::as_str) != Some("sig") {
        return Err(bad(format!("JWK use is {:?}, not \"sig\"", jwk.get("use"))));
    }
    let verify = jwk
        .get("key_ops")
        .and_then(Value::as_array)
        .is_some_and(|ops| ops.iter().any(|op| op.as_str() == Some("verify")));
    if !verify {
        return Err(bad("JWK key_ops lacks \"verify\"".into()));
    }
    if jwk.get("adcp_use").and_then(Value::as_str) != Some(GOVERNANCE_SIGNING) {
        return Err(bad(format!(
            "JWK adcp_use is {:?}, not \"{GOVERNANCE_SIGNING}\"",
            jwk.get("adcp_use")
        )));
    }
    if let Some(key_alg) = jwk.get("alg") {
        if key_alg.as_str() != Some(alg) {
            return Err(bad(format!("JWK alg {key_alg} is not the header's {alg}")));
        }
    }
    Ok(())
}
