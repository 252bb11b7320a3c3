//! The subscriber activation challenge (seller → receiver) and the
//! receiver's echo (`core/webhook-challenge.json`,
//! `core/agent-webhook-challenge.json`,
//! `core/webhook-challenge-response.json`).
//!
//! A seller proves that a notification URL is under the subscriber's
//! control by POSTing a challenge; the receiver answers with the same
//! value. The challenge carries no `idempotency_key`: it is not an event.

use super::ident::{is_challenge_value, is_subscriber_id, opt_string};
use super::model::Model;
use super::PayloadError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `type` of every challenge.
pub const CHALLENGE_TYPE: &str = "webhook.challenge";

/// How the seller will authenticate later deliveries to the URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryAuth {
    /// `rfc9421`, or the deprecated `Bearer` / `HMAC-SHA256`.
    pub mode: String,
    /// SHA-256 hex of the legacy credential (legacy modes only).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub credential_fingerprint: Option<String>,
    /// Members this model does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The account-level challenge (`core/webhook-challenge.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookChallenge {
    /// `webhook.challenge`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The value to echo (32–255 characters of `[A-Za-z0-9_.:-]`).
    pub challenge: String,
    /// The account whose `notification_configs[]` registered the URL.
    pub account_id: String,
    /// The subscriber registration.
    pub subscriber_id: String,
    /// The seller agent that sends the challenge.
    pub seller_agent_url: String,
    /// How later deliveries will be authenticated.
    pub delivery_auth: DeliveryAuth,
    /// The notification types the registration subscribes to.
    pub event_types: Vec<String>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Model for WebhookChallenge {
    const REQUIRED: &'static [&'static str] = &[
        "type",
        "challenge",
        "account_id",
        "subscriber_id",
        "seller_agent_url",
        "delivery_auth",
        "event_types",
    ];

    fn check(&self) -> Result<(), PayloadError> {
        check_common(&self.kind, &self.challenge, &self.subscriber_id)
    }
}

/// The agent-level challenge (`core/agent-webhook-challenge.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentWebhookChallenge {
    /// `webhook.challenge`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `agent`.
    pub scope: String,
    /// The value to echo (32–255 characters of `[A-Za-z0-9_.:-]`).
    pub challenge: String,
    /// The subscriber registration.
    pub subscriber_id: String,
    /// The seller agent that sends the challenge.
    pub seller_agent_url: String,
    /// How later deliveries will be authenticated.
    pub delivery_auth: DeliveryAuth,
    /// The notification types the registration subscribes to.
    pub event_types: Vec<String>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Model for AgentWebhookChallenge {
    const REQUIRED: &'static [&'static str] = &[
        "type",
        "scope",
        "challenge",
        "subscriber_id",
        "seller_agent_url",
        "delivery_auth",
        "event_types",
    ];

    fn check(&self) -> Result<(), PayloadError> {
        if self.scope != "agent" {
            return Err(PayloadError::InvalidChallenge);
        }
        check_common(&self.kind, &self.challenge, &self.subscriber_id)
    }
}

fn check_common(kind: &str, challenge: &str, subscriber_id: &str) -> Result<(), PayloadError> {
    if kind != CHALLENGE_TYPE || !is_challenge_value(challenge) {
        return Err(PayloadError::InvalidChallenge);
    }
    if !is_subscriber_id(subscriber_id) {
        return Err(PayloadError::InvalidPayloadMember);
    }
    Ok(())
}

/// An activation challenge, account- or agent-level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Challenge {
    /// Registered through account-level `notification_configs[]`.
    Account(WebhookChallenge),
    /// Registered through agent-level notification configs.
    Agent(AgentWebhookChallenge),
}

impl Challenge {
    /// The value to echo.
    #[must_use]
    pub fn value(&self) -> &str {
        match self {
            Self::Account(c) => &c.challenge,
            Self::Agent(c) => &c.challenge,
        }
    }

    /// The subscriber registration being activated.
    #[must_use]
    pub fn subscriber_id(&self) -> &str {
        match self {
            Self::Account(c) => &c.subscriber_id,
            Self::Agent(c) => &c.subscriber_id,
        }
    }

    /// The account, for an account-level challenge.
    #[must_use]
    pub fn account_id(&self) -> Option<&str> {
        match self {
            Self::Account(c) => Some(&c.account_id),
            Self::Agent(_) => None,
        }
    }

    /// The seller agent that sent it.
    #[must_use]
    pub fn seller_agent_url(&self) -> &str {
        match self {
            Self::Account(c) => &c.seller_agent_url,
            Self::Agent(c) => &c.seller_agent_url,
        }
    }

