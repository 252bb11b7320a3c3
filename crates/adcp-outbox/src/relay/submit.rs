//! `POST /v1/events`: one request body → one [`NewEvent`], or a refusal
//! naming what is wrong. Nothing is enqueued unless everything holds.

use super::reply::ApiError;
use crate::event::{NewEvent, OutboxDestination};
use adcp_sign::{IdempotencyKey, WebhookEvent};
use adcp_webhook::payload::{AcceptKinds, PayloadKind, WebhookPayload};
use adcp_webhook::DestinationPolicy;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::time::Duration;

/// The members a request body may have.
const MEMBERS: &[&str] = &[
    "destination",
    "notification_type",
    "payload",
    "principal",
    "resources",
    "coalescing_key",
    "coalescing_window_seconds",
    "signing_scope",
];

/// The most resources one event may name.
const MAX_RESOURCES: usize = 64;

fn text<'a>(o: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, ApiError> {
    match o.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 1024 => Ok(Some(s)),
        Some(_) => Err(ApiError::bad(
            "invalid_request",
            format!("`{name}` must be a non-empty string of at most 1024 bytes"),
        )),
    }
}

/// The payload's own notification type: top level, or
/// `result.notification_type` (delivery reports, impairments).
fn own_type(payload: &Map<String, Value>) -> Option<&str> {
    payload.get("notification_type").and_then(Value::as_str).or_else(|| {
        payload
            .get("result")
            .and_then(|r| r.get("notification_type"))
            .and_then(Value::as_str)
    })
}

/// Reads and checks a request body.
pub(crate) fn parse(body: &[u8], policy: &DestinationPolicy, scopes: &HashSet<String>) -> Result<NewEvent, ApiError> {
    let mut limits = adcp_strict_json::Limits::default();
    limits.max_len = limits.max_len.max(body.len());
    let value = adcp_strict_json::parse_value(body, &limits)
        .map_err(|e| ApiError::bad("invalid_json", format!("request body: {e}")))?;
    let Value::Object(mut request) = value else {
        return Err(ApiError::bad(
            "invalid_request",
            "the request body must be a JSON object",
        ));
    };
    if let Some(unknown) = request.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
        return Err(ApiError::bad("invalid_request", format!("unknown member `{unknown}`")));
    }
    let destination = parse_destination(&request, policy)?;
    let Some(Value::Object(mut payload)) = request.remove("payload") else {
        return Err(ApiError::bad("invalid_payload", "`payload` must be a JSON object"));
    };
    let declared = text(&request, "notification_type")?;
    match (declared, own_type(&payload)) {
        (Some(d), Some(own)) if d != own => {
            return Err(ApiError::bad(
                "notification_type_mismatch",
                format!("notification_type {d:?} differs from the payload's {own:?}"),
            ));
        }
        (Some(d), None) => {
            return Err(ApiError::bad(
                "notification_type_mismatch",
                format!("notification_type {d:?} given for a payload that has none"),
            ));
        }
        (None, Some(own)) => {
            return Err(ApiError::bad(
                "notification_type_missing",
                format!("the payload is a {own:?} notification: say so in notification_type"),
            ));
        }
        _ => {}
    }
    // Echo the registration into a task envelope, the one kind that
    // carries `operation_id` and `token`; any kind that has them must
    // agree with the registration.
    let is_task = payload.get("task_id").is_some() && payload.get("status").is_some_and(Value::is_string);
    for (name, registered) in [
        ("operation_id", destination.operation_id().map(str::to_owned)),
        (
            "token",
            text(
                request
                    .get("destination")
                    .and_then(Value::as_object)
                    .unwrap_or(&Map::new()),
                "token",
            )?
            .map(str::to_owned),
        ),
    ] {
        let Some(registered) = registered else { continue };
        match payload.get(name) {
            Some(Value::String(v)) if *v == registered => {}
            Some(_) => {
                return Err(ApiError::bad(
                    if name == "token" {
                        "token_mismatch"
                    } else {
                        "operation_id_mismatch"
                    },
                    format!("the payload's {name} differs from the destination's"),
                ));
            }
            None if is_task => {
                payload.insert(name.to_owned(), Value::String(registered));
            }
            None => {}
        }
    }
    let refused = |e: adcp_sign::SignError| ApiError::bad("invalid_payload", format!("payload: {e} ({})", e.code()));
    if !payload.contains_key("idempotency_key") {
        let key = IdempotencyKey::generate().map_err(refused)?;
        payload.insert("idempotency_key".to_owned(), Value::String(key.as_str().to_owned()));
    }
    // The value is what gets signed: serialized once, and the body's
    // checks (strict JSON, the key's form) run on those bytes. Parsing
    // the body back would give this value again.
    let signed = Value::Object(payload);
    let bytes = serde_json::to_vec(&signed).map_err(|e| ApiError::bad("invalid_payload", e.to_string()))?;
    let event = WebhookEvent::from_json_bytes(bytes).map_err(refused)?;
    let kind = WebhookPayload::classify(&signed, None, AcceptKinds::NamedOnly).map_err(|e| {
        let code = if declared.is_some() && e.code() == "unknown_payload_kind" {
            "unknown_notification_type"
        } else {
            "invalid_payload"
        };
        ApiError::bad(code, format!("the payload is not a valid AdCP webhook: {}", e.code()))
    })?;
    if matches!(kind.kind(), PayloadKind::Generic) {
        return Err(ApiError::bad(
            "invalid_payload",
            "the payload is not a known AdCP webhook kind",
        ));
    }
    if matches!(kind.kind(), PayloadKind::McpTask) {
        // A sender is held to the envelope schema's required members, which
        // a receiver leniently does without.
        adcp_webhook::check_mcp_envelope(&signed)
            .map_err(|e| ApiError::bad("invalid_payload", format!("task envelope: {e}")))?;
        for member in ["task_type", "timestamp", "operation_id"] {
            if !signed.get(member).is_some_and(Value::is_string) {
                return Err(ApiError::bad(
                    "invalid_payload",
                    format!("task envelope: `{member}` is required (a string)"),
                ));
            }
        }
    }
    let mut new = NewEvent::parsed(event, &signed, destination);
    if let Some(p) = text(&request, "principal")? {
        new = new.principal(p);
    }
    if let Some(scope) = text(&request, "signing_scope")? {
        if !scopes.contains(scope) {
            return Err(ApiError::bad(
                "unknown_signing_scope",
                format!("no signing key for scope {scope:?}"),
            ));
        }
        new = new.signing_scope(scope);
    } else if !scopes.contains(crate::DEFAULT_SIGNING_SCOPE) {
        return Err(ApiError::bad(
            "unknown_signing_scope",
            "no default signing key: name a signing_scope",
        ));
    }
    match request.get("resources") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) if items.len() <= MAX_RESOURCES => {
            for item in items {
                match item.as_str() {
                    Some(r) if !r.is_empty() && r.len() <= 255 => new = new.resource(r),
                    _ => {
                        return Err(ApiError::bad(
                            "invalid_request",
                            "`resources` must hold non-empty strings of at most 255 bytes",
                        ))
                    }
                }
            }
        }
        Some(_) => {
            return Err(ApiError::bad(
                "invalid_request",
                format!("`resources` must be an array of at most {MAX_RESOURCES} strings"),
            ))
        }
    }
    if let Some(key) = text(&request, "coalescing_key")? {
        new = new.coalescing_key(key);
    }
    match request.get("coalescing_window_seconds") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64() {
            Some(s) if s <= 86_400 => new = new.coalescing_window(Duration::from_secs(s)),
            _ => {
                return Err(ApiError::bad(
                    "invalid_request",
                    "`coalescing_window_seconds` must be an integer 0-86400",
                ))
            }
        },
    }
    Ok(new)
}

