//! The relay: the outbox behind a small HTTP API, so that a seller in any
//! language enqueues with one `POST` and gets durable, signed, retried,
//! recorded delivery (`adcp-sig relay` serves it; this is its router, to
//! mount in your own server too).
//!
//! | route | what |
//! |---|---|
//! | `POST /v1/events` | enqueue one event for one destination, or for a `channel`: `202 {"id", "idempotency_key"}` |
//! | `GET /v1/events/{id}` | the event: `state`, `attempts`, last outcome, … |
//! | `POST /v1/events/{id}/redrive` | send a refused or expired event again (inside its horizon) |
//! | `GET /v1/activity?url=…` or `?principal=…[&resource=…]` `[&limit=1-200]` | `{"webhook_activity": [...]}` |
//! | `PUT /v1/channels` | register or update a channel: `{"kind", "media_buy_id" \| "account_id" \| "owner", "registration"}` |
//! | `GET /v1/channels/{id}` | the channel: `state`, `proven`, its registration without credentials |
//! | `DELETE /v1/channels/{id}` | close it: held events go out, later ones are refused |
//! | `POST /v1/channels/{id}/pause`, `…/resume` | pause (pending events withdrawn) or resume (URL checked again) |
//! | `POST /v1/channels/{id}/activate` | run a subscriber's activation challenge (when the relay has the seller's agent URL) |
//! | `POST /v1/buys/{media_buy_id}/terminate` | close the buy's `push_notification_config` channel; its `reporting_webhook` closes with its `final` report |
//! | `PUT /v1/reporting/{media_buy_id}` | register a buy's `reporting_webhook` stream (when the relay has a reporting source) |
//! | `POST /v1/reporting/{media_buy_id}/end` | the buy reached `completed`, `canceled` or `rejected` |
//! | `GET /v1/reporting/{media_buy_id}` | where its stream stands |
//! | `GET /metrics` | Prometheus text |
//! | `GET /healthz` | `200` while the store answers, else `503` |
//! | `GET /openapi.json` | the API's OpenAPI 3.1 document |
//!
//! Every refusal is `{"error": code, "message": text}` and enqueues nothing.

mod channels;
mod openapi;
mod reply;
mod reporting;
mod submit;

pub use openapi::openapi_document;
pub use reply::ApiError;

use crate::dispatch::DispatchMetrics;
use crate::id::EventId;
use crate::outbox::Outbox;
use crate::store::{ActivityQuery, ActivitySelector, EventState, DEFAULT_ACTIVITY_LIMIT, MAX_ACTIVITY_LIMIT};
use adcp_webhook::DestinationPolicy;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// Reads one `POST /v1/events` body into the event it enqueues, or the
/// refusal the API answers: what the relay runs on untrusted input before
/// touching the store (exposed for fuzzing and for servers of one's own).
///
/// # Errors
///
/// [`ApiError`] with status `400` and the code naming what is wrong.
pub fn parse_event_request(
    body: &[u8],
    destinations: &DestinationPolicy,
    scopes: &HashSet<String>,
) -> Result<crate::NewEvent, ApiError> {
    submit::parse(body, destinations, scopes)
}

/// The largest request body: a 1 MiB payload and its envelope.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1024 * 1024 + 64 * 1024;

/// What the relay's routes need.
#[derive(Clone)]
pub struct RelayApi {
    outbox: Outbox,
    destinations: DestinationPolicy,
    scopes: Arc<HashSet<String>>,
    token: Option<Arc<str>>,
    metrics: Option<Arc<DispatchMetrics>>,
    max_request_bytes: usize,
    activator: Option<(Arc<dyn crate::channels::Activator>, Arc<str>)>,
    reporting: Option<crate::reporting::ReportingScheduler>,
}

impl std::fmt::Debug for RelayApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayApi")
            .field("scopes", &self.scopes)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("max_request_bytes", &self.max_request_bytes)
            .finish_non_exhaustive()
    }
}

impl RelayApi {
    /// The API over `outbox`, checking destinations with `destinations`
    /// (the dispatcher's SSRF rules) and accepting the signing `scopes`
    /// that have keys.
    #[must_use]
    pub fn new(outbox: Outbox, destinations: DestinationPolicy, scopes: impl IntoIterator<Item = String>) -> Self {
        Self {
            outbox,
            destinations,
            scopes: Arc::new(scopes.into_iter().collect()),
            token: None,
            metrics: None,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            activator: None,
            reporting: None,
        }
    }

