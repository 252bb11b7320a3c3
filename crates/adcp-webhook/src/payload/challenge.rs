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

impl DeliveryAuth {
    /// The `mode` of RFC 9421 deliveries.
    pub const RFC9421: &'static str = "rfc9421";
    /// The `mode` of deprecated Bearer deliveries.
    pub const BEARER: &'static str = "Bearer";
    /// The `mode` of deprecated HMAC-SHA256 deliveries.
    pub const HMAC_SHA256: &'static str = "HMAC-SHA256";

    /// Later deliveries signed with the RFC 9421 webhook profile (the
    /// default: `notification_configs[].authentication` absent). Carries no
    /// fingerprint: the schema forbids one for this mode.
    #[must_use]
    pub fn rfc9421() -> Self {
        Self {
            mode: Self::RFC9421.to_owned(),
            credential_fingerprint: None,
            extra: Map::new(),
        }
    }

    /// Later deliveries with the deprecated `Authorization: Bearer`
    /// scheme, bound to `credential` (the exact string from
    /// `authentication.credentials`) by its fingerprint. The credential
    /// itself never enters the challenge.
    #[must_use]
    pub fn bearer(credential: &str) -> Self {
        Self::legacy(Self::BEARER, credential)
    }

    /// Later deliveries with the deprecated HMAC-SHA256 scheme, bound to
    /// `credential` (the exact shared secret string) by its fingerprint.
    #[must_use]
    pub fn hmac_sha256(credential: &str) -> Self {
        Self::legacy(Self::HMAC_SHA256, credential)
    }

    fn legacy(mode: &str, credential: &str) -> Self {
        Self {
            mode: mode.to_owned(),
            credential_fingerprint: Some(credential_fingerprint(credential)),
            extra: Map::new(),
        }
    }

    /// Whether this value fits the schema: a known `mode`, a 64-character
    /// lowercase hex fingerprint exactly when the mode is legacy, and no
    /// other member.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        let fingerprint_ok = |f: &Option<String>| {
            f.as_deref()
                .is_some_and(|f| f.len() == 64 && f.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        };
        self.extra.is_empty()
            && match self.mode.as_str() {
                Self::RFC9421 => self.credential_fingerprint.is_none(),
                Self::BEARER | Self::HMAC_SHA256 => fingerprint_ok(&self.credential_fingerprint),
                _ => false,
            }
    }
}

/// The `credential_fingerprint` of a legacy credential: the lowercase hex
/// SHA-256 of the exact credential string's UTF-8 bytes (no trimming, no
/// normalization: the receiver hashes the string it registered).
///
/// ```
/// use adcp_webhook::payload::credential_fingerprint;
/// assert_eq!(
///     credential_fingerprint("abc"),
///     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// ```
#[must_use]
pub fn credential_fingerprint(credential: &str) -> String {
    use sha2::{Digest as _, Sha256};
    use std::fmt::Write as _;
    let digest = Sha256::digest(credential.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
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

impl WebhookChallenge {
    /// A challenge with exactly the schema's members (`type` set, nothing
    /// extra). The caller supplies a fresh random `challenge` value and the
    /// normalized (sorted, deduplicated) `event_types`;
    /// [`crate::sender::Activation`] does both.
    #[must_use]
    pub fn new(
        challenge: impl Into<String>,
        account_id: impl Into<String>,
        subscriber_id: impl Into<String>,
        seller_agent_url: impl Into<String>,
        delivery_auth: DeliveryAuth,
        event_types: Vec<String>,
    ) -> Self {
        Self {
            kind: CHALLENGE_TYPE.to_owned(),
            challenge: challenge.into(),
            account_id: account_id.into(),
            subscriber_id: subscriber_id.into(),
            seller_agent_url: seller_agent_url.into(),
            delivery_auth,
            event_types,
            extra: Map::new(),
        }
    }
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

impl AgentWebhookChallenge {
    /// The scope discriminator of agent-level challenges.
    pub const SCOPE: &'static str = "agent";

    /// A challenge with exactly the schema's members (`type` and
    /// `scope: "agent"` set, nothing extra). The caller supplies a fresh
    /// random `challenge` value and the normalized agent-level
    /// `event_types`; [`crate::sender::Activation`] does both.
    #[must_use]
    pub fn new(
        challenge: impl Into<String>,
        subscriber_id: impl Into<String>,
        seller_agent_url: impl Into<String>,
        delivery_auth: DeliveryAuth,
        event_types: Vec<String>,
    ) -> Self {
        Self {
            kind: CHALLENGE_TYPE.to_owned(),
            scope: Self::SCOPE.to_owned(),
            challenge: challenge.into(),
            subscriber_id: subscriber_id.into(),
            seller_agent_url: seller_agent_url.into(),
            delivery_auth,
            event_types,
            extra: Map::new(),
        }
    }
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

    /// How later deliveries will be authenticated.
    #[must_use]
    pub fn delivery_auth(&self) -> &DeliveryAuth {
        match self {
            Self::Account(c) => &c.delivery_auth,
            Self::Agent(c) => &c.delivery_auth,
        }
    }

    /// The notification types the registration subscribes to.
    #[must_use]
    pub fn event_types(&self) -> &[String] {
        match self {
            Self::Account(c) => &c.event_types,
            Self::Agent(c) => &c.event_types,
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
