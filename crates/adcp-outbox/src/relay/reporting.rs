//! The relay's reporting routes: register a buy's `reporting_webhook`
//! stream, say when the buy ended, read where the stream stands. The
//! numbers come from the application through
//! [`HttpDeliverySource`](crate::reporting::HttpDeliverySource).

use super::reply::ApiError;
use super::RelayApi;
use crate::clock::rfc3339_ms;
use crate::reporting::{BuyEnd, ReportingError, ReportingRegistration, ReportingScheduler, StreamStatus};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

impl From<ReportingError> for ApiError {
    fn from(e: ReportingError) -> Self {
        match e {
            ReportingError::Outbox(e) => e.into(),
            ReportingError::UnknownStream(_) => Self::new(StatusCode::NOT_FOUND, e.code(), e.to_string()),
            ReportingError::StreamClosed(_) => Self::new(StatusCode::CONFLICT, e.code(), e.to_string()),
            _ => Self::bad(e.code(), e.to_string()),
        }
    }
}

fn status_json(s: &StreamStatus) -> Value {
    json!({
        "media_buy_id": s.media_buy_id,
        "operation_id": s.operation_id,
        "sequence_number": s.sequence,
        "next_period_start": rfc3339_ms(s.next_period_start_ms),
        "next_check_at": s.next_check_ms.map(rfc3339_ms),
        "ended": s.ended.map(|(end, at)| json!({"status": end.as_str(), "at": rfc3339_ms(at)})),
        "closed": s.closed,
    })
}

fn scheduler(api: &RelayApi) -> Result<&ReportingScheduler, ApiError> {
    api.reporting.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "reporting_unavailable",
            "this relay runs no reporting schedule: start it with a reporting source",
        )
    })
}

fn object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match adcp_strict_json::parse_value(body, &adcp_strict_json::Limits::default()) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(ApiError::bad(
            "invalid_request",
            "the request body must be a JSON object",
        )),
        Err(e) => Err(ApiError::bad("invalid_json", format!("request body: {e}"))),
    }
}

fn time(o: &Map<String, Value>, name: &str) -> Result<i64, ApiError> {
    o.get(name)
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(jiff::Timestamp::as_millisecond)
        .ok_or_else(|| ApiError::bad("invalid_request", format!("`{name}` must be an RFC 3339 time")))
}

/// `PUT /v1/reporting/{media_buy_id}`: `{"reporting_webhook",
/// "reporting_capabilities": [...], "start_time", "end_time",
/// "principal"?, "signing_scope"?}`.
pub(super) async fn register(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(buy): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let scheduler = scheduler(&api)?;
    let request = object(&body)?;
    let hook = request
        .get("reporting_webhook")
        .filter(|h| h.is_object())
        .ok_or_else(|| ApiError::bad("invalid_registration", "`reporting_webhook` must be an object"))?;
    let capabilities = request
        .get("reporting_capabilities")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::bad("invalid_registration", "`reporting_capabilities` must be an array"))?;
    if let Some(url) = hook.get("url").and_then(Value::as_str) {
        api.destinations
            .check(url)
            .map_err(|e| ApiError::bad("destination_refused", format!("destination refused: {e}")))?;
    }
    let mut reg = ReportingRegistration::from_products(
        buy,
        hook,
        capabilities,
        time(&request, "start_time")?,
        time(&request, "end_time")?,
    )?;
    if let Some(principal) = request.get("principal").and_then(Value::as_str) {
        reg = reg.principal(principal);
    }
    if let Some(scope) = request.get("signing_scope").and_then(Value::as_str) {
        if !api.scopes.contains(scope) {
            return Err(ApiError::bad(
                "unknown_signing_scope",
                format!("no key for signing scope {scope:?}"),
            ));
        }
        reg = reg.signing_scope(scope);
    }
    let status = scheduler.register(reg).await?;
    Ok(Json(status_json(&status)).into_response())
}

/// `POST /v1/reporting/{media_buy_id}/end`: `{"status": "completed" |
/// "canceled" | "rejected", "at"}`.
pub(super) async fn end(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(buy): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let scheduler = scheduler(&api)?;
    let request = object(&body)?;
    let end = match request.get("status").and_then(Value::as_str) {
        Some("completed") => BuyEnd::Completed,
        Some("canceled") => BuyEnd::Canceled,
        Some("rejected") => BuyEnd::Rejected,
        _ => {
            return Err(ApiError::bad(
                "invalid_request",
                "`status` must be completed, canceled or rejected",
            ))
        }
    };
    let status = scheduler.end(&buy, end, time(&request, "at")?).await?;
    Ok(Json(status_json(&status)).into_response())
}

/// `GET /v1/reporting/{media_buy_id}`.
pub(super) async fn show(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(buy): Path<String>,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    match scheduler(&api)?.status(&buy).await? {
        Some(status) => Ok(Json(status_json(&status)).into_response()),
        None => Err(ReportingError::UnknownStream(buy).into()),
    }
}
