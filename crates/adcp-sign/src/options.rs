//! [`SignOptions`]: fixed signature parameters instead of the clock and
//! the random generator.

use crate::Nonce;

/// Signature parameters to use instead of the defaults (`created` from the
/// clock, `expires = created + validity`, a fresh random nonce).
///
/// For tests, conformance runs and tools: a production sender leaves all
/// three unset, since a fixed nonce reused on a second message is a replay
/// to every verifier.
///
/// ```
/// use adcp_sign::{Nonce, SignOptions};
///
/// let options = SignOptions::new()
///     .with_created(1_776_520_800)
///     .with_expires(1_776_521_100)
///     .with_nonce(Nonce::parse("KXYnfEfJ0PBRZXQyVXfVQA")?);
/// assert_eq!(options.created(), Some(1_776_520_800));
/// # Ok::<(), adcp_sign::SignError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignOptions {
    created: Option<i64>,
    expires: Option<i64>,
    nonce: Option<Nonce>,
}

impl SignOptions {
    /// No fixed parameters.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Use `created` instead of the clock.
    #[must_use]
    pub fn with_created(mut self, created: i64) -> Self {
        self.created = Some(created);
        self
    }

    /// Use `expires` instead of `created` plus the validity. Still at most
    /// 300 seconds after `created`.
    #[must_use]
    pub fn with_expires(mut self, expires: i64) -> Self {
        self.expires = Some(expires);
        self
    }

    /// Use this nonce instead of a fresh one.
    #[must_use]
    pub fn with_nonce(mut self, nonce: Nonce) -> Self {
        self.nonce = Some(nonce);
        self
    }

    /// The fixed `created`, if any.
    #[must_use]
    pub fn created(&self) -> Option<i64> {
        self.created
    }

    /// The fixed `expires`, if any.
    #[must_use]
    pub fn expires(&self) -> Option<i64> {
        self.expires
    }

    /// The fixed nonce, if any.
    #[must_use]
    pub fn nonce(&self) -> Option<&Nonce> {
        self.nonce.as_ref()
    }
}
