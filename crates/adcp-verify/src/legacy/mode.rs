//! The webhook authentication mode switch.
//!
//! The spec: the presence of an `authentication` block on the registration
//! "selects exactly one signing mode for every webhook delivered to that
//! URL: `authentication` present → legacy HMAC-SHA256 (or Bearer);
//! `authentication` absent → 9421", and buyers "MUST NOT attempt 'try 9421
//! first, fall back to HMAC' verification". So the mode is configuration
//! ([`WebhookAuthMode`], built from the registration), the received
//! headers are only inspected to refuse a mismatch ([`SchemeEvidence`]),
//! and [`WebhookAuthMode::verify`] runs exactly one verifier: the
//! registration's.
//!
//! A received webhook carries a scheme when it has any of its headers:
//!
//! | Scheme | Evidence |
//! |---|---|
//! | [`WebhookScheme::Rfc9421`] | `Signature-Input` or `Signature` |
//! | [`WebhookScheme::HmacSha256`] | `X-ADCP-Signature` or `X-ADCP-Timestamp` |
//! | [`WebhookScheme::Bearer`] | an `Authorization` line with the `Bearer` scheme |
//!
//! Any evidence of a scheme other than the registered one is
//! `webhook_mode_mismatch` (step 0, HTTP 401, terminal for the delivery),
//! even when the registered scheme's headers are present too (a webhook
//! signed both ways is forbidden) and even when the foreign signature
//! would verify. It is logged with `tracing::warn!` (target
//! `adcp_verify::legacy`) so operators can alarm on it. A webhook with no
//! evidence at all passes the switch and is rejected by the registered
//! scheme's verifier for its missing headers. An `Authorization` header
//! with another scheme (`Basic …`) is not evidence of anything.

use super::bearer::{self, BearerToken, AUTHORIZATION_HEADER};
use super::hmac::{HmacSecrets, HmacVerified, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use super::{fail, ConfigError, TRACING_TARGET};
use crate::clock::Clock;
use crate::error::{ErrorCode, VerifyError};
use crate::keys::KeyResolver;
use crate::replay::ReplayStore;
use crate::verifier::{VerifiedSigner, Verifier};
use adcp_sigbase::Message;
use serde_json::Value;
use std::fmt;

/// A webhook authentication scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WebhookScheme {
    /// The AdCP RFC 9421 webhook profile (`adcp/webhook-signing/v1`).
    Rfc9421,
    /// Legacy `X-ADCP-Signature: sha256=…` / `X-ADCP-Timestamp`.
    HmacSha256,
    /// Legacy `Authorization: Bearer …`.
    Bearer,
}

impl WebhookScheme {
    /// Every scheme, in a fixed order.
    pub const ALL: [Self; 3] = [Self::Rfc9421, Self::HmacSha256, Self::Bearer];

    /// A stable name for logs: `rfc9421`, `hmac-sha256`, `bearer`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Rfc9421 => "rfc9421",
            Self::HmacSha256 => "hmac-sha256",
            Self::Bearer => "bearer",
        }
    }

    /// Whether this is a deprecated legacy scheme.
    pub const fn is_legacy(self) -> bool {
        !matches!(self, Self::Rfc9421)
    }
}

impl fmt::Display for WebhookScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The schemes a received webhook carries headers of (see the [module
/// documentation](self) for what counts). Several may be present; none
/// may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SchemeEvidence {
    rfc9421: bool,
    hmac_sha256: bool,
    bearer: bool,
}

impl SchemeEvidence {
    /// Inspects the header names of `msg` (and the scheme of any
    /// `Authorization` line). Nothing is parsed or verified.
    pub fn of(msg: &Message<'_>) -> Self {
        let has = |name: &str| msg.field_lines(name).next().is_some();
        Self {
            rfc9421: has("signature-input") || has("signature"),
            hmac_sha256: has(SIGNATURE_HEADER) || has(TIMESTAMP_HEADER),
            bearer: msg.field_lines(AUTHORIZATION_HEADER).any(bearer::is_bearer),
        }
    }

    /// Whether the webhook carries headers of `scheme`.
    pub fn contains(&self, scheme: WebhookScheme) -> bool {
        match scheme {
            WebhookScheme::Rfc9421 => self.rfc9421,
            WebhookScheme::HmacSha256 => self.hmac_sha256,
            WebhookScheme::Bearer => self.bearer,
        }
    }

    /// Whether the webhook carries no authentication headers at all.
    pub fn is_empty(&self) -> bool {
        !(self.rfc9421 || self.hmac_sha256 || self.bearer)
    }

    /// The schemes present, in [`WebhookScheme::ALL`] order.
    pub fn schemes(&self) -> impl Iterator<Item = WebhookScheme> + '_ {
        WebhookScheme::ALL.into_iter().filter(|s| self.contains(*s))
    }
}

