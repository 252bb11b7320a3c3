//! A buy's reporting registration: its `reporting_webhook` as the buyer
//! registered it, the calendar its products report on, the expected
//! delay, and the flight.

use super::error::ReportingError;
use super::period::{Calendar, Frequency};
use serde_json::Value;
use std::time::Duration;

/// The most periods one flight may span (about 416 days of hourly
/// reports, 27 years of daily ones).
pub const MAX_PERIODS: i64 = 10_000;

/// The reporting stream of one media buy, as registered.
///
/// The timezone is the products' `reporting_capabilities.timezone` (the
/// schemas' reading: a period's `start` and `end` fall on that zone's
/// boundaries); [`from_products`](Self::from_products) refuses a buy whose
/// products disagree and takes the largest `expected_delay_minutes`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportingRegistration {
    pub(crate) media_buy_id: String,
    pub(crate) reporting_webhook: Value,
    pub(crate) calendar: Calendar,
    pub(crate) expected_delay_ms: i64,
    pub(crate) flight_start_ms: i64,
    pub(crate) flight_end_ms: i64,
    pub(crate) principal: Option<String>,
    pub(crate) signing_scope: String,
}

impl ReportingRegistration {
    /// The stream of `media_buy_id`: `reporting_webhook` (its `url`,
    /// `token`, `authentication` and `reporting_frequency` are used as
    /// registered), periods in `timezone`, each report due `expected_delay`
    /// after its period ends, for the flight `[flight_start_ms,
    /// flight_end_ms)` (Unix ms).
    ///
    /// # Errors
    ///
    /// `invalid_registration` (no `url`, an unknown `reporting_frequency`,
    /// an empty flight), `unknown_timezone`.
    pub fn new(
        media_buy_id: impl Into<String>,
        reporting_webhook: &Value,
        timezone: &str,
        expected_delay: Duration,
        flight_start_ms: i64,
        flight_end_ms: i64,
    ) -> Result<Self, ReportingError> {
        let media_buy_id = media_buy_id.into();
        if media_buy_id.is_empty() || media_buy_id.len() > 255 {
            return Err(ReportingError::InvalidRegistration(
                "media_buy_id must be 1-255 characters".to_owned(),
            ));
        }
        if reporting_webhook.get("url").and_then(Value::as_str).is_none() {
            return Err(ReportingError::InvalidRegistration(
                "reporting_webhook.url is missing".to_owned(),
            ));
        }
        let frequency = reporting_webhook
            .get("reporting_frequency")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let frequency = Frequency::parse(frequency).ok_or_else(|| {
            ReportingError::InvalidRegistration(format!(
                "reporting_webhook.reporting_frequency {frequency:?} is not hourly, daily or monthly"
            ))
        })?;
        if flight_end_ms <= flight_start_ms {
            return Err(ReportingError::InvalidRegistration(
                "the flight ends before it starts".to_owned(),
            ));
        }
        // A bound on the work one registration can ask for: each period is
        // a question to the application and a report.
        let shortest_period_ms: i64 = match frequency {
            Frequency::Hourly => 3_600_000,
            Frequency::Daily => 23 * 3_600_000,
            Frequency::Monthly => 28 * 86_400_000,
        };
        if flight_end_ms.saturating_sub(flight_start_ms) / shortest_period_ms > MAX_PERIODS {
            return Err(ReportingError::InvalidRegistration(format!(
                "the flight spans more than {MAX_PERIODS} {} periods",
                frequency.as_str()
            )));
        }
        let calendar = Calendar::new(timezone, frequency)?;
        // Both ends must be on the calendar.
        calendar.period_containing(flight_start_ms)?;
        calendar.period_containing(flight_end_ms)?;
        Ok(Self {
            media_buy_id,
            reporting_webhook: reporting_webhook.clone(),
            calendar,
            expected_delay_ms: i64::try_from(expected_delay.as_millis()).unwrap_or(i64::MAX),
            flight_start_ms,
            flight_end_ms,
            principal: None,
            signing_scope: crate::event::DEFAULT_SIGNING_SCOPE.to_owned(),
        })
    }

