//! The `webhook_signing` block of `get_adcp_capabilities`, produced from
//! the outbox's wiring, and a start-up check that refuses to advertise
//! what is not wired.
//!
//! [`webhook_signing_block`] reads the configured signers (their
//! algorithms) and the [`OutboxConfig`] (its retry horizon);
//! [`check_advertised`] compares a whole `get_adcp_capabilities` response
//! with the same wiring and refuses, with a [`CapabilityError`] naming the
//! mismatch: an advertised `delivery_retry_horizon_seconds` the outbox does
//! not keep, an advertised algorithm no configured key signs with, and a
//! configured `capabilities.changed` coalescing window longer than the
//! advertised `adcp.capability_changes.notifications.coalescence_window_seconds`.
//!
//! ```
//! use adcp_outbox::capabilities::{check_advertised, webhook_signing_block};
//! use adcp_outbox::{OutboxConfig, StaticSigners};
//! use adcp_sign::{Algorithm, BoxSigner, HttpSigner, SoftwareSigner};
//! use serde_json::json;
//!
//! let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-01")?;
//! let signers = StaticSigners::new().with("default", HttpSigner::webhook(BoxSigner::new(key))?);
//! let config = OutboxConfig::default();
//!
//! let block = webhook_signing_block(&signers, &config, false)?;
//! assert_eq!(block.algorithms, ["ed25519"]);
//! assert_eq!(block.delivery_retry_horizon_seconds, 86_400);
//!
//! let response = json!({"webhook_signing": block.to_json()});
//! check_advertised(&response, &signers, &config)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::dispatch::{SignerResolver, StaticSigners};
use crate::outbox::OutboxConfig;
use adcp_sign::{Algorithm, Signer as _};
use serde_json::{json, Value};
use std::time::Duration;

/// The webhook-signing profile the outbox signs with (the `tag=` of its
/// `Signature-Input`), the only value of the 3.2 `profile` enum.
pub const WEBHOOK_SIGNING_PROFILE: &str = "adcp/webhook-signing/v1";

/// The notification type whose coalescing window the advertised
/// `coalescence_window_seconds` bounds.
const CAPABILITIES_CHANGED: &str = "capabilities.changed";

/// The `webhook_signing` block of `get_adcp_capabilities` (AdCP 3.2), as
/// the outbox's wiring supports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSigningCapability {
    /// `supported`: always `true` (the outbox signs with RFC 9421 every
    /// delivery to a destination registered without legacy credentials).
    pub supported: bool,
    /// `profile`: [`WEBHOOK_SIGNING_PROFILE`].
    pub profile: &'static str,
    /// `algorithms`: the RFC 9421 names of the configured keys'
    /// algorithms, each once, `ed25519` before `ecdsa-p256-sha256`.
    pub algorithms: Vec<&'static str>,
    /// `legacy_hmac_fallback`: the application's choice. The outbox
    /// delivers with HMAC-SHA256 to a destination whose registration
    /// carries that legacy `authentication`; whether such registrations are
    /// accepted is the application's to decide (the member is deprecated in
    /// the spec and removed in AdCP 4.0).
    pub legacy_hmac_fallback: bool,
    /// `delivery_retry_horizon_seconds`: the outbox's retry horizon.
    pub delivery_retry_horizon_seconds: u64,
}

impl WebhookSigningCapability {
    /// The block as JSON, with the schema's member names.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "supported": self.supported,
            "profile": self.profile,
            "algorithms": self.algorithms,
            "legacy_hmac_fallback": self.legacy_hmac_fallback,
            "delivery_retry_horizon_seconds": self.delivery_retry_horizon_seconds,
        })
    }
}

