//! Configuration of a [`RequestVerifier`]: keys, replay store, capability,
//! and the endpoint's trusted settings.

use super::authenticator::{Authenticator, Hook};
use super::verifier::{Inner, RequestVerifier, Target};
use super::DEFAULT_MAX_BODY_BYTES;
use adcp_sigbase::{Clock, SystemClock};
use adcp_verify::admission::AdmissionMonitor;
use adcp_verify::request_policy::{Binding, CapabilityError, FallbackCredential, ResolvedRequest, VerifierCapability};
use adcp_verify::{KeyResolver, Profile, ReplayStore, Verifier};
use http::request::Parts;
use std::sync::Arc;

/// A configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The capability advertises a `covers_content_digest` policy the
    /// profile does not apply (a 3.2 endpoint must advertise `required`).
    #[error("capability does not match the profile: {0}")]
    Capability(#[from] CapabilityError),
    /// A webhook profile was given for a request endpoint.
    #[error("a request verifier needs a request profile, not the webhook profile")]
    WebhookProfile,
    /// The scheme must be `http` or `https`.
    #[error("scheme must be http or https")]
    InvalidScheme,
    /// The public base URL must be `http(s)://authority[/path]` without
    /// query or fragment.
    #[error("public base URL must be http(s)://authority[/path], without query or fragment")]
    InvalidBaseUrl,
    /// The body limit must be positive.
    #[error("body limit must be positive")]
    InvalidBodyLimit,
}

/// Builds a [`RequestVerifier`]; see [`RequestVerifier::builder`].
#[must_use]
pub struct RequestVerifierBuilder {
    keys: Arc<dyn KeyResolver>,
    replay: Arc<dyn ReplayStore>,
    capability: VerifierCapability,
    profile: Profile,
    clock: Arc<dyn Clock>,
    binding: Option<Binding>,
    scheme: String,
    base_url: Option<String>,
    max_body_bytes: usize,
    admission: Option<AdmissionMonitor>,
    authenticator: Hook,
    batcher: Option<adcp_verify::SignatureBatcher>,
}

impl std::fmt::Debug for RequestVerifierBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestVerifierBuilder")
            .field("capability", &self.capability)
            .field("profile", &self.profile.name())
            .field("binding", &self.binding)
            .field("scheme", &self.scheme)
            .field("base_url", &self.base_url)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("authenticator", &self.authenticator)
            .finish_non_exhaustive()
    }
}

impl RequestVerifierBuilder {
    pub(crate) fn new(
        keys: Arc<dyn KeyResolver>,
        replay: Arc<dyn ReplayStore>,
        capability: VerifierCapability,
    ) -> Self {
        Self {
            keys,
            replay,
            capability,
            profile: Profile::request_v3_2(),
            clock: Arc::new(SystemClock),
            binding: None,
            scheme: "https".to_owned(),
            base_url: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            admission: None,
            batcher: None,
            authenticator: Hook::None,
        }
    }

    /// The verification profile (default [`Profile::request_v3_2`]). A
    /// legacy 3.0/3.1 endpoint must say so explicitly with
    /// [`Profile::request_legacy`] and the `covers_content_digest` policy
    /// it advertises (`either` or `forbidden`); [`Self::build`] checks the
    /// two agree ([`VerifierCapability::check_profile`]). Nothing in a
    /// request ever selects the profile.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// How requests carry their operation on this endpoint: JSON-RPC (MCP
    /// `tools/call`, A2A), the A2A HTTP+JSON binding, or one operation per
    /// path. Default: inferred from each request's **path** as
    /// [`Binding::infer`] does (`…/message:send` → HTTP+JSON, `/adcp/<op>`
    /// → operation path, anything else → JSON-RPC). Never read from the
    /// body. Set it when the endpoint's routes do not follow that layout.
    pub fn binding(mut self, binding: Binding) -> Self {
        self.binding = Some(binding);
        self
    }

    /// The scheme callers use to reach this endpoint, to rebuild the
    /// absolute `@target-uri` as `scheme://authority/path?query` with the
    /// authority as received (`:authority` / request-target authority, else
    /// `Host`). Default `https`, also right behind a TLS-terminating proxy.
    pub fn scheme(mut self, scheme: impl Into<String>) -> Self {
        self.scheme = scheme.into();
        self
    }

