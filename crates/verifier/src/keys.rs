//! Key resolution (checklist step 7) and the key facts steps 8–10 need.

use crate::error::{CodePrefix, ErrorCode};
use adcp_sigbase::crypto::{Algorithm, VerifyingKey};
use adcp_sigbase::jwk::Jwk;
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

/// A key the resolver found for a `keyid`, with the identity it belongs to.
///
/// Built once per key (not per request): the JWK's purpose members are
/// extracted and its key material validated up front. A JWK whose material
/// or `alg`/`crv` is inconsistent still resolves (the `keyid` is known) but
/// fails the purpose check at step 8.
#[derive(Debug, Clone)]
pub struct ResolvedKey {
    kid: String,
    agent_url: String,
    use_: Option<String>,
    key_ops: Option<Vec<String>>,
    adcp_use: Option<String>,
    key: Result<(VerifyingKey, Algorithm), String>,
}

impl ResolvedKey {
    /// From a JWK as published (a JSON object) and the agent URL of the
    /// `agents[]` entry whose `jwks_uri` served it.
    pub fn from_jwk_json(jwk: &serde_json::Value, agent_url: impl Into<String>) -> Option<Self> {
        let kid = jwk.get("kid")?.as_str()?.to_owned();
        let text = |name: &str| jwk.get(name).and_then(|v| v.as_str()).map(str::to_owned);
        let key_ops = jwk.get("key_ops").and_then(|v| v.as_array()).map(|ops| {
            ops.iter()
                .map(|op| op.as_str().unwrap_or("\u{fffd}").to_owned())
                .collect()
        });
        let key = Jwk::from_json_value(jwk)
            .map(|j| (j.verifying_key().clone(), j.algorithm()))
            .map_err(|e| e.to_string());
        Some(Self {
            kid,
            agent_url: agent_url.into(),
            use_: text("use"),
            key_ops,
            adcp_use: text("adcp_use"),
            key,
        })
    }

    /// The key's `kid`.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The signer identity: the `agents[]` entry URL the key resolved to.
    pub fn agent_url(&self) -> &str {
        &self.agent_url
    }

    /// JWK `use`.
    pub fn use_(&self) -> Option<&str> {
        self.use_.as_deref()
    }

    /// JWK `key_ops`.
    pub fn key_ops(&self) -> Option<&[String]> {
        self.key_ops.as_deref()
    }

    /// JWK `adcp_use`.
    pub fn adcp_use(&self) -> Option<&str> {
        self.adcp_use.as_deref()
    }

    /// The verification key and the algorithm its JWK implies, or why the
    /// JWK is unusable.
    pub fn key(&self) -> Result<(&VerifyingKey, Algorithm), &str> {
        match &self.key {
            Ok((k, a)) => Ok((k, *a)),
            Err(e) => Err(e),
        }
    }
}

/// Whether a key's revocation status is known and current.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RevocationStatus {
    /// Not revoked, list fresh.
    Current,
    /// `kid` is in `revoked_kids`.
    Revoked,
    /// The list has not been refreshed within `next_update` + grace.
    Stale,
}

/// Key resolution failed: the key source could not be reached, was
/// refused, or a step of the discovery chain rejected the signer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolveError {
    /// Transient fetch failure (retryable): `*_jwks_unavailable`.
    Unavailable(String),
    /// The JWKS location failed SSRF validation: `*_jwks_untrusted`.
    Untrusted(String),
    /// A key-discovery failure with its precise spec code, e.g. a step of
    /// the `brand_json_url` chain (`request_signature_brand_origin_mismatch`).
    /// `code` should satisfy [`ErrorCode::is_key_discovery`]; the verifier
    /// answers any other code as `*_jwks_unavailable` when it is retryable
    /// and `*_jwks_untrusted` otherwise, so a resolver cannot make the
    /// verifier report a non-discovery failure (a forged
    /// `*_signature_invalid`, say).
    Discovery {
        /// The discovery code.
        code: ErrorCode,
        /// Server-side detail (do not echo to the peer).
        detail: String,
    },
}

impl ResolveError {
    /// A [`Discovery`](Self::Discovery) error.
    pub fn discovery(code: ErrorCode, detail: impl Into<String>) -> Self {
        ResolveError::Discovery {
            code,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Unavailable(d) => write!(f, "key source unavailable: {d}"),
            ResolveError::Untrusted(d) => write!(f, "key source untrusted: {d}"),
            ResolveError::Discovery { code, detail } => {
                write!(
                    f,
                    "key discovery failed ({}): {detail}",
                    code.as_str(CodePrefix::Request)
                )
            }
        }
    }
}

