//! A planned report as an outbox event: the delivery-report envelope
//! built by [`adcp_webhook::notify::DeliveryReportBuilder`], for the
//! buy's `reporting_webhook`, on the stream's channel.

use super::error::ReportingError;
use super::plan::{Report, StreamState};
use super::registration::ReportingRegistration;
use crate::clock::rfc3339_ms;
use crate::event::{NewEvent, OutboxDestination};
use adcp_webhook::notify::{DeliveryReportBuilder, Registered};

/// The channel id of a buy's report stream (the events' `channel_id`).
pub(crate) fn channel_of(media_buy_id: &str) -> String {
    format!("reporting_webhook:{media_buy_id}")
}

/// The `task_id` of the report with `sequence`: the stream's
/// `operation_id` and the sequence, so it is the same on every retry and
/// differs between reports.
pub(crate) fn task_id(operation_id: &str, sequence: u64) -> String {
    format!("{operation_id}.{sequence}")
}

/// The event `report` is sent as.
pub(crate) fn event_of(
    reg: &ReportingRegistration,
    state: &StreamState,
    report: &Report,
) -> Result<NewEvent, ReportingError> {
    let registered = Registered::from_value(&reg.reporting_webhook);
    let mut builder = DeliveryReportBuilder::new(&registered, report.kind, rfc3339_ms(report.fired_ms))
        .operation_id(state.operation_id.clone())
        .task_id(task_id(&state.operation_id, report.sequence))
        .period_start(rfc3339_ms(report.period.start_ms))
        .period_end(rfc3339_ms(report.period.end_ms))
        .timezone(reg.calendar.timezone())
        .media_buy_deliveries(report.deliveries.clone())
        .sequence_number(report.sequence);
    if let Some(at) = report.next_expected_ms {
        builder = builder.next_expected_at(rfc3339_ms(at));
    }
    let event = builder
        .build()
        .and_then(adcp_webhook::notify::Notification::into_event)
        .map_err(|e| ReportingError::Build(e.to_string()))?;
    let destination = OutboxDestination::from_registration(&reg.reporting_webhook)?;
    let mut new = NewEvent::new(event, destination)
        .signing_scope(reg.signing_scope.clone())
        .channel(channel_of(&reg.media_buy_id))
        .resource(format!("media_buy:{}", reg.media_buy_id));
    if let Some(principal) = &reg.principal {
        new = new.principal(principal.clone());
    }
    Ok(new)
}
