//! What a caller enqueues: one event for one destination, and the
//! metadata the outbox keeps beside its bytes.

use crate::error::OutboxError;
use adcp_sign::WebhookEvent;
use adcp_webhook::Destination;
use serde_json::Value;
use std::time::Duration;

/// The signing scope used when an event names none.
pub const DEFAULT_SIGNING_SCOPE: &str = "default";

/// Where one event goes: the buyer's registration
/// (`push_notification_config`, `reporting_webhook`,
/// `notification_configs[]` entry), as stored with the event. Legacy
/// credentials are kept so every attempt can be authenticated again.
#[derive(Clone, PartialEq, Eq)]
pub struct OutboxDestination {
    url: String,
    operation_id: Option<String>,
    legacy: Option<(String, String)>,
    coalescing_opt_in: Option<Duration>,
}

impl std::fmt::Debug for OutboxDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxDestination")
            .field("url", &crate::redact_url(&self.url))
            .field("operation_id", &self.operation_id)
            .field("legacy_scheme", &self.legacy.as_ref().map(|(s, _)| s))
            .field("coalescing_opt_in", &self.coalescing_opt_in)
            .finish()
    }
}

impl OutboxDestination {
    /// An RFC 9421 destination.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            operation_id: None,
            legacy: None,
            coalescing_opt_in: None,
        }
    }

    /// The registered `operation_id`.
    #[must_use]
    pub fn with_operation_id(mut self, operation_id: impl Into<String>) -> Self {
        self.operation_id = Some(operation_id.into());
        self
    }

    /// The longest coalescing window the buyer opted into for this
    /// destination (above a type's default only with it).
    #[must_use]
    pub fn with_coalescing_opt_in(mut self, window: Duration) -> Self {
        self.coalescing_opt_in = Some(window);
        self
    }

    /// Reads a registration: `url` (required), `operation_id`, and the
    /// legacy `authentication` block (`{"schemes": ["HMAC-SHA256"|"Bearer"],
    /// "credentials": …}`), checked as the sender checks it.
    ///
    /// # Errors
    ///
    /// `invalid_destination`.
    pub fn from_registration(registration: &Value) -> Result<Self, OutboxError> {
        let checked = Destination::from_registration(registration)
            .map_err(|e| OutboxError::invalid("invalid_destination", e.to_string()))?;
        let legacy = match registration.get("authentication") {
            None | Some(Value::Null) => None,
            Some(block) => {
                let scheme = block
                    .get("schemes")
                    .and_then(Value::as_array)
                    .and_then(|s| s.first())
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let credentials = block.get("credentials").and_then(Value::as_str).unwrap_or_default();
                Some((scheme.to_owned(), credentials.to_owned()))
            }
        };
        Ok(Self {
            url: checked.url().to_owned(),
            operation_id: checked.operation_id().map(str::to_owned),
            legacy,
            coalescing_opt_in: None,
        })
    }

    /// Rebuilds a destination from its stored columns: the legacy scheme
    /// and credentials count only as a pair.
    pub(crate) fn from_parts(
        url: String,
        operation_id: Option<String>,
        auth_scheme: Option<String>,
        auth_credentials: Option<&[u8]>,
    ) -> Self {
        let legacy = match (auth_scheme, auth_credentials) {
            (Some(scheme), Some(cred)) => Some((scheme, String::from_utf8_lossy(cred).into_owned())),
            _ => None,
        };
        Self {
            url,
            operation_id,
            legacy,
            coalescing_opt_in: None,
        }
    }

    /// The same destination with other legacy credentials (unsealed).
    pub(crate) fn with_legacy(&self, scheme: &str, credentials: &str) -> Self {
        let mut d = self.clone();
        d.legacy = Some((scheme.to_owned(), credentials.to_owned()));
        d
    }

    /// The URL as registered.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The registered `operation_id`.
    #[must_use]
    pub fn operation_id(&self) -> Option<&str> {
        self.operation_id.as_deref()
    }

    /// The legacy scheme and credentials, when the registration selects one.
    #[must_use]
    pub fn legacy(&self) -> Option<(&str, &str)> {
        self.legacy.as_ref().map(|(s, c)| (s.as_str(), c.as_str()))
    }

    /// The buyer's coalescing opt-in.
    #[must_use]
    pub fn coalescing_opt_in(&self) -> Option<Duration> {
        self.coalescing_opt_in
    }

    /// The sender's destination for one attempt.
    ///
    /// # Errors
    ///
    /// `invalid_destination` (a stored legacy credential the sender
    /// refuses).
    pub fn to_destination(&self) -> Result<Destination, OutboxError> {
        let mut registration = serde_json::json!({ "url": self.url });
        if let Some(op) = &self.operation_id {
            registration["operation_id"] = op.clone().into();
        }
        if let Some((scheme, credentials)) = &self.legacy {
            registration["authentication"] = serde_json::json!({"schemes": [scheme], "credentials": credentials});
        }
        Destination::from_registration(&registration)
            .map_err(|e| OutboxError::invalid("invalid_destination", e.to_string()))
    }
}

