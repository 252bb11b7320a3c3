//! Which key signs an event: resolved per attempt from its signing scope,
//! so key rotation and multi-tenant sellers never touch stored bytes.

use adcp_sign::{BoxSigner, HttpSigner};
use std::collections::HashMap;
use std::sync::Arc;

/// Finds the signer of a signing scope at attempt time.
pub trait SignerResolver: Send + Sync + 'static {
    /// The signer for `scope`, or `None` when none is configured (the
    /// event waits and is retried later; it expires with its horizon).
    fn signer(&self, scope: &str) -> Option<Arc<HttpSigner<BoxSigner>>>;
}

/// A fixed map from scope to signer.
///
/// ```
/// use adcp_outbox::StaticSigners;
/// use adcp_sign::{Algorithm, BoxSigner, HttpSigner, SoftwareSigner};
///
/// let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-01")?;
/// let signers = StaticSigners::new().with("default", HttpSigner::webhook(BoxSigner::new(key))?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default, Clone)]
pub struct StaticSigners(HashMap<String, Arc<HttpSigner<BoxSigner>>>);

impl std::fmt::Debug for StaticSigners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl StaticSigners {
    /// No scopes.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the signer of `scope`.
    #[must_use]
    pub fn with(mut self, scope: impl Into<String>, signer: HttpSigner<BoxSigner>) -> Self {
        self.0.insert(scope.into(), Arc::new(signer));
        self
    }

    /// The configured scopes.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

impl SignerResolver for StaticSigners {
    fn signer(&self, scope: &str) -> Option<Arc<HttpSigner<BoxSigner>>> {
        self.0.get(scope).cloned()
    }
}
