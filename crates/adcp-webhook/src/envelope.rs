//! The MCP webhook envelope: building it (seller) and checking it
//! (buyer).
//!
//! The full envelope is the POST body; the task-specific data lives under
//! `result`. A seller echoes `operation_id` exactly as the buyer
//! registered it and the request's `context` object verbatim, on every
//! delivery for the operation; the `idempotency_key` is generated once per
//! event and reused on every retry (the [`WebhookEvent`] fixes it).
//!
//! A receiver refuses, before dispatch, a body that is not an envelope
//! ([`EnvelopeError`], codes from the receiver-envelope conformance
//! vectors): an inner result posted bare, an envelope without its
//! `idempotency_key`, a top-level `status` that is not a task status.

use adcp_sign::{IdempotencyKey, SignError, WebhookEvent};
use serde::Serialize;
use serde_json::{Map, Value};

/// An AdCP task status (the top-level `status` of the envelope).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskStatus {
    /// `submitted`.
    Submitted,
    /// `working`.
    Working,
    /// `input-required`.
    InputRequired,
    /// `completed`.
    Completed,
    /// `canceled`.
    Canceled,
    /// `failed`.
    Failed,
    /// `rejected`.
    Rejected,
    /// `auth-required`.
    AuthRequired,
    /// `unknown`.
    Unknown,
}

impl TaskStatus {
    /// Every status, in declaration order.
    pub const ALL: [Self; 9] = [
        Self::Submitted,
        Self::Working,
        Self::InputRequired,
        Self::Completed,
        Self::Canceled,
        Self::Failed,
        Self::Rejected,
        Self::AuthRequired,
        Self::Unknown,
    ];

    /// The wire spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::InputRequired => "input-required",
            Self::Completed => "completed",
            Self::Canceled => "canceled",
            Self::Failed => "failed",
            Self::Rejected => "rejected",
            Self::AuthRequired => "auth-required",
            Self::Unknown => "unknown",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Whether the task has settled (no further status webhooks).
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Canceled | Self::Failed | Self::Rejected)
    }
}

/// One MCP webhook envelope, before it is serialized.
///
/// ```
/// use adcp_webhook::{McpWebhook, TaskStatus};
/// use serde_json::json;
///
/// let event = McpWebhook::new("task_456", "create_media_buy", TaskStatus::Completed, "2026-04-18T12:00:00Z")
///     .operation_id("op_456")
///     .context(json!({"trace_id": "t-1"}))
///     .message("Media buy created")
///     .result(json!({"media_buy_id": "mb_1"}))
///     .into_event()?;
/// let body: serde_json::Value = serde_json::from_slice(event.body().as_bytes())?;
/// assert_eq!(body["idempotency_key"], event.idempotency_key().as_str());
/// assert_eq!(body["operation_id"], "op_456");
/// assert_eq!(body["context"], json!({"trace_id": "t-1"}));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct McpWebhook {
    task_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    operation_id: Option<String>,
    task_type: String,
    status: TaskStatus,
    timestamp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

impl McpWebhook {
    /// The required members: `task_id`, `task_type`, `status` and the
    /// RFC 3339 `timestamp` of the status change (kept unchanged on every
    /// retry, so the payload stays the same event).
    pub fn new(
        task_id: impl Into<String>,
        task_type: impl Into<String>,
        status: TaskStatus,
        timestamp: impl Into<String>,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            operation_id: None,
            task_type: task_type.into(),
            status,
            timestamp: timestamp.into(),
            context: None,
            message: None,
            result: None,
            extra: Map::new(),
        }
    }

    /// The `operation_id` from the registration, echoed exactly as received
    /// (never derived from the URL).
    #[must_use]
    pub fn operation_id(mut self, operation_id: impl Into<String>) -> Self {
        self.operation_id = Some(operation_id.into());
        self
    }

    /// The originating request's `context` object, echoed verbatim.
    #[must_use]
    pub fn context(mut self, context: Value) -> Self {
        self.context = Some(context);
        self
    }

    /// A human-readable `message`.
    #[must_use]
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// The task-specific `result`.
    #[must_use]
    pub fn result(mut self, result: Value) -> Self {
        self.result = Some(result);
        self
    }

    /// Another top-level member (`domain`, `protocol`, …). A name the
    /// envelope already has is refused when the event is built
    /// (`duplicate_key_input`), never silently doubled.
    #[must_use]
    pub fn member(mut self, name: impl Into<String>, value: Value) -> Self {
        self.extra.insert(name.into(), value);
        self
    }

    /// Serializes the envelope once, with a fresh `idempotency_key` as its
    /// first member.
    ///
    /// # Errors
    ///
    /// The [`WebhookEvent::new`] errors (`duplicate_key_input`, …).
    pub fn into_event(self) -> Result<WebhookEvent, SignError> {
        WebhookEvent::new(&self)
    }

    /// Serializes the envelope once under a key the caller kept (an
    /// outbox row), giving the same bytes as the first time.
    ///
    /// # Errors
    ///
    /// As [`McpWebhook::into_event`].
    pub fn into_event_with_key(self, key: IdempotencyKey) -> Result<WebhookEvent, SignError> {
        WebhookEvent::with_idempotency_key(key, &self)
    }
}