/// One event for one destination, ready to enqueue. The payload's own
/// members give its notification type (top-level `notification_type`, or
/// `result.notification_type` for delivery reports and impairments),
/// `notification_id`, `subscriber_id` and `sequence_number`.
///
/// ```
/// use adcp_outbox::{NewEvent, OutboxDestination};
/// use adcp_sign::WebhookEvent;
///
/// let payload = serde_json::json!({
///     "notification_type": "creative.status_changed",
///     "notification_id": "crn_1",
///     "creative_id": "cr_9",
/// });
/// let event = NewEvent::new(
///     WebhookEvent::new(&payload)?,
///     OutboxDestination::new("https://buyer.example/webhooks/adcp"),
/// )
/// .principal("buyer-agent-1")
/// .resource("creative:cr_9")
/// .coalescing_key("cr_9");
/// assert_eq!(event.notification_type(), Some("creative.status_changed"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub(crate) event: WebhookEvent,
    /// SHA-256 of the body's RFC 8785 form.
    pub(crate) fingerprint: [u8; 32],
    pub(crate) destination: OutboxDestination,
    pub(crate) notification_type: Option<String>,
    pub(crate) notification_id: Option<String>,
    pub(crate) subscriber_id: Option<String>,
    pub(crate) sequence_number: Option<i64>,
    pub(crate) channel_id: Option<String>,
    pub(crate) signing_scope: String,
    pub(crate) principal: Option<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) coalescing_key: Option<String>,
    pub(crate) coalescing_window: Option<Duration>,
}

impl NewEvent {
    /// `event` (its bytes are what every attempt sends) for `destination`.
    #[must_use]
    pub fn new(event: WebhookEvent, destination: OutboxDestination) -> Self {
        // A `WebhookEvent`'s body is valid JSON by construction.
        let body: Value = serde_json::from_str(event.body().as_str()).unwrap_or(Value::Null);
        Self::parsed(event, &body, destination)
    }

    /// [`new`](Self::new) for a caller that already holds the body parsed
    /// (the relay): the body is read once.
    pub(crate) fn parsed(event: WebhookEvent, body: &Value, destination: OutboxDestination) -> Self {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let result = body.get("result");
        let notification_type =
            text(body.get("notification_type")).or_else(|| text(result.and_then(|r| r.get("notification_type"))));
        let sequence_number = body
            .get("sequence_number")
            .or_else(|| result.and_then(|r| r.get("sequence_number")))
            .and_then(Value::as_i64);
        Self {
            fingerprint: adcp_strict_json::jcs::fingerprint(body),
            notification_id: text(body.get("notification_id")),
            subscriber_id: text(body.get("subscriber_id")),
            notification_type,
            sequence_number,
            event,
            destination,
            channel_id: None,
            signing_scope: DEFAULT_SIGNING_SCOPE.to_owned(),
            principal: None,
            resources: Vec::new(),
            coalescing_key: None,
            coalescing_window: None,
        }
    }

    /// The signing scope (which key signs it; default
    /// [`DEFAULT_SIGNING_SCOPE`]). Keys are unique per scope.
    #[must_use]
    pub fn signing_scope(mut self, scope: impl Into<String>) -> Self {
        self.signing_scope = scope.into();
        self
    }

    /// The principal (buyer) whose `webhook_activity` shows its attempts.
    #[must_use]
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// A resource the event names (`media_buy:mb_1`, `account:acc_1`,
    /// `creative:cr_9`): activity queries select by it. Repeatable.
    #[must_use]
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resources.push(resource.into());
        self
    }

    /// The channel or subscription the event belongs to.
    #[must_use]
    pub fn channel(mut self, channel_id: impl Into<String>) -> Self {
        self.channel_id = Some(channel_id.into());
        self
    }

    /// The resource the event is about, for coalescing (the
    /// `impairment_id` of an impairment, the `creative_id` of a
    /// `creative.status_changed`).
    #[must_use]
    pub fn coalescing_key(mut self, key: impl Into<String>) -> Self {
        self.coalescing_key = Some(key.into());
        self
    }

    /// This event's own coalescing window (shorter than the type's
    /// default; `0` sends at once).
    #[must_use]
    pub fn coalescing_window(mut self, window: Duration) -> Self {
        self.coalescing_window = Some(window);
        self
    }

    /// The notification type read from the payload.
    #[must_use]
    pub fn notification_type(&self) -> Option<&str> {
        self.notification_type.as_deref()
    }

    /// The event's `idempotency_key`.
    #[must_use]
    pub fn idempotency_key(&self) -> &str {
        self.event.idempotency_key().as_str()
    }

    /// The destination.
    #[must_use]
    pub fn destination(&self) -> &OutboxDestination {
        &self.destination
    }
}

/// The origin (`scheme://host[:port]`, canonical) a URL's breaker and
/// in-flight cap are keyed by.
pub(crate) fn origin_of(url: &str) -> Result<String, OutboxError> {
    adcp_canon::canonicalize(url)
        .map(|c| c.origin().to_owned())
        .map_err(|e| OutboxError::invalid("invalid_destination", format!("destination URL: {e}")))
}
