//! Alarm and tuning events produced by the admission monitor.

use std::fmt;

/// The four admission-pressure clauses of the spec ("Webhook replay dedup
/// sizing"). An alarm names the clause that tripped so triage can respond
/// to the right threat shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Clause {
    /// (a) Short-window ratio against a short-horizon moving average:
    /// sudden spikes against a stable baseline (mass compromise).
    A,
    /// (b) Medium-window ratio against a medium-horizon percentile:
    /// multi-week ramp-up attacks.
    B,
    /// (c) Long-window ratio against a long-horizon percentile:
    /// multi-month ramp-up attacks that drift the medium-horizon anchor.
    C,
    /// (d) Proportional ceiling `max(floor, fraction × unique keyids)`:
    /// sparse-traffic verifiers whose ratio baselines are near zero.
    D,
}

impl Clause {
    /// All clauses, in order.
    pub const ALL: [Self; 4] = [Self::A, Self::B, Self::C, Self::D];

    /// The spec's letter: `"a"`, `"b"`, `"c"` or `"d"`.
    #[must_use]
    pub const fn letter(self) -> &'static str {
        match self {
            Self::A => "a",
            Self::B => "b",
            Self::C => "c",
            Self::D => "d",
        }
    }

    /// The spec's category name, e.g. `"short-window ratio"`.
    #[must_use]
    pub const fn category(self) -> &'static str {
        match self {
            Self::A => "short-window ratio",
            Self::B => "medium-window ratio",
            Self::C => "long-window ratio",
            Self::D => "proportional ceiling",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}) {}", self.letter(), self.category())
    }
}

/// A clause tripped: new-keyid admissions in its window exceeded its
/// threshold. Route to incident response, never to automatic revocation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdmissionAlarm {
    /// Which clause tripped.
    pub clause: Clause,
    /// New keyids admitted in the clause's rolling window.
    pub observed: u64,
    /// The effective baseline: for (a) `max(moving average, min_baseline)`,
    /// for (b)/(c) `max(percentile, min_baseline)`, for (d) the
    /// unique-keyid count the proportional part is taken of.
    pub baseline: f64,
    /// The threshold `observed` exceeded.
    pub threshold: f64,
    /// The clause's observation window, in seconds.
    pub window: u64,
    /// When it tripped (Unix seconds).
    pub at: i64,
}

impl fmt::Display for AdmissionAlarm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "new-keyid admission pressure: clause {} tripped: {} new keyids in {} s > threshold {:.2}",
            self.clause, self.observed, self.window, self.threshold
        )
    }
}

/// `threshold_tuning_overdue`: a threshold still holds its shipped starting
/// value more than 30 days after the verifier's first admission. Published
/// starting values are an attacker oracle; tune the threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TuningOverdue {
    /// The parameter's name ([`ThresholdParam::name`](super::ThresholdParam::name)).
    pub threshold_name: &'static str,
    /// The verifier's first admission (Unix seconds).
    pub first_admission_at: i64,
    /// The starting value the parameter still holds.
    pub shipped_value: f64,
    /// When the event was raised (Unix seconds).
    pub at: i64,
}

impl fmt::Display for TuningOverdue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "threshold_tuning_overdue: {} still at its shipped starting value {} more than 30 days after the first admission ({})",
            self.threshold_name, self.shipped_value, self.first_admission_at
        )
    }
}

/// An event returned by [`AdmissionMonitor::record_admission`](super::AdmissionMonitor::record_admission)
/// (and also logged with `tracing::warn!`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum AdmissionEvent {
    /// A clause tripped.
    Alarm(AdmissionAlarm),
    /// A threshold is overdue for tuning.
    TuningOverdue(TuningOverdue),
}

impl AdmissionEvent {
    /// The alarm, if this is one.
    #[must_use]
    pub fn as_alarm(&self) -> Option<&AdmissionAlarm> {
        match self {
            Self::Alarm(alarm) => Some(alarm),
            Self::TuningOverdue(_) => None,
        }
    }

    /// The tuning-overdue event, if this is one.
    #[must_use]
    pub fn as_tuning_overdue(&self) -> Option<&TuningOverdue> {
        match self {
            Self::TuningOverdue(overdue) => Some(overdue),
            Self::Alarm(_) => None,
        }
    }

    /// Logs the event with `tracing::warn!` (target `adcp_verify::admission`).
    pub(crate) fn emit(&self) {
        match self {
            Self::Alarm(alarm) => tracing::warn!(
                target: "adcp_verify::admission",
                kind = "new_keyid_admission_pressure",
                clause = alarm.clause.letter(),
                category = alarm.clause.category(),
                observed = alarm.observed,
                baseline = alarm.baseline,
                threshold = alarm.threshold,
                window_secs = alarm.window,
                at = alarm.at,
                "new-keyid admission pressure: clause ({}) {} tripped",
                alarm.clause.letter(),
                alarm.clause.category(),
            ),
            Self::TuningOverdue(overdue) => tracing::warn!(
                target: "adcp_verify::admission",
                kind = "threshold_tuning_overdue",
                threshold = overdue.threshold_name,
                first_admission_at = overdue.first_admission_at,
                shipped_value = overdue.shipped_value,
                at = overdue.at,
                "threshold_tuning_overdue: {} still at its shipped starting value",
                overdue.threshold_name,
            ),
        }
    }
}
