//! The relay's channel routes: register or update a channel, read it,
//! pause, resume, activate, close it, and terminate a buy's channels; and
//! the `destination` an event sent to a channel takes from it.

use super::reply::ApiError;
use super::RelayApi;
use crate::channels::{ChannelKind, ChannelRegistration, ChannelState, ChannelView, Channels};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

/// A view as the API shows it: the registration without its credentials
/// (write-only, as `sync_accounts` echoes them).
pub(super) fn view_json(view: &ChannelView) -> Value {
    let mut registration = view.registration.clone();
    if let Some(auth) = registration.get_mut("authentication").and_then(Value::as_object_mut) {
        auth.remove("credentials");
    }
    json!({
        "id": view.id,
        "kind": view.kind.as_str(),
        "state": view.state.as_str(),
        "proven": view.proven,
        "registration": registration,
        "rebuilt": view.rebuilt,
    })
}

fn text<'a>(o: &'a Map<String, Value>, name: &str) -> Result<&'a str, ApiError> {
    o.get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 255 && !s.contains(':'))
        .ok_or_else(|| {
            ApiError::bad(
                "invalid_request",
                format!("`{name}` must be a non-empty string of at most 255 bytes without `:`"),
            )
        })
}

/// `PUT /v1/channels`: `{"kind", "media_buy_id" | "account_id" | "owner",
/// "registration"}`.
pub(super) async fn put(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let request: Value = adcp_strict_json::parse_value(&body, &adcp_strict_json::Limits::default())
        .map_err(|e| ApiError::bad("invalid_json", format!("request body: {e}")))?;
    let Value::Object(request) = request else {
        return Err(ApiError::bad(
            "invalid_request",
            "the request body must be a JSON object",
        ));
    };
    let registration = request
        .get("registration")
        .filter(|r| r.is_object())
        .ok_or_else(|| ApiError::bad("invalid_registration", "`registration` must be an object"))?;
    let kind = request
        .get("kind")
        .and_then(Value::as_str)
        .and_then(ChannelKind::parse)
        .ok_or_else(|| {
            ApiError::bad(
                "invalid_request",
                "`kind` must be push_notification_config, reporting_webhook, account or agent",
            )
        })?;
    let channel = match kind {
        ChannelKind::PushNotificationConfig => {
            ChannelRegistration::push_notification_config(text(&request, "media_buy_id")?, registration)
        }
        ChannelKind::ReportingWebhook => {
            ChannelRegistration::reporting_webhook(text(&request, "media_buy_id")?, registration)
        }
        ChannelKind::Account => ChannelRegistration::account(text(&request, "account_id")?, registration),
        ChannelKind::Agent => ChannelRegistration::agent(text(&request, "owner")?, registration),
    }?;
    let url = channel.destination()?.url().to_owned();
    api.destinations
        .check(&url)
        .map_err(|e| ApiError::bad("destination_refused", format!("destination refused: {e}")))?;
    let view = Channels::new(api.outbox.clone()).put(channel).await?;
    Ok(Json(view_json(&view)).into_response())
}

pub(super) async fn show(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    match Channels::new(api.outbox.clone()).get(&id).await? {
        Some(view) => Ok(Json(view_json(&view)).into_response()),
        None => Err(crate::OutboxError::UnknownChannel(id).into()),
    }
}

pub(super) async fn close(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let view = Channels::new(api.outbox.clone()).close(&id).await?;
    Ok(Json(view_json(&view)).into_response())
}

pub(super) async fn pause(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let view = Channels::new(api.outbox.clone()).pause(&id).await?;
    Ok(Json(view_json(&view)).into_response())
}

pub(super) async fn resume(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let channels = Channels::new(api.outbox.clone());
    let view = channels
        .get(&id)
        .await?
        .ok_or(crate::OutboxError::UnknownChannel(id.clone()))?;
    if let Some(url) = view.registration.get("url").and_then(Value::as_str) {
        api.destinations
            .check(url)
            .map_err(|e| ApiError::bad("destination_refused", format!("destination refused: {e}")))?;
    }
    let view = channels.resume(&id).await?;
    Ok(Json(view_json(&view)).into_response())
}

pub(super) async fn activate(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let Some((activator, agent_url)) = &api.activator else {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "activation_unavailable",
            "this relay runs no activation challenges: start it with the seller's agent URL",
        ));
    };
    let (view, report) = Channels::new(api.outbox.clone())
        .activate(&id, activator.as_ref(), agent_url)
        .await?;
    let mut body = view_json(&view);
    body["activation"] = json!({"outcome": report.outcome.code(), "activated": report.outcome.is_activated()});
    Ok(Json(body).into_response())
}

/// `POST /v1/buys/{media_buy_id}/terminate`: closes the buy's
/// `push_notification_config` channel (its held impairments go out
/// first). Its `reporting_webhook` channel stays open for the `final`
/// report, and closes when that report is enqueued.
pub(super) async fn terminate(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(buy): Path<String>,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let channels = Channels::new(api.outbox.clone());
    let mut closed = Vec::new();
    let push = format!("{}:{buy}", ChannelKind::PushNotificationConfig.as_str());
    if channels.get(&push).await?.is_some() {
        closed.push(view_json(&channels.close(&push).await?));
    }
    let reporting = format!("{}:{buy}", ChannelKind::ReportingWebhook.as_str());
    let awaiting_final = match channels.get(&reporting).await? {
        Some(view) if view.state != ChannelState::Closed => vec![Value::String(reporting)],
        _ => Vec::new(),
    };
    Ok(Json(json!({ "closed": closed, "awaiting_final": awaiting_final })).into_response())
}

/// The `destination` of an event sent to `channel`, from its
/// registration (its URL, `operation_id`, `token`, authentication).
pub(super) async fn destination_of(api: &RelayApi, channel: &str) -> Result<Value, ApiError> {
    let view = Channels::new(api.outbox.clone())
        .get(channel)
        .await?
        .ok_or_else(|| crate::OutboxError::UnknownChannel(channel.to_owned()))?;
    let mut destination = Map::new();
    for name in ["url", "operation_id", "token", "authentication"] {
        if let Some(v) = view.registration.get(name) {
            destination.insert(name.to_owned(), v.clone());
        }
    }
    Ok(Value::Object(destination))
}
