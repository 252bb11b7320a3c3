//! Key resolution over several sellers (`--agent` repeated).

use adcp_verify::keys::{KeyResolver, ResolveError, ResolvedKey, RevocationStatus};
use async_trait::async_trait;
use std::sync::Arc;

/// Resolves a `keyid` against each seller's resolver in turn; the first
/// that knows it wins. Revocation is asked of the resolver of the key's
/// agent.
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