impl std::error::Error for ResolveError {}

/// Resolves `keyid`s to keys and reports revocation status.
///
/// Contract: on a `kid` miss, an implementation backed by a remote JWKS
/// refetches once (at most once per 30 seconds per source) before
/// answering `Ok(None)`, so mid-task key rotation does not reject
/// legitimate deliveries.
#[async_trait]
pub trait KeyResolver: Send + Sync {
    /// The key for `keyid`, `Ok(None)` when unknown after the refetch.
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError>;

    /// Revocation status of `key` at `now`.
    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError>;

    /// The answer [`Self::resolve`] would give, when it is at hand without
    /// I/O (a cached or static key); `None` sends the caller to `resolve`.
    /// The verifier tries this first, so a hit costs no boxed future.
    /// Implementations must never answer here what `resolve` would not.
    fn resolve_cached(&self, keyid: &str) -> Option<Result<Option<Arc<ResolvedKey>>, ResolveError>> {
        let _ = keyid;
        None
    }

    /// The answer [`Self::revocation_status`] would give, when it is at
    /// hand without I/O; `None` sends the caller to `revocation_status`.
    fn revocation_status_cached(&self, key: &ResolvedKey, now: i64) -> Option<Result<RevocationStatus, ResolveError>> {
        let _ = (key, now);
        None
    }
}

/// A fixed set of keys (a static JWKS, configuration, tests), with optional
/// revoked kids and a stale-list flag.
#[derive(Debug, Clone, Default)]
pub struct StaticKeyResolver {
    keys: HashMap<String, Arc<ResolvedKey>, foldhash::quality::RandomState>,
    revoked: HashSet<String>,
    stale: bool,
}

impl StaticKeyResolver {
    /// An empty resolver.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds every key of a JWKS document (`{"keys": [...]}`) for `agent_url`.
    /// Entries without a string `kid` are skipped.
    pub fn with_jwks(mut self, jwks: &serde_json::Value, agent_url: &str) -> Self {
        if let Some(keys) = jwks.get("keys").and_then(|k| k.as_array()) {
            for jwk in keys {
                if let Some(key) = ResolvedKey::from_jwk_json(jwk, agent_url) {
                    self.keys.insert(key.kid.clone(), Arc::new(key));
                }
            }
        }
        self
    }

    /// Adds one resolved key.
    pub fn with_key(mut self, key: ResolvedKey) -> Self {
        self.keys.insert(key.kid.clone(), Arc::new(key));
        self
    }

    /// Marks `kid` revoked.
    pub fn revoke(mut self, kid: &str) -> Self {
        self.revoked.insert(kid.to_owned());
        self
    }

    /// Marks the revocation list stale (not refreshed within grace).
    pub fn with_stale_revocation_list(mut self, stale: bool) -> Self {
        self.stale = stale;
        self
    }
}

#[async_trait]
impl KeyResolver for StaticKeyResolver {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        Ok(self.keys.get(keyid).cloned())
    }

    async fn revocation_status(&self, key: &ResolvedKey, _now: i64) -> Result<RevocationStatus, ResolveError> {
        Ok(self.status(key))
    }

    fn resolve_cached(&self, keyid: &str) -> Option<Result<Option<Arc<ResolvedKey>>, ResolveError>> {
        Some(Ok(self.keys.get(keyid).cloned()))
    }

    fn revocation_status_cached(&self, key: &ResolvedKey, _now: i64) -> Option<Result<RevocationStatus, ResolveError>> {
        Some(Ok(self.status(key)))
    }
}

impl StaticKeyResolver {
    fn status(&self, key: &ResolvedKey) -> RevocationStatus {
        if self.revoked.contains(key.kid()) {
            RevocationStatus::Revoked
        } else if self.stale {
            RevocationStatus::Stale
        } else {
            RevocationStatus::Current
        }
    }
}

#[async_trait]
impl<R: KeyResolver + ?Sized> KeyResolver for Arc<R> {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        (**self).resolve(keyid).await
    }

    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError> {
        (**self).revocation_status(key, now).await
    }

    fn resolve_cached(&self, keyid: &str) -> Option<Result<Option<Arc<ResolvedKey>>, ResolveError>> {
        (**self).resolve_cached(keyid)
    }

    fn revocation_status_cached(&self, key: &ResolvedKey, now: i64) -> Option<Result<RevocationStatus, ResolveError>> {
        (**self).revocation_status_cached(key, now)
    }
}
