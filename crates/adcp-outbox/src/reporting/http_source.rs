//! A [`DeliverySource`] over HTTP: the relay asks the seller's
//! application, in any language, for a period's numbers.

use super::period::Period;
use super::registration::ReportingRegistration;
use super::source::{Closing, DeliverySource, PeriodDelivery};
use crate::clock::rfc3339_ms;
use serde_json::{json, Value};

/// The largest answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Asks the application at a URL for a period's numbers: the relay's
/// reporting source, for sellers in any language.
///
/// It `POST`s JSON to the URL:
///
/// - `{"question": "period", "media_buy_id", "period": {"start", "end", "timezone"}}`
///   answered `{"status": "ready", "media_buy_deliveries": [...]}` or
///   `{"status": "not_ready", "expected_at": RFC3339?}`;
/// - `{"question": "closing", "media_buy_id", "flight": {"start", "end", "timezone"}}`
///   answered `{"status": "closed", "media_buy_deliveries": [...]}` or
///   `{"status": "open"}`.
///
/// Any other answer (a non-`2xx`, a body over 1 MiB, another shape) is a
/// source error: nothing is sent for the period, and the scheduler asks
/// again after its recheck interval.
#[derive(Debug, Clone)]
pub struct HttpDeliverySource {
    url: String,
    client: reqwest::Client,
}

impl HttpDeliverySource {
    /// Asks `url` with `client` (its timeouts and TLS roots are the
    /// caller's).
    #[must_use]
    pub fn new(url: impl Into<String>, client: reqwest::Client) -> Self {
        Self {
            url: url.into(),
            client,
        }
    }

    async fn ask(&self, question: Value) -> Result<Value, String> {
        let mut response = self
            .client
            .post(&self.url)
            .json(&question)
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.url))?;
        if !response.status().is_success() {
            return Err(format!("{} answered {}", self.url, response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("{}: {e}", self.url))? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!("{} answered more than {MAX_ANSWER_BYTES} bytes", self.url));
            }
            body.extend_from_slice(&chunk);
        }
        let mut limits = adcp_strict_json::Limits::default();
        limits.max_len = MAX_ANSWER_BYTES;
        adcp_strict_json::parse_value(&body, &limits).map_err(|e| format!("{} answered invalid JSON: {e}", self.url))
    }
}

fn span(reg: &ReportingRegistration, p: Period) -> Value {
    json!({"start": rfc3339_ms(p.start_ms), "end": rfc3339_ms(p.end_ms), "timezone": reg.calendar().timezone()})
}

fn rows(answer: &Value) -> Result<Value, String> {
    match answer.get("media_buy_deliveries") {
        Some(rows @ Value::Array(_)) => Ok(rows.clone()),
        _ => Err("the answer has no media_buy_deliveries array".to_owned()),
    }
}

fn status(answer: &Value) -> &str {
    answer.get("status").and_then(Value::as_str).unwrap_or_default()
}

#[async_trait::async_trait]
impl DeliverySource for HttpDeliverySource {
    async fn period(&self, reg: &ReportingRegistration, period: Period) -> Result<PeriodDelivery, String> {
        let answer = self
            .ask(json!({"question": "period", "media_buy_id": reg.media_buy_id(), "period": span(reg, period)}))
            .await?;
        match status(&answer) {
            "ready" => Ok(PeriodDelivery::Ready(rows(&answer)?)),
            "not_ready" => {
                let expected_at_ms = match answer.get("expected_at") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(at)) => Some(
                        at.parse::<jiff::Timestamp>()
                            .map_err(|_| format!("expected_at {at:?} is not an RFC 3339 time"))?
                            .as_millisecond(),
                    ),
                    Some(_) => return Err("expected_at must be an RFC 3339 string".to_owned()),
                };
                Ok(PeriodDelivery::NotReady { expected_at_ms })
            }
            other => Err(format!("status {other:?}: expected ready or not_ready")),
        }
    }

    async fn closing(&self, reg: &ReportingRegistration, flight: Period) -> Result<Closing, String> {
        let answer = self
            .ask(json!({"question": "closing", "media_buy_id": reg.media_buy_id(), "flight": span(reg, flight)}))
            .await?;
        match status(&answer) {
            "closed" => Ok(Closing::Closed(rows(&answer)?)),
            "open" => Ok(Closing::Open),
            other => Err(format!("status {other:?}: expected closed or open")),
        }
    }
}