    /// The endpoint's public base URL (`https://seller.example.com`, or
    /// with a path prefix a proxy strips, `https://seller.example.com/api`):
    /// the `@target-uri` is this base followed by the received path and
    /// query. The received `Host` / `:authority` still takes part in the
    /// checklist, which requires it to match the signed authority.
    pub fn public_base_url(mut self, base: impl Into<String>) -> Self {
        self.base_url = Some(base.into());
        self
    }

    /// The largest body accepted, in bytes (default
    /// [`DEFAULT_MAX_BODY_BYTES`], 1 MiB). Checked from `Content-Length`
    /// before reading and while reading, before any parsing or
    /// cryptography: `413`.
    pub fn max_body_bytes(mut self, max_body_bytes: usize) -> Self {
        self.max_body_bytes = max_body_bytes;
        self
    }

    /// The clock (default: the system clock). Tests pin it.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Tracks new-keyid admission pressure on every replay-cache admission
    /// (alarms go to `tracing` and the monitor).
    pub fn admission_monitor(mut self, monitor: AdmissionMonitor) -> Self {
        self.admission = Some(monitor);
        self
    }

    /// Checks the Ed25519 signatures of concurrent requests together on
    /// `batcher`'s threads (opt-in, for servers under load; see
    /// [`adcp_verify::SignatureBatcher`]). Default: each request's
    /// signature is checked on its own task.
    pub fn signature_batcher(mut self, batcher: adcp_verify::SignatureBatcher) -> Self {
        self.batcher = Some(batcher);
        self
    }

    /// The application's independent-credential check (default: none,
    /// [`NoFallback`](crate::NoFallback)).
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Hook::Custom(Box::new(authenticator));
        self
    }

    /// [`Self::authenticator`] for a synchronous closure.
    pub fn authenticator_fn<F>(self, f: F) -> Self
    where
        F: Fn(&Parts, &ResolvedRequest) -> FallbackCredential + Send + Sync + 'static,
    {
        self.authenticator(f)
    }

    /// Validates and builds.
    ///
    /// # Errors
    ///
    /// [`BuildError`].
    pub fn build(self) -> Result<RequestVerifier, BuildError> {
        if self.profile.is_webhook() {
            return Err(BuildError::WebhookProfile);
        }
        self.capability.check_profile(&self.profile)?;
        if self.max_body_bytes == 0 {
            return Err(BuildError::InvalidBodyLimit);
        }
        let target = match self.base_url {
            Some(base) => Target::Base(check_base(&base)?),
            None => match self.scheme.as_str() {
                "https" => Target::Scheme("https"),
                "http" => Target::Scheme("http"),
                _ => return Err(BuildError::InvalidScheme),
            },
        };
        let mut verifier = Verifier::new(self.profile, self.keys, self.replay, Arc::clone(&self.clock))
            .with_max_body_bytes(self.max_body_bytes);
        if let Some(monitor) = self.admission {
            verifier = verifier.with_admission_monitor(monitor);
        }
        if let Some(batcher) = self.batcher {
            verifier = verifier.with_signature_batcher(batcher);
        }
        Ok(RequestVerifier {
            inner: Arc::new(Inner {
                verifier,
                capability: self.capability,
                binding: self.binding,
                target,
                max_body_bytes: self.max_body_bytes,
                authenticator: self.authenticator,
                clock: self.clock,
            }),
        })
    }
}

/// `http(s)://authority[/path]`, no query or fragment; returned without a
/// trailing slash.
fn check_base(base: &str) -> Result<String, BuildError> {
    let rest = base
        .strip_prefix("https://")
        .or_else(|| base.strip_prefix("http://"))
        .ok_or(BuildError::InvalidBaseUrl)?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty()
        || rest.contains(['?', '#'])
        || rest.bytes().any(|b| !b.is_ascii_graphic())
        || authority.contains('@')
    {
        return Err(BuildError::InvalidBaseUrl);
    }
    Ok(base.trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        assert_eq!(
            check_base("https://seller.example.com/").as_deref(),
            Ok("https://seller.example.com")
        );
        assert_eq!(
            check_base("http://[::1]:8080/api").as_deref(),
            Ok("http://[::1]:8080/api")
        );
        for bad in [
            "seller.example.com",
            "ftp://x",
            "https://",
            "https:///p",
            "https://h/p?q",
            "https://u@h",
            "https://h/ p",
        ] {
            assert_eq!(check_base(bad), Err(BuildError::InvalidBaseUrl), "{bad}");
        }
    }
}