/// Why a body is not a dispatchable MCP envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// Not a JSON object, or without the envelope's `task_id` / `status`
    /// (for example a bare delivery-report result).
    #[error("body is not a webhook envelope")]
    MissingEnvelopeFields,
    /// An envelope without a usable `idempotency_key`.
    #[error("webhook envelope has no idempotency_key")]
    MissingIdempotencyKey,
    /// The top-level `status` is not a task status.
    #[error("webhook envelope status is not a task status")]
    InvalidEnvelopeStatus,
}

impl EnvelopeError {
    /// The code the receiver-envelope vectors name.
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            Self::MissingEnvelopeFields => "missing_envelope_fields",
            Self::MissingIdempotencyKey => "missing_idempotency_key",
            Self::InvalidEnvelopeStatus => "invalid_envelope_status",
        }
    }

    /// The fixed message that accompanies the code in a `400` answer.
    #[must_use]
    pub const fn message(self) -> &'static str {
        match self {
            Self::MissingEnvelopeFields => "The body is not a complete webhook envelope.",
            Self::MissingIdempotencyKey => "The envelope has no valid idempotency_key.",
            Self::InvalidEnvelopeStatus => "The envelope's status is not a task status.",
        }
    }
}

/// What [`check_mcp_envelope`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeInfo<'a> {
    /// The `idempotency_key`.
    pub idempotency_key: &'a str,
    /// The `task_id`.
    pub task_id: &'a str,
    /// The top-level task status.
    pub status: TaskStatus,
    /// The echoed `operation_id`, when present.
    pub operation_id: Option<&'a str>,
}

/// Checks that `payload` is a dispatchable MCP envelope: an object with a
/// string `task_id` and `status` (else `missing_envelope_fields`), an
/// `idempotency_key` of the schema's shape (else
/// `missing_idempotency_key`), and a task-status `status` (else
/// `invalid_envelope_status`).
///
/// `task_type` and `timestamp` are required by the envelope schema but not
/// enforced here: the official webhook-signing vectors (which a receiver
/// must accept) omit them, and nothing on the receive path depends on
/// them.
///
/// # Errors
///
/// [`EnvelopeError`].
pub fn check_mcp_envelope(payload: &Value) -> Result<EnvelopeInfo<'_>, EnvelopeError> {
    let obj = payload.as_object().ok_or(EnvelopeError::MissingEnvelopeFields)?;
    let task_id = obj.get("task_id").and_then(Value::as_str);
    let status = obj.get("status").and_then(Value::as_str);
    let (Some(task_id), Some(status)) = (task_id, status) else {
        return Err(EnvelopeError::MissingEnvelopeFields);
    };
    let idempotency_key = obj
        .get("idempotency_key")
        .and_then(Value::as_str)
        .filter(|k| IdempotencyKey::new(*k).is_ok())
        .ok_or(EnvelopeError::MissingIdempotencyKey)?;
    let status = TaskStatus::parse(status).ok_or(EnvelopeError::InvalidEnvelopeStatus)?;
    Ok(EnvelopeInfo {
        idempotency_key,
        task_id,
        status,
        operation_id: obj.get("operation_id").and_then(Value::as_str),
    })
}