fn parse_destination(request: &Map<String, Value>, policy: &DestinationPolicy) -> Result<OutboxDestination, ApiError> {
    let Some(Value::Object(d)) = request.get("destination") else {
        return Err(ApiError::bad(
            "invalid_destination",
            "`destination` must be an object with a `url`",
        ));
    };
    for name in d.keys() {
        if ![
            "url",
            "operation_id",
            "token",
            "authentication",
            "coalescing_opt_in_seconds",
        ]
        .contains(&name.as_str())
        {
            return Err(ApiError::bad(
                "invalid_destination",
                format!("unknown destination member `{name}`"),
            ));
        }
    }
    text(d, "operation_id").map_err(|e| ApiError::bad("invalid_destination", e.message))?;
    text(d, "token").map_err(|e| ApiError::bad("invalid_destination", e.message))?;
    let mut destination = OutboxDestination::from_registration(&Value::Object(d.clone()))
        .map_err(|e| ApiError::bad("invalid_destination", e.to_string()))?;
    // The buyer's opt-in to coalescing windows above a type's default, as
    // its registration records it.
    match d.get("coalescing_opt_in_seconds") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64() {
            Some(s) if s <= 86_400 => destination = destination.with_coalescing_opt_in(Duration::from_secs(s)),
            _ => {
                return Err(ApiError::bad(
                    "invalid_destination",
                    "`coalescing_opt_in_seconds` must be an integer 0-86400",
                ));
            }
        },
    }
    policy
        .check(destination.url())
        .map_err(|e| ApiError::bad("destination_refused", format!("destination refused: {e}")))?;
    crate::event::origin_of(destination.url()).map_err(|e| ApiError::bad("invalid_destination", e.to_string()))?;
    Ok(destination)
}