    /// The answer a receiver returns: the preferred `{"challenge": …}`
    /// shape.
    #[must_use]
    pub fn response(&self) -> ChallengeResponse {
        ChallengeResponse::Challenge(self.value().to_owned())
    }
}

/// The receiver's answer (`core/webhook-challenge-response.json`): the
/// challenge value in exactly one of `challenge` (preferred) or `token`
/// (backward compatible), and nothing else.
///
/// ```
/// use adcp_webhook::payload::ChallengeResponse;
/// use serde_json::json;
///
/// let value = "example-challenge-token-000000000000";
/// let response = ChallengeResponse::from_value(&json!({"challenge": value}))?;
/// assert_eq!(response.value(), value);
/// assert_eq!(response.to_value(), json!({"challenge": value}));
/// assert!(response.verify(value).is_ok());
/// let err = ChallengeResponse::from_value(&json!({"challenge": value, "token": value})).unwrap_err();
/// assert_eq!(err.code(), "challenge_response_ambiguous");
/// # Ok::<(), adcp_webhook::payload::ChallengeResponseError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChallengeResponse {
    /// `{"challenge": value}` (preferred).
    Challenge(String),
    /// `{"token": value}` (backward-compatible shape).
    Token(String),
}

impl ChallengeResponse {
    /// Validates a response body strictly against the schema: an object
    /// with exactly one of `challenge` / `token` (never both, no other
    /// member), whose value is 32–255 characters of `[A-Za-z0-9_.:-]`.
    ///
    /// # Errors
    ///
    /// [`ChallengeResponseError`], checked in that order: not an object,
    /// an unknown member, both members, neither member, a bad value.
    pub fn from_value(value: &Value) -> Result<Self, ChallengeResponseError> {
        let obj = value.as_object().ok_or(ChallengeResponseError::NotAnObject)?;
        if obj.keys().any(|k| k != "challenge" && k != "token") {
            return Err(ChallengeResponseError::UnknownMember);
        }
        let (member, make): (&Value, fn(String) -> Self) = match (obj.get("challenge"), obj.get("token")) {
            (Some(_), Some(_)) => return Err(ChallengeResponseError::Ambiguous),
            (None, None) => return Err(ChallengeResponseError::Missing),
            (Some(v), None) => (v, Self::Challenge),
            (None, Some(v)) => (v, Self::Token),
        };
        match member.as_str() {
            Some(s) if is_challenge_value(s) => Ok(make(s.to_owned())),
            _ => Err(ChallengeResponseError::InvalidValue),
        }
    }

    /// The echoed value.
    #[must_use]
    pub fn value(&self) -> &str {
        match self {
            Self::Challenge(v) | Self::Token(v) => v,
        }
    }

    /// The response body.
    #[must_use]
    pub fn to_value(&self) -> Value {
        let (name, v) = match self {
            Self::Challenge(v) => ("challenge", v),
            Self::Token(v) => ("token", v),
        };
        let mut obj = Map::new();
        obj.insert(name.to_owned(), Value::String(v.clone()));
        Value::Object(obj)
    }

    /// Checks that the response echoes `expected` exactly (byte for byte,
    /// in time independent of where the values differ).
    ///
    /// # Errors
    ///
    /// [`ChallengeResponseError::Mismatch`].
    pub fn verify(&self, expected: &str) -> Result<(), ChallengeResponseError> {
        let (a, b) = (self.value().as_bytes(), expected.as_bytes());
        let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
        if a.len() == b.len() && diff == 0 {
            Ok(())
        } else {
            Err(ChallengeResponseError::Mismatch)
        }
    }
}

/// Why a challenge response is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum ChallengeResponseError {
    /// The body is not a JSON object.
    #[error("challenge response is not a JSON object")]
    NotAnObject,
    /// A member other than `challenge` / `token`.
    #[error("challenge response has a member other than challenge or token")]
    UnknownMember,
    /// Both `challenge` and `token`.
    #[error("challenge response has both challenge and token")]
    Ambiguous,
    /// Neither `challenge` nor `token`.
    #[error("challenge response has neither challenge nor token")]
    Missing,
    /// The value is not 32–255 characters of `[A-Za-z0-9_.:-]`.
    #[error("challenge response value is malformed")]
    InvalidValue,
    /// A well-formed value that is not the challenge sent.
    #[error("challenge response does not echo the challenge")]
    Mismatch,
}

impl ChallengeResponseError {
    /// The stable code.
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            Self::NotAnObject => "challenge_response_not_object",
            Self::UnknownMember => "challenge_response_unknown_member",
            Self::Ambiguous => "challenge_response_ambiguous",
            Self::Missing => "challenge_response_missing",
            Self::InvalidValue => "challenge_response_invalid_value",
            Self::Mismatch => "challenge_response_mismatch",
        }
    }
}
