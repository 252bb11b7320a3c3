//! Key resolution over several sellers (`--agent` repeated).

use adcp_verify::keys::{KeyResolver, ResolveError, ResolvedKey, RevocationStatus};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a failed key fetch keeps a seller's "unknown key" answers
/// retryable: the resolver's refetch cooldown, during which a `kid` miss
/// is not refetched.
const FAILURE_MEMORY: Duration = Duration::from_secs(adcp_jwks::resolver::REFETCH_COOLDOWN_SECS.unsigned_abs());

/// Resolves a `keyid` against each seller's resolver in turn; the first
/// that knows it wins. Revocation is asked of the resolver of the key's
/// agent.
///
/// A seller whose key fetch failed less than the refetch cooldown (30 s)
/// ago answers a `kid` miss with that failure (retryable `503`), not
/// "unknown key": during the cooldown its resolver does not refetch, so a
/// key published while the JWKS endpoint was failing is not known to be
/// absent. Answering `webhook_signature_key_unknown` there, a code the
/// spec makes terminal to the sender, would make the seller drop an event
/// signed with its new key after a rotation.
pub struct AgentsResolver {
    agents: Vec<Agent>,
}

struct Agent {
    url: String,
    resolver: Arc<dyn KeyResolver>,
    last_failure: Mutex<Option<(Instant, ResolveError)>>,
}

impl Agent {
    fn remember(&self, error: &ResolveError) {
        if let Ok(mut last) = self.last_failure.lock() {
            *last = Some((Instant::now(), error.clone()));
        }
    }

    /// The failure of a fetch within the cooldown, if any.
    fn recent_failure(&self) -> Option<ResolveError> {
        let last = self.last_failure.lock().ok()?;
        match &*last {
            Some((at, error)) if at.elapsed() < FAILURE_MEMORY => Some(error.clone()),
            _ => None,
        }
    }
}

impl AgentsResolver {
    /// One resolver per agent URL, tried in this order.
    #[must_use]
    pub fn new(agents: Vec<(String, Arc<dyn KeyResolver>)>) -> Self {
        Self {
            agents: agents
                .into_iter()
                .map(|(url, resolver)| Agent {
                    url,
                    resolver,
                    last_failure: Mutex::new(None),
                })
                .collect(),
        }
    }
}

#[async_trait]
impl KeyResolver for AgentsResolver {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        let mut first_error = None;
        for agent in &self.agents {
            match agent.resolver.resolve(keyid).await {
                Ok(Some(key)) => return Ok(Some(key)),
                Ok(None) => {
                    if let Some(e) = agent.recent_failure() {
                        first_error.get_or_insert(e);
                    }
                }
                Err(e) => {
                    agent.remember(&e);
                    first_error.get_or_insert(e);
                }
            }
        }
        // Unknown everywhere: unknown, unless a seller could not answer
        // (then the key may exist: fail as unavailable, retryable).
        first_error.map_or(Ok(None), Err)
    }

    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError> {
        let owner = self
            .agents
            .iter()
            .find(|agent| agent.url == key.agent_url())
            .or_else(|| self.agents.first());
        match owner {
            Some(agent) => agent.resolver.revocation_status(key, now).await,
            None => Ok(RevocationStatus::Current),
        }
    }
}