impl fmt::Display for SchemeEvidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        for (i, scheme) in self.schemes().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            f.write_str(scheme.as_str())?;
        }
        Ok(())
    }
}

/// How one webhook registration authenticates its deliveries, chosen
/// strictly from the registration (never from a received webhook).
///
/// The legacy variants hold credentials that can only be built through
/// [`HmacSecrets::new`] / [`BearerToken::new`], which validate them and log
/// the deprecation warning. `Debug` redacts credentials.
#[derive(Debug, Clone)]
pub enum WebhookAuthMode {
    /// No `authentication` block: the RFC 9421 webhook profile.
    Rfc9421,
    /// `authentication.schemes: ["HMAC-SHA256"]` (deprecated).
    HmacSha256 {
        /// The shared secret(s).
        secrets: HmacSecrets,
    },
    /// `authentication.schemes: ["Bearer"]` (deprecated).
    Bearer {
        /// The token.
        token: BearerToken,
    },
}

/// What [`WebhookAuthMode::verify`] established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifiedWebhook {
    /// Verified under the RFC 9421 webhook profile.
    Rfc9421(VerifiedSigner),
    /// Verified under legacy HMAC-SHA256.
    HmacSha256(HmacVerified),
    /// Verified under a legacy Bearer token.
    Bearer,
}

impl VerifiedWebhook {
    /// The scheme that verified.
    pub fn scheme(&self) -> WebhookScheme {
        match self {
            Self::Rfc9421(_) => WebhookScheme::Rfc9421,
            Self::HmacSha256(_) => WebhookScheme::HmacSha256,
            Self::Bearer => WebhookScheme::Bearer,
        }
    }
}

impl WebhookAuthMode {
    /// The mode a registration selects, from its `authentication` member
    /// (`push_notification_config.authentication`,
    /// `accounts[].notification_configs[].authentication`,
    /// `sync_agent_notification_configs.notification_configs[].authentication`):
    ///
    /// - absent or `null` → [`WebhookAuthMode::Rfc9421`];
    /// - `{"schemes": ["HMAC-SHA256"], "credentials": "<secret>"}` →
    ///   [`WebhookAuthMode::HmacSha256`];
    /// - `{"schemes": ["Bearer"], "credentials": "<token>"}` →
    ///   [`WebhookAuthMode::Bearer`].
    ///
    /// `schemes` must hold exactly one of those two names, spelled exactly;
    /// `credentials` must be a string (its UTF-8 bytes are the secret).
    /// Other members are ignored.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidAuthentication`] for any other shape, or the
    /// credential's own [`ConfigError`].
    pub fn from_registration(authentication: Option<&Value>) -> Result<Self, ConfigError> {
        let invalid = ConfigError::InvalidAuthentication;
        let block = match authentication {
            None | Some(Value::Null) => return Ok(Self::Rfc9421),
            Some(Value::Object(block)) => block,
            Some(_) => return Err(invalid("must be an object")),
        };
        let scheme = match block.get("schemes").and_then(Value::as_array).map(Vec::as_slice) {
            Some([Value::String(scheme)]) => scheme.as_str(),
            Some(_) => return Err(invalid("`schemes` must hold exactly one scheme")),
            None => return Err(invalid("`schemes` must be an array")),
        };
        let credentials = block
            .get("credentials")
            .and_then(Value::as_str)
            .ok_or(invalid("`credentials` must be a string"))?;
        match scheme {
            "HMAC-SHA256" => Ok(Self::HmacSha256 {
                secrets: HmacSecrets::new(credentials)?,
            }),
            "Bearer" => Ok(Self::Bearer {
                token: BearerToken::new(credentials)?,
            }),
            _ => Err(invalid("`schemes` must be [\"HMAC-SHA256\"] or [\"Bearer\"]")),
        }
    }

    /// The registered scheme.
    pub fn scheme(&self) -> WebhookScheme {
        match self {
            Self::Rfc9421 => WebhookScheme::Rfc9421,
            Self::HmacSha256 { .. } => WebhookScheme::HmacSha256,
            Self::Bearer { .. } => WebhookScheme::Bearer,
        }
    }