    /// Requires `Authorization: Bearer <token>` on every route but
    /// `/healthz`.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into().into());
        self
    }

    /// Adds the dispatcher's counters to `/metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<DispatchMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Runs subscribers' activation challenges with `activator` (a
    /// [`WebhookSender`](adcp_webhook::WebhookSender) with the relay's
    /// key), as the seller agent `seller_agent_url`:
    /// `POST /v1/channels/{id}/activate`.
    #[must_use]
    pub fn with_activator(
        mut self,
        activator: Arc<dyn crate::channels::Activator>,
        seller_agent_url: impl Into<String>,
    ) -> Self {
        self.activator = Some((activator, seller_agent_url.into().into()));
        self
    }

    /// Serves the reporting routes (`/v1/reporting/{media_buy_id}`) with
    /// `scheduler` (whose [`run`](crate::reporting::ReportingScheduler::run)
    /// the caller drives).
    #[must_use]
    pub fn with_reporting(mut self, scheduler: crate::reporting::ReportingScheduler) -> Self {
        self.reporting = Some(scheduler);
        self
    }

    /// The largest request body (default [`DEFAULT_MAX_REQUEST_BYTES`]).
    #[must_use]
    pub fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// The routes.
    pub fn router(self) -> axum::Router {
        axum::Router::new()
            .route("/v1/events", post(enqueue))
            .route("/v1/events/{id}", get(show))
            .route("/v1/events/{id}/redrive", post(redrive))
            .route("/v1/activity", get(activity))
            .route("/v1/channels", axum::routing::put(channels::put))
            .route("/v1/channels/{id}", get(channels::show).delete(channels::close))
            .route("/v1/channels/{id}/pause", post(channels::pause))
            .route("/v1/channels/{id}/resume", post(channels::resume))
            .route("/v1/channels/{id}/activate", post(channels::activate))
            .route("/v1/buys/{media_buy_id}/terminate", post(channels::terminate))
            .route(
                "/v1/reporting/{media_buy_id}",
                axum::routing::put(reporting::register).get(reporting::show),
            )
            .route("/v1/reporting/{media_buy_id}/end", post(reporting::end))
            .route("/metrics", get(metrics))
            .route("/healthz", get(healthz))
            .route("/openapi.json", get(openapi))
            .with_state(self)
    }

    fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(token) = &self.token else { return Ok(()) };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
            Ok(())
        } else {
            Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this relay requires Authorization: Bearer with its API token",
            ))
        }
    }
}

async fn enqueue(State(api): State<RelayApi>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the event as Content-Type: application/json",
        ));
    }
    let bytes = axum::body::to_bytes(body, api.max_request_bytes).await.map_err(|_| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the request body exceeds {} bytes", api.max_request_bytes),
        )
    })?;
    let event = match channel_of(&bytes)? {
        // An event for a channel takes the channel's registration as its
        // destination, and the enqueue checks the channel's state.
        Some((channel, mut request)) => {
            request.insert(
                "destination".to_owned(),
                channels::destination_of(&api, &channel).await?,
            );
            let bytes = serde_json::to_vec(&request).map_err(|e| ApiError::bad("invalid_request", e.to_string()))?;
            submit::parse(&bytes, &api.destinations, &api.scopes)?.channel(channel)
        }
        None => submit::parse(&bytes, &api.destinations, &api.scopes)?,
    };
    let done = api.outbox.enqueue(event).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": done.id.as_str(), "idempotency_key": done.idempotency_key})),
    )
        .into_response())
}

/// The `channel` a request names, and the request without it; `None` for
/// a request that names none. A request naming both a channel and a
/// `destination` is refused.
/// A request naming a channel: the channel, and the rest of the request.
type ChannelRequest = (String, serde_json::Map<String, serde_json::Value>);

fn channel_of(bytes: &[u8]) -> Result<Option<ChannelRequest>, ApiError> {
    // Cheap check first: most requests name no channel.
    if !bytes.windows(9).any(|w| w == b"\"channel\"") {
        return Ok(None);
    }
    let mut limits = adcp_strict_json::Limits::default();
    limits.max_len = limits.max_len.max(bytes.len());
    let Ok(serde_json::Value::Object(mut request)) = adcp_strict_json::parse_value(bytes, &limits) else {
        return Ok(None);
    };
    let Some(channel) = request.remove("channel") else {
        return Ok(None);
    };
    let channel = channel
        .as_str()
        .filter(|c| !c.is_empty() && c.len() <= 1024)
        .ok_or_else(|| ApiError::bad("invalid_request", "`channel` must be a non-empty string"))?
        .to_owned();
    if request.contains_key("destination") {
        return Err(ApiError::bad(
            "invalid_request",
            "an event names a `channel` or a `destination`, not both: the channel's registration is its destination",
        ));
    }
    Ok(Some((channel, request)))
}

