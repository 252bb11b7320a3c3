//! What the reporting schedule can refuse or fail at, with stable codes.

use crate::error::OutboxError;

/// A reporting-schedule operation failed. [`code`](Self::code) is stable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReportingError {
    /// The buy's products report in different timezones: one stream has
    /// one calendar.
    #[error("the buy's products report in different timezones ({0}); one reporting stream needs one")]
    TimezoneMismatch(String),
    /// A product of the buy does not offer the registered frequency.
    #[error("reporting_frequency {0:?} is not offered by every product of the buy")]
    FrequencyUnsupported(String),
    /// The timezone is neither `UTC` nor a known IANA name.
    #[error("unknown reporting timezone {0:?}")]
    UnknownTimezone(String),
    /// The registration is unusable (missing `reporting_webhook.url`, an
    /// unknown frequency, a flight that ends before it starts, …).
    #[error("invalid reporting registration: {0}")]
    InvalidRegistration(String),
    /// No stream for this buy.
    #[error("no reporting stream for media buy {0:?}")]
    UnknownStream(String),
    /// The stream already sent its `final` report: nothing more goes to
    /// the channel.
    #[error("the reporting stream of media buy {0:?} is closed")]
    StreamClosed(String),
    /// The application's delivery source failed; the scheduler asks again
    /// later.
    #[error("delivery source: {0}")]
    Source(String),
    /// The report could not be built (a member the application supplied
    /// is refused by the delivery-report schema's rules).
    #[error("delivery report: {0}")]
    Build(String),
    /// The outbox refused or could not store.
    #[error(transparent)]
    Outbox(#[from] OutboxError),
}

impl ReportingError {
    /// The stable code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::TimezoneMismatch(_) => "reporting_timezone_mismatch",
            Self::FrequencyUnsupported(_) => "reporting_frequency_unsupported",
            Self::UnknownTimezone(_) => "unknown_timezone",
            Self::InvalidRegistration(_) => "invalid_registration",
            Self::UnknownStream(_) => "unknown_stream",
            Self::StreamClosed(_) => "stream_closed",
            Self::Source(_) => "delivery_source_error",
            Self::Build(_) => "invalid_report",
            Self::Outbox(e) => e.code(),
        }
    }
}
