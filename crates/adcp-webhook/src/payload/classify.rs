//! Which kind a body is: by registration channel when the receiver knows
//! it, else by shape in one fixed order.

use super::challenge::{AgentWebhookChallenge, Challenge, WebhookChallenge, CHALLENGE_TYPE};
use super::kind::is_delivery_report_type;
use super::model::{parse, valid_key};
use super::task::{parse_task, parse_task_owned};
use super::{A2aTaskPayload, AcceptKinds, Channel, GenericPayload, PayloadError, PayloadKind, WebhookPayload};
use crate::extract::{detect_format, PayloadFormat};
use serde_json::{Map, Value};

type Obj = Map<String, Value>;

pub(crate) fn classify(
    value: &Value,
    channel: Option<Channel>,
    accept: AcceptKinds,
) -> Result<WebhookPayload, PayloadError> {
    let obj = value.as_object().ok_or(PayloadError::MissingEnvelopeFields)?;
    let payload = match channel {
        None => detect(obj, value, accept)?,
        Some(channel) => on_channel(channel, obj, value, accept)?,
    };
    // A kind read from its own discriminator can still be one the
    // registration never carries (an agent-level event on an account
    // URL, a challenge of the other level).
    match channel {
        Some(channel) if !channel.carries(payload.kind()) => Err(PayloadError::UnexpectedPayloadKind),
        _ => Ok(payload),
    }
}

/// [`classify`] consuming the value: a task envelope (the hot path) is
/// built by moving its members, every other kind as [`classify`] does.
/// The decision is the same for every input.
pub(crate) fn classify_owned(
    value: Value,
    channel: Option<Channel>,
    accept: AcceptKinds,
) -> Result<WebhookPayload, PayloadError> {
    let task = match channel {
        Some(Channel::McpTask | Channel::Reporting) => true,
        // What `detect` reaches step 4 with.
        None => {
            value.as_object().is_some_and(|obj| {
                !is_challenge(obj)
                    && !obj.contains_key("notification_type")
                    && !obj.get("event").is_some_and(Value::is_string)
            }) && detect_format(&value) == Some(PayloadFormat::Mcp)
        }
        Some(_) => false,
    };
    if task {
        return parse_task_owned(value).map(|t| WebhookPayload::McpTask(Box::new(t)));
    }
    classify(&value, channel, accept)
}

/// Shape detection, in this order (the first signal present decides):
/// 1. `type: "webhook.challenge"` → a challenge (agent-level with
///    `scope: "agent"`);
/// 2. `notification_type` → the named notification; a delivery-report
///    type is a `result` posted bare (`missing_envelope_fields`);
/// 3. string `event` → a list-change webhook;
/// 4. string `status` and `task_id` → the MCP task envelope;
/// 5. object `status` with `state` (bare or under `task` /
///    `statusUpdate`) → A2A;
/// 6. `rights_id` → a rights revocation;
/// 7. `batch_id` and `artifacts` → an artifact batch;
/// 8. delivery-report or impairment members without an envelope →
///    `missing_envelope_fields`;
/// 9. otherwise generic (valid `idempotency_key`, [`AcceptKinds::All`])
///    or `unknown_payload_kind`.
fn detect(obj: &Obj, value: &Value, accept: AcceptKinds) -> Result<WebhookPayload, PayloadError> {
    if is_challenge(obj) {
        return challenge(obj, value);
    }
    if let Some(t) = obj.get("notification_type") {
        let t = t.as_str().ok_or(PayloadError::InvalidPayloadMember)?;
        return notification(t, obj, value, accept);
    }
    if let Some(event) = obj.get("event").and_then(Value::as_str) {
        return match PayloadKind::from_list_event(event) {
            Some(kind) => list(kind, obj, value),
            None => generic(obj, accept),
        };
    }
    if detect_format(value) == Some(PayloadFormat::Mcp) {
        return parse_task(obj, value).map(|t| WebhookPayload::McpTask(Box::new(t)));
    }
    if detect_format(value) == Some(PayloadFormat::A2a) {
        return Ok(WebhookPayload::A2aTask(A2aTaskPayload::new(obj.clone())));
    }
    if obj.contains_key("rights_id") {
        return parse(obj, value, true).map(|r| WebhookPayload::RightsRevocation(Box::new(r)));
    }
    if obj.contains_key("batch_id") && obj.contains_key("artifacts") {
        return parse(obj, value, true).map(|a| WebhookPayload::ArtifactBatch(Box::new(a)));
    }
    if is_bare_result(obj) {
        return Err(PayloadError::MissingEnvelopeFields);
    }
    generic(obj, accept)
}

