//! The buyer's subscriber registrations: what a seller was told to send
//! to which URL, so the receiver can answer its activation challenge and
//! hold its notifications to the registration.
//!
//! AdCP 3.2 sellers activate an account-level (`notification_configs[]`)
//! or agent-level subscriber only after the buyer proves control of the
//! URL: an RFC 9421-signed `webhook.challenge` POST whose every binding
//! (signer, URL, account or agent scope, subscriber, delivery auth, event
//! types) the receiver checks before echoing the single-use value. The
//! application knows its registrations; it hands them to the receiver
//! through [`Subscriptions`] (or [`StaticSubscriptions`] for a fixed set).

use async_trait::async_trait;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

/// Who a registration is anchored to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SubscriptionScope {
    /// An account-level `notification_configs[]` entry of this seller
    /// account.
    Account(String),
    /// An agent-level (caller-anchored) registration (`scope: "agent"`).
    Agent,
}

/// How the seller authenticates deliveries to the registered URL (the
/// challenge's `delivery_auth`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeliveryAuthMode {
    /// The RFC 9421 webhook profile (no `authentication` block).
    Rfc9421,
    /// Deprecated legacy `Bearer`, with the SHA-256 hex fingerprint of the
    /// exact credential string.
    Bearer {
        /// Lowercase SHA-256 hex of the credential.
        credential_fingerprint: String,
    },
    /// Deprecated legacy `HMAC-SHA256`, with the SHA-256 hex fingerprint
    /// of the exact secret string.
    HmacSha256 {
        /// Lowercase SHA-256 hex of the secret.
        credential_fingerprint: String,
    },
}

impl DeliveryAuthMode {
    /// The wire name of the mode (`rfc9421`, `Bearer`, `HMAC-SHA256`).
    #[must_use]
    pub fn mode(&self) -> &'static str {
        match self {
            Self::Rfc9421 => "rfc9421",
            Self::Bearer { .. } => "Bearer",
            Self::HmacSha256 { .. } => "HMAC-SHA256",
        }
    }

    /// The credential fingerprint of a legacy mode.
    #[must_use]
    pub fn credential_fingerprint(&self) -> Option<&str> {
        match self {
            Self::Rfc9421 => None,
            Self::Bearer { credential_fingerprint } | Self::HmacSha256 { credential_fingerprint } => {
                Some(credential_fingerprint)
            }
        }
    }

    /// The mode a challenge's `delivery_auth` names, if valid (a legacy
    /// mode needs a 64-hex-digit fingerprint, `rfc9421` none).
    #[must_use]
    pub fn from_wire(mode: &str, credential_fingerprint: Option<&str>) -> Option<Self> {
        let fingerprint = || {
            credential_fingerprint
                .filter(|f| f.len() == 64 && f.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
                .map(str::to_owned)
        };
        match (mode, credential_fingerprint) {
            ("rfc9421", None) => Some(Self::Rfc9421),
            ("Bearer", Some(_)) => Some(Self::Bearer {
                credential_fingerprint: fingerprint()?,
            }),
            ("HMAC-SHA256", Some(_)) => Some(Self::HmacSha256 {
                credential_fingerprint: fingerprint()?,
            }),
            _ => None,
        }
    }
}

/// One subscriber registration, as the buyer made it with the seller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The registered URL, in AdCP canonical form (`adcp_canon::canonicalize`):
    /// the challenge's signed `@target-uri` must equal it.
    pub url: String,
    /// The seller agent URL that signs the challenge and the deliveries
    /// (compared byte for byte with the verified signer).
    pub seller_agent_url: String,
    /// The buyer-chosen subscriber identifier.
    pub subscriber_id: String,
    /// Account-level or agent-level.
    pub scope: SubscriptionScope,
    /// How the seller will authenticate deliveries.
    pub delivery_auth: DeliveryAuthMode,
    /// The registered event types (a set: order and repeats do not count).
    pub event_types: BTreeSet<String>,
    /// `false` for a paused registration: nothing is accepted for it.
    pub active: bool,
}

/// Why the registrations could not be read (the receiver fails closed:
/// `503`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("subscriptions unavailable: {0}")]
pub struct SubscriptionsError(pub String);

/// The application's registrations, looked up by canonical URL.
#[async_trait]
pub trait Subscriptions: Send + Sync {
    /// The registration of `canonical_url` (AdCP canonical form), if the
    /// buyer registered that URL with a seller.
    async fn lookup(&self, canonical_url: &str) -> Result<Option<Arc<Registration>>, SubscriptionsError>;
}

/// A fixed set of registrations (configuration, tests).
#[derive(Clone, Default)]
pub struct StaticSubscriptions {
    by_url: HashMap<String, Arc<Registration>>,
}

impl fmt::Debug for StaticSubscriptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticSubscriptions")
            .field("urls", &self.by_url.keys().collect::<BTreeSet<_>>())
            .finish()
    }
}

/// A registration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// The URL does not canonicalize.
    #[error("registration url {0:?} is not a valid URL")]
    InvalidUrl(String),
    /// Two registrations for one canonical URL.
    #[error("registration url {0:?} is registered twice")]
    DuplicateUrl(String),
}

impl StaticSubscriptions {
    /// No registrations.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `registration`; its URL is canonicalized first.
    ///
    /// # Errors
    ///
    /// [`RegistrationError`].
    pub fn with(mut self, mut registration: Registration) -> Result<Self, RegistrationError> {
        let canonical = adcp_canon::canonicalize(&registration.url)
            .map_err(|_| RegistrationError::InvalidUrl(registration.url.clone()))?
            .into_string();
        if self.by_url.contains_key(&canonical) {
            return Err(RegistrationError::DuplicateUrl(canonical));
        }
        registration.url.clone_from(&canonical);
        self.by_url.insert(canonical, Arc::new(registration));
        Ok(self)
    }

    /// How many registrations.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_url.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_url.is_empty()
    }
}

#[async_trait]
impl Subscriptions for StaticSubscriptions {
    async fn lookup(&self, canonical_url: &str) -> Result<Option<Arc<Registration>>, SubscriptionsError> {
        Ok(self.by_url.get(canonical_url).cloned())
    }
}