/// A capability the wiring does not back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CapabilityError {
    /// No configured signer: nothing to put in `algorithms` (the schema
    /// needs at least one).
    #[error("webhook_signing: no signing key is configured, so there is no algorithm to advertise")]
    NoSigningKey,
    /// A configured key uses an algorithm the webhook profile does not
    /// permit (only `ed25519` and `ecdsa-p256-sha256`).
    #[error(
        "webhook_signing: signing scope {scope:?} uses {algorithm}, which {WEBHOOK_SIGNING_PROFILE} does not permit"
    )]
    AlgorithmNotInProfile {
        /// The signing scope of the key.
        scope: String,
        /// The key's algorithm.
        algorithm: &'static str,
    },
    /// The response has no `webhook_signing` object.
    #[error("webhook_signing is not advertised (or is not an object)")]
    NotAdvertised,
    /// `webhook_signing.supported` is not `true` while the outbox signs
    /// with RFC 9421.
    #[error(
        "webhook_signing.supported is {advertised}, but the outbox signs deliveries with RFC 9421 (it must be true)"
    )]
    NotSupported {
        /// The advertised value, as JSON.
        advertised: String,
    },
    /// `webhook_signing.profile` is not the profile the outbox signs with.
    #[error("webhook_signing.profile is {advertised}, but the outbox signs with {WEBHOOK_SIGNING_PROFILE}")]
    ProfileMismatch {
        /// The advertised value, as JSON.
        advertised: String,
    },
    /// `webhook_signing.delivery_retry_horizon_seconds` is absent, while a
    /// webhook-emitting 3.2 agent must populate it.
    #[error("webhook_signing.delivery_retry_horizon_seconds is not advertised; the outbox keeps {kept} s")]
    HorizonNotAdvertised {
        /// The outbox's horizon, in seconds.
        kept: u64,
    },
    /// The advertised horizon is not the one the outbox keeps.
    #[error("webhook_signing.delivery_retry_horizon_seconds is {advertised}, but the outbox keeps a {kept} s horizon")]
    HorizonMismatch {
        /// The advertised value, as JSON.
        advertised: String,
        /// The outbox's horizon, in seconds.
        kept: u64,
    },
    /// `webhook_signing.algorithms` is absent or empty.
    #[error("webhook_signing.algorithms is not advertised (or is empty)")]
    AlgorithmsNotAdvertised,
    /// An advertised algorithm that no configured key signs with.
    #[error("webhook_signing.algorithms advertises {algorithm}, but no configured signing key uses it")]
    AlgorithmWithoutKey {
        /// The advertised algorithm, as JSON.
        algorithm: String,
    },
    /// The configured `capabilities.changed` coalescing window is longer
    /// than the advertised `coalescence_window_seconds`.
    #[error(
        "the configured capabilities.changed coalescing window is {configured} s, longer than the advertised \
         adcp.capability_changes.notifications.coalescence_window_seconds ({advertised} s)"
    )]
    CoalescingWindowTooLong {
        /// The configured window, in seconds (rounded up).
        configured: u64,
        /// The advertised window, in seconds.
        advertised: u64,
    },
    /// `coalescence_window_seconds` is advertised but is not a
    /// non-negative integer.
    #[error(
        "adcp.capability_changes.notifications.coalescence_window_seconds is {advertised}, not a non-negative integer"
    )]
    CoalescenceWindowInvalid {
        /// The advertised value, as JSON.
        advertised: String,
    },
}

/// The `webhook_signing` block the wiring supports: `algorithms` from the
/// configured signers, `delivery_retry_horizon_seconds` from
/// `config.retry`, `legacy_hmac_fallback` as given.
///
/// # Errors
///
/// [`CapabilityError::NoSigningKey`] without a signer,
/// [`CapabilityError::AlgorithmNotInProfile`] for a key the profile does
/// not permit.
pub fn webhook_signing_block(
    signers: &StaticSigners,
    config: &OutboxConfig,
    legacy_hmac_fallback: bool,
) -> Result<WebhookSigningCapability, CapabilityError> {
    let configured = configured_algorithms(signers)?;
    if configured.is_empty() {
        return Err(CapabilityError::NoSigningKey);
    }
    let algorithms = [Algorithm::Ed25519, Algorithm::EcdsaP256Sha256]
        .into_iter()
        .filter(|a| configured.contains(a))
        .map(Algorithm::as_str)
        .collect();
    Ok(WebhookSigningCapability {
        supported: true,
        profile: WEBHOOK_SIGNING_PROFILE,
        algorithms,
        legacy_hmac_fallback,
        delivery_retry_horizon_seconds: config.retry.horizon().as_secs(),
    })
}

