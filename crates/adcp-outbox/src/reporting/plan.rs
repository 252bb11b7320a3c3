//! The stream's state machine, free of I/O: what is due next, and what a
//! source's answer turns into. The scheduler persists [`StreamState`]
//! and the report it yields in one transaction.

use super::error::ReportingError;
use super::period::Period;
use super::registration::ReportingRegistration;
use super::source::{Closing, PeriodDelivery};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a buy ended (the statuses after which a `final` report follows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuyEnd {
    /// `completed`.
    Completed,
    /// `canceled`.
    Canceled,
    /// `rejected`.
    Rejected,
}

impl BuyEnd {
    /// The media buy status.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Canceled => "canceled",
            Self::Rejected => "rejected",
        }
    }
}

/// The persisted progress of one stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StreamState {
    /// The stream's `operation_id` (minted once, or the registration's).
    pub(crate) operation_id: String,
    /// The last `sequence_number` sent (0: none yet).
    pub(crate) sequence: u64,
    /// The start of the first period.
    pub(crate) first_start_ms: i64,
    /// The start of the next period awaiting its `scheduled` report.
    pub(crate) cursor_ms: i64,
    /// The period (by start) whose `delayed` report went out.
    pub(crate) delayed_for_ms: Option<i64>,
    /// Not asked again before this (after "not ready" or "open").
    pub(crate) not_before_ms: Option<i64>,
    /// How and when the buy ended.
    pub(crate) ended: Option<(BuyEnd, i64)>,
    /// The `final` report went out: the stream is closed.
    pub(crate) final_sent: bool,
}

impl StreamState {
    /// A new stream's state: nothing sent, the cursor at the period
    /// holding the flight's start.
    pub(crate) fn start(reg: &ReportingRegistration, operation_id: String) -> Result<Self, ReportingError> {
        let first = reg.calendar.period_containing(reg.flight_start_ms)?;
        Ok(Self {
            operation_id,
            sequence: 0,
            first_start_ms: first.start_ms,
            cursor_ms: first.start_ms,
            delayed_for_ms: None,
            not_before_ms: None,
            ended: None,
            final_sent: false,
        })
    }

    /// The end of reporting: the flight's end, or the buy's end if
    /// earlier.
    fn reporting_end_ms(&self, reg: &ReportingRegistration) -> i64 {
        match self.ended {
            Some((_, at)) => at.min(reg.flight_end_ms),
            None => reg.flight_end_ms,
        }
    }
}

/// What the stream waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// A period's report, due at `due_ms`.
    Period {
        /// The period.
        period: Period,
        /// When it is due (its end plus the delay, or a later recheck).
        due_ms: i64,
    },
    /// The `final` report over `flight`, due at `due_ms`.
    Final {
        /// The first period's start to the last period's end.
        flight: Period,
        /// When it may go (now, or a later recheck).
        due_ms: i64,
    },
    /// Nothing until the buy ends or its flight changes.
    Idle,
    /// The `final` report went out.
    Closed,
}

impl Next {
    /// When the scheduler looks at the stream again.
    pub(crate) const fn due_ms(self) -> Option<i64> {
        match self {
            Self::Period { due_ms, .. } | Self::Final { due_ms, .. } => Some(due_ms),
            Self::Idle | Self::Closed => None,
        }
    }
}

/// What is due next for `state`.
pub(crate) fn next(reg: &ReportingRegistration, state: &StreamState) -> Result<Next, ReportingError> {
    if state.final_sent {
        return Ok(Next::Closed);
    }
    let end = state.reporting_end_ms(reg);
    let later = |due: i64| state.not_before_ms.map_or(due, |nb| nb.max(due));
    // A period whose `delayed` report went out still gets its
    // `scheduled` one when the buy turns out to have ended before it.
    if state.cursor_ms < end || state.delayed_for_ms == Some(state.cursor_ms) {
        let mut period = reg.calendar.period_containing(state.cursor_ms)?;
        // A registration whose calendar changed leaves the cursor off the
        // new boundaries: the period from the cursor to the next one.
        period.start_ms = period.start_ms.max(state.cursor_ms);
        let due_ms = later(period.end_ms.saturating_add(reg.expected_delay_ms));
        return Ok(Next::Period { period, due_ms });
    }
    if state.ended.is_some() {
        let first_end = reg.calendar.period_containing(state.first_start_ms)?.end_ms;
        let flight = Period {
            start_ms: state.first_start_ms,
            end_ms: state.cursor_ms.max(first_end),
        };
        return Ok(Next::Final {
            flight,
            due_ms: later(i64::MIN),
        });
    }
    Ok(Next::Idle)
}

