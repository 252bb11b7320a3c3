//! The MCP task envelope (`core/mcp-webhook-payload.json`) and the
//! delivery-report / impairment content it carries under `result`.

use super::ident::{is_notification_id, opt_string, present, some};
use super::kind::is_delivery_report_type;
use super::model::valid_key;
use super::PayloadError;
use crate::envelope::TaskStatus;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The task envelope: the POST body of every webhook registered through
/// `push_notification_config` (and a media buy's `reporting_webhook`).
///
/// `operation_id`, `task_type` and `timestamp` are required by the schema
/// but optional here, as in [`crate::envelope::check_mcp_envelope`]: the
/// official webhook-signing vectors, which a receiver must accept, omit
/// them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpTaskPayload {
    /// Per-delivery dedup key.
    pub idempotency_key: String,
    /// Logical notification identity (terminal task webhooks, impairments
    /// alias `impairment_id`; absent on point-in-time delivery reports).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub notification_id: Option<String>,
    /// The buyer's `push_notification_config.operation_id`, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub operation_id: Option<String>,
    /// The seller's task.
    pub task_id: String,
    /// `enums/task-type.json` (`create_media_buy`, `media_buy_delivery`, …).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub task_type: Option<String>,
    /// `enums/adcp-protocol.json`.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub protocol: Option<String>,
    /// The task status (not a media buy's lifecycle status).
    #[serde(deserialize_with = "task_status")]
    pub status: TaskStatus,
    /// When this logical delivery was first generated (repeated on every
    /// retry).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub timestamp: Option<String>,
    /// Human-readable summary.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub message: Option<String>,
    /// Compatibility metadata; never continuation authority.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub context_id: Option<String>,
    /// `push_notification_config.token`, echoed (redacted in `Debug`).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some")]
    pub token: Option<EchoedToken>,
    /// The originating request's `context`, echoed verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub context: Option<Value>,
    /// Task-specific data (`core/async-response-data.json`, one of some
    /// forty task responses): kept as JSON; see
    /// [`McpTaskPayload::delivery_report`] for the typed view of delivery
    /// reports.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub result: Option<Value>,
    /// Members this model does not name (`domain`, …), kept for
    /// re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn task_status<'de, D: Deserializer<'de>>(d: D) -> Result<TaskStatus, D::Error> {
    // A visitor, not `<&str>::deserialize`: an owned value (the receiver's
    // consuming classification) hands over a `String`, not a borrow.
    struct Status;
    impl serde::de::Visitor<'_> for Status {
        type Value = TaskStatus;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a task status")
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<TaskStatus, E> {
            TaskStatus::parse(s).ok_or_else(|| E::custom("not a task status"))
        }
    }
    d.deserialize_str(Status)
}

impl McpTaskPayload {
    /// `result.notification_type`, when the result is a delivery report
    /// (`scheduled`, `final`, `delayed`, `adjusted`, `window_update`) or an
    /// `impairment`.
    #[must_use]
    pub fn result_notification_type(&self) -> Option<&str> {
        self.result.as_ref()?.get("notification_type")?.as_str()
    }

    /// The delivery report under `result`
    /// (`media-buy/media-buy-delivery-webhook-result.json`), when the
    /// result's `notification_type` is a delivery-report type.
    ///
    /// # Errors
    ///
    /// `invalid_payload_member` when the result says it is a report but
    /// its members are not of the report's types,
    /// `missing_envelope_fields` when a required member is absent.
    #[must_use]
    pub fn delivery_report(&self) -> Option<Result<DeliveryReport, PayloadError>> {
        let result = self.result.as_ref()?;
        let t = result.get("notification_type")?.as_str()?;
        if !is_delivery_report_type(t) || t == "impairment" {
            return None;
        }
        let obj = result.as_object()?;
        if ["reporting_period", "media_buy_deliveries"]
            .iter()
            .any(|m| !obj.contains_key(*m))
        {
            return Some(Err(PayloadError::MissingEnvelopeFields));
        }
        Some(DeliveryReport::deserialize(result).map_err(|_| PayloadError::InvalidPayloadMember))
    }

    /// The `impairment` object under `result`, for an impairment fire
    /// (kept as JSON: its schema is not part of the 3.2 webhook subset).
    #[must_use]
    pub fn impairment(&self) -> Option<&Value> {
        let result = self.result.as_ref()?;
        (result.get("notification_type")?.as_str()? == "impairment").then(|| result.get("impairment"))?
    }
}

