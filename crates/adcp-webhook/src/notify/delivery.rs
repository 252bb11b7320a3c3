//! Delivery reports: the `reporting_webhook` fires of a media buy
//! (`scheduled`, `final`, `delayed`, `adjusted`, `window_update`),
//! delivered as task envelopes.

use super::{common_builder, setters, Draft, IdRule, Registered};
use crate::envelope::TaskStatus;
use serde_json::Value;

/// The delivery-report notification types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReportType {
    /// `scheduled`: a fire at the registered cadence.
    Scheduled,
    /// `final`: the one report after the buy reached a terminal state
    /// (no `next_expected_at`).
    Final,
    /// `delayed`: the period's data is not yet available.
    Delayed,
    /// `adjusted`: a prior period's metrics were revised.
    Adjusted,
    /// `window_update`: a wider measurement window supersedes an earlier
    /// one.
    WindowUpdate,
}

impl ReportType {
    /// Every type.
    pub const ALL: [Self; 5] = [
        Self::Scheduled,
        Self::Final,
        Self::Delayed,
        Self::Adjusted,
        Self::WindowUpdate,
    ];

    /// The wire spelling (`result.notification_type`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Final => "final",
            Self::Delayed => "delayed",
            Self::Adjusted => "adjusted",
            Self::WindowUpdate => "window_update",
        }
    }
}

/// A delivery report: the MCP task envelope
/// (`core/mcp-webhook-payload.json`) whose `result` follows
/// `media-buy/media-buy-delivery-webhook-result.json`.
///
/// No `notification_id` (point-in-time data: receivers dedupe by
/// `idempotency_key` only). The envelope echoes the registration's
/// `operation_id` (required), `token` and `subscriber_id`; `task_type` is
/// `media_buy_delivery` and `status` defaults to `completed`. A `final`
/// report with `next_expected_at` is refused.
///
/// A `reporting_webhook` registers a `token` but no `operation_id`: give
/// the stream one with [`operation_id`](Self::operation_id).
///
/// ```
/// use adcp_webhook::notify::{BuildError, DeliveryReportBuilder, Registered, ReportType};
/// use serde_json::json;
///
/// let reporting_webhook = Registered::from_value(&json!({
///     "url": "https://buyer.example/reports",
///     "token": "rpt_tok_1",
///     "reporting_frequency": "daily"
/// }));
/// let report = DeliveryReportBuilder::new(&reporting_webhook, ReportType::Scheduled, "2026-04-18T06:00:00Z")
///     .task_id("dlv_mb_1_0003")
///     .period_start("2026-04-17T00:00:00Z")
///     .period_end("2026-04-18T00:00:00Z")
///     .timezone("UTC")
///     .media_buy_deliveries(json!([]))
///     .sequence_number(3)
///     .next_expected_at("2026-04-19T06:00:00Z");
/// assert_eq!(report.clone().build().unwrap_err(), BuildError::Missing { member: "operation_id" });
///
/// let body = report.operation_id("op_reports_mb_1").build()?.to_value();
/// assert_eq!(body["token"], "rpt_tok_1");
/// assert_eq!(body["result"]["notification_type"], "scheduled");
/// assert!(body.get("notification_id").is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct DeliveryReportBuilder {
    draft: Draft,
    report_type: ReportType,
}

impl DeliveryReportBuilder {
    /// A `report_type` report for `registration` (the buy's
    /// `reporting_webhook`), with the envelope `timestamp` `fired_at`
    /// (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, report_type: ReportType, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::envelope(
                report_type.as_str(),
                registration,
                "media_buy_delivery",
                fired_at.into(),
                &[
                    "task_id",
                    "operation_id",
                    "result.reporting_period.start",
                    "result.reporting_period.end",
                    "result.media_buy_deliveries",
                ],
                IdRule::Absent,
            ),
            report_type,
        }
    }

    /// The envelope `status` (default `completed`).
    #[must_use]
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.draft.set("status", Value::String(status.as_str().to_owned()));
        self
    }

    /// The stream's `sequence_number` (from 1).
    #[must_use]
    pub fn sequence_number(mut self, n: u64) -> Self {
        if n == 0 {
            self.draft.refuse("result.sequence_number", "starts at 1");
        }
        self.draft.set("result.sequence_number", Value::from(n));
        self
    }

    /// When the next report is expected (`result.next_expected_at`);
    /// refused on a `final` report.
    #[must_use]
    pub fn next_expected_at(mut self, at: impl Into<String>) -> Self {
        if self.report_type == ReportType::Final {
            self.draft
                .refuse("result.next_expected_at", "a final report has no next report");
        }
        self.draft.set_time("result.next_expected_at", at.into());
        self
    }
}

setters!(DeliveryReportBuilder {
    /// The envelope's `task_id`.
    task_id("task_id"): text;
    /// The envelope's `operation_id`, instead of the registration's (a
    /// stream whose registration carries none).
    operation_id("operation_id"): text;
    /// The originating request's `context`, echoed verbatim.
    context("context"): json;
    /// The period's start (`result.reporting_period.start`).
    period_start("result.reporting_period.start"): time;
    /// The period's end (`result.reporting_period.end`).
    period_end("result.reporting_period.end"): time;
    /// The reporting timezone, `UTC` or an IANA name
    /// (`result.reporting_period.timezone`).
    timezone("result.reporting_period.timezone"): text;
    /// The per-buy delivery objects (`result.media_buy_deliveries`, an
    /// array; empty when nothing is reported).
    media_buy_deliveries("result.media_buy_deliveries"): json;
    /// The report's currency (ISO 4217).
    currency("result.currency"): text;
    /// Whether some data is missing (`result.partial_data`).
    partial_data("result.partial_data"): bool;
    /// How many buys could not be reported (`result.unavailable_count`).
    unavailable_count("result.unavailable_count"): int;
    /// The `result.attribution_window` object.
    attribution_window("result.attribution_window"): json;
    /// Errors for buys that could not be reported (`result.errors`).
    errors("result.errors"): json;
});
common_builder!(DeliveryReportBuilder);
