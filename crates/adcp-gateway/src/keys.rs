//! Key resolution over several sellers (`--agent` and `--seller`).
//!
//! A `kid` is unique within one seller's JWKS, not across sellers, so a
//! `keyid` may name keys of several sellers. Every one of them is a
//! candidate: the verifier checks the signature under each and attributes
//! the webhook to the one seller whose key verifies (two that verify are
//! refused as ambiguous). The first seller to publish a kid never shadows
//! another's.

use adcp_verify::{KeyCandidates, KeyResolver, ResolveError, ResolvedKey, RevocationStatus, MAX_KEY_CANDIDATES};
use async_trait::async_trait;
use std::sync::Arc;

/// Resolves a `keyid` against every seller's resolver: all the keys found
/// are candidates ([`KeyResolver::resolve_candidates`]). Revocation is
/// asked of the resolver of the key's agent. What
/// [`Gateway::from_config`](crate::Gateway::from_config) builds for
/// several sellers; for [`Gateway::new`](crate::Gateway::new) with
/// several sellers of your own.
pub struct AgentsResolver {
    agents: Vec<(String, Arc<dyn KeyResolver>)>,
}

impl AgentsResolver {
    /// One resolver per agent URL, tried in this order.
    #[must_use]
    pub fn new(agents: Vec<(String, Arc<dyn KeyResolver>)>) -> Self {
        Self { agents }
    }
}

#[async_trait]
impl KeyResolver for AgentsResolver {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        let mut first_error = None;
        for (_, resolver) in &self.agents {
            match resolver.resolve(keyid).await {
                Ok(Some(key)) => return Ok(Some(key)),
                Ok(None) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        // Unknown everywhere: unknown, unless a seller could not answer
        // (then the key may exist: fail as unavailable, retryable).
        first_error.map_or(Ok(None), Err)
    }

    /// Every seller's key for `keyid`, at most [`MAX_KEY_CANDIDATES`]. A
    /// seller that cannot answer fails the lookup only when no other
    /// seller has the key (then it may be that seller's: unavailable,
    /// retryable); otherwise the keys found are tried, as the signature
    /// binds the webhook to one of them or to none.
    async fn resolve_candidates(&self, keyid: &str) -> Result<KeyCandidates, ResolveError> {
        let mut found = KeyCandidates::new();
        let mut first_error = None;
        for (_, resolver) in &self.agents {
            match resolver.resolve(keyid).await {
                Ok(Some(key)) if found.len() < MAX_KEY_CANDIDATES => found.push(key),
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) if found.is_empty() => Err(e),
            _ => Ok(found),
        }
    }

    /// As [`Self::resolve_candidates`] when every seller's answer is at
    /// hand (static keys, warm caches); `None` as soon as one is not.
    fn resolve_candidates_cached(&self, keyid: &str) -> Option<Result<KeyCandidates, ResolveError>> {
        let mut found = KeyCandidates::new();
        let mut first_error = None;
        for (_, resolver) in &self.agents {
            match resolver.resolve_cached(keyid)? {
                Ok(Some(key)) if found.len() < MAX_KEY_CANDIDATES => found.push(key),
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Some(match first_error {
            Some(e) if found.is_empty() => Err(e),
            _ => Ok(found),
        })
    }

    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError> {
        let owner = self
            .agents
            .iter()
            .find(|(agent, _)| agent == key.agent_url())
            .or_else(|| self.agents.first());
        match owner {
            Some((_, resolver)) => resolver.revocation_status(key, now).await,
            None => Ok(RevocationStatus::Current),
        }
    }
}

/// A static revocation entry in front of a key resolver: every key whose
/// `kid` is listed is revoked (`*_signature_key_revoked` at checklist step
/// 9, before any cryptography), whichever seller publishes it; the other
/// keys' status is the inner resolver's. Keys are resolved by the inner
/// resolver unchanged. What [`GatewayOptions::revoked_kids`](crate::GatewayOptions::revoked_kids)
/// wraps the gateway's resolver in.
pub(crate) struct RevokedKids {
    inner: Arc<dyn KeyResolver>,
    kids: std::collections::HashSet<String>,
}

impl RevokedKids {
    /// `inner` with `kids` revoked; `inner` itself when there are none.
    pub(crate) fn wrap(inner: Arc<dyn KeyResolver>, kids: &[String]) -> Arc<dyn KeyResolver> {
        if kids.is_empty() {
            return inner;
        }
        Arc::new(Self {
            inner,
            kids: kids.iter().cloned().collect(),
        })
    }
}

#[async_trait]
impl KeyResolver for RevokedKids {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        self.inner.resolve(keyid).await
    }

    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError> {
        if self.kids.contains(key.kid()) {
            return Ok(RevocationStatus::Revoked);
        }
        self.inner.revocation_status(key, now).await
    }

    fn resolve_cached(&self, keyid: &str) -> Option<Result<Option<Arc<ResolvedKey>>, ResolveError>> {
        self.inner.resolve_cached(keyid)
    }

    fn revocation_status_cached(&self, key: &ResolvedKey, now: i64) -> Option<Result<RevocationStatus, ResolveError>> {
        if self.kids.contains(key.kid()) {
            return Some(Ok(RevocationStatus::Revoked));
        }
        self.inner.revocation_status_cached(key, now)
    }

    async fn resolve_candidates(&self, keyid: &str) -> Result<KeyCandidates, ResolveError> {
        self.inner.resolve_candidates(keyid).await
    }

    fn resolve_candidates_cached(&self, keyid: &str) -> Option<Result<KeyCandidates, ResolveError>> {
        self.inner.resolve_candidates_cached(keyid)
    }
}