/// Reads a task envelope; the checks (and their order) agree with
/// [`crate::envelope::check_mcp_envelope`].
pub(crate) fn parse_task(obj: &Map<String, Value>, value: &Value) -> Result<McpTaskPayload, PayloadError> {
    check_task(obj)?;
    let task = McpTaskPayload::deserialize(value).map_err(|_| PayloadError::InvalidPayloadMember)?;
    check_notification_id(task)
}

/// [`parse_task`] from an owned value, deciding exactly as it does (a
/// property test holds the two equal): the members move out of the map
/// into the model. No serde derive here: `#[serde(flatten)]` would buffer
/// every member (the whole `result` tree) into an intermediate form first,
/// which is most of the cost on the receiver's hot path.
pub(crate) fn parse_task_owned(value: Value) -> Result<McpTaskPayload, PayloadError> {
    let Value::Object(mut obj) = value else {
        return Err(PayloadError::MissingEnvelopeFields);
    };
    check_task(&obj)?;
    let status = obj
        .get("status")
        .and_then(Value::as_str)
        .and_then(TaskStatus::parse)
        .ok_or(PayloadError::InvalidEnvelopeStatus)?;
    let required = |obj: &mut Map<String, Value>, name: &str| match obj.remove(name) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(PayloadError::InvalidPayloadMember),
    };
    let idempotency_key = required(&mut obj, "idempotency_key")?;
    let task_id = required(&mut obj, "task_id")?;
    obj.remove("status");
    let task = McpTaskPayload {
        idempotency_key,
        notification_id: take_string(&mut obj, "notification_id")?,
        operation_id: take_string(&mut obj, "operation_id")?,
        task_id,
        task_type: take_string(&mut obj, "task_type")?,
        protocol: take_string(&mut obj, "protocol")?,
        status,
        timestamp: take_string(&mut obj, "timestamp")?,
        message: take_string(&mut obj, "message")?,
        context_id: take_string(&mut obj, "context_id")?,
        token: take_string(&mut obj, "token")?.map(EchoedToken),
        context: obj.remove("context"),
        result: obj.remove("result"),
        extra: obj,
    };
    check_notification_id(task)
}

/// An optional string member, moved out: absent is `None`, anything but a
/// string (`null` included) is a type error, as [`opt_string`] decides.
fn take_string(obj: &mut Map<String, Value>, name: &str) -> Result<Option<String>, PayloadError> {
    match obj.remove(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(PayloadError::InvalidPayloadMember),
    }
}

/// The envelope's identity members, before any deserialization.
fn check_task(obj: &Map<String, Value>) -> Result<(), PayloadError> {
    let task_id = obj.get("task_id").and_then(Value::as_str);
    let status = obj.get("status").and_then(Value::as_str);
    let (Some(_), Some(status)) = (task_id, status) else {
        return Err(PayloadError::MissingEnvelopeFields);
    };
    if !valid_key(obj) {
        return Err(PayloadError::MissingIdempotencyKey);
    }
    if TaskStatus::parse(status).is_none() {
        return Err(PayloadError::InvalidEnvelopeStatus);
    }
    Ok(())
}

fn check_notification_id(task: McpTaskPayload) -> Result<McpTaskPayload, PayloadError> {
    if task
        .notification_id
        .as_deref()
        .is_some_and(|id| !is_notification_id(id))
    {
        return Err(PayloadError::InvalidPayloadMember);
    }
    Ok(task)
}

/// A delivery report (`media-buy/media-buy-delivery-webhook-result.json`),
/// the `result` of a `scheduled`, `final`, `delayed`, `adjusted` or
/// `window_update` fire. Per-buy delivery rows stay JSON: the SDK routes
/// and dedupes reports, it does not read the metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryReport {
    /// `scheduled`, `final`, `delayed`, `adjusted` or `window_update`.
    pub notification_type: String,
    /// Position in the buy's report sequence.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some")]
    pub sequence_number: Option<u64>,
    /// `{start, end}` of the reported window.
    pub reporting_period: Value,
    /// ISO 4217 currency of monetary values.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub currency: Option<String>,
    /// One delivery row per media buy.
    pub media_buy_deliveries: Vec<Value>,
    /// When the next report is expected.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub next_expected_at: Option<String>,
    /// Members this model does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The echoed `token` of a push-notification config: an authenticity
/// secret, so `Debug` never prints it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EchoedToken(String);

impl EchoedToken {
    /// The token, to compare (in constant time) with the configured one.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for EchoedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EchoedToken(<redacted>)")
    }
}