/// The channel decides the kinds; within a notification channel the
/// discriminator picks one.
fn on_channel(channel: Channel, obj: &Obj, value: &Value, accept: AcceptKinds) -> Result<WebhookPayload, PayloadError> {
    match channel {
        Channel::McpTask | Channel::Reporting => parse_task(obj, value).map(|t| WebhookPayload::McpTask(Box::new(t))),
        Channel::A2aTask => {
            let update = ["statusUpdate", "artifactUpdate"]
                .iter()
                .any(|k| obj.get(*k).is_some_and(Value::is_object));
            if detect_format(value) == Some(PayloadFormat::A2a) || update {
                Ok(WebhookPayload::A2aTask(A2aTaskPayload::new(obj.clone())))
            } else {
                Err(PayloadError::MissingEnvelopeFields)
            }
        }
        Channel::AccountNotifications | Channel::AgentNotifications => {
            if is_challenge(obj) {
                return challenge(obj, value);
            }
            match obj.get("notification_type") {
                None | Some(Value::Null) => Err(PayloadError::MissingEnvelopeFields),
                Some(t) => {
                    let t = t.as_str().ok_or(PayloadError::InvalidPayloadMember)?;
                    notification(t, obj, value, accept)
                }
            }
        }
        Channel::CollectionList | Channel::PropertyList => match obj.get("event") {
            None | Some(Value::Null) => Err(PayloadError::MissingEnvelopeFields),
            Some(event) => {
                let event = event.as_str().ok_or(PayloadError::InvalidPayloadMember)?;
                let kind = PayloadKind::from_list_event(event).ok_or(PayloadError::UnknownPayloadKind)?;
                list(kind, obj, value)
            }
        },
        Channel::Artifacts => parse(obj, value, true).map(|a| WebhookPayload::ArtifactBatch(Box::new(a))),
        Channel::RightsRevocation => parse(obj, value, true).map(|r| WebhookPayload::RightsRevocation(Box::new(r))),
    }
}

fn is_challenge(obj: &Obj) -> bool {
    obj.get("type").and_then(Value::as_str) == Some(CHALLENGE_TYPE)
}

fn challenge(obj: &Obj, value: &Value) -> Result<WebhookPayload, PayloadError> {
    let c = match obj.get("scope") {
        None => Challenge::Account(parse::<WebhookChallenge>(obj, value, false)?),
        Some(Value::String(s)) if s == "agent" => Challenge::Agent(parse::<AgentWebhookChallenge>(obj, value, false)?),
        Some(_) => return Err(PayloadError::InvalidChallenge),
    };
    Ok(WebhookPayload::Challenge(Box::new(c)))
}

fn notification(t: &str, obj: &Obj, value: &Value, accept: AcceptKinds) -> Result<WebhookPayload, PayloadError> {
    use WebhookPayload as P;
    if is_delivery_report_type(t) {
        // A delivery report's (or impairment's) `result`, posted without
        // its task envelope: never a body of its own.
        return Err(PayloadError::MissingEnvelopeFields);
    }
    let Some(kind) = PayloadKind::from_notification_type(t) else {
        return generic(obj, accept);
    };
    Ok(match kind {
        PayloadKind::CreativeStatusChanged => P::CreativeStatusChanged(Box::new(parse(obj, value, true)?)),
        PayloadKind::CreativeAssignmentChanged => P::CreativeAssignmentChanged(Box::new(parse(obj, value, true)?)),
        PayloadKind::CreativePurged => P::CreativePurged(Box::new(parse(obj, value, true)?)),
        PayloadKind::IndicatorsChanged => P::IndicatorsChanged(Box::new(parse(obj, value, true)?)),
        PayloadKind::AccountStatusChanged => P::AccountStatusChanged(Box::new(parse(obj, value, true)?)),
        PayloadKind::AccountChangeRecorded => P::AccountChangeRecorded(Box::new(parse(obj, value, true)?)),
        PayloadKind::WholesaleFeed => P::WholesaleFeed(Box::new(parse(obj, value, true)?)),
        PayloadKind::ReportingDeliveryReady => P::ReportingDeliveryReady(Box::new(parse(obj, value, true)?)),
        PayloadKind::ReportingStatusChanged => P::ReportingStatusChanged(Box::new(parse(obj, value, true)?)),
        PayloadKind::ReportingLedgerChanged => P::ReportingLedgerChanged(Box::new(parse(obj, value, true)?)),
        PayloadKind::CapabilitiesChanged => P::CapabilitiesChanged(Box::new(parse(obj, value, true)?)),
        PayloadKind::PrincipalChanged => P::PrincipalChanged(Box::new(parse(obj, value, true)?)),
        // `from_notification_type` names no other kind.
        _ => return generic(obj, accept),
    })
}

fn list(kind: PayloadKind, obj: &Obj, value: &Value) -> Result<WebhookPayload, PayloadError> {
    Ok(match kind {
        PayloadKind::CollectionListChanged => WebhookPayload::CollectionListChanged(Box::new(parse(obj, value, true)?)),
        _ => WebhookPayload::PropertyListChanged(Box::new(parse(obj, value, true)?)),
    })
}

/// Members only a delivery report or impairment `result` has at its top
/// level: such a body lacks the envelope around it.
fn is_bare_result(obj: &Obj) -> bool {
    ["media_buy_deliveries", "reporting_period", "impairment"]
        .iter()
        .any(|m| obj.contains_key(*m))
}

fn generic(obj: &Obj, accept: AcceptKinds) -> Result<WebhookPayload, PayloadError> {
    match accept {
        AcceptKinds::All if valid_key(obj) => Ok(WebhookPayload::Generic(GenericPayload::new(obj.clone()))),
        _ => Err(PayloadError::UnknownPayloadKind),
    }
}