/// Checks a whole `get_adcp_capabilities` response against the wiring,
/// before it is served: `webhook_signing` must be present with
/// `supported: true`, the outbox's profile, only algorithms some configured
/// key uses, and `delivery_retry_horizon_seconds` equal to the outbox's
/// horizon; when `adcp.capability_changes.notifications.coalescence_window_seconds`
/// is advertised, the configured `capabilities.changed` coalescing window
/// must not be longer. `legacy_hmac_fallback` is the application's to
/// decide and is not checked.
///
/// # Errors
///
/// The first mismatch found, as a [`CapabilityError`] naming it.
pub fn check_advertised(
    response: &Value,
    signers: &StaticSigners,
    config: &OutboxConfig,
) -> Result<(), CapabilityError> {
    let block = response
        .get("webhook_signing")
        .and_then(Value::as_object)
        .ok_or(CapabilityError::NotAdvertised)?;
    let supported = block.get("supported").unwrap_or(&Value::Null);
    if supported != &Value::Bool(true) {
        return Err(CapabilityError::NotSupported {
            advertised: supported.to_string(),
        });
    }
    let profile = block.get("profile").unwrap_or(&Value::Null);
    if profile.as_str() != Some(WEBHOOK_SIGNING_PROFILE) {
        return Err(CapabilityError::ProfileMismatch {
            advertised: profile.to_string(),
        });
    }

    let kept = config.retry.horizon().as_secs();
    match block.get("delivery_retry_horizon_seconds") {
        None => return Err(CapabilityError::HorizonNotAdvertised { kept }),
        Some(advertised) if advertised.as_u64() != Some(kept) => {
            return Err(CapabilityError::HorizonMismatch {
                advertised: advertised.to_string(),
                kept,
            })
        }
        Some(_) => {}
    }

    let advertised = block
        .get("algorithms")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or(CapabilityError::AlgorithmsNotAdvertised)?;
    let configured = configured_algorithms(signers)?;
    for algorithm in advertised {
        let backed = algorithm
            .as_str()
            .is_some_and(|name| configured.iter().any(|a| a.as_str() == name));
        if !backed {
            return Err(CapabilityError::AlgorithmWithoutKey {
                algorithm: algorithm.to_string(),
            });
        }
    }

    let window = response
        .pointer("/adcp/capability_changes/notifications/coalescence_window_seconds")
        .filter(|v| !v.is_null());
    if let Some(window) = window {
        let advertised = window
            .as_u64()
            .ok_or_else(|| CapabilityError::CoalescenceWindowInvalid {
                advertised: window.to_string(),
            })?;
        let configured = config.coalescing.default_for(CAPABILITIES_CHANGED);
        if configured > Duration::from_secs(advertised) {
            return Err(CapabilityError::CoalescingWindowTooLong {
                configured: ceil_secs(configured),
                advertised,
            });
        }
    }
    Ok(())
}

/// The algorithms of the configured signers, each once.
fn configured_algorithms(signers: &StaticSigners) -> Result<Vec<Algorithm>, CapabilityError> {
    let mut scopes: Vec<&str> = signers.scopes().collect();
    scopes.sort_unstable();
    let mut algorithms = Vec::new();
    for scope in scopes {
        let Some(signer) = signers.signer(scope) else { continue };
        let algorithm = signer.signer().algorithm();
        if !matches!(algorithm, Algorithm::Ed25519 | Algorithm::EcdsaP256Sha256) {
            return Err(CapabilityError::AlgorithmNotInProfile {
                scope: scope.to_owned(),
                algorithm: algorithm.as_str(),
            });
        }
        if !algorithms.contains(&algorithm) {
            algorithms.push(algorithm);
        }
    }
    Ok(algorithms)
}

/// Whole seconds, rounded up (a 300.5 s window is longer than 300 s).
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}
