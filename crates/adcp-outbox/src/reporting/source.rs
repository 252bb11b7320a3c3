//! What the application tells the scheduler: a period's delivery, "not
//! ready yet", or, after the buy ended, that its data is closed.

use super::period::Period;
use super::registration::ReportingRegistration;
use serde_json::Value;

/// A period's data, as the application has it.
#[derive(Debug, Clone, PartialEq)]
pub enum PeriodDelivery {
    /// The period's delivery: the buy's `media_buy_deliveries[]` row(s)
    /// (`media-buy/media-buy-delivery-webhook-result.json`), sent in a
    /// `scheduled` report.
    Ready(Value),
    /// Not available yet: a `delayed` report goes out (once per period)
    /// and the scheduler asks again at `expected_at_ms` (or after its
    /// recheck interval when `None`).
    NotReady {
        /// When the application expects the data (Unix ms).
        expected_at_ms: Option<i64>,
    },
}

/// Whether the ended buy's data is closed.
#[derive(Debug, Clone, PartialEq)]
pub enum Closing {
    /// Closed: the whole flight's rows, sent in the `final` report.
    Closed(Value),
    /// Still open (late conversions, an attribution window): the
    /// scheduler asks again after its recheck interval.
    Open,
}

/// The application's side of the reporting schedule: the numbers. The
/// scheduler owns the clock, the sequence and the enqueue; it asks for a
/// period once that period's report is due, and for the closing once the
/// buy ended and every period was reported.
///
/// Answers may change between calls (data arrives); a report, once
/// enqueued, is never rebuilt.
#[async_trait::async_trait]
pub trait DeliverySource: Send + Sync + 'static {
    /// The delivery of `registration`'s buy over `period`.
    ///
    /// # Errors
    ///
    /// Any failure: the scheduler logs it and asks again later; nothing
    /// is sent for the period meanwhile.
    async fn period(&self, registration: &ReportingRegistration, period: Period) -> Result<PeriodDelivery, String>;

    /// Whether the ended buy's data is closed, and its rows over `flight`
    /// (the first period's start to the last period's end).
    ///
    /// # Errors
    ///
    /// As [`period`](Self::period).
    async fn closing(&self, registration: &ReportingRegistration, flight: Period) -> Result<Closing, String>;
}