    /// [`new`](Self::new) with the timezone and delay read from the
    /// `reporting_capabilities` of the buy's products: one timezone for
    /// all (else `reporting_timezone_mismatch`), the largest
    /// `expected_delay_minutes`, and the registered frequency among every
    /// product's `available_reporting_frequencies` (else
    /// `reporting_frequency_unsupported`).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), and the two refusals above;
    /// `invalid_registration` for no products or a product without
    /// webhooks (`supports_webhooks: false`).
    pub fn from_products(
        media_buy_id: impl Into<String>,
        reporting_webhook: &Value,
        reporting_capabilities: &[Value],
        flight_start_ms: i64,
        flight_end_ms: i64,
    ) -> Result<Self, ReportingError> {
        let frequency = reporting_webhook
            .get("reporting_frequency")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut zones: Vec<&str> = Vec::new();
        let mut delay_minutes = 0_u64;
        for caps in reporting_capabilities {
            let zone = caps.get("timezone").and_then(Value::as_str).ok_or_else(|| {
                ReportingError::InvalidRegistration("a product's reporting_capabilities has no timezone".to_owned())
            })?;
            if !zones.contains(&zone) {
                zones.push(zone);
            }
            delay_minutes = delay_minutes.max(caps.get("expected_delay_minutes").and_then(Value::as_u64).unwrap_or(0));
            if caps.get("supports_webhooks").and_then(Value::as_bool) == Some(false) {
                return Err(ReportingError::InvalidRegistration(
                    "a product of the buy does not support reporting webhooks".to_owned(),
                ));
            }
            let offered = caps
                .get("available_reporting_frequencies")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|f| f.as_str() == Some(frequency)));
            if !offered {
                return Err(ReportingError::FrequencyUnsupported(frequency.to_owned()));
            }
        }
        match zones.as_slice() {
            [] => Err(ReportingError::InvalidRegistration(
                "no products: the reporting timezone is unknown".to_owned(),
            )),
            [zone] => Self::new(
                media_buy_id,
                reporting_webhook,
                zone,
                Duration::from_secs(delay_minutes.saturating_mul(60)),
                flight_start_ms,
                flight_end_ms,
            ),
            many => Err(ReportingError::TimezoneMismatch(many.join(", "))),
        }
    }

    /// The principal (buyer) whose `webhook_activity` shows the reports.
    #[must_use]
    pub fn principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// The signing scope of the reports (default
    /// [`DEFAULT_SIGNING_SCOPE`](crate::DEFAULT_SIGNING_SCOPE)).
    #[must_use]
    pub fn signing_scope(mut self, scope: impl Into<String>) -> Self {
        self.signing_scope = scope.into();
        self
    }

    /// The buy.
    #[must_use]
    pub fn media_buy_id(&self) -> &str {
        &self.media_buy_id
    }

    /// The calendar of its periods.
    #[must_use]
    pub fn calendar(&self) -> &Calendar {
        &self.calendar
    }

    /// The `reporting_webhook` as registered.
    #[must_use]
    pub fn reporting_webhook(&self) -> &Value {
        &self.reporting_webhook
    }

    /// The flight, `[start, end)` in Unix ms.
    #[must_use]
    pub const fn flight_ms(&self) -> (i64, i64) {
        (self.flight_start_ms, self.flight_end_ms)
    }

    /// The delay after a period's end at which its report is due (ms).
    #[must_use]
    pub const fn expected_delay_ms(&self) -> i64 {
        self.expected_delay_ms
    }

    /// The stored form (the application's registration, never shown to
    /// anyone else; sealed at rest when the outbox encrypts).
    pub(crate) fn to_stored(&self) -> Value {
        serde_json::json!({
            "media_buy_id": self.media_buy_id,
            "reporting_webhook": self.reporting_webhook,
            "timezone": self.calendar.timezone(),
            "expected_delay_ms": self.expected_delay_ms,
            "flight_start_ms": self.flight_start_ms,
            "flight_end_ms": self.flight_end_ms,
            "principal": self.principal,
            "signing_scope": self.signing_scope,
        })
    }

    /// Reads [`to_stored`](Self::to_stored).
    pub(crate) fn from_stored(v: &Value) -> Result<Self, ReportingError> {
        let int = |name: &str| {
            v.get(name)
                .and_then(Value::as_i64)
                .ok_or_else(|| ReportingError::InvalidRegistration(format!("stored stream lacks {name}")))
        };
        let text = |name: &str| v.get(name).and_then(Value::as_str).map(str::to_owned);
        let delay = u64::try_from(int("expected_delay_ms")?).unwrap_or(0);
        let mut reg = Self::new(
            text("media_buy_id").unwrap_or_default(),
            v.get("reporting_webhook").unwrap_or(&Value::Null),
            &text("timezone").unwrap_or_default(),
            Duration::from_millis(delay),
            int("flight_start_ms")?,
            int("flight_end_ms")?,
        )?;
        reg.principal = text("principal");
        if let Some(scope) = text("signing_scope") {
            reg.signing_scope = scope;
        }
        Ok(reg)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn hook() -> Value {
        json!({"url": "https://buyer.example/reports", "reporting_frequency": "daily",
               "authentication": {"schemes": ["Bearer"], "credentials": "x".repeat(32)}})
    }

    #[test]
    fn products_must_agree_on_the_timezone_and_offer_the_frequency() {
        let caps = |tz: &str, delay: u64, freqs: Value| {
            json!({"timezone": tz, "expected_delay_minutes": delay, "available_reporting_frequencies": freqs,
                   "supports_webhooks": true})
        };
        let reg = ReportingRegistration::from_products(
            "mb_1",
            &hook(),
            &[
                caps("Europe/Paris", 60, json!(["daily"])),
                caps("Europe/Paris", 240, json!(["hourly", "daily"])),
            ],
            0,
            86_400_000,
        )
        .unwrap();
        assert_eq!(reg.expected_delay_ms(), 240 * 60_000);
        assert_eq!(reg.calendar().timezone(), "Europe/Paris");
        let mismatch = ReportingRegistration::from_products(
            "mb_1",
            &hook(),
            &[
                caps("UTC", 0, json!(["daily"])),
                caps("Europe/Paris", 0, json!(["daily"])),
            ],
            0,
            86_400_000,
        );
        assert_eq!(mismatch.unwrap_err().code(), "reporting_timezone_mismatch");
        let unsupported =
            ReportingRegistration::from_products("mb_1", &hook(), &[caps("UTC", 0, json!(["hourly"]))], 0, 86_400_000);
        assert_eq!(unsupported.unwrap_err().code(), "reporting_frequency_unsupported");
    }

    #[test]
    fn the_stored_form_reads_back_the_same() {
        let reg = ReportingRegistration::new("mb_1", &hook(), "Asia/Tokyo", Duration::from_secs(600), 5, 99_000)
            .unwrap()
            .principal("buyer-1");
        assert_eq!(ReportingRegistration::from_stored(&reg.to_stored()).unwrap(), reg);
    }

    #[test]
    fn an_unusable_registration_is_refused() {
        let no_url = json!({"reporting_frequency": "daily"});
        assert!(ReportingRegistration::new("mb", &no_url, "UTC", Duration::ZERO, 0, 1).is_err());
        let weekly = json!({"url": "https://b.example/", "reporting_frequency": "weekly"});
        assert!(ReportingRegistration::new("mb", &weekly, "UTC", Duration::ZERO, 0, 1).is_err());
        assert!(ReportingRegistration::new("mb", &hook(), "UTC", Duration::ZERO, 10, 10).is_err());
        // A flight of more periods than one registration may ask for.
        let hourly = json!({"url": "https://b.example/", "reporting_frequency": "hourly"});
        let long = ReportingRegistration::new("mb", &hourly, "UTC", Duration::ZERO, 0, 3_600_000 * 10_001);
        assert_eq!(long.unwrap_err().code(), "invalid_registration");
        assert!(ReportingRegistration::new("mb", &hourly, "UTC", Duration::ZERO, 0, 3_600_000 * 10_000).is_ok());
    }
}