/// One report to enqueue.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Report {
    /// `scheduled`, `delayed` or `final`.
    pub(crate) kind: adcp_webhook::notify::ReportType,
    /// The period it covers.
    pub(crate) period: Period,
    /// Its `sequence_number`.
    pub(crate) sequence: u64,
    /// Its `next_expected_at` (Unix ms), when the next fire is known.
    pub(crate) next_expected_ms: Option<i64>,
    /// `media_buy_deliveries` (empty for a `delayed` report).
    pub(crate) deliveries: Value,
    /// When it fired (Unix ms): the envelope's `timestamp`.
    pub(crate) fired_ms: i64,
}

/// The state after the source answered for `period` at `now_ms`, and the
/// report that answer sends (none for a second "not ready").
pub(crate) fn on_period(
    reg: &ReportingRegistration,
    state: &StreamState,
    period: Period,
    answer: PeriodDelivery,
    now_ms: i64,
    recheck_ms: i64,
) -> Result<(StreamState, Option<Report>), ReportingError> {
    let mut after = state.clone();
    match answer {
        PeriodDelivery::Ready(rows) => {
            after.cursor_ms = period.end_ms;
            after.delayed_for_ms = None;
            after.not_before_ms = None;
            after.sequence = state.sequence + 1;
            // A next period already due (a stream catching up) fires now.
            let next_expected_ms = match next(reg, &after)? {
                Next::Period { due_ms, .. } => Some(due_ms.max(now_ms)),
                _ => None,
            };
            let report = Report {
                kind: adcp_webhook::notify::ReportType::Scheduled,
                period,
                sequence: after.sequence,
                next_expected_ms,
                deliveries: rows,
                fired_ms: now_ms,
            };
            Ok((after, Some(report)))
        }
        PeriodDelivery::NotReady { expected_at_ms } => {
            let retry = expected_at_ms
                .unwrap_or_else(|| now_ms.saturating_add(recheck_ms))
                // Never a tight loop on a source that answers "now".
                .max(now_ms.saturating_add(recheck_ms.min(60_000)));
            after.not_before_ms = Some(retry);
            if state.delayed_for_ms == Some(period.start_ms) {
                return Ok((after, None));
            }
            after.delayed_for_ms = Some(period.start_ms);
            after.sequence = state.sequence + 1;
            let report = Report {
                kind: adcp_webhook::notify::ReportType::Delayed,
                period,
                sequence: after.sequence,
                next_expected_ms: Some(retry),
                deliveries: Value::Array(Vec::new()),
                fired_ms: now_ms,
            };
            Ok((after, Some(report)))
        }
    }
}

/// The state after the source answered the closing at `now_ms`.
pub(crate) fn on_closing(
    state: &StreamState,
    flight: Period,
    answer: Closing,
    now_ms: i64,
    recheck_ms: i64,
) -> (StreamState, Option<Report>) {
    let mut after = state.clone();
    match answer {
        Closing::Open => {
            after.not_before_ms = Some(now_ms.saturating_add(recheck_ms));
            (after, None)
        }
        Closing::Closed(rows) => {
            after.final_sent = true;
            after.not_before_ms = None;
            after.sequence = state.sequence + 1;
            let report = Report {
                kind: adcp_webhook::notify::ReportType::Final,
                period: flight,
                sequence: after.sequence,
                next_expected_ms: None,
                deliveries: rows,
                fired_ms: now_ms,
            };
            (after, Some(report))
        }
    }
}

/// The state when earlier reports are still on their way: the `final`
/// waits for them.
pub(crate) fn wait_for_earlier(state: &StreamState, now_ms: i64, recheck_ms: i64) -> StreamState {
    let mut after = state.clone();
    after.not_before_ms = Some(now_ms.saturating_add(recheck_ms));
    after
}