    /// The same mode with its legacy credential checker limited to bodies
    /// of `max_body_bytes` (the RFC 9421 path takes its limit from the
    /// [`Verifier`] it is given). A receiver sets one limit for both.
    #[must_use]
    pub fn with_max_body_bytes(self, max_body_bytes: usize) -> Self {
        match self {
            Self::Rfc9421 => Self::Rfc9421,
            Self::HmacSha256 { secrets } => Self::HmacSha256 {
                secrets: secrets.with_max_body_bytes(max_body_bytes),
            },
            Self::Bearer { token } => Self::Bearer {
                token: token.with_max_body_bytes(max_body_bytes),
            },
        }
    }

    /// Whether the registered scheme is a deprecated legacy one.
    pub fn is_legacy(&self) -> bool {
        self.scheme().is_legacy()
    }

    /// The mode switch: rejects with `webhook_mode_mismatch` (step 0) when
    /// `msg` carries headers of any scheme other than the registered one,
    /// and logs the mismatch. Passing says nothing about authenticity: run
    /// the registered scheme's verifier next (or use
    /// [`WebhookAuthMode::verify`], which does both).
    ///
    /// # Errors
    ///
    /// [`ErrorCode::ModeMismatch`].
    pub fn check_scheme(&self, msg: &Message<'_>) -> Result<(), VerifyError> {
        let registered = self.scheme();
        let received = SchemeEvidence::of(msg);
        if received.schemes().all(|s| s == registered) {
            return Ok(());
        }
        tracing::warn!(
            target: TRACING_TARGET,
            registered = registered.as_str(),
            received = %received,
            "webhook_mode_mismatch: webhook authentication differs from the registration (possible downgrade or injection)"
        );
        Err(fail(
            ErrorCode::ModeMismatch,
            0,
            format!("registered {registered}, received {received}"),
        ))
    }

    /// Verifies a received webhook under this registration's mode and only
    /// that mode: [`check_scheme`](Self::check_scheme), then
    /// `rfc9421.verify(msg)`, [`HmacSecrets::verify`] (with `clock`) or
    /// [`BearerToken::verify`]. `rfc9421` must be built with
    /// [`Profile::webhook_v1`](crate::profile::Profile::webhook_v1); it is
    /// used only for [`WebhookAuthMode::Rfc9421`], and `clock` only for HMAC.
    ///
    /// # Errors
    ///
    /// `webhook_mode_mismatch`, or the selected verifier's error.
    pub async fn verify<K, S, C, L>(
        &self,
        msg: &Message<'_>,
        rfc9421: &Verifier<K, S, C>,
        clock: &L,
    ) -> Result<VerifiedWebhook, VerifyError>
    where
        K: KeyResolver,
        S: ReplayStore,
        C: Clock,
        L: Clock + ?Sized,
    {
        self.check_scheme(msg)?;
        match self {
            Self::Rfc9421 => rfc9421.verify(msg).await.map(VerifiedWebhook::Rfc9421),
            Self::HmacSha256 { secrets } => secrets.verify(msg, clock).map(VerifiedWebhook::HmacSha256),
            Self::Bearer { token } => token.verify(msg).map(|()| VerifiedWebhook::Bearer),
        }
    }

    /// [`verify`](Self::verify) with RFC 9421's replay entry possibly not
    /// yet durable ([`Verifier::verify_early`]): the caller must
    /// [`Durability::wait`](crate::Durability::wait) before accepting the
    /// webhook. HMAC and Bearer keep no replay entry: their durability is
    /// [`Durability::durable`](crate::Durability::durable).
    ///
    /// # Errors
    ///
    /// As [`verify`](Self::verify).
    pub async fn verify_early<K, S, C, L>(
        &self,
        msg: &Message<'_>,
        rfc9421: &Verifier<K, S, C>,
        clock: &L,
    ) -> Result<(VerifiedWebhook, crate::Durability), VerifyError>
    where
        K: KeyResolver,
        S: ReplayStore,
        C: Clock,
        L: Clock + ?Sized,
    {
        match self {
            Self::Rfc9421 => {
                self.check_scheme(msg)?;
                let (signer, durability) = rfc9421.verify_early(msg).await?;
                Ok((VerifiedWebhook::Rfc9421(signer), durability))
            }
            Self::HmacSha256 { .. } | Self::Bearer { .. } => self
                .verify(msg, rfc9421, clock)
                .await
                .map(|verified| (verified, crate::Durability::durable())),
        }
    }
}
