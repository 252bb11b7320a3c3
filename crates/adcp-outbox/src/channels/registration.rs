//! A channel's registration: what the buyer registered, the channel id
//! it is kept under, and the fingerprint of its proof scope.

use crate::error::OutboxError;
use crate::event::OutboxDestination;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// What a channel is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// A media buy's `push_notification_config` (its task updates and
    /// impairments).
    PushNotificationConfig,
    /// A media buy's `reporting_webhook` (its delivery reports).
    ReportingWebhook,
    /// An account-level subscriber (`sync_accounts`
    /// `notification_configs[]`): activated by a challenge first.
    Account,
    /// An agent-level subscriber (`sync_agent_notification_configs`):
    /// activated by a challenge first.
    Agent,
}

impl ChannelKind {
    /// The stored spelling, also the channel id's prefix.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::PushNotificationConfig => "push_notification_config",
            Self::ReportingWebhook => "reporting_webhook",
            Self::Account => "account",
            Self::Agent => "agent",
        }
    }

    /// Reads [`as_str`](Self::as_str).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::PushNotificationConfig,
            Self::ReportingWebhook,
            Self::Account,
            Self::Agent,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }

    /// Whether a subscriber of this kind becomes active only after its
    /// activation challenge succeeded (account and agent subscribers).
    #[must_use]
    pub const fn needs_activation(self) -> bool {
        matches!(self, Self::Account | Self::Agent)
    }
}

/// A channel as the buyer registered it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelRegistration {
    pub(crate) id: String,
    pub(crate) kind: ChannelKind,
    /// The scope the channel belongs to: the media buy, the account, or
    /// the principal that owns an agent-level subscriber.
    pub(crate) anchor: String,
    pub(crate) registration: Value,
}

fn refused(message: impl Into<String>) -> OutboxError {
    OutboxError::invalid("invalid_registration", message)
}

fn subscriber_id(entry: &Value) -> Result<&str, OutboxError> {
    entry
        .get("subscriber_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 64)
        .ok_or_else(|| refused("a subscriber needs a subscriber_id (1-64 characters)"))
}

impl ChannelRegistration {
    /// A media buy's `push_notification_config`; channel id
    /// `push_notification_config:{media_buy_id}`.
    ///
    /// # Errors
    ///
    /// `invalid_destination` (no usable `url` or `authentication`).
    pub fn push_notification_config(media_buy_id: &str, config: &Value) -> Result<Self, OutboxError> {
        Self::buy(ChannelKind::PushNotificationConfig, media_buy_id, config)
    }

    /// A media buy's `reporting_webhook`; channel id
    /// `reporting_webhook:{media_buy_id}` (the reporting schedule's).
    ///
    /// # Errors
    ///
    /// As [`push_notification_config`](Self::push_notification_config).
    pub fn reporting_webhook(media_buy_id: &str, config: &Value) -> Result<Self, OutboxError> {
        Self::buy(ChannelKind::ReportingWebhook, media_buy_id, config)
    }

    fn buy(kind: ChannelKind, media_buy_id: &str, config: &Value) -> Result<Self, OutboxError> {
        OutboxDestination::from_registration(config)?;
        Ok(Self {
            id: format!("{}:{media_buy_id}", kind.as_str()),
            kind,
            anchor: media_buy_id.to_owned(),
            registration: config.clone(),
        })
    }

    /// An account-level subscriber (a `notification_configs[]` entry of
    /// `sync_accounts`); channel id `account:{account_id}:{subscriber_id}`.
    ///
    /// # Errors
    ///
    /// `invalid_registration` (no `subscriber_id`, no `event_types`, a
    /// type an account subscriber cannot carry), `invalid_destination`.
    pub fn account(account_id: &str, entry: &Value) -> Result<Self, OutboxError> {
        Self::subscriber(
            ChannelKind::Account,
            account_id,
            entry,
            adcp_webhook::ACCOUNT_EVENT_TYPES,
        )
    }

    /// An agent-level subscriber of the principal `owner` (a
    /// `notification_configs[]` entry of
    /// `sync_agent_notification_configs`); channel id
    /// `agent:{owner}:{subscriber_id}`.
    ///
    /// Only `capabilities.changed` is accepted: the agent-level challenge
    /// schema (`core/agent-webhook-challenge.json`) allows no other type,
    /// so a subscriber listing `principal.changed` or an account-anchored
    /// type could never prove control of its endpoint for what it asks.
    /// Such a registration is refused, saying so.
    ///
    /// # Errors
    ///
    /// As [`account`](Self::account).
    pub fn agent(owner: &str, entry: &Value) -> Result<Self, OutboxError> {
        Self::subscriber(ChannelKind::Agent, owner, entry, adcp_webhook::AGENT_EVENT_TYPES)
    }

    fn subscriber(kind: ChannelKind, anchor: &str, entry: &Value, allowed: &[&str]) -> Result<Self, OutboxError> {
        let id = subscriber_id(entry)?;
        let types = entry
            .get("event_types")
            .and_then(Value::as_array)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| refused("a subscriber needs a non-empty event_types"))?;
        for t in types {
            let t = t.as_str().unwrap_or_default();
            if !allowed.contains(&t) {
                return Err(refused(format!(
                    "event type {t:?} cannot be registered on an {} subscriber: its activation challenge allows only {}",
                    kind.as_str(),
                    allowed.join(", ")
                )));
            }
        }
        OutboxDestination::from_registration(entry)?;
        Ok(Self {
            id: format!("{}:{anchor}:{id}", kind.as_str()),
            kind,
            anchor: anchor.to_owned(),
            registration: entry.clone(),
        })
    }

    /// The channel id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The kind.
    #[must_use]
    pub const fn kind(&self) -> ChannelKind {
        self.kind
    }

    /// The registration as given.
    #[must_use]
    pub fn registration(&self) -> &Value {
        &self.registration
    }

    /// Whether the registration asks for the channel to be paused
    /// (`active: false`).
    #[must_use]
    pub fn paused(&self) -> bool {
        self.registration.get("active").and_then(Value::as_bool) == Some(false)
    }

    /// The members a notification echoes (`subscriber_id`, `token`, …).
    #[must_use]
    pub fn registered(&self) -> adcp_webhook::notify::Registered {
        adcp_webhook::notify::Registered::from_value(&self.registration)
    }

    /// Where its events go.
    ///
    /// # Errors
    ///
    /// `invalid_destination`.
    pub fn destination(&self) -> Result<OutboxDestination, OutboxError> {
        OutboxDestination::from_registration(&self.registration)
    }

    /// SHA-256 of the proof scope (RFC 8785): the kind and anchor, the
    /// subscriber, the URL, the delivery authentication (its credential
    /// hashed) and the normalized event types. Changing any of them needs
    /// a fresh activation.
    #[must_use]
    pub fn fingerprint(&self) -> [u8; 32] {
        let r = &self.registration;
        let mut types: Vec<&str> = r
            .get("event_types")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        types.sort_unstable();
        types.dedup();
        let auth = r.get("authentication").map(|a| {
            let credential = a.get("credentials").and_then(Value::as_str).unwrap_or_default();
            json!({"schemes": a.get("schemes"), "credential_sha256": hex(&Sha256::digest(credential.as_bytes()))})
        });
        let scope = json!({
            "kind": self.kind.as_str(),
            "anchor": self.anchor,
            "subscriber_id": r.get("subscriber_id"),
            "url": r.get("url"),
            "authentication": auth,
            "event_types": types,
        });
        adcp_strict_json::jcs::fingerprint(&scope)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
