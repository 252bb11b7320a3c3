//! Reporting webhooks on schedule: the delivery reports of a media buy's
//! `reporting_webhook`, fired by the SDK at the registered
//! `reporting_frequency`, enqueued into the outbox.
//!
//! The application registers each buy's stream
//! ([`ReportingScheduler::register`], from the buy's `reporting_webhook`
//! and its products' `reporting_capabilities`), says when the buy ends
//! ([`ReportingScheduler::end`]), and answers the scheduler's questions
//! through a [`DeliverySource`]: a period's delivery or "not ready yet",
//! and after the end whether the data is closed. The SDK owns the rest:
//!
//! - **Periods** at the frequency on the boundaries of the buy's reporting
//!   timezone ([`Calendar`]), from the period holding the flight's start
//!   to the one holding its end (or the buy's end, if earlier).
//! - **Fire times**: a period's report is due at its end plus the largest
//!   `expected_delay_minutes` of the buy's products. `next_expected_at`
//!   is the next report's due time; it is left out when the next report
//!   is the `final` one, whose time depends on the application.
//! - **`delayed`**: when a period's data is not ready at its due time, one
//!   `delayed` report (the result schema's "data not yet available"), then
//!   the period's `scheduled` report once the data is ready. Every period
//!   gets exactly one `scheduled` report, in order.
//! - **`final`**: one, after the buy ended, every period was reported,
//!   every earlier report was delivered or given up, and the source says
//!   the data is closed; it covers the whole flight and has no
//!   `next_expected_at`. Nothing follows it: the stream is closed.
//! - **`sequence_number`** from 1, one more for every report of the stream
//!   (`delayed` ones included).
//! - **`operation_id`** per stream (the registration's, else minted once)
//!   and **`task_id`** per report (`{operation_id}.{sequence_number}`):
//!   a `reporting_webhook` registers neither, and the task envelope
//!   requires both.
//! - **Exactly once per (buy, period, report type)**: each report is
//!   enqueued in the transaction that moves its stream, fenced by the
//!   stream's version, so a restart or a second scheduler on the same
//!   store never fires a period twice and never skips one.
//!
//! - **Aggregation** (opt-in, [`ReportingConfig::aggregate`]): buys whose
//!   reports share a URL, `token`, authentication, frequency, timezone and
//!   delay share one stream, one `operation_id`, one `sequence_number`:
//!   each period's report carries the rows of every buy it covers (a
//!   `delayed` report while one of them is late), and the `final` one
//!   comes after the last buy ended and every buy's data closed.
//!
//! Reports are task envelopes (`media_buy_delivery`) on the
//! `reporting_webhook` channel (`channel_id` `reporting_webhook:{buy}`),
//! signed and retried like every outbox event.
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use adcp_outbox::reporting::{
//!     Closing, DeliverySource, Period, PeriodDelivery, ReportingConfig, ReportingRegistration, ReportingScheduler,
//! };
//! use adcp_outbox::{ManualClock, Outbox, OutboxConfig, SqliteOutbox};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! struct Numbers;
//! #[async_trait::async_trait]
//! impl DeliverySource for Numbers {
//!     async fn period(&self, _: &ReportingRegistration, _: Period) -> Result<PeriodDelivery, String> {
//!         Ok(PeriodDelivery::Ready(json!([{"media_buy_id": "mb_1", "status": "active",
//!             "totals": {"impressions": 1000, "spend": 12.5}, "by_package": []}])))
//!     }
//!     async fn closing(&self, _: &ReportingRegistration, _: Period) -> Result<Closing, String> {
//!         Ok(Closing::Open)
//!     }
//! }
//!
//! let dir = std::env::temp_dir().join(format!("adcp-reporting-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let clock = ManualClock::new(1_776_470_400_000); // 2026-04-18T00:00:00Z
//! let config = OutboxConfig { clock: Arc::new(clock.clone()), ..OutboxConfig::default() };
//! let outbox = Outbox::new(Arc::new(SqliteOutbox::open(dir.join("outbox.sqlite"), Default::default())?), config)?;
//! let scheduler = ReportingScheduler::new(outbox, Arc::new(Numbers), ReportingConfig::default());
//!
//! let reporting_webhook = json!({
//!     "url": "https://buyer.example/reports",
//!     "token": "rpt_tok_0123456789abcdef",
//!     "authentication": {"schemes": ["Bearer"], "credentials": "c".repeat(32)},
//!     "reporting_frequency": "daily"
//! });
//! let products = [json!({"timezone": "UTC", "expected_delay_minutes": 60,
//!     "available_reporting_frequencies": ["daily"], "supports_webhooks": true,
//!     "available_metrics": [], "date_range_support": "date_range"})];
//! let day = 86_400_000;
//! let registration = ReportingRegistration::from_products(
//!     "mb_1", &reporting_webhook, &products, 1_776_470_400_000, 1_776_470_400_000 + 7 * day)?;
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     scheduler.register(registration).await?;
//!     assert_eq!(scheduler.tick().await?, 0); // the first day is not over
//!     clock.advance_ms(day + 3_600_000);      // its end plus the delay
//!     assert_eq!(scheduler.tick().await?, 1); // its `scheduled` report
//!     assert_eq!(scheduler.status("mb_1").await?.unwrap().sequence, 1);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlite"))]
//! # fn main() {}
//! ```

mod aggregate;
mod error;
#[cfg(feature = "relay")]
mod http_source;
mod period;
mod plan;
mod registration;
mod report;
mod scheduler;
mod source;

pub use error::ReportingError;
#[cfg(feature = "relay")]
pub use http_source::HttpDeliverySource;
pub use period::{Calendar, Frequency, Period};
pub use plan::BuyEnd;
pub use registration::{ReportingRegistration, MAX_PERIODS};
pub use scheduler::{ReportingConfig, ReportingScheduler, StreamStatus};
pub use source::{Closing, DeliverySource, PeriodDelivery};

#[cfg(test)]
mod tests;