fn event_id(id: &str) -> Result<EventId, ApiError> {
    EventId::parse(id).ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("no event {id}")))
}

async fn show(State(api): State<RelayApi>, headers: HeaderMap, Path(id): Path<String>) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let id = event_id(&id)?;
    match api.outbox.get(&id).await? {
        Some(view) => Ok(Json(view.to_json()).into_response()),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no event {id}"),
        )),
    }
}

async fn redrive(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let id = event_id(&id)?;
    let view = api.outbox.redrive(&id).await?;
    Ok(Json(view.to_json()).into_response())
}

async fn activity(
    State(api): State<RelayApi>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    if let Some(k) = q
        .keys()
        .find(|k| !["url", "principal", "resource", "limit"].contains(&k.as_str()))
    {
        return Err(ApiError::bad("invalid_query", format!("unknown parameter `{k}`")));
    }
    let limit = match q.get("limit") {
        None => DEFAULT_ACTIVITY_LIMIT,
        Some(l) => match l.parse::<u32>() {
            Ok(n) if (1..=MAX_ACTIVITY_LIMIT).contains(&n) => n,
            _ => {
                return Err(ApiError::bad(
                    "invalid_limit",
                    format!("limit must be 1-{MAX_ACTIVITY_LIMIT}"),
                ))
            }
        },
    };
    let selector = match (q.get("url"), q.get("principal"), q.get("resource")) {
        (Some(url), None, None) if !url.is_empty() => ActivitySelector::Url(url.clone()),
        (None, Some(p), resource) if !p.is_empty() => ActivitySelector::Principal {
            principal: p.clone(),
            resource: resource.filter(|r| !r.is_empty()).cloned(),
        },
        _ => {
            return Err(ApiError::bad(
                "invalid_query",
                "select by url=URL, or by principal=P with an optional resource=R",
            ));
        }
    };
    let records = api.outbox.activity(&ActivityQuery { selector, limit }).await?;
    let records: Vec<_> = records.iter().map(crate::ActivityRecord::to_json).collect();
    Ok(Json(json!({ "webhook_activity": records })).into_response())
}

async fn metrics(State(api): State<RelayApi>, headers: HeaderMap) -> Result<Response, ApiError> {
    api.authorize(&headers)?;
    let stats = api.outbox.stats().await?;
    let now = api.outbox.config().clock.now_ms();
    let mut out = api.metrics.as_ref().map(|m| m.render()).unwrap_or_default();
    let _ = writeln!(out, "# HELP adcp_outbox_events Events in the outbox by state.");
    let _ = writeln!(out, "# TYPE adcp_outbox_events gauge");
    for state in EventState::ALL {
        let _ = writeln!(
            out,
            "adcp_outbox_events{{state=\"{}\"}} {}",
            state.as_str(),
            stats.count(state)
        );
    }
    let _ = writeln!(
        out,
        "# HELP adcp_outbox_open_breakers Destination origins whose breaker is open."
    );
    let _ = writeln!(out, "# TYPE adcp_outbox_open_breakers gauge");
    let _ = writeln!(out, "adcp_outbox_open_breakers {}", stats.open_breakers);
    let _ = writeln!(
        out,
        "# HELP adcp_outbox_oldest_pending_age_seconds Age of the oldest pending event."
    );
    let _ = writeln!(out, "# TYPE adcp_outbox_oldest_pending_age_seconds gauge");
    let age = stats
        .oldest_pending_enqueued_ms
        .map_or(0.0, |t| (now.saturating_sub(t)).max(0) as f64 / 1000.0);
    let _ = writeln!(out, "adcp_outbox_oldest_pending_age_seconds {age}");
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response())
}

async fn healthz(State(api): State<RelayApi>) -> Response {
    match api.outbox.stats().await {
        Ok(_) => (StatusCode::OK, Json(json!({"status": "ok"}))).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

async fn openapi() -> Response {
    Json(openapi_document()).into_response()
}
